"""What the parts of the import of a Karpenter release share (karpenter_import.py runs them): where its artifacts
come from (the OCI registry of the charts, the URL of upstream's getting-started template), what one release writes
by role (:func:`layout`), the artifacts as fetched (:class:`Artifacts`), the failure that stops the import with one
line (:class:`ImportFailure`), and how versions compare."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REGISTRY = "oci://public.ecr.aws/karpenter"
CHARTS = ("karpenter", "karpenter-crd")
# The getting-started template of a release's documentation, at the release's tag: the minor's own docs folder
# (website/content/en/v1.14/), else the one upstream's CloudFormation reference page tells users to curl (preview/).
TEMPLATE_URL = (
    "https://raw.githubusercontent.com/aws/karpenter-provider-aws/v{version}/website/content/en/{docs}/"
    "getting-started/getting-started-with-karpenter/cloudformation.yaml"
)


class ImportFailure(Exception):
    """The import cannot go on: the one line to show (what, and where)."""


@dataclass(frozen=True)
class Artifacts:
    charts: Path  # holds karpenter/ and karpenter-crd/, unpacked
    template: str  # upstream's CloudFormation template, as fetched
    template_source: str  # where it was read from (for messages)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def layout(version: str) -> dict[str, str]:
    """What one release writes, by role: each a file or a folder relative to the project's root."""
    return {
        "upstream": f"tooling/upstream/karpenter-{version}",
        "schemas": f"tooling/schemas/karpenter-{version}",
        "upstream template": f"templates/upstream/karpenter-{version}.yaml",
        "template": f"templates/karpenter-{version}.yaml",
        "changes": f"templates/changes/karpenter-{version}.yaml",
        "release": f"constructs_lib/karpenter/releases/karpenter-{version}.json",
    }
