"""The Kubernetes objects of a set of specs, and the demo workload. Each spec builds its own object
(``NodeClassSpec.manifest``, ``NodePoolSpec.manifest``, ``NodeOverlaySpec.manifest``); what is here is
what joins them: each pool's operating system comes from its class, Windows classes take their own role."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .specs.base import quoted
from .specs.node_class import NodeClassSpec
from .specs.node_overlay import NodeOverlaySpec
from .specs.node_pool import NodePoolSpec


def node_objects(
    node_classes: Sequence[NodeClassSpec],
    node_pools: Sequence[NodePoolSpec],
    *,
    cluster_name: str,
    node_role_name: str,
    node_overlays: Sequence[NodeOverlaySpec] = (),
    windows_node_role_name: str | None = None,
    subnet_ids: Sequence[str] = (),
    security_group_ids: Sequence[str] = (),
    volume_key_arn: str | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Every EC2NodeClass, NodePool and NodeOverlay by name; each pool's kubernetes.io/os follows its
    class's family, Windows classes launch with ``windows_node_role_name`` (when given), and the volumes of classes
    with ``volumeKmsKey`` create name ``volume_key_arn`` (the construct's key).

    The specs are expected to fit together: the Karpenter construct checks that once, before it builds them
    (``specs.rules.check_nodes``), and this does not check it again."""
    classes = {c.name: c for c in node_classes}
    return (
        {
            c.name: c.manifest(
                cluster_name=cluster_name,
                node_role_name=(windows_node_role_name if c.windows else None) or node_role_name,
                subnet_ids=subnet_ids,
                security_group_ids=security_group_ids,
                volume_key_arn=volume_key_arn,
            )
            for c in node_classes
        },
        {p.name: p.manifest(os=_operating_system(p, classes)) for p in node_pools},
        {o.name: o.manifest() for o in node_overlays},
    )


def _operating_system(pool: NodePoolSpec, classes: dict[str, NodeClassSpec]) -> str:
    if pool.node_class not in classes:  # nothing to build the pool for
        raise ValueError(
            f"nodePools {quoted(pool.name)}: no node class {quoted(pool.node_class)} among the specs given"
        )
    return classes[pool.node_class].operating_system


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
