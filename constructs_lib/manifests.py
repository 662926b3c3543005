"""Karpenter's Kubernetes objects, built from typed configuration in one place."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .names import (
    DISCOVERY_TAG_KEY,
    NODE_CLASS_API_VERSION,
    NODE_CLASS_GROUP,
    NODE_CLASS_KIND,
    NODE_POOL_API_VERSION,
)
from .specs.ami import BOTTLEROCKET_OS_VOLUME, STORAGE_DEVICE, operating_system
from .specs.base import CamelModel
from .specs.controller import FeatureGate
from .specs.node_class import DataVolumeSpec, NodeClassSpec
from .specs.node_overlay import NodeOverlaySpec
from .specs.node_pool import DisruptionBudgetSpec, NodePoolSpec, RequirementSpec
from .specs.rules import pool_problems


def _ebs(size: str, volume_type: str, iops: int | None = None, throughput: int | None = None) -> dict[str, Any]:
    ebs: dict[str, Any] = {
        "volumeSize": size,
        "volumeType": volume_type,
        "encrypted": True,
        "deleteOnTermination": True,
    }
    if iops is not None:
        ebs["iops"] = iops
    if throughput is not None:
        ebs["throughput"] = throughput
    return ebs


def _block_devices(spec: NodeClassSpec) -> list[dict[str, Any]]:
    """The volume for images, logs and pods at the family's device and size; Bottlerocket also keeps its
    4 GiB OS volume (a mapping list replaces all of the family's defaults); then the extra data volumes."""
    storage = {
        "deviceName": STORAGE_DEVICE[spec.family],
        "ebs": _ebs(
            f"{spec.root_volume_size_gib}Gi", spec.root_volume_type, spec.root_volume_iops, spec.root_volume_throughput
        ),
    }
    data = [_data_volume(v) for v in spec.data_volumes]
    if spec.family == "bottlerocket":
        os_volume = {
            "deviceName": BOTTLEROCKET_OS_VOLUME["deviceName"],
            "ebs": _ebs(BOTTLEROCKET_OS_VOLUME["size"], "gp3"),
        }
        return [os_volume, storage, *data]
    return [storage, *data]


def _data_volume(spec: DataVolumeSpec) -> dict[str, Any]:
    if spec.size_gib is None:  # the snapshot's size
        ebs: dict[str, Any] = {"volumeType": spec.volume_type, "encrypted": True, "deleteOnTermination": True}
    else:
        ebs = _ebs(f"{spec.size_gib}Gi", spec.volume_type, spec.iops, spec.throughput)
    if spec.snapshot_id is not None:
        ebs["snapshotID"] = spec.snapshot_id
    return {"deviceName": spec.device_name, "ebs": ebs}


def _terms(terms: Sequence[CamelModel]) -> list[dict[str, Any]]:
    return [term.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True) for term in terms]


def ec2_node_class(
    spec: NodeClassSpec,
    *,
    cluster_name: str,
    node_role_name: str,
    subnet_ids: Sequence[str] = (),
    security_group_ids: Sequence[str] = (),
) -> dict[str, Any]:
    """An EC2NodeClass (karpenter.k8s.aws/v1).

    Subnets and security groups are selected by the discovery tag, or by id when ids are given (an
    existing VPC whose subnets CloudFormation cannot tag; an existing cluster's security group).
    """
    discovery = {"tags": {DISCOVERY_TAG_KEY: cluster_name}}
    subnet_terms = [
        *([{"id": s} for s in subnet_ids] if subnet_ids else [discovery]),
        *_terms(spec.extra_subnet_selector_terms),
    ]
    security_group_terms = [
        *([{"id": g} for g in security_group_ids] if security_group_ids else [discovery]),
        *_terms(spec.extra_security_group_selector_terms),
    ]
    return {
        "apiVersion": NODE_CLASS_API_VERSION,
        "kind": NODE_CLASS_KIND,
        "metadata": {"name": spec.name},
        "spec": {
            # Karpenter creates and owns the instance profile for this role.
            "role": node_role_name,
            "amiSelectorTerms": [{"alias": spec.ami_alias}],
            "subnetSelectorTerms": subnet_terms,
            "securityGroupSelectorTerms": security_group_terms,
            "metadataOptions": {
                "httpEndpoint": "enabled",
                "httpProtocolIPv6": "disabled",
                "httpPutResponseHopLimit": spec.metadata_hop_limit,
                "httpTokens": "required",
            },
            "blockDeviceMappings": _block_devices(spec),
            **(
                {"capacityReservationSelectorTerms": _terms(terms)}
                if (terms := spec.capacity_reservation_selector_terms)
                else {}
            ),
            **({"tags": dict(spec.tags)} if spec.tags else {}),
            **({"kubelet": kubelet} if (kubelet := spec.kubelet.manifest()) else {}),
            **{
                key: value
                for key, value in (
                    ("detailedMonitoring", spec.detailed_monitoring),
                    ("associatePublicIPAddress", spec.associate_public_ip_address),
                    ("instanceStorePolicy", spec.instance_store_policy),
                )
                if value is not None
            },
        },
    }


