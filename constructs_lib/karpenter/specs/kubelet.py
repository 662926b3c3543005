"""The kubelet settings of a node class's nodes (EC2NodeClass spec.kubelet)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from ..quantities import GO_DURATION
from .base import CamelModel, non_negative_quantities, quoted
from .change import EC2_NODE_CLASS_HASH, Change, change

EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
RESERVED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pid")
_Signal = Literal[
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
]
_Reserved = Literal["cpu", "memory", "ephemeral-storage", "pid"]
# An eviction threshold: a percentage (0-100, two decimals) or a Kubernetes quantity (the CRD's pattern).
_THRESHOLD = re.compile(r"((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%)|([0-9]+(\.[0-9]+)?([KMGTPE]i|[kMGTPE])?)", re.ASCII)
_IPV4 = re.compile(r"((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])")


# The kubelet's imageGCHighThresholdPercent and imageGCLowThresholdPercent when unset.
KUBELET_IMAGE_GC_DEFAULTS = (85, 80)


def _or_default(value: int | None, which: int) -> int:
    return KUBELET_IMAGE_GC_DEFAULTS[which] if value is None else value


def _shown_threshold(value: int | None, which: int) -> str:
    return f"{KUBELET_IMAGE_GC_DEFAULTS[which]}: unset, the kubelet's default" if value is None else str(value)


# Every kubelet setting is part of the EC2NodeClass hash: a change drifts every node of the class.
_DRIFTS_EVERY_NODE = change(Change.STATIC_DRIFT, "spec.kubelet", EC2_NODE_CLASS_HASH)


class KubeletSpec(CamelModel):
    """Kubelet settings of the nodes a node class launches (EC2NodeClass spec.kubelet). Changing them
    makes the class's nodes drift: Karpenter replaces them, within the pools' disruption budgets."""

    max_pods: int | None = Field(
        None,
        ge=1,
        description="Most pods per node (unset: the AMI's ENI-based limit).",
        json_schema_extra=_DRIFTS_EVERY_NODE,
    )
    pods_per_core: int | None = Field(
        None,
        ge=1,
        description="Most pods per vCPU (the lower of this and maxPods applies; not on Bottlerocket).",
        json_schema_extra=_DRIFTS_EVERY_NODE,
    )
    system_reserved: dict[_Reserved, str] = Field(
        default_factory=dict,
        description="Resources kept for the OS (cpu, memory, ephemeral-storage, pid).",
        json_schema_extra=_DRIFTS_EVERY_NODE,
    )
    kube_reserved: dict[_Reserved, str] = Field(
        default_factory=dict,
        description="Resources kept for kubelet and the container runtime.",
        json_schema_extra=_DRIFTS_EVERY_NODE,
    )
    eviction_hard: dict[_Signal, str] = Field(
        default_factory=dict,
        description="Hard eviction thresholds per signal (a percentage or a quantity).",
        json_schema_extra=_DRIFTS_EVERY_NODE,
    )
    eviction_soft: dict[_Signal, str] = Field(
        default_factory=dict,
        description="Soft eviction thresholds; each needs its evictionSoftGracePeriod.",
        json_schema_extra=_DRIFTS_EVERY_NODE,
    )
    eviction_soft_grace_period: dict[_Signal, str] = Field(
        default_factory=dict,
        description="How long a soft threshold may be exceeded before eviction (a duration).",
        json_schema_extra=_DRIFTS_EVERY_NODE,
    )
    eviction_max_pod_grace_period: int | None = Field(
        None,
        ge=0,
        description="Longest pod termination grace period (seconds) honoured on a soft eviction.",
        json_schema_extra=_DRIFTS_EVERY_NODE,
    )
    image_gc_high_threshold_percent: int | None = Field(
        None,
        ge=0,
        le=100,
        alias="imageGCHighThresholdPercent",
        description="Disk usage that starts image garbage collection (above the low threshold).",
        json_schema_extra=_DRIFTS_EVERY_NODE,
    )
    image_gc_low_threshold_percent: int | None = Field(
        None,
        ge=0,
        le=100,
        alias="imageGCLowThresholdPercent",
        description="Disk usage image garbage collection frees down to.",
        json_schema_extra=_DRIFTS_EVERY_NODE,
    )
    cluster_dns: list[str] = Field(
        default_factory=list,
        alias="clusterDNS",
        description="DNS server IPs for pods (unset: the cluster's).",
        json_schema_extra=_DRIFTS_EVERY_NODE,
    )
    cpu_cfs_quota: bool | None = Field(
        None,
        alias="cpuCFSQuota",
        description="Enforce CPU limits with CFS quota (kubelet default: true).",
        json_schema_extra=_DRIFTS_EVERY_NODE,
    )

    @field_validator("system_reserved", "kube_reserved")
    @classmethod
    def _reserved(cls, value: dict[str, str]) -> dict[str, str]:
        return non_negative_quantities(value)

    @field_validator("eviction_hard", "eviction_soft", "eviction_soft_grace_period")
    @classmethod
    def _per_signal(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        pattern, form = (
            (GO_DURATION, "a duration like 1m30s")
            if info.field_name == "eviction_soft_grace_period"
            else (_THRESHOLD, "a percentage like 10% or a quantity like 500Mi")
        )
        for signal, text in value.items():
            if not pattern.fullmatch(text):
                raise ValueError(f"{signal} {quoted(text)} must be {form}")
        return value

    @field_validator("cluster_dns")
    @classmethod
    def _dns(cls, value: list[str]) -> list[str]:
        for address in value:
            if not _IPV4.fullmatch(address):
                raise ValueError(f"{quoted(address)} is not an IPv4 address")
        return value

    @model_validator(mode="after")
    def _pairs(self) -> KubeletSpec:
        if set(self.eviction_soft) != set(self.eviction_soft_grace_period):
            raise ValueError(
                "evictionSoft and evictionSoftGracePeriod must name the same signals (soft: "
                f"{', '.join(sorted(self.eviction_soft)) or 'none'}; grace periods: "
                f"{', '.join(sorted(self.eviction_soft_grace_period)) or 'none'})"
            )
        # The kubelet refuses to start unless low < high, with its defaults for an unset one
        # (kubernetes pkg/kubelet/apis/config/validation/validation.go, ValidateKubeletConfiguration;
        # defaults: pkg/kubelet/apis/config/v1beta1/defaults.go): Karpenter passes only what is set.
        high, low = self.image_gc_high_threshold_percent, self.image_gc_low_threshold_percent
        if (high is not None or low is not None) and _or_default(high, 0) <= _or_default(low, 1):
            raise ValueError(
                f"imageGCHighThresholdPercent ({_shown_threshold(high, 0)}) must be greater than "
                f"imageGCLowThresholdPercent ({_shown_threshold(low, 1)}), or the kubelet does not start"
            )
        return self

    def manifest(self) -> dict[str, object]:
        """The set fields, as spec.kubelet."""
        return self.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True)
