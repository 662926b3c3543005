"""What Kubernetes refuses, the synth refuses (issue 33, point 3): Hypothesis generates values that the pattern of
Karpenter 1.14.1's CRD (matched with RE2, as the API server does) refuses -- taint, requirement and label keys and
values, limits and capacity quantities, budget schedules, nodes and durations, expiry and grace periods, prices,
kubelet reservations and thresholds, ids -- and each is refused by the typed settings (what ``make synth`` checks
first: one line naming the setting, the value and what is allowed) and, for node objects written as YAML, by
``nodeManifests`` (naming the file, the object and the field)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import pytest
import re2
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from constructs_lib.karpenter.node_manifests import ManifestError, convert
from constructs_lib.karpenter.specs import crd
from constructs_lib.karpenter.specs.kubelet import KubeletSpec
from constructs_lib.karpenter.specs.node_class import NodeClassSpec
from constructs_lib.karpenter.specs.node_overlay import NodeOverlaySpec
from constructs_lib.karpenter.specs.node_pool import NodePoolSpec
from karpenter_stack.config.errors import format_errors
from tooling.mirror_crd_schema import CRD_FILES, served_spec, upstream_crds

CRDS = upstream_crds("1.14.1")
FILES = {"NodePool": "nodepool", "EC2NodeClass": "ec2nodeclass", "NodeOverlay": "nodeoverlay"}


@functools.cache
def _spec(name: str) -> dict[str, Any]:
    """The OpenAPI schema of a vendored CRD's spec (read once: YAML parsing is slow)."""
    return served_spec(CRDS / name)[0]


def _at(kind: str, path: str) -> dict[str, Any]:
    """The OpenAPI node of a vendored CRD's spec at ``path`` (``[]``: a list's items, ``{}``: a map's values)."""
    node = _spec(CRD_FILES[FILES[kind]])
    for part in path.removeprefix("spec").replace("[]", ".[]").replace("{}", ".{}").strip(".").split("."):
        node = (
            node["items"]
            if part == "[]"
            else node["additionalProperties"]
            if part == "{}"
            else node["properties"][part]
        )
    return node


def pattern(kind: str, path: str) -> str:
    found: str = _at(kind, path)["pattern"]
    return found


def test_the_patterns_the_specs_check_are_the_vendored_crds():
    assert {(k, p) for k, paths in crd.PATTERNS.items() for p in paths} == {
        ("NodePool", f"spec.template.spec.{taints}[].{field}")
        for taints in ("taints", "startupTaints")
        for field in ("key", "value")
    } | {("NodePool", "spec.disruption.budgets[].schedule")}
    for kind, paths in crd.PATTERNS.items():
        for path, expected in paths.items():
            assert pattern(kind, path) == expected, path


# --- the Python spelling of RE2 patterns ------------------------------------------------------------------------


def _patterns_below(node: dict[str, Any]) -> list[str]:
    found = [str(node["pattern"])] if "pattern" in node else []
    children = [*(node.get("properties") or {}).values()]
    children += [node[k] for k in ("items", "additionalProperties") if isinstance(node.get(k), dict)]
    return found + [p for child in children for p in _patterns_below(child)]


ALL_PATTERNS = sorted({p for name in CRD_FILES.values() for p in _patterns_below(_spec(name))})
# Characters where RE2 and Python's re part, and those the patterns are made of.
TRICKY = ["\n", "\v", "\f", "\r", "\t", " ", "\u0663", "\u00a0", "\u2028", "/", "@", "%", "+", "-", ".", "_", "*"]
ALPHABET = st.sampled_from([*TRICKY, *"0129aAzZeEGMKimhsNver", "Gi", "Never", "ami-", "sg-", "cr-", "@daily"])


# Values the patterns accept, the seeds of generated ones.
SEEDS = [
    "example.com/team",
    "m7g",
    "1000Gi",
    "100Gi",
    "0.25",
    "5%",
    "-10%",
    "+10%",
    "10%",
    "1h30m",
    "720h",
    "Never",
    "0 9 * * mon-fri",
    "@daily",
    "123456789012",
    "karpenter.k8s.aws",
    "ami-0123456789abcdef0",
    "sg-0123456789abcdef0",
    "subnet-0123456789abcdef0",
    "cr-0123456789abcdef0",
    "pg-0123456789abcdef0",
]


