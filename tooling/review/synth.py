"""The synth the review compares: the user's configuration synthesized as ``make synth`` does (path metadata on),
and the templates of a cloud assembly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aws_cdk import cx_api


# The templates as `make synth` writes them (path metadata on), without copying the assets into the assembly (the
# kubectl layer: 60 MB a synth): what is read of an in-process synth is its templates, and an asset's hash, in the
# templates, comes from its source either way (tests/test_baseline_freshness.py holds a CLI synth to it).
TEMPLATES_ONLY = {"aws:cdk:enable-path-metadata": True, "aws:cdk:disable-asset-staging": True}


def synthesize(context: dict[str, Any], outdir: str) -> cx_api.CloudAssembly | None:
    """Synthesize the app with ``context`` into ``outdir`` (its templates, the assets left where they are): its cloud assembly, or ``None`` when open security
    findings stop the synth (the security gate's business: the templates are written)."""
    from karpenter_stack.application import build, new_app

    app = new_app(context={**context, **TEMPLATES_ONLY}, outdir=outdir)
    build(app)
    try:
        return app.synth()
    except RuntimeError:
        return None


def synthesized_templates(outdir: Path) -> dict[str, dict[str, Any]]:
    """Template name -> template of a cloud assembly (the stages' nested assemblies included)."""
    return {p.name.removesuffix(".json"): json.loads(p.read_text()) for p in sorted(outdir.rglob("*.template.json"))}
