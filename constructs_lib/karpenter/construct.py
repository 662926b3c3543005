"""Everything Karpenter adds to an EKS cluster, as one construct.

Usable from any CDK app, with one props object (:class:`KarpenterProps`), with a cluster it creates (``eks.Cluster``) or imports
(``eks.Cluster.from_cluster_attributes``)::

    karpenter = Karpenter(
        self, "Karpenter",
        KarpenterProps(
            cluster=cluster, cluster_name="prod",
            version="1.14.1", template_file="templates/karpenter-1.14.1.yaml",
            node_classes=[NodeClassSpec(ami_alias="al2023@v20260801")],
            node_pools=[NodePoolSpec(name="default", capacity_types=["on-demand"])],
            node_authorization=NodeAuthorization.ACCESS_ENTRY,
        ),
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
  the capacity it runs on and the DNS it resolves AWS endpoints with); on an imported cluster the CRD
  chart is retained on delete (never ``helm uninstall``-ed: that would delete the CRDs and every NodePool,
  NodeClaim and EC2NodeClass in the cluster, other teams' included);
* the discovery tags: on the subnets it is given and, unless security groups are selected by id, on
  the cluster security group;
* the teardown safety net (deleted after Karpenter's objects, before the controller) and its drain
  bound (deleted after the NodePools, before the EC2NodeClasses: a destroy's drains end in bounded
  time whatever the pools' ``terminationGracePeriod``);
* one EC2NodeClass and one NodePool per spec, after the charts, the node authorization, the safety
  net and ``node_networking`` (deleted before all of them, so nodes drain while their controller,
  authorization, pod networking and security group still exist);
* with node classes whose volumes name a customer-managed KMS key: the key (``create``: rotated yearly, its key
  policy letting the controller and EC2's launching service-linked roles use it) or the controller's use of the
  keys named (an IAM policy scoped to their ARNs), kept while nodes exist (``volume_key.py``);
* optionally the spot service-linked role (retained on delete) and alarms on the interruption queue.

Before it adds anything, it refuses specs that do not fit together (``specs.rules``, :meth:`Karpenter.check`):
duplicate names, a pool whose class is not given, reserved capacity without reservations or with its gate off,
static capacity or overlays with their gate off, a Windows pool that allows only arm64, an AMI alias without
images for ``kubernetes_version``, a chart value of ``controller.chart_values`` the release's chart does not take or
the construct writes itself. Each part acknowledges its own cdk-nag findings (``constructs_lib.karpenter.nag``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from aws_cdk import Aws, RemovalPolicy, Stack, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct, DependencyGroup, IDependable

from .controller_role import ControllerCredentials, ControllerRole
from .discovery_tag import SecurityGroupTag
from .infra import INTERRUPTION_QUEUE, NODE_ROLE, KarpenterInfraStack
from .nag import acknowledge, managed_policy_finding, node_policy_reason
from .names import DISCOVERY_TAG_KEY, NODE_GROUPS, NODE_MANAGED_POLICIES, NODE_USERNAME, WINDOWS_NODE_GROUP
from .nodes import KarpenterNodes
from .props import KarpenterProps, NodeAuthorization
from .queue_alarms import InterruptionQueueAlarms
from .release import KarpenterRelease, controller_values
from .specs.node_objects import NodeObjects
from .specs.rules import NodeSpecsError, check_nodes, own_role_classes, role_name
from .teardown import TeardownSafetyNet
from .volume_key import VolumeKeys

__all__ = ["Karpenter", "KarpenterProps", "NodeAuthorization", "NodeSpecsError"]


class Karpenter(Construct):
    """Karpenter on one EKS cluster, built from :class:`KarpenterProps` (kept as :attr:`props`). Handles:
    :attr:`infra` (the nested stack), :attr:`node_role`, :attr:`node_role_name`, :attr:`node_role_arn`,
    :attr:`queue_name`, :attr:`queue_arn`, :attr:`controller_role`, :attr:`crd_chart`, :attr:`controller_chart`,
    :attr:`node_classes`, :attr:`node_pools`, :attr:`node_overlays`, :attr:`gitops_objects`, :attr:`node_access`,
    :attr:`teardown`, :attr:`discovery_tag`, :attr:`spot_service_linked_role`, :attr:`queue_alarms`,
    :attr:`volume_key` (the key of classes with ``volumeKmsKey`` create) and :attr:`volume_keys`."""

    def __init__(self, scope: Construct, id: str, props: KarpenterProps) -> None:
        # Before anything is added to the scope: specs that do not fit together build nothing.
        where = "/".join(p for p in (scope.node.path, id) if p)
        Karpenter.check(props, where)
        Karpenter._check_inputs(props, where)
        super().__init__(scope, id)
        self.props = props
        self.cluster = props.cluster
        self.discovery_tag = self._discovery_tags()
        self.infra = KarpenterInfraStack(
            self, "Karpenter", cluster_name=props.cluster_name, template_file=props.template_file
        )
        self.node_role_name = self.infra.node_role_name
        self.node_role_arn = self.infra.node_role_arn
        self.queue_name = self.infra.queue_name
        self.queue_arn = self.infra.queue_arn
        self.node_role = iam.Role.from_role_arn(self, "KarpenterNodeRoleRef", self.node_role_arn, mutable=False)
        self._acknowledge_template()
        self.node_access_entry: eks.AccessEntry | None = None
        self.windows_node_role = self._windows_node_role() if any(c.windows for c in props.node_classes) else None
        self.node_access = self._authorize_nodes(props.node_authorization)
        self.spot_service_linked_role = self._spot_service_linked_role() if props.spot_service_linked_role else None
        self.controller_role = ControllerRole(
            self,
            "ControllerRole",
            cluster=props.cluster,
            namespace=props.namespace,
            service_account=props.service_account,
            managed_policy_arns=self.infra.controller_policy_arns,
            credentials=props.controller_credentials,
            cluster_name=props.cluster_name,
        )
        self.own_node_roles_pass = self._own_pass_role() if props.own_node_roles else None
        self.volume_keys = self._volume_keys()
        self.volume_key = self.volume_keys.key if self.volume_keys else None
        self.release = self._release()
        self.crd_chart = self.release.crd_chart
        self.controller_chart = self.release.controller_chart
        node_needs = self._order_controller()
        self.teardown = self._safety_net(props.cluster_name, node_needs, self._ours_only())
        self.nodes = self._nodes(node_needs)
        self.node_classes = self.nodes.node_classes
        self.node_pools = self.nodes.node_pools
        self.node_overlays = self.nodes.node_overlays
        self.gitops_objects = self.nodes.gitops_objects
        self.queue_alarms = (
            InterruptionQueueAlarms(
                self, "InterruptionQueueAlarms", queue_name=self.queue_name, topic_arn=props.alarm_topic_arn
            )
            if props.interruption_queue_alarms
            else None
        )

    @staticmethod
    def check(props: KarpenterProps, where: str = "Karpenter") -> None:
        """The rules across the node specs, the controller's feature gates and the Kubernetes version
        (``specs.rules``): :class:`~constructs_lib.karpenter.specs.rules.NodeSpecsError` naming ``where`` and each
        problem of the first rule that finds any."""
        check_nodes(
            where,
            node_classes=props.node_classes,
            node_pools=props.node_pools,
            node_overlays=props.node_overlays,
            feature_gates=props.controller.feature_gates,
            kubernetes_version=props.kubernetes_version,
            karpenter_version=props.version,
            own_node_roles=props.own_node_roles,
            controller=props.controller,
            pod_annotations=list(props.controller_pod_annotations or {}),
            node_objects=props.node_objects,
        )

    @staticmethod
    def _check_inputs(props: KarpenterProps, where: str) -> None:
        """What the construct reads from its inputs before it builds: the template file, and where node security
        groups come from (by id, or the cluster security group, which an imported cluster must name)."""
        if not Path(props.template_file).is_file():
            raise ValueError(
                f"{where}: template_file {str(props.template_file)!r}: no such file (a relative path is read from the "
                "working directory)"
            )
        if props.security_group_ids or isinstance(props.cluster, eks.Cluster):
            return
        try:
            props.cluster.cluster_security_group_id  # noqa: B018  (an imported cluster's raises when not given)
        except RuntimeError:
            raise ValueError(
                f"{where}: the imported cluster has no cluster security group, which node security groups are "
                "selected by: give cluster_security_group_id to eks.Cluster.from_cluster_attributes, or select them "
                "by id (security_group_ids)"
            ) from None

    def _discovery_tags(self) -> SecurityGroupTag | None:
        """The discovery tag on the given subnets and, unless security groups are selected by id, on the cluster
        security group (the tag's custom resource, returned)."""
        props = self.props
        for subnet in props.discovery_subnets:
            Tags.of(subnet).add(DISCOVERY_TAG_KEY, props.cluster_name)
        if props.security_group_ids:
            return None
        return SecurityGroupTag(
            self,
            "ClusterSecurityGroupDiscoveryTag",
            security_group_id=props.cluster.cluster_security_group_id,
            key=DISCOVERY_TAG_KEY,
            value=props.cluster_name,
        )

    def _spot_service_linked_role(self) -> iam.CfnServiceLinkedRole:
        role = iam.CfnServiceLinkedRole(self, "SpotServiceLinkedRole", aws_service_name="spot.amazonaws.com")
        # One per account, shared with every other spot user: deleting it with this stack would
        # break spot launches account-wide (and a later create here fails: it already exists).
        role.apply_removal_policy(RemovalPolicy.RETAIN)
        return role

    def _release(self) -> KarpenterRelease:
        props = self.props
        irsa = props.controller_credentials is ControllerCredentials.IRSA
        return KarpenterRelease(
            self,
            "KarpenterRelease",
            cluster=props.cluster,
            version=props.version,
            namespace=props.namespace,
            # A cluster this app did not create: a destroy leaves its Karpenter CRDs (and whatever other teams
            # keep in them) in place.
            keep_crds=not isinstance(self.cluster, eks.Cluster),
            values=controller_values(
                cluster_name=props.cluster_name,
                interruption_queue=self.queue_name,
                service_account=props.service_account,
                role_arn=self.controller_role.role_arn if irsa else None,
                dns_policy=props.controller_dns_policy,
                tolerations=[dict(t) for t in props.controller_tolerations] or None,
                service_monitor=props.service_monitor,
                controller=props.controller,
                pod_annotations=props.controller_pod_annotations,
            ),
        )

    def _order_controller(self) -> list[IDependable]:
        """The controller after its credentials and ``controller_after``; returns what Karpenter's nodes need
        while they exist (it outlives the safety net and every node object)."""
        windows_pass_role = [self._windows_pass_role(self.windows_node_role)] if self.windows_node_role else []
        if self.controller_role.pod_identity is not None:
            # Create: the association exists before the controller's pods (EKS injects credentials at pod
            # creation). Delete: the controller goes first, so it drains nodes with working credentials.
            self.controller_chart.node.add_dependency(self.controller_role.pod_identity)
        if self.props.controller_after:
            # Create: the controller starts on its capacity with DNS. Delete: it goes first, so it is
            # never left without a host or a resolver while it drains nodes.
            self.controller_chart.node.add_dependency(*self.props.controller_after)
        # (Windows nodes: the controller may pass their role until the last one is gone; volumes with a customer
        # key: the controller may use it until then.)
        volume_keys = [k for k in (self.volume_key, self.volume_keys and self.volume_keys.grants) if k is not None]
        return [
            *self.props.node_networking,
            *([self.discovery_tag.resource] if self.discovery_tag else []),
            *windows_pass_role,
            *volume_keys,
        ]

    def _ours_only(self) -> tuple[list[str], list[str]] | None:
        """On a cluster this app did not create, other teams may run NodePools of their own: the safety net
        touches only this construct's pools and classes there."""
        if isinstance(self.cluster, eks.Cluster):
            return None
        return [p.name for p in self.props.node_pools], [c.name for c in self.props.node_classes]

    def _nodes(self, node_needs: Sequence[IDependable]) -> KarpenterNodes:
        props = self.props
        nodes = KarpenterNodes(
            self,
            "KarpenterNodes",
            cluster=props.cluster,
            cluster_name=props.cluster_name,
            node_role_name=self.node_role_name,
            # (for a GitOps tool, the name the template gives the role: a literal, known before it exists)
            gitops_node_role_name=self.infra.node_role_literal_name,
            windows_node_role_name=self.windows_node_role.role_name if self.windows_node_role else None,
            node_classes=props.node_classes,
            node_pools=props.node_pools,
            node_overlays=props.node_overlays,
            # Karpenter's objects go before the controller that runs their finalizers, the authorization
            # that lets their nodes stay in the cluster while they drain, the pod networking and the
            # security group those nodes use.
            depends_on=[*self.release.charts, self.node_access, self.teardown.resource, *node_needs],
            drain_bound=self.teardown.drain_bound,
            feature_gates=props.controller.feature_gates,
            subnet_ids=props.subnet_ids,
            security_group_ids=props.security_group_ids,
            delivery=props.node_objects,
            volume_key_arn=self.volume_key.key_arn if self.volume_key else None,
        )
        if self.spot_service_linked_role is not None and props.node_objects is not NodeObjects.GITOPS:
            # Spot launches need the role: pools that may launch spot are applied after it exists.
            for pool in props.node_pools:
                if "spot" in (pool.listed("karpenter.sh/capacity-type") or ["spot"]):
                    nodes.node_pools[pool.name].node.add_dependency(self.spot_service_linked_role)
        return nodes

    def _volume_keys(self) -> VolumeKeys | None:
        """The key of classes with volumeKmsKey create, and the controller's use of the keys of others the classes
        name (constructs_lib.karpenter.volume_key); None when no class names a key."""
        classes = self.props.node_classes
        create = any(c.creates_volume_key for c in classes)
        arns = list(dict.fromkeys(arn for c in classes for arn in c.volume_key_arns))
        if not create and not arns:
            return None
        return VolumeKeys(
            self,
            "VolumeKeys",
            cluster_name=self.props.cluster_name,
            controller_role=self.controller_role.role,
            create=create,
            key_arns=arns,
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
            acknowledge(
                role, managed_policy_finding(policy), node_policy_reason(policy) + " (Karpenter's Windows nodes)"
            )
        return role

    def _windows_pass_role(self, windows_role: iam.Role) -> iam.ManagedPolicy:
        """The template lets the controller pass only its node role to EC2; Windows classes use this one."""
        return self._pass_role("WindowsNodeRolePassRole", "the Windows node role", [windows_role.role_arn])

    def _own_pass_role(self) -> iam.ManagedPolicy:
        """The node roles you already have (own_node_roles), passed to EC2 for their instance profiles."""
        return self._pass_role(
            "OwnNodeRolesPassRole", "the node roles of classes that name their own", list(self.props.own_node_roles)
        )

    def _pass_role(self, id: str, what: str, arns: list[str]) -> iam.ManagedPolicy:
        """The controller may pass ``arns`` to EC2 only, as the template's policy passes its node role."""
        return iam.ManagedPolicy(
            self,
            id,
            roles=[self.controller_role.role],
            description=f"Karpenter controller: pass {what} to EC2",
            statements=[
                iam.PolicyStatement(
                    actions=["iam:PassRole"],
                    resources=arns,
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
        for arn, classes in own_role_classes(self.props.node_classes, self.props.own_node_roles).items():
            windows = any(c.windows for c in classes)
            key = re.sub(r"[^A-Za-z0-9]", "", role_name(arn))
            roles.append(
                (
                    f"OwnNodeAccess{key}",
                    iam.Role.from_role_arn(self, f"OwnNodeRole{key}", arn, mutable=False),
                    arn,
                    eks.AccessEntryType.EC2_WINDOWS if windows else eks.AccessEntryType.EC2_LINUX,
                    [*NODE_GROUPS, WINDOWS_NODE_GROUP] if windows else list(NODE_GROUPS),
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
            acknowledge(node_role, managed_policy_finding(policy), node_policy_reason(policy) + " (Karpenter nodes)")
        acknowledge(
            self.infra.template.get_resource(INTERRUPTION_QUEUE),
            "AwsSolutions-SQS3",
            "Interruption notices are only actionable within the 2-minute spot warning (retention is 300 s); "
            "a dead-letter queue would keep stale notices nobody can act on. Karpenter deletes every message it "
            "receives, parsed or not.",
        )
