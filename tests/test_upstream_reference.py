"""Issue 31, points 5 and 6: the configuration reference speaks Karpenter's language too -- the keys of every
map-typed setting with a closed key set (every feature gate by its upstream name), Karpenter's own field next to
a setting whose name is not Karpenter's -- and lists, in one generated table, the defaults that differ from
Karpenter's with the reason each field declares. Upstream's defaults come from the project's mirrors
(tooling/schemas/), never from a checkout of Karpenter."""

from __future__ import annotations

import re
from typing import Literal, get_args, get_origin

from constructs_lib.karpenter.specs.change import (
    Change,
    FieldChange,
    change,
    change_of,
    declaration,
    upstream_leaf,
    upstream_name,
    upstream_segments,
)
from constructs_lib.karpenter.specs.controller import FEATURE_GATE_DEFAULTS, ControllerSpec
from constructs_lib.karpenter.specs.kubelet import KubeletSpec
from constructs_lib.karpenter.specs.node_class import NodeClassSpec
from constructs_lib.karpenter.specs.node_pool import NodePoolSpec
from karpenter_stack.config import tree
from karpenter_stack.config.reference import ROOTS, upstream_names
from tests.conftest import ROOT
from tooling.generate_docs import documented_differing_defaults, reference_document
from tooling.releases import upstream_defaults as upstream


def _rows() -> dict[str, str]:
    """The reference's rows by key (the first row of a key: a setting before an entry's key of the same name)."""
    rows: dict[str, str] = {}
    for line in reference_document().splitlines():
        if line.startswith("| `"):
            rows.setdefault(line.split(" | ")[0].removeprefix("| "), line)
    return rows


def test_change_takes_the_new_parts_and_keeps_its_old_form():
    assert change(Change.BEHAVIORAL, "spec.weight", "a source") == {
        "change": "behavioral",
        "manifest": "spec.weight",
        "source": "a source",
    }
    extra = change(Change.STATIC_DRIFT, "spec.metadataOptions", "s", upstream="spec.metadataOptions.x", differs="why")
    assert extra["upstream"] == "spec.metadataOptions.x" and extra["differs"] == "why"

    class _Info:
        json_schema_extra = extra

    declared = declaration(_Info())  # type: ignore[arg-type]
    assert (declared.upstream, declared.differs) == ("spec.metadataOptions.x", "why")


def test_karpenters_name_is_declared_or_derived_from_the_manifest_path():
    kubelet = change_of(KubeletSpec, "max_pods")
    assert upstream_name(kubelet, "maxPods", holder="spec.kubelet") == "spec.kubelet.maxPods"
    assert upstream_name(change_of(ControllerSpec, "zonal_shift"), "zonalShift") == "settings.enableZonalShift"
    assert upstream_name(change_of(NodeClassSpec, "ami_alias"), "amiAlias") == "spec.amiSelectorTerms[].alias"
    resource = FieldChange(Change.RESOURCES, "AWS::EC2::NatGateway", "s")
    assert upstream_name(resource, "natGateways") is None  # CloudFormation's, not Karpenter's
    requirement = change_of(NodePoolSpec, "min_instance_generation").upstream
    assert upstream_segments(requirement) == [
        ("spec", None),
        ("template", None),
        ("spec", None),
        ("requirements", "karpenter.k8s.aws/instance-generation"),
    ]
    assert upstream_leaf(requirement) == "requirements" and upstream_leaf("spec.blockDeviceMappings[]") == (
        "blockDeviceMappings"
    )


def test_searching_the_docs_for_upstreams_feature_gate_names_finds_them():
    """Found by a newcomer: `spotToSpotConsolidation` and `nodeRepair` were nowhere in the README or docs/."""
    texts = {p.name: p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}
    for gate in ("spotToSpotConsolidation", "nodeRepair", "staticCapacity"):
        assert "configuration-reference.md" in [name for name, text in texts.items() if gate in text]
    assert (
        "Keys: `spotToSpotConsolidation` (upstream's default: `false`), `nodeRepair` (upstream's default: `false`), "
        "`nodeOverlay` (upstream's default: `false`), `staticCapacity` (upstream's default: `false`), "
        "`capacityBuffer` (upstream's default: `false`) or `reservedCapacity` (upstream's default: `true`)."
    ) in _rows()["`featureGates`"]


