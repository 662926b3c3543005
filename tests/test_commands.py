"""The README's commands as a user runs them, in a project folder of their own (tooling/workspace.py: the
product's files and cdk.json, whatever the working copy's cdk.json holds): every example through
`make synth CONTEXT_FILE=examples/<file>`, settings through ARGS, the one-line refusals of a bad
CONTEXT_FILE, and settings of every list or object type through `-c`."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Annotations, Match

from constructs_lib.karpenter.specs.change import change_of
from karpenter_stack.config import AppConfig, load_config, load_environments
from karpenter_stack.config.parse import JSON_KINDS
from karpenter_stack.context_sources import as_flags, cdk_json_context, parse_flags, working_context
from tests import commands
from tests.cfn import each, snapshot_templates
from tests.conftest import ROOT, TODAY, synth
from tooling import workspace
from tooling.configurations import PRODUCT_CONTEXT

NOISE = re.compile(r"end-of-life|deprecated|\[WARNING\]|WARNING|Traceback|feature flags are not configured", re.I)
EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.json"))
# The examples the README gives `make synth CONTEXT_FILE=examples/<file>` for run through that command (the CLI);
# the others are checked in-process through the command's entry point (their CLI run repeated an in-process synth).
CLI_EXAMPLES = sorted(
    set(re.findall(r"make synth CONTEXT_FILE=examples/([\w.-]+\.json)", (ROOT / "README.md").read_text(), re.ASCII))
)
IN_PROCESS_EXAMPLES = [e for e in EXAMPLES if e not in CLI_EXAMPLES]
# examples/<file> -> its configuration's snapshots (tests/test_snapshots.py: the in-process synth's templates)
SNAPSHOT_OF = {"existing-cluster.json": "existing", "pipeline.json": None} | {
    name: f"example_{name.removesuffix('.json').replace('-', '_')}"
    for name in EXAMPLES
    if name not in ("existing-cluster.json", "pipeline.json")
}

# One project folder and one `make synth` each.
EXAMPLE_SYNTH = {
    name: commands.command(
        f"make-synth-{name}",
        ["make", "synth", f"CONTEXT_FILE=examples/{name}"],
        env=workspace.clean_env(),
        in_project=True,
    )
    for name in EXAMPLES
}


def _templates(outdir: Path) -> dict[str, dict[str, Any]]:
    """Templates as the snapshots hold them: what the CLI adds on its own left out (the version-reporting
    resource, the asset metadata of Lambda code for local tools, and so the hashes in the nested stacks'
    TemplateURL; the nested templates themselves are compared)."""
    return {path.name: _normalized(json.loads(path.read_text())) for path in sorted(outdir.rglob("*.template.json"))}


def _normalized(template: dict[str, Any]) -> dict[str, Any]:
    template.get("Resources", {}).pop("CDKMetadata", None)
    for resource in template.get("Resources", {}).values():
        metadata = resource.get("Metadata", {})
        for key in [k for k in metadata if k.startswith("aws:asset:")]:
            del metadata[key]
        if resource.get("Type") == "AWS::CloudFormation::Stack":
            resource["Properties"]["TemplateURL"] = "<nested template>"
    template.get("Conditions", {}).pop("CDKMetadataAvailable", None)
    for key in ("Resources", "Conditions"):
        if key in template and not template[key]:
            del template[key]
    return template


def test_the_examples_are_the_ones_the_suite_knows():
    assert EXAMPLES == [
        "baseline-and-burst.json",
        "capacity-reservation.json",
        "existing-cluster.json",
        "gitops.json",
        "golden-image.json",
        "gpu.json",
        "own-manifests.json",
        "pipeline.json",
        "windows.json",
    ]


@pytest.mark.cli
@pytest.mark.examples
@pytest.mark.parametrize("example", CLI_EXAMPLES)
def test_every_readme_example_synthesizes_through_the_readme_command(example):
    """`make synth CONTEXT_FILE=examples/<file>` on a machine without AWS credentials, for the examples the README
    gives that command for: exit 0, no warning, and the templates it writes are the committed snapshots (which the
    in-process synth is held to)."""
    result = commands.result(EXAMPLE_SYNTH[example])
    assert result.returncode == 0, result.stdout + result.stderr
    output = result.stdout + result.stderr
    assert not NOISE.search(output), output
    written = _templates(result.outdir / "cdk.out")
    top = sorted(p.name for p in (result.outdir / "cdk.out").glob("*.template.json"))
    assert result.stdout.rstrip().endswith("Synthesized: " + " ".join(top))
    manifest = json.loads((result.outdir / "cdk.out" / "manifest.json").read_text())
    (stack,) = [a for a in manifest["artifacts"].values() if a["type"] == "aws:cloudformation:stack"]
    assert stack["environment"] == "aws://unknown-account/unknown-region"
    committed = snapshot_templates(SNAPSHOT_OF[example], providers_of=result.outdir / "cdk.out")
    assert written == {f"{name}.json": _normalized(template) for name, template in committed.items()}


def _through_the_command(example: str) -> dict[str, AppConfig]:
    """The configurations app.py loads under `make synth CONTEXT_FILE=examples/<example>` in a project folder of
    the product's cdk.json: the context tooling.cdk and the CDK CLI give it (context_sources.working_context)."""
    context = working_context(ROOT / "examples" / example, (), workspace.PRODUCT)
    return load_environments(context, TODAY, file_context=cdk_json_context(workspace.PRODUCT))


