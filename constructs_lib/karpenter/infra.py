"""The nested stack that holds Karpenter's AWS-side resources, imported from templates/."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import NestedStack, Token
from aws_cdk import cloudformation_include as cfn_inc
from constructs import Construct

from .iam_grants import structured_document, wildcard_acknowledgments
from .iam_types import GRANTING
from .nag import acknowledge
from .names import NODE_ROLE_NAME_PREFIX, node_role_name
from .template_parity import parsed_template, widening_problems

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
# Resource types whose PolicyDocument the nested stack structures: every type of the gate's table that holds one.
POLICY_TYPES = tuple(kind for kind, holder in GRANTING.items() if "PolicyDocument" in holder.documents)


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
        problems = widening_problems(self.template_path)
        if problems:
            raise ValueError("\n".join(problems))
        if Token.is_unresolved(cluster_name):
            raise ValueError(
                "KarpenterInfraStack: cluster_name must be known at synth (it is written into policy keys)"
            )
        self.template = cfn_inc.CfnInclude(self, "Template", template_file=str(self.template_path))
        self._structure_policies(cluster_name)
        node_role = self.template.get_resource(NODE_ROLE)
        queue = self.template.get_resource(INTERRUPTION_QUEUE)
        self.node_role_name: str = node_role.ref
        # The same name as a literal, when the template writes it as upstream's does (KarpenterNodeRole-<cluster>):
        # what node objects rendered for a GitOps tool name; None for a template that names it otherwise.
        role_name = parsed_template(self.template_path)["Resources"][NODE_ROLE].get("Properties", {}).get("RoleName")
        written = {"Fn::Sub": NODE_ROLE_NAME_PREFIX + "${" + CLUSTER_NAME_PARAMETER + "}"}
        self.node_role_literal_name: str | None = node_role_name(cluster_name) if role_name == written else None
        self.node_role_arn: str = node_role.get_att("Arn").to_string()
        self.queue_name: str = queue.get_att("QueueName").to_string()
        self.queue_arn: str = queue.get_att("Arn").to_string()
        # Ref of an AWS::IAM::ManagedPolicy is its ARN.
        self.controller_policy_arns: list[str] = [self.template.get_resource(name).ref for name in CONTROLLER_POLICIES]

    def _structure_policies(self, cluster_name: str) -> None:
        """Every policy written as ``!Sub`` over a JSON string becomes a structured document with the same
        intrinsics, so that cdk-nag, checkov and cfn-lint read its statements (constructs_lib.karpenter.iam_grants)."""
        for logical_id, resource in parsed_template(self.template_path).get("Resources", {}).items():
            document = resource.get("Properties", {}).get("PolicyDocument")
            if resource.get("Type") in POLICY_TYPES and isinstance(document, dict) and set(document) == {"Fn::Sub"}:
                text = document["Fn::Sub"]
                if not isinstance(text, str):
                    raise ValueError(f"{self.template_path.name}: {logical_id}: a !Sub with variables is not supported")
                # the L1's own property (not an override): cdk-nag reads the construct tree, the scanners the template
                policy = self.template.get_resource(logical_id)
                policy.policy_document = structured_document(text, cluster_name)  # type: ignore[attr-defined]
                for finding, reason in wildcard_acknowledgments(logical_id, text, self.template_path.name).items():
                    acknowledge(policy, finding, reason)
