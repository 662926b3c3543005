"""Typed, validated specifications of Karpenter's Kubernetes objects: the props of the
:class:`~constructs_lib.karpenter.Karpenter` construct's node classes and node pools.

They validate what Karpenter's v1 CRDs and the app's lifecycle need (names, durations, quantities,
label keys Karpenter restricts, bounded drains), so a bad value fails when the spec is built, not when
the API server or a destroy refuses it. Field names are snake_case in Python and camelCase in JSON
(``NodePoolSpec(capacity_types=[...])`` or ``{"capacityTypes": [...]}``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import Field, field_validator, model_validator

from .names import NODE_OVERLAY_API_VERSION, NODE_OVERLAY_AWS_LABELS
from .quantities import parse_duration
from .specs.base import (
    QUALIFIED_NAME,
    CamelModel,
    IntOrString,
    ascii_int,
    kubernetes_name,
    label_key,
    label_value,
    non_negative_quantities,
    optional_match,
    quoted,
)
from .specs.ec2 import INSTANCE_CATEGORIES, INSTANCE_FAMILY, INSTANCE_TYPE, unknown_instance_type
from .specs.node_class import NodeClassSpec

_BUDGET_DURATION = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$")
_CRON = re.compile(r"^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|(\S+\s+){4}\S+)$", re.ASCII)
# Requirement keys the NodePool fields produce (key -> field).
_STRUCTURED_REQUIREMENTS = {
    "karpenter.sh/capacity-type": "capacityTypes",
    "kubernetes.io/arch": "architectures",
    "kubernetes.io/os": "the node class's AMI family (linux, or windows for windows20XX)",
    "karpenter.k8s.aws/instance-category": "instanceCategories",
    "karpenter.k8s.aws/instance-generation": "minInstanceGeneration",
}
# NodePool spec.template.spec.terminationGracePeriod (Karpenter 1.14.1 CRD karpenter.sh_nodepools.yaml:
# pattern ^([0-9]+(s|m|h))+$, optional; unset = drains wait for every PodDisruptionBudget, indefinitely).
_GRACE_PERIOD = re.compile(r"^([0-9]+(s|m|h))+$")
# The default: EKS Auto Mode's built-in NodePools bound every drain at 24h. A destroy does not depend on
# it: the teardown safety net's drain bound terminates what is left of this stack's nodes after 8 minutes.
DEFAULT_TERMINATION_GRACE_PERIOD = "24h"


CapacityType = Literal["spot", "on-demand", "reserved"]
Architecture = Literal["amd64", "arm64"]
DEFAULT_CAPACITY_TYPES: tuple[CapacityType, ...] = ("spot", "on-demand")
DEFAULT_ARCHITECTURES: tuple[Architecture, ...] = ("amd64", "arm64")
# settings.featureGates of the Karpenter 1.14 chart (values.yaml), and the chart's defaults: the one table.
FeatureGate = Literal[
    "spotToSpotConsolidation", "nodeRepair", "nodeOverlay", "staticCapacity", "capacityBuffer", "reservedCapacity"
]
FEATURE_GATE_DEFAULTS: dict[FeatureGate, bool] = {
    "spotToSpotConsolidation": False,
    "nodeRepair": False,
    "nodeOverlay": False,
    "staticCapacity": False,
    "capacityBuffer": False,
    "reservedCapacity": True,
}


def gate_on(feature_gates: Mapping[FeatureGate, bool], name: FeatureGate) -> bool:
    """Whether a feature gate is on: as set, else the chart's default."""
    return feature_gates.get(name, FEATURE_GATE_DEFAULTS[name])


class DisruptionBudgetSpec(CamelModel):
    nodes: str = Field("10%", description="Nodes that may be disrupted at once: a count or a percentage.")
    reasons: list[Literal["Underutilized", "Empty", "Drifted"]] | None = Field(
        None, description="Disruption reasons the budget applies to; unset = all."
    )
    schedule: str | None = Field(None, description="Cron schedule (UTC) when the budget is active; needs duration.")
    duration: str | None = Field(None, description="How long the budget stays active after each schedule hit.")

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, value: str) -> str:
        if not re.fullmatch(r"^((100|[0-9]{1,2})%|[0-9]+)$", value):
            raise ValueError("must be a whole number or a percentage 0%-100%")
        return value

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str | None) -> str | None:
        return optional_match(
            value,
            _CRON,
            "must be a cron expression of 5 fields (e.g. '0 9 * * mon-fri') or "
            "@hourly, @daily, @weekly, @monthly, @yearly",
        )

    @field_validator("duration")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        return optional_match(value, _BUDGET_DURATION, "must be hours and/or minutes like 8h, 30m or 1h30m")

    @model_validator(mode="after")
    def _schedule_with_duration(self) -> DisruptionBudgetSpec:
        if (self.schedule is None) != (self.duration is None):
            raise ValueError("a disruption budget needs schedule and duration together, or neither")
        return self


