"""What the app knows of each imported Karpenter release, one ``karpenter-<version>.json`` per release, written by
``python -m tooling.karpenter_import`` from the release's chart: its feature gates (``settings.featureGates`` of the
karpenter chart's values.yaml) and their defaults. The app does not choose among releases yet: the controller's
typed settings (``specs.controller``) hold 1.14.1's table, which tests/test_karpenter_release.py keeps equal to
1.14.1's file here."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

FOLDER = Path(__file__).resolve().parent


@cache
def feature_gates(version: str) -> dict[str, bool]:
    """The feature gates of a release and the chart's default of each, in values.yaml's order."""
    data = json.loads((FOLDER / f"karpenter-{version}.json").read_text())
    return {str(name): bool(on) for name, on in data["featureGates"].items()}
