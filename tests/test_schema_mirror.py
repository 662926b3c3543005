"""tooling/mirror_crd_schema.py turns a CRD's structural OpenAPI schema into the project's JSON Schema mirror: every
pattern, enforced format, bound and enum of upstream's schema is in the mirror, and nothing else. The mirrors'
patterns are matched with RE2, as the API server matches them. (That every committed mirror of
tooling/schemas/karpenter-<version>/ is exactly what the generators write from the CRDs the release's karpenter-crd
chart installs: tests/test_karpenter_import.py, which re-runs the import.)"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from karpenter_stack.config import ConfigError, load_config
from tests.conftest import TODAY
from tooling.kubernetes_schemas import SCHEMAS, KubernetesValidator, config_objects, date_time, object_violations
from tooling.mirror_crd_schema import CRD_FILES, json_schema, mirrors, served_spec, upstream_crds

VERSION = "1.14.1"
CRDS = upstream_crds(VERSION)
# The keywords of a structural schema that refuse a value (besides type, required and unknown fields).
CONSTRAINTS = (
    "pattern",
    "format",
    "enum",
    "maxLength",
    "minLength",
    "maximum",
    "minimum",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
)
BOUNDS = CONSTRAINTS[3:]


def test_structural_openapi_becomes_strict_json_schema():
    node = {
        "type": "object",
        "description": "dropped",
        "required": ["requirements"],
        "x-kubernetes-validations": [{"rule": "true"}],  # CEL: mirrored by tooling/mirror_crd_rules.py
        "properties": {
            "capacity": {
                "type": "object",
                "additionalProperties": {
                    "x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "pattern": "^[0-9]+$",
                },
            },
            "weight": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 10000},
            "timeAdded": {"type": "string", "format": "date-time"},
            "requirements": {
                "type": "array",
                "maxItems": 100,
                "x-kubernetes-list-type": "atomic",
                "items": {
                    "type": "object",
                    "required": ["key"],
                    "properties": {"key": {"type": "string", "maxLength": 316}},
                },
            },
        },
    }
    assert json_schema(node) == {
        "type": "object",
        "required": ["requirements"],
        "additionalProperties": False,
        "properties": {
            "capacity": {
                "type": "object",
                "additionalProperties": {"type": ["integer", "string"], "pattern": "^[0-9]+$"},
            },
            # int32/int64: formats the API server strips (it checks no range), so the mirror has none
            "weight": {"type": "integer", "minimum": 1, "maximum": 10000},
            "timeAdded": {"type": "string", "format": "date-time"},
            "requirements": {
                "type": "array",
                "maxItems": 100,
                "items": {
                    "type": "object",
                    "required": ["key"],
                    "additionalProperties": False,
                    "properties": {"key": {"type": "string", "maxLength": 316}},
                },
            },
        },
    }


def test_a_format_the_mirror_does_not_know_stops_the_generator():
    with pytest.raises(ValueError, match="format 'ipv4': unknown to the mirror; add it to FORMATS"):
        json_schema({"type": "string", "format": "ipv4"})


def test_a_changed_upstream_crd_changes_the_mirror(tmp_path):
    """The drift test can fail: one pattern changed in a copy of the CRDs gives another NodePool mirror."""
    crds = tmp_path / "crds"
    shutil.copytree(CRDS, crds)
    nodepools = crds / CRD_FILES["nodepool"]
    original = "pattern: ^(([0-9]+(s|m|h))+|Never)$"
    assert nodepools.read_text().count(original) == 2  # expireAfter and consolidateAfter
    nodepools.write_text(nodepools.read_text().replace(original, "pattern: ^(([0-9]+(s|m|h|d))+|Never)$"))
    changed = json.loads(mirrors(VERSION, crds)["nodepool"])
    assert changed["properties"]["spec"]["properties"]["disruption"]["properties"]["consolidateAfter"] == {
        "type": "string",
        "pattern": "^(([0-9]+(s|m|h|d))+|Never)$",
    }
    assert mirrors(VERSION, crds)["nodepool"] != (SCHEMAS / f"karpenter-{VERSION}" / "nodepool.schema.json").read_text()


def _constraints(node: dict[str, Any], path: str = "spec") -> Iterator[tuple[str, str, str]]:
    """(path, keyword, value as JSON) of every constraint below a schema node (OpenAPI or mirror)."""
    for keyword in CONSTRAINTS:
        if keyword in node:
            yield path, keyword, json.dumps(node[keyword], sort_keys=True)
    for name, child in (node.get("properties") or {}).items():
        yield from _constraints(child, f"{path}.{name}")
    for key, suffix in (("items", "[]"), ("additionalProperties", "{}")):
        if isinstance(node.get(key), dict):
            yield from _constraints(node[key], path + suffix)


def _upstream(name: str) -> list[tuple[str, str, str]]:
    return list(_constraints(served_spec(CRDS / CRD_FILES[name])[0]))


def _mirrored(name: str) -> list[tuple[str, str, str]]:
    return list(
        _constraints(
            json.loads((SCHEMAS / f"karpenter-{VERSION}" / f"{name}.schema.json").read_text())["properties"]["spec"]
        )
    )


# name -> keyword -> how many upstream's spec schema has (formats: those the API server enforces; int32 and int64
# it does not, and the mirror has none of them: NodePool 2, EC2NodeClass 15, NodeOverlay 1).
COUNTS = {
    "nodepool": {"pattern": 15, "enum": 5, "format": 2, "bounds": 14},
    "ec2nodeclass": {"pattern": 11, "enum": 9, "format": 0, "bounds": 32},
    "nodeoverlay": {"pattern": 5, "enum": 1, "format": 0, "bounds": 5},
}


def _counts(constraints: list[tuple[str, str, str]]) -> dict[str, int]:
    counted = Counter("bounds" if keyword in BOUNDS else keyword for _, keyword, _ in constraints)
    return {k: counted[k] for k in ("pattern", "enum", "format", "bounds")}


@pytest.mark.parametrize("name", sorted(CRD_FILES))
def test_every_pattern_enum_format_and_bound_of_upstream_is_in_the_mirror_and_nothing_else(name):
    upstream = [c for c in _upstream(name) if c[1] != "format" or json.loads(c[2]) == "date-time"]
    assert _counts(upstream) == COUNTS[name]
    assert _counts(_mirrored(name)) == COUNTS[name]
    assert sorted(_mirrored(name)) == sorted(upstream)
    dropped = {json.loads(v) for _, k, v in _upstream(name) if k == "format"} - {"date-time"}
    assert dropped <= {"int32", "int64"}


def test_the_nodepool_mirror_has_the_patterns_the_hand_kept_one_missed():
    """Before: 6 of the NodePool spec's 15 patterns (taint, requirement and label keys and values, limits and
    budget schedules missing). Now all 15, at their paths."""
    patterns = {path for path, keyword, _ in _mirrored("nodepool") if keyword == "pattern"}
    assert patterns == {
        "spec.disruption.budgets[].duration",
        "spec.disruption.budgets[].nodes",
        "spec.disruption.budgets[].schedule",
        "spec.disruption.consolidateAfter",
        "spec.limits{}",
        "spec.template.metadata.labels{}",
        "spec.template.spec.expireAfter",
        "spec.template.spec.nodeClassRef.group",
        "spec.template.spec.requirements[].key",
        "spec.template.spec.requirements[].values",
        "spec.template.spec.startupTaints[].key",
        "spec.template.spec.startupTaints[].value",
        "spec.template.spec.taints[].key",
        "spec.template.spec.taints[].value",
        "spec.template.spec.terminationGracePeriod",
    }


def test_upstreams_requirement_values_pattern_sits_on_the_list_so_the_api_server_does_not_check_it():
    """Upstream puts maxLength 63 and the label-value pattern on the values array, not on its items: the API
    server checks both on strings only, so it takes any value; the mirror, as JSON Schema, the same. The app's
    typed validation refuses such values itself (tests/test_crd_values.py): Karpenter's own validation of a
    pool's requirements does."""
    values = json.loads((SCHEMAS / f"karpenter-{VERSION}" / "nodepool.schema.json").read_text())["properties"]["spec"][
        "properties"
    ]["template"]["properties"]["spec"]["properties"]["requirements"]["items"]["properties"]["values"]
    assert values["type"] == "array" and values["items"] == {"type": "string"} and values["maxLength"] == 63
    assert KubernetesValidator(values).is_valid(["not a label value", "x" * 64])


