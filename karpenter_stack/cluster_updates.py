"""What a running cluster refuses to become: the rules of aws-cdk's cluster handler and of EKS for an update of
the cluster resource, mirrored once here for the synth (against your deployed baseline), ``make review`` and the
tests.

Source of the mirror: aws-cdk-lib 2.275.0's bundled handler
``custom-resource-handlers/dist/aws-eks/cluster-resource-handler/index.js`` (inside the Python wheel's
``aws_cdk/_jsii/aws-cdk-lib@2.275.0.jsii.tgz``): its property parsing, its rebuilt logging configuration, its
``analyzeUpdate`` (13 keys) and its ``onUpdate``. The synth runs without Node.js, so it cannot run that code; the
mirror is legitimate only because ``tests/test_cluster_handler.py`` runs the real handler (``tooling/handlers``)
on a few hundred generated pairs of ``Config`` properties, forward and rolled back, and asserts that ``analyze`` and
``update`` give the same analysis and the same verdict. A new aws-cdk-lib fails that test until this file follows.

EKS's own rules (not the handler's): the EKS User Guide, "Update existing cluster to new Kubernetes version" (one
minor up at a time), "Roll back a cluster to a previous Kubernetes version" (one minor back, within
``VERSION_ROLLBACK_DAYS`` of an in-place upgrade, control plane only) and the network requirements (a cluster's
subnets stay in the availability zones chosen when it was created).
"""

from __future__ import annotations

import functools
import json
from typing import Any

# EKS User Guide, "Roll back a cluster to a previous Kubernetes version" (2026): the control plane can be rolled
# back one minor within this many days of an in-place upgrade; nodes and add-ons are the user's to roll back first.
VERSION_ROLLBACK_DAYS = 7

HANDLER_SOURCE = (
    "aws-cdk-lib 2.275.0 custom-resource-handlers/dist/aws-eks/cluster-resource-handler/index.js (onUpdate)"
)

# The handler's analysis, in its order (``analyzeUpdate``'s object literal): its "one type of update" message
# lists every key but updateTags, whatever changed.
ANALYSIS_KEYS = (
    "replaceName",
    "updateVpc",
    "updateAccess",
    "replaceRole",
    "updateVersion",
    "updateEncryption",
    "updateLogging",
    "updateAuthMode",
    "updateBootstrapClusterCreatorAdminPermissions",
    "updateTags",
    "updateBootstrapSelfManagedAddons",
    "updateDeletionProtection",
    "updateControlPlaneScalingConfig",
)
ONE_KIND = "Only one type of update - " + ", ".join(k for k in ANALYSIS_KEYS if k != "updateTags") + " can be allowed"
# The keys that make the handler create a new cluster instead of updating (a named cluster refuses that).
REPLACING = (
    "replaceName",
    "replaceRole",
    "updateBootstrapClusterCreatorAdminPermissions",
    "updateBootstrapSelfManagedAddons",
)
REPLACE = "replace"

# How far along the one-way path an authentication mode is (unset is CONFIG_MAP).
AUTH_ORDER: dict[str | None, int] = {None: 0, "CONFIG_MAP": 0, "API_AND_CONFIG_MAP": 1, "API": 2}


class UpdateRefused(Exception):
    """The handler throws: CloudFormation fails the update (and on a rollback, the stack stays
    UPDATE_ROLLBACK_FAILED)."""


# --- the properties as the handler receives them -------------------------------------------------------------


def placeholder(value: Any) -> Any:
    """A CloudFormation intrinsic (``{"Ref": ...}``, ``{"Fn::GetAtt": ...}``) as one stable string (the same
    intrinsic always gives the same string), standing for the id or ARN CloudFormation would resolve it to."""
    if isinstance(value, dict) and len(value) == 1:
        (key,) = value
        if key == "Ref" or key.startswith("Fn::"):
            return "cfn:" + json.dumps(value, sort_keys=True, separators=(",", ":"))
    return None


@functools.cache
def _java_hash(key: str) -> int:
    """java.lang.String.hashCode (over UTF-16 code units)."""
    data, h = key.encode("utf-16-be"), 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h


