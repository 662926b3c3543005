"""Tag the EKS-created cluster security group for Karpenter discovery."""

from __future__ import annotations

from typing import cast

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import custom_resources as cr
from constructs import Construct

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
        acknowledge_sdk_handler(self.resource)
        if registers("NIST80053R5"):
            acknowledge(
                self.resource.node.find_child("CustomResourcePolicy"),
                "NIST.800.53.R5-IAMNoInlinePolicy",
                "Inline policy of the tagging custom resource: ec2:CreateTags/DeleteTags on the cluster "
                "security group only.",
            )


def acknowledge_sdk_handler(resource: cr.AwsCustomResource) -> None:
    """Order and acknowledge aws-cdk's singleton AwsCustomResource handler (one per stack, shared by every
    AwsCustomResource in it) for ``resource``; its findings are acknowledged once per stack.

    The handler logs to /aws/lambda/<function>, a log group that depends on the function and on nothing
    else: a stack deletion would remove it first, and the resource's delete (later) would make Lambda
    create it again, outside the stack -- so the resource depends on it."""
    singleton = cast(lambda_.SingletonFunction, resource.node.find_child("Provider"))
    assert singleton.role is not None and singleton.role.node.scope is not None
    handler = cast(Construct, singleton.role.node.scope)  # the stack-level function behind the singleton
    log_group = handler.node.try_find_child("LogGroup")
    if log_group is not None:
        resource.node.add_dependency(log_group)
    if handler.node.try_find_child(_ACKNOWLEDGED) is not None:
        return
    Construct(handler, _ACKNOWLEDGED)  # (a marker: no resource)
    acknowledge(
        handler.node.find_child("ServiceRole"),
        managed_policy_finding("AWSLambdaBasicExecutionRole", service_role=True),
        AWS_MANAGED_FOR_LAMBDA + " Role of CDK's AwsCustomResource handler.",
    )
    if not registers("NIST80053R5"):
        return
    for rule, why in (
        ("CloudWatchLogGroupEncrypted", "Its log group holds the SDK calls' requests and responses, no secrets."),
        ("LambdaConcurrency", "Runs once per stack operation; a reserved concurrency would only cap deploys."),
        ("LambdaDLQ", "Invoked synchronously by CloudFormation, which reports its failures."),
        ("LambdaInsideVPC", "Calls only AWS APIs (a tag on the cluster security group, the stack's protection)."),
    ):
        acknowledge(handler, f"NIST.800.53.R5-{rule}", f"CDK's AwsCustomResource handler. {why}")


_ACKNOWLEDGED = "NagAcknowledged"
