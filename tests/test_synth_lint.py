"""Every synthesized template (main and nested) lints clean with cfn-lint."""

from __future__ import annotations

from pathlib import Path

import pytest

# main stack + Karpenter nested stack + CDK's two EKS provider nested stacks (one, the kubectl
# provider, for an imported cluster)
TEMPLATES = {
    "default": 4,
    "alternative": 4,
    "existing": 3,
    "access_entries": 4,
    "example_windows": 4,
    "pod_identity": 4,
}


@pytest.mark.parametrize("fixture", sorted(TEMPLATES))
def test_synthesized_templates_lint_clean(fixture, request, lint_findings):
    synthesized = request.getfixturevalue(fixture)
    outdir = Path(synthesized.app.outdir)
    templates = [str(t) for t in sorted(outdir.glob("*.template.json"))]
    assert len(templates) == TEMPLATES[fixture], templates
    assert {t: lint_findings[t] for t in templates} == {t: [] for t in templates}


def test_the_lint_run_reports_findings_per_file(lint_findings):
    from tests.conftest import BROKEN_TEMPLATE

    (finding,) = lint_findings[str(BROKEN_TEMPLATE)]
    assert finding.startswith(f"{BROKEN_TEMPLATE}:5:7:") and ":E3002:" in finding and "Nonsense" in finding
    assert sum(1 for lines in lint_findings.values() if lines) == 1  # only that file has findings
