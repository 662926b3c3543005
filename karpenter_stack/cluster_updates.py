"""What a running cluster refuses to become: the rules of aws-cdk's cluster handler and of EKS for an update of
the cluster resource, mirrored once here for the synth (against your deployed baseline), ``make review`` and the
tests.

Sources: aws-cdk-lib 2.275's bundled ``custom-resource-handlers/dist/aws-eks/cluster-resource-handler``
(``onUpdate``/``analyzeUpdate``: authentication modes go unset -> API_AND_CONFIG_MAP -> API, one step per
deploy, never back; one kind of update per deploy) and the EKS User Guide ("Update existing cluster to new
Kubernetes version": one minor at a time, never down).
"""

from __future__ import annotations

import json
from typing import Any

# How far along the one-way path an authentication mode is (unset is CONFIG_MAP).
AUTH_ORDER: dict[str | None, int] = {None: 0, "CONFIG_MAP": 0, "API_AND_CONFIG_MAP": 1, "API": 2}


def auth_mode_refusal(old: str | None, new: str | None) -> str | None:
    """Why the handler refuses moving the cluster from authentication mode ``old`` to ``new`` (None: allowed)."""
    if old == new:
        return None
    if old == "API":
        return f"Cannot fallback authenticationMode from API to {new}"
    if old == "API_AND_CONFIG_MAP" and new == "CONFIG_MAP":
        return "Cannot fallback authenticationMode from API_AND_CONFIG_MAP to CONFIG_MAP"
    if old is not None and new is None:
        return "Cannot fallback authenticationMode from defined to undefined"
    if old is None and new == "API":
        return "Cannot update from undefined(CONFIG_MAP) to API"
    if old == "CONFIG_MAP" and new == "API":
        return "Cannot update from CONFIG_MAP to API"
    return None


def auth_mode_sequence(old: str | None, new: str | None) -> str:
    """The safe way from ``old`` to ``new`` when the direct step is refused."""
    if AUTH_ORDER.get(new, 0) > AUTH_ORDER.get(old, 0):
        return "first deploy API_AND_CONFIG_MAP (with nothing else you can leave out), then API"
    return "EKS never moves a cluster back: keep the current mode"


def version_step_refusal(old: Any, new: Any) -> str | None:
    """Why EKS refuses a Kubernetes version change (``None`` when it does not): one minor up at a time, never down."""
    if not (isinstance(old, str) and isinstance(new, str)) or old == new:
        return None
    try:
        (a_major, a_minor), (b_major, b_minor) = (tuple(int(x) for x in v.split(".")[:2]) for v in (old, new))
    except ValueError:
        return None
    if (b_major, b_minor) < (a_major, a_minor):
        return f"version {old} → {new}: EKS never downgrades a cluster"
    if b_major == a_major and b_minor > a_minor + 1:
        return (
            f"version {old} → {new}: EKS upgrades one minor version at a time ({old} → {a_major}.{a_minor + 1} first)"
        )
    return None


# --- the handler's onUpdate over two ``Config`` properties (``analyzeUpdate``, then what it refuses) ---------
# Mirrored: which property changes replace the cluster (a named cluster then fails the update), that at most one
# of the logging / endpoint access / VPC / authentication mode updates may happen per deploy, and the one-way
# path of authentication modes. Not mirrored: the version and tag updates (they never fail there).


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
        refused = auth_mode_refusal(_auth(old), _auth(new))
        if refused:
            raise UpdateRefused(refused)
    return kinds