@pytest.mark.parametrize("example", IN_PROCESS_EXAMPLES)
def test_every_other_example_is_the_configuration_the_in_process_synth_holds(example):
    """The examples without a README command are checked through the command's entry point, in-process: the
    context `make synth CONTEXT_FILE=examples/<file>` gives app.py loads to the very configurations the in-process
    synth of the example is built from (snapshot-, schema-, CEL- and gate-tested there), and that synth says no
    warning (JSII_DEPRECATED=fail, tests/conftest.py: a deprecated API is an error there). How make and the CLI pass
    a CONTEXT_FILE, and that they print nothing more, is shown by the README's examples through the CLI."""
    settings = json.loads((ROOT / "examples" / example).read_text())
    assert _through_the_command(example) == load_environments({**PRODUCT_CONTEXT, **settings}, TODAY)
    if "environments" in settings:  # the pipeline: built with its stages (tests/conftest.py Delivered)
        return
    built = synth(**settings)
    assert Annotations.from_stack(built.stack).find_warning("*", Match.any_value()) == []


def test_the_pipeline_example_builds_its_assembly_with_the_one_warning_it_owes(delivery):
    """examples/pipeline.json: the pipeline stack, its cross-region support stack and one nested assembly per
    environment; the one warning it owes when its settings come from CONTEXT_FILE (-c flags): the pipeline's own
    synth reads cdk.json only."""
    manifest = json.loads((Path(delivery.app.outdir) / "manifest.json").read_text())
    kinds = {name: a["type"] for name, a in manifest["artifacts"].items()}
    assert {n: t for n, t in kinds.items() if t != "cdk:asset-manifest" and n != "Tree"} == {
        "assembly-dev": "cdk:cloud-assembly",
        "assembly-prod": "cdk:cloud-assembly",
        "aws-cdk-lib/feature-flag-report": "cdk:feature-flag-report",
        "cross-region-stack-111122223333_us-east-1": "aws:cloudformation:stack",
        "eks-karpenter-delivery": "aws:cloudformation:stack",
    }
    warnings = [
        str(w.entry.data)
        for stack in [delivery.pipeline_stack, *delivery.stacks]
        for w in Annotations.from_stack(stack).find_warning("*", Match.any_value())
    ]
    assert warnings == [  # (the fixture also turns on NIST 800-53 R5: additionalNagPacks)
        "settings given with -c (additionalNagPacks, environments, pipeline) are not in cdk.json: the pipeline's own "
        "synth reads cdk.json from the repository, so its next run deploys without them; commit them to cdk.json "
        "[ack: eks-karpenter:pipeline-flags]"
    ]


