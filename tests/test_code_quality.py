"""Lint, format and types run as `make lint` (settings: pyproject.toml), which `make test` runs beside the tests; a
pre-commit hook runs the same commands (.pre-commit-config.yaml)."""

from __future__ import annotations

import re

from constructs_lib.karpenter import yaml_load
from tests.conftest import ROOT


def _recipe(target: str) -> list[list[str]]:
    """The commands of a Makefile target's recipe, as argument lists: continued lines joined, and what runs
    through ``$(TIMED) <job> --`` (tooling/timed.py: it records the job's times under `make test`) as it runs."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    match = re.search(rf"^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*\n)+)", text, re.M)
    assert match, f"no target {target} in the Makefile"
    commands = [line.strip().split() for line in match.group(1).splitlines()]
    return [words[3:] if words[:1] == ["$(TIMED)"] and words[2:3] == ["--"] else words for words in commands]


def test_make_lint_runs_ruff_format_and_strict_mypy():
    assert _recipe("lint") == [
        ["ruff", "check", "--no-cache", "."],
        ["ruff", "format", "--check", "--no-cache", "."],
        ["mypy"],
    ]


def test_make_test_runs_lint_and_the_scanners_beside_the_tests():
    (check, jobs) = _recipe("test")
    # the configuration check first, with SET's and ARGS's settings (tooling/make_args.py reads them)
    assert check == ["@$(RUN)", "SET", "ARGS", "--", "$(CDK)", "--check-config"]
    # the jobs side by side, each command's times recorded in a file of this run's own (JOB_TIMES), then reported
    # whatever the outcome
    assert jobs[:6] == [
        "@times=$$(mktemp);",
        "JOB_TIMES=$$times",
        "$(MAKE)",
        "--no-print-directory",
        "-j6",
        "--output-sync=target",
    ]
    assert jobs[6:10] == ["pytest", "pytest-cli", "lint", "scan;"]
    assert " ".join(jobs[10:]) == "status=$$?; python -m tooling.timed --report $$times; rm -f $$times; exit $$status"
    assert re.search(r"^scan: cfn-lint checkov$", (ROOT / "Makefile").read_text(), re.M)
    scanned = {target: " ".join(" ".join(line) for line in _recipe(target)) for target in ("cfn-lint", "checkov")}
    for target, command in scanned.items():
        assert command.startswith(f"$(NICE) python -m tooling.scans.scan {target} "), command
        # this app's templates (its snapshots), templates/ and your configuration's synth
        for files in (
            "tests/__snapshots__/test_snapshots/*.json",
            "templates/*.yaml",
            "$(GATE)/cdk.out/*.template.json",
        ):
            assert files in command, (target, files)
    assert "--expect-findings tests/data/broken-template.yaml" in scanned["cfn-lint"]


def test_the_pre_commit_hooks_run_the_same_checks():
    """.pre-commit-config.yaml runs these very commands, with the project's pinned tools."""
    (repo,) = yaml_load.safe_load((ROOT / ".pre-commit-config.yaml").read_text())["repos"]
    assert repo["repo"] == "local"
    hooks = {hook["id"]: hook["entry"].split() for hook in repo["hooks"]}
    # (--force-exclude: pre-commit names the files, and pyproject's excludes must hold for them too)
    assert hooks == {
        "ruff-check": [".venv/bin/ruff", "check", "--force-exclude"],
        "ruff-format": [".venv/bin/ruff", "format", "--check", "--force-exclude"],
        "mypy": [".venv/bin/mypy"],
    }
    assert {h["language"] for h in repo["hooks"]} == {"system"}
    assert next(h for h in repo["hooks"] if h["id"] == "mypy")["pass_filenames"] is False  # pyproject's files
    # the same tools and subcommands as `make lint` (which adds --no-cache; the hooks add --force-exclude)
    without_flags = [
        [".venv/bin/" + cmd[0], *(a for a in cmd[1:] if a not in ("--no-cache", "."))] for cmd in _recipe("lint")
    ]
    assert without_flags == [[a for a in hook if a != "--force-exclude"] for hook in hooks.values()]
