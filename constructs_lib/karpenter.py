"""Everything Karpenter adds to an EKS cluster, as one construct.

Usable from any CDK app with a cluster it creates (``eks.Cluster``) or imports
(``eks.Cluster.from_cluster_attributes``)::

    karpenter = Karpenter(
        self, "Karpenter",
        cluster=cluster, cluster_name="prod",
        version="1.14.1", template_file="templates/karpenter-1.14.1.yaml",
        node_classes=[NodeClassSpec(ami_alias="al2023@v20260801")],
        node_pools=[NodePoolSpec(name="default", capacity_types=["on-demand"])],
        node_authorization=NodeAuthorization.ACCESS_ENTRY,
    )
    karpenter.controller_chart  # handles: node_role, controller_role, queue_name, node_pools, ...

What it builds, and the order CloudFormation creates and deletes it in:

* the nested stack from Karpenter's CloudFormation template (node role, controller policies,
  interruption queue and its rules), named only by ``cluster_name`` so it is created in parallel
  with the cluster;
* the node role's authorization: an aws-auth mapping (a cluster this app owns) or an EKS access
  entry of type ``EC2_LINUX`` (any cluster whose authentication mode allows access entries); with
  Windows node classes, a Windows node role of their own, authorized the same way (``EC2_WINDOWS``,
  ``eks:kube-proxy-windows``), which the controller may pass to EC2;
* the controller's role, trusted by the cluster's OIDC provider for one service account (IRSA) and,
  with EKS Pod Identity, by an association of that service account;
* the ``karpenter-crd`` then ``karpenter`` Helm charts (the controller after ``controller_after``:
  the capacity it runs on and the DNS it resolves AWS endpoints with);
* the discovery tags: on the subnets it is given and, unless security groups are selected by id, on
  the cluster security group;
* the teardown safety net (deleted after Karpenter's objects, before the controller) and its drain
  bound (deleted after the NodePools, before the EC2NodeClasses: a destroy's drains end in bounded
  time whatever the pools' ``terminationGracePeriod``);
* one EC2NodeClass and one NodePool per spec, after the charts, the node authorization, the safety
  net and ``node_networking`` (deleted before all of them, so nodes drain while their controller,
  authorization, pod networking and security group still exist);
* optionally the spot service-linked role (retained on delete) and alarms on the interruption queue.

Each part acknowledges its own cdk-nag findings (``constructs_lib.nag``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from pathlib import Path

from aws_cdk import Aws, RemovalPolicy, Stack, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct, DependencyGroup, IDependable

from .controller_role import ControllerCredentials, ControllerRole
from .discovery_tag import SecurityGroupTag
from .karpenter_infra import INTERRUPTION_QUEUE, NODE_ROLE, KarpenterInfraStack
from .karpenter_nodes import KarpenterNodes
from .karpenter_release import KarpenterRelease, controller_values
from .nag import EKS_NODE_POLICIES_REASON, acknowledge, managed_policy_finding
from .names import DISCOVERY_TAG_KEY, NODE_GROUPS, NODE_MANAGED_POLICIES, NODE_USERNAME, WINDOWS_NODE_GROUP
from .queue_alarms import InterruptionQueueAlarms
from .specs.controller import ControllerSpec
from .specs.node_class import NodeClassSpec
from .specs.node_overlay import NodeOverlaySpec
from .specs.node_pool import NodePoolSpec
from .teardown import TeardownSafetyNet


class NodeAuthorization(Enum):
    """How Karpenter's nodes are allowed to join the cluster."""

    AWS_AUTH = "aws-auth"  # a mapping in the aws-auth ConfigMap (needs an eks.Cluster this app owns)
    ACCESS_ENTRY = "access-entry"  # an EKS access entry (authentication mode API or API_AND_CONFIG_MAP)
    # both (authentication mode API_AND_CONFIG_MAP): nodes keep joining whichever EKS reads, so the
    # cluster can move to API later without a window where its nodes are not authorized
    AWS_AUTH_AND_ACCESS_ENTRY = "aws-auth+access-entry"


