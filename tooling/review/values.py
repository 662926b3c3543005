"""CloudFormation values as the review compares them: the resources a value refers to, a value at a path,
whether a value changes, and a value as text (an Fn::Join with placeholders for what resolves at deploy time)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from tooling.review.lifecycle_model import references as _references


def references(value: Any) -> set[str]:
    """Logical ids (and parameters) a value refers to: the lifecycle model's walker (Ref, Fn::GetAtt, Fn::Sub)."""
    return set(_references(value))


def _differs(old: Any, new: Any, replaced: set[str]) -> bool:
    """A value changes when its text does, or when it refers to a resource being replaced (whose id and
    attributes change)."""
    return old != new or bool(references(new) & replaced)


_MISSING = object()


def _at(value: Any, path: Iterable[str]) -> Any:
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return _MISSING
        value = value[key]
    return value


def _render(value: Any) -> str:
    """A string or Fn::Join with placeholders for what is resolved at deploy time."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return str(sep).join(p if isinstance(p, str) else "${" + ",".join(sorted(references(p))) + "}" for p in parts)
    return json.dumps(value)
