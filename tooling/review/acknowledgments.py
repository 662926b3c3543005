"""Acknowledged replacements: the destructive changes a change means to make, each with its reason
(``acknowledged-replacements.yaml``; ``--acknowledge`` adds more)."""

from __future__ import annotations

from pathlib import Path

from constructs_lib.karpenter import yaml_load

from .baseline import ROOT
from .model import ReviewError

ACKNOWLEDGMENTS = ROOT / "acknowledged-replacements.yaml"


def acknowledgments(path: Path = ACKNOWLEDGMENTS) -> dict[str, str]:
    """`<stack>/<logical id>` -> reason, from the change's acknowledgment file (none when it is absent)."""
    if not path.is_file():
        return {}
    entries = yaml_load.safe_load(path.read_text()) or []
    out = {}
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("resource") or not str(entry.get("reason", "")).strip():
            raise ReviewError(f"{path.name}: each entry needs `resource: <stack>/<logical id>` and a `reason`")
        out[str(entry["resource"])] = str(entry["reason"])
    return out
