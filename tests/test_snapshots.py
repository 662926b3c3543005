"""Snapshots of this app's own templates (the main stack and the Karpenter nested stack) for every product
configuration and example. A changed template fails with a diff; `make snapshots` accepts the change.

aws-cdk's own provider templates (the cluster-resource and kubectl providers' nested stacks) are not snapshotted:
they are the same in every configuration, every CDK upgrade rewrites them, and a diff of them would hide this app's
changes in review. What this app decides about them -- that they exist, their logical ids in the parent -- is in
the parent's snapshot and the release's logical-id baseline (tests/release/logical-ids.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from syrupy.extensions.json import JSONSnapshotExtension

from tests.cfn import PROVIDER_TEMPLATE, each
from tests.conftest import EXAMPLE_FIXTURES

# configuration -> aws-cdk's provider templates next to this app's two: a created cluster has the cluster-resource
# and kubectl providers, an existing one the kubectl provider; every example of examples/ too
CONFIGURATIONS = {"default": 2, "production": 2, "existing": 1, **{example: 2 for example in EXAMPLE_FIXTURES}}


def all_templates(synthesized) -> dict[str, dict]:
    """Every template of a synthesized configuration (aws-cdk's provider templates too): name -> template."""
    outdir = Path(synthesized.app.outdir)
    return {p.name.removesuffix(".json"): json.loads(p.read_text()) for p in sorted(outdir.glob("*.template.json"))}


def _templates(synthesized) -> dict[str, dict]:
    """This app's templates: aws-cdk's provider templates left out."""
    return {name: t for name, t in all_templates(synthesized).items() if not PROVIDER_TEMPLATE.search(name)}


@pytest.fixture
def json_snapshot(snapshot):
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.mark.parametrize("configuration", sorted(CONFIGURATIONS))
def test_templates_match_their_snapshots(configuration, request, json_snapshot):
    synthesized = request.getfixturevalue(configuration)
    templates = _templates(synthesized)
    assert len(templates) == 2, sorted(templates)  # the main stack and the Karpenter nested stack
    providers = sorted(
        p.name for p in Path(synthesized.app.outdir).glob("*.template.json") if PROVIDER_TEMPLATE.search(p.name)
    )
    assert len(providers) == CONFIGURATIONS[configuration], providers
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