# --- RE2, not Python's re ---------------------------------------------------------------------------------------


def _patterns() -> list[str]:
    return sorted({json.loads(v) for name in CRD_FILES for _, k, v in _upstream(name) if k == "pattern"})


def test_the_mirrors_patterns_are_matched_as_the_api_server_matches_them():
    """Where Python's re (jsonschema's own pattern check) and RE2 (Go's, the API server's) part, the mirror's
    check is RE2's: a final newline, a Unicode digit and a vertical tab are refused, an unanchored pattern
    (upstream's ami-[0-9a-z]+) is searched, not matched."""
    cases = [
        (
            "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
            "100Gi\n",
        ),
        ("^\\d+(\\.\\d+)?$", "\u0663"),
        (
            "^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\\s(.+)\\s(.+)\\s(.+)\\s(.+))$",
            "0\v9 * * *",
        ),
    ]
    for pattern, value in cases:
        assert pattern in _patterns()
        assert re.search(pattern, value) is not None  # what jsonschema's own check would accept
        assert Draft202012Validator({"pattern": pattern}).is_valid(value)
        assert not KubernetesValidator({"pattern": pattern}).is_valid(value)
    # Kubernetes searches: upstream's id patterns are unanchored
    assert KubernetesValidator({"pattern": "ami-[0-9a-z]+"}).is_valid("my-ami-0123 image")


