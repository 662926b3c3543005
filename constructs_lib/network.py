"""The VPC the cluster and Karpenter's nodes live in."""

from __future__ import annotations

from typing import cast

from aws_cdk import Aws, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from .karpenter.nag import acknowledge, registers
from .key_policies import deny_direct_grants

FLOW_LOG_RETENTION = logs.RetentionDays.THREE_MONTHS

# What Vpc.from_lookup returns while its context value is missing.
PLACEHOLDER_VPC_ID = "vpc-12345"
# What CloudWatch Logs does with the flow log key (what aws-cdk's grant_encrypt_decrypt gave it before).
LOGS_KEY_ACTIONS = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*")


def flow_log_key_context() -> str:
    """What the flow log key's CloudWatch Logs statement accepts as the log group's ARN (the encryption context
    CloudWatch Logs sends): this account's log groups in this region. Not the flow log group's own ARN: its name is
    CloudFormation's (a reference to it would make a cycle, the group naming the key), and giving it a written name
    would replace every deployed stack's group and flow log -- and leave a kept production group unreadable."""
    return f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:*"


class ClusterVpc(Construct):
    """A new VPC (public + private subnets) or an existing one looked up by id.

    New VPCs' private subnets carry the load-balancer role tag (Karpenter's discovery tag is the
    Karpenter construct's to add). Tags cannot be added to an imported VPC's subnets from
    CloudFormation, so for an existing VPC :attr:`private_subnet_ids` lets node classes select subnets
    by id instead.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster_name: str,
        vpc_id: str | None,
        cidr: str,
        max_azs: int,
        nat_gateways: int,
    ) -> None:
        super().__init__(scope, id)
        self.created = vpc_id is None
        self.lookup_pending = False
        if vpc_id is not None:
            self.vpc: ec2.IVpc = ec2.Vpc.from_lookup(self, "Vpc", vpc_id=vpc_id)
            # Until the CLI has looked the VPC up (and cached it in cdk.context.json), from_lookup
            # returns a placeholder VPC; building on it would fail validation before the CLI gets
            # the chance to do the lookup and synthesize again.
            self.lookup_pending = self.vpc.vpc_id == PLACEHOLDER_VPC_ID
            self.private_subnet_ids = [s.subnet_id for s in self.vpc.private_subnets]
            return
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(cidr),
            max_azs=max_azs,
            nat_gateways=nat_gateways,
            subnet_configuration=[
                # Only NAT gateways (with their own Elastic IPs) live in the public subnets.
                ec2.SubnetConfiguration(
                    name="Public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24, map_public_ip_on_launch=False
                ),
                # Large private subnets: the VPC CNI gives every pod a VPC address.
                ec2.SubnetConfiguration(name="Private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=19),
            ],
        )
        self.private_subnet_ids = [s.subnet_id for s in self.vpc.private_subnets]
        self._flow_logs(cluster_name)
        self._tag_subnets()

    def _flow_logs(self, cluster_name: str) -> None:
        """All traffic, to an encrypted log group of ours with a bounded retention."""
        self.flow_log_key = kms.Key(
            self, "FlowLogKey", description=f"VPC flow logs of EKS cluster {cluster_name}", enable_key_rotation=True
        )
        # CloudWatch Logs may use the key only for log groups of this account in this region. It sends the log
        # group's ARN as the encryption context kms:EncryptionContext:aws:logs:arn on every call (CloudWatch Logs User
        # Guide, "Encrypt log data in CloudWatch Logs using AWS Key Management Service",
        # https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html: the key policy
        # statement for logs.<region>.amazonaws.com with a condition on that key).
        self.flow_log_key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal(f"logs.{Aws.REGION}.amazonaws.com")],
                actions=list(LOGS_KEY_ACTIONS),
                resources=["*"],
                conditions={"ArnLike": {"kms:EncryptionContext:aws:logs:arn": flow_log_key_context()}},
            )
        )
        deny_direct_grants(self.flow_log_key)
        self.flow_log_group = logs.LogGroup(
            self, "FlowLogGroup", retention=FLOW_LOG_RETENTION, encryption_key=self.flow_log_key
        )
        self.flow_log = self.vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(self.flow_log_group),
            traffic_type=ec2.FlowLogTrafficType.ALL,
        )
        # The confused-deputy guard the VPC User Guide recommends for the delivery role ("IAM role for publishing
        # flow logs to CloudWatch Logs"): only this account's flow logs may assume it.
        role = cast(iam.CfnRole, self.flow_log.node.find_child("IAMRole").node.default_child)
        role.add_property_override(
            "AssumeRolePolicyDocument.Statement.0.Condition",
            {
                "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                "ArnLike": {"aws:SourceArn": f"arn:{Aws.PARTITION}:ec2:{Aws.REGION}:{Aws.ACCOUNT_ID}:vpc-flow-log/*"},
            },
        )

    def _tag_subnets(self) -> None:
        """The load-balancer role tags, and the acknowledgments of the public subnets' route to the internet."""
        for subnet in self.vpc.private_subnets:
            # Where the AWS Load Balancer Controller puts internal load balancers.
            Tags.of(subnet).add("kubernetes.io/role/internal-elb", "1")
        for subnet in self.vpc.public_subnets:
            Tags.of(subnet).add("kubernetes.io/role/elb", "1")
        if registers("NIST80053R5"):
            for subnet in self.vpc.public_subnets:
                acknowledge(
                    subnet.node.find_child("DefaultRoute"),
                    "NIST.800.53.R5-VPCNoUnrestrictedRouteToIGW",
                    "Public subnets exist only for the NAT gateways, which need a route to the internet "
                    "gateway; nothing else runs there and no instance gets a public IP.",
                )
            acknowledge(
                self.flow_log.node.find_child("IAMRole"),
                "NIST.800.53.R5-IAMNoInlinePolicy",
                "CDK attaches this role's permissions as an inline DefaultPolicy scoped to the resources it "
                "serves. (delivery of VPC flow logs to their log group)",
            )

    @property
    def private_subnets(self) -> ec2.SubnetSelection:
        return ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
