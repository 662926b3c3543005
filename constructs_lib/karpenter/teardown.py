"""Teardown safety net: on stack deletion, remove what Karpenter created outside CloudFormation."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aws_cdk import Aws, CustomResource, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from .nag import acknowledge, arn_prefix, pseudo_values

NODEPOOL_TAG = "karpenter.sh/nodepool"
NODECLASS_TAG = "karpenter.k8s.aws/ec2nodeclass"
HANDLER_DIR = Path(__file__).resolve().parent / "teardown_handler"
# Below the 15-minute Lambda limit. The handler derives its deadlines from the invocation's remaining
# time (8 min drain, 3 min termination, 1 min for launch templates and instance profiles, 1 min to
# answer), so it answers CloudFormation before this timeout on every path.
TIMEOUT = Duration.minutes(14)
# Should the Lambda die without answering (killed, out of memory), CloudFormation gives up after this
# rather than after its default hour; longer than TIMEOUT so that a slow answer still counts.
SERVICE_TIMEOUT = Duration.minutes(15)


# The Phase property of the drain bound (its delete handles instances only) and of the load-balancer
# cleanup (see the handler).
INSTANCES_PHASE = "Instances"
LOAD_BALANCERS_PHASE = "LoadBalancers"
LBC_CLUSTER_TAG = "elbv2.k8s.aws/cluster"  # the AWS Load Balancer Controller's tag on what it creates


class TeardownSafetyNet(Construct):
    """Two custom resources of one function, acting only when the stack itself (in a nested stack: its root
    stack) is being deleted (never on an update rollback or a replacement):

    * ``drain_bound``, deleted after the NodePools and before the EC2NodeClasses: waits up to 8 minutes
      for the pools' nodes to drain (Karpenter deletes a pool's NodeClaims when the pool goes), then
      terminates the instances still running. So a destroy's drains end in bounded time whatever the
      pools' ``terminationGracePeriod`` (none: every PodDisruptionBudget waited for), and each class's
      finalizer finds its nodes gone (Karpenter releases a NotReady node whose instance no longer
      exists: kubernetes-sigs/karpenter, node termination controller).
    * ``resource``, deleted after the EC2NodeClasses: terminates any instance left, deletes the
      cluster's Karpenter launch templates and instance profiles;
    * with :meth:`clean_load_balancers` (a cluster the stack created), ``load_balancers``, deleted after
      the cluster and before the VPC's subnets: deletes the load balancers and security groups that the
      cluster's Services left in its VPC.

    Permissions are scoped to this cluster: instances and launch templates tagged
    ``kubernetes.io/cluster/<cluster>=owned`` and ``karpenter.sh/nodepool``, instance profiles under
    ``/karpenter/<region>/<cluster>/``, the status of this stack only (and, in a nested stack, of its root
    stack, whose status is the one that decides: see the handler). With ``node_pools`` and
    ``node_classes`` (a cluster this app did not create, where other teams may run Karpenter pools of
    their own), only what those pools and classes launched: instances by their ``karpenter.sh/nodepool``
    tag, launch templates and instance profiles by their ``karpenter.k8s.aws/ec2nodeclass`` tag. Order:
    add dependencies to ``resource`` and ``drain_bound`` only (the function, role and log group need no
    order and are created early).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster_name: str,
        node_pools: Sequence[str] | None = None,
        node_classes: Sequence[str] | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.cluster_name = cluster_name
        self.load_balancers: CustomResource | None = None
        if (node_pools is None) != (node_classes is None):
            raise ValueError("node_pools and node_classes scope the safety net together")
        self.log_group = logs.LogGroup(self, "Logs", retention=logs.RetentionDays.ONE_MONTH)
        self.policy = iam.ManagedPolicy(
            self,
            "Policy",
            description=f"Cleanup of Karpenter-created EC2/IAM resources of EKS cluster {cluster_name}",
            statements=[
                iam.PolicyStatement(
                    sid="WriteOwnLogs",
                    actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                    resources=[self.log_group.log_group_arn],
                ),
                iam.PolicyStatement(
                    sid="ReadOwnStackStatus",  # to act only when the stack itself is being deleted
                    actions=["cloudformation:DescribeStacks"],
                    resources=[Aws.STACK_ID],
                ),
                *_root_status_statements(Stack.of(self)),
                *_cleanup_statements(Stack.of(self), cluster_name, node_pools, node_classes),
            ],
        )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            # As a managed policy of the role, it is created before and deleted after the function.
            managed_policies=[self.policy],
        )
        self.function = lambda_.Function(
            self,
            "Handler",
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler="index.handler",
            code=lambda_.Code.from_asset(str(HANDLER_DIR), exclude=["__pycache__", "*.pyc"]),
            timeout=TIMEOUT,
            role=self.role,
            log_group=self.log_group,
            environment={"CLUSTER_NAME": cluster_name},
            description=f"Deletes what Karpenter left behind for EKS cluster {cluster_name} on stack deletion",
        )
        self.resource, self.drain_bound = self._custom_resources(node_pools, node_classes)
        self._acknowledge(cluster_name)

    def _custom_resources(
        self, node_pools: Sequence[str] | None, node_classes: Sequence[str] | None
    ) -> tuple[CustomResource, CustomResource]:
        """The safety net's resource and its drain bound."""
        # (a Delete carries the resource's latest properties: the pools and classes at that time)
        ours = {} if node_pools is None else {"NodePools": list(node_pools), "NodeClasses": list(node_classes or [])}
        resource = CustomResource(
            self,
            "Resource",
            service_token=self.function.function_arn,
            resource_type="Custom::KarpenterTeardown",
            properties={"ClusterName": self.cluster_name, **ours},
            service_timeout=SERVICE_TIMEOUT,
        )
        drain_bound = CustomResource(
            self,
            "DrainBound",
            service_token=self.function.function_arn,
            resource_type="Custom::KarpenterTeardown",
            properties={"ClusterName": self.cluster_name, "Phase": INSTANCES_PHASE, **ours},
            service_timeout=SERVICE_TIMEOUT,
        )
        return resource, drain_bound

    def clean_load_balancers(self, vpc_id: str, vpc_arn: str) -> CustomResource:
        """A third custom resource: on stack deletion, the load balancers and their security groups that
        this cluster's Services and Ingresses left in the VPC (tagged for this cluster by the in-tree AWS
        cloud provider or the AWS Load Balancer Controller). The caller orders it after the cluster and
        before the subnets (their network interfaces and security groups block the VPC's deletion)."""
        cluster_name = self.cluster_name
        stack = Stack.of(self)
        self.policy.add_statements(*_load_balancer_statements(stack, cluster_name, vpc_arn))
        self.load_balancers = CustomResource(
            self,
            "LoadBalancers",
            service_token=self.function.function_arn,
            resource_type="Custom::KarpenterTeardown",
            properties={"ClusterName": cluster_name, "Phase": LOAD_BALANCERS_PHASE, "VpcId": vpc_id},
            service_timeout=SERVICE_TIMEOUT,
        )
        pseudo = pseudo_values(stack)
        for kind in ("elasticloadbalancing", "ec2"):
            resource = "loadbalancer/*" if kind == "elasticloadbalancing" else "security-group/*"
            acknowledge(
                self.policy,
                f"AwsSolutions-IAM5[Resource::{arn_prefix(pseudo, kind)}:{resource}]",
                "Kubernetes creates these load balancers and security groups at run time, so their names are "
                f"unknown to the template; the statements' conditions limit them to those tagged for cluster "
                f"{cluster_name} (and, for security groups, its VPC).",
            )
        return self.load_balancers

    def _acknowledge(self, cluster_name: str) -> None:
        pseudo = pseudo_values(Stack.of(self))
        acknowledge(
            self.policy,
            "AwsSolutions-IAM5[Resource::*]",
            "ec2:DescribeInstances, ec2:DescribeLaunchTemplates and iam:ListInstanceProfiles have no "
            "resource-level permissions; they only read, and every write below is scoped to this cluster.",
        )
        for kind in ("instance", "launch-template"):
            scope = "tagged kubernetes.io/cluster/<cluster>=owned and karpenter.sh/nodepool"
            acknowledge(
                self.policy,
                f"AwsSolutions-IAM5[Resource::{arn_prefix(pseudo, 'ec2')}:{kind}/*]",
                f"Karpenter creates these {kind}s at run time, so their ids are unknown to the template; the "
                f"statement's condition limits it to those {scope}.",
            )
        acknowledge(
            self.policy,
            f"AwsSolutions-IAM5[Resource::{arn_prefix(pseudo, 'iam', regional=False)}:instance-profile/karpenter/"
            f"{pseudo[1]}/{cluster_name}/*]",
            "Karpenter names the instance profiles it creates at run time; the ARN is limited to Karpenter's path "
            "for this cluster and region.",
        )
        for rule, why in (
            ("LambdaConcurrency", "Runs once, on stack deletion; a reserved concurrency would only cap it."),
            ("LambdaDLQ", "Invoked synchronously by CloudFormation, which reports its failures."),
            ("LambdaInsideVPC", "Calls only the EC2 and IAM APIs, never the cluster."),
        ):
            acknowledge(self.function, f"NIST.800.53.R5-{rule}", f"The teardown safety net's handler. {why}")
        acknowledge(
            self.log_group,
            "NIST.800.53.R5-CloudWatchLogGroupEncrypted",
            "The teardown handler logs the ids of the instances, launch templates and instance profiles it "
            "deletes; no secrets. Retention is one month.",
        )


