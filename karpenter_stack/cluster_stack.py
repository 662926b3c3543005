"""The EKS cluster stack: VPC, cluster, controller hosting, Karpenter and its node configuration."""

from __future__ import annotations

from typing import Any, Sequence

from aws_cdk import Annotations, Aws, CfnOutput, CfnWaitConditionHandle, Environment, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from constructs_lib.cluster_addons import ManagedAddons, retire_coredns_compute_type_patch
from constructs_lib.controller_hosting import (
    SYSTEM_TAINT_KEY,
    FargateControllerHosting,
    SystemNodeGroupHosting,
)
from constructs_lib.controller_role import ControllerRole
from constructs_lib.destroy_policy import apply_destroy_policy
from constructs_lib.discovery_tag import SecurityGroupTag
from constructs_lib.karpenter_nodes import KarpenterNodes
from constructs_lib.karpenter_release import KarpenterRelease, controller_values
from constructs_lib.kubectl_timeouts import bound_kubectl_operations
from constructs_lib import manifests
from constructs_lib.network import ClusterVpc
from constructs_lib.queue_alarms import InterruptionQueueAlarms
from constructs_lib.teardown import TeardownSafetyNet

from . import versions
from .acknowledgments import acknowledge_findings
from .config import AppConfig, ConfigError
from .security import batched_acknowledgments
from .karpenter_infra import KarpenterInfraStack
from constructs_lib.names import DISCOVERY_TAG_KEY, NODE_GROUPS, NODE_USERNAME

ALL_LOG_TYPES = [
    eks.ClusterLoggingTypes.API,
    eks.ClusterLoggingTypes.AUDIT,
    eks.ClusterLoggingTypes.AUTHENTICATOR,
    eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
    eks.ClusterLoggingTypes.SCHEDULER,
]


def endpoint_access(config: AppConfig) -> eks.EndpointAccess:
    """Private only, or private plus a public endpoint restricted to the configured CIDRs. With a
    private-only endpoint CDK runs its kubectl handler inside the VPC."""
    if config.endpoint_access == "private":
        return eks.EndpointAccess.PRIVATE
    return eks.EndpointAccess.PUBLIC_AND_PRIVATE.only_from(*config.public_access_cidrs)


def check_controller_placement(private_subnets: Sequence[ec2.ISubnet], hosting: str) -> None:
    """The chart runs two replicas with hostname anti-affinity and a zone spread constraint
    (DoNotSchedule): they need hosts in two availability zones, which Fargate and the node group take
    from the private subnets."""
    zones = {s.availability_zone for s in private_subnets}
    if len(zones) < 2:
        raise ConfigError(
            f"controllerHosting '{hosting}': the private subnets span {len(zones)} availability zone(s) "
            f"({', '.join(sorted(zones)) or 'none'}); the Karpenter controller's two replicas need private "
            "subnets in at least 2 zones (zone spread, DoNotSchedule)"
        )


def stack_name_for(cluster_name: str) -> str:
    """The stack is named after its cluster; stack names allow no '_'."""
    return cluster_name.replace("_", "-")