class Karpenter(Construct):
    """Karpenter on one EKS cluster. Handles: :attr:`infra` (the nested stack), :attr:`node_role`,
    :attr:`node_role_name`, :attr:`node_role_arn`, :attr:`queue_name`, :attr:`queue_arn`,
    :attr:`controller_role`, :attr:`crd_chart`, :attr:`controller_chart`, :attr:`node_classes`,
    :attr:`node_pools`, :attr:`node_overlays`, :attr:`node_access`, :attr:`teardown`, :attr:`discovery_tag`."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: eks.ICluster,
        cluster_name: str,
        version: str,
        template_file: str | Path,
        node_classes: Sequence[NodeClassSpec],
        node_pools: Sequence[NodePoolSpec],
        node_authorization: NodeAuthorization,
        node_overlays: Sequence[NodeOverlaySpec] = (),
        namespace: str = "kube-system",
        service_account: str = "karpenter",
        controller_after: Sequence[IDependable] = (),
        controller_dns_policy: str = "ClusterFirst",
        controller_tolerations: Sequence[Mapping[str, str]] = (),
        controller_pod_annotations: Mapping[str, str] | None = None,
        node_networking: Sequence[IDependable] = (),
        discovery_subnets: Sequence[ec2.ISubnet] = (),
        subnet_ids: Sequence[str] = (),
        security_group_ids: Sequence[str] = (),
        service_monitor: bool = False,
        controller: ControllerSpec = ControllerSpec(),
        controller_credentials: ControllerCredentials = ControllerCredentials.IRSA,
        spot_service_linked_role: bool = False,
        interruption_queue_alarms: bool = False,
        alarm_topic_arn: str | None = None,
    ) -> None:
        """
        :param cluster: the cluster, created or imported (an imported one needs its kubectl role, kubectl
            layer and OIDC provider).
        :param cluster_name: the cluster's name as a literal (not the cluster's token): IAM and the queue
            then do not wait for the cluster.
        :param template_file: Karpenter's CloudFormation template for ``version``.
        :param node_authorization: aws-auth mapping or EKS access entry for the node role.
        :param controller_after: what the controller needs before it starts and must outlive it on
            delete (the capacity it runs on, CoreDNS).
        :param node_networking: what Karpenter's nodes need while they exist (vpc-cni, kube-proxy,
            CoreDNS add-ons): created before and deleted after every node class and pool.
        :param discovery_subnets: subnets created in this app that this construct tags for discovery
            (``karpenter.sh/discovery=<cluster_name>``).
        :param subnet_ids: select node subnets by id; unset: by the discovery tag (on ``discovery_subnets``,
            or added by whoever owns the subnets).
        :param controller: feature gates, batching, zonal shift, log level and size of the controller.
        :param controller_credentials: IRSA (anywhere) or EKS Pod Identity (not on Fargate; the
            ``eks-pod-identity-agent`` add-on must run on the controller's nodes: pass it in
            ``controller_after``).
        :param security_group_ids: select node security groups by id; unset: the cluster security group,
            tagged for discovery by this construct.
        """
        super().__init__(scope, id)
        self.cluster = cluster
        for subnet in discovery_subnets:
            Tags.of(subnet).add(DISCOVERY_TAG_KEY, cluster_name)
        self.discovery_tag: SecurityGroupTag | None = None
        if not security_group_ids:
            self.discovery_tag = SecurityGroupTag(
                self,
                "ClusterSecurityGroupDiscoveryTag",
                security_group_id=cluster.cluster_security_group_id,
                key=DISCOVERY_TAG_KEY,
                value=cluster_name,
            )

        self.infra = KarpenterInfraStack(self, "Karpenter", cluster_name=cluster_name, template_file=template_file)
        self.node_role_name = self.infra.node_role_name
        self.node_role_arn = self.infra.node_role_arn
        self.queue_name = self.infra.queue_name
        self.queue_arn = self.infra.queue_arn
        self.node_role = iam.Role.from_role_arn(self, "KarpenterNodeRoleRef", self.node_role_arn, mutable=False)
        self._acknowledge_template()
        self.node_access_entry: eks.AccessEntry | None = None
        self.windows_node_role: iam.Role | None = None
        if any(c.windows for c in node_classes):
            self.windows_node_role = self._windows_node_role()
        self.node_access = self._authorize_nodes(node_authorization)

        self.spot_service_linked_role: iam.CfnServiceLinkedRole | None = None
        if spot_service_linked_role:
            self.spot_service_linked_role = iam.CfnServiceLinkedRole(
                self, "SpotServiceLinkedRole", aws_service_name="spot.amazonaws.com"
            )
            # One per account, shared with every other spot user: deleting it with this stack would
            # break spot launches account-wide (and a later create here fails: it already exists).
            self.spot_service_linked_role.apply_removal_policy(RemovalPolicy.RETAIN)

        self.controller_role = ControllerRole(
            self,
            "ControllerRole",
            cluster=cluster,
            namespace=namespace,
            service_account=service_account,
            managed_policy_arns=self.infra.controller_policy_arns,
            credentials=controller_credentials,
            cluster_name=cluster_name,
        )
        irsa = controller_credentials is ControllerCredentials.IRSA
        self.release = KarpenterRelease(
            self,
            "KarpenterRelease",
            cluster=cluster,
            version=version,
            namespace=namespace,
            values=controller_values(
                cluster_name=cluster_name,
                interruption_queue=self.queue_name,
                service_account=service_account,
                role_arn=self.controller_role.role_arn if irsa else None,
                dns_policy=controller_dns_policy,
                tolerations=[dict(t) for t in controller_tolerations] or None,
                service_monitor=service_monitor,
                controller=controller,
                pod_annotations=controller_pod_annotations,
            ),
        )
        self.crd_chart = self.release.crd_chart
        self.controller_chart = self.release.controller_chart
        windows_pass_role = [self._windows_pass_role(self.windows_node_role)] if self.windows_node_role else []
        if self.controller_role.pod_identity is not None:
            # Create: the association exists before the controller's pods (EKS injects credentials at pod
            # creation). Delete: the controller goes first, so it drains nodes with working credentials.
            self.controller_chart.node.add_dependency(self.controller_role.pod_identity)
        if controller_after:
            # Create: the controller starts on its capacity with DNS. Delete: it goes first, so it is
            # never left without a host or a resolver while it drains nodes.
            self.controller_chart.node.add_dependency(*controller_after)

        # What Karpenter's nodes need while they exist: it outlives the safety net and every node object.
        # (Windows nodes: the controller may pass their role until the last one is gone.)
        node_needs = [
            *node_networking,
            *([self.discovery_tag.resource] if self.discovery_tag else []),
            *windows_pass_role,
        ]
        # On a cluster this app did not create, other teams may run NodePools of their own: the safety net
        # touches only this stack's pools and classes there.
        ours_only = (
            None
            if isinstance(self.cluster, eks.Cluster)
            else ([p.name for p in node_pools], [c.name for c in node_classes])
        )
        self.teardown = self._safety_net(cluster_name, node_needs, ours_only)
        self.nodes = KarpenterNodes(
            self,
            "KarpenterNodes",
            cluster=cluster,
            cluster_name=cluster_name,
            node_role_name=self.node_role_name,
            windows_node_role_name=self.windows_node_role.role_name if self.windows_node_role else None,
            node_classes=node_classes,
            node_pools=node_pools,
            node_overlays=node_overlays,
            # Karpenter's objects go before the controller that runs their finalizers, the authorization
            # that lets their nodes stay in the cluster while they drain, the pod networking and the
            # security group those nodes use.
            depends_on=[*self.release.charts, self.node_access, self.teardown.resource, *node_needs],
            drain_bound=self.teardown.drain_bound,
            feature_gates=controller.feature_gates,
            subnet_ids=subnet_ids,
            security_group_ids=security_group_ids,
        )
        self.node_classes = self.nodes.node_classes
        self.node_pools = self.nodes.node_pools
        self.node_overlays = self.nodes.node_overlays
        if self.spot_service_linked_role is not None:
            # Spot launches need the role: pools that may launch spot are applied after it exists.
            for pool in node_pools:
                if "spot" in pool.capacity_types:
                    self.node_pools[pool.name].node.add_dependency(self.spot_service_linked_role)

        self.queue_alarms: InterruptionQueueAlarms | None = None
        if interruption_queue_alarms:
            self.queue_alarms = InterruptionQueueAlarms(
                self, "InterruptionQueueAlarms", queue_name=self.queue_name, topic_arn=alarm_topic_arn
            )

    def _windows_node_role(self) -> iam.Role:
        """The role of Windows nodes: the node role's trust and managed policies, as a role of its own
        because an EKS access entry is EC2_LINUX or EC2_WINDOWS (EKS's Windows guide: a role per OS)."""
        role = iam.Role(
            self,
            "WindowsNodeRole",
            assumed_by=iam.ServicePrincipal(f"ec2.{Aws.URL_SUFFIX}"),
            description="Windows nodes launched by Karpenter",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(p) for p in NODE_MANAGED_POLICIES],
        )
        for policy in NODE_MANAGED_POLICIES:
            acknowledge(role, managed_policy_finding(policy), EKS_NODE_POLICIES_REASON + " (Karpenter's Windows nodes)")
        return role

    def _windows_pass_role(self, windows_role: iam.Role) -> iam.ManagedPolicy:
        """The template lets the controller pass only its node role to EC2; Windows classes use this one."""
        return iam.ManagedPolicy(
            self,
            "WindowsNodeRolePassRole",
            roles=[self.controller_role.role],
            description="Karpenter controller: pass the Windows node role to EC2",
            statements=[
                iam.PolicyStatement(
                    actions=["iam:PassRole"],
                    resources=[windows_role.role_arn],
                    conditions={"StringEquals": {"iam:PassedToService": f"ec2.{Aws.URL_SUFFIX}"}},
                )
            ],
        )

    def _authorize_nodes(self, how: NodeAuthorization) -> IDependable:
        """The node roles may join the cluster: aws-auth mappings, EKS access entries (EC2_LINUX for the
        node role, EC2_WINDOWS for the Windows node role), or both."""
        roles: list[tuple[str, iam.IRole, str, eks.AccessEntryType, list[str]]] = [
            ("NodeAccessEntry", self.node_role, self.node_role_arn, eks.AccessEntryType.EC2_LINUX, list(NODE_GROUPS))
        ]
        if self.windows_node_role is not None:
            # kube-proxy on Windows runs with the node's identity and needs this group
            roles.append(
                (
                    "WindowsNodeAccessEntry",
                    self.windows_node_role,
                    self.windows_node_role.role_arn,
                    eks.AccessEntryType.EC2_WINDOWS,
                    [*NODE_GROUPS, WINDOWS_NODE_GROUP],
                )
            )
        parts: list[IDependable] = []
        if how in (NodeAuthorization.AWS_AUTH, NodeAuthorization.AWS_AUTH_AND_ACCESS_ENTRY):
            if not isinstance(self.cluster, eks.Cluster):
                raise ValueError(
                    f"node_authorization {how.name} needs an eks.Cluster this app creates; an imported "
                    "cluster's aws-auth ConfigMap is not this app's to manage: use ACCESS_ENTRY"
                )
            for _, role, _, _, groups in roles:
                self.cluster.aws_auth.add_role_mapping(role, username=NODE_USERNAME, groups=groups)
            parts.append(self.cluster.aws_auth)
        if how in (NodeAuthorization.ACCESS_ENTRY, NodeAuthorization.AWS_AUTH_AND_ACCESS_ENTRY):
            for entry_id, _, arn, entry_type, _ in roles:
                # EKS refuses access policies on EC2 entries: the type alone grants what nodes need.
                entry = eks.AccessEntry(
                    self,
                    entry_id,
                    cluster=self.cluster,
                    principal=arn,
                    access_entry_type=entry_type,
                    access_policies=[],
                )
                self.node_access_entry = self.node_access_entry or entry
                parts.append(entry)
        return parts[0] if len(parts) == 1 else DependencyGroup(*parts)

    def _safety_net(
        self,
        cluster_name: str,
        node_needs: Sequence[IDependable],
        ours_only: tuple[list[str], list[str]] | None,
    ) -> TeardownSafetyNet:
        # Deleted after Karpenter's objects and before the controller and the node authorization: the
        # controller is still there to drain, the nodes still authorized, when it waits for them.
        teardown = TeardownSafetyNet(
            self,
            "TeardownSafetyNet",
            cluster_name=cluster_name,
            node_pools=ours_only[0] if ours_only else None,
            node_classes=ours_only[1] if ours_only else None,
        )
        # Only the custom resource is ordered: its function, role and log group are created in parallel
        # with the charts (nothing on the create path is there only for the delete order). While it
        # waits for the last instances, their networking and security group stay.
        teardown.resource.node.add_dependency(self.controller_chart, self.node_access, *node_needs)
        if isinstance(self.cluster, eks.Cluster):
            self._clean_load_balancers(teardown, self.cluster)
        return teardown

    @staticmethod
    def _clean_load_balancers(teardown: TeardownSafetyNet, cluster: eks.Cluster) -> None:
        """A cluster this app creates: its Services' load balancers go after it, before its VPC's subnets.
        (On a cluster this app did not create they belong to its owners and stay.)"""
        vpc = cluster.vpc
        cleanup = teardown.clean_load_balancers(
            vpc.vpc_id, Stack.of(cluster).format_arn(service="ec2", resource="vpc", resource_name=vpc.vpc_id)
        )
        # The cluster's own resource only (not the manifests and charts under the construct): created after
        # the cleanup's no-op, deleted before it, so nothing recreates what it deletes.
        cluster.node.find_child("Resource").node.find_child("Resource").node.add_dependency(cleanup)
        if isinstance(vpc, ec2.Vpc):  # a VPC of this stack: the cleanup goes before its subnets and gateway
            subnets = [s.node.default_child for s in (*vpc.public_subnets, *vpc.private_subnets, *vpc.isolated_subnets)]
            gateway = vpc.node.try_find_child("VPCGW")
            cleanup.node.add_dependency(*[d for d in (*subnets, gateway) if d is not None])

    def _acknowledge_template(self) -> None:
        node_role = self.infra.template.get_resource(NODE_ROLE)
        for policy in NODE_MANAGED_POLICIES:
            acknowledge(node_role, managed_policy_finding(policy), EKS_NODE_POLICIES_REASON + " (Karpenter nodes)")
        acknowledge(
            self.infra.template.get_resource(INTERRUPTION_QUEUE),
            "AwsSolutions-SQS3",
            "Interruption notices are only actionable within the 2-minute spot warning (retention is 300 s); "
            "a dead-letter queue would keep stale notices nobody can act on. Karpenter deletes every message it "
            "receives, parsed or not.",
        )
