"""Snapshots of every synthesized template (main and nested) for the default and production
configurations. A changed template fails with a diff; `make snapshots` accepts the change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from syrupy.extensions.json import JSONSnapshotExtension

from tests.cfn import each
from tests.conftest import EXAMPLE_FIXTURES

# configuration -> templates (main + nested); every example of examples/ too
CONFIGURATIONS = {"default": 4, "production": 4, "existing": 3, **{example: 4 for example in EXAMPLE_FIXTURES}}


def _templates(synthesized) -> dict[str, dict]:
    outdir = Path(synthesized.app.outdir)
    return {p.name.removesuffix(".json"): json.loads(p.read_text()) for p in sorted(outdir.glob("*.template.json"))}


@pytest.fixture
def json_snapshot(snapshot):
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.mark.parametrize("configuration", sorted(CONFIGURATIONS))
def test_templates_match_their_snapshots(configuration, request, json_snapshot):
    templates = _templates(request.getfixturevalue(configuration))
    assert len(templates) == CONFIGURATIONS[configuration], sorted(templates)
    for name, template in templates.items():
        assert template == json_snapshot(name=name)


@pytest.mark.parametrize("configuration", sorted(CONFIGURATIONS))
def test_snapshots_hold_no_machine_specific_values(configuration, request):
    templates = _templates(request.getfixturevalue(configuration))
    for name, template in each(templates.items()):
        text = json.dumps(template)
        assert str(Path.home()) not in text and "/tmp" not in text and "/work/" not in text, name
    # construct paths, as in `cdk synth` output: stable, and what a reviewer navigates by
    synthesized = request.getfixturevalue(configuration)
    assert "aws:cdk:path" in json.dumps(templates[f"{synthesized.stack.stack_name}.template"])


def test_the_delivery_pipeline_templates_match_their_snapshots(delivery, json_snapshot):
    """The pipeline stack and its cross-region support stack (the stages' templates are the environments'
    own, compared with them in tests/test_pipeline.py)."""
    templates = _templates(delivery)
    assert sorted(templates) == [
        "cross-region-stack-111122223333_us-east-1.template",
        "eks-karpenter-delivery.template",
    ]
    for name, template in templates.items():
        text = json.dumps(template)
        assert str(Path.home()) not in text and "/tmp" not in text and "/work/" not in text, name
        assert template == json_snapshot(name=name)