# A value each anchored upstream pattern accepts.
EXAMPLES = {
    "^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$": "1h30m",
    "^((100|[0-9]{1,2})%|[0-9]+)$": "10%",
    "^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}"
    "|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$": "100Gi",
    "^(([+-]{1}(\\d*\\.?\\d+))|(\\+{1}\\d*\\.?\\d+%)|(^(-\\d{1,2}(\\.\\d+)?%)$)|(-100%))$": "-10%",
    "^(([0-9]+(s|m|h))+|Never)$": "720h",
    "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$": "m7g",
    "^((\\d{1,2}(\\.\\d{1,2})?|100(\\.0{1,2})?)%||(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    "([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?)$": "5%",
    "^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\\s(.+)\\s(.+)\\s(.+)\\s(.+))$": "0 9 * * mon-fri",
    "^([0-9]+(s|m|h))+$": "24h",
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$": (
        "example.com/team"
    ),
    "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$": (
        "1000Gi"
    ),
    "^[0-9]{12}$": "123456789012",
    "^[^/]*$": "karpenter.k8s.aws",
    "^\\d+(\\.\\d+)?$": "0.25",
    "^cr-[0-9a-z]+$": "cr-0123456789abcdef0",
    "^pg-[0-9a-z]+$": "pg-0123456789abcdef0",
}


def test_the_anchored_upstream_patterns_refuse_a_final_newline():
    """Python's $ matches before a final newline (a YAML block scalar's value ends with one); RE2's does not, so
    the API server refuses the value: the mirror's check too. (^[^/]*$ takes it: a negated class matches a
    newline in RE2.) The three unanchored id patterns are searched, so they take anything around an id."""
    assert sorted(EXAMPLES) == sorted(p for p in _patterns() if p.endswith("$"))
    assert len(EXAMPLES) == 16 and len(_patterns()) == 19
    for pattern, example in EXAMPLES.items():
        assert KubernetesValidator({"pattern": pattern}).is_valid(example), pattern
        assert re.search(pattern, example + "\n") is not None, pattern
        takes_newline = KubernetesValidator({"pattern": pattern}).is_valid(example + "\n")
        assert takes_newline is (pattern == "^[^/]*$"), pattern


