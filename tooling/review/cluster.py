"""EKS: what aws-cdk's cluster-resource handler does with a changed cluster (a new cluster, one kind of update
per deploy, the version and authentication-mode rules of karpenter_stack/cluster_updates.py, one-way changes),
the pods a deleted Fargate profile evicts, and the in-place updates of managed node groups and add-ons that
restart pods or replace nodes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from karpenter_stack.cluster_updates import (
    VERSION_ROLLBACK_DAYS,
    auth_mode_refusal,
    auth_mode_sequence,
    version_step_refusal,
)

from .kubernetes import own_image_classes

if TYPE_CHECKING:
    from karpenter_stack.config import AppConfig
from .model import CLUSTER, FARGATE, ONE_WAY_MARK, Change
from .values import _MISSING, _at, _differs

# The handlers' cluster update kinds: (Config path, kind).
_CLUSTER_REPLACE = (
    ("name",),
    ("roleArn",),
    ("accessConfig", "bootstrapClusterCreatorAdminPermissions"),
    ("bootstrapSelfManagedAddons",),
)
_CLUSTER_UPDATES = {
    "version": "updateVersion (a Kubernetes upgrade, ~10 min; add-ons follow)",
    "logging": "updateLogging",
    "resourcesVpcConfig.subnetIds": "updateVpc",
    "resourcesVpcConfig.securityGroupIds": "updateVpc",
    "resourcesVpcConfig.endpointPrivateAccess": "updateAccess",
    "resourcesVpcConfig.endpointPublicAccess": "updateAccess",
    "resourcesVpcConfig.publicAccessCidrs": "updateAccess",
    "accessConfig.authenticationMode": "updateAuthMode",
    "deletionProtection": "updateDeletionProtection",
    "controlPlaneScalingConfig": "updateControlPlaneScalingConfig",
}

# The cluster updates whose rollback aws-cdk's handler or EKS refuses (see stacks._one_way_alone).
ONE_WAY = ONE_WAY_MARK + "CloudFormation's rollback re-sends the old mode, which aws-cdk's handler refuses"
ONE_WAY_PROTECTION = (
    ONE_WAY_MARK + "CloudFormation's rollback sends no value: aws-cdk's handler makes an UpdateClusterConfig with "
    "nothing in it, which EKS refuses"
)
ONE_WAY_VERSION = (
    ONE_WAY_MARK + "CloudFormation's rollback re-sends the old version: aws-cdk's handler calls UpdateClusterVersion "
    "to the old minor unless the cluster already runs it, which may now START a real control-plane downgrade "
    f"(EKS's version rollback, within {VERSION_ROLLBACK_DAYS} days of the upgrade) with Karpenter's nodes possibly "
    "already on the newer kubelet"
)


def _auth_mode_change(old: str | None, new: str | None) -> tuple[str, str] | None:
    refused = auth_mode_refusal(old, new)
    if refused:
        return "fails", (
            f"authenticationMode {old or 'unset'} → {new or 'unset'}: aws-cdk's handler refuses ({refused}); "
            + auth_mode_sequence(old, new)
        )
    if old != new:
        return "updated", f"in place: updateAuthMode {old or 'unset'} → {new} ({ONE_WAY})"
    return None


def _cluster_change(
    old: dict[str, Any], new: dict[str, Any], replaced: set[str], vpc_replaced: bool
) -> tuple[str, str]:
    config_old, config_new = old.get("Config", {}), new.get("Config", {})
    replacing = [".".join(p) for p in _CLUSTER_REPLACE if _differs(_at(config_old, p), _at(config_new, p), replaced)]
    if replacing:
        return "replaced", f"Config.{', Config.'.join(replacing)} changes: aws-cdk's handler creates a new cluster"
    if _differs(config_old.get("encryptionConfig"), config_new.get("encryptionConfig"), replaced):
        return "fails", "Config.encryptionConfig changes: aws-cdk's handler refuses (Cannot update cluster encryption)"
    kinds = sorted(
        {
            kind
            for path, kind in _CLUSTER_UPDATES.items()
            if _differs(_at(config_old, path.split(".")), _at(config_new, path.split(".")), replaced)
        }
    )
    if (
        "updateVpc" in kinds
        and not vpc_replaced
        and _differs(
            _at(config_old, ("resourcesVpcConfig", "subnetIds")),
            _at(config_new, ("resourcesVpcConfig", "subnetIds")),
            replaced,
        )
    ):
        return "fails", (
            "its subnets change (maxAzs): EKS keeps a cluster's subnets in the availability zones chosen when it was "
            "created (EKS User Guide, network requirements), so the deploy fails"
        )
    if "updateVpc" in kinds and vpc_replaced:
        return "fails", (
            "its subnets and security group move to a replaced VPC: aws-cdk's handler updates subnets in place "
            "(updateVpc), and EKS keeps a cluster in the VPC it was created in; a new VPC needs a new cluster"
        )
    version = version_step_refusal(config_old.get("version"), config_new.get("version"))
    if version:
        return "fails", version
    if len(kinds) > 1:
        return "fails", f"{', '.join(kinds)} in one deploy: aws-cdk's handler allows one kind of update per deploy"
    modes = [_at(c, ("accessConfig", "authenticationMode")) for c in (config_old, config_new)]
    auth = _auth_mode_change(*(None if m is _MISSING else m for m in modes))
    if auth:
        return auth
    if kinds == ["updateDeletionProtection"] and config_new.get("deletionProtection") is None:
        # aws-cdk 2.275's handler sends the new value: an absent one is an UpdateClusterConfig with nothing in it
        return "fails", (
            f"deletionProtection {json.dumps(config_old.get('deletionProtection'))} → unset: aws-cdk's handler "
            "sends an UpdateClusterConfig with no setting in it, an empty update EKS refuses (write false to turn "
            "it off)"
        )
    if kinds == ["updateDeletionProtection"] and config_old.get("deletionProtection") is None:
        # the simulator found it: CloudFormation's rollback is the Update back to no value, the empty update above
        return "updated", f"in place: {kinds[0]} ({ONE_WAY_PROTECTION})"
    if kinds and kinds[0].startswith("updateVersion") and config_old.get("version") != config_new.get("version"):
        return "updated", f"in place: {kinds[0]} ({ONE_WAY_VERSION})"
    if kinds:
        return "updated", f"in place: {kinds[0]}"
    return "updated", "in place: " + ", ".join(
        sorted(k for k in old.keys() | new.keys() if _differs(old.get(k), new.get(k), replaced))
    )


def _shown(value: Any) -> str:
    return "unset" if value is _MISSING or value is None else json.dumps(value, sort_keys=True)


def _leaves(config: Any, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Config's values by path (lists are values)."""
    if isinstance(config, dict) and config and not any(k == "Ref" or k.startswith("Fn::") for k in config):
        return {p: v for k, sub in config.items() for p, v in _leaves(sub, (*prefix, k)).items()}
    return {prefix: config}