def near(pattern_: str, regex: bool = False) -> st.SearchStrategy[str]:
    """Values around a pattern: one it accepts (a seed, or with ``regex`` any Hypothesis draws from it) with a
    tricky character put in or in place of a space, a final newline added or a digit swapped for a Unicode one,
    or any short text."""
    seeds = [v for v in SEEDS if re2.search(pattern_, v)]
    valid = (
        st.from_regex(crd.python_pattern(pattern_), fullmatch=True, alphabet=st.characters(codec="ascii"))
        if regex or not seeds
        else st.sampled_from(seeds)
    )
    edited = st.builds(
        lambda v, i, c, how: (
            v[: i % (len(v) + 1)] + c + v[i % (len(v) + 1) :]
            if how == 0
            else v + "\n"
            if how == 1
            else v.replace("1", "\u0661", 1)
            if how == 2
            else v.replace(" ", c, 1)
        ),
        valid,
        st.integers(0, 40),
        st.sampled_from(TRICKY),
        st.integers(0, 3),
    )
    if not pattern_.startswith("^"):  # searched anywhere: an id's '-' spoiled, or text without one
        spoiled = st.builds(lambda v, c: v.replace("-", c, 1), valid, st.sampled_from([t for t in TRICKY if t != "-"]))
        return st.one_of(spoiled, st.lists(ALPHABET.filter(lambda a: "-" not in a), max_size=8).map("".join))
    return st.one_of(edited, st.lists(ALPHABET, max_size=8).map("".join))


@pytest.mark.parametrize("pattern_", ALL_PATTERNS)
@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_python_spelling_of_each_upstream_pattern_agrees_with_re2(pattern_, data):
    value = data.draw(near(pattern_, regex=True))
    assert crd.accepts(pattern_, value) == (re2.search(pattern_, value) is not None), (pattern_, value)


def test_there_are_19_upstream_patterns_and_python_re_alone_would_misjudge_some():
    import re

    assert len(ALL_PATTERNS) == 19
    schedule = crd.BUDGET_SCHEDULE
    assert re.search(schedule, "a\vb c d e") and not crd.accepts(schedule, "a\vb c d e")
    assert re.search(crd.TAINT, "dedicated\n") and not crd.accepts(crd.TAINT, "dedicated\n")


# --- refused by the typed settings and by nodeManifests -----------------------------------------------------------

