"""Rewrite the README's configuration reference from karpenter_stack/config.py (`make docs`)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from karpenter_stack.config import reference_markdown  # noqa: E402

START = re.compile(r"<!-- config-reference:start[^>]*-->\n")
END = "<!-- config-reference:end -->"


def readme_reference(text: str) -> str:
    start = START.search(text)
    end = text.index(END)
    return text[start.end():end]


def main() -> None:
    readme = ROOT / "README.md"
    text = readme.read_text()
    current = readme_reference(text)
    readme.write_text(text.replace(current, reference_markdown(), 1))


if __name__ == "__main__":
    main()