def test_date_time_is_rfc_3339():
    assert [date_time(v) for v in ("2026-11-26T11:00:00Z", "2026-11-26t11:00:00.5+01:00", 7)] == [True, True, True]
    assert [date_time(v) for v in ("2026-11-26 11:00:00Z", "2026-02-30T11:00:00Z", "yesterday")] == [False] * 3


# --- what the hand-kept mirrors refused beyond upstream's schema --------------------------------------------------

# Each restriction the hand-kept NodePool and EC2NodeClass mirrors had that upstream's structural schema has not:
# the setting that now refuses it (the typed settings, what the synth checks) and, where it is one, upstream's CEL
# rule saying the same (cel-rules.json, evaluated on every applied object by tests/test_cel_rules.py).
HAND_KEPT_EXTRAS = [
    # NodePool: requirement key not karpenter.sh/nodepool or kubernetes.io/hostname (the mirror's "not enum")
    (
        {"nodePools": [{"requirements": [{"key": "karpenter.sh/nodepool", "operator": "Exists"}]}]},
        "nodePools[0].requirements[0].key = \"karpenter.sh/nodepool\": 'karpenter.sh/nodepool' is a label key "
        "Karpenter sets itself",
        'label "karpenter.sh/nodepool" is restricted',
    ),
    (
        {"nodePools": [{"requirements": [{"key": "kubernetes.io/hostname", "operator": "Exists"}]}]},
        "nodePools[0].requirements[0].key = \"kubernetes.io/hostname\": 'kubernetes.io/hostname' is a label key "
        "Karpenter sets itself",
        'label "kubernetes.io/hostname" is restricted',
    ),
    # NodePool: nodeClassRef group, kind and name not empty (minLength 1; the app writes group and kind)
    (
        {"nodePools": [{"nodeClass": ""}]},
        'nodePools[0].nodeClass = "": must be a lowercase DNS subdomain',
        "name may not be empty",
    ),
    # NodePool: a budget's schedule and duration together (dependentRequired)
    (
        {"nodePools": [{"budgets": [{"nodes": "1", "schedule": "@daily"}]}]},
        "nodePools[0].budgets[0]: a disruption budget needs schedule and duration together, or neither",
        "'schedule' must be set with 'duration'",
    ),
    # EC2NodeClass: every selector term selects by something (minProperties 1)
    (
        {"nodeClasses": [{"amiSelectorTerms": [{}], "amiFamily": "AL2023"}]},
        "nodeClasses[0].amiSelectorTerms[0]: an AMI selector term selects by alias, id, name, tags or ssmParameter",
        "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']",
    ),
    (
        {"nodeClasses": [{"extraSubnetSelectorTerms": [{"tags": {}}]}]},
        "nodeClasses[0].extraSubnetSelectorTerms[0]: a subnet selector term selects by exactly one of id, tags",
        None,  # an empty tags map: upstream's schema and rules take it (and it selects every subnet)
    ),
    (
        {"nodeClasses": [{"extraSecurityGroupSelectorTerms": [{}]}]},
        "nodeClasses[0].extraSecurityGroupSelectorTerms[0]: a security group selector term selects by exactly one",
        "expected at least one, got none, ['tags', 'id', 'name']",
    ),
    (
        {"nodeClasses": [{"capacityReservationSelectorTerms": [{}]}]},
        "nodeClasses[0].capacityReservationSelectorTerms[0]: a capacity reservation selector term needs an id, tags",
        "expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']",
    ),
    # EC2NodeClass: the alias pattern with a version (the project's), and ids matched in full (upstream searches)
    (
        {"nodeClasses": [{"amiAlias": "al2023@20260801"}]},
        'nodeClasses[0].amiAlias = "al2023@20260801": must be family@version',
        None,
    ),
    (
        {"nodeClasses": [{"amiSelectorTerms": [{"id": "my ami-0123456789abcdef0"}], "amiFamily": "AL2023"}]},
        'nodeClasses[0].amiSelectorTerms[0].id = "my ami-0123456789abcdef0": must look like ami-0123456789abcdef0',
        None,
    ),
    (
        {"nodeClasses": [{"extraSubnetSelectorTerms": [{"id": "xsubnet-0123456789abcdef0"}]}]},
        'nodeClasses[0].extraSubnetSelectorTerms[0].id = "xsubnet-0123456789abcdef0": must look like subnet-',
        None,
    ),
    (
        {"nodeClasses": [{"extraSecurityGroupSelectorTerms": [{"id": "sg-0123456789abcdef0 "}]}]},
        'nodeClasses[0].extraSecurityGroupSelectorTerms[0].id = "sg-0123456789abcdef0 ": must look like sg-',
        None,
    ),
    # EC2NodeClass: tag keys Karpenter sets (the mirror's propertyNames)
    *(
        (
            {"nodeClasses": [{"tags": {key: "x"}}]},
            f"nodeClasses[0].tags: tag {key!r} is one Karpenter sets itself",
            f"tag contains a restricted tag matching {rule}",
        )
        for key, rule in (
            ("eks:eks-cluster-name", "eks:eks-cluster-name"),
            ("kubernetes.io/cluster/other", "kubernetes.io/cluster/"),
            ("karpenter.sh/nodepool", "karpenter.sh/nodepool"),
            ("karpenter.sh/nodeclaim", "karpenter.sh/nodeclaim"),
            ("karpenter.k8s.aws/ec2nodeclass", "karpenter.k8s.aws/ec2nodeclass"),
        )
    ),
]


