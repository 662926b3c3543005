"""The gate's baseline check in CI (tooling/review/freshness.py, tests/test_your_configuration.py): a committed
baseline/ that is not the synth of the configuration fails, stack by stack, naming what differs and `make accept`;
what only a CLI synth adds is no difference; locally (no CI) nothing is checked. The last test does it as a user's
CI does, in a copy of the repository: accept, change a setting, the gate red, accept again, green."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tooling import workspace
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


# A user's CI, in a copy of the repository with one environment: the gate's baseline test alone, on the gate's synth.
GATE_TEST = (
    "python -m pytest -q -p no:cacheprovider -p no:hypothesispytest tests/test_your_configuration.py -k baseline"
)


@pytest.mark.cli
def test_in_a_users_ci_a_change_without_make_accept_fails_the_gate_and_accepting_it_passes(tmp_path):
    """Accept; change prod's settings without accepting; the gate's synth; its baseline test in CI (red) and locally
    (green); accept again; in CI (green)."""
    project = tmp_path / "theirs"
    cdk_json = json.loads((workspace.PRODUCT / "cdk.json").read_text())
    cdk_json["context"]["environments"] = {"prod": {}}
    workspace.copied(project, cdk_json, {})
    env = {k: v for k, v in workspace.clean_env(KARPENTER_GATE_OUT=".gate").items() if k != "CI"}

    def start(*args: str, ci: bool = False) -> subprocess.Popen[str]:
        return subprocess.Popen(
            args,
            cwd=project,
            env={**env, "CI": "true"} if ci else env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(*args: str, ci: bool = False) -> tuple[int, str]:
        process = start(*args, ci=ci)
        out, err = process.communicate(timeout=600)
        return process.returncode, out + err

    assert run("make", "accept")[0] == 0
    cdk_json["context"]["environments"]["prod"]["controller"] = {"logLevel": "debug"}
    (project / "cdk.json").write_text(json.dumps(cdk_json, indent=2))
    assert run("make", "gate")[0] == 0

    in_ci, locally = start(*GATE_TEST.split(), ci=True), start(*GATE_TEST.split())  # side by side: they only read
    out = in_ci.communicate(timeout=600)[0]
    assert in_ci.returncode == 1
    (line,) = [line for line in out.splitlines() if line.startswith("environment ")]
    assert line == (
        "environment prod (stack eks-karpenter-prod): baseline/ is not the synth of your configuration: "
        f"eks-karpenter-prod: KarpenterReleaseControllerChartB127D32C (Custom::AWSCDK-EKS-HelmChart) changed; {FIX}"
    )
    out = locally.communicate(timeout=600)[0]
    assert (locally.returncode, out.splitlines()[-1].split(",")[0]) == (0, "1 passed")

    assert run("make", "accept")[0] == 0
    code, out = run(*GATE_TEST.split(), ci=True)
    assert (code, out.splitlines()[-1].split(",")[0]) == (0, "1 passed")
