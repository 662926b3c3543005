"""Regenerate what is derived from the code (`make docs`): the README's configuration reference and
its acknowledgment table. cdk.json is the user's and is left alone."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from karpenter_stack.config import reference_markdown  # noqa: E402

PUBLIC_CIDRS = ["203.0.113.0/24", "198.51.100.7/32"]  # documentation ranges (RFC 5737)
EXISTING = json.loads((ROOT / "examples" / "existing-cluster.json").read_text())
WINDOWS = json.loads((ROOT / "examples" / "windows.json").read_text())
# Configurations whose acknowledgments the README lists, each with the setting that brings its own.
ACKNOWLEDGMENT_CONFIGS = [
    ("always", {}),
    ("controllerHosting=nodegroup", {"controllerHosting": "nodegroup"}),
    ("endpointAccess=public-and-private", {"endpointAccess": "public-and-private", "publicAccessCidrs": PUBLIC_CIDRS}),
    ("additionalNagPacks includes NIST80053R5", {"additionalNagPacks": ["NIST80053R5"]}),
    ("existingCluster", EXISTING),
    ("existingCluster, NIST80053R5", {**EXISTING, "additionalNagPacks": ["NIST80053R5"]}),
    ("a Windows node class (amiAlias windows20XX)", WINDOWS),
]


def _bounds(text: str, name: str) -> tuple[int, int]:
    start = re.search(rf"<!-- {name}:start[^>]*-->\n", text)
    return start.end(), text.index(f"<!-- {name}:end -->")


def section(text: str, name: str) -> str:
    begin, end = _bounds(text, name)
    return text[begin:end]


def replace_section(text: str, name: str, content: str) -> str:
    begin, end = _bounds(text, name)
    return text[:begin] + content + text[end:]


def readme_reference(text: str) -> str:
    return section(text, "config-reference")


def _built(overrides: dict[str, Any]) -> Any:
    from karpenter_stack.application import build, new_app

    app = new_app(context={**json.loads((ROOT / "cdk.json").read_text())["context"], **overrides})
    build(app)
    return app


def acknowledgments_markdown(built: Callable[[dict[str, Any]], Any] = _built) -> str:
    """The README's acknowledgment table. ``built(overrides)`` gives the built app of a configuration
    (the tests pass the apps they have already synthesized)."""
    from aws_cdk import Stack

    from karpenter_stack.security import acknowledgments

    rows: dict[tuple[str, str], tuple[str, str]] = {}
    for when, overrides in ACKNOWLEDGMENT_CONFIGS:
        app = built(overrides)
        (stack,) = [c for c in app.node.children if isinstance(c, Stack)]
        for ack in acknowledgments(app):
            # the Karpenter construct's id differs between the two stacks; its acknowledgments do not
            scope = re.sub(rf"^{re.escape(stack.karpenter.node.path)}/", "<Karpenter>/", ack.path)
            scope = scope.removeprefix(stack.node.path + "/")
            reason = ack.reason.replace(", ".join(PUBLIC_CIDRS), "<publicAccessCidrs>").replace("|", "\\|")
            rows.setdefault((ack.rule, scope), (when, reason))
    lines = ["| finding | acknowledged on | when | reason |", "|---|---|---|---|"]
    for (rule, scope), (when, reason) in sorted(rows.items(), key=lambda r: (r[0][1], r[0][0])):
        lines.append(f"| `{rule.replace('|', '')}` | `{scope}` | {when} | {reason} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    readme = ROOT / "README.md"
    text = readme.read_text()
    text = replace_section(text, "config-reference", reference_markdown())
    text = replace_section(text, "acknowledgments", acknowledgments_markdown())
    readme.write_text(text)


if __name__ == "__main__":
    main()
