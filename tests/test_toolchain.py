"""The toolchain the README's commands install: the pinned CDK CLI and Node.js, exactly pinned Python
dependencies, CI running the README's test command (the commands themselves: tests/test_commands.py)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests.cfn import each
from tests.conftest import ROOT


def test_node_is_pinned_to_22_and_the_cli_to_the_2_1148_line():
    package = json.loads((ROOT / "package.json").read_text())
    assert package["devDependencies"] == {"aws-cdk": "2.1148.1", "node": "22.23.3"}
    lock = json.loads((ROOT / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/aws-cdk"]["version"] == "2.1148.1"
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout
    assert node.startswith("v22."), f"jsii would run on {node}"


@pytest.mark.parametrize(
    "name", ["requirements.txt", "requirements-dev.txt", "requirements-hooks.txt", "requirements-checkov.txt"]
)
def test_every_python_dependency_is_pinned_exactly(name):
    for line in each((ROOT / name).read_text().splitlines()):
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-r "):
            assert re.fullmatch(r"[A-Za-z0-9_.\-]+==[0-9][0-9A-Za-z.]*", line), f"{name}: '{line}' is not pinned"


def test_ci_runs_the_readme_test_command():
    ci = [
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line and not line.startswith(("#", "set ", "cd "))
    ]
    assert ci == ["make test"]
    assert "make test" in (ROOT / "README.md").read_text()


def test_a_python_older_than_the_pinned_packages_need_is_told_so_before_any_venv_is_made():
    """Found by a fresh-machine run with Debian 12's python3 (3.11.2): checkov's pins need 3.11.5 (soupsieve 4.1), and
    pip failed with a page of versions. Both venvs' recipes ask tooling/python_floor.py first, with make's PYTHON."""
    from tooling import python_floor

    assert python_floor.FLOOR == (3, 11, 5)
    assert python_floor.problem((3, 11, 2), "/usr/bin/python3") == (
        "make: /usr/bin/python3 is Python 3.11.2; this project needs Python 3.11.5 or newer: install one and name it "
        "with PYTHON (e.g. make test PYTHON=python3.12), or put it first on PATH as python3"
    )
    assert python_floor.problem((3, 11, 5), "python3") is None and python_floor.problem((3, 13, 0), "python3") is None
    makefile = (ROOT / "Makefile").read_text()
    for target, venv in (("$(VENV)/bin/python", "$(VENV)"), ("$(CHECKOV_STAMP)", "$(CHECKOV_VENV)")):
        recipe = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", makefile, re.M)
        assert recipe, target
        assert recipe.group(1).splitlines()[:2] == [
            "\t@$(PYTHON) tooling/python_floor.py",
            f"\t$(PYTHON) -m venv {venv}",
        ]
    project = (ROOT / "pyproject.toml").read_text()
    assert 'requires-python = ">=3.11.5"' in project
    assert "`python3` (3.11.5 or newer" in (ROOT / "README.md").read_text()
