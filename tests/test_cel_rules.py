"""The CRDs' CEL rules are part of the contract: mirrored exactly from upstream, evaluated with a real
CEL implementation on every NodePool and EC2NodeClass the app applies, defaults applied first."""

from __future__ import annotations

import copy
import re

import pytest

from constructs_lib.karpenter.names import (
    KARPENTER_AWS_WELL_KNOWN_LABELS,
    KARPENTER_SH_LABELS_ALLOWED,
    NODE_OVERLAY_AWS_LABELS,
    RESTRICTED_TAG_KEYS,
)
from karpenter_stack import versions
from tests.cfn import applied_objects, each
from tests.conftest import EXAMPLE_FIXTURES
from tooling.cel_rules import KINDS, evaluate, mirror, with_defaults

VERSION = "1.14.1"
# Configurations whose applied Karpenter objects are evaluated (every node class and pool shape the
# suite synthesizes: defaults, two pools over two classes, the production system pool, by-id selectors,
# and every example: GPU, Windows, capacity reservations, baseline + burst).
CONFIGURATIONS = ["default", "alternative", "production", "existing", "karpenter_1_13", *EXAMPLE_FIXTURES]


def _karpenter_objects(synthesized) -> list[dict]:
    return [
        {k: v for k, v in o.items() if k != "_logicalId"}
        for o in applied_objects(synthesized).values()
        if o["kind"] in KINDS
    ]


def test_every_karpenter_version_with_a_template_has_its_rules_mirrored():
    for version in each(versions.available_karpenter_versions()):
        assert mirror(version)["x-upstream"]["tag"] == f"v{version}"
    kinds = mirror(VERSION)["kinds"]
    counts = {
        k: (len(v["rules"]), sum(r["transition"] for r in v["rules"]), len(v["defaults"])) for k, v in kinds.items()
    }
    assert counts == {
        "CapacityBuffer autoscaling.x-k8s.io/v1beta1": (2, 0, 1),
        "EC2NodeClass karpenter.k8s.aws/v1": (54, 0, 5),
        "NodeClaim karpenter.sh/v1": (10, 1, 1),
        "NodeOverlay karpenter.sh/v1alpha1": (8, 0, 0),
        "NodePool karpenter.sh/v1": (20, 3, 5),
    }
    transitions = [r["rule"] for r in kinds["NodePool karpenter.sh/v1"]["rules"] if r["transition"]]
    assert transitions == [
        "has(self.replicas) == has(oldSelf.replicas)",
        "self.group == oldSelf.group",
        "self.kind == oldSelf.kind",
    ]


@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_every_applied_object_passes_every_cel_rule(configuration, request):
    synthesized = request.getfixturevalue(configuration)  # against the rules of its own release
    objects, version = _karpenter_objects(synthesized), synthesized.config.karpenter_version
    outcomes = {f"{o['kind']}/{o['metadata']['name']}": evaluate(o, version) for o in each(objects)}
    assert {k: o.violations for k, o in outcomes.items()} == {k: [] for k in outcomes}
    # every object had rules evaluated; a NodePool's three transition rules are listed and skipped
    for key, outcome in outcomes.items():
        assert outcome.evaluated >= (5 if key.startswith("NodeOverlay/") else 20), key
        assert len(outcome.skipped) == (3 if key.startswith("NodePool/") else 0), key


def test_defaults_are_applied_first_as_the_api_server_does(default):
    (pool,) = [o for o in _karpenter_objects(default) if o["kind"] == "NodePool"]
    bare = copy.deepcopy(pool)
    del bare["spec"]["disruption"], bare["spec"]["template"]["spec"]["expireAfter"]
    defaults = mirror(VERSION)["kinds"][KINDS["NodePool"]]["defaults"]
    filled = with_defaults(bare, defaults)
    assert filled["spec"]["disruption"] == {
        "consolidateAfter": "0s",
        "budgets": [{"nodes": "10%"}],
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
    }
    assert filled["spec"]["template"]["spec"]["expireAfter"] == "720h"
    assert evaluate(bare, VERSION).violations == []


def _violations(obj: dict, change) -> list[str]:
    changed = copy.deepcopy(obj)
    change(changed["spec"])
    return evaluate(changed, VERSION).violations


