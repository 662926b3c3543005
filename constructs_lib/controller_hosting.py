"""Capacity for the pods that must run before Karpenter has launched any node: the Karpenter
controller itself and CoreDNS. Never Karpenter-managed nodes -- the controller would be scheduling
its own host.

Both hostings' node roles exist, and are mapped in aws-auth, whichever hosting runs: a switch between
them re-applies aws-auth in CloudFormation's update phase, while the old Fargate profile or node group
is deleted only in the cleanup phase, and a role dropped from aws-auth in between leaves the old
hosting's nodes unable to authenticate (CoreDNS and the controller NotReady, the controller's Helm
upgrade timing out: tooling/simulator replays it). The unused role has no instance profile and no
Fargate profile: nothing runs with it until a switch creates the capacity that does."""

from __future__ import annotations

from typing import cast

from aws_cdk import Aws, CfnTag
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from .karpenter.nag import acknowledge, managed_policy_finding, node_policy_reason
from .karpenter.names import (
    CONTROLLER_POD_LABELS,
    COREDNS_POD_LABELS,
    KUBERNETES_VERSION_POD_ANNOTATION,
    NODE_MANAGED_POLICIES,
)

# Karpenter's chart and EKS's CoreDNS both tolerate this taint, and ordinary workloads do not, so
# the system node group stays reserved for them.
SYSTEM_TAINT_KEY = "CriticalAddonsOnly"
SYSTEM_NODE_COUNT = 2


# How aws-cdk-lib 2.275 maps each kind of capacity in aws-auth (aws-eks/lib/fargate-profile.js and
# managed-nodegroup.js): the same mapping for the role of the hosting that does not run.
FARGATE_NODE_USERNAME = "system:node:{{SessionName}}"
FARGATE_NODE_GROUPS = ("system:bootstrappers", "system:nodes", "system:node-proxier")
EC2_NODE_USERNAME = "system:node:{{EC2PrivateDNSName}}"
EC2_NODE_GROUPS = ("system:bootstrappers", "system:nodes")
# The construct id aws-cdk gives the Fargate profile of the one profile below (Cluster.addFargateProfile:
# "fargate-profile-<id>"): the pod execution role keeps its logical id whichever hosting creates it.
FARGATE_PROFILE_ID = "KarpenterAndCoreDns"


def system_node_role(scope: Construct) -> iam.Role:
    """The system node group's role (our own rather than CDK's default, which carries ECR *ReadOnly*: nodes only
    pull), at ``<scope>/NodeRole`` in either hosting."""
    role = iam.Role(
        scope,
        "NodeRole",
        assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
        description="System node group of the Karpenter controller and CoreDNS",
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(p) for p in NODE_MANAGED_POLICIES],
    )
    for policy in NODE_MANAGED_POLICIES:
        acknowledge(role, managed_policy_finding(policy), node_policy_reason(policy) + " (system node group)")
    return role


# The system node group's construct id. The group "SystemNodes" (at Cluster/NodegroupSystemNodes) was created
# without a launch template, and EKS adds none to a node group later: "You can update a node group using a launch
# template only if the node group was originally deployed with a launch template" (EKS API Reference,
# UpdateNodegroupVersion, https://docs.aws.amazon.com/eks/latest/APIReference/API_UpdateNodegroupVersion.html;
# the CloudFormation reference of AWS::EKS::Nodegroup LaunchTemplateSpecification: "After node group creation, you
# cannot use a different ID"). So the group with its own launch template is a new resource, which CloudFormation
# creates in the update phase and whose predecessor it deletes in the cleanup, after the new one is ACTIVE
# (docs/operations.md, "The system node group's launch template").
SYSTEM_NODEGROUP_ID = "SystemNodesV2"
# The system nodes' root volume: EKS's own default size for a node group (what they had without a launch template),
# gp3 and encrypted as Karpenter's node classes write it (constructs_lib/karpenter/specs/ec2.py ebs_volume).
SYSTEM_ROOT_VOLUME_GIB = 20
# The root device of the EKS-optimized Amazon Linux images (AL2 and AL2023, x86_64 and arm64), the only AMI types
# aws-cdk picks for this node group (ami ids are EKS's: the launch template names none).
SYSTEM_ROOT_DEVICE = "/dev/xvda"


def system_ami_type(instance_type: str) -> eks.NodegroupAmiType:
    """The image EKS gives the system nodes: aws-cdk picks it only for a node group without a launch template (the
    first of its choices for the instance type's architecture, AL2023 under the app's feature flags), so the app
    writes the same."""
    if ec2.InstanceType(instance_type).architecture == ec2.InstanceArchitecture.ARM_64:
        return eks.NodegroupAmiType.AL2023_ARM_64_STANDARD
    return eks.NodegroupAmiType.AL2023_X86_64_STANDARD


