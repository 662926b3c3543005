"""What changing a field of a spec does on a running cluster, declared on the field itself
(``Field(..., json_schema_extra=change(Change.STATIC_DRIFT, "spec.kubelet", EC2_NODE_CLASS_HASH))``), with
the manifest field it writes and where the fact comes from (Karpenter 1.14.1). Tables that tools read
(which manifest fields never drift, which drift only the nodes that no longer match) are derived from
these declarations, so a new field cannot be left out of them unnoticed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel
from pydantic.config import JsonDict


class Change(StrEnum):
    """What a change of a field does to the object and the nodes it describes."""

    IN_PLACE = "in-place"  # the object is updated and its nodes keep running with the new value
    BEHAVIORAL = "behavioral"  # how Karpenter decides changes; no node is replaced
    STATIC_DRIFT = "static drift"  # every node of the pools it applies to is replaced (within budgets)
    DYNAMIC_DRIFT = "dynamic drift"  # only the nodes that no longer match it are replaced (within budgets)
    REPLACE = "replace"  # a new object replaces the old one (the old one is deleted)


# Where the facts come from (Karpenter 1.14.1: kubernetes-sigs/karpenter and aws/karpenter-provider-aws).
NODE_POOL_HASH = (
    'karpenter.sh v1 NodePool.Hash(): the hash of spec.template, every field but those tagged hash:"ignore"; a '
    "NodeClaim whose hash differs from its pool's is drifted (static drift)"
)
NODE_POOL_REQUIREMENTS = (
    'karpenter.sh v1 NodeClaimTemplate: requirements (and a NodeClaim\'s resources) are hash:"ignore"; a node '
    "drifts only when its labels no longer meet the pool's requirements (dynamic drift)"
)
NODE_POOL_BEHAVIOR = (
    "karpenter.sh v1 NodePool: weight, limits, disruption and replicas are behavioral fields, not part of "
    "spec.template or of any NodeClaim: they never drift"
)
EC2_NODE_CLASS_HASH = (
    'karpenter.k8s.aws v1 EC2NodeClass.Hash(): every spec field but those tagged hash:"ignore"; every node of '
    "the class drifts when it changes (static drift)"
)
EC2_NODE_CLASS_SELECTORS = (
    "karpenter.k8s.aws v1 EC2NodeClass: amiSelectorTerms, subnetSelectorTerms, securityGroupSelectorTerms and "
    'capacityReservationSelectorTerms are hash:"ignore"; a node drifts when its AMI, subnet, security groups or '
    "capacity reservation is no longer among those resolved (dynamic drift)"
)
NODE_OVERLAY = (
    "karpenter.sh v1alpha1 NodeOverlay: read when Karpenter simulates launches (price, capacity of matching "
    "instance types); no NodeClaim carries it, no node drifts"
)
OBJECT_NAME = (
    "Kubernetes metadata.name names the object: a new name creates a new object and deletes the old one "
    "(a deleted NodePool drains all its nodes, whatever its budgets)"
)


@dataclass(frozen=True)
class FieldChange:
    """A field's declaration: what changing it does, the manifest field it writes (a path from the
    object's root, e.g. ``spec.template.spec.requirements``) and the source of that fact."""

    change: Change
    manifest: str
    source: str


def change(kind: Change, manifest: str, source: str) -> JsonDict:
    """The declaration, as a field's ``json_schema_extra``."""
    return {"change": kind.value, "manifest": manifest, "source": source}


def change_of(model: type[BaseModel], name: str) -> FieldChange | None:
    """What field ``name`` of ``model`` declares (None: nothing)."""
    extra = model.model_fields[name].json_schema_extra
    if not isinstance(extra, Mapping) or "change" not in extra:
        return None
    return FieldChange(Change(str(extra["change"])), str(extra["manifest"]), str(extra["source"]))


def undeclared(model: type[BaseModel]) -> list[str]:
    """The fields of ``model`` that do not declare what changing them does."""
    return [f"{model.__name__}.{name}" for name in model.model_fields if change_of(model, name) is None]


def manifest_keys(
    model: type[BaseModel], kind: Change, under: str, more: Mapping[str, FieldChange] | None = None
) -> tuple[str, ...]:
    """The manifest keys directly below ``under`` (e.g. ``spec.``) that the fields of ``model`` declaring
    ``kind`` write, in field order, each once; then those of ``more`` (manifest fields the spec does not
    write, by path)."""
    declared = [c for name in model.model_fields if (c := change_of(model, name)) is not None]
    keys: list[str] = []
    for item in [*declared, *(more or {}).values()]:
        if item.change is kind and item.manifest.startswith(under):
            key = item.manifest.removeprefix(under).split(".", 1)[0]
            keys += [] if key in keys else [key]
    return tuple(keys)
