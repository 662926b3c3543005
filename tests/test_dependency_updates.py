"""Renovate's configuration (renovate.json): what must move together is grouped, the two version lines
the project holds back are held back, and the Karpenter release in cdk.json is found."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.conftest import ROOT
from tooling.configurations import PRODUCT

CONFIG: dict[str, Any] = json.loads((ROOT / "renovate.json").read_text())
REQUIREMENTS = ("requirements.txt", "requirements-dev.txt", "requirements-hooks.txt", "requirements-checkov.txt")


def _matches(rule: dict[str, Any], name: str, manager: str, file: str) -> bool:
    """Renovate's matching for the criteria this configuration uses (exact names, /regex/ names)."""
    if "matchManagers" in rule and manager not in rule["matchManagers"]:
        return False
    if "matchFileNames" in rule and file not in rule["matchFileNames"]:
        return False
    if "matchPackageNames" in rule:
        return any(re.search(p[1:-1], name) if p.startswith("/") else p == name for p in rule["matchPackageNames"])
    return "matchDepNames" not in rule


def _group(name: str, manager: str, file: str) -> str | None:
    """The group a dependency lands in: the last matching rule with a groupName wins, as in Renovate."""
    groups = [r["groupName"] for r in CONFIG["packageRules"] if "groupName" in r and _matches(r, name, manager, file)]
    return groups[-1] if groups else None


def _python_dependencies() -> list[tuple[str, str, bool]]:
    """(file, package, direct) for every pinned line."""
    out = []
    for file in REQUIREMENTS:
        direct = True
        for line in (ROOT / file).read_text().splitlines():
            if line.startswith("# Transitive"):
                direct = False
            package = line.split("#", 1)[0].strip()
            if package and not package.startswith("-r "):
                out.append((file, package.split("==")[0], direct))
    return out


GROUP_OF = {
    "aws-cdk-lib": "AWS CDK",
    "constructs": "AWS CDK",
    "aws-cdk.lambda-layer-kubectl-v36": "AWS CDK",
    "aws-cdk.lambda-layer-kubectl-v35": "AWS CDK",
    "aws-cdk.lambda-layer-kubectl-v31": "AWS CDK",
    "botocore": "AWS SDK for Python",
    "boto3": "AWS SDK for Python",
    "jsii": "AWS CDK",
    "aws-cdk.asset-awscli-v1": "AWS CDK",
    "cdk-nag": "cdk-nag",
    "pydantic": "runtime dependencies",
    "pytest": "test and lint tools",
    "ruff": "test and lint tools",
    "mypy": "test and lint tools",
    "cfn-lint": "test and lint tools",
    "pre-commit": "test and lint tools",
    "checkov": "test and lint tools",
}


@pytest.mark.parametrize("file,package,direct", _python_dependencies(), ids=lambda v: str(v))
def test_every_python_dependency_is_in_a_group(file, package, direct):
    group = _group(package, "pip_requirements", file)
    assert group is not None
    if direct and package in GROUP_OF:  # (checkov's venv has its own pydantic, boto3, ...: its file's group)
        assert group == GROUP_OF[package]


def test_the_cdk_cli_moves_with_the_library_and_stays_on_its_2x_line_and_node_on_22():
    package = json.loads((ROOT / "package.json").read_text())
    assert set(package["devDependencies"]) == {"aws-cdk", "node"}
    assert _group("aws-cdk", "npm", "package.json") == _group("aws-cdk-lib", "pip_requirements", "requirements.txt")
    held = {r["matchPackageNames"][0]: r["allowedVersions"] for r in CONFIG["packageRules"] if "allowedVersions" in r}
    assert held == {"aws-cdk": "<3", "node": "<23"}


def test_the_karpenter_release_in_cdk_json_is_found_and_names_the_upgrade_procedure():
    manager, _ = CONFIG["customManagers"]
    assert manager["managerFilePatterns"] == ["/^cdk\\.json$/"]
    (pattern,) = manager["matchStrings"]
    found = re.search(pattern.replace("(?<", "(?P<"), (PRODUCT / "cdk.json").read_text())  # as shipped
    assert found is not None and found.group("currentValue") == "1.14.1"
    assert (manager["depNameTemplate"], manager["datasourceTemplate"]) == (
        "aws/karpenter-provider-aws",
        "github-releases",
    )
    assert (
        re.fullmatch(manager["extractVersionTemplate"].replace("(?<", "(?P<"), "v1.14.2").group("version") == "1.14.2"
    )
    (rule,) = [r for r in CONFIG["packageRules"] if r.get("matchDepNames") == ["aws/karpenter-provider-aws"]]
    operations = (ROOT / "docs" / "operations.md").read_text()
    assert "docs/operations.md, 'Upgrade'" in rule["prBodyNotes"][0] and "\n## Upgrade\n" in operations
    assert CONFIG["enabledManagers"] == ["pip_requirements", "npm", "github-actions", "custom.regex"]


def test_the_pipelines_cdk_assets_release_is_found_and_moves_with_the_cdk():
    """The delivery pipeline's CodeBuild installs cdk-assets at the version in pipeline_tools.py (never latest)."""
    from karpenter_stack import pipeline_tools

    _, manager = CONFIG["customManagers"]
    (pattern,) = manager["matchStrings"]
    found = re.search(pattern.replace("(?<", "(?P<"), (ROOT / "karpenter_stack" / "pipeline_tools.py").read_text())
    assert found is not None
    assert (found.group("currentValue"), found.group("datasource"), found.group("depName")) == (
        pipeline_tools.CDK_ASSETS_VERSION,
        "npm",
        "cdk-assets",
    )
    assert re.fullmatch(manager["managerFilePatterns"][0][1:-1], "karpenter_stack/pipeline_tools.py")
    assert _group("cdk-assets", "custom.regex", "karpenter_stack/pipeline_tools.py") == "AWS CDK"