def system_launch_template(scope: Construct, cluster_name: str) -> ec2.CfnLaunchTemplate:
    """The system node group's launch template: what Karpenter's node classes write for their nodes (IMDSv2 only,
    one hop: pods never reach the node's credentials; an encrypted gp3 root volume), and nothing EKS refuses in a
    managed node group's launch template (CloudFormation reference, AWS::EKS::Nodegroup
    LaunchTemplateSpecification: no SubnetId, IamInstanceProfile, RequestSpotInstances, HibernationOptions or
    TerminateInstances; EKS User Guide, "Customize managed nodes with launch templates"): no instance type (the node
    group's), no image and no user data (EKS's own bootstrap, nothing to merge), no security group (EKS's cluster
    security group, as before)."""
    name = f"{cluster_name}-system-node"
    tags = [CfnTag(key="Name", value=name)]
    return ec2.CfnLaunchTemplate(
        scope,
        "LaunchTemplate",
        launch_template_data=ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
            metadata_options=ec2.CfnLaunchTemplate.MetadataOptionsProperty(
                http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=1
            ),
            block_device_mappings=[
                ec2.CfnLaunchTemplate.BlockDeviceMappingProperty(
                    device_name=SYSTEM_ROOT_DEVICE,
                    ebs=ec2.CfnLaunchTemplate.EbsProperty(
                        volume_size=SYSTEM_ROOT_VOLUME_GIB,
                        volume_type="gp3",
                        encrypted=True,
                        delete_on_termination=True,
                    ),
                )
            ],
            tag_specifications=[
                ec2.CfnLaunchTemplate.TagSpecificationProperty(resource_type=kind, tags=tags)
                for kind in ("instance", "volume")
            ],
        ),
        tag_specifications=[
            ec2.CfnLaunchTemplate.LaunchTemplateTagSpecificationProperty(resource_type="launch-template", tags=tags)
        ],
    )


def _acknowledge_fargate_role(role: iam.IRole) -> None:
    acknowledge(
        role,
        managed_policy_finding("AmazonEKSFargatePodExecutionRolePolicy"),
        "The AWS managed policy EKS requires for Fargate pod execution (image pulls, logs); nothing else is attached.",
    )


def fargate_trust(cluster_name: str, role: iam.IRole) -> None:
    """The confused-deputy guard the EKS User Guide recommends for a pod execution role ("Amazon EKS Pod execution
    IAM role"): only this cluster's Fargate profiles may assume it. The same in both hostings, so a switch changes
    nothing of the role. The cluster's name as written (its physical name): a reference to the cluster would make a
    cycle (the cluster's creation role may pass this role)."""
    cfn = cast(iam.CfnRole, role.node.default_child)
    cfn.add_property_override(
        "AssumeRolePolicyDocument.Statement.0.Condition",
        {
            "ArnLike": {
                "aws:SourceArn": f"arn:{Aws.PARTITION}:eks:{Aws.REGION}:{Aws.ACCOUNT_ID}:fargateprofile/"
                f"{cluster_name}/*"
            }
        },
    )


def keep_mapped(cluster: eks.Cluster, role: iam.IRole, fargate: bool, aws_auth: bool) -> None:
    """Map the role of the hosting that does not run as aws-cdk maps it when it does (``aws_auth``: the cluster's
    mode reads aws-auth; in the API modes EKS keeps its own access entry of a node group or Fargate profile until it
    deletes them)."""
    if aws_auth:
        username, groups = (
            (FARGATE_NODE_USERNAME, FARGATE_NODE_GROUPS) if fargate else (EC2_NODE_USERNAME, EC2_NODE_GROUPS)
        )
        cluster.aws_auth.add_role_mapping(role, username=username, groups=list(groups))


