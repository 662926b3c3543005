"""Tag the EKS-created cluster security group for Karpenter discovery."""

from __future__ import annotations

from typing import cast

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import custom_resources as cr
from constructs import Construct, IConstruct

from .nag import acknowledge, managed_policy_finding, registers

AWS_MANAGED_FOR_LAMBDA = (
    "AWS managed policy granting CloudWatch Logs permissions to a Lambda handler; the AWS-maintained "
    "minimum for that purpose."
)


class SecurityGroupTag(Construct):
    """Adds one tag to a security group CloudFormation does not own.

    EKS creates the cluster security group itself (it is not a CloudFormation resource of this app),
    and Karpenter's nodes must join it to talk to the control plane, Fargate pods and each other. The
    tag is added with an SDK call on create/update and removed on delete. The handler may tag that one
    group only.
    """

    def __init__(self, scope: Construct, id: str, *, security_group_id: str, key: str, value: str) -> None:
        super().__init__(scope, id)
        group_arn = Stack.of(self).format_arn(
            service="ec2",
            resource="security-group",
            resource_name=security_group_id,
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )
        tag_call = cr.AwsSdkCall(
            service="EC2",
            action="createTags",
            parameters={"Resources": [security_group_id], "Tags": [{"Key": key, "Value": value}]},
            physical_resource_id=cr.PhysicalResourceId.of(f"{security_group_id}/{key}"),
        )
        self.resource = cr.AwsCustomResource(
            self,
            "Resource",
            on_create=tag_call,
            on_update=tag_call,
            on_delete=cr.AwsSdkCall(
                service="EC2",
                action="deleteTags",
                parameters={"Resources": [security_group_id], "Tags": [{"Key": key}]},
            ),
            policy=cr.AwsCustomResourcePolicy.from_statements(
                [iam.PolicyStatement(actions=["ec2:CreateTags", "ec2:DeleteTags"], resources=[group_arn])]
            ),
            install_latest_aws_sdk=False,
        )
        # aws-cdk's singleton handler (one per stack, shared by every AwsCustomResource) logs to
        # /aws/lambda/<function>, a log group that depends on the function and on nothing else: a stack
        # deletion would remove it first, and this resource's delete (removing the tag, later) would make
        # Lambda create it again, outside the stack.
        singleton = cast(lambda_.SingletonFunction, self.resource.node.find_child("Provider"))
        assert singleton.role is not None and singleton.role.node.scope is not None
        handler = singleton.role.node.scope  # the stack-level function behind the singleton
        log_group = handler.node.try_find_child("LogGroup")
        if log_group is not None:
            self.resource.node.add_dependency(log_group)
        self._acknowledge(handler)

    def _acknowledge(self, handler: IConstruct) -> None:
        acknowledge(
            handler.node.find_child("ServiceRole"),
            managed_policy_finding("AWSLambdaBasicExecutionRole", service_role=True),
            AWS_MANAGED_FOR_LAMBDA + " Role of CDK's AwsCustomResource handler.",
        )
        if not registers("NIST80053R5"):
            return
        acknowledge(
            self.resource.node.find_child("CustomResourcePolicy"),
            "NIST.800.53.R5-IAMNoInlinePolicy",
            "Inline policy of the tagging custom resource: ec2:CreateTags/DeleteTags on the cluster "
            "security group only.",
        )
        for rule, why in (
            ("CloudWatchLogGroupEncrypted", "Its log group holds the tagging call's request/response, no secrets."),
            ("LambdaConcurrency", "Runs once per stack operation; a reserved concurrency would only cap deploys."),
            ("LambdaDLQ", "Invoked synchronously by CloudFormation, which reports its failures."),
            ("LambdaInsideVPC", "Calls only the EC2 API (tags on the cluster security group)."),
        ):
            acknowledge(handler, f"NIST.800.53.R5-{rule}", f"CDK's AwsCustomResource handler. {why}")
