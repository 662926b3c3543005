#!/usr/bin/env python3
"""Print a JSON file of context settings as CDK CLI flags: ``-c 'key=value' ...``.

Used by ``make synth CONTEXT_FILE=examples/existing-cluster.json`` (and ``make cdk``): each top-level key
becomes one ``-c`` flag, objects and lists as compact JSON, single-quoted for the shell.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any


def flags(settings: dict[str, Any]) -> str:
    def text(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))

    return " ".join(f"-c {shlex.quote(f'{key}={text(value)}')}" for key, value in settings.items())


def main(path: str) -> None:
    settings = json.loads(Path(path).read_text())
    if not isinstance(settings, dict):
        sys.exit(f"{path}: expected a JSON object of settings")
    print(flags(settings))


if __name__ == "__main__":
    main(*sys.argv[1:])
