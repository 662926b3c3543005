"""Build the app's stacks from an App's context (shared by app.py, the tests and the reviewer report)."""

from __future__ import annotations

from datetime import date
from typing import Optional

import aws_cdk as cdk

from .cluster_stack import KarpenterClusterStack, stack_name_for
from .config import load_config
from .security import register_packs


def build(app: cdk.App, *, acknowledge: bool = True, today: Optional[date] = None) -> KarpenterClusterStack:
    """Validate the app's context, register the cdk-nag packs and add the cluster stack. Raises
    ConfigError before creating anything if the configuration is invalid.

    ``acknowledge=False`` builds without acknowledgments, to count the raw findings (reviewer report).
    """
    config = load_config(app.node.get_all_context(), today=today)
    packs = register_packs(app, config.additional_nag_packs)
    return KarpenterClusterStack(
        app, stack_name_for(config.cluster_name), config=config, nag_packs=packs if acknowledge else ()
    )