# (kind, CRD path of the pattern, setting as a message names it, typed settings holding the value, the spec, what a
# message says is allowed)
POOL, OVERLAY = "NodePool", "NodeOverlay"
Build = Callable[[str], dict[str, Any]]
FIELDS: list[tuple[str, str, str, Build, type[BaseModel], str]] = [
    (
        POOL,
        "spec.template.spec.taints[].key",
        "taints[0].key",
        lambda v: {"taints": [{"key": v, "effect": "NoSchedule"}]},
        NodePoolSpec,
        "qualified name",
    ),
    (
        POOL,
        "spec.template.spec.taints[].value",
        "taints[0].value",
        lambda v: {"taints": [{"key": "dedicated", "value": v, "effect": "NoSchedule"}]},
        NodePoolSpec,
        "63 characters",
    ),
    (
        POOL,
        "spec.template.spec.startupTaints[].key",
        "startupTaints[0].key",
        lambda v: {"startupTaints": [{"key": v, "effect": "NoExecute"}]},
        NodePoolSpec,
        "qualified name",
    ),
    (
        POOL,
        "spec.template.spec.startupTaints[].value",
        "startupTaints[0].value",
        lambda v: {"startupTaints": [{"key": "agent", "value": v, "effect": "NoExecute"}]},
        NodePoolSpec,
        "63 characters",
    ),
    (
        POOL,
        "spec.template.spec.requirements[].key",
        "requirements[0].key",
        lambda v: {"requirements": [{"key": v, "operator": "Exists"}]},
        NodePoolSpec,
        "label key",
    ),
    (
        POOL,
        "spec.template.spec.requirements[].values",
        "requirements[0]",
        lambda v: {"requirements": [{"key": "example.com/team", "operator": "In", "values": [v]}]},
        NodePoolSpec,
        "63 characters",
    ),
    (
        POOL,
        "spec.template.metadata.labels{}",
        "labels",
        lambda v: {"labels": {"example.com/team": v}},
        NodePoolSpec,
        "63 characters",
    ),
    (POOL, "spec.limits{}", "limits", lambda v: {"limits": {"cpu": v}}, NodePoolSpec, "Kubernetes quantity"),
    (
        POOL,
        "spec.disruption.budgets[].nodes",
        "budgets[0].nodes",
        lambda v: {"budgets": [{"nodes": v}]},
        NodePoolSpec,
        "whole number or a percentage",
    ),
    (
        POOL,
        "spec.disruption.budgets[].schedule",
        "budgets[0].schedule",
        lambda v: {"budgets": [{"nodes": "1", "schedule": v, "duration": "1h"}]},
        NodePoolSpec,
        "cron expression",
    ),
    (
        POOL,
        "spec.disruption.budgets[].duration",
        "budgets[0].duration",
        lambda v: {"budgets": [{"nodes": "1", "schedule": "@daily", "duration": v}]},
        NodePoolSpec,
        "hours and/or",
    ),
    (
        POOL,
        "spec.disruption.consolidateAfter",
        "consolidateAfter",
        lambda v: {"consolidateAfter": v},
        NodePoolSpec,
        "a duration like",
    ),
    (
        POOL,
        "spec.template.spec.expireAfter",
        "expireAfter",
        lambda v: {"expireAfter": v},
        NodePoolSpec,
        "a duration like",
    ),
    (
        POOL,
        "spec.template.spec.terminationGracePeriod",
        "terminationGracePeriod",
        lambda v: {"terminationGracePeriod": v},
        NodePoolSpec,
        "a duration like",
    ),
    (
        OVERLAY,
        "spec.capacity{}",
        "capacity",
        lambda v: {"name": "o", "requirements": [], "capacity": {"example.com/device": v}},
        NodeOverlaySpec,
        "Kubernetes quantity",
    ),
    (
        OVERLAY,
        "spec.price",
        "price",
        lambda v: {"name": "o", "requirements": [], "price": v},
        NodeOverlaySpec,
        "a price like",
    ),
    (
        OVERLAY,
        "spec.priceAdjustment",
        "priceAdjustment",
        lambda v: {"name": "o", "requirements": [], "priceAdjustment": v},
        NodeOverlaySpec,
        "signed amount",
    ),
    (
        OVERLAY,
        "spec.requirements[].key",
        "requirements[0].key",
        lambda v: {"name": "o", "requirements": [{"key": v, "operator": "Exists"}], "price": "1"},
        NodeOverlaySpec,
        "label key",
    ),
    (
        OVERLAY,
        "spec.requirements[].values",
        "requirements[0].values",
        lambda v: {
            "name": "o",
            "requirements": [{"key": "example.com/a", "operator": "In", "values": [v]}],
            "price": "1",
        },
        NodeOverlaySpec,
        "63 characters",
    ),
    (
        "EC2NodeClass",
        "spec.kubelet.kubeReserved{}",
        "kubeReserved",
        lambda v: {"kubeReserved": {"cpu": v}},
        KubeletSpec,
        "quantity",
    ),
    (
        "EC2NodeClass",
        "spec.kubelet.systemReserved{}",
        "systemReserved",
        lambda v: {"systemReserved": {"memory": v}},
        KubeletSpec,
        "quantity",
    ),
    (
        "EC2NodeClass",
        "spec.kubelet.evictionHard{}",
        "evictionHard",
        lambda v: {"evictionHard": {"memory.available": v}},
        KubeletSpec,
        "percentage",
    ),
    (
        "EC2NodeClass",
        "spec.kubelet.evictionSoft{}",
        "evictionSoft",
        lambda v: {"evictionSoft": {"memory.available": v}, "evictionSoftGracePeriod": {"memory.available": "1m"}},
        KubeletSpec,
        "percentage",
    ),
    (
        "EC2NodeClass",
        "spec.amiSelectorTerms[].id",
        "amiSelectorTerms[0].id",
        lambda v: {"amiSelectorTerms": [{"id": v}], "amiFamily": "AL2023"},
        NodeClassSpec,
        "ami-",
    ),
    (
        "EC2NodeClass",
        "spec.subnetSelectorTerms[].id",
        "extraSubnetSelectorTerms[0].id",
        lambda v: {"extraSubnetSelectorTerms": [{"id": v}]},
        NodeClassSpec,
        "subnet-",
    ),
    (
        "EC2NodeClass",
        "spec.securityGroupSelectorTerms[].id",
        "extraSecurityGroupSelectorTerms[0].id",
        lambda v: {"extraSecurityGroupSelectorTerms": [{"id": v}]},
        NodeClassSpec,
        "sg-",
    ),
    (
        "EC2NodeClass",
        "spec.capacityReservationSelectorTerms[].id",
        "capacityReservationSelectorTerms[0].id",
        lambda v: {"capacityReservationSelectorTerms": [{"id": v}]},
        NodeClassSpec,
        "cr-",
    ),
    (
        "EC2NodeClass",
        "spec.capacityReservationSelectorTerms[].ownerID",
        "capacityReservationSelectorTerms[0].ownerID",
        lambda v: {"capacityReservationSelectorTerms": [{"ownerID": v, "tags": {"team": "data"}}]},
        NodeClassSpec,
        "12-digit",
    ),
]


