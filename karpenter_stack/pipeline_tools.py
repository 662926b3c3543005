"""Versions of the delivery pipeline's tools (CodeBuild's CDK CLI, cdk-assets and runtimes), apart from
the version facts of what the app deploys (``versions``)."""

from __future__ import annotations

import json
from pathlib import Path

# The delivery pipeline's CodeBuild tools. The CDK CLI is package.json's (CDK Pipelines installs
# `aws-cdk@2` otherwise: whatever 2.x is newest that day); cdk-assets publishes the assets (CDK Pipelines
# installs `cdk-assets@latest` otherwise). Renovate updates the line below with the AWS CDK group.
CDK_ASSETS_VERSION = "4.7.3"  # renovate: datasource=npm depName=cdk-assets
PACKAGE_JSON = Path(__file__).resolve().parent.parent / "package.json"


def cdk_cli_version() -> str:
    """The CDK CLI version package.json pins (the one `make` installs)."""
    return str(json.loads(PACKAGE_JSON.read_text())["devDependencies"]["aws-cdk"])


def build_runtimes() -> dict[str, str]:
    """CodeBuild runtime versions of the pipeline's builds: the CI's Python line (pyproject's ruff
    target), and the Node.js major package.json pins for jsii."""
    node = json.loads(PACKAGE_JSON.read_text())["devDependencies"]["node"].split(".")[0]
    return {"python": "3.11", "nodejs": node}