def test_a_bad_setting_stops_app_py_with_one_clear_message_and_no_output(tmp_path, monkeypatch):
    """app.py's main, on the context a `-c clusterName=...` flag gives it: exit 1, the configuration error
    alone, on stderr, nothing written."""
    import sys

    import app
    from karpenter_stack.application import new_app
    from tooling.configurations import PRODUCT_CONTEXT

    bad = new_app(context={**PRODUCT_CONTEXT, "clusterName": "bad name"}, outdir=str(tmp_path))
    # What app.py prints, exactly (not the process's stderr: jsii's reader thread writes there whenever an earlier
    # synth's Node process printed last, e.g. its validation report, which once landed in this test's capture).
    said: list[tuple[object, str]] = []
    monkeypatch.setattr(app, "print", lambda *args, file=None: said.append((file, " ".join(args))), raising=False)
    with pytest.raises(SystemExit) as exit_:
        app.main(bad)
    assert exit_.value.code == 1
    assert said == [
        (
            sys.stderr,
            'Configuration error:\nclusterName = "bad name": must start with a letter or digit and contain only '
            "letters, digits, '-' and '_' (from -c)",
        )
    ]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        (["CONTEXT_FILE=examples/no-such.json"], 'CONTEXT_FILE="examples/no-such.json": no such file'),
        (["CONTEXT_FILE=examples"], 'CONTEXT_FILE="examples": is a directory, not a JSON file of settings'),
        (["CONTEXT_FILE=README.md"], 'CONTEXT_FILE="README.md": not valid JSON (Expecting value at line 1, column 1)'),
    ],
)
@pytest.mark.parametrize("target", ["synth", "cdk"])
def test_a_context_file_that_cannot_be_used_stops_before_anything_runs(tmp_path, variables, message, target):
    """One line, exit code 2, and nothing synthesized or deployed (the CLI never starts)."""
    from tooling import workspace

    project = workspace.linked(tmp_path / "project")
    (project / "cdk.out").mkdir()
    (project / "cdk.out" / "kept").write_text("an earlier synth")
    args = ["make", "--no-print-directory", "-s", target, *variables]
    if target == "cdk":
        args.append("ARGS=deploy --all --require-approval never")
    result = subprocess.run(args, cwd=project, capture_output=True, text=True, env=workspace.clean_env())
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == message
    assert (project / "cdk.out" / "kept").read_text() == "an earlier synth"  # not even cleaned


def _broken_cdk_json(dest: Path) -> None:
    from tooling import workspace

    workspace.copied(dest)  # (copied: the gate reads the cdk.json of the project its tests/ is in)
    (dest / "cdk.json").write_text('{"app": "python3 app.py", "context": {"clusterName": "a" "b"}}\n')


BROKEN = commands.command(
    "gate-broken-cdk-json",
    ["make", "--no-print-directory", "-s", "check"],
    env=workspace.clean_env(),
    prepare=_broken_cdk_json,
)


@pytest.mark.cli
def test_a_cdk_json_that_is_not_json_stops_the_gate_with_one_line():
    result = commands.result(BROKEN)
    assert result.returncode == 2
    assert "\ncdk.json: not valid JSON (Expecting ',' delimiter at line 1, column 58)\n" in "\n" + result.stderr
    assert "Traceback" not in result.stderr + result.stdout and "INTERNALERROR" not in result.stdout


def _earlier_synth(dest: Path) -> None:
    from tooling import workspace

    workspace.linked(dest)
    (dest / "cdk.out").mkdir()
    (dest / "cdk.out" / "kept").write_text("an earlier synth")


INVALID_SYNTH = commands.command(
    "synth-invalid-setting",
    ["make", "--no-print-directory", "-s", "synth", "ARGS=-c maxAzs=9"],
    env=workspace.clean_env(),
    prepare=_earlier_synth,
)