def refusal(spec: type[BaseModel], settings_: dict[str, Any], prefix: str) -> list[str] | None:
    """The lines the configuration shows for these settings (None: accepted)."""
    try:
        spec.model_validate(settings_)
    except ValidationError as err:
        return format_errors(err, prefix, root=spec).split("\n")  # type: ignore[arg-type]
    return None


@pytest.mark.parametrize(
    ("kind", "path", "setting", "build", "spec", "allowed"), FIELDS, ids=[f[0] + ":" + f[1] for f in FIELDS]
)
@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_a_value_the_crds_pattern_refuses_is_refused_by_the_typed_settings(
    kind, path, setting, build, spec, allowed, data
):
    upstream = pattern(kind, path)
    value = data.draw(near(upstream))
    assume(re2.search(upstream, value) is None)  # the API server refuses it
    lines = refusal(spec, build(value), "nodePools[0].")
    assert lines is not None, f"{setting} {value!r} is accepted, and Kubernetes refuses it"
    mine = [line for line in lines if line.startswith(f"nodePools[0].{setting}") or line.startswith("nodePools[0]: ")]
    assert mine, lines
    line = mine[0]
    assert "\n" not in line and allowed in line, line
    # the value shows (as JSON or as a Python literal; a long one cut)
    shown = [json.dumps(value)[:40], repr(value)[:40], json.dumps(value, ensure_ascii=False)[:40]]
    assert any(s.strip("\"'") in line for s in shown) or len(repr(value)) > 60, line


# NodePool fields as a YAML file writes them: where in the object, and how the value goes in.
MANIFEST_FIELDS: list[tuple[str, str, Callable[[dict[str, Any], str], None]]] = [
    (
        "spec.template.spec.taints[].key",
        "spec.template.spec.taints[0].key",
        lambda o, v: o["spec"]["template"]["spec"].update(taints=[{"key": v, "effect": "NoSchedule"}]),
    ),
    (
        "spec.template.spec.taints[].value",
        "spec.template.spec.taints[0].value",
        lambda o, v: o["spec"]["template"]["spec"].update(taints=[{"key": "k", "value": v, "effect": "NoSchedule"}]),
    ),
    (
        "spec.template.spec.requirements[].key",
        "spec.template.spec.requirements[0].key",
        lambda o, v: o["spec"]["template"]["spec"].update(requirements=[{"key": v, "operator": "Exists"}]),
    ),
    (
        "spec.template.spec.requirements[].values",
        "spec.template.spec.requirements[0]",
        lambda o, v: o["spec"]["template"]["spec"].update(
            requirements=[{"key": "example.com/team", "operator": "In", "values": [v]}]
        ),
    ),
    (
        "spec.template.metadata.labels{}",
        "spec.template.metadata.labels",
        lambda o, v: o["spec"]["template"].update(metadata={"labels": {"example.com/team": v}}),
    ),
    ("spec.limits{}", "spec.limits", lambda o, v: o["spec"].update(limits={"cpu": v})),
    (
        "spec.disruption.budgets[].schedule",
        "spec.disruption.budgets[0].schedule",
        lambda o, v: o["spec"]["disruption"].update(budgets=[{"nodes": "1", "schedule": v, "duration": "1h"}]),
    ),
    (
        "spec.disruption.consolidateAfter",
        "spec.disruption.consolidateAfter",
        lambda o, v: o["spec"]["disruption"].update(consolidateAfter=v),
    ),
    (
        "spec.template.spec.expireAfter",
        "spec.template.spec.expireAfter",
        lambda o, v: o["spec"]["template"]["spec"].update(expireAfter=v),
    ),
]


