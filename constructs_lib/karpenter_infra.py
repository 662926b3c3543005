"""The nested stack that holds Karpenter's AWS-side resources, imported from templates/."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import NestedStack
from aws_cdk import cloudformation_include as cfn_inc
from constructs import Construct

# Logical ids in the Karpenter template (templates/karpenter-<version>.yaml) that the construct reads.
# A template for a new Karpenter version must keep them (a test checks every template).
CLUSTER_NAME_PARAMETER = "ClusterName"
NODE_ROLE = "KarpenterNodeRole"
INTERRUPTION_QUEUE = "KarpenterInterruptionQueue"
CONTROLLER_POLICIES = (
    "KarpenterControllerNodeLifecyclePolicy",
    "KarpenterControllerIAMIntegrationPolicy",
    "KarpenterControllerEKSIntegrationPolicy",
    "KarpenterControllerInterruptionPolicy",
    "KarpenterControllerZonalShiftPolicy",
    "KarpenterControllerResourceDiscoveryPolicy",
)


class KarpenterInfraStack(NestedStack):
    """Node role, controller managed policies, interruption queue and its EventBridge rules.

    Outputs (as tokens the parent can use): :attr:`node_role_name`, :attr:`node_role_arn`,
    :attr:`controller_policy_arns`, :attr:`queue_name`, :attr:`queue_arn`.
    """

    def __init__(self, scope: Construct, id: str, *, cluster_name: str, template_file: str | Path) -> None:
        super().__init__(
            scope,
            id,
            # A real CloudFormation parameter (rather than CfnInclude substituting the value) keeps
            # the template as written, including its own validation of ClusterName.
            parameters={CLUSTER_NAME_PARAMETER: cluster_name},
        )
        self.template_path = Path(template_file)
        self.template = cfn_inc.CfnInclude(self, "Template", template_file=str(self.template_path))
        node_role = self.template.get_resource(NODE_ROLE)
        queue = self.template.get_resource(INTERRUPTION_QUEUE)
        self.node_role_name: str = node_role.ref
        self.node_role_arn: str = node_role.get_att("Arn").to_string()
        self.queue_name: str = queue.get_att("QueueName").to_string()
        self.queue_arn: str = queue.get_att("Arn").to_string()
        # Ref of an AWS::IAM::ManagedPolicy is its ARN.
        self.controller_policy_arns: list[str] = [self.template.get_resource(name).ref for name in CONTROLLER_POLICIES]