def config_changes(old: dict[str, Any], new: dict[str, Any]) -> str:
    """Every changed property of the cluster's Config, old → new ("unset" when absent)."""
    before, after = _leaves(old.get("Config", {})), _leaves(new.get("Config", {}))
    return "; ".join(
        f"{'.'.join(path)} {_shown(before.get(path, _MISSING))} → {_shown(after.get(path, _MISSING))}"
        for path in sorted(before.keys() | after.keys())
        if before.get(path, _MISSING) != after.get(path, _MISSING)
    )


def cluster_update(
    logical_id: str,
    old: dict[str, Any],
    new: dict[str, Any],
    replaced: set[str],
    new_template: dict[str, Any],
    stateful: str | None,
) -> Change:
    """The cluster custom resource changed in place in the template: what aws-cdk's handler does."""
    vpc_replaced = any(t.get("Type") == "AWS::EC2::VPC" for r, t in new_template["Resources"].items() if r in replaced)
    action, why = _cluster_change(old, new, replaced, vpc_replaced)
    changed = config_changes(old, new)
    if changed:
        why += f" ({changed})"
    own = own_image_classes(new_template)
    if action == "updated" and own and old.get("Config", {}).get("version") != new.get("Config", {}).get("version"):
        why += (
            f"; EC2NodeClass {', '.join(f'`{c}`' for c in own)} selects images of your own, which Karpenter does not "
            "move with the Kubernetes version: you own their kubelet's version skew against the new control plane "
            "(EKS allows the kubelet up to three minors behind, never ahead)"
        )
    return Change(logical_id, CLUSTER, action, why, stateful)


FARGATE_PROFILES = ("Custom::AWSCDK-EKS-FargateProfile", "AWS::EKS::FargateProfile")