def _java_map_order(keys: list[str]) -> list[str]:
    """The iteration order of a java.util.HashMap holding ``keys`` (default capacity 16, load factor 0.75)."""
    return list(_java_map_order_of(tuple(keys)))


@functools.cache
def _java_map_order_of(keys: tuple[str, ...]) -> tuple[str, ...]:
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = _java_hash(key)
        return (h ^ (h >> 16)) & (capacity - 1)

    return tuple(sorted(keys, key=bucket))  # (stable: keys of one bucket stay in insertion order)


def delivered(config: Any) -> Any:
    """``config`` (a template's ``Config``) as the handler receives it from CloudFormation: intrinsics as
    placeholders, and every object's keys in CloudFormation's order, not the template's.

    The order matters once: the handler rebuilds the new logging configuration as ``{types, enabled}`` and compares
    it, as JSON text, with the old one as delivered. CDK's template writes ``{enabled, types}``; in that order every
    update of a cluster with logging would count a logging update too, and a version upgrade alone would be refused.
    The handler's log in aws-cdk#33063 shows CloudFormation delivering ``{"types": ..., "enabled": ...}``: the order
    of a Java HashMap, which is assumed here for every object (unverified beyond that log; the test
    ``test_logging_in_the_template_order_would_refuse_every_update`` shows what the other order would mean)."""
    if isinstance(config, dict):
        stands_for = placeholder(config)
        if stands_for is not None:
            return stands_for
        return {k: delivered(config[k]) for k in _java_map_order(list(config))}
    if isinstance(config, list):
        return [delivered(v) for v in config]
    return config


def _flag(value: Any) -> Any:
    return value == "true" if isinstance(value, str) else value


def parse(config: dict[str, Any] | None) -> dict[str, Any]:
    """The handler's property parsing: CloudFormation delivers booleans as strings, and the handler turns back
    exactly these ones (a copy; raises UpdateRefused with the handler's TypeError where it crashes)."""
    config = json.loads(json.dumps(config or {}))
    vpc = config.get("resourcesVpcConfig")
    if isinstance(vpc, dict):
        for key in ("endpointPrivateAccess", "endpointPublicAccess"):
            if isinstance(vpc.get(key), str):
                vpc[key] = vpc[key] == "true"
    if config.get("logging") is not None:
        entries = config["logging"].get("clusterLogging")
        if entries is None:
            raise UpdateRefused("Cannot read properties of undefined (reading '0')")
        if not entries:
            raise UpdateRefused("Cannot read properties of undefined (reading 'enabled')")
        entries[0]["enabled"] = _flag(entries[0].get("enabled"))
    if config.get("bootstrapSelfManagedAddons"):
        config["bootstrapSelfManagedAddons"] = _flag(config["bootstrapSelfManagedAddons"])
    access = config.get("accessConfig")
    if isinstance(access, dict) and access.get("bootstrapClusterCreatorAdminPermissions"):
        access["bootstrapClusterCreatorAdminPermissions"] = _flag(access["bootstrapClusterCreatorAdminPermissions"])
    if isinstance(config.get("deletionProtection"), str):
        config["deletionProtection"] = config["deletionProtection"] == "true"
    return config


def new_logging(old: dict[str, Any], new: dict[str, Any]) -> Any:
    """The logging configuration the handler compares and sends: the new types enabled, the old types no longer
    listed disabled (``{types, enabled}`` entries); unchanged when neither side has a logging list."""
    new_list = (new.get("logging") or {}).get("clusterLogging")
    old_list = (old.get("logging") or {}).get("clusterLogging")
    if new_list is None and old_list is None:
        return new.get("logging")
    enable: list[Any] = []
    disable: list[Any] = []
    if new_list:
        enable = new_list[0]["types"]
        if old_list:
            disable = [t for t in old_list[0]["types"] if t not in enable]
    else:
        if old.get("logging") is None:
            raise UpdateRefused("Cannot read properties of undefined (reading 'clusterLogging')")
        disable = old["logging"]["clusterLogging"][0]["types"]
    entries = [{"types": t, "enabled": on} for t, on in ((enable, True), (disable, False)) if t]
    return {"clusterLogging": entries} if entries else {}


