"""Apply EC2NodeClasses and NodePools to the cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from aws_cdk import CfnResource, RemovalPolicy, Token
from aws_cdk import aws_eks as eks
from constructs import Construct, IDependable

from . import manifests
from .specs.controller import FeatureGate
from .specs.node_class import NodeClassSpec
from .specs.node_objects import NodeObjects
from .specs.node_overlay import NodeOverlaySpec
from .specs.node_pool import NodePoolSpec

# On each node object's custom resource during the handover (NodeObjects.HANDOVER).
HANDOVER_PROPERTY = "RetainedForHandover"


class KarpenterNodes(Construct):
    """One ``add_manifest`` per object, so each is created, updated and deleted on its own.

    Dependencies: every object on the charts (the CRDs must exist, and on delete the objects go
    before the controller that runs their finalizers); every NodePool on its EC2NodeClass (on delete
    pools drain their nodes before the class removes instance profiles and launch templates); with a
    ``drain_bound``, every NodePool on it and it on every EC2NodeClass (on delete it runs between the
    two: the pools' drains end before any class waits for them).

    Each object is applied over one of its name that the cluster already runs (``overwrite``: aws-cdk's kubectl
    handler then creates it with ``kubectl apply``, not ``kubectl create``, which fails on an existing object), so a
    running install's pools and classes are adopted by the first deploy; from then on the stack owns them.

    The objects are built from the specs as given: whether pools, classes, overlays and ``feature_gates``
    fit together is checked once, before, by the :class:`~constructs_lib.karpenter.Karpenter` construct that
    builds this (``specs.rules.check_nodes``).

    ``delivery`` (:class:`~constructs_lib.karpenter.props.NodeObjects`) says who applies them: the stack (as above),
    the stack retaining every object (``HANDOVER``: each resource's DeletionPolicy is Retain, so an object that
    leaves the stack keeps running), or a GitOps tool (``GITOPS``: no resource). In both, :attr:`gitops_objects` holds
    them for the tool, in the order they are applied (classes, then overlays, then pools), every value known at synth
    (the node role by ``gitops_node_role_name``, the name the template gives it).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: eks.ICluster,
        cluster_name: str,
        node_role_name: str,
        windows_node_role_name: str | None = None,
        node_classes: Sequence[NodeClassSpec],
        node_pools: Sequence[NodePoolSpec],
        node_overlays: Sequence[NodeOverlaySpec],
        depends_on: Sequence[IDependable],
        drain_bound: Construct | None = None,
        feature_gates: Mapping[FeatureGate, bool],
        subnet_ids: Sequence[str] = (),
        security_group_ids: Sequence[str] = (),
        delivery: NodeObjects = NodeObjects.STACK,
        volume_key_arn: str | None = None,
        gitops_node_role_name: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.node_classes: dict[str, eks.KubernetesManifest] = {}
        self.node_pools: dict[str, eks.KubernetesManifest] = {}
        self.node_overlays: dict[str, eks.KubernetesManifest] = {}
        self.gitops_objects: list[dict[str, Any]] = []

        def render(role: str) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
            return manifests.node_objects(
                node_classes,
                node_pools,
                node_overlays=node_overlays,
                cluster_name=cluster_name,
                node_role_name=role,
                windows_node_role_name=windows_node_role_name,
                subnet_ids=subnet_ids,
                security_group_ids=security_group_ids,
                volume_key_arn=volume_key_arn,
            )

        if delivery is not NodeObjects.STACK:  # what a GitOps tool applies, or takes over after the handover
            classes, pools, overlays = render(gitops_node_role_name or node_role_name)
            self.gitops_objects = [*classes.values(), *overlays.values(), *pools.values()]
            for obj in self.gitops_objects:
                _known_at_synth(obj, f"{obj['kind']}/{obj['metadata']['name']}")
        if delivery is NodeObjects.GITOPS:
            return
        self._apply(cluster, render(node_role_name), node_pools, depends_on, drain_bound)
        if delivery is NodeObjects.HANDOVER:
            for manifest in (*self.node_classes.values(), *self.node_pools.values(), *self.node_overlays.values()):
                resource = cast(CfnResource, manifest.node.default_child)
                # The custom resource only: its deletion then leaves the object in the cluster.
                resource.apply_removal_policy(RemovalPolicy.RETAIN)
                # ... and a property the handler ignores, so that the handover's deploy updates the resource:
                # CloudFormation has treated a change of DeletionPolicy alone as no change and kept the old policy
                # (cloudformation-coverage-roadmap#1543, aws-cdk#11521); the update re-applies the same objects.
                resource.add_property_override(HANDOVER_PROPERTY, True)

    def _apply(
        self,
        cluster: eks.ICluster,
        objects: tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], dict[str, dict[str, Any]]],
        node_pools: Sequence[NodePoolSpec],
        depends_on: Sequence[IDependable],
        drain_bound: Construct | None,
    ) -> None:
        """One manifest per object, ordered as the class says."""
        class_objects, pool_objects, overlay_objects = objects
        for name, obj in class_objects.items():
            manifest = _applied_over(cluster, f"EC2NodeClass-{name}", obj)
            manifest.node.add_dependency(*depends_on)  # one call into jsii, not one per dependency
            self.node_classes[name] = manifest
        pools_after = list(depends_on)
        if drain_bound is not None:
            drain_bound.node.add_dependency(*self.node_classes.values())
            pools_after.append(drain_bound)
        for spec in node_pools:
            manifest = _applied_over(cluster, f"NodePool-{spec.name}", pool_objects[spec.name])
            manifest.node.add_dependency(*pools_after, self.node_classes[spec.node_class])
            self.node_pools[spec.name] = manifest
        for name, obj in overlay_objects.items():
            # Read by the controller when it simulates launches; no finalizer, no node depends on it.
            manifest = _applied_over(cluster, f"NodeOverlay-{name}", obj)
            manifest.node.add_dependency(*depends_on)
            self.node_overlays[name] = manifest


def _applied_over(cluster: eks.ICluster, id: str, obj: Mapping[str, object]) -> eks.KubernetesManifest:
    """``cluster.add_manifest(id, obj)`` (its construct path and logical id), applied over a running object of that
    name: the manifest's ``Overwrite`` property (as ``KubernetesManifest(overwrite=True)`` writes it; an imported
    cluster's proxy cannot be a construct's scope in Python, so the property is set on the custom resource)."""
    manifest = cluster.add_manifest(id, dict(obj))
    cast(CfnResource, manifest.node.default_child).add_property_override("Overwrite", True)
    return manifest


def _known_at_synth(value: object, where: str, path: str = "") -> None:
    """A GitOps tool applies the objects as written: a value CloudFormation would resolve at deploy is refused,
    naming the object and the field."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            _known_at_synth(item, where, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _known_at_synth(item, where, f"{path}[{i}]")
    elif isinstance(value, str) and Token.is_unresolved(value):
        raise ValueError(
            f"{where}: {path} is known only when the stack deploys ({value}); node objects for a GitOps tool "
            "(node_objects GITOPS) need every value at synth: give it as a literal"
        )
