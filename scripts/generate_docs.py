"""Regenerate what is derived from the configuration model (`make docs`): the README's configuration
reference and the defaults in cdk.json's context (feature flags there are kept as they are)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from karpenter_stack.config import default_context, reference_markdown  # noqa: E402

START = re.compile(r"<!-- config-reference:start[^>]*-->\n")
END = "<!-- config-reference:end -->"


def readme_reference(text: str) -> str:
    start = START.search(text)
    end = text.index(END)
    return text[start.end():end]


def cdk_json_with_defaults(cdk_json: dict) -> dict:
    flags = {k: v for k, v in cdk_json["context"].items() if k.startswith("@")}
    return {**cdk_json, "context": {**default_context(), **flags}}


def main() -> None:
    readme = ROOT / "README.md"
    text = readme.read_text()
    readme.write_text(text.replace(readme_reference(text), reference_markdown(), 1))
    cdk_json = ROOT / "cdk.json"
    updated = cdk_json_with_defaults(json.loads(cdk_json.read_text()))
    cdk_json.write_text(json.dumps(updated, indent=2) + "\n")


if __name__ == "__main__":
    main()
