"""What aws-cdk's EKS cluster handler does with an update of Custom::AWSCDK-EKS-Cluster, mirrored from
its source so tests can check a configuration change against it at synth time.

Source: aws/aws-cdk, packages/@aws-cdk/custom-resource-handlers/lib/aws-eks/cluster-resource-handler/
cluster.ts (``onUpdate`` and ``analyzeUpdate``), as shipped with aws-cdk-lib 2.275. Mirrored: which
property changes replace the cluster (a named cluster then fails the update), that at most one of the
logging / endpoint access / VPC / authentication mode updates may happen per deploy, and the one-way
path of authentication modes. Not mirrored: the version and tag updates (they never fail here).
"""

from __future__ import annotations

import json
from typing import Any


class UpdateRefused(Exception):
    """The handler throws: CloudFormation fails the update and rolls the stack back."""


def _auth(config: dict[str, Any]) -> str | None:
    return (config.get("accessConfig") or {}).get("authenticationMode")


def _sorted(items: list[Any] | None) -> list[str]:
    """Ids as the handler compares them (sorted); here they may be CloudFormation references."""
    return sorted(json.dumps(i, sort_keys=True) for i in items or [])


def analyze(old: dict[str, Any], new: dict[str, Any]) -> dict[str, bool]:
    """The handler's ``analyzeUpdate`` over two ``Config`` properties."""
    old_vpc, new_vpc = old.get("resourcesVpcConfig") or {}, new.get("resourcesVpcConfig") or {}
    old_access, new_access = old.get("accessConfig") or {}, new.get("accessConfig") or {}
    return {
        "replaceName": new.get("name") != old.get("name"),
        "replaceRole": new.get("roleArn") != old.get("roleArn"),
        "updateBootstrapClusterCreatorAdminPermissions": new_access.get("bootstrapClusterCreatorAdminPermissions")
        != old_access.get("bootstrapClusterCreatorAdminPermissions"),
        "updateEncryption": json.dumps(new.get("encryptionConfig") or {}, sort_keys=True)
        != json.dumps(old.get("encryptionConfig") or {}, sort_keys=True),
        "updateVpc": _sorted(new_vpc.get("subnetIds")) != _sorted(old_vpc.get("subnetIds"))
        or _sorted(new_vpc.get("securityGroupIds")) != _sorted(old_vpc.get("securityGroupIds")),
        "updateAccess": new_vpc.get("endpointPrivateAccess") != old_vpc.get("endpointPrivateAccess")
        or new_vpc.get("endpointPublicAccess") != old_vpc.get("endpointPublicAccess")
        or set(new_vpc.get("publicAccessCidrs") or []) != set(old_vpc.get("publicAccessCidrs") or []),
        "updateLogging": json.dumps(new.get("logging"), sort_keys=True)
        != json.dumps(old.get("logging"), sort_keys=True),
        "updateAuthMode": _auth(new) != _auth(old),
    }


def update(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The updates the handler makes in place, or UpdateRefused with its reason."""
    changes = analyze(old, new)
    if changes["updateEncryption"]:
        raise UpdateRefused("Cannot update cluster encryption configuration")
    if changes["replaceName"] or changes["replaceRole"] or changes["updateBootstrapClusterCreatorAdminPermissions"]:
        if old.get("name") == new.get("name") and old.get("name"):
            raise UpdateRefused(f'Cannot replace cluster "{old["name"]}" since it has an explicit physical name')
        return ["replace"]
    kinds = [k for k in ("updateLogging", "updateAccess", "updateVpc", "updateAuthMode") if changes[k]]
    if len(kinds) > 1:
        raise UpdateRefused(
            "Only one type of update - VpcConfigUpdate, LoggingUpdate, EndpointAccessUpdate, or "
            "AuthModeUpdate can be allowed"
        )
    if changes["updateAuthMode"]:
        from karpenter_stack.cluster_updates import auth_mode_refusal  # the one mirror of these rules

        refused = auth_mode_refusal(_auth(old), _auth(new))
        if refused:
            raise UpdateRefused(refused)
    return kinds