class RequirementSpec(CamelModel):
    """An extra scheduling requirement (Kubernetes node selector requirement)."""

    key: str = Field(description="Node label key, e.g. karpenter.k8s.aws/instance-family.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"] = Field(
        description="How the values apply."
    )
    values: list[str] = Field(default_factory=list, description="Values (none for Exists/DoesNotExist).")
    min_values: int | None = Field(None, ge=1, le=50, description="Minimum distinct values Karpenter must keep.")

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        return label_key(value)

    @model_validator(mode="after")
    def _values_fit_operator(self) -> RequirementSpec:
        operator_values(self.key, self.operator, self.values)
        if self.operator == "In" and self.min_values is not None and len(self.values) < self.min_values:
            raise ValueError(
                f"requirement {quoted(self.key)} has minValues {self.min_values} but only {len(self.values)} "
                "value(s); Karpenter needs at least as many values as minValues"
            )
        return self


def operator_values(key: str, operator: str, values: Sequence[str]) -> None:
    """The values a requirement's operator needs (the CRDs' rules), and EC2 names where the key is one."""
    if operator in ("In", "NotIn") and not values:
        raise ValueError(f"requirement {quoted(key)} with operator {operator} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        raise ValueError(f"requirement {quoted(key)} with operator {operator} takes no values")
    names = {
        "node.kubernetes.io/instance-type": (INSTANCE_TYPE, "instance type like m7g.large"),
        "karpenter.k8s.aws/instance-family": (INSTANCE_FAMILY, "instance family like m7g"),
    }
    if key in names:
        pattern, what = names[key]
        bad = [v for v in values if not pattern.fullmatch(v)]
        if bad:
            raise ValueError(f"requirement {quoted(key)}: {', '.join(quoted(v) for v in bad)} is no EC2 {what}")
        for v in values:  # of the right form: is it one EC2 has?
            unknown = unknown_instance_type(v, families=key == "karpenter.k8s.aws/instance-family")
            if unknown:
                raise ValueError(f"requirement {quoted(key)}: {quoted(v)} {unknown}")
    if operator in ("Gt", "Lt", "Gte", "Lte") and (len(values) != 1 or not ascii_int(values[0])):
        raise ValueError(f"requirement {quoted(key)} with operator {operator} needs exactly one whole number")


class TaintSpec(CamelModel):
    key: str = Field(description="Taint key.")
    value: str | None = Field(None, description="Taint value.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(description="Taint effect.")

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        if not QUALIFIED_NAME.fullmatch(value):
            raise ValueError("must be a Kubernetes qualified name like example.com/dedicated")
        return value


class NodePoolSpec(CamelModel):
    """One NodePool: what Karpenter may launch for pending pods, and when it may remove it."""

    name: str = Field("default", description="Kubernetes name of the NodePool.")
    node_class: str = Field("default", description="Name of the EC2NodeClass (from nodeClasses) this pool uses.")
    capacity_types: list[CapacityType] = Field(
        default_factory=lambda: list(DEFAULT_CAPACITY_TYPES),
        min_length=1,
        description="karpenter.sh/capacity-type values; reserved needs the node class's "
        "capacityReservationSelectorTerms (Karpenter then prefers reservations, and falls back to the "
        "other types listed).",
    )
    architectures: list[Architecture] = Field(
        default_factory=lambda: list(DEFAULT_ARCHITECTURES), min_length=1, description="kubernetes.io/arch values."
    )
    instance_categories: list[str] = Field(
        default_factory=lambda: ["c", "m", "r"],
        min_length=1,
        description="karpenter.k8s.aws/instance-category values (EC2 family letters).",
    )
    min_instance_generation: int = Field(
        2, ge=0, description="Only instance generations greater than this (karpenter.k8s.aws/instance-generation Gt)."
    )
    requirements: list[RequirementSpec] = Field(
        default_factory=list, description="Extra requirements, after the ones the fields above produce."
    )
    limits: dict[str, IntOrString] = Field(
        default_factory=lambda: {"cpu": "1000", "memory": "1000Gi"},
        description="Upper bound on the resources of all nodes in the pool (Kubernetes quantities).",
    )
    weight: int | None = Field(None, ge=1, le=100, description="Priority among pools (higher first); unset = 0.")
    replicas: int | None = Field(
        None,
        ge=0,
        description="Static capacity: keep exactly this many nodes, whatever the pods (alpha; needs "
        "controller.featureGates.staticCapacity). Then only limits.nodes applies and no weight; a pool "
        "cannot switch between static and dynamic in place (the CRD refuses it): rename it to switch.",
    )
    expire_after: str = Field("720h", description="Replace nodes older than this (duration or Never).")
    termination_grace_period: str | None = Field(
        DEFAULT_TERMINATION_GRACE_PERIOD,
        description=(
            "Longest drain of a node (drift, expiry, consolidation, a deleted pool): after it, Karpenter deletes "
            "the remaining pods even past PodDisruptionBudgets and do-not-disrupt. Any duration the CRD accepts "
            "(30s, 90m, 1h30m); null leaves it unset, so drains wait for every budget indefinitely (upstream's "
            "default). A destroy bounds its own drains whatever this is. Part of the node template: changing it "
            "replaces the pool's nodes by drift."
        ),
    )
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] = Field(
        "WhenEmptyOrUnderutilized", description="Which nodes Karpenter may consolidate."
    )
    consolidate_after: str = Field("1m", description="Wait this long after a pod change before consolidating.")
    budgets: list[DisruptionBudgetSpec] = Field(
        default_factory=lambda: [DisruptionBudgetSpec()],
        max_length=50,
        description="Disruption budgets: how many nodes may be disrupted at once.",
    )
    labels: dict[str, str] = Field(default_factory=dict, description="Labels put on the pool's nodes.")
    taints: list[TaintSpec] = Field(default_factory=list, description="Taints put on the pool's nodes.")

    @field_validator("instance_categories")
    @classmethod
    def _categories(cls, value: list[str]) -> list[str]:
        unknown = [c for c in value if c not in INSTANCE_CATEGORIES]
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
        for key, label in value.items():
            label_key(key)
            label_value(label)
        return value

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

    @model_validator(mode="after")
    def _no_duplicate_requirement_keys(self) -> NodePoolSpec:
        for requirement in self.requirements:
            if requirement.key in _STRUCTURED_REQUIREMENTS:
                raise ValueError(
                    f"requirement {quoted(requirement.key)} is set by "
                    f"{_STRUCTURED_REQUIREMENTS[requirement.key]}; use that field instead"
                )
        return self

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


# amount (+0.1, -0.05) or a percentage (+10%, -10%, at most -100%).
_PRICE = re.compile(r"\d+(\.\d+)?", re.ASCII)
_PRICE_ADJUSTMENT = re.compile(r"[+-]\d*\.?\d+|\+\d*\.?\d+%|-\d{1,2}(\.\d+)?%|-100%", re.ASCII)
# Resources a NodeOverlay cannot add capacity of (the CRD refuses them: Karpenter computes them itself).
OVERLAY_RESTRICTED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")


class OverlayRequirementSpec(CamelModel):
    """Which instance types a NodeOverlay applies to (a node selector requirement, without minValues)."""

    key: str = Field(description="Label key, e.g. karpenter.k8s.aws/instance-family or karpenter.sh/nodepool.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"] = Field(
        description="How the values apply."
    )
    values: list[str] = Field(default_factory=list, description="Values (none for Exists/DoesNotExist).")

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        return label_key(value, aws_labels=NODE_OVERLAY_AWS_LABELS, node_pool_key=True)

    @field_validator("values")
    @classmethod
    def _values(cls, value: list[str]) -> list[str]:
        for item in value:
            label_value(item)
        return value

    @model_validator(mode="after")
    def _values_fit_operator(self) -> OverlayRequirementSpec:
        operator_values(self.key, self.operator, self.values)
        return self


class NodeOverlaySpec(CamelModel):
    """One NodeOverlay (alpha; needs controller.featureGates.nodeOverlay): changes what Karpenter assumes
    about matching instance types when it chooses one -- their price, or extra capacity of an extended
    resource. It changes no running node."""

    name: str = Field(description="Kubernetes name of the NodeOverlay.")
    requirements: list[OverlayRequirementSpec] = Field(
        default_factory=list,
        max_length=100,
        description="Instance types it applies to (all when empty); karpenter.sh/nodepool limits it to pools.",
    )
    price: str | None = Field(None, description='Price to assume (USD per hour), e.g. "0.25".')
    price_adjustment: str | None = Field(
        None, description="Change of the price: an amount (+0.1, -0.05) or a percentage (+10%, -10%, -100%)."
    )
    capacity: dict[str, IntOrString] = Field(
        default_factory=dict,
        description='Extra capacity of extended resources per node (e.g. {"example.com/device": "2"}); not '
        "cpu, memory, ephemeral-storage or pods.",
    )
    weight: int | None = Field(
        None, ge=1, le=10000, description="Which overlay wins where several match (higher first)."
    )

    @field_validator("name")
    @classmethod
    def _k8s_name(cls, value: str) -> str:
        return kubernetes_name(value)

    @field_validator("price")
    @classmethod
    def _price(cls, value: str | None) -> str | None:
        return optional_match(value, _PRICE, "must be a price like 0.25 (USD per hour)")

    @field_validator("price_adjustment")
    @classmethod
    def _adjustment(cls, value: str | None) -> str | None:
        return optional_match(
            value,
            _PRICE_ADJUSTMENT,
            "must be a signed amount like +0.1 or -0.05, or a percentage like +10% or -10% (at most -100%)",
        )

    @field_validator("capacity")
    @classmethod
    def _capacity(cls, value: dict[str, str]) -> dict[str, str]:
        restricted = [r for r in value if r in OVERLAY_RESTRICTED_RESOURCES]
        if restricted:
            raise ValueError(
                f"{', '.join(restricted)}: Karpenter computes {', '.join(OVERLAY_RESTRICTED_RESOURCES)} "
                "itself; an overlay adds capacity of extended resources only"
            )
        for resource in value:
            if not QUALIFIED_NAME.fullmatch(resource):
                raise ValueError(f"{quoted(resource)} is not a resource name like example.com/device")
        return non_negative_quantities(value)

    @model_validator(mode="after")
    def _effect(self) -> NodeOverlaySpec:
        if self.price is not None and self.price_adjustment is not None:
            raise ValueError("a node overlay sets price or priceAdjustment, not both")
        if self.price is None and self.price_adjustment is None and not self.capacity:
            raise ValueError("a node overlay needs price, priceAdjustment or capacity (it would change nothing)")
        return self

    def manifest(self) -> dict[str, object]:
        return {
            "apiVersion": NODE_OVERLAY_API_VERSION,
            "kind": "NodeOverlay",
            "metadata": {"name": self.name},
            "spec": {
                "requirements": [r.model_dump(by_alias=True, exclude_defaults=True) for r in self.requirements],
                **self.model_dump(
                    by_alias=True,
                    exclude_none=True,
                    exclude_defaults=True,
                    include={"price", "price_adjustment", "capacity", "weight"},
                ),
            },
        }


def pool_problems(
    node_classes: Sequence[NodeClassSpec],
    node_pools: Sequence[NodePoolSpec],
    feature_gates: Mapping[FeatureGate, bool],
    node_overlays: Sequence[NodeOverlaySpec] = (),
) -> list[str]:
    """What makes pools, their classes and overlays unusable together: an unknown class, the reserved
    capacity type without reservations to launch into or with its gate off, static capacity or overlays
    with their gate off, a Windows pool that allows only arm64 (EKS's Windows AMIs are x86-64). One line
    per problem, each starting with the setting."""
    classes = {c.name: c for c in node_classes}
    problems = []
    if node_overlays and not gate_on(feature_gates, "nodeOverlay"):
        problems.append(
            f"nodeOverlays {', '.join(quoted(o.name) for o in node_overlays)}: Karpenter ignores node "
            "overlays unless controller.featureGates.nodeOverlay is true"
        )
    for pool in node_pools:
        node_class = classes.get(pool.node_class)
        if node_class is None:
            problems.append(
                f"nodePools {quoted(pool.name)} refers to nodeClass {quoted(pool.node_class)}, which is not in "
                f"nodeClasses ({', '.join(sorted(classes))})"
            )
            continue
        if "reserved" in pool.capacity_types:
            if not node_class.capacity_reservation_selector_terms:
                problems.append(
                    f"nodePools {quoted(pool.name)} allows the reserved capacity type, but its nodeClass "
                    f"{quoted(node_class.name)} has no capacityReservationSelectorTerms: it would launch nothing "
                    "reserved"
                )
            if not gate_on(feature_gates, "reservedCapacity"):
                problems.append(
                    f"nodePools {quoted(pool.name)} allows the reserved capacity type, which Karpenter ignores "
                    "while controller.featureGates.reservedCapacity is false"
                )
        if node_class.windows and "amd64" not in pool.architectures:
            problems.append(
                f"nodePools {quoted(pool.name)} uses the Windows nodeClass {quoted(node_class.name)} but allows only "
                "arm64: EKS's Windows AMIs are amd64 only, so it would launch nothing"
            )
    static = [p.name for p in node_pools if p.replicas is not None]
    if static and not gate_on(feature_gates, "staticCapacity"):
        problems.append(
            f"nodePools {', '.join(quoted(n) for n in static)} set replicas (static capacity), which "
            "Karpenter ignores unless controller.featureGates.staticCapacity is true"
        )
    return problems