def _closed_maps() -> dict[str, tuple[str, ...]]:
    """Every map-typed field whose key type is a Literal, by key: its keys."""
    found = {}
    for root, path in ROOTS:
        for nested in tree.walk(root, path):
            for name, field in nested.model.model_fields.items():
                annotation = field.annotation
                if get_origin(annotation) is dict and get_origin(get_args(annotation)[0]) is Literal:
                    found[tree.key_of(name, nested.model)] = get_args(get_args(annotation)[0])
    return found


def test_every_map_with_a_closed_key_set_lists_its_keys():
    maps = _closed_maps()
    assert sorted(maps) == [
        "addonVersions",
        "evictionHard",
        "evictionSoft",
        "evictionSoftGracePeriod",
        "featureGates",
        "kubeReserved",
        "systemReserved",
    ]
    rows = _rows()
    for key, keys in maps.items():
        listed = re.search(r"Keys: (.*?)\. ", rows[f"`{key}`"])
        assert listed is not None, key
        assert re.findall(r"`([^`]+)`(?: \(upstream's default: `[^`]+`\))?", listed.group(1)) == list(keys)
    assert "Keys: `cpu`, `memory`, `ephemeral-storage` or `pid`." in rows["`systemReserved`"]
    assert (
        "Keys: `memory.available`, `nodefs.available`, `nodefs.inodesFree`, `imagefs.available`, "
        "`imagefs.inodesFree` or `pid.available`."
    ) in rows["`evictionHard`"]


def test_the_reference_names_karpenters_field_next_to_the_apps():
    rows = _rows()
    expected = {
        "amiAlias": "Karpenter: `spec.amiSelectorTerms[].alias`.",
        "rootVolumeSizeGib": "Karpenter: `spec.blockDeviceMappings[].ebs.volumeSize` (of the family's storage device:",
        "capacityTypes": "Karpenter: `spec.template.spec.requirements[key=karpenter.sh/capacity-type]` operator In.",
        "minInstanceGeneration": (
            "Karpenter: `spec.template.spec.requirements[key=karpenter.k8s.aws/instance-generation]` operator Gt."
        ),
        "metadataHopLimit": "Karpenter: `spec.metadataOptions.httpPutResponseHopLimit`.",
        "rootVolumeDeviceName": "Karpenter: `spec.blockDeviceMappings[].deviceName`.",
        "userDataFile": "Karpenter: `spec.userData`.",
        "nodeClass": "Karpenter: `spec.template.spec.nodeClassRef.name`.",
        "zonalShift": "Karpenter chart value: `settings.enableZonalShift`.",
        "cpu": "Karpenter chart value: `controller.resources.requests.cpu` (and controller.resources.limits.cpu).",
        "karpenterServiceAccount": "Karpenter chart value: `serviceAccount.name`.",
        "volumeKmsKey": "Karpenter: `spec.blockDeviceMappings[].ebs.kmsKeyID`.",
    }
    for key, text in expected.items():
        assert text in rows[f"`{key}`"], key
    # where the name is Karpenter's own, nothing is added
    assert "Karpenter:" not in rows["`maxPods`"] and "Karpenter:" not in rows["`expireAfter`"]
    lines = reference_document().splitlines()
    assert sum("Karpenter: `" in line or "Karpenter chart value: `" in line for line in lines) == 31


def test_every_karpenter_name_is_a_field_of_the_mirrored_schemas():
    names = upstream_names()
    unknown, checked = [], 0
    for (model, name), found in names.items():
        obj = upstream.object_of(model, change_of(model, name))
        if obj is None:
            continue
        checked += 1
        if upstream.schema_node(obj, found) is None:
            unknown.append(f"{model.__name__}.{name}: {obj} {found}")
    assert unknown == []
    assert checked == 77  # every declared field of the node objects and the chart, the kubelet's included
    assert upstream.schema_node("EC2NodeClass", "spec.amiSelectorTerms[].aliass") is None


