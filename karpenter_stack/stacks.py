"""One environment's stack: Karpenter on a cluster this app creates, or on an existing one."""

from __future__ import annotations

from typing import Any

from constructs import Construct

from .cluster_stack import KarpenterClusterStack
from .config import AppConfig, stack_name_for
from .existing_cluster_stack import KarpenterOnExistingClusterStack


def environment_stack(
    scope: Construct, config: AppConfig, **kwargs: Any
) -> KarpenterClusterStack | KarpenterOnExistingClusterStack:
    """The environment's stack, with the id (and, in a Stage, the stack name) named after its cluster."""
    stack_class = KarpenterOnExistingClusterStack if config.existing_cluster else KarpenterClusterStack
    return stack_class(scope, stack_name_for(config.cluster_name), config=config, **kwargs)
