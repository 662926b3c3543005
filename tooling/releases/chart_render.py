"""Karpenter's own Helm charts, rendered offline: ``helm template`` of a kept release's ``karpenter`` or
``karpenter-crd`` chart (``tooling/upstream/karpenter-<version>/charts/``, as upstream released them) with the
project's pinned Helm (helm.py, the kubectl layer's: the Helm that installs them in a deployed cluster),
returning the Kubernetes objects the chart would apply, parsed.

The controller chart is rendered with the app's own values as a synthesized template carries them
(:func:`release_values`): the ``Values`` of the ``Custom::AWSCDK-EKS-HelmChart`` resource, which aws-cdk's
kubectl handler writes to a file and hands to ``helm upgrade --install --values``. CloudFormation resolves
the intrinsics in it (the controller role's ARN, the queue's name, the region) at deploy time; here each
becomes a placeholder that says what it stands for: ``${Ref:AWS::Region}``, ``${GetAtt:ControllerRole1234.Arn}``
(the format tests/cfn.py renders them in).

:func:`unknown_values` checks every value the app sets against the chart's own ``values.yaml`` (each kept
version's), instead of a hand-kept key list. One render is kept per (version, chart, values, namespace,
Kubernetes version) for the life of the process: the suite renders each configuration once per session.
"""

from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from constructs_lib.karpenter import yaml_load
from constructs_lib.karpenter.names import CONTROLLER_CHART, CRD_CHART
from tooling.releases import helm

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = ROOT / "tooling" / "upstream"
HELM_CHART_RESOURCE = "Custom::AWSCDK-EKS-HelmChart"

# Values of the controller chart that the chart hands to Kubernetes whole (``toYaml``), so the keys below them
# are Kubernetes' or the user's, not the chart's: the key walk stops at them. Read from the chart's templates
# (karpenter 1.13.1 and 1.14.1 use them alike): ``{{- with .Values.<path> }} ... {{- toYaml . | nindent N }}``
# in deployment.yaml (strategy, podLabels, podAnnotations, podSecurityContext, dnsConfig, initContainers,
# nodeSelector, affinity -- after the chart's patch adds its label selector --, controller.resources, the three
# maps of controller.securityContext), serviceaccount.yaml (serviceAccount.annotations), service.yaml
# (service.annotations), servicemonitor.yaml (serviceMonitor.additionalLabels, serviceMonitor.endpointConfig)
# and every object's metadata (additionalLabels through the "karpenter.labels" helper, additionalAnnotations).
# Lists (tolerations, controller.env, topologySpreadConstraints, ...) and scalars are leaves anyway. The suite
# proves each entry by rendering a probe key under it (tests/test_chart_render.py), and fails on an empty map of
# a chart's values.yaml that is not listed here: a new release's new map needs the same decision.
PASS_THROUGH = frozenset(
    {
        "additionalLabels",
        "additionalAnnotations",
        "service.annotations",
        "serviceAccount.annotations",
        "serviceMonitor.additionalLabels",
        "serviceMonitor.endpointConfig",
        "strategy",
        "podLabels",
        "podAnnotations",
        "podSecurityContext",
        "dnsConfig",
        "initContainers",
        "nodeSelector",
        "affinity",
        "controller.resources",
        "controller.securityContext.appArmorProfile",
        "controller.securityContext.seLinuxOptions",
        "controller.securityContext.seccompProfile",
    }
)


class ChartError(RuntimeError):
    """A chart that is not kept, cannot be rendered or values that cannot be read; the message says which."""


def kept_versions() -> list[str]:
    """The Karpenter versions whose two charts are kept in tooling/upstream/, oldest first."""
    found = [
        path.parent.parent.name.removeprefix("karpenter-")
        for path in UPSTREAM.glob(f"karpenter-*/charts/{CONTROLLER_CHART}")
        if (path.parent / CRD_CHART).is_dir()
    ]
    return sorted(found, key=lambda v: tuple(int(p) if p.isdigit() else 0 for p in v.split(".")))


def chart_dir(version: str, chart: str) -> Path:
    path = UPSTREAM / f"karpenter-{version}" / "charts" / chart
    if not (path / "Chart.yaml").is_file():
        kept = ", ".join(kept_versions()) or "none"
        raise ChartError(f"no {chart} chart of Karpenter {version} in {path.relative_to(ROOT)} (kept: {kept})")
    return path


@cache
def _chart_defaults(version: str, chart: str) -> str:
    path = chart_dir(version, chart) / "values.yaml"
    try:
        values = yaml_load.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        raise ChartError(f"{path.relative_to(ROOT)}: not YAML: {str(error).splitlines()[0]}") from None
    return json.dumps(values)