def test_upstreams_defaults_come_from_the_mirrors():
    assert upstream.upstream_default("NodePool", "spec.disruption.consolidateAfter") == (
        "0s",
        "NodePool CRD 1.14.1, default of spec.disruption",
    )
    assert upstream.upstream_default("NodePool", "spec.template.spec.expireAfter")[0] == "720h"
    assert upstream.upstream_default("EC2NodeClass", "spec.metadataOptions.httpPutResponseHopLimit")[0] == 1
    assert upstream.upstream_default("EC2NodeClass", "spec.blockDeviceMappings[].ebs.volumeSize")[0] == "20Gi"
    assert upstream.upstream_default("EC2NodeClass", "spec.blockDeviceMappings[].ebs.encrypted")[0] is True
    assert upstream.upstream_default("NodePool", "spec.template.spec.terminationGracePeriod") == (
        upstream.MISSING,
        "no default in the NodePool CRD 1.14.1",
    )
    # the one table of feature gates (specs.controller) is the mirrored chart's
    assert upstream.upstream_default("chart values", "settings.featureGates")[0] == FEATURE_GATE_DEFAULTS
    assert upstream.upstream_default("chart values", "replicas")[0] == 2
    assert upstream.required("NodePool", "spec.template.spec.requirements[key=kubernetes.io/arch]")
    assert upstream.required("EC2NodeClass", "spec.amiSelectorTerms[].alias")
    assert not upstream.required("NodePool", "spec.limits")


def test_a_default_that_differs_declares_why_and_a_reason_names_a_difference():
    rows = upstream.compared()
    assert upstream.problems(rows) == []
    declared = {
        f"{model.__name__}.{name}"
        for root, path in ROOTS
        for nested in tree.walk(root, path)
        for model in [nested.model]
        for name in model.model_fields
        if (d := change_of(model, name)) is not None and d.differs
    }
    assert len(declared) == len([r for r in rows if r.differs]) == 8  # every reason is on a compared field
    unexplained = upstream.Compared("x", 50, "spec.a", "50Gi", "20Gi", "s", None)
    stale = upstream.Compared("y", "720h", "spec.b", "720h", "720h", "s", "a reason")
    assert upstream.problems([unexplained, stale]) == [
        'x: its default writes `"50Gi"` to spec.a, Karpenter\'s default is `"20Gi"`: declare why (differs= of its '
        "change(...))",
        "y: declares why it differs from Karpenter's default, but it no longer does",
    ]


def test_the_defaults_that_differ_from_karpenters():
    differing = [(r.setting, r.app, r.upstream_default) for r in upstream.compared() if r.differs]
    assert differing == [
        ("karpenterServiceAccount", "karpenter", ""),
        (
            "controllerCredentials",
            {"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/karpenter-controller"},
            {},
        ),
        ("controller.cpu", "1", upstream.MISSING),
        ("controller.memory", "1Gi", upstream.MISSING),
        ("nodeClasses[].rootVolumeSizeGib", "50Gi", "20Gi"),
        ("nodePools[].limits", {"cpu": "1000", "memory": "1000Gi"}, upstream.MISSING),
        ("nodePools[].terminationGracePeriod", "24h", upstream.MISSING),
        ("nodePools[].consolidateAfter", "1m", "0s"),
    ]
    same = {r.setting for r in upstream.compared() if not r.differs and r.app is not upstream.MISSING}
    assert same == {
        "nodeClasses[].rootVolumeType",  # gp3, as Karpenter's family default
        "nodeClasses[].metadataHopLimit",  # 1, the CRD's default
        "nodePools[].expireAfter",  # 720h
        "nodePools[].consolidationPolicy",  # WhenEmptyOrUnderutilized
        "nodePools[].budgets",  # [{"nodes": "10%"}]
    }


def test_the_documented_table_of_differing_defaults_is_generated():
    table = documented_differing_defaults()
    assert table == upstream.differing_defaults_markdown(), "run `make docs`"
    assert table.count("\n| `") == 8
    assert (
        '| `nodePools[].consolidateAfter` | `"1m"` | `spec.disruption.consolidateAfter` | `"0s"` (NodePool CRD 1.14.1, '
        "default of spec.disruption) | a minute after"
    ) in table
    assert (
        '| `nodePools[].terminationGracePeriod` | `"24h"` | `spec.template.spec.terminationGracePeriod` | unset '
        "(no default in the NodePool CRD 1.14.1) | bounds every drain at 24h"
    ) in table
