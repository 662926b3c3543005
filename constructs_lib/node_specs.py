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
from typing import ClassVar, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator
from pydantic.alias_generators import to_camel

from .names import (
    NODE_OVERLAY_API_VERSION,
    NODE_OVERLAY_AWS_LABELS,
    RESTRICTED_TAG_KEYS,
    RESTRICTED_TAG_PREFIX,
)
from .quantities import GO_DURATION, parse_duration
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
from .specs.ec2 import (
    DATA_DEVICE,
    DATA_VOLUME_FIELDS,
    INSTANCE_CATEGORIES,
    INSTANCE_FAMILY,
    INSTANCE_TYPE,
    MAX_TAG_KEY,
    MAX_TAG_VALUE,
    MAX_VOLUME_GIB,
    ROOT_VOLUME_FIELDS,
    check_volume,
    ec2_id,
    ec2_tag_characters,
    unknown_instance_type,
)

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


# What each AMI family boots from (Karpenter 1.14's amifamily defaults): the device of the volume that
# holds images, logs and pod storage, and the size of the AMI's snapshot for it -- EC2 refuses a smaller
# volume at launch. Bottlerocket boots from a 4 GiB OS volume and keeps everything else on /dev/xvdb.
_WINDOWS = ("windows2019", "windows2022", "windows2025")
STORAGE_DEVICE = {
    "al2": "/dev/xvda",
    "al2023": "/dev/xvda",
    "bottlerocket": "/dev/xvdb",
    **{w: "/dev/sda1" for w in _WINDOWS},
}
SNAPSHOT_GIB = {"al2": 20, "al2023": 20, "bottlerocket": 20, **{w: 50 for w in _WINDOWS}}
BOTTLEROCKET_OS_VOLUME = {"deviceName": "/dev/xvda", "size": "4Gi"}


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


