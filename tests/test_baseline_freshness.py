"""The gate's baseline check in CI (tooling/review/freshness.py, tests/test_your_configuration.py): a committed
baseline/ that is not the synth of the configuration fails, stack by stack, naming what differs and `make accept`;
what only a CLI synth adds is no difference; locally (no CI) nothing is checked. tests/test_your_configuration.py does
it as a user's CI does, in a copy of the repository with your configuration."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tooling.review import freshness
from tooling.review.live import asset_templates
from tooling.review.synth import synthesized_templates

ENVIRONMENTS = {"eks-karpenter-dev": "dev", "eks-karpenter-prod": "prod"}
DEV, PROD = "devekskarpenterdev96CF2CE8.template", "prodekskarpenterprodEAB9585F.template"
PROD_KARPENTER = "prodekskarpenterprodKarpenter093297CA.nested.template"
FIX = "run `make accept` and commit baseline/ with the change (`make review` says what deploying it does)"


@pytest.fixture
def assembly(delivery, tmp_path) -> Path:
    """examples/pipeline.json's cloud assembly (the pipeline stack, two stages of one stack each, nested stacks):
    its manifests and templates, copied to be edited as a CLI synth would write them."""
    source = Path(delivery.app.outdir)
    for path in source.rglob("*.json"):
        target = tmp_path / "cdk.out" / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return tmp_path / "cdk.out"


def _accepted(outdir: Path) -> dict[str, dict[str, Any]]:
    """The baseline `make accept` writes of that synth (template name -> template, as the review reads it)."""
    return json.loads(json.dumps(synthesized_templates(outdir)))


def _as_the_cli_writes_it(outdir: Path) -> None:
    """What the CDK CLI adds to a synth that the review's own (in process) lacks: version reporting, asset metadata,
    and so other hashes of the nested templates (in their parents' TemplateURL and the asset manifests)."""
    hashes = list(asset_templates(outdir))
    for path in outdir.rglob("*.json"):
        text = path.read_text()
        for old in hashes:
            text = text.replace(old, old[::-1])
        path.write_text(text)
    for path in outdir.rglob("*.template.json"):
        template = json.loads(path.read_text())
        template["Resources"]["CDKMetadata"] = {
            "Type": "AWS::CDK::Metadata",
            "Properties": {"Analytics": "v2:deflate64:H4sI"},
            "Condition": "CDKMetadataAvailable",
        }
        template.setdefault("Conditions", {})["CDKMetadataAvailable"] = {"Fn::Equals": [{"Ref": "AWS::Region"}, "x"]}
        for resource in template["Resources"].values():
            if resource["Type"] == "AWS::Lambda::Function":
                resource.setdefault("Metadata", {})["aws:asset:path"] = "asset.0123"
        path.write_text(json.dumps(template))
    assert hashes and not set(hashes) & set(asset_templates(outdir))


def test_what_only_a_cli_synth_adds_is_no_difference(assembly):
    baseline = _accepted(assembly)
    _as_the_cli_writes_it(assembly)
    assert freshness.stale(baseline, assembly, ENVIRONMENTS) == []
    assert freshness.stale({}, assembly, ENVIRONMENTS) == []  # nothing accepted: nothing to keep honest


def test_a_stale_baseline_fails_per_environment_naming_what_differs_and_make_accept(assembly):
    baseline = _accepted(assembly)
    _as_the_cli_writes_it(assembly)
    prod = baseline[PROD]["Resources"]
    (chart,) = [k for k, r in prod.items() if r["Type"] == "Custom::AWSCDK-EKS-HelmChart" and "Controller" in k]
    prod[chart]["Properties"]["Values"] = "{}"
    baseline[PROD_KARPENTER]["Resources"]["OldQueue"] = {"Type": "AWS::SQS::Queue"}
    baseline[PROD]["Outputs"] = {}
    baseline["eks-karpenter-staging.template"] = {"Resources": {}}  # an environment since removed
    # a stack without an accepted template passes (its first review lists what it creates)
    del baseline[DEV]
    assert freshness.stale(baseline, assembly, ENVIRONMENTS) == [
        f"environment prod (stack eks-karpenter-prod): baseline/ is not the synth of your configuration: "
        f"eks-karpenter-prod: {chart} (Custom::AWSCDK-EKS-HelmChart) changed, Outputs changed; "
        f"eks-karpenter-prod > nested Karpenter: OldQueue (AWS::SQS::Queue) removed; {FIX}",
        "baseline/ holds templates your configuration no longer synthesizes (a stack renamed or removed, a nested "
        f"stack gone): eks-karpenter-staging.template.json; {FIX}",
    ]
    # a stack of no environment (the pipeline's) is named by its stack; a long list is cut after five
    pipeline = baseline["eks-karpenter-delivery.template"]["Resources"]
    for i in range(7):
        pipeline[f"Extra{i}"] = {"Type": "AWS::SNS::Topic"}
    (message,) = [m for m in freshness.stale(baseline, assembly, ENVIRONMENTS) if m.startswith("stack ")]
    assert message == (
        "stack eks-karpenter-delivery: baseline/ is not the synth of your configuration: eks-karpenter-delivery: "
        "Extra0 (AWS::SNS::Topic) removed, Extra1 (AWS::SNS::Topic) removed, Extra2 (AWS::SNS::Topic) removed, "
        f"Extra3 (AWS::SNS::Topic) removed, Extra4 (AWS::SNS::Topic) removed; and 2 more; {FIX}"
    )


def test_a_nested_stack_added_since_the_baseline_is_named():
    assert freshness._nested_name(
        "eks-karpenter", "eks-karpenter.template", "ekskarpenterKarpenterBE946E71.nested.template"
    ) == ("eks-karpenter > nested Karpenter")
    assert freshness._nested_name("eks-karpenter-prod", PROD, PROD_KARPENTER) == "eks-karpenter-prod > nested Karpenter"


@pytest.mark.parametrize(
    ("value", "checked"), [("true", True), ("1", True), ("True", True), ("", False), ("false", False), ("0", False)]
)
def test_the_check_runs_where_ci_is_set(value, checked):
    assert freshness.in_ci({"CI": value}) is checked
    assert freshness.in_ci({}) is False
