"""aws-cdk's real cluster-resource handler (tooling/review/simulator/handlers: aws-cdk-lib 2.275.0's bundled index.js on
Node.js, EKS faked) as the oracle of karpenter_stack/cluster_updates.py's mirror: the two agree on generated pairs of
cluster ``Config`` properties, forward and rolled back, and the handler's concrete EKS calls for the cases the
project's guard and review rely on."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from karpenter_stack import cluster_updates as cu
from tooling.review.simulator import handlers

PAIRS = 300
ALL_LOGS = ["api", "audit", "authenticator", "controllerManager", "scheduler"]


def _logging(types: list[str]) -> dict[str, Any]:
    return {"clusterLogging": [{"enabled": True, "types": types}]}  # (CDK's template order)


BASE: dict[str, Any] = {
    "name": "eks-karpenter",
    "version": "1.35",
    "roleArn": {"Fn::GetAtt": ["ClusterRoleFA261979", "Arn"]},
    "encryptionConfig": [
        {"provider": {"keyArn": {"Fn::GetAtt": ["SecretsKey317DCF94", "Arn"]}}, "resources": ["secrets"]}
    ],
    "kubernetesNetworkConfig": {"ipFamily": "ipv4"},
    "resourcesVpcConfig": {
        "subnetIds": [{"Ref": "PrivateSubnet1"}, {"Ref": "PrivateSubnet2"}],
        "securityGroupIds": [{"Fn::GetAtt": ["ClusterControlPlaneSecurityGroup", "GroupId"]}],
        "endpointPublicAccess": False,
        "endpointPrivateAccess": True,
    },
    "logging": _logging(ALL_LOGS),
    "accessConfig": {},
}

# Each dimension: (Config path, values; _ABSENT leaves the key out).
_ABSENT = object()
DIMENSIONS: list[tuple[tuple[str, ...], list[Any]]] = [
    (("name",), ["eks-karpenter", "eks-karpenter", "eks-other", _ABSENT]),
    (("roleArn",), [{"Fn::GetAtt": ["ClusterRoleFA261979", "Arn"]}, {"Fn::GetAtt": ["OtherRole", "Arn"]}]),
    (("version",), ["1.34", "1.35", "1.36", "1.35", _ABSENT]),
    (("deletionProtection",), [True, False, _ABSENT]),
    (("tags",), [_ABSENT, {"team": "a"}, {"team": "b", "env": "x"}, {"env": "x", "team": "b"}]),
    (("logging",), [_logging(ALL_LOGS), _logging(["api", "audit"]), _ABSENT]),
    (
        ("resourcesVpcConfig", "subnetIds"),
        [
            [{"Ref": "PrivateSubnet1"}, {"Ref": "PrivateSubnet2"}],
            [{"Ref": "PrivateSubnet2"}, {"Ref": "PrivateSubnet1"}],
            [{"Ref": "PrivateSubnet1"}, {"Ref": "PrivateSubnet2"}, {"Ref": "PrivateSubnet3"}],
        ],
    ),
    (
        ("resourcesVpcConfig", "securityGroupIds"),
        [[{"Fn::GetAtt": ["ClusterControlPlaneSecurityGroup", "GroupId"]}], ["sg-0123456789abcdef0"]],
    ),
    (("resourcesVpcConfig", "endpointPublicAccess"), [False, True]),
    (("resourcesVpcConfig", "endpointPrivateAccess"), [True, True, False]),
    (
        ("resourcesVpcConfig", "publicAccessCidrs"),
        [_ABSENT, ["203.0.113.0/24"], ["198.51.100.0/24", "203.0.113.0/24"], ["203.0.113.0/24", "198.51.100.0/24"]],
    ),
    (("accessConfig", "authenticationMode"), [_ABSENT, "CONFIG_MAP", "API_AND_CONFIG_MAP", "API"]),
    (("accessConfig", "bootstrapClusterCreatorAdminPermissions"), [_ABSENT, _ABSENT, True, False]),
    (("bootstrapSelfManagedAddons",), [_ABSENT, _ABSENT, False, True]),
    (
        ("encryptionConfig",),
        [
            BASE["encryptionConfig"],
            BASE["encryptionConfig"],
            [{"provider": {"keyArn": {"Fn::GetAtt": ["OtherKey", "Arn"]}}, "resources": ["secrets"]}],
        ],
    ),
    (("controlPlaneScalingConfig",), [_ABSENT, _ABSENT, {"tier": "standard"}, {"tier": "tier-xl"}]),
]


def _set(config: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        config = config.setdefault(key, {})
    if value is _ABSENT:
        config.pop(path[-1], None)
    else:
        config[path[-1]] = copy.deepcopy(value)


def _get(config: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(config, dict) or key not in config:
            return _ABSENT
        config = config[key]
    return config


def _pairs(count: int, seed: int = 32) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``count`` (old, new) pairs: old a random point of DIMENSIONS, new the same with 1-3 dimensions moved."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        old = copy.deepcopy(BASE)
        for path, values in DIMENSIONS:
            if rng.random() < 0.3:
                _set(old, path, rng.choice(values))
        new = copy.deepcopy(old)
        for path, values in rng.sample(DIMENSIONS, rng.choice((1, 1, 2, 3))):
            current = _get(old, path)
            _set(new, path, rng.choice([v for v in values if v != current] or values))
        pairs.append((old, new))
    return pairs


def _mirror(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[str] | None, str | None]:
    """The mirror's verdict on the pair as CloudFormation delivers it: (kinds or ["replace"], None) or the error."""
    try:
        return cu.update(cu.delivered(old), cu.delivered(new)), None
    except cu.UpdateRefused as err:
        return None, str(err)


