"""The EC2NodeClass: how Karpenter launches EC2 instances -- AMI, subnets, security groups, capacity
reservations, volumes, instance metadata, tags and kubelet. Its settings are declared in ``node_class_settings``;
:class:`NodeClassSpec` adds the checks across them, what they imply (the AMI alias and family, Windows, the storage
device, the user data as written) and the EC2NodeClass it writes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import PrivateAttr, ValidationInfo, model_validator

from ..names import DISCOVERY_TAG_KEY, NODE_CLASS_API_VERSION, NODE_CLASS_KIND
from . import ami, user_data, user_data_merged
from .base import CamelModel, annotations_fit, applied_size, quoted
from .change import Change, manifest_keys
from .ec2 import ROOT_VOLUME_FIELDS, check_volume, ebs_volume
from .files import read_project_file
from .node_class_settings import NodeClassSettings
from .reach import SECURITY_GROUP, SUBNET, Reach, selector_reach
from .volume_key import CREATE, STAND_IN_ARN
from .written import filled_class


class NodeClassSpec(NodeClassSettings):
    """One EC2NodeClass: how Karpenter launches EC2 instances."""

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

    @property
    def alias(self) -> str | None:
        """The EKS-optimized alias the class selects by (amiAlias, or an alias term), None for own images."""
        if not self.ami_selector_terms:
            return self.ami_alias
        return next((t.alias for t in self.ami_selector_terms if t.alias), None)

    @property
    def family(self) -> str:
        """The AMI family Karpenter applies (lowercase): amiFamily's, else the alias's; ``custom`` for Custom."""
        if self.ami_family is not None:
            return self.ami_family.lower()
        assert self.alias is not None  # _ami_selection: amiFamily is required without an alias
        return ami.family_of(self.alias)

    @property
    def pinned(self) -> bool:
        """The class's images change only when its settings do (an alias by version, or pinned terms)."""
        if self.ami_selector_terms and self.alias is None:
            return all(t.pinned for t in self.ami_selector_terms)
        return self.alias is not None and not self.alias.endswith("@latest")

    @model_validator(mode="after")
    def _ami_selection(self, info: ValidationInfo) -> NodeClassSpec:
        if self.ami_selector_terms and "ami_alias" in self.model_fields_set:
            raise ValueError("amiAlias and amiSelectorTerms both select images: give one (an alias term is amiAlias)")
        if len(self.ami_selector_terms) > 1 and any(t.alias for t in self.ami_selector_terms):
            raise ValueError("amiSelectorTerms: an alias term must be the only term (the CRD's rule)")
        alias_family = None if self.alias is None else ami.family_of(self.alias)
        if alias_family is None and self.ami_family is None:
            raise ValueError(
                f"amiSelectorTerms without an alias need amiFamily ({', '.join(ami.AMI_FAMILIES)}): it decides the "
                "user data Karpenter generates and the volumes it defaults to"
            )
        if (
            alias_family is not None
            and self.ami_family not in (None, "Custom")
            and self.ami_family.lower() != alias_family
        ):
            raise ValueError(
                f"amiFamily {quoted(self.ami_family)} does not fit the alias family {alias_family}: with an alias, "
                "amiFamily is its family or Custom (the CRD's rule)"
            )
        # a class of a file deploys as written: without mappings, its image's own volumes (a warning says so)
        as_written = bool(info.context and info.context.get("written"))
        if self.family == ami.CUSTOM and self.root_volume_device_name is None and not as_written:
            raise ValueError(
                "amiFamily Custom has no default volumes: set rootVolumeDeviceName to your image's root device "
                "(e.g. /dev/xvda), so that its size, type and encryption apply"
            )
        return self

    @model_validator(mode="after")
    def _data_volume_devices(self) -> NodeClassSpec:
        if not self.data_volumes:
            return self
        taken = ami.reserved_devices(self.family, self.storage_device)
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
        """The class launches Windows nodes: a Windows family, or Custom with a Windows alias."""
        return ami.is_windows(self.family) or (self.alias is not None and ami.is_windows(ami.family_of(self.alias)))

    @property
    def operating_system(self) -> str:
        """The kubernetes.io/os of the class's nodes."""
        return "windows" if self.windows else "linux"

    @property
    def storage_device(self) -> str:
        """The device of the volume for images, logs and pods."""
        if self.root_volume_device_name is not None:
            return self.root_volume_device_name
        return ami.STORAGE_DEVICE[self.family]

    # The user data as written into the EC2NodeClass (userData, or userDataFile's content).
    _user_data: str | None = PrivateAttr(None)

    @property
    def user_data_text(self) -> str | None:
        return self._user_data

    @model_validator(mode="after")
    def _user_data_fits(self) -> NodeClassSpec:
        if self.user_data is not None and self.user_data_file is not None:
            raise ValueError("userData and userDataFile both give the user data: give one")
        try:
            text = self.user_data if self.user_data_file is None else read_user_data(self.user_data_file)
        except ValueError as err:
            raise ValueError(f"userDataFile {err}") from None
        if text is None and self.family == ami.CUSTOM:
            raise ValueError(
                "amiFamily Custom: Karpenter adds no bootstrap of its own, so userData or userDataFile must join the "
                "node to the cluster (registered with the karpenter.sh/unregistered:NoExecute taint)"
            )
        if text is not None:
            which = "userDataFile" if self.user_data_file is not None else "userData"
            try:
                user_data.check(self.family, text)
            except ValueError as err:
                raise ValueError(f"{which}: {err}") from None
            sent = user_data_merged.size(self.family, text, self.kubelet.manifest(), user_data_merged.BARE_POOL)
            if sent > user_data_merged.EC2_USER_DATA_BYTES:
                raise ValueError(
                    f"{which}: {len(text.encode())} bytes, and with Karpenter's {self.family} part for a pool that adds "
                    f"no label or taint of its own the user data of a node is {sent} bytes: EC2 takes at most "
                    f"{user_data_merged.EC2_USER_DATA_BYTES}"
                )
        self._user_data = text
        return self

    @model_validator(mode="after")
    def _pods_per_core(self) -> NodeClassSpec:
        ami.check_pods_per_core(self.family, self.kubelet.pods_per_core)
        return self

    @model_validator(mode="after")
    def _volume_fits_the_snapshot(self) -> NodeClassSpec:
        if self.alias is not None and self.family != ami.CUSTOM:  # an EKS-optimized image: its snapshot is known
            ami.check_storage_size(self.family, self.root_volume_size_gib)
        return self

    @model_validator(mode="after")
    def _fits_with_kubectls_copy(self) -> NodeClassSpec:
        # the last check: the object as written, user data included
        if self.object_annotations:  # the largest role name IAM allows stands in for the node role
            size = applied_size(
                self.manifest(cluster_name="c" * 100, node_role_name="r" * 64, volume_key_arn=STAND_IN_ARN)
            )
            annotations_fit(self.object_annotations, size, "objectAnnotations")
        return self

    def manifest(
        self,
        *,
        cluster_name: str,
        node_role_name: str,
        subnet_ids: Sequence[str] = (),
        security_group_ids: Sequence[str] = (),
        volume_key_arn: str | None = None,
    ) -> dict[str, Any]:
        """The EC2NodeClass (karpenter.k8s.aws/v1).

        Subnets and security groups are selected by the discovery tag, or by id when ids are given (an
        existing VPC whose subnets CloudFormation cannot tag; an existing cluster's security group). A class of a
        file is its object as written, with the node role and those selections filled in (specs.written).
        ``volume_key_arn``: the ARN of the key the construct creates, where ``volumeKmsKey`` is ``create`` (unset:
        a stand-in ARN, for checks that run before the key exists).
        """
        if self.written is not None:
            return filled_class(
                self.written,
                cluster_name=cluster_name,
                node_role_name=node_role_name,
                subnet_ids=subnet_ids,
                security_group_ids=security_group_ids,
            )
        discovery = {"tags": {DISCOVERY_TAG_KEY: cluster_name}}
        subnet_terms = [
            *([{"id": s} for s in subnet_ids] if subnet_ids else [discovery]),
            *_terms(self.extra_subnet_selector_terms),
        ]
        security_group_terms = [
            *([{"id": g} for g in security_group_ids] if security_group_ids else [discovery]),
            *_terms(self.extra_security_group_selector_terms),
        ]
        return {
            "apiVersion": NODE_CLASS_API_VERSION,
            "kind": NODE_CLASS_KIND,
            "metadata": {
                "name": self.name,
                **({"labels": dict(self.object_labels)} if self.object_labels else {}),
                **({"annotations": dict(self.object_annotations)} if self.object_annotations else {}),
            },
            "spec": {
                # Karpenter creates and owns the instance profile for this role.
                "role": node_role_name,
                "amiSelectorTerms": _terms(self.ami_selector_terms) or [{"alias": self.ami_alias}],
                **({"amiFamily": self.ami_family} if self.ami_family is not None else {}),
                **({"userData": self._user_data} if self._user_data is not None else {}),
                "subnetSelectorTerms": subnet_terms,
                "securityGroupSelectorTerms": security_group_terms,
                "metadataOptions": {
                    "httpEndpoint": "enabled",
                    "httpProtocolIPv6": "disabled",
                    "httpPutResponseHopLimit": self.metadata_hop_limit,
                    "httpTokens": "required",
                },
                "blockDeviceMappings": self.block_device_mappings(volume_key_arn),
                **self._optional_fields(),
            },
        }

    def selector_reach(self, cluster_name: str | None = None) -> list[tuple[str, Reach]]:
        """Where the extra subnet and security group terms reach beyond what they name, as EC2 reads them
        (specs.reach): (the setting of the term, ``extraSubnetSelectorTerms[1]``, the Reach)."""
        settings = {SUBNET: "extraSubnetSelectorTerms", SECURITY_GROUP: "extraSecurityGroupSelectorTerms"}
        found = selector_reach(
            _terms(self.extra_subnet_selector_terms), _terms(self.extra_security_group_selector_terms), cluster_name
        )
        return [(f"{settings[kind]}[{j}]", reach) for kind, j, reach in found]

    def _optional_fields(self) -> dict[str, Any]:
        """The spec fields written only when set."""
        return {
            **(
                {"capacityReservationSelectorTerms": _terms(terms)}
                if (terms := self.capacity_reservation_selector_terms)
                else {}
            ),
            **({"tags": dict(self.tags)} if self.tags else {}),
            **({"kubelet": kubelet} if (kubelet := self.kubelet.manifest()) else {}),
            **{
                key: value
                for key, value in (
                    ("detailedMonitoring", self.detailed_monitoring),
                    ("associatePublicIPAddress", self.associate_public_ip_address),
                    ("instanceStorePolicy", self.instance_store_policy),
                )
                if value is not None
            },
        }

    @property
    def creates_volume_key(self) -> bool:
        """The class's volumes use the key the construct creates (volumeKmsKey create)."""
        return self.volume_kms_key == CREATE

    @property
    def volume_key_arns(self) -> list[str]:
        """The key ARNs of others' keys the class's volumes name, in order, each once: volumeKmsKey's, or the
        ``ebs.kmsKeyID`` of a file's mappings (node_manifests refuses any that is not a key ARN)."""
        if self.written is None:
            return [self.volume_kms_key] if self.volume_kms_key not in (None, CREATE) else []
        mappings = (self.written.get("spec") or {}).get("blockDeviceMappings") or []
        keys = [((m or {}).get("ebs") or {}).get("kmsKeyID") for m in mappings if isinstance(m, dict)]
        return list(dict.fromkeys(k for k in keys if isinstance(k, str)))

    def block_device_mappings(self, volume_key_arn: str | None = None) -> list[dict[str, Any]]:
        """The volume for images, logs and pods at the family's device and size, after the family's own
        volumes (Bottlerocket's OS volume); then the extra data volumes; each with volumeKmsKey's key (``create``:
        ``volume_key_arn``). None for Custom without a root device (a class of a file: its image's own volumes)."""
        if self.family == ami.CUSTOM and self.root_volume_device_name is None:
            return []
        storage = {
            "deviceName": self.storage_device,
            "ebs": ebs_volume(
                f"{self.root_volume_size_gib}Gi",
                self.root_volume_type,
                self.root_volume_iops,
                self.root_volume_throughput,
            ),
        }
        mappings = [*ami.os_volumes(self.family), storage, *(v.mapping() for v in self.data_volumes)]
        key = (volume_key_arn or STAND_IN_ARN) if self.creates_volume_key else self.volume_kms_key
        if key is not None:
            for mapping in mappings:
                mapping["ebs"]["kmsKeyID"] = key
        return mappings


# What `make review` reads: the EC2NodeClass spec fields that drift only the nodes that no longer match them
# (every other spec field drifts every node of the class's pools).
CLASS_DYNAMIC = manifest_keys(NodeClassSpec, Change.DYNAMIC_DRIFT, "spec.")


def read_user_data(path: str) -> str:
    """A userDataFile's content: a path relative to the project folder (the synth's working directory), so the
    synth reads the same file on every machine; a missing or unreadable file is one line naming the path."""
    return read_project_file(path)


def _terms(terms: Sequence[CamelModel]) -> list[dict[str, Any]]:
    return [term.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True) for term in terms]