def _text(value: Any) -> str | None:
    """JSON.stringify: no spaces, the given key order; undefined for undefined."""
    return None if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _ids(values: Any) -> str | None:
    return None if values is None else _text(sorted(values))


def _same_true(a: Any, b: Any) -> bool:
    return (True if a is None else a) == (True if b is None else b)


def _tier(config: dict[str, Any]) -> Any:
    tier = (config.get("controlPlaneScalingConfig") or {}).get("tier")
    return "standard" if tier is None else tier


def _auth(config: dict[str, Any]) -> str | None:
    return (config.get("accessConfig") or {}).get("authenticationMode")


def _analysis(old: dict[str, Any], new: dict[str, Any]) -> dict[str, bool]:
    """``analyzeUpdate`` over parsed properties, ``new`` with the handler's rebuilt logging."""
    nv, ov = new.get("resourcesVpcConfig") or {}, old.get("resourcesVpcConfig") or {}
    na, oa = new.get("accessConfig") or {}, old.get("accessConfig") or {}
    return {
        "replaceName": new.get("name") != old.get("name"),
        "updateVpc": _ids(nv.get("subnetIds")) != _ids(ov.get("subnetIds"))
        or _ids(nv.get("securityGroupIds")) != _ids(ov.get("securityGroupIds")),
        "updateAccess": nv.get("endpointPrivateAccess") != ov.get("endpointPrivateAccess")
        or nv.get("endpointPublicAccess") != ov.get("endpointPublicAccess")
        or set(nv.get("publicAccessCidrs") or []) != set(ov.get("publicAccessCidrs") or []),
        "replaceRole": new.get("roleArn") != old.get("roleArn"),
        "updateVersion": new.get("version") != old.get("version"),
        "updateEncryption": _text(new.get("encryptionConfig") or {}) != _text(old.get("encryptionConfig") or {}),
        "updateLogging": _text(new.get("logging")) != _text(old.get("logging")),
        "updateAuthMode": _auth(new) != _auth(old),
        "updateBootstrapClusterCreatorAdminPermissions": not _same_true(
            na.get("bootstrapClusterCreatorAdminPermissions"), oa.get("bootstrapClusterCreatorAdminPermissions")
        ),
        "updateTags": _text(new.get("tags")) != _text(old.get("tags")),
        "updateBootstrapSelfManagedAddons": not _same_true(
            new.get("bootstrapSelfManagedAddons"), old.get("bootstrapSelfManagedAddons")
        ),
        "updateDeletionProtection": new.get("deletionProtection") != old.get("deletionProtection"),
        "updateControlPlaneScalingConfig": _tier(new) != _tier(old),
    }


