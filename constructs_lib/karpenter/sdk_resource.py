"""aws-cdk's AwsCustomResource (one SDK call per create, update and delete), with what every use of it here
needs: the handler's log group ordered, its findings acknowledged once per stack, the inline policy's with a
reason."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import custom_resources as cr
from constructs import Construct

from .nag import acknowledge, managed_policy_finding, registers

AWS_MANAGED_FOR_LAMBDA = (
    "AWS managed policy granting CloudWatch Logs permissions to a Lambda handler; the AWS-maintained "
    "minimum for that purpose."
)


def sdk_resource(
    scope: Construct,
    id: str,
    *,
    on_create: cr.AwsSdkCall,
    on_update: cr.AwsSdkCall,
    on_delete: cr.AwsSdkCall,
    statements: Sequence[iam.PolicyStatement],
    policy_reason: str,
) -> cr.AwsCustomResource:
    """An AwsCustomResource whose handler may do only ``statements`` (``policy_reason`` says why)."""
    resource = cr.AwsCustomResource(
        scope,
        id,
        on_create=on_create,
        on_update=on_update,
        on_delete=on_delete,
        policy=cr.AwsCustomResourcePolicy.from_statements(list(statements)),
        install_latest_aws_sdk=False,
    )
    acknowledge_sdk_handler(resource)
    if registers("NIST80053R5"):
        acknowledge(resource.node.find_child("CustomResourcePolicy"), "NIST.800.53.R5-IAMNoInlinePolicy", policy_reason)
    return resource


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
