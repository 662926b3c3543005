"""What changing a setting does on a running cluster, declared on the setting's field itself
(``Field(..., json_schema_extra=change(Change.STATIC_DRIFT, "spec.kubelet", EC2_NODE_CLASS_HASH))``), with
what it writes (a manifest path of a node object, a chart value, a CloudFormation resource) and where the fact
comes from (Karpenter 1.14.1, aws-cdk-lib 2.275's handlers, CloudFormation, EKS). The declaration also names
what a value of the setting needs besides (``needs``: the model refuses it alone) and, for settings whose type
does not spell them, their modes. Everything that lists settings reads these declarations: the review's drift
tables, the transition matrix (``tooling/transitions.py``, which checks each declaration against the review's
verdict), the command-line samples of the tests and the configuration reference's "changing it" column."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel
from pydantic.config import JsonDict, JsonValue
from pydantic.fields import FieldInfo


class Change(StrEnum):
    """What a change of a field does to the object and the nodes it describes."""

    IN_PLACE = "in-place"  # the object is updated and its nodes keep running with the new value
    BEHAVIORAL = "behavioral"  # how Karpenter decides changes; no node is replaced
    STATIC_DRIFT = "static drift"  # every node of the pools it applies to is replaced (within budgets)
    DYNAMIC_DRIFT = "dynamic drift"  # only the nodes that no longer match it are replaced (within budgets)
    REPLACE = "replace"  # a new object replaces the old one (the old one is deleted)
    # ... and of the app's settings (the cluster, its network, the controller's chart)
    NOTHING_DEPLOYED = "nothing deployed"  # read by the synth's checks only: no template changes
    RESOURCES = "adds or removes resources"  # resources are added, removed or updated; nothing running restarts
    RESTARTS_CONTROLLER = "restarts the controller"  # a new pod template: the controller's pods roll
    INTERRUPTS = "interrupts"  # running pods are evicted or restarted, or nodes replaced (besides Karpenter's drift)
    ONE_WAY = "one way"  # steps forward only: going back (and so CloudFormation's rollback of a step) is refused
    REFUSED = "refused"  # a running cluster cannot take it: the synth refuses it against your deployed baseline
    ANOTHER_STACK = "another stack"  # names where or what the stack is: another value is another stack
    BY_FIELD = "by field"  # an object or a list of them: each of its fields declares


# What each kind means for the configuration reference's "changing it" column.
CHANGE_TEXT: dict[Change, str] = {
    Change.IN_PLACE: "updated in place",
    Change.BEHAVIORAL: "in place: how Karpenter decides, no node is replaced",
    Change.STATIC_DRIFT: "drifts every node it applies to, replaced within the pool's budgets",
    Change.DYNAMIC_DRIFT: "drifts the nodes that no longer match, replaced within the pool's budgets",
    Change.REPLACE: "replaces: creates the new one and deletes the old, with what runs on it",
    Change.NOTHING_DEPLOYED: "nothing deployed changes (synth checks only)",
    Change.RESOURCES: "adds, removes or updates resources; nothing running restarts",
    Change.RESTARTS_CONTROLLER: "restarts the controller's pods, one at a time",
    Change.INTERRUPTS: "can evict or restart running pods, or replace nodes",
    Change.ONE_WAY: "one way: going back is refused (and so is the rollback of a step)",
    Change.REFUSED: "refused on a running cluster",
    Change.ANOTHER_STACK: "another stack: created anew, the old one keeps running until destroyed",
    Change.BY_FIELD: "as its keys say",
}


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
OBJECT_METADATA = (
    "Kubernetes object metadata: the labels and annotations of a NodePool, EC2NodeClass or NodeOverlay itself are "
    "outside its spec (NodePool.Hash() hashes spec.template, EC2NodeClass.Hash() its spec, a NodeOverlay has no "
    "NodeClaim): the object is updated in place (kubectl apply), no node drifts"
)
OBJECT_NAME = (
    "Kubernetes metadata.name names the object: a new name creates a new object and deletes the old one "
    "(a deleted NodePool drains all its nodes, whatever its budgets)"
)


@dataclass(frozen=True)
class FieldChange:
    """A field's declaration: what changing it does, what it writes (for a node object, the manifest field: a
    path from the object's root, e.g. ``spec.template.spec.requirements``) and the source of that fact; what a
    value needs besides (settings, as in cdk.json: ``needs`` for every value, ``needs_for`` for one value, by
    its JSON) and the modes of a setting whose type does not name them (every pair is a transition)."""

    change: Change
    manifest: str
    source: str
    needs: Mapping[str, Any] = field(default_factory=dict)
    needs_for: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    modes: tuple[Any, ...] | None = None
    not_moved: str | None = None  # why the transition matrix does not move it (e.g. one release has a template)
    # Karpenter's own name of what the field writes, where ``manifest`` alone does not name it precisely: a path
    # from the object's (or the chart values') root, ``[]`` for a list's entries or ``[key=<label>]`` for the
    # requirement of that key, then optionally a space and a note (``spec.amiSelectorTerms[].alias``).
    upstream: str | None = None
    # Why the field's default differs from upstream's default (the reference's table of differing defaults).
    differs: str | None = None

    def companions(self, value: Any) -> dict[str, Any]:
        """The settings ``value`` needs besides."""
        return {**self.needs, **self.needs_for.get(json.dumps(value), {})}


def change(
    kind: Change,
    manifest: str,
    source: str,
    *,
    needs: JsonDict | None = None,
    needs_for: dict[str, JsonDict] | None = None,
    modes: list[JsonValue] | None = None,
    not_moved: str | None = None,
    upstream: str | None = None,
    differs: str | None = None,
) -> JsonDict:
    """The declaration, as a field's ``json_schema_extra``. ``upstream``: Karpenter's own name of what the field
    writes, where ``manifest`` is not precise (see :class:`FieldChange`); ``differs``: why the field's default is
    not upstream's."""
    out: JsonDict = {"change": kind.value, "manifest": manifest, "source": source}
    out |= {"needs": needs} if needs else {}
    out |= {"needsFor": dict(needs_for)} if needs_for else {}
    out |= {"modes": modes} if modes is not None else {}
    out |= {"notMoved": not_moved} if not_moved else {}
    out |= {"upstream": upstream} if upstream else {}
    out |= {"differs": differs} if differs else {}
    return out