def _real(outcome: handlers.HandlerOutcome) -> tuple[list[str] | None, str | None]:
    if outcome.error is not None:
        return None, outcome.error
    if "CreateCluster" in outcome.operations:
        return [cu.REPLACE], None
    return outcome.kinds, None


@pytest.fixture(scope="module")
def oracle() -> handlers.ClusterHandler:
    return handlers.handler()


def test_the_mirror_gives_the_real_handlers_verdict_on_generated_pairs_forward_and_rolled_back(oracle: Any) -> None:
    disagreements = []
    for old, new in _pairs(PAIRS):
        for a, b in ((old, new), (new, old)):  # the deploy, and CloudFormation's rollback (old and new swapped)
            real = handlers.cluster_update(a, b)
            mirrored = _mirror(a, b)
            if _real(real) != mirrored:
                disagreements.append((a, b, _real(real), mirrored))
            elif real.analysis is not None and real.error is None:
                assert cu.analyze(cu.delivered(a), cu.delivered(b)) == real.analysis
    assert disagreements == []


def test_the_generated_pairs_cover_every_verdict() -> None:
    verdicts = {
        (tuple(k or ()) == (cu.REPLACE,), e.split(" ")[0] if e else None)
        for k, e in map(lambda p: _mirror(*p), _pairs(PAIRS))
    }
    assert {(False, None), (True, None), (False, "Only"), (False, "Cannot")} <= verdicts


def _with(**changes: Any) -> dict[str, Any]:
    config = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        _set(config, tuple(dotted.split("__")), value)
    return config


def test_public_access_cidrs_with_a_version_bump_is_refused_forward_and_on_the_rollback(oracle: Any) -> None:
    old = _with(resourcesVpcConfig__endpointPublicAccess=True, resourcesVpcConfig__publicAccessCidrs=["203.0.113.0/24"])
    new = _with(
        version="1.36",
        resourcesVpcConfig__endpointPublicAccess=True,
        resourcesVpcConfig__publicAccessCidrs=["198.51.100.0/24"],
    )
    forward, back = handlers.cluster_update(old, new), handlers.cluster_update(new, old)
    expected = (
        "Only one type of update - replaceName, updateVpc, updateAccess, replaceRole, updateVersion, updateEncryption, "
        "updateLogging, updateAuthMode, updateBootstrapClusterCreatorAdminPermissions, "
        "updateBootstrapSelfManagedAddons, updateDeletionProtection, updateControlPlaneScalingConfig can be allowed"
    )
    assert (forward.error, forward.calls, forward.kinds) == (expected, [], ["updateAccess", "updateVersion"])
    assert (back.error, back.calls) == (expected, [])
    assert cu.ONE_KIND == expected


def test_a_subnet_change_with_a_version_bump_is_refused(oracle: Any) -> None:
    new = _with(version="1.36", resourcesVpcConfig__subnetIds=[{"Ref": "PrivateSubnet1"}, {"Ref": "PrivateSubnet3"}])
    outcome = handlers.cluster_update(BASE, new)
    assert (outcome.error, outcome.kinds) == (cu.ONE_KIND, ["updateVpc", "updateVersion"])


