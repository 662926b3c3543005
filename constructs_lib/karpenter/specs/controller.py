"""Typed settings of the Karpenter controller (the ``karpenter`` chart's values), the Karpenter
construct's ``controller`` prop. Every field reaches a key of Karpenter 1.14's chart values; a field left
unset keeps the chart's default and is not written (the chart's values do not change for it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, StrictBool, field_validator, model_validator

from ..quantities import GO_DURATION, parse_quantity
from .base import CamelModel
from .change import CHART_POD_TEMPLATE, Change, change

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


_ON_BY_DEFAULT = ", ".join(g for g, on in FEATURE_GATE_DEFAULTS.items() if on) or "none"
# Why the controller's resources are set (the chart's values.yaml leaves controller.resources empty).
_RESOURCES_DIFFER = (
    "Karpenter's documentation runs the controller with 1 CPU and 1Gi, requests = limits; the chart's empty resources "
    "make it a BestEffort pod (evicted first) and, on Fargate, the smallest pod size (0.25 vCPU, 0.5 GB)"
)
# Fargate's largest pod: 16 vCPU, 120 GiB.
FARGATE_MAX_CPU, FARGATE_MAX_MEMORY_GIB = 16, 120


class ControllerSpec(CamelModel):
    """How the Karpenter controller runs."""

    REFERENCE_NOTE: ClassVar[str] = "the Karpenter controller"

    feature_gates: dict[
        FeatureGate,
        StrictBool,  # (true or false: not "yes", 1 or "false", which the chart would pass on as strings)
    ] = Field(
        default_factory=dict,
        description="Karpenter feature gates to set (settings.featureGates); unset gates keep the chart's default "
        f"(on by default: {_ON_BY_DEFAULT}).",
        json_schema_extra=change(Change.RESTARTS_CONTROLLER, "chart value settings.featureGates", CHART_POD_TEMPLATE),
        examples=[{"spotToSpotConsolidation": True}],
    )
    batch_max_duration: str | None = Field(
        None,
        description="Longest batching window for pending pods (settings.batchMaxDuration; chart: 10s).",
        json_schema_extra=change(
            Change.RESTARTS_CONTROLLER, "chart value settings.batchMaxDuration", CHART_POD_TEMPLATE
        ),
        examples=["20s"],
    )
    batch_idle_duration: str | None = Field(
        None,
        description="A window ends after this long without new pods (settings.batchIdleDuration; chart: 1s).",
        json_schema_extra=change(
            Change.RESTARTS_CONTROLLER, "chart value settings.batchIdleDuration", CHART_POD_TEMPLATE
        ),
        examples=["2s"],
    )
    zonal_shift: bool | None = Field(
        None,
        description="Respect EKS zonal shifts when launching nodes (settings.enableZonalShift; chart: false).",
        json_schema_extra=change(
            Change.RESTARTS_CONTROLLER, "chart value settings.enableZonalShift", CHART_POD_TEMPLATE
        ),
    )
    log_level: Literal["debug", "info", "error"] | None = Field(
        None,
        description="Controller log level (logLevel; chart: info).",
        json_schema_extra=change(Change.RESTARTS_CONTROLLER, "chart value logLevel", CHART_POD_TEMPLATE),
    )
    cpu: str = Field(
        "1",
        description="CPU of each controller replica (requests = limits: guaranteed QoS).",
        json_schema_extra=change(
            Change.RESTARTS_CONTROLLER,
            "chart value controller.resources",
            CHART_POD_TEMPLATE,
            upstream="controller.resources.requests.cpu (and controller.resources.limits.cpu)",
            differs=_RESOURCES_DIFFER,
        ),
        examples=["2"],
    )
    memory: str = Field(
        "1Gi",
        description="Memory of each controller replica (requests = limits).",
        json_schema_extra=change(
            Change.RESTARTS_CONTROLLER,
            "chart value controller.resources",
            CHART_POD_TEMPLATE,
            upstream="controller.resources.requests.memory (and controller.resources.limits.memory)",
            differs=_RESOURCES_DIFFER,
        ),
        examples=["2Gi"],
    )

    chart_values: dict[str, Any] = Field(
        default_factory=dict,
        description="Any other value of the release's karpenter chart, deep-merged over the values the app writes "
        "(lists the app writes keep its entries, yours added after them), checked against the chart values schema "
        "of karpenterVersion (an unknown key or a wrong type is refused). A value a setting writes (clusterName, the "
        "queue, the service account and its role, controller.featureGates, controller.cpu, ...) is refused here, "
        "naming that setting; the app's replicas, podDisruptionBudget and priorityClassName are defaults you may "
        "override. The review says which changed values roll the controller's pods.",
        json_schema_extra=change(
            Change.RESTARTS_CONTROLLER,
            "the karpenter chart's values (any key)",
            CHART_POD_TEMPLATE
            + "; a value rendered outside the pod template (replicas, strategy, podDisruptionBudget, serviceMonitor, "
            "the service account's or Service's annotations, additionalLabels, ...) changes its object only, which the "
            "review says",
        ),
        examples=[{"settings": {"vmMemoryOverheadPercent": 0.1}, "podAnnotations": {"example.com/team": "platform"}}],
    )

    @field_validator("batch_max_duration", "batch_idle_duration")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None and not GO_DURATION.fullmatch(value):
            raise ValueError("must be a duration like 10s, 1m30s or 500ms")
        return value

    @field_validator("cpu", "memory")
    @classmethod
    def _quantity(cls, value: str) -> str:
        try:
            amount = parse_quantity(value)
        except ValueError as err:
            raise ValueError(f"'{value}' {err}") from None
        if amount <= 0:
            raise ValueError(f"'{value}' must be more than zero")
        return value

    @model_validator(mode="after")
    def _enough_to_run(self) -> ControllerSpec:
        if parse_quantity(self.cpu) < parse_quantity("100m") or parse_quantity(self.memory) < parse_quantity("256Mi"):
            raise ValueError(
                f"cpu {self.cpu} / memory {self.memory} is too little for the controller (at least "
                "100m and 256Mi; upstream recommends 1 and 1Gi)"
            )
        return self

    def fits_fargate(self) -> bool:
        return parse_quantity(self.cpu) <= FARGATE_MAX_CPU and parse_quantity(self.memory) <= parse_quantity(
            f"{FARGATE_MAX_MEMORY_GIB}Gi"
        )

    def settings(self) -> dict[str, object]:
        """The chart's ``settings`` this spec sets."""
        out: dict[str, object] = {}
        if self.feature_gates:
            out["featureGates"] = dict(self.feature_gates)
        if self.batch_max_duration is not None:
            out["batchMaxDuration"] = self.batch_max_duration
        if self.batch_idle_duration is not None:
            out["batchIdleDuration"] = self.batch_idle_duration
        if self.zonal_shift is not None:
            out["enableZonalShift"] = self.zonal_shift
        return out

    def resources(self) -> dict[str, dict[str, str]]:
        quantities = {"cpu": self.cpu, "memory": self.memory}
        return {"requests": dict(quantities), "limits": dict(quantities)}
