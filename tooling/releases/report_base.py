"""What the release report's parts share: a release as the project keeps it (:class:`Release`, which :func:`load`
reads from its charts in tooling/upstream/karpenter-<version>/charts/, the CRDs rendered with the pinned Helm, and
from its two templates in templates/), the error of a release that is not kept (:class:`ReportError`), and the
report itself: one :class:`Change` per difference, with the settings it touches and the decision it needs, gathered
in a :class:`Report` that prints as Markdown (release_report.py compares two releases into one)."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from constructs_lib.karpenter import yaml_load
from constructs_lib.karpenter.names import CONTROLLER_CHART, CRD_CHART
from tooling.releases import chart_render, helm

ROOT = chart_render.ROOT
IMPORT_COMMAND = "make karpenter-import VERSION={version}"


class ReportError(RuntimeError):
    """A release that is not kept or cannot be read; the message names it and the command that imports it."""


# --- one release, as kept ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Release:
    version: str
    crds: dict[str, dict[str, Any]]  # by CRD name (nodepools.karpenter.sh)
    chart: dict[str, Any]  # the karpenter chart's Chart.yaml
    values: dict[str, Any]  # the karpenter chart's values.yaml
    project_template: dict[str, Any] | None  # templates/karpenter-<version>.yaml
    upstream_template: dict[str, Any] | None  # templates/upstream/karpenter-<version>.yaml


def _charts(root: Path, version: str) -> Path:
    return root / "tooling" / "upstream" / f"karpenter-{version}" / "charts"


def _yaml(path: Path, root: Path) -> Any:
    try:
        return yaml_load.safe_load(path.read_text())
    except OSError:
        raise ReportError(f"{path.relative_to(root)}: cannot be read") from None
    except yaml.YAMLError as error:
        raise ReportError(f"{path.relative_to(root)}: not YAML: {str(error).splitlines()[0]}") from None


@functools.cache
def _rendered_crds(root: Path, version: str) -> str:
    """The CRD chart's objects as JSON: the project's own charts through chart_render's cache, a scratch copy's
    (a test's) rendered with the same Helm."""
    if root == ROOT:
        try:
            return json.dumps(chart_render.render_crds(version))
        except chart_render.ChartError as error:
            raise ReportError(str(error)) from None
    source = _charts(root, version) / CRD_CHART
    try:
        text = helm.run("template", CRD_CHART, str(source), "--namespace", "kube-system", "--kube-version", "1.36.0")
    except helm.HelmError as error:
        raise ReportError(f"the {CRD_CHART} chart {version} does not render: {error}") from None
    crds = [doc for doc in yaml_load.safe_load_all(text) if doc is not None]
    return json.dumps(
        {str(obj["metadata"]["name"]): obj for obj in crds if obj.get("kind") == "CustomResourceDefinition"}
    )


def load(root: Path, version: str) -> Release:
    """What the project keeps of Karpenter ``version`` under ``root`` (the repository, or a scratch copy of it)."""
    root = root.resolve()
    charts = _charts(root, version)
    for chart in (CONTROLLER_CHART, CRD_CHART):
        if not (charts / chart / "Chart.yaml").is_file():
            raise ReportError(
                f"Karpenter {version}: no {chart} chart in {(charts / chart).relative_to(root)}; import the release: "
                + IMPORT_COMMAND.format(version=version)
            )
    from constructs_lib.karpenter.template_parity import load_template

    def template(path: Path) -> dict[str, Any] | None:
        if not path.is_file():
            return None
        try:
            return load_template(path)
        except (ValueError, yaml.YAMLError) as error:
            raise ReportError(f"{path.relative_to(root)}: not a CloudFormation template ({error})") from None

    return Release(
        version,
        json.loads(_rendered_crds(root, version)),
        _yaml(charts / CONTROLLER_CHART / "Chart.yaml", root) or {},
        _yaml(charts / CONTROLLER_CHART / "values.yaml", root) or {},
        template(root / "templates" / f"karpenter-{version}.yaml"),
        template(root / "templates" / "upstream" / f"karpenter-{version}.yaml"),
    )


# --- the report -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One change between the releases: where (the CRD kind, the chart, the templates), what, whom it touches."""

    area: str  # "CRD", "chart value", "feature gate", "IAM", "release"
    subject: str  # the kind (NodePool), the chart (karpenter), the principal
    path: str  # the field path, the chart key, the grant
    text: str  # what changed
    touches: tuple[str, ...] = ()  # the app's settings (cdk.json keys), or "the app writes it"
    decision: str | None = None  # the one line a human must decide, when one must

    def line(self) -> str:
        where = f"`{self.path}`" if self.path else ""
        touched = f" — {'; '.join(self.touches)}" if self.touches else ""
        subject = f"{self.subject} " if self.subject else ""
        return f"- {subject}{where}{': ' if where else ''}{self.text}{touched}"


@dataclass
class Report:
    old: str
    new: str
    changes: list[Change] = field(default_factory=list)

    @property
    def decisions(self) -> list[str]:
        return [c.decision for c in self.changes if c.decision]

    def section(self, area: str) -> list[Change]:
        return [c for c in self.changes if c.area == area]

    def markdown(self) -> str:
        out = [f"# Karpenter {self.old} → {self.new}", ""]
        out += [c.line() for c in self.section("release")] + [""]
        decisions = self.decisions
        out += [f"## Decisions ({len(decisions)})", ""]
        out += [f"- {d}" for d in decisions] or ["None: nothing here needs a decision before the bump."]
        for area, title in (
            ("CRD", "CRDs (the karpenter-crd chart)"),
            ("chart value", "Chart values (the karpenter chart's values.yaml)"),
            ("feature gate", "Feature gates (settings.featureGates)"),
            ("IAM", "IAM (templates/upstream/ and templates/)"),
        ):
            out += ["", f"## {title}", ""]
            out += [c.line() for c in self.section(area)] or ["No change."]
        return "\n".join(out) + "\n"


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
