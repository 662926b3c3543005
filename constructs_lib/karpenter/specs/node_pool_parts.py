"""The parts of a NodePool's spec: disruption budgets (spec.disruption.budgets), scheduling requirements
(spec.template.spec.requirements) and taints (spec.template.spec.taints, startupTaints), each checked as the
Karpenter 1.14.1 CRD and Kubernetes check it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from .base import (
    QUALIFIED_NAME,
    CamelModel,
    ascii_int,
    label_key,
    optional_match,
    quoted,
)
from .crd import BUDGET_SCHEDULE, TAINT, accepts
from .ec2 import INSTANCE_FAMILY, INSTANCE_TYPE, unknown_instance_type

# A taint's value on a node (k8s.io/api core validation: a label value), not empty (the CRD's pattern).
_TAINT_VALUE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", re.ASCII)
# A requirement's value (a label value: empty, or as a taint's value).
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?", re.ASCII)
_BUDGET_DURATION = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$")
_CRON = re.compile(r"^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|(\S+\s+){4}\S+)$", re.ASCII)


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
        if value is not None and not (_CRON.fullmatch(value) and accepts(BUDGET_SCHEDULE, value)):
            raise ValueError(
                "must be a cron expression of 5 fields (e.g. '0 9 * * mon-fri') or "
                "@hourly, @daily, @weekly, @monthly, @yearly"
            )
        return value

    @field_validator("duration")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        return optional_match(value, _BUDGET_DURATION, "must be hours and/or minutes like 8h, 30m or 1h30m")

    @model_validator(mode="after")
    def _schedule_with_duration(self) -> DisruptionBudgetSpec:
        if (self.schedule is None) != (self.duration is None):
            raise ValueError("a disruption budget needs schedule and duration together, or neither")
        return self

    def manifest(self) -> dict[str, Any]:
        """One entry of spec.disruption.budgets."""
        budget: dict[str, Any] = {"nodes": self.nodes}
        if self.reasons is not None:
            budget["reasons"] = list(self.reasons)
        if self.schedule is not None:
            budget["schedule"] = self.schedule
            budget["duration"] = self.duration
        return budget


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
        # Upstream's CRD puts the label-value pattern on the values list, where the API server does not apply it;
        # Karpenter's own validation of the pool's requirements refuses such a value (the pool then launches
        # nothing), and no node label could have it.
        for value in self.values:
            if not _LABEL_VALUE.fullmatch(value):
                raise ValueError(
                    f"requirement {quoted(self.key)}: value {quoted(value)} is not a label value (at most 63 "
                    "characters of a-z, A-Z, 0-9, '-', '_', '.', beginning and ending with a letter or digit)"
                )
        if self.operator == "In" and self.min_values is not None and len(self.values) < self.min_values:
            raise ValueError(
                f"requirement {quoted(self.key)} has minValues {self.min_values} but only {len(self.values)} "
                "value(s); Karpenter needs at least as many values as minValues"
            )
        return self

    def manifest(self) -> dict[str, Any]:
        """One entry of spec.template.spec.requirements."""
        requirement: dict[str, Any] = {"key": self.key, "operator": self.operator}
        if self.values:
            requirement["values"] = list(self.values)
        if self.min_values is not None:
            requirement["minValues"] = self.min_values
        return requirement


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
        if not (QUALIFIED_NAME.fullmatch(value) and accepts(TAINT, value)):
            raise ValueError("must be a Kubernetes qualified name like example.com/dedicated")
        return value

    @field_validator("value")
    @classmethod
    def _value(cls, value: str | None) -> str | None:
        # The CRD's pattern (the key's) refuses an empty value; the node the taint goes on takes a label value only
        # (at most 63 characters, no '/').
        if value is not None and not (accepts(TAINT, value) and _TAINT_VALUE.fullmatch(value)):
            raise ValueError(
                "must be 1 to 63 characters of a-z, A-Z, 0-9, '-', '_', '.', beginning and ending with a letter "
                "or digit (leave value out for none)"
            )
        return value

    def manifest(self) -> dict[str, Any]:
        """One entry of spec.template.spec.taints (or startupTaints)."""
        return {k: v for k, v in (("key", self.key), ("value", self.value), ("effect", self.effect)) if v is not None}