@pytest.mark.cli
def test_an_invalid_setting_stops_make_synth_before_it_removes_the_earlier_synth():
    """Found by a newcomer trial: the earlier cdk.out/ was removed before the synth failed."""
    result = commands.result(INVALID_SYNTH)
    assert result.returncode == 2
    assert result.stderr.splitlines()[:2] == [
        "Configuration error:",
        'maxAzs = "9": Input should be less than or equal to 6 (from -c)',
    ]
    assert (result.outdir / "cdk.out" / "kept").read_text() == "an earlier synth"
    assert sorted(p.name for p in result.outdir.glob("cdk.out*")) == ["cdk.out", "cdk.out.next"]
    # the refusal's line is the last the command prints: no "python3 app.py: Subprocess exited with error 1" after it
    # (tooling/cdk.py leaves the CLI's line out), only make's own
    assert re.fullmatch(r"make: \*\*\* \[Makefile:\d+: synth\] Error 1", result.stderr.splitlines()[2], re.ASCII)
    assert len(result.stderr.splitlines()) == 3 and "Subprocess exited" not in result.stderr


# A value with everything a shell would run: it must reach the app as characters of a setting.
PAYLOAD = "x; touch PWNED1 $(touch PWNED2) `touch PWNED3` | touch PWNED4 && touch PWNED5"
INJECTED_SYNTH = commands.command(
    "synth-injected-args",
    ["make", "--no-print-directory", "-s", "synth", f"ARGS=-c clusterName={PAYLOAD}"],
    env=workspace.clean_env(),
    in_project=True,
)


@pytest.mark.cli
def test_args_are_data_a_shell_never_runs():
    """Found by a newcomer trial: ARGS was pasted into the recipe's shell line, so a `;` in it ran a command. Now
    `make synth ARGS='-c clusterName=x; touch PWNED ...'` runs nothing and the app refuses the value in its line."""
    result = commands.result(INJECTED_SYNTH)
    assert result.returncode == 2
    assert sorted(p.name for p in [*result.outdir.rglob("PWNED*"), *ROOT.glob("PWNED*")]) == []
    assert result.stderr.splitlines()[:2] == [
        "Configuration error:",
        "clusterName = \"x;\": must start with a letter or digit and contain only letters, digits, '-' and '_' "
        "(from -c)",
    ]
    assert "Subprocess exited" not in result.stderr


# Every target that takes a value, with every variable the Makefile exports.
TAKES_VALUES = [
    "synth",
    "test",
    "check",
    "gate",
    "pytest",
    "pytest-examples",
    "pytest-commands",
    "cdk",
    "review",
    "accept",
    "manifests",
    "security-report",
    "upstream-examples",
    "bench",
    "karpenter-import",
    "release-report",
]
VARIABLES = ("ARGS", "SET", "CONTEXT_FILE", "BASE", "LIVE", "PYTEST_ARGS", "VERSION", "FROM", "SINCE")


def test_no_recipe_pastes_a_value_into_a_shell_line():
    """`make -n` prints the shell lines targets would run (one make for all of them): none holds a value given to
    make (they reach the tools through the environment), whatever characters it has."""
    values = [f"{name}=<{name}: '\";$(touch {name})`touch {name}`>" for name in VARIABLES]
    result = subprocess.run(
        ["make", "-n", "--no-print-directory", *TAKES_VALUES, *values],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=workspace.clean_env(),
    )
    assert result.returncode == 0, result.stderr
    assert "python -m tooling.make_args SET ARGS -- python -m tooling.review" in result.stdout  # (the recipes ran)
    assert [name for name in VARIABLES if f"<{name}:" in result.stdout or f"touch {name}" in result.stdout] == []