def _root_status_statements(stack: Stack) -> list[iam.PolicyStatement]:
    """In a nested stack, the root stack's status decides (a nested stack reads DELETE_IN_PROGRESS also when an
    update or rollback of its parent removes or replaces it): DescribeStacks on the root's own id, which CDK
    passes down to the nested stack as a parameter (its ARN is not known at synth). None for a root stack."""
    root = stack
    while root.nested_stack_parent is not None:
        root = root.nested_stack_parent
    if root is stack:
        return []
    return [
        iam.PolicyStatement(
            sid="ReadRootStackStatus",  # to act only when the whole app is being deleted
            actions=["cloudformation:DescribeStacks"],
            resources=[root.stack_id],
        )
    ]


def _cleanup_statements(
    stack: Stack, cluster_name: str, node_pools: Sequence[str] | None, node_classes: Sequence[str] | None
) -> list[iam.PolicyStatement]:
    """What the safety net may find and delete: every Karpenter instance, launch template and instance profile of
    the cluster, or only those of ``node_pools`` and ``node_classes``."""
    by_pool, by_class = _tag_conditions(cluster_name, node_pools, node_classes)
    profiles = stack.format_arn(
        service="iam",
        region="",
        resource="instance-profile",
        resource_name=f"karpenter/{stack.region}/{cluster_name}/*",
    )
    return [
        iam.PolicyStatement(
            sid="FindLeftovers",  # Describe/List calls have no resource-level permissions
            actions=["ec2:DescribeInstances", "ec2:DescribeLaunchTemplates", "iam:ListInstanceProfiles"],
            resources=["*"],
        ),
        iam.PolicyStatement(
            sid="TerminateThisClustersKarpenterInstances",
            actions=["ec2:TerminateInstances"],
            resources=[stack.format_arn(service="ec2", resource="instance", resource_name="*")],
            conditions=by_pool,
        ),
        iam.PolicyStatement(
            sid="DeleteThisClustersLaunchTemplates",
            actions=["ec2:DeleteLaunchTemplate"],
            resources=[stack.format_arn(service="ec2", resource="launch-template", resource_name="*")],
            conditions=by_class,
        ),
        iam.PolicyStatement(
            sid="DeleteThisClustersInstanceProfiles",
            actions=["iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
            resources=[profiles],
            conditions=None
            if node_classes is None
            else {"StringEquals": {f"aws:ResourceTag/{NODECLASS_TAG}": list(node_classes)}},
        ),
        *(
            []
            if node_classes is None
            else [
                iam.PolicyStatement(
                    sid="ReadWhichClassMadeAnInstanceProfile",
                    actions=["iam:GetInstanceProfile"],
                    resources=[profiles],
                )
            ]
        ),
    ]


def _tag_conditions(
    cluster_name: str, node_pools: Sequence[str] | None, node_classes: Sequence[str] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The conditions on the tags of instances (by pool) and of launch templates (by class) the safety net may
    delete."""
    owned = {f"aws:ResourceTag/kubernetes.io/cluster/{cluster_name}": "owned"}
    # Every Karpenter pool of the cluster, or only this stack's (a node group's instances and launch
    # templates carry the cluster tag too, never the nodepool tag: as upstream's controller policy).
    by_pool: dict[str, Any] = (
        {"StringEquals": owned, "StringLike": {f"aws:ResourceTag/{NODEPOOL_TAG}": "*"}}
        if node_pools is None
        else {"StringEquals": {**owned, f"aws:ResourceTag/{NODEPOOL_TAG}": list(node_pools)}}
    )
    by_class: dict[str, Any] = (
        by_pool
        if node_classes is None
        else {"StringEquals": {**owned, f"aws:ResourceTag/{NODECLASS_TAG}": list(node_classes)}}
    )
    return by_pool, by_class


def _load_balancer_statements(stack: Stack, cluster_name: str, vpc_arn: str) -> list[iam.PolicyStatement]:
    """What the load-balancer cleanup may find and delete: load balancers and their security groups tagged for
    the cluster by the in-tree AWS cloud provider or the AWS Load Balancer Controller (security groups: in its
    VPC only)."""
    by_cluster = (
        ("InTree", {f"aws:ResourceTag/kubernetes.io/cluster/{cluster_name}": "owned"}),
        ("Controller", {f"aws:ResourceTag/{LBC_CLUSTER_TAG}": cluster_name}),
    )
    return [
        iam.PolicyStatement(
            sid="FindLoadBalancersAndTheirSecurityGroups",  # Describe calls have no resource-level permissions
            actions=[
                "elasticloadbalancing:DescribeLoadBalancers",
                "elasticloadbalancing:DescribeTags",
                "ec2:DescribeSecurityGroups",
            ],
            resources=["*"],
        ),
        *(
            iam.PolicyStatement(
                sid=f"DeleteThisClusters{who}LoadBalancers",
                actions=["elasticloadbalancing:DeleteLoadBalancer"],
                resources=[
                    stack.format_arn(service="elasticloadbalancing", resource="loadbalancer", resource_name="*")
                ],
                conditions={"StringEquals": tag},
            )
            for who, tag in by_cluster
        ),
        *(
            iam.PolicyStatement(
                sid=f"DeleteThisClusters{who}LoadBalancerSecurityGroups",
                actions=["ec2:DeleteSecurityGroup"],
                resources=[stack.format_arn(service="ec2", resource="security-group", resource_name="*")],
                conditions={"StringEquals": tag, "ArnEquals": {"ec2:Vpc": vpc_arn}},
            )
            for who, tag in by_cluster
        ),
    ]
