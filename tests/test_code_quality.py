"""Lint, format and types, as CI enforces them (settings: pyproject.toml). The three run in the background
from the start of the session (tests/background.py); a pre-commit hook runs the same commands
(.pre-commit-config.yaml)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests import background

BIN = Path(sys.executable).parent
RUFF_CHECK = background.command(
    "ruff-check", [str(BIN / "ruff"), "check", "--no-cache", "."], test="test_ruff_finds_nothing"
)
RUFF_FORMAT = background.command(
    "ruff-format", [str(BIN / "ruff"), "format", "--check", "--no-cache", "."], test="test_the_code_is_formatted"
)
# mypy keeps its cache in .mypy_cache/ (git-ignored): warm, it takes about a second; in a clean clone
# about a minute, in the background while the other tests run.
MYPY = background.command("mypy", [str(BIN / "mypy")], test="test_the_apps_packages_type_check_strictly")


@pytest.mark.background
def test_ruff_finds_nothing():
    result = background.result(RUFF_CHECK)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.background
def test_the_code_is_formatted():
    result = background.result(RUFF_FORMAT)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.background
def test_the_apps_packages_type_check_strictly():
    result = background.result(MYPY, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("Success: no issues found in "), result.stdout


def test_the_pre_commit_hooks_run_the_same_checks():
    """.pre-commit-config.yaml runs these very commands, with the project's pinned tools."""
    import yaml

    from tests.conftest import ROOT

    (repo,) = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())["repos"]
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
