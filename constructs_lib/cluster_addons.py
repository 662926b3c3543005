"""The cluster's networking and DNS as EKS managed add-ons: vpc-cni, kube-proxy and CoreDNS."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from aws_cdk import aws_eks as eks
from constructs import Construct, IDependable

from .karpenter.names import KUBERNETES_VERSION_POD_ANNOTATION

# Strategic-merge patch that changes nothing: see ``coredns_follows_kubernetes``.
_NO_CHANGE: dict[str, Any] = {}


class ManagedAddons(Construct):
    """One ``AWS::EKS::Addon`` per add-on, at the given versions.

    EKS installs these three as self-managed software with a new cluster and never upgrades them; as
    managed add-ons they have a version per Kubernetes minor, and since each references the cluster,
    CloudFormation updates them after the control plane in the deploy that changes the version.

    ``OVERWRITE`` takes over the self-managed install EKS created; ``preserveOnDelete`` keeps the
    software running when an add-on resource is deleted (an update rollback that created it, a
    replacement): DNS and pod networking of a running cluster never depend on a CloudFormation rollback.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: eks.Cluster,
        versions: Mapping[str, str | None],
        coredns_on_fargate: bool,
        windows_ipam: bool = False,
        coredns_after: Sequence[IDependable] = (),
    ) -> None:
        """:param windows_ipam: Windows nodes get pod IPs from the VPC resource controller, switched on
        in the amazon-vpc-cni ConfigMap, which the vpc-cni add-on owns (a kubectl edit would be
        overwritten): so it is the add-on's configuration value."""
        super().__init__(scope, id)
        self.addons: dict[str, eks.CfnAddon] = {}
        settings: dict[str, dict[str, str]] = {
            # The add-on's own switch (replacing aws-cdk's kubectl patch of the deployment).
            "coredns": {"computeType": "Fargate"} if coredns_on_fargate else {},
            # A string, as the add-on's configuration schema has it.
            "vpc-cni": {"enableWindowsIpam": "true"} if windows_ipam else {},
        }
        for name, version in versions.items():
            configuration = json.dumps(settings[name]) if settings.get(name) else None
            self.addons[name] = eks.CfnAddon(
                self,
                name,
                addon_name=name,
                cluster_name=cluster.cluster_name,
                addon_version=version,
                resolve_conflicts="OVERWRITE",
                preserve_on_delete=True,
                configuration_values=configuration,
            )
        # CoreDNS pods need somewhere to run before EKS reports the add-on active.
        for dependency in coredns_after:
            self.addons["coredns"].node.add_dependency(dependency)

    @property
    def coredns(self) -> eks.CfnAddon:
        return self.addons["coredns"]


def coredns_follows_kubernetes(
    cluster: eks.Cluster, kubernetes_version: str, coredns: eks.CfnAddon
) -> eks.KubernetesPatch:
    """CoreDNS on Fargate: annotates its pod template with the Kubernetes minor, so an upgrade re-creates its
    pods on Fargate nodes of the new minor (names.py) -- the CoreDNS add-on's version may stay the same from one
    minor to the next (1.35 and 1.36 list one version), and then EKS would not roll them.

    It is aws-cdk's CoreDNS patch resource (same construct id, so the same logical id). Earlier versions of this
    app ran CoreDNS on Fargate with aws-cdk's ``core_dns_compute_type`` patch, whose *delete* re-applies
    ``eks.amazonaws.com/compute-type: ec2``: dropping the resource would roll CoreDNS off Fargate onto nodes a
    Karpenter cluster may not have (a DNS outage). Its delete restores nothing; applied after the add-on
    (``OVERWRITE`` manages the add-on's own fields, not this annotation).
    """
    patch = eks.KubernetesPatch(
        cluster,
        "CoreDnsComputeTypePatch",
        cluster=cast(eks.ICluster, cluster),  # (jsii's typing: Cluster lacks ICluster.kubectl_provider)
        resource_name="deployment/coredns",
        resource_namespace="kube-system",
        apply_patch={
            "spec": {"template": {"metadata": {"annotations": {KUBERNETES_VERSION_POD_ANNOTATION: kubernetes_version}}}}
        },
        restore_patch=_NO_CHANGE,
    )
    patch.node.add_dependency(coredns)
    return patch
