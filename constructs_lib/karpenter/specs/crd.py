"""Patterns of Karpenter 1.14.1's CRDs that the typed settings check on top of their own rules, where those alone
would let through a value the API server refuses. Each is upstream's, verbatim: a Go RE2 expression, which the
API server searches (unanchored). tests/test_crd_values.py checks that each is the vendored CRD's at its path
(tooling/upstream/karpenter-1.14.1/crds/) and that :func:`accepts` agrees with RE2 on generated values.

Python's ``re`` differs from RE2 on three points these patterns use, handled by :func:`python_pattern`: ``$``
also matches before a final newline (RE2's only at the end: ``\\Z``), ``\\d`` takes any Unicode digit and
``\\s`` a vertical tab and Unicode spaces (RE2's are ``[0-9]`` and ``[\\t\\n\\f\\r ]``).
"""

from __future__ import annotations

import re
from functools import cache

# NodePool spec.template.spec.taints[] and startupTaints[]: key and value (upstream uses the key's pattern for
# the value too: a qualified name, never empty).
TAINT = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
# NodePool spec.disruption.budgets[].schedule: a cron macro, or five fields around RE2 whitespace.
BUDGET_SCHEDULE = r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
# CRD path -> the pattern there, per kind (what the tests compare with the vendored CRDs).
PATTERNS = {
    "NodePool": {
        "spec.template.spec.taints[].key": TAINT,
        "spec.template.spec.taints[].value": TAINT,
        "spec.template.spec.startupTaints[].key": TAINT,
        "spec.template.spec.startupTaints[].value": TAINT,
        "spec.disruption.budgets[].schedule": BUDGET_SCHEDULE,
    }
}
_RE2_CLASSES = {"d": "[0-9]", "D": "[^0-9]", "s": "[\\t\\n\\f\\r ]", "S": "[^\\t\\n\\f\\r ]"}


def python_pattern(pattern: str) -> str:
    """An RE2 pattern as a Python pattern that matches the same strings (compiled with re.ASCII): ``$`` as
    ``\\Z`` and ``\\d``, ``\\s`` (and ``\\D``, ``\\S``) as RE2's ASCII classes, outside brackets; inside
    brackets these patterns use none (ValueError if one does)."""
    out, i, bracket = [], 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            escaped = pattern[i + 1]
            if escaped in _RE2_CLASSES and bracket:
                raise ValueError(f"\\{escaped} inside brackets: {pattern}")
            out.append(_RE2_CLASSES.get(escaped, "\\" + escaped) if not bracket else "\\" + escaped)
            i += 2
            continue
        if char == "[" and not bracket:
            bracket = True
        elif char == "]" and bracket:
            bracket = False
        out.append("\\Z" if char == "$" and not bracket else char)
        i += 1
    return "".join(out)


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(python_pattern(pattern), re.ASCII)


def accepts(pattern: str, value: str) -> bool:
    """Whether the API server's check of an RE2 ``pattern`` accepts ``value`` (an unanchored search)."""
    return _compiled(pattern).search(value) is not None
