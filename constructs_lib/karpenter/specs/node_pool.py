"""The NodePool: what Karpenter may launch for pending pods (requirements, labels, taints, limits,
weight or static replicas), and when it may remove it (expiry, consolidation, disruption budgets)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator
from pydantic.alias_generators import to_snake

from ..names import NODE_CLASS_GROUP, NODE_CLASS_KIND, NODE_POOL_API_VERSION
from ..quantities import parse_duration
from .base import (
    OBJECT_ALLOWED_ANNOTATIONS,
    QUALIFIED_NAME,
    IntOrString,
    annotations_fit,
    applied_size,
    kubernetes_name,
    label_key,
    label_value,
    non_negative_quantities,
    object_annotations,
    quoted,
)
from .change import (
    NODE_POOL_BEHAVIOR,
    NODE_POOL_HASH,
    NODE_POOL_REQUIREMENTS,
    OBJECT_NAME,
    Change,
    FieldChange,
    change,
    manifest_keys,
)
from .ec2 import INSTANCE_CATEGORIES
from .metadata import ObjectAnnotations, ObjectLabels, object_annotations_field, object_labels_field
from .node_pool_parts import DisruptionBudgetSpec, RequirementSpec, TaintSpec
from .written import NodeObjectSpec, filled

# The requirement keys the shortcut fields write (key -> field, as in the configuration). The one rule: a requirement
# on one of these keys in `requirements` takes the place of its shortcut's requirement (the shortcut's default is
# not written); giving the shortcut a value too is refused, naming both. null: the shortcut writes nothing.
SHORTCUTS = {
    "karpenter.sh/capacity-type": "capacityTypes",
    "kubernetes.io/arch": "architectures",
    "karpenter.k8s.aws/instance-category": "instanceCategories",
    "karpenter.k8s.aws/instance-generation": "minInstanceGeneration",
}
# Always written from the pool's node class, so that its nodes' OS is its image's: Karpenter matches a pod without
# an OS selector to any OS a pool allows, so a Linux pod could otherwise be placed on a Windows pool.
OS_KEY = "kubernetes.io/os"
# Node annotations Karpenter reads from a pool's template: karpenter.sh/do-not-disrupt (Karpenter 1.14 docs,
# concepts/disruption.md "Node-Level Controls": set on spec.template.metadata.annotations of a NodePool).
NODE_ANNOTATIONS_ALLOWED = (*OBJECT_ALLOWED_ANNOTATIONS, "karpenter.sh/do-not-disrupt")
_REPLACED = "; a requirement on {key} in requirements takes this field's place (leave it out then)"
# NodePool spec.template.spec.terminationGracePeriod (Karpenter 1.14.1 CRD karpenter.sh_nodepools.yaml:
# pattern ^([0-9]+(s|m|h))+$, optional; unset = drains wait for every PodDisruptionBudget, indefinitely).
_GRACE_PERIOD = re.compile(r"^([0-9]+(s|m|h))+$")
# The default: EKS Auto Mode's built-in NodePools bound every drain at 24h. A destroy does not depend on
# it: the teardown safety net's drain bound terminates what is left of this stack's nodes after 8 minutes.
DEFAULT_TERMINATION_GRACE_PERIOD = "24h"
# The CRD's bounds on spec.template.metadata.labels (maxProperties) and spec.template.spec.requirements (maxItems).
MAX_LABELS = 100
MAX_REQUIREMENTS = 100


CapacityType = Literal["spot", "on-demand", "reserved"]
Architecture = Literal["amd64", "arm64"]
DEFAULT_CAPACITY_TYPES: tuple[CapacityType, ...] = ("spot", "on-demand")
DEFAULT_ARCHITECTURES: tuple[Architecture, ...] = ("amd64", "arm64")


class NodePoolSpec(NodeObjectSpec):
    """One NodePool: what Karpenter may launch for pending pods, and when it may remove it."""

    name: str = Field(
        "default",
        description="Kubernetes name of the NodePool.",
        json_schema_extra=change(Change.REPLACE, "metadata.name", OBJECT_NAME),
        examples=["general"],
    )
    node_class: str = Field(
        "default",
        description="Name of the EC2NodeClass (from nodeClasses) this pool uses.",
        json_schema_extra=change(
            Change.STATIC_DRIFT,
            "spec.template.spec.nodeClassRef",
            NODE_POOL_HASH,
            upstream="spec.template.spec.nodeClassRef.name",
            needs={"nodeClasses": [{"name": "default"}, {"name": "other"}]},
        ),
        examples=["other"],
    )
    capacity_types: list[CapacityType] | None = Field(
        default_factory=lambda: list(DEFAULT_CAPACITY_TYPES),
        min_length=1,
        description="karpenter.sh/capacity-type values; reserved needs the node class's "
        "capacityReservationSelectorTerms (Karpenter then prefers reservations, and falls back to the "
        "other types listed). null: no capacity-type requirement (Karpenter may then launch any: reserved where the "
        "class has reservations, then spot, then on-demand)" + _REPLACED.format(key="karpenter.sh/capacity-type") + ".",
        json_schema_extra=change(
            Change.DYNAMIC_DRIFT,
            "spec.template.spec.requirements",
            NODE_POOL_REQUIREMENTS,
            upstream="spec.template.spec.requirements[key=karpenter.sh/capacity-type] operator In",
            # the reserved capacity type needs the class's capacity reservations
            needs={
                "nodeClasses": [
                    {"name": "default", "capacityReservationSelectorTerms": [{"id": "cr-0123456789abcdef0"}]}
                ]
            },
            modes=[["spot"], ["on-demand"], ["reserved"], None],
        ),
        examples=[["on-demand"], None],
    )
    architectures: list[Architecture] | None = Field(
        default_factory=lambda: list(DEFAULT_ARCHITECTURES),
        min_length=1,
        description="kubernetes.io/arch values. null: no architecture requirement (any the class has images for)"
        + _REPLACED.format(key="kubernetes.io/arch")
        + ".",
        json_schema_extra=change(
            Change.DYNAMIC_DRIFT,
            "spec.template.spec.requirements",
            NODE_POOL_REQUIREMENTS,
            upstream="spec.template.spec.requirements[key=kubernetes.io/arch] operator In",
            modes=[["amd64"], ["arm64"], None],
        ),
        examples=[["arm64"], None],
    )
    instance_categories: list[str] | None = Field(
        default_factory=lambda: ["c", "m", "r"],
        min_length=1,
        description="karpenter.k8s.aws/instance-category values (EC2 family letters). null: no category requirement "
        "(any instance type)" + _REPLACED.format(key="karpenter.k8s.aws/instance-category") + ", e.g. with minValues.",
        json_schema_extra=change(
            Change.DYNAMIC_DRIFT,
            "spec.template.spec.requirements",
            NODE_POOL_REQUIREMENTS,
            upstream="spec.template.spec.requirements[key=karpenter.k8s.aws/instance-category] operator In",
            modes=[["c", "m", "r"], ["c", "m"], None],
        ),
        examples=[["c", "m"], None],
    )
    min_instance_generation: int | None = Field(
        2,
        ge=0,
        description="Only instance generations greater than this (karpenter.k8s.aws/instance-generation Gt). null: no "
        "generation requirement" + _REPLACED.format(key="karpenter.k8s.aws/instance-generation") + ".",
        json_schema_extra=change(
            Change.DYNAMIC_DRIFT,
            "spec.template.spec.requirements",
            NODE_POOL_REQUIREMENTS,
            upstream="spec.template.spec.requirements[key=karpenter.k8s.aws/instance-generation] operator Gt",
            modes=[2, 5, None],
        ),
        examples=[5, None],
    )
    requirements: list[RequirementSpec] = Field(
        default_factory=list,
        description="Requirements of your own, after the ones the fields above write; kubernetes.io/os is always "
        "written from the node class. A requirement on the key of capacityTypes, architectures, instanceCategories or "
        "minInstanceGeneration takes that field's place (for minValues or another operator); that field is then left "
        "out (or null): giving it a value too is refused.",
        json_schema_extra=change(Change.DYNAMIC_DRIFT, "spec.template.spec.requirements", NODE_POOL_REQUIREMENTS),
        examples=[
            [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m7g", "m7i"]}],
            [
                {
                    "key": "karpenter.k8s.aws/instance-category",
                    "operator": "In",
                    "values": ["c", "m", "r"],
                    "minValues": 2,
                }
            ],
        ],
    )
    limits: dict[str, IntOrString] = Field(
        default_factory=lambda: {"cpu": "1000", "memory": "1000Gi"},
        description="Upper bound on the resources of all nodes in the pool (Kubernetes quantities). The object you "
        "write replaces the default whole: a resource you leave out (e.g. memory, when you write only cpu) has no "
        "limit.",
        json_schema_extra=change(
            Change.BEHAVIORAL,
            "spec.limits",
            NODE_POOL_BEHAVIOR,
            differs="a bound on what one pool can launch, so that a runaway Deployment or a scheduling mistake cannot "
            "grow the bill without end; upstream's unset means no limit",
        ),
        examples=[{"cpu": "500", "memory": "500Gi"}],
    )
    weight: int | None = Field(
        None,
        ge=1,
        le=100,
        description="Priority among pools (higher first); unset = 0.",
        json_schema_extra=change(Change.BEHAVIORAL, "spec.weight", NODE_POOL_BEHAVIOR),
        examples=[10],
    )
    replicas: int | None = Field(
        None,
        ge=0,
        description="Static capacity: keep exactly this many nodes, whatever the pods (alpha; needs "
        "controller.featureGates.staticCapacity). Then only limits.nodes applies and no weight; a pool "
        "cannot switch between static and dynamic in place (the CRD refuses it): rename it to switch.",
        json_schema_extra=change(
            Change.BEHAVIORAL,
            "spec.replicas",
            NODE_POOL_BEHAVIOR,
            needs={"controller": {"featureGates": {"staticCapacity": True}}},
        ),
        examples=[2],
    )
    expire_after: str = Field(
        "720h",
        description="Replace nodes older than this (duration or Never).",
        json_schema_extra=change(Change.STATIC_DRIFT, "spec.template.spec.expireAfter", NODE_POOL_HASH),
        examples=["168h"],
    )
    termination_grace_period: str | None = Field(
        DEFAULT_TERMINATION_GRACE_PERIOD,
        description=(
            "Longest drain of a node (drift, expiry, consolidation, a deleted pool): after it, Karpenter deletes "
            "the remaining pods even past PodDisruptionBudgets and do-not-disrupt. Any duration the CRD accepts "
            "(30s, 90m, 1h30m); null leaves it unset, so drains wait for every budget indefinitely (upstream's "
            "default). A destroy bounds its own drains whatever this is. Part of the node template: changing it "
            "replaces the pool's nodes by drift."
        ),
        json_schema_extra=change(
            Change.STATIC_DRIFT,
            "spec.template.spec.terminationGracePeriod",
            NODE_POOL_HASH,
            modes=["24h", "1h", None],  # None: unset, drains wait for every budget
            differs="bounds every drain at 24h, as EKS Auto Mode's built-in NodePools do; upstream's unset lets one "
            "PodDisruptionBudget or do-not-disrupt pod hold up drift, expiry and a deleted pool indefinitely",
        ),
    )
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] = Field(
        "WhenEmptyOrUnderutilized",
        description="Which nodes Karpenter may consolidate.",
        json_schema_extra=change(Change.BEHAVIORAL, "spec.disruption.consolidationPolicy", NODE_POOL_BEHAVIOR),
    )
    consolidate_after: str = Field(
        "1m",
        description="Wait this long after a pod change before consolidating.",
        json_schema_extra=change(
            Change.BEHAVIORAL,
            "spec.disruption.consolidateAfter",
            NODE_POOL_BEHAVIOR,
            differs="a minute after the last pod change instead of at once, so that a node is not removed in the "
            "middle of a rollout or a burst of short jobs only to be launched again",
        ),
        examples=["5m"],
    )
    budgets: list[DisruptionBudgetSpec] = Field(
        default_factory=lambda: [DisruptionBudgetSpec()],
        max_length=50,
        description="Disruption budgets: how many nodes may be disrupted at once.",
        json_schema_extra=change(Change.BEHAVIORAL, "spec.disruption.budgets", NODE_POOL_BEHAVIOR),
        examples=[[{"nodes": "20%"}]],
    )
    labels: dict[str, str] = Field(
        default_factory=dict,
        description="Labels put on the pool's nodes.",
        json_schema_extra=change(Change.STATIC_DRIFT, "spec.template.metadata.labels", NODE_POOL_HASH),
        examples=[{"team": "data"}],
    )
    annotations: dict[str, str] = Field(
        default_factory=dict,
        description="Annotations put on the pool's nodes (spec.template.metadata.annotations), e.g. "
        "karpenter.sh/do-not-disrupt; not the Kubernetes or Karpenter domains otherwise, at most 256 KiB.",
        json_schema_extra=change(Change.STATIC_DRIFT, "spec.template.metadata.annotations", NODE_POOL_HASH),
        examples=[{"example.com/owner": "team-data"}],
    )
    object_labels: ObjectLabels = object_labels_field("NodePool", ", not its nodes")
    object_annotations: ObjectAnnotations = object_annotations_field(
        "NodePool", "General purpose NodePool for generic workloads", hashed=True, besides=", not its nodes"
    )
    taints: list[TaintSpec] = Field(
        default_factory=list,
        description="Taints put on the pool's nodes.",
        json_schema_extra=change(Change.STATIC_DRIFT, "spec.template.spec.taints", NODE_POOL_HASH),
        examples=[[{"key": "dedicated", "value": "data", "effect": "NoSchedule"}]],
    )
    startup_taints: list[TaintSpec] = Field(
        default_factory=list,
        description="Taints put on the pool's nodes at startup, for a DaemonSet to remove once the node is ready (e.g. "
        "a CNI agent's); pods need not tolerate them to get a node.",
        json_schema_extra=change(Change.STATIC_DRIFT, "spec.template.spec.startupTaints", NODE_POOL_HASH),
        examples=[[{"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}]],
    )

    @field_validator("instance_categories")
    @classmethod
    def _categories(cls, value: list[str] | None) -> list[str] | None:
        unknown = [c for c in value or () if c not in INSTANCE_CATEGORIES]
        if unknown:
            raise ValueError(
                f"{', '.join(quoted(c) for c in unknown)} is no EC2 instance category (known: "
                f"{', '.join(INSTANCE_CATEGORIES)}); a pool of unknown categories launches nothing"
            )
        return value

    @field_validator("limits")
    @classmethod
    def _limits(cls, value: dict[str, str]) -> dict[str, str]:
        for resource in value:
            if not QUALIFIED_NAME.fullmatch(resource):
                raise ValueError(f"{quoted(resource)} is not a resource name like cpu, memory, nodes or nvidia.com/gpu")
        return non_negative_quantities(value, what="limit ")

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_LABELS:
            raise ValueError(f"{len(value)} labels: a NodePool's template takes at most {MAX_LABELS} (the CRD's bound)")
        for key, label in value.items():
            label_key(key)
            label_value(label)
        return value

    @field_validator("annotations")
    @classmethod
    def _node_annotations(cls, value: dict[str, str]) -> dict[str, str]:
        object_annotations(value, NODE_ANNOTATIONS_ALLOWED)
        return value

    @model_validator(mode="after")
    def _fits_with_kubectls_copy(self) -> NodePoolSpec:
        if self.object_annotations:
            annotations_fit(self.object_annotations, applied_size(self.manifest()), "objectAnnotations")
        return self

    @model_validator(mode="after")
    def _requirements_fit(self) -> NodePoolSpec:
        written = len(self._requirements("linux"))
        if written > MAX_REQUIREMENTS:
            raise ValueError(
                f"requirements: {len(self.requirements)} of your own and {written - len(self.requirements)} the app "
                f"writes (the shortcut fields, kubernetes.io/os) make {written}; a NodePool takes at most "
                f"{MAX_REQUIREMENTS} (the CRD's bound)"
            )
        return self

    @model_validator(mode="after")
    def _static_capacity(self) -> NodePoolSpec:
        if self.replicas is None:
            return self
        if self.weight is not None:
            raise ValueError("a pool with replicas (static capacity) takes no weight")
        other = sorted(set(self.limits) - {"nodes"}) if "limits" in self.model_fields_set else []
        if other:
            raise ValueError(f"a pool with replicas (static capacity) takes only limits.nodes, not {', '.join(other)}")
        return self

    @property
    def emitted_limits(self) -> dict[str, str]:
        """The limits written: a static pool's only when set (the default cpu/memory limits do not apply)."""
        if self.replicas is not None and "limits" not in self.model_fields_set:
            return {}
        return dict(self.limits)

    @model_validator(mode="before")
    @classmethod
    def _requirements_replace_shortcuts(cls, data: Any) -> Any:
        """A requirement on a shortcut's key takes its place: the shortcut is not written (None); a value of the
        shortcut given too is refused, naming both. No requirement on kubernetes.io/os (the class writes it)."""
        if not isinstance(data, dict):
            return data
        given = data.get("requirements") or []
        keys = {r.get("key") if isinstance(r, dict) else getattr(r, "key", None) for r in given}
        if OS_KEY in keys:
            raise ValueError(
                f"requirement {quoted(OS_KEY)} is written from the node class's AMI family (linux, or windows for "
                "windows20XX), so that a pool's nodes run their image's OS; it cannot be required here"
            )
        out = dict(data)
        for key, alias in SHORTCUTS.items():
            if key not in keys:
                continue
            name = next((n for n in (alias, to_snake(alias)) if n in data), None)
            if name is not None and data[name] is not None:
                raise ValueError(
                    f"requirement {quoted(key)} takes the place of {alias} ({quoted(data[name])}); set one of them: "
                    f"the requirement (e.g. for minValues) and leave {alias} out, or {alias} alone"
                )
            out.pop(alias, None)
            out[to_snake(alias)] = None
        return out

    def listed(self, key: str) -> list[str] | None:
        """The values the pool's In requirements on ``key`` allow (None: no In requirement limits them)."""
        found: list[str] | None = None
        for requirement in self._requirements("linux"):
            if requirement["key"] == key and requirement["operator"] == "In":
                values = requirement["values"]
                found = values if found is None else [v for v in found if v in values]
        return found

    @field_validator("name", "node_class")
    @classmethod
    def _k8s_name(cls, value: str) -> str:
        return kubernetes_name(value)

    @field_validator("expire_after", "consolidate_after")
    @classmethod
    def _duration(cls, value: str) -> str:
        parse_duration(value)
        return value

    @field_validator("termination_grace_period")
    @classmethod
    def _grace(cls, value: str | None) -> str | None:
        if value is not None and not _GRACE_PERIOD.fullmatch(value):
            raise ValueError(
                "must be a duration like 30s, 5m or 1h30m (the CRD's pattern; no 'Never': null leaves it unset)"
            )
        return value

    def manifest(self, *, os: str = "linux") -> dict[str, Any]:
        """The NodePool (karpenter.sh/v1); ``os``: the kubernetes.io/os its node class launches
        (the class's ``operating_system``). A pool of a file is its object as written (specs.written)."""
        if self.written is not None:
            return filled(self.written)
        body: dict[str, Any] = {
            "template": self._template(os),
            **({"limits": limits} if (limits := self.emitted_limits) else {}),
            "disruption": {
                "consolidationPolicy": self.consolidation_policy,
                "consolidateAfter": self.consolidate_after,
                "budgets": [b.manifest() for b in self.budgets],
            },
        }
        if self.weight is not None:
            body["weight"] = self.weight
        if self.replicas is not None:
            body["replicas"] = self.replicas
        metadata: dict[str, Any] = {"name": self.name}
        metadata |= {"labels": dict(self.object_labels)} if self.object_labels else {}
        metadata |= {"annotations": dict(self.object_annotations)} if self.object_annotations else {}
        return {"apiVersion": NODE_POOL_API_VERSION, "kind": "NodePool", "metadata": metadata, "spec": body}

    def _template(self, os: str) -> dict[str, Any]:
        """spec.template: what every node of the pool gets."""
        template: dict[str, Any] = {
            "spec": {
                "nodeClassRef": {"group": NODE_CLASS_GROUP, "kind": NODE_CLASS_KIND, "name": self.node_class},
                "requirements": self._requirements(os),
                "expireAfter": self.expire_after,
                # The user's bound on every drain of a running cluster (a destroy bounds its own, see teardown).
                **({"terminationGracePeriod": tgp} if (tgp := self.termination_grace_period) is not None else {}),
            }
        }
        if self.taints:
            template["spec"]["taints"] = [t.manifest() for t in self.taints]
        if self.startup_taints:
            template["spec"]["startupTaints"] = [t.manifest() for t in self.startup_taints]
        metadata = {"labels": dict(self.labels), "annotations": dict(self.annotations)}
        if any(metadata.values()):
            template["metadata"] = {k: v for k, v in metadata.items() if v}
        return template

    def _requirements(self, os: str) -> list[dict[str, Any]]:
        """The requirements the shortcut fields write (those not null), kubernetes.io/os, then the pool's own."""
        shortcuts: list[tuple[str, str, Sequence[str] | None]] = [
            ("karpenter.sh/capacity-type", "In", self.capacity_types),
            ("kubernetes.io/arch", "In", self.architectures),
            (OS_KEY, "In", [os]),
            ("karpenter.k8s.aws/instance-category", "In", self.instance_categories),
            (
                "karpenter.k8s.aws/instance-generation",
                "Gt",
                None if self.min_instance_generation is None else [str(self.min_instance_generation)],
            ),
        ]
        return [
            *({"key": key, "operator": op, "values": list(values)} for key, op, values in shortcuts if values),
            *(r.manifest() for r in self.requirements),
        ]


# A NodeClaim's resources are hash:"ignore" too; no NodePool of karpenter.sh/v1 has them in its template
# (the 1.14.1 CRD), and this spec never writes them.
_NOT_WRITTEN = {
    "spec.template.spec.resources": FieldChange(
        Change.DYNAMIC_DRIFT, "spec.template.spec.resources", NODE_POOL_REQUIREMENTS
    )
}
# What `make review` reads: the NodePool spec fields that never drift, and the spec.template.spec fields that
# drift only the nodes that no longer match them (every other template field drifts every node of the pool).
POOL_BEHAVIORAL = manifest_keys(NodePoolSpec, Change.BEHAVIORAL, "spec.")
POOL_DYNAMIC = manifest_keys(NodePoolSpec, Change.DYNAMIC_DRIFT, "spec.template.spec.", _NOT_WRITTEN)
