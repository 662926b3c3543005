"""Regenerate what is derived from the code (`make docs`): the README's configuration reference and
its acknowledgment table. cdk.json is the user's and is left alone."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from karpenter_stack.config import reference_markdown  # noqa: E402

# Configurations whose acknowledgments the README lists, each with the setting that brings its own.
ACKNOWLEDGMENT_CONFIGS = [
    ("always", {}),
    ("controllerHosting=nodegroup", {"controllerHosting": "nodegroup"}),
    ("endpointAccess=public-and-private",
     {"endpointAccess": "public-and-private", "publicAccessCidrs": ["203.0.113.0/24"]}),
    ("additionalNagPacks includes NIST80053R5", {"additionalNagPacks": ["NIST80053R5"]}),
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


def acknowledgments_markdown() -> str:

    from karpenter_stack.application import build, new_app
    from karpenter_stack.security import acknowledgments

    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    rows: dict[tuple[str, str], tuple[str, str]] = {}
    for when, overrides in ACKNOWLEDGMENT_CONFIGS:
        app = new_app(context={**context, **overrides})
        (stack,) = build(app)
        for ack in acknowledgments(app):
            scope = ack.path.removeprefix(stack.node.path + "/")
            reason = ack.reason.replace("203.0.113.0/24", "<publicAccessCidrs>").replace("|", "\\|")
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
