"""A pool's requirements: the shortcut fields (capacityTypes, architectures, instanceCategories,
minInstanceGeneration), null to leave one out, and the one rule for a requirement on a shortcut's key (it takes the
shortcut's place; both given is refused, naming both); labels and annotations on the NodePool and NodeOverlay
objects themselves and on a pool's nodes. Upstream's examples/v1 pools (Karpenter 1.14.1) are written through the
settings and come out with upstream's requirements, valid against the mirrored schemas and every CEL rule."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from constructs_lib.karpenter.specs.node_overlay import NodeOverlaySpec
from constructs_lib.karpenter.specs.node_pool import NodePoolSpec
from constructs_lib.karpenter.specs.rules import pool_problems
from karpenter_stack.config import ConfigError, load_config
from tests.conftest import TODAY
from tooling.cel_rules import evaluate
from tooling.kubernetes_schemas import config_objects, object_violations

CATEGORY = "karpenter.k8s.aws/instance-category"
NO_SHORTCUTS = {"capacityTypes": None, "architectures": None, "instanceCategories": None, "minInstanceGeneration": None}


def _req(key: str, operator: str, values: list[str] | None = None, min_values: int | None = None) -> dict:
    out: dict = {"key": key, "operator": operator}
    out |= {"values": values} if values is not None else {}
    out |= {"minValues": min_values} if min_values is not None else {}
    return out


SPOT_C5 = [
    _req("karpenter.sh/capacity-type", "In", ["spot"]),
    _req("kubernetes.io/arch", "In", ["amd64"]),
    _req("kubernetes.io/os", "In", ["linux"]),
]
ON_DEMAND_CMR = [
    _req("kubernetes.io/arch", "In", ["amd64"]),
    _req("kubernetes.io/os", "In", ["linux"]),
    _req("karpenter.sh/capacity-type", "In", ["on-demand"]),
    _req(CATEGORY, "In", ["c", "m", "r"]),
    _req("karpenter.k8s.aws/instance-generation", "Gt", ["2"]),
]
# upstream's file (aws/karpenter-provider-aws v1.14.1 examples/v1/) -> (the pool as settings, upstream's NodePool
# requirements and metadata.annotations, copied from the file)
UPSTREAM = {
    "min-values-family.yaml": (
        {
            "name": "spot",
            "capacityTypes": ["spot"],
            "architectures": ["amd64"],
            "objectAnnotations": {"kubernetes.io/description": "NodePool for provisioning spot capacity"},
            "requirements": [_req("karpenter.k8s.aws/instance-family", "Exists", min_values=5)],
        },
        [
            *SPOT_C5,
            _req(CATEGORY, "In", ["c", "m", "r"]),
            _req("karpenter.k8s.aws/instance-family", "Exists", min_values=5),
            _req("karpenter.k8s.aws/instance-generation", "Gt", ["2"]),
        ],
        {"kubernetes.io/description": "NodePool for provisioning spot capacity"},
    ),
    "min-values-multiple-keys.yaml": (
        {
            "name": "spot",
            "capacityTypes": ["spot"],
            "architectures": ["amd64"],
            "objectAnnotations": {"kubernetes.io/description": "NodePool for provisioning spot capacity"},
            "requirements": [
                _req(CATEGORY, "In", ["c", "m", "r"], 2),
                _req("karpenter.k8s.aws/instance-family", "Exists", min_values=5),
                _req("node.kubernetes.io/instance-type", "Exists", min_values=2),
            ],
        },
        [
            *SPOT_C5,
            _req(CATEGORY, "In", ["c", "m", "r"], 2),
            _req("karpenter.k8s.aws/instance-family", "Exists", min_values=5),
            _req("node.kubernetes.io/instance-type", "Exists", min_values=2),
            _req("karpenter.k8s.aws/instance-generation", "Gt", ["2"]),
        ],
        {"kubernetes.io/description": "NodePool for provisioning spot capacity"},
    ),
    # upstream writes no kubernetes.io/os: the app always writes the class's (linux here), the one difference
    "large-instances.yaml": (
        {
            "name": "large-instances",
            **NO_SHORTCUTS,
            "objectAnnotations": {
                "kubernetes.io/description": "NodePool for provisioning larger instances using Gt/Lt requirements"
            },
            "requirements": [
                _req("karpenter.k8s.aws/instance-cpu", "Gt", ["3"]),
                _req("karpenter.k8s.aws/instance-memory", "Gt", ["8191"]),
            ],
        },
        [
            _req("karpenter.k8s.aws/instance-cpu", "Gt", ["3"]),
            _req("karpenter.k8s.aws/instance-memory", "Gt", ["8191"]),
            _req("kubernetes.io/os", "In", ["linux"]),
        ],
        {"kubernetes.io/description": "NodePool for provisioning larger instances using Gt/Lt requirements"},
    ),
    "100-cpu-limit.yaml": (
        {
            "name": "limitcpu100",
            "capacityTypes": ["on-demand"],
            "architectures": ["amd64"],
            "limits": {"cpu": 100},
            "objectAnnotations": {
                "kubernetes.io/description": "NodePool to restrict the number of cpus provisioned to 100"
            },
        },
        ON_DEMAND_CMR,
        {"kubernetes.io/description": "NodePool to restrict the number of cpus provisioned to 100"},
    ),
    "general-purpose.yaml": (
        {
            "name": "general-purpose",
            "capacityTypes": ["on-demand"],
            "architectures": ["amd64"],
            "limits": {},
            "objectAnnotations": {"kubernetes.io/description": "General purpose NodePool for generic workloads"},
        },
        ON_DEMAND_CMR,
        {"kubernetes.io/description": "General purpose NodePool for generic workloads"},
    ),
}


def _by_key(requirements: list[dict]) -> list[dict]:
    return sorted(requirements, key=lambda r: (r["key"], r["operator"]))


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_upstreams_example_pools_can_be_written_through_the_settings(name):
    pool, requirements, annotations = UPSTREAM[name]
    config = load_config({"nodePools": [pool]}, today=TODAY)
    (obj,) = [o for o in config_objects(config) if o["kind"] == "NodePool"]
    assert _by_key(obj["spec"]["template"]["spec"]["requirements"]) == _by_key(requirements)
    assert obj["metadata"] == {"name": pool["name"], "annotations": annotations}
    assert object_violations(obj, config.karpenter_version, config.kubernetes_version) == []
    assert evaluate(obj, config.karpenter_version).violations == []


def test_100_cpu_limit_and_general_purpose_limits_come_out_as_upstreams():
    limited = NodePoolSpec.model_validate(UPSTREAM["100-cpu-limit.yaml"][0]).manifest()
    general = NodePoolSpec.model_validate(UPSTREAM["general-purpose.yaml"][0]).manifest()
    assert limited["spec"]["limits"] == {"cpu": "100"}
    assert "limits" not in general["spec"]


def test_a_requirement_on_a_shortcuts_key_takes_its_place():
    pool = NodePoolSpec(requirements=[{"key": CATEGORY, "operator": "In", "values": ["c", "m", "r"], "minValues": 2}])
    assert pool.instance_categories is None
    assert pool.manifest()["spec"]["template"]["spec"]["requirements"] == [
        _req("karpenter.sh/capacity-type", "In", ["spot", "on-demand"]),
        _req("kubernetes.io/arch", "In", ["amd64", "arm64"]),
        _req("kubernetes.io/os", "In", ["linux"]),
        _req("karpenter.k8s.aws/instance-generation", "Gt", ["2"]),
        _req(CATEGORY, "In", ["c", "m", "r"], 2),
    ]
    generation = NodePoolSpec(
        requirements=[
            {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gte", "values": ["6"]},
            {"key": "karpenter.k8s.aws/instance-generation", "operator": "Lt", "values": ["9"]},
        ]
    )
    assert [
        r for r in generation.manifest()["spec"]["template"]["spec"]["requirements"] if "generation" in r["key"]
    ] == [
        _req("karpenter.k8s.aws/instance-generation", "Gte", ["6"]),
        _req("karpenter.k8s.aws/instance-generation", "Lt", ["9"]),
    ]
    # null with a requirement on its key says the same twice: allowed
    assert NodePoolSpec(capacity_types=None, requirements=[_req("karpenter.sh/capacity-type", "NotIn", ["spot"])])


def test_a_shortcut_given_with_a_requirement_on_its_key_is_refused_naming_both():
    with pytest.raises(ValidationError) as info:
        NodePoolSpec(
            min_instance_generation=4, requirements=[_req("karpenter.k8s.aws/instance-generation", "Gt", ["5"])]
        )
    assert (
        "requirement 'karpenter.k8s.aws/instance-generation' takes the place of minInstanceGeneration (4); set one of "
        "them: the requirement (e.g. for minValues) and leave minInstanceGeneration out, or minInstanceGeneration alone"
    ) in str(info.value)


def test_null_shortcuts_write_only_the_os_of_the_class():
    config = load_config(
        {
            "nodeClasses": [{"name": "default"}, {"name": "win", "amiAlias": "windows2022@latest"}],
            "nodePools": [{"name": "default", **NO_SHORTCUTS}, {"name": "win", "nodeClass": "win", **NO_SHORTCUTS}],
        },
        today=TODAY,
    )
    pools = {o["metadata"]["name"]: o for o in config_objects(config) if o["kind"] == "NodePool"}
    assert pools["default"]["spec"]["template"]["spec"]["requirements"] == [_req("kubernetes.io/os", "In", ["linux"])]
    assert pools["win"]["spec"]["template"]["spec"]["requirements"] == [_req("kubernetes.io/os", "In", ["windows"])]
    for obj in pools.values():
        assert evaluate(obj, config.karpenter_version).violations == []


def test_the_rules_across_objects_read_the_requirement_that_took_a_shortcuts_place():
    from constructs_lib.karpenter.specs.node_class import NodeClassSpec

    classes = [NodeClassSpec(), NodeClassSpec(name="win", ami_alias="windows2022@latest")]
    reserved = NodePoolSpec(name="r", requirements=[_req("karpenter.sh/capacity-type", "In", ["reserved"])])
    arm = NodePoolSpec(name="w", node_class="win", requirements=[_req("kubernetes.io/arch", "In", ["arm64"])])
    anything = NodePoolSpec(name="a", node_class="win", capacity_types=None, architectures=None)
    assert pool_problems(classes, [reserved, arm, anything], {}) == [
        "nodePools 'r' allows the reserved capacity type, but its nodeClass 'default' has no "
        "capacityReservationSelectorTerms: it would launch nothing reserved",
        "nodePools 'w' uses the Windows nodeClass 'win' but allows only arm64: EKS's Windows AMIs are amd64 only, so "
        "it would launch nothing",
    ]
    assert reserved.listed("karpenter.sh/capacity-type") == ["reserved"]
    assert anything.listed("karpenter.sh/capacity-type") is None


def test_labels_and_annotations_reach_the_objects_and_the_pools_nodes():
    config = load_config(
        {
            "controller": {"featureGates": {"nodeOverlay": True}},
            "nodePools": [
                {
                    "objectLabels": {"app.kubernetes.io/part-of": "platform", "example.com/team": "data"},
                    "objectAnnotations": {"kubernetes.io/description": "general", "Example.com/Owner": "Data Team"},
                    "labels": {"team": "data"},
                    "annotations": {"karpenter.sh/do-not-disrupt": "true", "example.com/owner": "data"},
                }
            ],
            "nodeOverlays": [
                {
                    "name": "o",
                    "priceAdjustment": "-10%",
                    "objectLabels": {"example.com/team": "data"},
                    "objectAnnotations": {"kubernetes.io/description": "Graviton discount"},
                }
            ],
        },
        today=TODAY,
    )
    objects = {o["kind"]: o for o in config_objects(config)}
    pool, overlay = objects["NodePool"], objects["NodeOverlay"]
    assert pool["metadata"] == {
        "name": "default",
        "labels": {"app.kubernetes.io/part-of": "platform", "example.com/team": "data"},
        "annotations": {"kubernetes.io/description": "general", "Example.com/Owner": "Data Team"},
    }
    assert pool["spec"]["template"]["metadata"] == {
        "labels": {"team": "data"},
        "annotations": {"karpenter.sh/do-not-disrupt": "true", "example.com/owner": "data"},
    }
    assert overlay["metadata"] == {
        "name": "o",
        "labels": {"example.com/team": "data"},
        "annotations": {"kubernetes.io/description": "Graviton discount"},
    }
    for obj in (pool, overlay):
        assert object_violations(obj, config.karpenter_version, config.kubernetes_version) == []
        assert evaluate(obj, config.karpenter_version).violations == []


def test_object_metadata_rules_hold_for_the_construct_too():
    with pytest.raises(ValidationError, match="the domain karpenter.k8s.aws is Karpenter's own"):
        NodeOverlaySpec(name="o", price="1", object_annotations={"karpenter.k8s.aws/note": "x"})
    with pytest.raises(ConfigError, match=r"nodePools\[0\].objectLabels: label value"):
        load_config({"nodePools": [{"objectLabels": {"team": "a b"}}]}, today=TODAY)