def node_pool(spec: NodePoolSpec, *, os: str = "linux") -> dict[str, Any]:
    """A NodePool (karpenter.sh/v1); ``os``: what its node class launches (``operating_system``)."""
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(spec.capacity_types)},
        {"key": "kubernetes.io/arch", "operator": "In", "values": list(spec.architectures)},
        {"key": "kubernetes.io/os", "operator": "In", "values": [os]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": list(spec.instance_categories)},
        {
            "key": "karpenter.k8s.aws/instance-generation",
            "operator": "Gt",
            "values": [str(spec.min_instance_generation)],
        },
        *(_requirement(r) for r in spec.requirements),
    ]
    template: dict[str, Any] = {
        "spec": {
            "nodeClassRef": {"group": NODE_CLASS_GROUP, "kind": NODE_CLASS_KIND, "name": spec.node_class},
            "requirements": requirements,
            "expireAfter": spec.expire_after,
            # The user's bound on every drain of a running cluster (a destroy bounds its own, see teardown).
            **({"terminationGracePeriod": tgp} if (tgp := spec.termination_grace_period) is not None else {}),
        }
    }
    if spec.taints:
        template["spec"]["taints"] = [
            {k: v for k, v in (("key", t.key), ("value", t.value), ("effect", t.effect)) if v is not None}
            for t in spec.taints
        ]
    if spec.labels:
        template["metadata"] = {"labels": dict(spec.labels)}
    body: dict[str, Any] = {
        "template": template,
        **({"limits": limits} if (limits := spec.emitted_limits) else {}),
        "disruption": {
            "consolidationPolicy": spec.consolidation_policy,
            "consolidateAfter": spec.consolidate_after,
            "budgets": [_budget(b) for b in spec.budgets],
        },
    }
    if spec.weight is not None:
        body["weight"] = spec.weight
    if spec.replicas is not None:
        body["replicas"] = spec.replicas
    return {
        "apiVersion": NODE_POOL_API_VERSION,
        "kind": "NodePool",
        "metadata": {"name": spec.name},
        "spec": body,
    }


def node_objects(
    node_classes: Sequence[NodeClassSpec],
    node_pools: Sequence[NodePoolSpec],
    *,
    cluster_name: str,
    node_role_name: str,
    feature_gates: Mapping[FeatureGate, bool],
    node_overlays: Sequence[NodeOverlaySpec] = (),
    windows_node_role_name: str | None = None,
    subnet_ids: Sequence[str] = (),
    security_group_ids: Sequence[str] = (),
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Every EC2NodeClass, NodePool and NodeOverlay by name; each pool's kubernetes.io/os follows its
    class's family, and Windows classes launch with ``windows_node_role_name`` (when given).
    Raises ValueError (one line per problem) when pools and classes do not fit together or need a
    feature gate that ``feature_gates`` (the controller's) leaves off."""
    problems = pool_problems(node_classes, node_pools, feature_gates, node_overlays)
    if problems:
        raise ValueError("\n".join(problems))
    classes = {c.name: c for c in node_classes}
    return (
        {
            c.name: ec2_node_class(
                c,
                cluster_name=cluster_name,
                node_role_name=(windows_node_role_name if c.windows else None) or node_role_name,
                subnet_ids=subnet_ids,
                security_group_ids=security_group_ids,
            )
            for c in node_classes
        },
        {p.name: node_pool(p, os=operating_system(classes[p.node_class].family)) for p in node_pools},
        {o.name: o.manifest() for o in node_overlays},
    )


def _requirement(spec: RequirementSpec) -> dict[str, Any]:
    requirement: dict[str, Any] = {"key": spec.key, "operator": spec.operator}
    if spec.values:
        requirement["values"] = list(spec.values)
    if spec.min_values is not None:
        requirement["minValues"] = spec.min_values
    return requirement


def _budget(spec: DisruptionBudgetSpec) -> dict[str, Any]:
    budget: dict[str, Any] = {"nodes": spec.nodes}
    if spec.reasons is not None:
        budget["reasons"] = list(spec.reasons)
    if spec.schedule is not None:
        budget["schedule"] = spec.schedule
        budget["duration"] = spec.duration
    return budget


DEMO_IMAGE = "public.ecr.aws/eks-distro/kubernetes/pause:3.7"


def demo_deployment(*, name: str = "inflate", namespace: str = "default", cpu: str = "1") -> dict[str, Any]:
    """A Deployment with zero replicas of pause containers that each request a whole CPU: scaling it up
    leaves pods pending until Karpenter launches capacity for them."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000},
                    "containers": [
                        {
                            "name": name,
                            "image": DEMO_IMAGE,
                            "resources": {"requests": {"cpu": cpu}},
                            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True},
                        }
                    ],
                },
            },
        },
    }