def test_deletion_protection_true_to_unset_sends_an_empty_update(oracle: Any) -> None:
    outcome = handlers.cluster_update(_with(deletionProtection=True), BASE)
    assert outcome.error is None
    assert outcome.calls == [("UpdateClusterConfig", {"name": "eks-karpenter"})]  # (no deletionProtection member)
    off = handlers.cluster_update(_with(deletionProtection=True), _with(deletionProtection=False))
    assert off.calls == [("UpdateClusterConfig", {"name": "eks-karpenter", "deletionProtection": False})]


def test_a_version_upgrade_and_its_rollback_call_update_cluster_version(oracle: Any) -> None:
    new = _with(version="1.36")
    forward = handlers.cluster_update(BASE, new)
    assert forward.calls == [
        ("DescribeCluster", {"name": "eks-karpenter"}),
        ("UpdateClusterVersion", {"name": "eks-karpenter", "version": "1.36"}),
    ]
    # The rollback after the upgrade went through: the handler asks EKS for 1.35, a control-plane downgrade.
    back = handlers.cluster_update(new, BASE, deployed_version="1.36")
    assert back.calls == forward.calls[:1] + [("UpdateClusterVersion", {"name": "eks-karpenter", "version": "1.35"})]
    # The rollback of an upgrade that never started: the cluster already runs 1.35, nothing is sent.
    assert handlers.cluster_update(new, BASE, deployed_version="1.35").operations == ["DescribeCluster"]


def test_logging_in_the_template_order_would_refuse_every_update(oracle: Any) -> None:
    """The assumption of cluster_updates.delivered, shown: with CDK's {enabled, types} order delivered as is, the
    handler's rebuilt {types, enabled} differs as text, and a version upgrade alone is two kinds of update."""
    new = _with(version="1.36")
    as_written = handlers.handler().invoke(
        "onEvent",
        {
            "RequestType": "Update",
            "RequestId": "r",
            "LogicalResourceId": "Cluster",
            "PhysicalResourceId": "eks-karpenter",
            "ResourceType": handlers.CLUSTER,
            "ResourceProperties": {
                "AssumeRoleArn": handlers.ROLE,
                "Config": {"name": "eks-karpenter", **{k: new[k] for k in ("version", "logging")}},
            },
            "OldResourceProperties": {
                "AssumeRoleArn": handlers.ROLE,
                "Config": {"name": "eks-karpenter", **{k: BASE[k] for k in ("version", "logging")}},
            },
        },
        {"cluster": {"name": "eks-karpenter", "version": "1.35"}},
    )
    assert (as_written.error, as_written.kinds) == (cu.ONE_KIND, ["updateVersion", "updateLogging"])
    assert handlers.cluster_update(BASE, new).error is None  # (CloudFormation's order: types first)
    assert list(cu.delivered(BASE)["logging"]["clusterLogging"][0]) == ["types", "enabled"]


def test_create_delete_and_fargate_profiles_make_the_expected_calls(oracle: Any) -> None:
    created = handlers.cluster_create(_with(deletionProtection=True))
    assert created.operations == ["CreateCluster"] and created.result == {"PhysicalResourceId": "eks-karpenter"}
    assert created.call("CreateCluster")["deletionProtection"] is True  # type: ignore[index]
    assert created.call("CreateCluster")["roleArn"] == 'cfn:{"Fn::GetAtt":["ClusterRoleFA261979","Arn"]}'  # type: ignore[index]
    assert handlers.cluster_delete(BASE).calls == [("DeleteCluster", {"name": "eks-karpenter"})]
    profile = {"clusterName": "eks-karpenter", "podExecutionRoleArn": "arn:role", "selectors": [{"namespace": "k"}]}
    assert handlers.fargate_profile_create(profile).operations == ["CreateFargateProfile"]
    replaced = handlers.fargate_profile_update(profile, profile | {"selectors": []}, physical_id="p1")
    assert replaced.operations == ["CreateFargateProfile"] and replaced.result["PhysicalResourceId"] != "p1"
    assert handlers.fargate_profile_delete(profile, physical_id="p1").calls == [
        ("DeleteFargateProfile", {"clusterName": "eks-karpenter", "fargateProfileName": "p1"})
    ]