def change_of(model: type[BaseModel], name: str) -> FieldChange | None:
    """What field ``name`` of ``model`` declares (None: nothing)."""
    return declaration(model.model_fields[name])


def declaration(info: FieldInfo) -> FieldChange | None:
    """What a field declares (None: nothing)."""
    extra = info.json_schema_extra
    if not isinstance(extra, Mapping) or "change" not in extra:
        return None
    needs, needs_for, modes = extra.get("needs") or {}, extra.get("needsFor") or {}, extra.get("modes")
    assert isinstance(needs, Mapping) and isinstance(needs_for, Mapping)
    return FieldChange(
        Change(str(extra["change"])),
        str(extra["manifest"]),
        str(extra["source"]),
        dict(needs),
        {k: dict(v) for k, v in needs_for.items() if isinstance(v, Mapping)},
        tuple(modes) if isinstance(modes, list) else None,
        str(extra["notMoved"]) if extra.get("notMoved") else None,
        str(extra["upstream"]) if extra.get("upstream") else None,
        str(extra["differs"]) if extra.get("differs") else None,
    )


CHART_VALUE = "chart value "
# Manifest paths of Karpenter's objects (from the object's root).
_OBJECT_PATH = re.compile(r"^(spec|metadata)\.")


def upstream_name(declared: FieldChange, key: str, holder: str | None = None) -> str | None:
    """Karpenter's own name of what a field (``key``) writes: its declared ``upstream``, else its manifest path
    when that is a field of Karpenter's objects or chart values -- a field of a nested object whose manifest is
    the object's own (every kubelet field declares ``spec.kubelet``, the manifest of ``holder``, the field that
    holds the object) writes ``<that path>.<key>``. None for what is not Karpenter's (a CloudFormation
    resource)."""
    if declared.upstream:
        return declared.upstream
    path = declared.manifest.removeprefix(CHART_VALUE)
    if path == declared.manifest and not _OBJECT_PATH.match(path):
        return None
    return f"{path}.{key}" if holder is not None and declared.manifest == holder else path


def upstream_path(name: str) -> str:
    """The path of an upstream name (without its note)."""
    return name.split(" ", 1)[0]


def upstream_segments(name: str) -> list[tuple[str, str | None]]:
    """The fields of an upstream name's path, each with its entry selector: ``None`` for a plain field, ``""``
    for ``[]`` (a list's entries), the label key of ``[key=<label>]``: ``requirements[key=kubernetes.io/arch]``
    is ``("requirements", "kubernetes.io/arch")``."""
    found = re.findall(r"([^.\[]+)(\[(?:key=)?([^\]]*)\])?", upstream_path(name))
    return [(field_name, selector if brackets else None) for field_name, brackets, selector in found]


def upstream_leaf(name: str) -> str:
    """The last field an upstream name names: ``alias`` of ``spec.amiSelectorTerms[].alias``."""
    return upstream_segments(name)[-1][0]


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


# The controller's chart (Karpenter 1.14.1, charts/karpenter/templates/deployment.yaml): what is rendered into
# the Deployment's pod template rolls its pods when it changes; tooling/review/kubernetes.py mirrors which values
# render elsewhere.
CHART_POD_TEMPLATE = (
    "karpenter chart 1.14.1 templates/deployment.yaml: settings.* become the controller container's environment, "
    "and logLevel, controller.resources, podAnnotations and serviceAccount.name are in the pod template; a new pod "
    "template rolls the controller's pods (PodDisruptionBudget maxUnavailable 1)"
)
CHART_OUTSIDE_POD_TEMPLATE = (
    "karpenter chart 1.14.1: serviceMonitor renders a ServiceMonitor object and serviceAccount.annotations the "
    "ServiceAccount, neither is in the Deployment's pod template (no checksum of them): the pods keep running"
)
