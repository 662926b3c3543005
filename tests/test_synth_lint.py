"""Every synthesized template (main and nested) lints clean with cfn-lint."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cfn import lint


@pytest.mark.parametrize("fixture", ["default", "alternative"])
def test_synthesized_templates_lint_clean(fixture, request):
    synthesized = request.getfixturevalue(fixture)
    outdir = Path(synthesized.app.outdir)
    templates = sorted(outdir.glob("*.template.json"))
    # main stack + Karpenter nested stack + CDK's two EKS provider nested stacks
    assert len(templates) == 4, [t.name for t in templates]
    assert lint(templates) == ""