class KarpenterClusterStack(Stack):
    """An EKS cluster with no default capacity, autoscaled by Karpenter."""

    def __init__(
        self, scope: Construct, id: str, *, config: AppConfig, nag_packs: Sequence[str] = (), **kwargs: Any
    ) -> None:
        env = Environment(account=config.account, region=config.region) if config.account or config.region else None
        super().__init__(
            scope,
            id,
            env=env,
            description=f"EKS cluster {config.cluster_name} autoscaled by Karpenter {config.karpenter_version}",
            # Refuses DeleteStack up front; EKS deletion protection alone fails only once everything
            # else in the stack is already gone (the cluster is deleted last).
            termination_protection=config.termination_protection,
            **kwargs,
        )
        self.config = config
        name = config.cluster_name
        for warning in config.warnings:
            Annotations.of(self).add_warning_v2("eks-karpenter:kubernetes-version", warning)

        self.network = ClusterVpc(
            self,
            "Network",
            cluster_name=name,
            vpc_id=config.vpc_id,
            cidr=config.vpc_cidr,
            max_azs=config.max_azs,
            nat_gateways=config.nat_gateways,
        )
        if self.network.lookup_pending:
            # The CLI looks the VPC up and runs the app again; this pass's template is never
            # deployed, but must not be empty (CloudFormation validation rejects that).
            CfnWaitConditionHandle(self, "AwaitingVpcLookup")
            return
        private = self.network.private_subnets

        layer_class = versions.KubectlLayer.for_version(config.kubernetes_version).load()
        fargate = config.controller_hosting == "fargate"
        # Role an operator assumes for kubectl (mapped to system:masters); anyone in the account
        # who is allowed sts:AssumeRole on it.
        self.admin_role = iam.Role(
            self,
            "ClusterAdminRole",
            assumed_by=iam.AccountRootPrincipal(),
            description=f"kubectl administrators of EKS cluster {name}",
        )
        # Kubernetes secrets are envelope-encrypted with a key of ours (rotated yearly by KMS).
        self.secrets_key = kms.Key(
            self,
            "SecretsKey",
            description=f"Envelope encryption of Kubernetes secrets in EKS cluster {name}",
            enable_key_rotation=True,
        )
        self.cluster = eks.Cluster(
            self,
            "Cluster",
            cluster_name=name,
            version=versions.eks_kubernetes_version(config.kubernetes_version),
            kubectl_layer=layer_class(self, "KubectlLayer"),
            vpc=self.network.vpc,
            vpc_subnets=[private],
            default_capacity=0,
            cluster_logging=ALL_LOG_TYPES,
            endpoint_access=endpoint_access(config),
            secrets_encryption_key=self.secrets_key,
            deletion_protection=config.deletion_protection or None,
            # EC2 = no patch: CoreDNS's compute type is the managed add-on's configuration below.
            core_dns_compute_type=eks.CoreDnsComputeType.EC2,
            masters_role=self.admin_role,
            output_cluster_name=False,
            output_config_command=False,
            output_masters_role_arn=False,
        )
        if not self.network.created:
            Annotations.of(self.cluster).acknowledge_warning(
                "@aws-cdk/aws-eks:clusterMustManuallyTagSubnet",
                "Existing VPC: its subnets belong to whoever manages that VPC. Karpenter selects them by "
                "id; load-balancer role tags are the VPC owner's to add (README, 'Existing VPC').",
            )
        self.discovery_tag = SecurityGroupTag(
            self,
            "ClusterSecurityGroupDiscoveryTag",
            security_group_id=self.cluster.cluster_security_group_id,
            key=DISCOVERY_TAG_KEY,
            value=name,
        )

        check_controller_placement(self.network.vpc.private_subnets, config.controller_hosting)
        if fargate:
            self.hosting: FargateControllerHosting | SystemNodeGroupHosting = FargateControllerHosting(
                self, "ControllerHosting", cluster=self.cluster,
                karpenter_namespace=config.karpenter_namespace, subnets=private,
            )
            tolerations = None
        else:
            self.hosting = SystemNodeGroupHosting(
                self, "ControllerHosting", cluster=self.cluster,
                instance_type=config.system_node_instance_type, subnets=private,
            )
            tolerations = [{"key": SYSTEM_TAINT_KEY, "operator": "Exists"}]

        if fargate:
            retire_coredns_compute_type_patch(self.cluster)
        self.addons = ManagedAddons(
            self,
            "Addons",
            cluster=self.cluster,
            versions=versions.addon_versions(config.kubernetes_version, dict(config.addon_versions)),
            coredns_on_fargate=fargate,
            coredns_after=[self.hosting.capacity],
        )

        # The cluster name is passed as a literal, not the cluster's token: IAM and the queue do not
        # need the cluster to exist, so CloudFormation creates them in parallel with it.
        self.karpenter = KarpenterInfraStack(
            self, "Karpenter", cluster_name=name, karpenter_version=config.karpenter_version
        )

        node_role = iam.Role.from_role_arn(self, "KarpenterNodeRoleRef", self.karpenter.node_role_arn, mutable=False)
        self.cluster.aws_auth.add_role_mapping(node_role, username=NODE_USERNAME, groups=list(NODE_GROUPS))

        self.spot_service_linked_role: iam.CfnServiceLinkedRole | None = None
        if config.create_spot_service_linked_role:
            self.spot_service_linked_role = iam.CfnServiceLinkedRole(
                self, "SpotServiceLinkedRole", aws_service_name="spot.amazonaws.com"
            )
            # One per account, shared with every other spot user: deleting it with this stack would
            # break spot launches account-wide (and a later create here fails: it already exists).
            self.spot_service_linked_role.apply_removal_policy(RemovalPolicy.RETAIN)

        self.controller_role = ControllerRole(
            self,
            "ControllerRole",
            cluster=self.cluster,
            namespace=config.karpenter_namespace,
            service_account=config.karpenter_service_account,
            managed_policy_arns=self.karpenter.controller_policy_arns,
        )

        self.release = KarpenterRelease(
            self,
            "KarpenterRelease",
            cluster=self.cluster,
            version=config.karpenter_version,
            namespace=config.karpenter_namespace,
            values=controller_values(
                cluster_name=name,
                interruption_queue=self.karpenter.queue_name,
                service_account=config.karpenter_service_account,
                role_arn=self.controller_role.role_arn,
                dns_policy=self.hosting.controller_dns_policy,
                tolerations=tolerations,
                service_monitor=config.service_monitor,
            ),
        )
        # Delete order: the controller goes before the capacity it runs on (the chart already waits
        # for Fargate profiles on create, not for a node group).
        self.release.controller_chart.node.add_dependency(self.hosting.capacity)
        # The controller resolves AWS endpoints through CoreDNS (dnsPolicy ClusterFirst): DNS first on
        # create, and on delete CoreDNS outlives the controller that drains the nodes.
        self.release.controller_chart.node.add_dependency(self.addons.coredns)

        # Deleted after Karpenter's objects and before the controller and aws-auth: the controller is
        # still there to drain, the nodes still authorized, when it waits for them.
        self.teardown = TeardownSafetyNet(self, "TeardownSafetyNet", cluster_name=name)
        # Only the custom resource is ordered: its function, role and log group are created in parallel
        # with the charts (nothing on the create path is there only for the delete order).
        self.teardown.resource.node.add_dependency(self.release.controller_chart, self.cluster.aws_auth)
        # ... and while it waits for the last instances, their networking and security group stay.
        self.teardown.resource.node.add_dependency(*self.addons.addons.values(), self.discovery_tag.resource)

        self.nodes = KarpenterNodes(
            self,
            "KarpenterNodes",
            cluster=self.cluster,
            cluster_name=name,
            node_role_name=self.karpenter.node_role_name,
            node_classes=config.node_classes,
            node_pools=config.node_pools,
            # ... and Karpenter's objects go before the controller that runs their finalizers and before
            # the aws-auth mapping that lets their nodes stay in the cluster while they drain.
            # Their nodes need pod networking (vpc-cni, kube-proxy) and the discovery-tagged security
            # group, so those outlive every node pool and class on delete.
            depends_on=[*self.release.charts, self.cluster.aws_auth, self.teardown.resource,
                        *self.addons.addons.values(), self.discovery_tag.resource],
            subnet_ids=() if self.network.created else self.network.private_subnet_ids,
        )

        if self.spot_service_linked_role is not None:
            # Spot launches need the role: pools that may launch spot are applied after it exists.
            for pool in config.node_pools:
                if "spot" in pool.capacity_types:
                    self.nodes.node_pools[pool.name].node.add_dependency(self.spot_service_linked_role)

        if config.demo_workload:
            # Applied after the node pools exist, so scaling it up has somewhere to go.
            demo = self.cluster.add_manifest("DemoWorkload", manifests.demo_deployment())
            for pool in self.nodes.node_pools.values():
                demo.node.add_dependency(pool)
        if config.interruption_queue_alarms:
            self.queue_alarms = InterruptionQueueAlarms(
                self, "InterruptionQueueAlarms", queue_name=self.karpenter.queue_name, topic_arn=config.alarm_topic_arn
            )

        CfnOutput(self, "ClusterName", value=self.cluster.cluster_name, description="EKS cluster name")
        CfnOutput(
            self,
            "UpdateKubeconfigCommand",
            value=(
                f"aws eks update-kubeconfig --name {self.cluster.cluster_name} --region {Aws.REGION} "
                f"--role-arn {self.admin_role.role_arn}"
            ),
            description="Run this to point kubectl at the cluster (as the cluster admin role)",
        )
        CfnOutput(self, "NodeRoleArn", value=self.karpenter.node_role_arn, description="IAM role of Karpenter-launched nodes")
        CfnOutput(
            self, "ControllerRoleArn", value=self.controller_role.role_arn, description="IRSA role of the Karpenter controller"
        )
        CfnOutput(
            self, "InterruptionQueueName", value=self.karpenter.queue_name, description="SQS queue of interruption events"
        )
        # Once everything is built: what a destroy keeps, and no kubectl operation that can leave
        # CloudFormation waiting an hour.
        apply_destroy_policy(self, retain=config.retain_on_destroy)
        bound_kubectl_operations(self)
        if nag_packs:
            with batched_acknowledgments():
                acknowledge_findings(self, list(nag_packs))