def _parsed_pair(old: dict[str, Any], new: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    # (delivered: a template's Config may be given as is; the handler parses the new properties first)
    new_props, old_props = parse(delivered(new)), parse(delivered(old))
    new_props["logging"] = new_logging(old_props, new_props)
    if new_props["logging"] is None:
        del new_props["logging"]
    return old_props, new_props


def analyze(old: dict[str, Any], new: dict[str, Any]) -> dict[str, bool]:
    """The handler's ``analyzeUpdate`` over two ``Config`` properties (as CloudFormation delivers them, see
    :func:`delivered`; a template's ``Config`` may be given as it is): every
    key of ``ANALYSIS_KEYS``, True where it sees a change. Raises UpdateRefused where parsing crashes."""
    return _analysis(*_parsed_pair(old, new))


def update(
    old: dict[str, Any],
    new: dict[str, Any],
    *,
    deployed_version: Any = ...,
    deployed_auth_mode: Any = ...,
) -> list[str]:
    """The handler's ``onUpdate`` verdict for CloudFormation's Update from ``old`` to ``new`` (template ``Config``s):
    ``["replace"]`` when it creates a new cluster, else the analysis keys it acts on (``ANALYSIS_KEYS`` order;
    empty: nothing to do). Raises UpdateRefused with the handler's own message when it throws.

    ``deployed_version`` / ``deployed_auth_mode``: what DescribeCluster answers (default: what ``old`` says, i.e.
    the cluster is as the previous deploy left it). The handler skips a version or authentication-mode update the
    cluster already has, and then checks nothing else of it. For a rollback, pass the forward's ``new`` as ``old``
    and the forward's ``old`` as ``new``, with the cluster's state after the failed forward."""
    old_props, new_props = _parsed_pair(old, new)
    changes = _analysis(old_props, new_props)
    if changes["updateEncryption"]:
        raise UpdateRefused("Cannot update cluster encryption configuration")
    if any(changes[k] for k in REPLACING):
        if old_props.get("name") == new_props.get("name") and old_props.get("name"):
            raise UpdateRefused(
                f'Cannot replace cluster "{old_props["name"]}" since it has an explicit physical name. Either '
                'rename the cluster or remove the "name" configuration'
            )
        if not new_props.get("roleArn"):
            raise UpdateRefused('"roleArn" is required')
        return [REPLACE]
    kinds = [k for k in ANALYSIS_KEYS if changes[k]]
    if len([k for k in kinds if k != "updateTags"]) > 1:
        raise UpdateRefused(ONE_KIND)
    if changes["updateVersion"] and not new_props.get("version"):
        raise UpdateRefused(
            f"Cannot remove cluster version configuration. Current version is {old_props.get('version')}"
        )
    if changes["updateAuthMode"] and not changes["updateVersion"]:
        current = _auth(old_props) if deployed_auth_mode is ... else deployed_auth_mode
        if current != _auth(new_props):
            refused = auth_mode_refusal(_auth(old_props), _auth(new_props))
            if refused:
                raise UpdateRefused(refused)
    return kinds


# --- the rules as messages name them ---------------------------------------------------------------------------


def _js(value: str | None) -> str:
    return "undefined" if value is None else value


def auth_mode_refusal(old: str | None, new: str | None) -> str | None:
    """Why the handler refuses moving the cluster from authentication mode ``old`` to ``new`` (None: allowed);
    its own message, checked in its order."""
    if old == new:
        return None
    if old == "API":
        return f"Cannot fallback authenticationMode from API to {_js(new)}"
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


def _minor(version: Any) -> tuple[int, int] | None:
    if not isinstance(version, str):
        return None
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        return None
    return major, minor


def is_downgrade(old: Any, new: Any) -> bool:
    """``new`` is an older Kubernetes minor than ``old``."""
    a, b = _minor(old), _minor(new)
    return a is not None and b is not None and b < a


def version_step_refusal(old: Any, new: Any) -> str | None:
    """Why a Kubernetes version change through a deploy is refused (``None`` when it is not): EKS upgrades one
    minor at a time; a downgrade is EKS's version rollback (one minor, within ``VERSION_ROLLBACK_DAYS`` of an
    upgrade, control plane only), which the app refuses to start through CloudFormation (see
    ``DOWNGRADE_RUNBOOK``)."""
    a, b = _minor(old), _minor(new)
    if a is None or b is None or a == b:
        return None
    if b < a:
        return (
            f"version {old} → {new}: a downgrade is EKS's version rollback, which rolls back the control plane only "
            f"(one minor, within {VERSION_ROLLBACK_DAYS} days of an in-place upgrade) while nodes and add-ons stay "
            "newer"
        )
    if b[0] == a[0] and b[1] > a[1] + 1:
        return f"version {old} → {new}: EKS upgrades one minor version at a time ({old} → {a[0]}.{a[1] + 1} first)"
    return None


def downgrade_runbook(old: str, new: str) -> str:
    """The safe way back from ``old`` to ``new`` (one minor down) outside CloudFormation."""
    return (
        f"roll back the data plane first (Karpenter's nodes: pin their image to {new} and let them drift; the "
        f"managed node group and add-ons to {new}), then the control plane with `aws eks update-cluster-version "
        f"--kubernetes-version {new}` within {VERSION_ROLLBACK_DAYS} days of the upgrade (EKS's version rollback, "
        f"outside CloudFormation), then `make accept` so the baseline records {new}"
    )