def _pool() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "general"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [],
                }
            },
            "disruption": {"consolidateAfter": "1m"},
        },
    }


@pytest.mark.parametrize(("path", "where", "put"), MANIFEST_FIELDS, ids=[f[0] for f in MANIFEST_FIELDS])
@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_a_value_the_crds_pattern_refuses_is_refused_in_node_manifests(path, where, put, data):
    upstream = pattern(POOL, path)
    value = data.draw(near(upstream))
    assume(re2.search(upstream, value) is None)
    assume("${" not in value)
    document = _pool()
    put(document, value)
    with pytest.raises(ManifestError) as refused:
        convert(document, "pools/general.yaml", "c")
    (line,) = [p for p in refused.value.problems if where in p]
    assert line.startswith(f"pools/general.yaml: NodePool/general: {where}"), line
    assert "\n" not in line


def test_the_crds_bounds_on_labels_and_requirements_are_the_typed_settings():
    """spec.template.metadata.labels takes at most 100 keys and spec.template.spec.requirements 100 entries, those
    the app writes (the shortcuts and kubernetes.io/os) counted."""
    labels = {f"example.com/l{i}": "x" for i in range(101)}
    assert refusal(NodePoolSpec, {"labels": labels}, "nodePools[0].") == [
        "nodePools[0].labels: 101 labels: a NodePool's template takes at most 100 (the CRD's bound)"
    ]
    assert refusal(NodePoolSpec, {"labels": dict(list(labels.items())[:100])}, "nodePools[0].") is None
    own = [{"key": f"example.com/r{i}", "operator": "Exists"} for i in range(96)]
    assert refusal(NodePoolSpec, {"requirements": own}, "nodePools[0].") == [
        "nodePools[0].requirements: 96 of your own and 5 the app writes (the shortcut fields, kubernetes.io/os) "
        "make 101; a NodePool takes at most 100 (the CRD's bound)"
    ]
    assert refusal(NodePoolSpec, {"requirements": own[:95]}, "nodePools[0].") is None
    assert _at(POOL, "spec.template.metadata.labels")["maxProperties"] == 100
    assert _at(POOL, "spec.template.spec.requirements")["maxItems"] == 100


@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    fields=st.lists(st.sampled_from(["0", "9", "*", "*/5", "1-5", "mon-fri", "1,15"]), min_size=5, max_size=5),
    separators=st.lists(
        st.sampled_from([" ", "  ", "\t", "\n", "\v", "\f", "\r", "\x1c", "\u00a0", "\u2028"]), min_size=5
    ),
)
def test_a_budget_schedule_is_refused_unless_the_crd_takes_its_separators(fields, separators):
    """Cron fields apart by whitespace: Python's \\s (\\v, \\x1c, U+00A0, U+2028) is not RE2's ([\\t\\n\\f\\r ])."""
    value = fields[0] + "".join(s + f for s, f in zip(separators, fields[1:], strict=False))
    settings_ = {"budgets": [{"nodes": "1", "schedule": value, "duration": "1h"}]}
    lines = refusal(NodePoolSpec, settings_, "nodePools[0].")
    if re2.search(crd.BUDGET_SCHEDULE, value) is None:
        assert lines is not None and len(lines) == 1 and "cron expression" in lines[0], (value, lines)
        assert lines[0].startswith(f"nodePools[0].budgets[0].schedule = {json.dumps(value)}: "), lines
    if lines is None:
        assert re2.search(crd.BUDGET_SCHEDULE, value) is not None