@pytest.mark.parametrize(("settings_", "refusal", "cel_message"), HAND_KEPT_EXTRAS)
def test_what_the_hand_kept_mirrors_refused_beyond_upstreams_schema_the_typed_settings_refuse(
    settings_, refusal, cel_message
):
    with pytest.raises(ConfigError) as refused:
        load_config(settings_, today=TODAY)
    assert str(refused.value).startswith(refusal), str(refused.value)
    if cel_message is not None:
        rules = json.loads((SCHEMAS / f"karpenter-{VERSION}" / "cel-rules.json").read_text())["kinds"]
        assert any(r["message"] == cel_message for kind in rules.values() for r in kind["rules"] if "message" in r)


def test_requirement_values_are_not_limited_to_50_as_the_hand_kept_mirror_had_it():
    """The hand-kept NodePool mirror allowed 50 values per requirement; neither upstream's schema nor its rules
    limit them (minValues is at most 50, not the values), so a pool listing 60 instance types is applied."""
    values = [f"m{i}.large" for i in range(60)]
    pool = {"requirements": [{"key": "example.com/size", "operator": "In", "values": values}]}
    config = load_config({"nodePools": [pool]}, today=TODAY)
    (obj,) = [o for o in config_objects(config) if o["kind"] == "NodePool"]
    assert obj["spec"]["template"]["spec"]["requirements"][-1]["values"] == values
    assert object_violations(obj, VERSION, config.kubernetes_version) == []


def test_one_command_writes_the_three_mirrors(tmp_path, monkeypatch, capsys):
    """python -m tooling.mirror_crd_schema --all 1.14.1, in a copy of the repository's two folders it reads and
    writes: the committed mirrors, byte for byte."""
    from tooling import mirror_crd_schema

    shutil.copytree(CRDS, tmp_path / "tooling" / "upstream" / f"karpenter-{VERSION}" / "crds")
    (tmp_path / "tooling" / "schemas" / f"karpenter-{VERSION}").mkdir(parents=True)
    monkeypatch.setattr(mirror_crd_schema, "ROOT", tmp_path)
    mirror_crd_schema.main(["--all", VERSION])
    for name in CRD_FILES:
        written = tmp_path / "tooling" / "schemas" / f"karpenter-{VERSION}" / f"{name}.schema.json"
        assert written.read_text() == (SCHEMAS / f"karpenter-{VERSION}" / f"{name}.schema.json").read_text()
    assert capsys.readouterr().out.splitlines() == [
        f"wrote tooling/schemas/karpenter-{VERSION}/{name}.schema.json" for name in CRD_FILES
    ]
    with pytest.raises(SystemExit, match="usage: python -m tooling.mirror_crd_schema --all <version>"):
        mirror_crd_schema.main(["--all"])
