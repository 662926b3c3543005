"""What a stack deletion keeps: KMS keys and log groups, by one setting."""

from __future__ import annotations

import jsii
from aws_cdk import CfnDeletionPolicy, CfnResource, IAspect
from constructs import IConstruct

# KMS's shortest waiting period before a scheduled key deletion takes effect.
KMS_PENDING_WINDOW_DAYS = 7


@jsii.implements(IAspect)
class DestroyPolicy:
    """Sets deletion policies on every KMS key and log group in the scope, CDK's own handler log groups
    in its provider nested stacks included.

    ``retain=True`` (production): both outlive the stack. ``retain=False``: both are deleted with it,
    keys after KMS's 7-day waiting period, so a destroyed standard stack leaves nothing in the template
    behind. Either way a key survives a *replacement* (UpdateReplacePolicy Retain): what it encrypted
    -- the cluster's secrets, the flow logs -- must stay readable while the new key takes over.
    """

    def __init__(self, *, retain: bool) -> None:
        self.policy = CfnDeletionPolicy.RETAIN if retain else CfnDeletionPolicy.DELETE
        self.retain = retain

    def visit(self, node: IConstruct) -> None:
        if not CfnResource.is_cfn_resource(node):
            return
        if node.cfn_resource_type == "AWS::KMS::Key":
            node.cfn_options.deletion_policy = self.policy
            node.cfn_options.update_replace_policy = CfnDeletionPolicy.RETAIN
            if not self.retain:
                node.add_property_override("PendingWindowInDays", KMS_PENDING_WINDOW_DAYS)
        elif node.cfn_resource_type == "AWS::Logs::LogGroup":
            node.cfn_options.deletion_policy = self.policy
            node.cfn_options.update_replace_policy = self.policy
