"""Tag the EKS-created cluster security group for Karpenter discovery."""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import custom_resources as cr
from constructs import Construct

from .sdk_resource import sdk_resource


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
        self.resource = sdk_resource(
            self,
            "Resource",
            on_create=tag_call,
            on_update=tag_call,
            on_delete=cr.AwsSdkCall(
                service="EC2",
                action="deleteTags",
                parameters={"Resources": [security_group_id], "Tags": [{"Key": key}]},
            ),
            statements=[iam.PolicyStatement(actions=["ec2:CreateTags", "ec2:DeleteTags"], resources=[group_arn])],
            policy_reason="Inline policy of the tagging custom resource: ec2:CreateTags/DeleteTags on the cluster "
            "security group only.",
        )