def _fargate_evicts(resource: dict[str, Any]) -> str:
    """EKS deletes the pods a Fargate profile runs when the profile is deleted (EKS User Guide, "Delete a
    Fargate profile"): they reschedule only where other capacity matches them."""
    props = resource.get("Properties", {})
    selectors = (props.get("Config") or props).get("selectors") or (props.get("Config") or props).get("Selectors") or []
    namespaces = sorted({str(s.get("namespace") or s.get("Namespace")) for s in selectors if isinstance(s, dict)})
    return (
        f"the pods this Fargate profile runs (namespaces {', '.join(namespaces) or 'unknown'}) are deleted with it: "
        "they restart only where other capacity matches them"
    )


def fargate_update(logical_id: str, stateful: str | None) -> Change:
    """Any change of a Fargate profile custom resource: aws-cdk's handler creates a new profile."""
    return Change(
        logical_id,
        FARGATE,
        "replaced",
        "any change: aws-cdk's handler creates a new profile, the old one is deleted",
        stateful,
        [
            "the pods the old profile scheduled (the Karpenter controller, CoreDNS) are deleted with it and start "
            "again on Fargate: provisioning pauses until the controller is back"
        ],
    )


def nodegroup_launch_template_refusal(
    old: dict[str, Any], new: dict[str, Any], replaced: set[str] | None = None
) -> str | None:
    """Why EKS refuses a managed node group's update of its launch template (None: it does not). EKS changes only
    the version of the launch template a group was created with: "You can update a node group using a launch
    template only if the node group was originally deployed with a launch template" (EKS API Reference,
    UpdateNodegroupVersion), and "After node group creation, you cannot use a different ID" (CloudFormation
    reference, AWS::EKS::Nodegroup LaunchTemplateSpecification)."""
    before, after = old.get("LaunchTemplate"), new.get("LaunchTemplate")
    if after is None or before == after:
        return None
    fix = "; a node group with a launch template must be a new node group (a new logical id)"
    if before is None:
        return "LaunchTemplate is added: EKS adds no launch template to a node group created without one" + fix
    for key in ("Id", "Name"):
        if _differs(before.get(key), after.get(key), replaced or set()):
            return f"LaunchTemplate.{key} changes: EKS keeps the launch template a node group was created with" + fix
    return None


# In-place updates that restart pods or replace nodes (EKS managed node groups and add-ons).
_NODEGROUP_ROLLS = ("Version", "ReleaseVersion", "LaunchTemplate")
_ADDON_ROLLS = ("AddonVersion", "ConfigurationValues")


def nodegroup_roll(causes: list[str]) -> str:
    """What a managed node group's update of ``causes`` (properties) does to its nodes."""
    return (
        f"the node group's nodes are replaced one at a time ({', '.join(causes)}): EKS drains each, its pods "
        "are evicted and rescheduled"
    )


def _rolling_effects(kind: str, old: dict[str, Any], new: dict[str, Any], action: str) -> list[str]:
    if action != "updated":
        return []
    if kind == "AWS::EKS::Nodegroup":
        rolls = [k for k in _NODEGROUP_ROLLS if old.get(k) != new.get(k)]
        if rolls:
            return [nodegroup_roll(rolls)]
    if kind == "AWS::EKS::Addon":
        rolls = [k for k in _ADDON_ROLLS if old.get(k) != new.get(k)]
        if rolls:
            return [f"add-on `{new.get('AddonName')}` is updated ({', '.join(rolls)}): its pods roll"]
    return []


def access_moves(configs: Mapping[str, AppConfig]) -> list[str]:
    """The report's steps for each environment whose deployed cluster the production profile keeps on aws-auth alone
    (karpenter_stack/config/access_steps.py): how to move it to access entries, one numbered line each."""
    lines: list[str] = []
    for name, config in configs.items():
        if not config.access_steps:
            continue
        where = f" (environment {name})" if name else ""
        lines += [
            "",
            f"## Move cluster {config.cluster_name} to access entries{where}",
            "",
            "The production profile starts new clusters on API_AND_CONFIG_MAP and keeps this deployed cluster's "
            f"authenticationMode ({config.authentication_mode or 'unset: CONFIG_MAP'}): nothing above changes it. "
            "To move it:",
            "",
        ]
        lines += [f"{i}. {step}" for i, step in enumerate(config.access_steps, 1)]
    return lines
