"""The README's commands as a user runs them: the real CDK CLI, pinned dependencies, clean output."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests import background
from tests.cfn import each
from tests.conftest import ROOT

NOISE = re.compile(r"end-of-life|deprecated|\[WARNING\]|WARNING|Traceback|feature flags are not configured", re.I)


# The README's synth and a bad -c flag, on a machine without AWS credentials: started in the background
# when collection ends (tests/background.py).
SYNTH = background.command(
    "default-synth",
    ["cdk", "--no-notices", "synth", "--quiet", "--output", "{outdir}"],
    test="test_cdk_cli_synthesizes_the_default_configuration_without_credentials_or_noise",
    env=background.clean_env(),
)
BAD_FLAG = background.command(
    "bad-flag-synth",
    ["cdk", "--no-notices", "synth", "--quiet", "-c", "clusterName=bad name", "--output", "{outdir}"],
    test="test_bad_configuration_fails_with_one_clear_message_and_no_output",
    env=background.clean_env(),
)


@pytest.mark.background
def test_cdk_cli_synthesizes_the_default_configuration_without_credentials_or_noise():
    result = background.result(SYNTH)
    assert result.returncode == 0, result.stderr
    assert not NOISE.search(result.stdout + result.stderr), result.stdout + result.stderr
    manifest = json.loads((result.outdir / "manifest.json").read_text())
    stack = manifest["artifacts"]["eks-karpenter"]
    assert stack["environment"] == "aws://unknown-account/unknown-region"
    assert sorted(p.name for p in result.outdir.glob("*.template.json"))[0] == "eks-karpenter.template.json"


@pytest.mark.background
def test_bad_configuration_fails_with_one_clear_message_and_no_output():
    result = background.result(BAD_FLAG)
    assert result.returncode != 0
    assert 'Configuration error:\nclusterName = "bad name": must start with a letter or digit' in result.stderr
    assert "Traceback" not in result.stderr and "jsii" not in result.stderr
    assert not (result.outdir / "manifest.json").exists()
    assert not list(result.outdir.glob("*.template.json"))


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
