"""The settings of an EC2NodeClass as declared (:class:`NodeClassSettings`, the fields of
:class:`~constructs_lib.karpenter.specs.node_class.NodeClassSpec` in their order): each field's type, default, description
and what changing it does, with the checks of one field on its own; and the extra EBS volumes of a class
(:class:`DataVolumeSpec`)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..names import RESTRICTED_TAG_KEYS, RESTRICTED_TAG_PREFIX
from . import ami
from .base import CamelModel, kubernetes_name, optional_match, quoted
from .change import EC2_NODE_CLASS_HASH, EC2_NODE_CLASS_SELECTORS, OBJECT_NAME, Change, change
from .ec2 import DATA_DEVICE, DATA_VOLUME_FIELDS, MAX_VOLUME_GIB, check_volume, ebs_volume, ec2_id, ec2_tag_characters
from .kubelet import KubeletSpec
from .metadata import ObjectAnnotations, ObjectLabels, object_annotations_field, object_labels_field
from .selector_terms import (
    MAX_SELECTOR_TERMS,
    AmiTermSpec,
    CapacityReservationTermSpec,
    SecurityGroupTermSpec,
    SubnetTermSpec,
)
from .volume_key import CREATE, key_problem
from .written import NodeObjectSpec

# A root device name (EC2 block device names: /dev/xvda, /dev/sda1, /dev/nvme0n1).
ROOT_DEVICE = re.compile(r"/dev/(xvd[a-z]|sd[a-z][0-9]?|nvme[0-9]+n[0-9]+)")


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

    def mapping(self) -> dict[str, Any]:
        """The volume's block device mapping."""
        if self.size_gib is None:  # the snapshot's size
            ebs = ebs_volume(None, self.volume_type)
        else:
            ebs = ebs_volume(f"{self.size_gib}Gi", self.volume_type, self.iops, self.throughput)
        if self.snapshot_id is not None:
            ebs["snapshotID"] = self.snapshot_id
        return {"deviceName": self.device_name, "ebs": ebs}


