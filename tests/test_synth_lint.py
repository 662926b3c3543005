"""Every synthesized template (main and nested) lints clean with cfn-lint."""

from __future__ import annotations

from pathlib import Path

import pytest


# main stack + Karpenter nested stack + CDK's two EKS provider nested stacks (one, the kubectl
# provider, for an imported cluster)
TEMPLATES = {"default": 4, "alternative": 4, "existing": 3}


@pytest.mark.parametrize("fixture", sorted(TEMPLATES))
def test_synthesized_templates_lint_clean(fixture, request, lint_findings):
    synthesized = request.getfixturevalue(fixture)
    outdir = Path(synthesized.app.outdir)
    templates = [str(t) for t in sorted(outdir.glob("*.template.json"))]
    assert len(templates) == TEMPLATES[fixture], templates
    assert {t: lint_findings[t] for t in templates} == {t: [] for t in templates}


def test_the_lint_helper_reports_findings_per_file(tmp_path):
    from tests.cfn import lint_each

    broken = tmp_path / "broken.yaml"
    broken.write_text("Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n    Properties:\n      Nonsense: 1\n")
    findings = lint_each([broken])
    assert len(findings[str(broken)]) == 1 and ":E3002:" in findings[str(broken)][0]