def test_values_reach_the_command_as_the_words_a_user_typed(tmp_path):
    """What `make cdk` hands the CLI (stood in for: it prints its arguments): SET's settings as -c flags, then ARGS
    split as a shell splits them -- quotes group and go, nothing is run -- so every README usage works as before,
    and JSON needs no quoting art in SET."""
    cli = tmp_path / "cli"
    cli.write_text("#!/usr/bin/env python3\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    cli.chmod(0o755)

    def handed(*variables: str) -> list[str]:
        args = ["make", "-s", "--no-print-directory", "cdk", f"CDK={cli}", *variables]
        done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, env=workspace.clean_env())
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    readme = """deploy --all -c endpointAccess=public-and-private -c publicAccessCidrs='["203.0.113.10/32"]'"""
    assert handed(f"ARGS={readme}") == [
        "deploy",
        "--all",
        "-c",
        "endpointAccess=public-and-private",
        "-c",
        'publicAccessCidrs=["203.0.113.10/32"]',
    ]
    # SET's flags first (the CLI takes options before its command), so a -c of ARGS wins
    assert handed('SET={"publicAccessCidrs": ["203.0.113.10/32"], "demoWorkload": true}', "ARGS=diff") == [
        "-c",
        'publicAccessCidrs=["203.0.113.10/32"]',
        "-c",
        "demoWorkload=true",
        "diff",
    ]
    assert handed(f"ARGS=ls -c clusterName={PAYLOAD}") == [
        "ls",
        "-c",
        *PAYLOAD.replace("x;", "clusterName=x;").split(" "),
    ]
    assert sorted(p.name for p in ROOT.glob("PWNED*")) == []


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        (['SET={"maxAzs": 3'], 'SET="{\\"maxAzs\\": 3": not valid JSON (Expecting \',\' delimiter at column 13)'),
        (["SET=[1]"], 'SET="[1]": expected a JSON object of settings, e.g. {"clusterName": "payments-dev"}'),
        (["ARGS=-c 'x=1"], 'ARGS="-c \'x=1": no closing quotation; quote each value once'),
    ],
)
def test_a_value_that_cannot_be_read_stops_with_one_line(variables, message):
    result = subprocess.run(
        ["make", "-s", "--no-print-directory", "cdk", "CDK=false", *variables],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=workspace.clean_env(),
    )
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == message


def test_the_cdk_command_passes_the_context_file_as_flags_before_the_arguments(tmp_path):
    from tooling.cdk import command

    settings = tmp_path / "s.json"
    settings.write_text(json.dumps({"clusterName": "payments-dev", "nodePools": [{"name": "a b"}], "maxAzs": 3}))
    assert command(["synth", "--quiet"], str(settings)) == [
        "cdk",
        "--no-notices",
        "-c",
        "clusterName=payments-dev",
        "-c",
        'nodePools=[{"name":"a b"}]',
        "-c",
        "maxAzs=3",
        "synth",
        "--quiet",
    ]  # (the CLI keeps a key's last -c: ARGS, in the arguments, win; test_security_gate runs it)
    assert command(["deploy"], None) == ["cdk", "--no-notices", "deploy"]


def test_the_old_cdk_args_variable_is_refused_with_its_replacement():
    result = subprocess.run(
        ["make", "-n", "synth", "CDK_ARGS=-c x=y"], cwd=ROOT, capture_output=True, text=True, env=workspace.clean_env()
    )
    assert result.returncode == 2
    assert (
        'CDK_ARGS is no longer read: pass settings with ARGS, e.g. make synth ARGS="-c clusterName=payments-dev"'
        in result.stderr
    )


def test_the_readmes_commands_are_what_make_help_lists_for_your_cluster():
    """make help matches the docs: the README's table of commands is the "Your cluster" part of `make help`, no more,
    no less (the project's own targets are in docs/development.md)."""
    result = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True)
    lines = result.stdout.splitlines()
    yours = [
        line.split(":")[0].strip()
        for line in lines[1 : lines.index("Developing this project:")]
        if line.startswith("  ")
    ]
    table = re.findall(r"^\| `make ([a-z-]+)[^`]*` \|", (ROOT / "README.md").read_text(), re.M)
    assert sorted(table) == sorted(yours)
    assert len(table) == len(set(table)) == 14


