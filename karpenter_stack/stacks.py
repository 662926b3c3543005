"""One environment's stack: Karpenter on a cluster this app creates, or on an existing one."""

from __future__ import annotations

from typing import Any

from constructs import Construct

from .cluster_stack import KarpenterClusterStack
from .config import ResolvedEnvironment
from .existing_cluster_stack import KarpenterOnExistingClusterStack


def environment_stack(
    scope: Construct, environment: ResolvedEnvironment, **kwargs: Any
) -> KarpenterClusterStack | KarpenterOnExistingClusterStack:
    """The environment's stack, with the id (and, in a Stage, the stack name) named after its cluster."""
    stack_class = KarpenterOnExistingClusterStack if environment.config.existing_cluster else KarpenterClusterStack
    return stack_class(scope, environment.stack_name, environment=environment, **kwargs)
