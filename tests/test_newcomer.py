"""A new user's door, in the suite: a copy of this repository made someone's own (tooling/newcomer.py: another
cluster name, own pools, two environments with accounts and a filled cdk.context.json, the production profile).
`make synth` synthesizes both environments offline (cdk-nag gates that synth); after an invalid edit, or before
cdk.context.json holds their zones, `make test` stops at once with one message. The gate's per-environment
checks run here over a two-environment production configuration; the rest of `make test`, the product's tests,
never reads a user's cdk.json (conftest's guard fails any that does), so it passes in their copy as it does
here. `make newcomer` runs the copy's whole `make test` too: about a minute more than this suite may spend."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import aws_cdk as cdk
import pytest

from tests import commands
from tests.conftest import ROOT
from tooling import workspace
from tooling.newcomer import their_cdk_json, their_lookups


def _their_copy(dest: Path, *, max_azs: int | None = None, lookups: bool = True) -> None:
    """Their copy of the repository; with ``max_azs``, after an invalid edit of prod's maxAzs; without
    ``lookups``, before they filled cdk.context.json."""
    cdk_json = their_cdk_json()
    if max_azs is not None:
        cdk_json["context"]["environments"]["prod"]["maxAzs"] = max_azs
    workspace.copied(dest, cdk_json, their_lookups() if lookups else {})


SYNTH = commands.command(
    "newcomer-synth",
    ["make", "synth"],
    env=workspace.clean_env(),
    prepare=_their_copy,
)
INVALID = commands.command(
    "newcomer-invalid-edit",
    ["make", "test"],
    env=workspace.clean_env(),
    prepare=lambda dest: _their_copy(dest, max_azs=7),
)


NO_LOOKUPS = commands.command(
    "newcomer-no-lookups",
    ["make", "test"],
    env=workspace.clean_env(),
    prepare=lambda dest: _their_copy(dest, lookups=False),
)


@pytest.mark.cli
def test_without_their_lookups_the_test_command_stops_at_once_and_says_what_to_fill():
    """Found by a newcomer trial: the whole suite ran (76 s) and the gate failed inside assertion dumps."""
    result = commands.result(NO_LOOKUPS)
    assert result.returncode == 2
    notes = [line for line in result.stderr.splitlines() if line.startswith("Note: ")]
    assert notes == [
        f"Note: cdk.context.json has no availability zones for account {account}, region {region} (key "
        f'"availability-zones:account={account}:region={region}"): run `make synth` once with credentials for '
        f"account {account} (the CDK CLI caches the answer there) or add the key by hand with the zone names of "
        f"`aws ec2 describe-availability-zones --region {region}`, then commit cdk.context.json"
        for account, region in (("444455556666", "eu-west-1"), ("123456789012", "us-east-1"))
    ]
    assert "\nyour configuration needs lookups cdk.context.json does not hold (above); nothing was tested\n" in (
        result.stderr
    )
    assert "passed" not in result.stdout


@pytest.mark.cli
def test_their_configuration_synthesizes_offline_from_their_lookup_cache():
    result = commands.result(SYNTH)
    assert result.returncode == 0, result.stderr
    top = sorted(p.name for p in (result.outdir / "cdk.out").glob("*.template.json"))
    assert result.stdout.splitlines()[-1].split() == ["Synthesized:", *top]
    assert [t for t in top if not t.endswith(".nested.template.json")] == [
        "payments-prod.template.json",
        "payments-staging.template.json",
    ]
    manifest = json.loads((result.outdir / "cdk.out" / "manifest.json").read_text())
    environments = {
        n: a["environment"] for n, a in manifest["artifacts"].items() if n in ("payments-prod", "payments-staging")
    }
    assert environments == {
        "payments-prod": "aws://123456789012/us-east-1",
        "payments-staging": "aws://444455556666/eu-west-1",
    }
    # their own pools, the system pool kept, in each environment
    for stack in ("payments-prod", "payments-staging"):
        text = (result.outdir / "cdk.out" / f"{stack}.template.json").read_text()
        assert re.findall(r'NodePool\\",\\"metadata\\":\{\\"name\\":\\"([a-z-]+)', text) == [
            "system",
            "general",
            "batch",
        ]
        # their null survives cdk.json → CLI → jsii → the app: batch has no terminationGracePeriod (found by a trial)
        assert re.findall(r'terminationGracePeriod\\":\\"([0-9a-z]+)', text) == ["24h", "24h"]


@pytest.mark.cli
def test_each_copy_is_a_clone_whose_last_commit_is_their_configuration():
    """The copies share the first copy's objects (tooling/workspace.py), not its commits: each is the project, then
    its own cdk.json and cdk.context.json committed, nothing left uncommitted or reachable from another copy."""
    for cmd, context in ((SYNTH, their_lookups()), (NO_LOOKUPS, {})):
        project = commands.result(cmd).outdir

        def git(*args: str, project: Path = project) -> str:
            return subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, check=True).stdout

        assert [line.split(" ", 1)[1] for line in git("log", "--oneline").splitlines()] == ["my cluster", "the project"]
        assert json.loads(git("show", "HEAD:cdk.json")) == json.loads((project / "cdk.json").read_text())
        assert json.loads(git("show", "HEAD:cdk.context.json")) == context
        assert git("status", "--porcelain", "--untracked-files=no") == ""


def test_the_gate_checks_every_environment_of_a_configuration(by_hand):
    """The gate's per-environment checks (test_your_configuration.py) over a configuration with two
    environments and the production profile (examples/pipeline.json's, synthesized once for the session)."""
    from karpenter_stack.config import load_environments
    from tests.conftest import TODAY
    from tests.test_your_configuration import object_problems
    from tooling.configurations import PRODUCT_CONTEXT

    environments = json.loads((ROOT / "examples" / "pipeline.json").read_text())["environments"]
    configs = load_environments({**PRODUCT_CONTEXT, "environments": environments}, today=TODAY)
    outdir = Path(cdk.Stage.of(next(iter(by_hand.values()))).outdir)
    templates = {p.name: json.loads(p.read_text()) for p in outdir.glob("*.template.json")}
    problems, checked = object_problems(templates, configs, {})
    assert (problems, sorted(configs)) == ([], ["dev", "prod"])
    assert checked == 5  # dev: a class and its pool; prod: a class, the system pool and one more
    # and a violation is reported under its environment
    broken = json.loads(json.dumps(templates))
    prod = broken["eks-karpenter-prod.template.json"]["Resources"]
    manifest = next(
        r for r in prod.values() if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource" and "NodePool" in json.dumps(r)
    )
    manifest["Properties"]["Manifest"] = json.dumps(manifest["Properties"]["Manifest"]).replace(
        "karpenter.sh/capacity-type", "karpenter.sh/capacity type"
    )
    manifest["Properties"]["Manifest"] = json.loads(manifest["Properties"]["Manifest"])
    problems, _ = object_problems(broken, configs, {})
    assert problems and all(p.startswith("environment prod: ") for p in problems)


@pytest.mark.cli
def test_the_gate_of_their_configuration_passes_in_their_copy(tmp_path, monkeypatch):
    """Found by a newcomer trial: a gate test read the product's cdk.json instead of the copy's, and `make test`
    failed on any cdk.json made one's own. Every test of the gate (tests/test_your_configuration.py) with their copy
    as the project and their `make synth` as the gate's synth (as `make test` lays it out), with CI=true: all pass.
    (In this process: the module's project and gate folder pointed at their copy.)"""
    import tests.test_your_configuration as yours

    result = commands.result(SYNTH)
    assert result.returncode == 0, result.stderr
    gate = result.outdir / ".gate"
    gate.mkdir(exist_ok=True)
    for name, text in (("synth.status", "0\n"), ("synth.out", result.stdout), ("synth.err", result.stderr)):
        (gate / name).write_text(text)
    if not (gate / "cdk.out").exists():
        (gate / "cdk.out").symlink_to(result.outdir / "cdk.out")
    monkeypatch.setattr(yours, "ROOT", result.outdir)
    monkeypatch.setattr(yours, "GATE_OUT", ".gate")
    monkeypatch.setattr(yours, "CONTEXT_FILE", None)
    monkeypatch.setattr(yours, "ARGS", [])
    monkeypatch.setenv("CI", "true")
    yours.your_environments.cache_clear()
    try:
        assert sorted(yours.your_environments()) == ["prod", "staging"]
        ran = []
        for name, test in sorted(vars(yours).items()):
            if name.startswith("test_") and callable(test):
                wants = test.__code__.co_varnames[: test.__code__.co_argcount]
                (tmp_path / name).mkdir()
                with pytest.MonkeyPatch.context() as own:  # each test its own, as pytest gives it
                    given = {"tmp_path": tmp_path / name, "monkeypatch": own}
                    test(**{arg: given[arg] for arg in wants})
                ran.append(name)
        assert len(ran) == 6
    finally:
        yours.your_environments.cache_clear()


@pytest.mark.cli
def test_an_invalid_edit_makes_the_test_command_fail_with_the_configuration_error():
    result = commands.result(INVALID)
    assert result.returncode == 2  # make's exit code for a failed recipe
    assert (
        "Configuration error:\nenvironments.prod.maxAzs = 7: Input should be less than or equal to 6 "
        "(from environments.prod)\n" in result.stderr
    )
    assert "Traceback" not in result.stderr
    assert "passed" not in result.stdout  # nothing was tested
    assert result.stderr.count("your configuration is invalid (above); nothing was tested") == 1
