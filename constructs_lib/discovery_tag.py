"""Tag the EKS-created cluster security group for Karpenter discovery."""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import custom_resources as cr
from constructs import Construct


# aws-cdk-lib's fixed id of the singleton Lambda behind every AwsCustomResource in a stack.
AWS_CUSTOM_RESOURCE_SINGLETON = "AWS679f53fac002430cb0da5b7982bd2287"


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
        # aws-cdk's singleton handler logs to /aws/lambda/<function>, a log group that depends on the
        # function and on nothing else: a stack deletion would remove it first, and this resource's
        # delete (removing the tag, later) would make Lambda create it again, outside the stack.
        singleton = Stack.of(self).node.try_find_child(AWS_CUSTOM_RESOURCE_SINGLETON)
        log_group = singleton.node.try_find_child("LogGroup") if singleton is not None else None
        if log_group is not None:
            self.resource.node.add_dependency(log_group)
