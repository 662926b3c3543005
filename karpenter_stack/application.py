"""Build the app's stacks from an App's context (shared by app.py and the tests)."""

from __future__ import annotations

import aws_cdk as cdk

from .cluster_stack import KarpenterClusterStack, stack_name_for
from .config import load_config


def build(app: cdk.App) -> KarpenterClusterStack:
    """Validate the app's context and add the cluster stack. Raises ConfigError before creating
    anything if the configuration is invalid."""
    config = load_config(app.node.get_all_context())
    return KarpenterClusterStack(app, stack_name_for(config.cluster_name), config=config)
