"""The gate of YOUR configuration: the working copy's cdk.json (with ``CONTEXT_FILE`` and ``ARGS`` when
`make test` / `make check` get them), not the product's fixtures. Every environment synthesizes through the
CDK CLI with no AWS credentials (so the security gate, cdk-nag, passes), and every Kubernetes object it applies matches the Karpenter CRDs' schema and CEL rules.

cfn-lint and checkov scan its templates as make targets of their own (`make scan`; tooling/scans/scan.py).

An invalid configuration stops the whole run before any test with the configuration error
(tests/conftest.py, :func:`check_your_configuration`)."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from karpenter_stack import gitops
from karpenter_stack.config import AppConfig
from karpenter_stack.context_sources import ContextFileError
from karpenter_stack.preflight import working_environments
from tests import commands
from tests.cfn import kubernetes_objects
from tooling import make_args, workspace
from tooling.cel_rules import KINDS, evaluate
from tooling.kubernetes_schemas import object_violations

ROOT = Path(__file__).resolve().parent.parent
CONTEXT_FILE = os.environ.get("CONTEXT_FILE") or None
# SET and ARGS of `make test` / `make check` (the Makefile exports them as given): SET's settings, then ARGS's, as -c
# flags, read as tooling/make_args.py reads them for `make synth`. One it cannot read stops the run (conftest).
try:
    ARGS = make_args.arguments(["SET", "ARGS"], os.environ)
    ARGS_ERROR: str | None = None
except ContextFileError as err:
    ARGS, ARGS_ERROR = [], str(err)
SYNTH_DIR = "your-synth"

_env = workspace.clean_env()
if CONTEXT_FILE:
    _env["CONTEXT_FILE"] = CONTEXT_FILE
# What `make synth` runs (tooling/cdk.py: the CLI with CONTEXT_FILE's settings), into an output folder of its
# own so that your cdk.out/ is left alone.
SYNTH = commands.command(
    SYNTH_DIR,
    ["python", "-m", "tooling.cdk", "synth", "--quiet", "--output", "{outdir}", *ARGS],
    env=_env,
)
# `make test` and `make check` synthesize it once, before the tests and the scanners (the Makefile's `gate`), and
# say where; a pytest run by hand synthesizes it here.
GATE_OUT = os.environ.get("KARPENTER_GATE_OUT")


def your_synth() -> commands.Finished:
    if not GATE_OUT:
        return commands.result(SYNTH)
    gate = ROOT / GATE_OUT
    return commands.Finished(
        int((gate / "synth.status").read_text()),
        (gate / "synth.out").read_text(),
        (gate / "synth.err").read_text(),
        gate / "cdk.out",
    )


@cache
def your_environments() -> dict[str, AppConfig]:
    """Your configuration, loaded as the app loads it (raises ConfigError when it is invalid)."""
    return working_environments(CONTEXT_FILE, ARGS, ROOT)


def _templates(outdir: Path) -> dict[str, dict[str, Any]]:
    return {str(p.relative_to(outdir)): json.loads(p.read_text()) for p in sorted(outdir.rglob("*.template.json"))}


@pytest.mark.cli
def test_every_environment_of_your_configuration_synthesizes_and_passes_the_security_gate():
    result = your_synth()
    assert result.returncode == 0, f"`make synth` of your configuration fails:\n{result.stderr}"
    names = [Path(n).name for n in _templates(result.outdir)]
    for name, config in your_environments().items():
        stack = config.cluster_name.replace("_", "-")
        assert f"{stack}.template.json" in names, f"environment {name or '(default)'}: no stack {stack} synthesized"


def object_problems(
    templates: dict[str, dict[str, Any]], configs: dict[str, AppConfig], recorded: dict[str, dict[str, Any]]
) -> tuple[list[str], int]:
    """Every CRD schema and CEL violation of the Kubernetes objects each environment applies (templates by file
    name; ``recorded``: the node objects a GitOps tool applies, by stack), and how many Karpenter objects were
    checked."""
    problems, checked = [], 0
    for name, config in configs.items():
        stack = config.cluster_name.replace("_", "-")
        (template,) = [t for n, t in templates.items() if Path(n).name == f"{stack}.template.json"]
        applied = list(kubernetes_objects(Template.from_json(template)).items())
        applied += [
            (f"{gitops.folder_of(stack)}/{gitops.file_name(o)}", o) for o in recorded.get(stack, {}).get("objects", [])
        ]
        for key, obj in applied:
            obj = {k: v for k, v in obj.items() if k != "_logicalId"}
            found = object_violations(obj, config.karpenter_version, config.kubernetes_version)
            if obj["kind"] in KINDS:
                found += [f"{key}: {v}" for v in evaluate(obj, config.karpenter_version).violations]
                checked += 1
            problems += [f"environment {name or '(default)'}: {p}" for p in found]
    return problems, checked


@pytest.mark.cli
def test_every_kubernetes_object_you_apply_matches_the_crds_schema_and_cel_rules():
    result = your_synth()
    assert result.returncode == 0
    problems, checked = object_problems(_templates(result.outdir), your_environments(), gitops.recorded(result.outdir))
    assert problems == []
    # every node class and pool of every environment, whoever applies it
    assert checked >= sum(len(c.node_classes) + len(c.node_pools) for c in your_environments().values())


@pytest.mark.cli
def test_your_gitops_folders_hold_what_your_configuration_renders():
    """With nodeObjects "gitops", your GitOps tool applies gitops/<stack>/ as committed: it must be what the
    configuration renders (as snapshot tests fail on a changed template)."""
    result = your_synth()
    assert result.returncode == 0
    stale = [
        f"{r['folder']}/ is not what your configuration renders: make manifests ARGS=--write, review the diff, commit"
        for stack, r in gitops.recorded(result.outdir).items()
        if gitops.committed(ROOT, r["folder"]) != gitops.files(stack, r["objects"])
    ]
    assert stale == [], "\n".join(stale)


@pytest.mark.cli
def test_the_gate_reads_every_iam_grant_of_your_synth_and_the_karpenter_stack_grants_what_its_template_does():
    """Every grant of every stack, nested stacks included (their templates in the synth), is one the gate reads
    (constructs_lib/karpenter/iam_resources.py), and each Karpenter nested stack grants no more than the template that was
    held to upstream's at synth."""
    from constructs_lib.karpenter.template_parity import synthesized_problems
    from karpenter_stack import versions

    result = your_synth()
    assert result.returncode == 0
    karpenter = {
        f"{config.cluster_name.replace('_', '-')}.template.json": (
            versions.karpenter_template(config.karpenter_version),
            config.cluster_name,
        )
        for config in your_environments().values()
    }
    assert synthesized_problems(result.outdir, karpenter) == []