class NodeClassSettings(NodeObjectSpec):
    """The settings of one EC2NodeClass; :class:`~constructs_lib.karpenter.specs.node_class.NodeClassSpec` adds the checks
    across them, what they imply and the object written."""

    name: str = Field(
        "default",
        description="Kubernetes name of the EC2NodeClass.",
        json_schema_extra=change(
            Change.REPLACE,
            "metadata.name",
            OBJECT_NAME,
            needs_for={'"general"': {"nodePools": [{"name": "default", "nodeClass": "general"}]}},
        ),
        examples=["general"],
    )
    ami_alias: str = Field(
        "al2023@latest",
        description="AMI alias `family@version`: al2023, bottlerocket or al2 (pin a version in production, e.g. "
        "al2023@v20260801), windows2019/2022/2025 (@latest only; its pools launch Windows nodes). GPU and "
        "Neuron instances get the family's accelerated AMI variant automatically.",
        json_schema_extra=change(
            Change.DYNAMIC_DRIFT,
            "spec.amiSelectorTerms",
            EC2_NODE_CLASS_SELECTORS,
            upstream="spec.amiSelectorTerms[].alias",
            modes=["al2023@latest", "al2023@v20260801", "bottlerocket@latest", "windows2022@latest"],
        ),
        examples=["bottlerocket@latest"],
    )
    ami_selector_terms: list[AmiTermSpec] = Field(
        default_factory=list,
        max_length=MAX_SELECTOR_TERMS,
        description="Your own images instead of amiAlias (Karpenter's spec.amiSelectorTerms): {id}, {name, owner?}, "
        "{tags, owner?}, {ssmParameter} or {alias} alone; needs amiFamily unless a term is an alias. Nodes whose "
        "image is no longer selected are replaced (drift); with a custom image you own the kubelet's version skew "
        "against the control plane.",
        json_schema_extra=change(
            Change.DYNAMIC_DRIFT,
            "spec.amiSelectorTerms",
            EC2_NODE_CLASS_SELECTORS,
            needs={"nodeClasses": [{"amiFamily": "AL2023"}]},
        ),
        examples=[[{"id": "ami-0123456789abcdef0"}]],
    )
    ami_family: ami.AmiFamily | None = Field(
        None,
        description="Which user data Karpenter generates and which volumes it defaults to (spec.amiFamily): required "
        "with amiSelectorTerms that have no alias; with an alias, its family or Custom. Custom: your userData joins "
        "the node itself, and rootVolumeDeviceName is required. A change of the family Karpenter applies drifts "
        "every node; writing the family an alias already implies drifts none (Karpenter hashes the family it "
        "applies, not the field).",
        json_schema_extra=change(
            Change.STATIC_DRIFT,
            "spec.amiFamily",
            EC2_NODE_CLASS_HASH,
            modes=[None, "Custom"],
            needs_for={
                '"Custom"': {
                    "nodeClasses": [{"rootVolumeDeviceName": "/dev/xvda", "userData": "#!/bin/bash\nnodeadm init\n"}]
                }
            },
        ),
    )
    user_data: str | None = Field(
        None,
        description="User data merged with Karpenter's (spec.userData): AL2023 a MIME archive, NodeConfig or shell "
        "script; AL2 a MIME archive or shell script run before the bootstrap; Bottlerocket TOML; Windows PowerShell; "
        "Custom as given. Keys Karpenter sets itself (cluster, labels, taints, kubelet) are refused. Changing it "
        "replaces the class's nodes (drift).",
        json_schema_extra=change(Change.STATIC_DRIFT, "spec.userData", EC2_NODE_CLASS_HASH),
        examples=["#!/bin/bash\necho 'vm.max_map_count=262144' > /etc/sysctl.d/90-app.conf\n"],
    )
    user_data_file: str | None = Field(
        None,
        description="userData read from this file, a path relative to the project folder (where cdk.json is); the "
        "file's content is written into the EC2NodeClass, so editing the file replaces the class's nodes (drift).",
        json_schema_extra=change(Change.STATIC_DRIFT, "spec.userData", EC2_NODE_CLASS_HASH),
        examples=["examples/user-data/al2023-nodeconfig.yaml"],
    )
    root_volume_size_gib: int = Field(
        50,
        ge=1,
        le=MAX_VOLUME_GIB,
        description="GiB of the volume for images, logs and pods: the root volume (al2, al2023) or Bottlerocket's "
        "data volume; at least the AMI's 20 GiB snapshot (with your own images, at least their snapshot: the synth "
        "cannot know its size, EC2 refuses a smaller volume at launch).",
        json_schema_extra=change(
            Change.STATIC_DRIFT,
            "spec.blockDeviceMappings",
            EC2_NODE_CLASS_HASH,
            upstream="spec.blockDeviceMappings[].ebs.volumeSize (of the family's storage device: /dev/xvda, "
            "Bottlerocket's /dev/xvdb, Windows' /dev/sda1)",
            differs="images, logs and emptyDir volumes of a busy node outgrow the 20 GiB of Karpenter's family "
            "default, and the kubelet then evicts pods under DiskPressure",
        ),
    )
    root_volume_type: Literal["gp3", "gp2", "io1", "io2"] = Field(
        "gp3",
        description="EBS type of that volume (io1/io2 need rootVolumeIops).",
        json_schema_extra=change(
            Change.STATIC_DRIFT,
            "spec.blockDeviceMappings",
            EC2_NODE_CLASS_HASH,
            upstream="spec.blockDeviceMappings[].ebs.volumeType",
        ),
    )
    root_volume_iops: int | None = Field(
        None,
        description="Provisioned IOPS (gp3: 3000-16000, at most 500 per GiB; io1: 100-64000, 50 per GiB; "
        "io2: 100-256000, 1000 per GiB); unset on gp3: the included 3000.",
        json_schema_extra=change(
            Change.STATIC_DRIFT,
            "spec.blockDeviceMappings",
            EC2_NODE_CLASS_HASH,
            upstream="spec.blockDeviceMappings[].ebs.iops",
        ),
        examples=[4000],
    )
    root_volume_throughput: int | None = Field(
        None,
        description="gp3 throughput in MiB/s (125-1000, at most IOPS/4); unset: the included 125.",
        json_schema_extra=change(
            Change.STATIC_DRIFT,
            "spec.blockDeviceMappings",
            EC2_NODE_CLASS_HASH,
            upstream="spec.blockDeviceMappings[].ebs.throughput",
        ),
        examples=[250],
    )
    root_volume_device_name: str | None = Field(
        None,
        description="Device of that volume (unset: the family's, /dev/xvda on al2/al2023, /dev/xvdb on Bottlerocket, "
        "/dev/sda1 on Windows); required with amiFamily Custom, whose image's root device Karpenter cannot infer.",
        json_schema_extra=change(
            Change.STATIC_DRIFT,
            "spec.blockDeviceMappings",
            EC2_NODE_CLASS_HASH,
            upstream="spec.blockDeviceMappings[].deviceName",
        ),
        examples=["/dev/sda1"],
    )
    detailed_monitoring: bool | None = Field(
        None,
        description="1-minute CloudWatch metrics for the instances.",
        json_schema_extra=change(Change.STATIC_DRIFT, "spec.detailedMonitoring", EC2_NODE_CLASS_HASH),
    )
    associate_public_ip_address: bool | None = Field(
        None,
        alias="associatePublicIPAddress",
        description="false: no public IP even in a public subnet (unset: the subnet's setting).",
        json_schema_extra=change(Change.STATIC_DRIFT, "spec.associatePublicIPAddress", EC2_NODE_CLASS_HASH),
    )
    instance_store_policy: Literal["RAID0"] | None = Field(
        None,
        description="RAID0: local NVMe instance stores become one volume for images, logs and pods.",
        json_schema_extra=change(Change.STATIC_DRIFT, "spec.instanceStorePolicy", EC2_NODE_CLASS_HASH),
    )
    metadata_hop_limit: int = Field(
        1,
        ge=1,
        le=64,
        description="IMDSv2 hop limit; 1 keeps pods from reaching the node's credentials.",
        json_schema_extra=change(
            Change.STATIC_DRIFT,
            "spec.metadataOptions",
            EC2_NODE_CLASS_HASH,
            upstream="spec.metadataOptions.httpPutResponseHopLimit",
        ),
    )
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="Extra tags on launched EC2 resources (not the keys Karpenter sets itself, nor aws:*).",
        json_schema_extra=change(Change.STATIC_DRIFT, "spec.tags", EC2_NODE_CLASS_HASH),
        examples=[{"team": "data"}],
    )
    object_labels: ObjectLabels = object_labels_field("EC2NodeClass")
    object_annotations: ObjectAnnotations = object_annotations_field(
        "EC2NodeClass", "Nodes of our hardened image", hashed=True
    )
    kubelet: KubeletSpec = Field(
        default_factory=KubeletSpec,
        description="Kubelet settings (keys below); changing them replaces the nodes.",
        json_schema_extra=change(Change.STATIC_DRIFT, "spec.kubelet", EC2_NODE_CLASS_HASH),
        examples=[{"maxPods": 50}],
    )
    data_volumes: list[DataVolumeSpec] = Field(
        default_factory=list,
        description="Extra EBS volumes on every node (keys below), attached unformatted; changing them replaces the "
        "nodes.",
        json_schema_extra=change(
            Change.STATIC_DRIFT,
            "spec.blockDeviceMappings",
            EC2_NODE_CLASS_HASH,
            upstream="spec.blockDeviceMappings[] (after the storage volume: deviceName, ebs.volumeSize, "
            "ebs.volumeType, ebs.iops, ebs.throughput, ebs.snapshotID)",
        ),
        examples=[[{"deviceName": "/dev/xvdb", "sizeGib": 100}]],
    )
    volume_kms_key: str | None = Field(
        None,
        description="The customer-managed KMS key that encrypts every EBS volume of the class's nodes (the volume "
        "for images, logs and pods, Bottlerocket's OS volume, dataVolumes): create (a key of the app, one per "
        "environment, rotated yearly, whose key policy lets the controller and EC2's launching service-linked roles "
        "use it) or a key ARN arn:<partition>:kms:<region>:<account>:key/<key id> of the nodes' region, whose key "
        "policy you extend (the synth warns with the statements; not an alias). Unset: the account's default EBS "
        "key. Changing it replaces the class's nodes (drift).",
        json_schema_extra=change(
            Change.STATIC_DRIFT,
            "spec.blockDeviceMappings",
            EC2_NODE_CLASS_HASH,
            upstream="spec.blockDeviceMappings[].ebs.kmsKeyID",
            modes=[None, CREATE],
        ),
        examples=[CREATE],
    )
    extra_subnet_selector_terms: list[SubnetTermSpec] = Field(
        default_factory=list,
        max_length=MAX_SELECTOR_TERMS - 1,
        description="More subnets, ORed with the discovery tag (or the given subnet ids): {id} or {tags}. A term with "
        "a wildcard, or one that can match a public subnet's tag, is a warning (the production profile refuses it). "
        "Nodes in subnets no longer selected are replaced (drift).",
        json_schema_extra=change(Change.DYNAMIC_DRIFT, "spec.subnetSelectorTerms", EC2_NODE_CLASS_SELECTORS),
        examples=[[{"tags": {"tier": "private"}}]],
    )
    extra_security_group_selector_terms: list[SecurityGroupTermSpec] = Field(
        default_factory=list,
        max_length=MAX_SELECTOR_TERMS - 1,
        description="More security groups for the nodes, on top of the cluster security group: {id}, {name} or "
        "{tags}. A term with a wildcard is a warning (the production profile refuses it). Changing them replaces the "
        "nodes (drift).",
        json_schema_extra=change(Change.DYNAMIC_DRIFT, "spec.securityGroupSelectorTerms", EC2_NODE_CLASS_SELECTORS),
        examples=[[{"tags": {"team": "data"}}]],
    )
    capacity_reservation_selector_terms: list[CapacityReservationTermSpec] = Field(
        default_factory=list,
        max_length=MAX_SELECTOR_TERMS,
        description="On-demand capacity reservations the class may launch into: {id}, or {tags, ownerID?, "
        "instanceMatchCriteria?}; pools with the reserved capacity type use them first.",
        json_schema_extra=change(
            Change.DYNAMIC_DRIFT, "spec.capacityReservationSelectorTerms", EC2_NODE_CLASS_SELECTORS
        ),
        examples=[[{"id": "cr-0123456789abcdef0"}]],
    )

    @field_validator("name")
    @classmethod
    def _k8s_name(cls, value: str) -> str:
        return kubernetes_name(value)

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

    @field_validator("volume_kms_key")
    @classmethod
    def _volume_key(cls, value: str | None) -> str | None:
        if value is not None and (problem := key_problem(value)) is not None:
            raise ValueError(problem)
        return value

    @field_validator("ami_alias")
    @classmethod
    def _alias(cls, value: str) -> str:
        return ami.check_alias(value)

    @field_validator("root_volume_device_name")
    @classmethod
    def _device_name(cls, value: str | None) -> str | None:
        return optional_match(value, ROOT_DEVICE, "must be a device like /dev/xvda, /dev/sda1 or /dev/nvme0n1")