def test_the_evaluator_refuses_what_the_api_server_would(default):
    objects = {o["kind"]: o for o in _karpenter_objects(default)}
    pool, node_class = objects["NodePool"], objects["EC2NodeClass"]

    def requirement(**fields):
        return lambda spec: spec["template"]["spec"]["requirements"].append(fields)

    assert _violations(pool, requirement(key="team.karpenter.sh/x", operator="Exists")) == [
        'NodePool/default: spec.template.spec.requirements[5].key: label domain "karpenter.sh" is restricted '
        '(rule: self in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || '
        '!self.find("^([^/]+)").endsWith("karpenter.sh"))'
    ]
    aws_domain = _violations(pool, requirement(key="karpenter.k8s.aws/family", operator="Exists"))
    assert [v.split(" (rule:")[0] for v in aws_domain] == [
        'NodePool/default: spec.template.spec.requirements[5].key: label domain "karpenter.k8s.aws" is restricted'
    ]
    minimum = _violations(
        pool, requirement(key="karpenter.k8s.aws/instance-family", operator="In", values=["m7g"], minValues=2)
    )
    assert minimum == [
        "NodePool/default: spec.template.spec.requirements: requirements with 'minValues' must have at "
        "least that many values specified in the 'values' field (rule: self.all(x, (x.operator == 'In' "
        "&& has(x.minValues)) ? x.values.size() >= x.minValues : true))"
    ]
    windows = _violations(node_class, lambda spec: spec.update(amiSelectorTerms=[{"alias": "windows2022@v20260101"}]))
    assert [v.split(" (rule:")[0] for v in windows] == [
        "EC2NodeClass/default: spec.amiSelectorTerms[0].alias: windows families may only specify version 'latest'"
    ]
    tags = _violations(node_class, lambda spec: spec.update(tags={"kubernetes.io/cluster/x": "owned"}))
    assert [v.split(" (rule:")[0] for v in tags] == [
        "EC2NodeClass/default: spec.tags: tag contains a restricted tag matching kubernetes.io/cluster/"
    ]


def test_kubernetes_library_functions_have_kubernetes_semantics():
    from tooling.cel_rules import _program

    assert _program("'al2023@v20260801'.split('@')[1]").evaluate({}) == "v20260801"
    assert _program("'topology.kubernetes.io/zone'.find('^([^/]+)')").evaluate({}) == "topology.kubernetes.io"
    assert _program("'abc'.find('[0-9]+')").evaluate({}) == ""


def test_the_model_mirrors_the_rules_users_can_trip():
    """The node specs' label and tag checks use the same lists as the CRD rules (constructs_lib/karpenter/names.py)."""
    rules = {
        r.get("message"): r["rule"]
        for r in mirror(VERSION)["kinds"][KINDS["NodePool"]]["rules"]
        if r["path"] == "spec.template.spec.requirements[].key"
    }

    def listed(rule: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(re.findall(r'"([^"]+)"', re.search(r"in \[([^\]]*)\]", rule).group(1))))

    assert listed(rules['label domain "karpenter.sh" is restricted']) == KARPENTER_SH_LABELS_ALLOWED
    assert listed(rules['label domain "karpenter.k8s.aws" is restricted']) == KARPENTER_AWS_WELL_KNOWN_LABELS
    overlay_rules = {
        r.get("message"): r["rule"]
        for r in mirror(VERSION)["kinds"][KINDS["NodeOverlay"]]["rules"]
        if r["path"] == "spec.requirements[].key"
    }
    assert listed(overlay_rules['label domain "karpenter.k8s.aws" is restricted']) == NODE_OVERLAY_AWS_LABELS
    assert len(NODE_OVERLAY_AWS_LABELS) == 22 and len(KARPENTER_AWS_WELL_KNOWN_LABELS) == 28
    tag_rules = [
        r["rule"] for r in mirror(VERSION)["kinds"][KINDS["EC2NodeClass"]]["rules"] if r["path"] == "spec.tags"
    ]
    named = sorted(m for r in tag_rules for m in re.findall(r"k ?!= ?'([^']+)'", r))
    assert named == sorted(RESTRICTED_TAG_KEYS)