def test_make_help_lists_every_target():
    result = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True)
    lines = result.stdout.splitlines()
    assert lines[0] == "Your cluster:" and "Developing this project:" in lines
    developing = lines.index("Developing this project:")
    listed = [line.split(":")[0].strip() for line in lines if line.startswith("  ")]
    assert [line.split(":")[0].strip() for line in lines[developing + 1 :]] == [
        "gate",
        "pytest",
        "pytest-cli",
        "pytest-examples",
        "pytest-commands",
        "lint",
        "scan",
        "cfn-lint",
        "checkov",
        "hooks",
        "docs",
        "snapshots",
        "rehearsal",
        "transitions",
        "karpenter-import",
        "release-ids",
        "bench",
        "newcomer",
    ]
    phony = re.search(r"^\.PHONY:(.*?)(?<!\\)$", (ROOT / "Makefile").read_text(), re.M | re.S)
    assert phony is not None
    declared = phony.group(1).replace("\\\n", " ").split()
    assert sorted(listed) == sorted(declared)
    assert listed[:4] == ["help", "synth", "test", "check"]


def _sample(setting: str) -> tuple[Any, dict[str, Any]]:
    """A setting's first example (``Field(examples=[...])``) and what that value needs besides (its declaration)."""
    (name,) = [n for n, f in AppConfig.model_fields.items() if f.alias == setting]
    examples = AppConfig.model_fields[name].examples
    assert examples, f"{setting}: give the field an example (Field(examples=[...])) to try it with -c"
    declared = change_of(AppConfig, name)
    assert declared is not None
    return examples[0], declared.companions(examples[0])


# A value for every setting the model types as a list, a map or an object, valid with the settings beside it:
# derived from the settings' declarations.
SAMPLES: dict[str, tuple[Any, dict[str, Any]]] = {setting: _sample(setting) for setting in JSON_KINDS}


def test_every_list_or_object_setting_is_known_to_the_command_line_parser():
    """The parser's list comes from the model, and each of its settings has an example to try."""
    assert sorted(SAMPLES) == [
        "additionalNagPacks",
        "addonVersions",
        "administrators",
        "controller",
        "existingCluster",
        "existingNodeRoles",
        "nodeClasses",
        "nodeManifestRoles",
        "nodeManifestVariables",
        "nodeManifests",
        "nodeOverlays",
        "nodePools",
        "publicAccessCidrs",
    ]
    assert SAMPLES["publicAccessCidrs"][1]["endpointAccess"] == "public-and-private"
    assert SAMPLES["nodeOverlays"][1] == {"controller": {"featureGates": {"nodeOverlay": True}}}
    assert {k: v for k, v in JSON_KINDS.items() if v == "object"} == {
        "addonVersions": "object",
        "controller": "object",
        "existingCluster": "object",
        "nodeManifestVariables": "object",
    }


@pytest.mark.parametrize("setting", sorted(SAMPLES))
def test_every_list_or_object_setting_can_be_given_with_c(setting):
    """`-c key=<JSON>` (what CONTEXT_FILE and ARGS become) loads exactly as the value written in cdk.json."""
    value, beside = SAMPLES[setting]
    flags = parse_flags(as_flags({setting: value}))
    assert isinstance(flags[setting], str)
    from_flag = load_config({**beside, **flags}, today=TODAY)
    from_file = load_config({**beside, setting: value}, today=TODAY)
    assert from_flag == from_file


def test_the_committed_lookup_cache_holds_the_examples_accounts():
    """cdk.context.json is committed (not ignored), with the zones of the pipeline example's accounts, so
    `make synth CONTEXT_FILE=examples/pipeline.json` works offline in a fresh clone."""
    ignored = subprocess.run(["git", "check-ignore", "-q", "cdk.context.json"], cwd=ROOT).returncode
    assert ignored == 1  # not ignored
    environments = json.loads((ROOT / "examples" / "pipeline.json").read_text())["environments"]
    product = json.loads((ROOT / "tooling" / "product" / "cdk.context.json").read_text())
    for env in each(environments.values()):
        key = f"availability-zones:account={env['account']}:region={env['region']}"
        assert product[key] == [f"{env['region']}{z}" for z in "abc"]


