"""The project's Python sources as syntax trees, parsed and walked once per session (several tests read every
module: the layers, the function lengths, the regex and quoting rules)."""

from __future__ import annotations

import ast
import functools


@functools.cache
def walked(source: str) -> tuple[ast.AST, ...]:
    """Every node of ``source``'s syntax tree, in ``ast.walk`` order (shared: do not change them)."""
    return tuple(ast.walk(ast.parse(source)))