# Every CEL rule a user can trip through a setting, with a setting that trips it: the object built past
# the model (model_construct: no validation) is refused by the rule, and the model refuses the setting
# first, with the app's message.
R = {"key": "example.com/team", "operator": "In", "values": ["a"]}
PREEMPTED = [
    ("pool", {"labels": {"team.karpenter.sh/x": "a"}}, 'label domain "karpenter.sh" is restricted'),
    ("pool", {"labels": {"karpenter.k8s.aws/colour": "a"}}, 'label domain "karpenter.k8s.aws" is restricted'),
    ("pool", {"labels": {"karpenter.sh/nodepool": "a"}}, 'label "karpenter.sh/nodepool" is restricted'),
    ("pool", {"labels": {"kubernetes.io/hostname": "a"}}, 'label "kubernetes.io/hostname" is restricted'),
    ("pool", {"requirements": [{**R, "values": []}]}, "requirements with operator 'In' must have a value defined"),
    (
        "pool",
        {"requirements": [{**R, "operator": "Gt", "values": ["-1"]}]},
        "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",
    ),
    (
        "pool",
        {"requirements": [{**R, "minValues": 2}]},
        "requirements with 'minValues' must have at least that many values specified in the 'values' field",
    ),
    ("pool", {"requirements": [{**R, "key": "x.karpenter.sh/y"}]}, 'label domain "karpenter.sh" is restricted'),
    ("pool", {"requirements": [{**R, "key": "karpenter.sh/nodepool"}]}, 'label "karpenter.sh/nodepool" is restricted'),
    ("pool", {"budgets": [{"nodes": "0", "schedule": "@daily"}]}, "'schedule' must be set with 'duration'"),
    ("class", {"amiAlias": "windows2022@v20260101"}, "windows families may only specify version 'latest'"),
    *(
        ("class", {"tags": {key: "a"}}, f"tag contains a restricted tag matching {match}")
        for key, match in (
            ("eks:eks-cluster-name", "eks:eks-cluster-name"),
            ("kubernetes.io/cluster/x", "kubernetes.io/cluster/"),
            ("karpenter.sh/nodepool", "karpenter.sh/nodepool"),
            ("karpenter.sh/nodeclaim", "karpenter.sh/nodeclaim"),
            ("karpenter.k8s.aws/ec2nodeclass", "karpenter.k8s.aws/ec2nodeclass"),
        )
    ),
    ("class", {"tags": {"": "a"}}, "empty tag keys aren't supported"),
    (
        "class",
        {"kubelet": {"imageGCHighThresholdPercent": 80, "imageGCLowThresholdPercent": 85}},
        "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
    ),
    (
        "class",
        {"kubelet": {"evictionSoft": {"memory.available": "500Mi"}}},
        "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
    ),
    (
        "class",
        {"kubelet": {"evictionSoftGracePeriod": {"memory.available": "1m"}}},
        "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",
    ),
    (
        "class",
        {"kubelet": {"kubeReserved": {"cpu": "-1"}}},
        "kubeReserved value cannot be a negative resource quantity",
    ),
    (
        "class",
        {"kubelet": {"systemReserved": {"memory": "-1Gi"}}},
        "systemReserved value cannot be a negative resource quantity",
    ),
    (
        "class",
        {"kubelet": {"kubeReserved": {"gpu": "1"}}},
        "valid keys for kubeReserved are ['cpu','memory','ephemeral-storage','pid']",
    ),
    (
        "class",
        {"kubelet": {"evictionHard": {"memory.free": "1%"}}},
        "valid keys for evictionHard are ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available',"
        "'imagefs.inodesFree','pid.available']",
    ),
    (
        "class",
        {"capacityReservationSelectorTerms": [{"id": "cr-0123456789abcdef0", "tags": {"a": "b"}}]},
        "'id' is mutually exclusive, cannot be set along with other fields in a capacity reservation selector term",
    ),
    (
        "class",
        {"capacityReservationSelectorTerms": [{"ownerID": "111122223333"}]},
        "expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']",
    ),
    ("class", {"capacityReservationSelectorTerms": [{"tags": {"a": ""}}]}, "empty tag keys or values aren't supported"),
    ("class", {"extraSecurityGroupSelectorTerms": [{}]}, "expected at least one, got none, ['tags', 'id', 'name']"),
    ("overlay", {"price": "1", "priceAdjustment": "+1"}, "cannot set both 'price' and 'priceAdjustment'"),
    ("overlay", {"capacity": {"memory": "1Gi"}}, "invalid resource restricted"),
    (
        "overlay",
        {"price": "1", "requirements": [{**R, "key": "karpenter.k8s.aws/placement-group-id"}]},
        'label domain "karpenter.k8s.aws" is restricted',
    ),
    (
        "overlay",
        {"price": "1", "requirements": [{**R, "key": "x.karpenter.sh/y"}]},
        'label domain "karpenter.sh" is restricted',
    ),
    (
        "overlay",
        {"price": "1", "requirements": [{**R, "key": "kubernetes.io/hostname"}]},
        'label "kubernetes.io/hostname" is restricted',
    ),
    (
        "overlay",
        {"price": "1", "requirements": [{**R, "operator": "NotIn", "values": []}]},
        "requirements with operator 'NotIn' must have a value defined",
    ),
    (
        "overlay",
        {"price": "1", "requirements": [{**R, "operator": "Lte", "values": ["1", "2"]}]},
        "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value",
    ),
]
TERMS = {
    "capacityReservationSelectorTerms": "CapacityReservationTermSpec",
    "extraSecurityGroupSelectorTerms": "SecurityGroupTermSpec",
    "extraSubnetSelectorTerms": "SubnetTermSpec",
}