class KubeletSpec(CamelModel):
    """Kubelet settings of the nodes a node class launches (EC2NodeClass spec.kubelet). Changing them
    makes the class's nodes drift: Karpenter replaces them, within the pools' disruption budgets."""

    max_pods: int | None = Field(None, ge=1, description="Most pods per node (unset: the AMI's ENI-based limit).")
    pods_per_core: int | None = Field(
        None, ge=1, description="Most pods per vCPU (the lower of this and maxPods applies; not on Bottlerocket)."
    )
    system_reserved: dict[_Reserved, str] = Field(
        default_factory=dict, description="Resources kept for the OS (cpu, memory, ephemeral-storage, pid)."
    )
    kube_reserved: dict[_Reserved, str] = Field(
        default_factory=dict, description="Resources kept for kubelet and the container runtime."
    )
    eviction_hard: dict[_Signal, str] = Field(
        default_factory=dict, description="Hard eviction thresholds per signal (a percentage or a quantity)."
    )
    eviction_soft: dict[_Signal, str] = Field(
        default_factory=dict, description="Soft eviction thresholds; each needs its evictionSoftGracePeriod."
    )
    eviction_soft_grace_period: dict[_Signal, str] = Field(
        default_factory=dict, description="How long a soft threshold may be exceeded before eviction (a duration)."
    )
    eviction_max_pod_grace_period: int | None = Field(
        None, ge=0, description="Longest pod termination grace period (seconds) honoured on a soft eviction."
    )
    image_gc_high_threshold_percent: int | None = Field(
        None,
        ge=0,
        le=100,
        alias="imageGCHighThresholdPercent",
        description="Disk usage that starts image garbage collection (above the low threshold).",
    )
    image_gc_low_threshold_percent: int | None = Field(
        None,
        ge=0,
        le=100,
        alias="imageGCLowThresholdPercent",
        description="Disk usage image garbage collection frees down to.",
    )
    cluster_dns: list[str] = Field(
        default_factory=list, alias="clusterDNS", description="DNS server IPs for pods (unset: the cluster's)."
    )
    cpu_cfs_quota: bool | None = Field(
        None, alias="cpuCFSQuota", description="Enforce CPU limits with CFS quota (kubelet default: true)."
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


# Most tags one selector term may match on (the CRDs' maxProperties), and most terms of one kind.
MAX_SELECTOR_TAGS, MAX_SELECTOR_TERMS = 20, 30


def selector_tags(value: dict[str, str]) -> dict[str, str]:
    """Tags a selector term matches (a value '*' matches any value of the key)."""
    if len(value) > MAX_SELECTOR_TAGS:
        raise ValueError(f"a selector term matches at most {MAX_SELECTOR_TAGS} tags (has {len(value)})")
    for key, tag in value.items():
        if not key or not tag:
            raise ValueError(f"tag {quoted(key)}: empty keys and values select nothing (use '*' for any value)")
        ec2_tag_characters(key, tag)
        if len(key) > MAX_TAG_KEY or len(tag) > MAX_TAG_VALUE:  # no EC2 resource carries such a tag
            raise ValueError(
                f"tag {quoted(key)}: EC2 allows keys of at most {MAX_TAG_KEY} and values of at most "
                f"{MAX_TAG_VALUE} characters, so it would select nothing"
            )
    return value


def exactly_one(term: BaseModel, fields: tuple[str, ...], what: str) -> None:
    """A selector term selects by exactly one of ``fields`` (camelCase names in the message)."""
    chosen = [f for f in fields if getattr(term, f)]
    if len(chosen) != 1:
        names = [to_camel(f) for f in fields]
        raise ValueError(
            f"a {what} selector term selects by exactly one of {', '.join(names)} "
            f"(has {', '.join(to_camel(f) for f in chosen) or 'none'})"
        )


class SelectorTermSpec(CamelModel):
    """What selector terms share: an EC2 id of the term's kind (ID_KIND), tags to match."""

    ID_KIND: ClassVar[str]

    @field_validator("id", check_fields=False)
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        return ec2_id(cls.ID_KIND, value)

    @field_validator("tags", check_fields=False)
    @classmethod
    def _tags(cls, value: dict[str, str]) -> dict[str, str]:
        return selector_tags(value)


class SubnetTermSpec(SelectorTermSpec):
    """One more subnetSelectorTerms entry: a subnet by id, or subnets by tags."""

    id: str | None = Field(None, description="A subnet id (subnet-...).")
    tags: dict[str, str] = Field(default_factory=dict, description="Tags the subnets carry ('*': any value).")

    ID_KIND: ClassVar[str] = "subnet"

    @model_validator(mode="after")
    def _one(self) -> SubnetTermSpec:
        exactly_one(self, ("id", "tags"), "subnet")
        return self


class SecurityGroupTermSpec(SelectorTermSpec):
    """One more securityGroupSelectorTerms entry: a group by id or by name, or groups by tags."""

    id: str | None = Field(None, description="A security group id (sg-...).")
    name: str | None = Field(None, description="A security group name (its GroupName, not its Name tag).")
    tags: dict[str, str] = Field(default_factory=dict, description="Tags the groups carry ('*': any value).")

    ID_KIND: ClassVar[str] = "sg"

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and not 1 <= len(value) <= 255:
            raise ValueError("a security group name has 1 to 255 characters")
        return value

    @model_validator(mode="after")
    def _one(self) -> SecurityGroupTermSpec:
        exactly_one(self, ("id", "name", "tags"), "security group")
        return self


class CapacityReservationTermSpec(SelectorTermSpec):
    """One capacityReservationSelectorTerms entry: a reservation by id, or reservations by tags (and owner)
    or by instance match criteria."""

    id: str | None = Field(None, description="A capacity reservation id (cr-...).")
    tags: dict[str, str] = Field(default_factory=dict, description="Tags the reservations carry ('*': any value).")
    owner_id: str | None = Field(
        None,
        alias="ownerID",
        description="Account that owns the reservations (shared ones); with tags or instanceMatchCriteria.",
    )
    instance_match_criteria: Literal["open", "targeted"] | None = Field(
        None, description="open: reservations any matching instance may use; targeted: only instances naming them."
    )

    ID_KIND: ClassVar[str] = "cr"

    @field_validator("owner_id")
    @classmethod
    def _owner(cls, value: str | None) -> str | None:
        return optional_match(value, re.compile(r"[0-9]{12}"), "must be a 12-digit AWS account id")

    @model_validator(mode="after")
    def _one(self) -> CapacityReservationTermSpec:
        if self.id is not None and (self.tags or self.owner_id or self.instance_match_criteria):
            raise ValueError(
                "a capacity reservation selector term with an id takes no tags, ownerID or instanceMatchCriteria"
            )
        if self.id is None and not self.tags and self.instance_match_criteria is None:
            raise ValueError("a capacity reservation selector term needs an id, tags or instanceMatchCriteria")
        if self.owner_id is not None and not self.tags and self.instance_match_criteria is None:
            raise ValueError("ownerID narrows a selection: set tags or instanceMatchCriteria too")
        return self


class DataVolumeSpec(CamelModel):
    """An extra EBS volume attached to every node of the class (encrypted, deleted with the instance).
    It is attached, not formatted or mounted: the node's OS or a DaemonSet of yours uses it."""

    device_name: str = Field(description="Device name, /dev/xvdb-/dev/xvdz or /dev/sdb-/dev/sdz.")
    size_gib: int | None = Field(
        None, ge=1, le=MAX_VOLUME_GIB, description="GiB (unset with snapshotID: the snapshot's)."
    )
    volume_type: Literal["gp3", "gp2", "io1", "io2", "st1", "sc1"] = Field("gp3", description="EBS volume type.")
    iops: int | None = Field(None, description="Provisioned IOPS (gp3, io1, io2; same ranges as rootVolumeIops).")
    throughput: int | None = Field(None, description="gp3 throughput in MiB/s (125-1000, at most IOPS/4).")
    snapshot_id: str | None = Field(None, alias="snapshotID", description="Create the volume from this snapshot.")

    @field_validator("snapshot_id")
    @classmethod
    def _snapshot(cls, value: str | None) -> str | None:
        return ec2_id("snap", value)

    @field_validator("device_name")
    @classmethod
    def _device(cls, value: str) -> str:
        return optional_match(value, DATA_DEVICE, "must be /dev/xvdb to /dev/xvdz or /dev/sdb to /dev/sdz")

    @model_validator(mode="after")
    def _size(self) -> DataVolumeSpec:
        if self.size_gib is None and self.snapshot_id is None:
            raise ValueError("a data volume needs sizeGib or snapshotID")
        if self.size_gib is None and self.iops is not None:
            raise ValueError("iops needs sizeGib (EC2 checks IOPS against the volume's size)")
        # sized by its snapshot: gp3 throughput is checked against the IOPS (the included 3000), not the size
        check_volume(DATA_VOLUME_FIELDS, self.volume_type, self.size_gib, self.iops, self.throughput)
        return self

    @property
    def letter(self) -> str:
        """The device letter: /dev/sdf and /dev/xvdf name the same device."""
        return self.device_name[-1]


class NodeClassSpec(CamelModel):
    """One EC2NodeClass: how Karpenter launches EC2 instances."""

    name: str = Field("default", description="Kubernetes name of the EC2NodeClass.")
    ami_alias: str = Field(
        "al2023@latest",
        description="AMI alias `family@version`: al2023, bottlerocket or al2 (pin a version in production, e.g. "
        "al2023@v20260801), windows2019/2022/2025 (@latest only; its pools launch Windows nodes). GPU and "
        "Neuron instances get the family's accelerated AMI variant automatically.",
    )
    root_volume_size_gib: int = Field(
        50,
        ge=1,
        le=MAX_VOLUME_GIB,
        description="GiB of the volume for images, logs and pods: the root volume (al2, al2023) or Bottlerocket's "
        "data volume; at least the AMI's 20 GiB snapshot.",
    )
    root_volume_type: Literal["gp3", "gp2", "io1", "io2"] = Field(
        "gp3", description="EBS type of that volume (io1/io2 need rootVolumeIops)."
    )
    root_volume_iops: int | None = Field(
        None,
        description="Provisioned IOPS (gp3: 3000-16000, at most 500 per GiB; io1: 100-64000, 50 per GiB; "
        "io2: 100-256000, 1000 per GiB); unset on gp3: the included 3000.",
    )
    root_volume_throughput: int | None = Field(
        None, description="gp3 throughput in MiB/s (125-1000, at most IOPS/4); unset: the included 125."
    )
    detailed_monitoring: bool | None = Field(None, description="1-minute CloudWatch metrics for the instances.")
    associate_public_ip_address: bool | None = Field(
        None,
        alias="associatePublicIPAddress",
        description="false: no public IP even in a public subnet (unset: the subnet's setting).",
    )
    instance_store_policy: Literal["RAID0"] | None = Field(
        None, description="RAID0: local NVMe instance stores become one volume for images, logs and pods."
    )
    metadata_hop_limit: int = Field(
        1, ge=1, le=64, description="IMDSv2 hop limit; 1 keeps pods from reaching the node's credentials."
    )
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="Extra tags on launched EC2 resources (not the keys Karpenter sets itself, nor aws:*).",
    )
    kubelet: KubeletSpec = Field(
        default_factory=KubeletSpec, description="Kubelet settings (keys below); changing them replaces the nodes."
    )
    data_volumes: list[DataVolumeSpec] = Field(
        default_factory=list,
        description="Extra EBS volumes on every node (keys below), attached unformatted; changing them replaces the "
        "nodes.",
    )
    extra_subnet_selector_terms: list[SubnetTermSpec] = Field(
        default_factory=list,
        max_length=MAX_SELECTOR_TERMS - 1,
        description="More subnets, ORed with the discovery tag (or the given subnet ids): {id} or {tags}. Nodes in "
        "subnets no longer selected are replaced (drift).",
    )
    extra_security_group_selector_terms: list[SecurityGroupTermSpec] = Field(
        default_factory=list,
        max_length=MAX_SELECTOR_TERMS - 1,
        description="More security groups for the nodes, on top of the cluster security group: {id}, {name} or "
        "{tags}. Changing them replaces the nodes (drift).",
    )
    capacity_reservation_selector_terms: list[CapacityReservationTermSpec] = Field(
        default_factory=list,
        max_length=MAX_SELECTOR_TERMS,
        description="On-demand capacity reservations the class may launch into: {id}, or {tags, ownerID?, "
        "instanceMatchCriteria?}; pools with the reserved capacity type use them first.",
    )

    @field_validator("name")
    @classmethod
    def _k8s_name(cls, value: str) -> str:
        return kubernetes_name(value)

    @model_validator(mode="after")
    def _volume_performance(self) -> NodeClassSpec:
        check_volume(
            ROOT_VOLUME_FIELDS,
            self.root_volume_type,
            self.root_volume_size_gib,
            self.root_volume_iops,
            self.root_volume_throughput,
        )
        return self

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: dict[str, str]) -> dict[str, str]:
        for key, tag in value.items():
            if not key or key in RESTRICTED_TAG_KEYS or key.startswith(RESTRICTED_TAG_PREFIX):
                raise ValueError(
                    f"tag {quoted(key)} is one Karpenter sets itself (restricted: "
                    f"{', '.join(RESTRICTED_TAG_KEYS)}, {RESTRICTED_TAG_PREFIX}*) or empty"
                )
            ec2_tag_characters(key, tag)
            if key.lower().startswith("aws:"):
                raise ValueError(f"tag {quoted(key)}: the aws: prefix is reserved for AWS")
            if len(key) > 128 or len(tag) > 256:
                raise ValueError(
                    f"tag {quoted(key)}: EC2 allows keys of at most 128 and values of at most 256 characters"
                )
        return value

    @field_validator("ami_alias")
    @classmethod
    def _alias(cls, value: str) -> str:
        if not re.fullmatch(
            r"(al2|al2023|bottlerocket|windows2019|windows2022|windows2025)@(latest|v[0-9][0-9.]*)", value
        ):
            raise ValueError(
                "must be family@version with family al2, al2023, bottlerocket, windows2019, windows2022 "
                "or windows2025 and version 'latest' or a pinned vYYYYMMDD"
            )
        family, version = value.split("@", 1)
        if family in ("al2", "al2023") and version != "latest" and not re.fullmatch(r"v[0-9]{8}", version):
            raise ValueError(
                f"{family} AMIs are pinned by their build date: {family}@vYYYYMMDD (e.g. "
                f"{family}@v20260801), or {family}@latest"
            )
        if family == "bottlerocket" and version != "latest" and not re.fullmatch(r"v[0-9]+\.[0-9]+\.[0-9]+", version):
            raise ValueError(
                "Bottlerocket AMIs are pinned by their release: bottlerocket@vX.Y.Z (e.g. "
                "bottlerocket@v1.50.0), or bottlerocket@latest"
            )
        if value.startswith("windows") and not value.endswith("@latest"):
            raise ValueError("Windows AMI aliases only support @latest")
        return value

    @property
    def family(self) -> str:
        return self.ami_alias.split("@", 1)[0]

    @model_validator(mode="after")
    def _data_volume_devices(self) -> NodeClassSpec:
        # The family's own devices: its storage volume's letter, and Bottlerocket's OS volume.
        taken = {
            STORAGE_DEVICE[self.family].removesuffix("1")[-1]: STORAGE_DEVICE[self.family],
            BOTTLEROCKET_OS_VOLUME["deviceName"][-1]: BOTTLEROCKET_OS_VOLUME["deviceName"],
        }
        for volume in self.data_volumes:
            if volume.letter in taken:
                raise ValueError(
                    f"dataVolumes {volume.device_name} is the same device as {taken[volume.letter]} "
                    f"(/dev/sdX and /dev/xvdX name one device); use another letter"
                )
            taken[volume.letter] = volume.device_name
        return self

    @property
    def windows(self) -> bool:
        return self.family.startswith("windows")

    @model_validator(mode="after")
    def _pods_per_core(self) -> NodeClassSpec:
        if self.family == "bottlerocket" and self.kubelet.pods_per_core is not None:
            raise ValueError(
                "kubelet.podsPerCore is not supported by Bottlerocket (Karpenter ignores it there); use kubelet.maxPods"
            )
        return self

    @model_validator(mode="after")
    def _volume_fits_the_snapshot(self) -> NodeClassSpec:
        minimum = SNAPSHOT_GIB[self.family]
        if self.root_volume_size_gib < minimum:
            raise ValueError(
                f"rootVolumeSizeGib {self.root_volume_size_gib} is smaller than the {self.family} AMI's {minimum} GiB "
                f"snapshot for {STORAGE_DEVICE[self.family]}; EC2 refuses a volume smaller than its snapshot"
            )
        return self


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


def operating_system(node_class: NodeClassSpec) -> str:
    """The kubernetes.io/os of the nodes a class launches."""
    return "windows" if node_class.windows else "linux"
