"""What a stack deletion keeps: KMS keys and log groups, by one setting."""

from __future__ import annotations

from aws_cdk import CfnDeletionPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import IConstruct

# KMS's shortest waiting period before a scheduled key deletion takes effect.
KMS_PENDING_WINDOW_DAYS = 7


def apply_destroy_policy(scope: IConstruct, *, retain: bool) -> None:
    """Sets deletion policies on every KMS key and log group under ``scope`` (CDK's own handler log
    groups in its provider nested stacks included); call it once the scope is complete. A one-pass
    walk rather than an Aspect, whose per-construct callbacks into Python doubled the synth time.

    ``retain=True`` (production): both outlive the stack. ``retain=False``: both are deleted with it,
    keys after KMS's 7-day waiting period, so a destroyed standard stack leaves nothing in the template
    behind. Either way a key survives a *replacement* (UpdateReplacePolicy Retain): what it encrypted
    -- the cluster's secrets, the flow logs -- must stay readable while the new key takes over.
    """
    policy = CfnDeletionPolicy.RETAIN if retain else CfnDeletionPolicy.DELETE
    # Class checks run in Python; only the matches cost calls into the jsii runtime.
    for node in scope.node.find_all():
        if isinstance(node, kms.CfnKey):
            node.cfn_options.deletion_policy = policy
            node.cfn_options.update_replace_policy = CfnDeletionPolicy.RETAIN
            if not retain:
                node.pending_window_in_days = KMS_PENDING_WINDOW_DAYS
        elif isinstance(node, logs.CfnLogGroup):
            node.cfn_options.deletion_policy = policy
            node.cfn_options.update_replace_policy = policy