class FargateControllerHosting(Construct):
    """One Fargate profile selecting the Karpenter controller pods and CoreDNS.

    One profile with two selectors rather than two profiles: EKS creates and deletes Fargate
    profiles one at a time, minutes each. CoreDNS on Fargate keeps the cluster nodeless until
    Karpenter launches nodes while DNS (and so the controller's AWS API calls) works.
    """

    # The controller resolves only AWS endpoints (the API server by IP): through the VPC's resolver it neither
    # waits for CoreDNS on create nor needs it while it drains nodes on delete (Karpenter's docs recommend
    # dnsPolicy Default wherever CoreDNS may not be up first).
    controller_dns_policy = "Default"
    # Fargate schedules by profile selector, not by taints.
    controller_tolerations: tuple[dict[str, str], ...] = ()

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: eks.Cluster,
        cluster_name: str,
        kubernetes_version: str,
        karpenter_namespace: str,
        subnets: ec2.SubnetSelection,
        aws_auth: bool,
    ) -> None:
        super().__init__(scope, id)
        # A Kubernetes upgrade re-creates the controller's pods on Fargate nodes of the new minor (names.py).
        self.controller_pod_annotations = {KUBERNETES_VERSION_POD_ANNOTATION: kubernetes_version}
        self.profile = cluster.add_fargate_profile(
            FARGATE_PROFILE_ID,
            selectors=[
                eks.Selector(namespace=karpenter_namespace, labels=dict(CONTROLLER_POD_LABELS)),
                eks.Selector(namespace="kube-system", labels=dict(COREDNS_POD_LABELS)),
            ],
            vpc=cluster.vpc,
            subnet_selection=subnets,
        )
        # What the controller chart must outlive on delete (and wait for on create).
        self.capacity = self.profile
        _acknowledge_fargate_role(self.profile.pod_execution_role)
        fargate_trust(cluster_name, self.profile.pod_execution_role)
        # The node group hosting's role, mapped: a switch to it never deauthorizes this profile before it is gone.
        keep_mapped(cluster, system_node_role(self), fargate=False, aws_auth=aws_auth)


class SystemNodeGroupHosting(Construct):
    """A managed node group of two small nodes in two AZs, tainted for system pods only."""

    controller_dns_policy = "Default"  # as on Fargate: no wait for CoreDNS
    controller_tolerations: tuple[dict[str, str], ...] = ({"key": SYSTEM_TAINT_KEY, "operator": "Exists"},)
    # An upgrade replaces the node group's nodes, and their pods with them.
    controller_pod_annotations: dict[str, str] = {}

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: eks.Cluster,
        cluster_name: str,
        kubernetes_version: str,
        instance_type: str,
        subnets: ec2.SubnetSelection,
        aws_auth: bool,
    ) -> None:
        super().__init__(scope, id)
        self.node_role = system_node_role(self)
        # The Fargate hosting's pod execution role where aws-cdk's profile would create it (same logical id),
        # mapped as aws-cdk maps it: a switch to Fargate never deauthorizes this node group before it is gone.
        fargate_role = iam.Role(
            Construct(cluster, f"fargate-profile-{FARGATE_PROFILE_ID}"),
            "PodExecutionRole",
            assumed_by=iam.ServicePrincipal("eks-fargate-pods.amazonaws.com"),
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name("AmazonEKSFargatePodExecutionRolePolicy")],
        )
        _acknowledge_fargate_role(fargate_role)
        fargate_trust(cluster_name, fargate_role)
        keep_mapped(cluster, fargate_role, fargate=True, aws_auth=aws_auth)
        self.launch_template = system_launch_template(self, cluster_name)
        self.nodegroup = cluster.add_nodegroup_capacity(
            SYSTEM_NODEGROUP_ID,
            launch_template_spec=eks.LaunchTemplateSpec(
                id=self.launch_template.ref, version=self.launch_template.attr_latest_version_number
            ),
            # The instance type stays the node group's (EKS takes it from the node group or the launch template).
            instance_types=[ec2.InstanceType(instance_type)],
            ami_type=system_ami_type(instance_type),
            # Two nodes spread over the private subnets' AZs: the chart's zone spread constraint
            # (DoNotSchedule) needs two zones for two controller replicas.
            min_size=SYSTEM_NODE_COUNT,
            desired_size=SYSTEM_NODE_COUNT,
            max_size=SYSTEM_NODE_COUNT,
            subnets=subnets,
            node_role=self.node_role,
            labels={"node-role": "system"},
            taints=[eks.TaintSpec(effect=eks.TaintEffect.NO_SCHEDULE, key=SYSTEM_TAINT_KEY, value="true")],
        )
        # The node group follows the cluster's Kubernetes minor: aws-cdk writes Version only when given, and a
        # node group left on the old minor blocks the next control-plane upgrade (EKS allows nodes at most the
        # control plane's minor). It references the cluster, so CloudFormation upgrades it after the control plane.
        cfn_nodegroup = cast(eks.CfnNodegroup, self.nodegroup.node.default_child)
        cfn_nodegroup.version = kubernetes_version
        self.capacity = self.nodegroup
