"""Who applies the node objects (EC2NodeClasses, NodePools, NodeOverlays): a value of the construct's props and of
the app's ``nodeObjects`` setting, kept apart from the props so that reading it does not load the AWS CDK."""

from __future__ import annotations

from enum import StrEnum


class NodeObjects(StrEnum):
    """Who applies the EC2NodeClasses, NodePools and NodeOverlays to the cluster."""

    # The stack: one custom resource per object (aws-cdk's kubectl handler applies it on create and update and
    # deletes it with the resource).
    STACK = "stack"
    # The stack, as STACK, with every object's resource retained (DeletionPolicy Retain): when an object leaves
    # the stack (a move to GITOPS), CloudFormation does not call the handler's delete and the object keeps running.
    # The step between the two modes.
    HANDOVER = "handover"
    # A GitOps tool: the stack applies none; the construct renders them, every fill-in resolved
    # (:attr:`~constructs_lib.karpenter.Karpenter.gitops_objects`), for a folder the tool applies.
    GITOPS = "gitops"
