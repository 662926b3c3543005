"""What a stack deletion keeps: KMS keys and log groups, by one setting.

Kept whatever this setting says: the spot service-linked role (account-wide, ``karpenter/construct.py``) and, on a
cluster the app did not create, the ``karpenter-crd`` chart's custom resource (``karpenter/release.py``: its
``helm uninstall`` would delete every NodePool, NodeClaim and EC2NodeClass of the cluster)."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
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
    policy = RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY
    # Class checks run in Python; only the matches cost calls into the jsii runtime (one or two each).
    for node in scope.node.find_all():
        if isinstance(node, kms.CfnKey):
            # The deletion policy only: a replacement keeps the old key (UpdateReplacePolicy Retain,
            # aws_kms.Key's default, asserted by the tests).
            node.apply_removal_policy(policy, apply_to_update_replace_policy=False)
            if not retain:
                node.pending_window_in_days = KMS_PENDING_WINDOW_DAYS
        elif isinstance(node, logs.CfnLogGroup):
            node.apply_removal_policy(policy)
