"""CloudFormation termination protection that holds however the stack is deployed."""

from __future__ import annotations

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import custom_resources as cr
from constructs import Construct

from .karpenter.sdk_resource import sdk_resource


class TerminationProtection(Construct):
    """Turns on termination protection of the stack it is in (and off when it is removed from the stack).

    ``cdk deploy`` applies a stack's ``termination_protection`` itself; CDK Pipelines' CloudFormation actions
    do not, so a stack delivered by the pipeline would be unprotected. This resource makes the same call
    from inside the stack: ``cloudformation:UpdateTerminationProtection`` on this stack only. Removing it
    (protection turned off in the configuration) turns protection off, so that a destroy can proceed; a
    stack deletion never reaches it while protection is on.
    """

    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)

        def call(enable: bool) -> cr.AwsSdkCall:
            return cr.AwsSdkCall(
                service="CloudFormation",
                action="updateTerminationProtection",
                parameters={"StackName": Aws.STACK_ID, "EnableTerminationProtection": enable},
                physical_resource_id=cr.PhysicalResourceId.of("termination-protection"),
            )

        self.resource = sdk_resource(
            self,
            "Resource",
            on_create=call(True),
            on_update=call(True),
            on_delete=call(False),
            statements=[
                iam.PolicyStatement(actions=["cloudformation:UpdateTerminationProtection"], resources=[Aws.STACK_ID])
            ],
            policy_reason="Inline policy of the termination-protection custom resource: "
            "cloudformation:UpdateTerminationProtection on this stack only.",
        )
