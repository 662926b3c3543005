"""Moving a deployed cluster to EKS access entries. The production profile starts a new cluster on
API_AND_CONFIG_MAP (``merge.NEW_CLUSTER_MODE``) and keeps a deployed cluster's mode, because the move is one way
(aws-cdk-lib 2.275's cluster handler refuses every step back, karpenter_stack/cluster_updates.py): where it keeps a
cluster on aws-auth alone, the synth warns and ``make review`` prints the steps (:func:`move_steps`)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from .merge import NEW_CLUSTER_MODE, PROFILE_KEPT
from .model import AppConfig

SETTING = "authenticationMode"
# Where the docs walk through it.
DOCS = "docs/operations.md#move-a-cluster-to-access-entries"


def kept_on_aws_auth(config: AppConfig, origins: Mapping[str, str]) -> str | None:
    """The origin of a mode the production profile kept as deployed when that mode reads aws-auth alone (unset or
    CONFIG_MAP); None otherwise (a new cluster, a mode the user wrote, a cluster already on access entries)."""
    origin = origins.get(SETTING, "")
    if config.authentication_mode not in (None, "CONFIG_MAP") or PROFILE_KEPT not in origin:
        return None
    return origin


def _mode(config: AppConfig) -> str:
    return json.dumps(config.authentication_mode) if config.authentication_mode else "unset (CONFIG_MAP)"


def warning(config: AppConfig, origins: Mapping[str, str]) -> list[str]:
    """The synth warning of a production cluster the profile keeps on aws-auth alone."""
    origin = kept_on_aws_auth(config, origins)
    if origin is None:
        return []
    return [
        f"{SETTING} {_mode(config)} (from {origin}): the production profile starts new clusters on "
        f"{NEW_CLUSTER_MODE} (administrators as EKS access entries) and keeps a deployed cluster's mode, because the "
        f"move is one way; to move, write {SETTING} {json.dumps(NEW_CLUSTER_MODE)} and deploy it with no other "
        f"change to the cluster; `make review` prints every step, and {DOCS} explains them"
    ]


def move_steps(config: AppConfig) -> list[str]:
    """The steps that move the cluster of ``config`` (on aws-auth alone) to access entries, one line each."""
    if config.administrators:
        admins = f"each of administrators ({', '.join(config.administrators)})"
    else:
        admins = "the stack's ClusterAdminRole"
    windows = (
        " (and an EC2_WINDOWS one for its Windows node role)" if any(c.windows for c in config.node_classes) else ""
    )
    return [
        f'Write `"{SETTING}": "{NEW_CLUSTER_MODE}"` where this environment\'s settings are, and change nothing '
        "else of the cluster in that deploy (aws-cdk's cluster handler allows one kind of cluster update per "
        "deploy); `make review` then shows the cluster's updateAuthMode and the access entries it adds.",
        f"Deploy it. The cluster moves first (updateAuthMode {_mode(config)} → {NEW_CLUSTER_MODE}: EKS reads access "
        f"entries beside aws-auth); then CloudFormation creates an access entry for {admins} with "
        f"AmazonEKSClusterAdminPolicy (cluster scope) and an EC2_LINUX access entry for Karpenter's node role{windows}; "
        "once the "
        "administrators' entries exist, aws-auth is rewritten without their system:masters mappings. The node role's "
        "aws-auth mapping stays (nodes keep joining throughout), as do the Fargate profile's or node group's.",
        "`make accept` and commit the baseline: it records the new mode, which the production profile keeps from "
        f"then on. Check with `aws eks list-access-entries --cluster-name {config.cluster_name}` and kubectl as an "
        "administrator.",
        f"It cannot be undone: EKS and aws-cdk's handler refuse {NEW_CLUSTER_MODE} → CONFIG_MAP (the synth refuses "
        "it against the baseline). Stay on it: API (access entries only) drops the node role's aws-auth mapping that "
        "the app keeps by design.",
    ]