def chart_defaults(version: str, chart: str = CONTROLLER_CHART) -> dict[str, Any]:
    """The chart's values.yaml, parsed (a fresh copy)."""
    defaults: dict[str, Any] = json.loads(_chart_defaults(version, chart))
    return defaults


def unknown_values(values: Mapping[str, Any], version: str, chart: str = CONTROLLER_CHART) -> list[str]:
    """Each value of ``values`` that the chart's values.yaml does not have, one line each: the path, and the
    chart's keys nearest to it. The walk follows the chart's maps and stops at a leaf: a scalar, a list, or a
    map the chart passes through whole (:data:`PASS_THROUGH`)."""
    problems: list[str] = []

    def walk(mine: Mapping[str, Any], theirs: Mapping[str, Any], path: str) -> None:
        for key, value in mine.items():
            here = f"{path}.{key}" if path else str(key)
            if key not in theirs:
                near = difflib.get_close_matches(str(key), [str(k) for k in theirs], n=1)
                hint = f"; did you mean '{near[0]}'?" if near else ""
                problems.append(f"{here}: not a value of the {chart} chart {version} (its values.yaml){hint}")
                continue
            default = theirs[key]
            if here in PASS_THROUGH or not isinstance(default, dict):
                continue
            if not isinstance(value, Mapping):
                problems.append(f"{here}: the {chart} chart {version} takes a map here, not {json.dumps(value)}")
                continue
            walk(value, default, here)

    walk(values, chart_defaults(version, chart), "")
    return problems


def empty_maps(version: str, chart: str = CONTROLLER_CHART) -> list[str]:
    """The paths of the chart's values.yaml whose default is an empty map: a chart's way of saying "yours to
    fill", each of which must be decided into :data:`PASS_THROUGH` (or not)."""
    found: list[str] = []

    def walk(node: Mapping[str, Any], path: str) -> None:
        for key, value in node.items():
            here = f"{path}.{key}" if path else str(key)
            if isinstance(value, dict):
                if not value:
                    found.append(here)
                walk(value, here)

    walk(chart_defaults(version, chart), "")
    return found


# --- values from a synthesized template ----------------------------------------------------------------


def placeholder(expr: Any) -> str:
    """A stand-in for an intrinsic inside a rendered string: ``${GetAtt:Res.Attr}``, ``${Ref:Res}``."""
    if isinstance(expr, dict) and len(expr) == 1:
        ((fn, arg),) = expr.items()
        if fn == "Ref":
            return f"${{Ref:{arg}}}"
        if fn == "Fn::GetAtt":
            resource, attribute = arg.split(".", 1) if isinstance(arg, str) else arg
            return f"${{GetAtt:{resource}.{attribute}}}"
        if fn == "Fn::Select" and isinstance(arg[1], dict) and "Fn::Split" in arg[1]:
            separator, source = arg[1]["Fn::Split"]
            return f"${{Select:{arg[0]}:Split:{separator}:{placeholder(source)}}}"
    raise ChartError(f"an intrinsic with no placeholder in a rendered string: {json.dumps(expr)}")


