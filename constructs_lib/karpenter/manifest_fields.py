"""What the app reads of a Karpenter object of a file, field by field: the fields each kind may hold, the
refusal of one field (its path, its value, why), the walk through an object's mappings and lists, and the checks of
an object's top level (constructs_lib/karpenter/node_manifests.py reads the files; manifest_settings.py converts the objects).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .specs.base import quoted, shown
from .specs.node_pool import SHORTCUTS
from .specs.not_exposed import not_exposed

_GIB = re.compile(r"([1-9][0-9]*)Gi", re.ASCII)
# What the app writes of spec.metadataOptions (IMDSv2 required, IPv6 IMDS off); the hop limit is metadataHopLimit.
METADATA_OPTIONS = {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpTokens": "required"}
# The fields of each kind's spec in Karpenter 1.14.1's CRDs (a field not here is none of the CRD's: kubectl
# refuses it); those the app does not write are refused with their reason (specs/not_exposed.py).
CLASS_FIELDS = (
    "role",
    "instanceProfile",
    "amiSelectorTerms",
    "amiFamily",
    "userData",
    "subnetSelectorTerms",
    "securityGroupSelectorTerms",
    "capacityReservationSelectorTerms",
    "blockDeviceMappings",
    "metadataOptions",
    "kubelet",
    "tags",
    "detailedMonitoring",
    "associatePublicIPAddress",
    "instanceStorePolicy",
    "networkInterfaces",
    "ipPrefixCount",
    "connectionTracking",
    "cpuOptions",
    "placementGroupSelector",
    "context",
)
POOL_FIELDS = ("template", "disruption", "limits", "weight", "replicas")
TEMPLATE_SPEC_FIELDS = (
    "nodeClassRef",
    "requirements",
    "taints",
    "startupTaints",
    "expireAfter",
    "terminationGracePeriod",
)
DISRUPTION_FIELDS = ("consolidationPolicy", "consolidateAfter", "budgets")
OVERLAY_FIELDS = ("requirements", "price", "priceAdjustment", "capacity", "weight")
MAPPING_FIELDS = ("deviceName", "ebs", "rootVolume")
EBS_FIELDS = (
    "volumeSize",
    "volumeType",
    "iops",
    "throughput",
    "encrypted",
    "kmsKeyID",
    "deleteOnTermination",
    "snapshotID",
    "volumeInitializationRate",
)
# The shortcut field of each key and the operator it writes.
_SHORTCUT_OPERATOR = {alias: ("Gt" if alias == "minInstanceGeneration" else "In") for alias in SHORTCUTS.values()}


class _Refused(Exception):
    """One field of one object the app refuses: its path in the object, its value, why."""

    def __init__(self, path: str, message: str, value: Any = None, show: bool = True) -> None:
        super().__init__(message)
        self.path, self.message, self.value, self.show = path, message, value, show

    def line(self) -> str:
        where = f"{self.path} {shown(self.value)}".strip() if self.show else self.path
        return f"{where}: {self.message}"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _paths(value: Any, path: str, generic: str) -> Iterable[tuple[str, str, Any]]:
    """Every field of a value: its path, its path with ``[]`` for a list's entries (the CRD's), its value."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield f"{path}.{key}", f"{generic}.{key}", child
            yield from _paths(child, f"{path}.{key}", f"{generic}.{key}")
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _paths(child, f"{path}[{i}]", generic + "[]")


def _known(value: Mapping[str, Any], fields: Sequence[str], path: str, kind: str) -> None:
    for key in value:
        if key not in fields:
            raise _Refused(
                f"{path}.{key}", f"Karpenter 1.14.1's {kind} has no such field (known: {', '.join(fields)})", show=False
            )


def _mapping_at(value: Mapping[str, Any], key: str, path: str) -> dict[str, Any]:
    found = value.get(key)
    if found is None:
        return {}
    if not isinstance(found, dict):
        raise _Refused(_join(path, key), "must be a mapping", found)
    return found


def _list_at(value: Mapping[str, Any], key: str, path: str) -> list[Any]:
    found = value.get(key)
    if found is None:
        return []
    if not isinstance(found, list):
        raise _Refused(_join(path, key), "must be a list", found)
    return found


def _check_top(obj: dict[str, Any], kind: str) -> list[str]:
    """Only apiVersion, kind, metadata (name, labels, annotations) and spec; no path the app does not expose. A
    namespace is dropped, as the API server drops it from a cluster-scoped object: the note that says so."""
    for key in obj:
        if key not in ("apiVersion", "kind", "metadata", "spec"):
            why = "written by Karpenter, not applied" if key == "status" else "not a field of the object"
            raise _Refused(key, f"{why}; leave it out", show=False)
    notes = []
    if "namespace" in obj["metadata"]:
        namespace = obj["metadata"].pop("namespace")
        notes.append(
            f"metadata.namespace {quoted(namespace)}: left out: {'an' if kind[0] in 'AEIOU' else 'a'} {kind} is "
            "cluster-scoped, and the API server "
            "ignores a namespace on it"
        )
    for key in obj["metadata"]:
        if key not in ("name", "labels", "annotations"):
            raise _Refused(
                f"metadata.{key}",
                "the app applies metadata.name, labels and annotations only (the objects are cluster-scoped; the "
                "API server writes the rest)",
                obj["metadata"][key],
            )
    if not isinstance(obj.get("spec"), dict):
        raise _Refused("spec", "required: a mapping", obj.get("spec"), show="spec" in obj)
    for path, generic, value in _paths(obj["spec"], "spec", "spec"):
        reason = not_exposed(kind, generic)
        if reason is not None:
            raise _Refused(path, f"not exposed by the app: {reason}", value)
    return notes
