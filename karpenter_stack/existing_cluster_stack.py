"""Karpenter on an EKS cluster this app does not create (``existingCluster``)."""

from __future__ import annotations

from typing import Any

from aws_cdk import Annotations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from constructs_lib.karpenter import Karpenter, NodeAuthorization

from .acknowledgments import acknowledge_imported_cluster
from .base_stack import AppStack
from .config import ExistingClusterConfig, ResolvedEnvironment


class KarpenterOnExistingClusterStack(AppStack):
    """Imports the cluster (name, kubectl role, OIDC provider, VPC, subnets, security group) and adds
    the same :class:`Karpenter` construct as the cluster stack. Differences, because the cluster is not
    this app's: nodes join through an EKS access entry (never the cluster's aws-auth ConfigMap); node
    classes select the given subnets and the cluster security group by id (nothing of the cluster's is
    tagged); no add-ons, hosting or network are managed -- the controller runs on the cluster's own nodes
    (the chart keeps it off Karpenter's)."""

    def __init__(self, scope: Construct, id: str, *, environment: ResolvedEnvironment, **kwargs: Any) -> None:
        config = environment.config
        existing = config.existing_cluster
        assert existing is not None, "build() chooses this stack only with existingCluster"
        super().__init__(
            scope,
            id,
            environment=environment,
            description=f"Karpenter {config.karpenter_version} on existing EKS cluster {config.cluster_name}",
            **kwargs,
        )
        self.cluster = self._import_cluster(existing)
        props = environment.karpenter_props(
            cluster=self.cluster,
            node_authorization=NodeAuthorization.ACCESS_ENTRY,
            subnet_ids=existing.subnet_ids,
            security_group_ids=[existing.cluster_security_group_id],
        )
        self.karpenter = Karpenter(self, "Karpenter", props)
        self.add_karpenter_outputs(self.karpenter)
        self.finish()

    def _import_cluster(self, existing: ExistingClusterConfig) -> eks.ICluster:
        # Only CDK's kubectl handler uses the VPC (with a private endpoint it runs in the given subnets).
        vpc = ec2.Vpc.from_vpc_attributes(
            self, "ExistingVpc", vpc_id=existing.vpc_id, availability_zones=self.availability_zones
        )
        private = existing.private_endpoint
        cluster = eks.Cluster.from_cluster_attributes(
            self,
            "ExistingCluster",
            cluster_name=self.config.cluster_name,
            kubectl_role_arn=existing.kubectl_role_arn,
            kubectl_layer=self.resolved.kubectl_layer(self, "KubectlLayer"),
            open_id_connect_provider=iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
                self, "ExistingOidcProvider", existing.open_id_connect_provider_arn
            ),
            cluster_security_group_id=existing.cluster_security_group_id,
            vpc=vpc,
            kubectl_private_subnet_ids=list(existing.subnet_ids) if private else None,
            kubectl_security_group_id=existing.cluster_security_group_id if private else None,
        )
        for subnet in cluster.kubectl_private_subnets or []:
            Annotations.of(subnet).acknowledge_warning(
                "@aws-cdk/aws-ec2:noSubnetRouteTableId",
                "Only CDK's kubectl handler uses these subnets, to place its network interfaces; nothing reads "
                "their route tables.",
            )
        acknowledge_imported_cluster(cluster, private_endpoint=private)
        return cluster