def flatten(value: Any) -> str:
    """A string or an Fn::Join as one string, its intrinsics as placeholders."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(p if isinstance(p, str) else placeholder(p) for p in parts)
    return placeholder(value)


def release_values(template: Mapping[str, Any], release: str = CONTROLLER_CHART) -> dict[str, Any]:
    """The values a synthesized template installs Helm release ``release`` with (its one
    ``Custom::AWSCDK-EKS-HelmChart`` of that release name), intrinsics as placeholders; ``{}`` without values."""
    charts = [
        resource["Properties"]
        for resource in template.get("Resources", {}).values()
        if resource.get("Type") == HELM_CHART_RESOURCE and resource.get("Properties", {}).get("Release") == release
    ]
    if len(charts) != 1:
        raise ChartError(f"the template installs the Helm release {release} {len(charts)} times, expected once")
    if "Values" not in charts[0]:
        return {}
    try:
        values: dict[str, Any] = json.loads(flatten(charts[0]["Values"]))
    except json.JSONDecodeError as error:
        raise ChartError(f"the values of the Helm release {release} are not JSON: {error}") from None
    return values


def release_namespace(template: Mapping[str, Any], release: str = CONTROLLER_CHART) -> str:
    """The namespace a synthesized template installs Helm release ``release`` into (aws-cdk's default: default)."""
    for resource in template.get("Resources", {}).values():
        properties = resource.get("Properties", {})
        if resource.get("Type") == HELM_CHART_RESOURCE and properties.get("Release") == release:
            return str(properties.get("Namespace", "default"))
    raise ChartError(f"the template does not install the Helm release {release}")


# --- rendering -------------------------------------------------------------------------------------------


@cache
def _render_text(
    version: str, chart: str, values: str, namespace: str, kubernetes_version: str, api_versions: tuple[str, ...]
) -> str:
    options = ["--namespace", namespace, "--kube-version", kubernetes_version]
    for api in api_versions:
        options += ["--api-versions", api]
    try:
        return helm.template(chart, chart_dir(version, chart), *options, values=values)
    except helm.HelmError as error:
        raise ChartError(f"the {chart} chart {version} does not render: {error}") from None


@cache
def _render(
    version: str, chart: str, values: str, namespace: str, kubernetes_version: str, api_versions: tuple[str, ...]
) -> str:
    output = _render_text(version, chart, values, namespace, kubernetes_version, api_versions)
    try:
        objects = [doc for doc in yaml_load.safe_load_all(output) if doc is not None]
    except yaml.YAMLError as error:
        raise ChartError(f"the {chart} chart {version} rendered no YAML: {str(error).splitlines()[0]}") from None
    return json.dumps(objects)


def _arguments(
    version: str,
    chart: str,
    values: Mapping[str, Any] | None,
    namespace: str,
    kubernetes_version: str,
    api_versions: Iterable[str],
) -> tuple[str, str, str, str, str, tuple[str, ...]]:
    kube = kubernetes_version if kubernetes_version.count(".") >= 2 else f"{kubernetes_version}.0"
    return version, chart, json.dumps(values or {}, sort_keys=True), namespace, kube, tuple(sorted(api_versions))


def render_text(
    version: str,
    chart: str = CONTROLLER_CHART,
    values: Mapping[str, Any] | None = None,
    *,
    namespace: str = "kube-system",
    kubernetes_version: str = "1.36",
    api_versions: Iterable[str] = (),
) -> str:
    """What ``helm template`` prints for :func:`render`'s arguments: the documents, each after ``---`` and a
    ``# Source: <chart>/templates/<file>`` line."""
    return _render_text(*_arguments(version, chart, values, namespace, kubernetes_version, api_versions))


def render(
    version: str,
    chart: str = CONTROLLER_CHART,
    values: Mapping[str, Any] | None = None,
    *,
    namespace: str = "kube-system",
    kubernetes_version: str = "1.36",
    api_versions: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """``helm template <chart> tooling/upstream/karpenter-<version>/charts/<chart>`` with ``values``, as the
    release of that name in ``namespace`` on a cluster of ``kubernetes_version`` that serves ``api_versions``
    beyond the built-in ones (e.g. ``monitoring.coreos.com/v1``): every object the chart applies, parsed, in
    Helm's order. Without ``--include-crds``, as aws-cdk installs the controller chart (``skip_crds``)."""
    rendered = _render(*_arguments(version, chart, values, namespace, kubernetes_version, api_versions))
    objects: list[dict[str, Any]] = json.loads(rendered)
    return objects


def by_kind(objects: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Objects keyed ``<Kind>/<name>``; a key twice is an error."""
    keyed: dict[str, dict[str, Any]] = {}
    for obj in objects:
        key = f"{obj['kind']}/{obj['metadata']['name']}"
        if key in keyed:
            raise ChartError(f"the chart renders {key} twice")
        keyed[key] = copy.deepcopy(dict(obj))
    return keyed


def render_release(
    template: Mapping[str, Any], version: str, kubernetes_version: str, api_versions: Iterable[str] = ()
) -> dict[str, dict[str, Any]]:
    """The controller chart of Karpenter ``version`` rendered as the synthesized ``template`` installs it (its
    values and namespace), keyed ``<Kind>/<name>``."""
    return by_kind(
        render(
            version,
            CONTROLLER_CHART,
            release_values(template),
            namespace=release_namespace(template),
            kubernetes_version=kubernetes_version,
            api_versions=api_versions,
        )
    )


def render_crds(version: str) -> dict[str, dict[str, Any]]:
    """The CRDs the ``karpenter-crd`` chart of ``version`` installs (the app sets no values on it), keyed by
    their names (``nodepools.karpenter.sh``)."""
    crds = render(version, CRD_CHART)
    kinds = sorted({obj["kind"] for obj in crds})
    if kinds != ["CustomResourceDefinition"]:
        raise ChartError(f"the {CRD_CHART} chart {version} renders {', '.join(kinds)}, not only CRDs")
    return {name.removeprefix("CustomResourceDefinition/"): obj for name, obj in by_kind(crds).items()}
