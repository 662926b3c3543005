"""The reusable Karpenter construct: :class:`Karpenter` and its props, the specs of the controller and of
the node objects (``specs/``), the rules that check them together, the release data it pins (``releases/``),
Karpenter's own YAML read into specs (``node_manifests``), and what only it uses (names, cdk-nag
acknowledgments, IAM tables). Nothing here imports the app (``karpenter_stack``), its tooling, or the app-only
constructs beside this package (``constructs_lib/*.py``); tests/test_architecture.py holds that boundary.

The construct's names load on first use, so that reading the specs alone does not load the AWS CDK."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .construct import Karpenter
    from .props import KarpenterProps, NodeAuthorization
    from .specs.node_objects import NodeObjects
    from .specs.rules import NodeSpecsError

__all__ = ["Karpenter", "KarpenterProps", "NodeAuthorization", "NodeObjects", "NodeSpecsError"]
_HOMES = {
    "Karpenter": ".construct",
    "NodeSpecsError": ".specs.rules",
    "KarpenterProps": ".props",
    "NodeAuthorization": ".props",
    "NodeObjects": ".specs.node_objects",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name], __name__), name)