@pytest.mark.cli
def test_in_ci_your_committed_baseline_is_the_synth_of_your_configuration():
    """In CI (``CI=true``, which GitHub Actions sets), every stack with an accepted baseline (`make accept`, committed
    in baseline/) must be what your configuration synthesizes, as the snapshot tests hold the product's templates:
    a change committed without `make accept` leaves the baseline behind, and the next review would show two changes.
    Locally a stale baseline during a change is normal (`make review` shows it), so this checks only in CI. It reads
    the gate's synth: nothing is synthesized again (tooling/review/freshness.py)."""
    from tooling.review import freshness
    from tooling.review.baseline import BASELINE, baseline_templates

    result = your_synth()
    assert result.returncode == 0
    if not freshness.in_ci(os.environ):
        return
    environments = {config.cluster_name.replace("_", "-"): name for name, config in your_environments().items()}
    problems = freshness.stale(baseline_templates(BASELINE, root=ROOT), result.outdir, environments)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


FRESHNESS_FIX = "run `make accept` and commit baseline/ with the change (`make review` says what deploying it does)"


@pytest.mark.cli
def test_in_ci_make_accept_keeps_your_gate_green_and_an_unaccepted_change_turns_it_red(tmp_path, monkeypatch):
    """What `make accept` writes of your configuration (the review's in-process synth, as `python -m tooling.review
    --accept` runs it, into a folder of its own: your baseline/ is left alone) is what the gate's CLI synth holds:
    the gate's baseline test passes in CI. A baseline that holds other controller values (a change the branch made
    and did not accept) fails it in CI, one line per environment naming make accept."""
    import argparse

    from karpenter_stack import context_sources
    from tooling.review import baseline as accepted_baseline
    from tooling.review.cli import _review

    result = your_synth()
    assert result.returncode == 0
    # your project, not the product's (the suite points the app at tooling/product/ for the product's tests)
    monkeypatch.setattr(context_sources, "project_dir", lambda: ROOT)
    context = context_sources.working_context(str(ROOT / CONTEXT_FILE) if CONTEXT_FILE else None, list(ARGS))
    accept = argparse.Namespace(accept=True, live=False, adopt=None, base=None, acknowledge=[], output=None)
    directory = tmp_path / "baseline"
    assert _review(accept, context, str(directory), str(tmp_path / "cdk.out")) == 0
    templates = accepted_baseline.baseline_templates(str(directory), root=ROOT)
    assert templates
    monkeypatch.setenv("CI", "true")
    monkeypatch.setattr(accepted_baseline, "baseline_templates", lambda *_a, **_k: templates)
    test_in_ci_your_committed_baseline_is_the_synth_of_your_configuration()  # green

    for template in templates.values():  # the baseline of the branch before its change: other controller values
        for resource in template.get("Resources", {}).values():
            if (
                resource.get("Type") == "Custom::AWSCDK-EKS-HelmChart"
                and resource["Properties"]["Release"] == "karpenter"
            ):
                resource["Properties"]["Values"] = json.dumps({"logLevel": "an older value"})
    with pytest.raises(pytest.fail.Exception) as red:
        test_in_ci_your_committed_baseline_is_the_synth_of_your_configuration()
    lines = str(red.value).splitlines()
    assert len(lines) == len(your_environments())
    for line in lines:
        assert line.startswith(("environment ", "stack ")), line
        assert "baseline/ is not the synth of your configuration: " in line and line.endswith(f"; {FRESHNESS_FIX}"), (
            line
        )
        assert "(Custom::AWSCDK-EKS-HelmChart) changed" in line, line