def _unvalidated(kind: str, fields: dict) -> dict:
    from constructs_lib.karpenter.specs.kubelet import KubeletSpec
    from constructs_lib.karpenter.specs.node_class import NodeClassSpec
    from constructs_lib.karpenter.specs.node_pool import NodePoolSpec
    from constructs_lib.karpenter.specs.node_pool_parts import DisruptionBudgetSpec, RequirementSpec

    if kind == "overlay":  # as NodeOverlaySpec.manifest writes it
        return {
            "apiVersion": "karpenter.sh/v1alpha1",
            "kind": "NodeOverlay",
            "metadata": {"name": "o"},
            "spec": {"requirements": [], **copy.deepcopy(fields)},
        }
    if kind == "class":
        from constructs_lib.karpenter.specs import selector_terms

        fields = dict(fields)
        for key, model in TERMS.items():
            if key in fields:
                fields[key] = [getattr(selector_terms, model).model_construct(**term) for term in fields[key]]
        if "kubelet" in fields:
            names = {f.alias or n: n for n, f in KubeletSpec.model_fields.items()}
            fields["kubelet"] = KubeletSpec.model_construct(
                **{names.get(k, k): v for k, v in fields["kubelet"].items()}
            )
        return NodeClassSpec.model_construct(**fields).manifest(cluster_name="c", node_role_name="r")
    specs = {
        "requirements": [
            RequirementSpec.model_construct(**{**r, "min_values": r.pop("minValues", None)})
            for r in copy.deepcopy(fields.get("requirements", []))
        ],
        "budgets": [DisruptionBudgetSpec.model_construct(**b) for b in fields.get("budgets", [])] or None,
    }
    built = {k: v for k, v in {**fields, **specs}.items() if v is not None}
    return NodePoolSpec.model_construct(**built).manifest()


@pytest.mark.parametrize("kind,fields,rule_message", PREEMPTED)
def test_the_model_refuses_first_what_a_cel_rule_would(kind, fields, rule_message):
    from karpenter_stack.config import ConfigError, load_config
    from tests.conftest import TODAY

    violations = evaluate(_unvalidated(kind, fields), VERSION).violations
    assert any(f": {rule_message} (rule:" in v for v in violations), violations
    setting = {"pool": "nodePools", "class": "nodeClasses", "overlay": "nodeOverlays"}[kind]
    entry = {"name": "o", **fields} if kind == "overlay" else fields
    with pytest.raises(ConfigError) as info:
        load_config({setting: [entry], "controller": {"featureGates": {"nodeOverlay": True}}}, today=TODAY)
    assert str(info.value).startswith(f"{setting}[0]") and "(rule:" not in str(info.value)
