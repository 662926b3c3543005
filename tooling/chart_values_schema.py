"""The karpenter chart's values as JSON Schema (``tooling/schemas/karpenter-<version>/controller-values.schema.json``),
generated from the chart itself by ``python -m tooling.releases.karpenter_import``: no hand-kept key list.

- The keys are the ones the chart reads: every key of its ``values.yaml`` and every ``.Values.<path>`` its templates
  name (1.14.1's deployment reads ``affinity.podAffinity``, which values.yaml does not list). An object whose keys
  are known takes no other key (``additionalProperties: false``), so a typo is refused instead of silently doing
  nothing.
- An object a template passes through whole (``toYaml .Values.affinity``, ``with .Values.podSecurityContext``) is a
  Kubernetes object the chart does not interpret: ``type: object`` with nothing below it, whatever keys its default
  shows.
- Each key's ``type`` is its default's (``null``: any; ``maxUnavailable``: integer or string), its ``default`` the values.yaml value (not for an object
  whose keys are listed: they carry their own). A value a template wraps in ``required`` (the chart refuses to
  render without it: ``settings.clusterName``) is required, with its parents, and a required string is non-empty.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

VALUES_REFERENCE = re.compile(r"\.Values((?:\.[A-Za-z0-9_]+)+)", re.ASCII)
REQUIRED = re.compile(r"\brequired\s+\"[^\"]*\"\s+\(?\s*(?:tpl\s+)?\.Values((?:\.[A-Za-z0-9_]+)+)", re.ASCII)
# Kubernetes IntOrString fields (a PodDisruptionBudget's or a rollout's maxUnavailable: 1 or "50%"): an integer
# default does not make them integers.
INT_OR_STRING = ("maxUnavailable", "maxSurge")
TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),  # before int: a bool is an int in Python
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _template_text(chart: Path) -> str:
    return "\n".join(p.read_text() for p in sorted((chart / "templates").glob("*")) if p.is_file())


def references(chart: Path) -> set[str]:
    """Every ``.Values.<path>`` the chart's templates name, as dotted paths."""
    return {m.group(1)[1:] for m in VALUES_REFERENCE.finditer(_template_text(chart))}


def required_paths(chart: Path) -> set[str]:
    """The values a template wraps in ``required`` (rendering fails without them)."""
    return {m.group(1)[1:] for m in REQUIRED.finditer(_template_text(chart))}


def _type(value: Any) -> str | None:
    return next((name for kind, name in TYPES if isinstance(value, kind)), None)


def _children(path: str, default: Any, read: set[str]) -> list[str]:
    """The keys below ``path``: its default's, then those only the templates name (sorted)."""
    prefix = f"{path}." if path else ""
    listed = list(default) if isinstance(default, Mapping) else []
    named = sorted({r[len(prefix) :].split(".")[0] for r in read if r.startswith(prefix) and r != path} - set(listed))
    return [*listed, *named]


def _node(path: str, default: Any, read: set[str], required: set[str], has_default: bool) -> dict[str, Any]:
    node: dict[str, Any] = {}
    kind = _type(default)
    keys = [] if path in read else _children(path, default, read)  # read whole: a pass-through object
    if kind == "integer" and path.rsplit(".", 1)[-1] in INT_OR_STRING:
        node["type"] = ["integer", "string"]
    elif kind is not None:
        node["type"] = kind
    elif keys:
        node["type"] = "object"
    if keys:
        values = default if isinstance(default, Mapping) else {}
        node["properties"] = {
            key: _node(f"{path}.{key}" if path else key, values.get(key), read, required, key in values) for key in keys
        }
        node["additionalProperties"] = False
        needed = [key for key in keys if (f"{path}.{key}" if path else key) in _closure(required)]
        if needed:
            node["required"] = needed
    elif path in required and kind == "string":
        node["minLength"] = 1
    if has_default and default is not None and not keys:
        node["default"] = default
    return node


def _closure(paths: Iterable[str]) -> set[str]:
    """The paths and every parent of each (``settings.clusterName``: ``settings`` too)."""
    out: set[str] = set()
    for path in paths:
        parts = path.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return out


def values_schema(chart: Path, values: Mapping[str, Any], version: str) -> dict[str, Any]:
    """The chart values schema of one release, from its chart folder and its parsed values.yaml."""
    body = _node("", dict(values), references(chart), required_paths(chart), False)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "values of the karpenter Helm chart",
        "x-upstream": {
            "project": "aws/karpenter-provider-aws charts/karpenter (oci://public.ecr.aws/karpenter/karpenter)",
            "version": version,
            "source": f"tooling/upstream/karpenter-{version}/charts/karpenter: values.yaml and templates/",
            "generated-by": "tooling/chart_values_schema.py (python -m tooling.releases.karpenter_import)",
            "note": "The keys the chart reads (values.yaml's and every .Values path its templates name); a key the "
            "chart does not read is rejected, so a typo cannot silently do nothing. Objects a template passes "
            "through whole (affinity, resources, securityContext) are not expanded. type: the default's; default: "
            "values.yaml's; required: what a template wraps in `required`.",
        },
        **body,
    }
