"""Regenerate what is derived from the code (`make docs`): the configuration reference
(docs/configuration-reference.md: the settings, and the defaults that differ from Karpenter's) and the table of acknowledged security findings (docs/acknowledgments.md),
each between its markers; the prose around them is written by hand. Both describe the product: they are built
from the product's shipped configuration (tooling/product/cdk.json), never from the user's cdk.json."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from karpenter_stack.config import reference_markdown

from .releases.upstream_defaults import differing_defaults_markdown, key_defaults

ROOT = Path(__file__).resolve().parent.parent

DOCS = ROOT / "docs"
PRODUCT = ROOT / "tooling" / "product"
# Each generated part: marker name -> the file that holds it between its markers.
REFERENCE_DOC = DOCS / "configuration-reference.md"
ACKNOWLEDGMENTS_DOC = DOCS / "acknowledgments.md"

PUBLIC_CIDRS = ["203.0.113.0/24", "198.51.100.7/32"]  # documentation ranges (RFC 5737)
EXISTING = json.loads((ROOT / "examples" / "existing-cluster.json").read_text())
WINDOWS = json.loads((ROOT / "examples" / "windows.json").read_text())
# Configurations whose acknowledgments docs/acknowledgments.md lists, each with the setting that brings its own.
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
    if start is None:
        raise ValueError(f"no <!-- {name}:start --> marker")
    return start.end(), text.index(f"<!-- {name}:end -->")


def section(text: str, name: str) -> str:
    begin, end = _bounds(text, name)
    return text[begin:end]


def replace_section(text: str, name: str, content: str) -> str:
    begin, end = _bounds(text, name)
    return text[:begin] + content + text[end:]


def documented_reference() -> str:
    """The configuration reference as docs/configuration-reference.md holds it."""
    return section(REFERENCE_DOC.read_text(), "config-reference")


@functools.cache  # see reference_markdown
def reference_document() -> str:
    """The configuration reference as `make docs` writes it: with upstream's default of each key of a map-typed
    setting, from the mirrored CRDs and chart values."""
    return reference_markdown(key_defaults)


def documented_differing_defaults() -> str:
    """The table of defaults that differ from Karpenter's, as docs/configuration-reference.md holds it."""
    return section(REFERENCE_DOC.read_text(), "differing-defaults")


def documented_acknowledgments() -> str:
    """The acknowledgment table as docs/acknowledgments.md holds it."""
    return section(ACKNOWLEDGMENTS_DOC.read_text(), "acknowledgments")


def _built(overrides: dict[str, Any]) -> Any:
    """The product's configuration (the shipped cdk.json kept in tooling/product, as the product's
    tests build it) with these settings: the docs describe the product, whatever the user's cdk.json says."""
    from karpenter_stack.application import build, new_app

    app = new_app(context={**json.loads((PRODUCT / "cdk.json").read_text())["context"], **overrides})
    build(app)
    return app


def acknowledgments_markdown(built: Callable[[dict[str, Any]], Any] = _built) -> str:
    """The acknowledgment table of docs/acknowledgments.md. ``built(overrides)`` gives the built app of a configuration
    (the tests pass the apps they have already synthesized)."""
    from karpenter_stack.cluster_stack import KarpenterClusterStack
    from karpenter_stack.existing_cluster_stack import KarpenterOnExistingClusterStack
    from karpenter_stack.security import acknowledgments

    rows: dict[tuple[str, str], tuple[str, str]] = {}
    for when, overrides in ACKNOWLEDGMENT_CONFIGS:
        app = built(overrides)
        (stack,) = [
            c for c in app.node.children if isinstance(c, KarpenterClusterStack | KarpenterOnExistingClusterStack)
        ]
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


def _write(path: Path, name: str, content: str) -> None:
    text = path.read_text()
    new = replace_section(text, name, content)
    if new != text:
        path.write_text(new)
        print(f"updated {path.relative_to(ROOT)}")
    else:
        print(f"{path.relative_to(ROOT)} is current")


def main() -> None:
    _write(REFERENCE_DOC, "config-reference", reference_document())
    _write(REFERENCE_DOC, "differing-defaults", differing_defaults_markdown())
    _write(ACKNOWLEDGMENTS_DOC, "acknowledgments", acknowledgments_markdown())


if __name__ == "__main__":
    main()