def test_the_gate_shows_the_synths_warnings_also_when_it_passes(tmp_path):
    """Found by a newcomer trial: `make test` kept the gate synth's warnings in .gate/synth.err, so a warning
    `make synth` shows (e.g. a profile's pool replaced by yours) passed unseen. The CLI is stood in for."""

    def gate(script: str) -> subprocess.CompletedProcess[str]:
        cli = tmp_path / "cli"
        cli.write_text(f"#!/bin/sh\n{script}\n")
        cli.chmod(0o755)
        args = ["make", "-s", "gate", f"GATE={tmp_path / 'gate'}", f"CDK={cli}"]
        return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, env=workspace.clean_env())

    passing = gate('echo "WARNING nodePools: your list replaces the profile\'s" >&2')
    assert (passing.returncode, passing.stderr) == (0, "WARNING nodePools: your list replaces the profile's\n")
    assert (tmp_path / "gate" / "synth.status").read_text() == "0\n"
    failing = gate("echo 'Configuration error: x' >&2; exit 1")
    assert failing.returncode == 2
    assert failing.stderr.startswith("Configuration error: x\nmake synth of your configuration failed\n"), (
        failing.stderr
    )


def test_the_clis_trailing_subprocess_line_is_left_out_of_a_refusal_and_nothing_else():
    """tooling/cdk.py's filter of the CLI's stderr: the app's refusal stays its last line; a prompt without a newline
    passes at once (a deploy's approval question); only the exact line of the app's command goes, also in colour."""
    from tooling.cdk import NoiseFilter

    written: list[bytes] = []
    noise = NoiseFilter(written.append, "python3 app.py")
    noise.feed(b"Configuration error:\nmaxAzs = 9: ... (from -c)\n")
    noise.feed(b"python3 app.py: Subproc")  # held: it may become the CLI's line
    assert written == [b"Configuration error:\nmaxAzs = 9: ... (from -c)\n"]
    noise.feed(b"ess exited with error 1\n\x1b[31mpython3 app.py: Subprocess exited with error 1\x1b[39m\r\n")
    noise.feed(b"Do you wish to deploy these changes (y/n)? ")
    assert written[1:] == [b"Do you wish to deploy these changes (y/n)? "]
    noise.feed(b"\npython3 app.py: Subprocess exited with error 1 (not the CLI's)\npython3 app.py: Subprocess exited")
    noise.close()  # the end of a line that never became the CLI's is kept
    assert b"".join(written[2:]) == (
        b"\npython3 app.py: Subprocess exited with error 1 (not the CLI's)\npython3 app.py: Subprocess exited"
    )
    other = NoiseFilter(written.append, "node app.js")
    other.feed(b"python3 app.py: Subprocess exited with error 1\n")
    assert written[-1] == b"python3 app.py: Subprocess exited with error 1\n"  # another app's command: kept


def test_a_quiet_synth_of_several_stacks_says_nothing_of_its_own():
    """`make synth` of a cdk.json with environments: the CLI's "Successfully synthesized to <the folder make then
    renames>" and "Supply a stack id" lines are left out (make says what it synthesized); anything else stays."""
    from tooling.cdk import QUIET_SYNTH, NoiseFilter

    written: list[bytes] = []
    noise = NoiseFilter(written.append, "python3 app.py", QUIET_SYNTH)
    noise.feed(b"Successfully synthesized to /p/cdk.out.next\nSupply a stack id (a, b) to dis")
    noise.feed(b"play its template.\nWARNING something the app said\n")
    noise.close()
    assert written == [b"WARNING something the app said\n"]
    kept: list[bytes] = []
    plain = NoiseFilter(kept.append, "python3 app.py")  # any other command: kept
    plain.feed(b"Successfully synthesized to /p/cdk.out\n")
    assert kept == [b"Successfully synthesized to /p/cdk.out\n"]


def test_set_and_args_become_arguments_in_their_order():
    from tooling.make_args import arguments

    environ = {"SET": ' {"nodePools": [{"name": "a b"}], "maxAzs": 3} ', "ARGS": "-c 'x=a b' \"-c\" y=\\$HOME"}
    assert arguments(["SET", "ARGS"], environ) == [
        "-c",
        'nodePools=[{"name":"a b"}]',
        "-c",
        "maxAzs=3",
        "-c",
        "x=a b",
        "-c",
        "y=$HOME",
    ]
    assert arguments(["SET", "ARGS", "PYTEST_ARGS"], {}) == []
