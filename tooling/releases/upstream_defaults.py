"""Upstream's defaults against the app's: what Karpenter 1.14.1 does when a field is left out, from the project's
mirrors of its CRDs (the ``default`` of each field, ``tooling/schemas/karpenter-<version>/cel-rules.json``) and
chart values (the ``default`` of each key, ``controller-values.schema.json``), and, where no mirror holds it, from
the one table below with its source. Each setting's Karpenter field is its declared or derived upstream name
(``constructs_lib.karpenter.specs.change.upstream_name``); the app's value is what its default objects and chart values
write there. The configuration reference's table of defaults that differ (``make docs``) and its tests read this."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from constructs_lib.karpenter.release import controller_values
from constructs_lib.karpenter.specs.change import CHART_VALUE, FieldChange, change_of, upstream_path, upstream_segments
from constructs_lib.karpenter.specs.kubelet import KubeletSpec
from constructs_lib.karpenter.specs.node_class import NodeClassSpec
from constructs_lib.karpenter.specs.node_overlay import NodeOverlaySpec
from constructs_lib.karpenter.specs.node_pool import NodePoolSpec
from karpenter_stack.config import AppConfig, tree
from karpenter_stack.config.existing_cluster import ExistingClusterConfig
from karpenter_stack.config.reference import ROOTS, upstream_names
from tooling.kubernetes_schemas import BY_KIND, SCHEMAS, schema

VERSION = "1.14.1"
CHART = "chart values"
# The Karpenter object each spec writes (a field whose manifest is a chart value writes the chart's values).
OBJECT_OF: dict[type[BaseModel], str] = {
    NodePoolSpec: "NodePool",
    NodeClassSpec: "EC2NodeClass",
    KubeletSpec: "EC2NodeClass",
    NodeOverlaySpec: "NodeOverlay",
    ExistingClusterConfig: "EC2NodeClass",
}
# Upstream's defaults that no mirror holds, by object and field path, each with its source.
DOCUMENTED: dict[tuple[str, str], tuple[Any, str]] = {
    ("EC2NodeClass", "spec.blockDeviceMappings"): (
        [{"deviceName": "/dev/xvda", "ebs": {"encrypted": True, "volumeSize": "20Gi", "volumeType": "gp3"}}],
        "aws/karpenter-provider-aws v1.14.1 pkg/providers/amifamily: the AL2023 family's (the default amiAlias's) "
        "DefaultBlockDeviceMappings, /dev/xvda with resolver.go's DefaultEBS (encrypted gp3, 20Gi); Bottlerocket's "
        "data volume /dev/xvdb is the same DefaultEBS",
    ),
}


class _Missing:
    def __repr__(self) -> str:
        return "unset"


MISSING: Any = _Missing()  # nothing written, or no default


def object_of(model: type[BaseModel], declared: FieldChange) -> str | None:
    """What a field of ``model`` writes to: a Karpenter object's kind, the chart's values, or None."""
    return CHART if declared.manifest.startswith(CHART_VALUE) else OBJECT_OF.get(model)


def _schema_of(obj: str) -> dict[str, Any]:
    return schema(VERSION, "controller-values" if obj == CHART else BY_KIND[obj])


@cache
def _crd_defaults(obj: str) -> dict[str, Any]:
    """The mirrored CRD's defaults of ``obj`` by path (``spec.disruption.budgets[].nodes``)."""
    rules = json.loads((SCHEMAS / f"karpenter-{VERSION}" / "cel-rules.json").read_text())
    (kind,) = [k for name, k in rules["kinds"].items() if name.split(" ")[0] == obj]
    return {d["path"]: d["default"] for d in kind["defaults"]}


def _descend(value: Any, segments: list[tuple[str, str | None]]) -> Any:
    """What ``value`` holds at ``segments`` (a list's first entry for ``[]``, the requirement of a key)."""
    for name, selector in segments:
        value = value.get(name, MISSING) if isinstance(value, Mapping) else MISSING
        if selector is not None and isinstance(value, list):
            found = [v for v in value if not selector or (isinstance(v, Mapping) and v.get("key") == selector)]
            value = found[0] if found else MISSING
        if value is MISSING:
            return MISSING
    return value


def _path(segments: list[tuple[str, str | None]]) -> str:
    return ".".join(name + ("[]" if selector is not None else "") for name, selector in segments)


def _chart_default(node: Mapping[str, Any]) -> Any:
    """A chart value's mirrored default: its own, or its keys' (settings.featureGates)."""
    if "default" in node:
        return node["default"]
    found = {k: d for k, child in node.get("properties", {}).items() if (d := _chart_default(child)) is not MISSING}
    return found or MISSING


def schema_node(obj: str, name: str) -> dict[str, Any] | None:
    """The mirrored schema of what upstream name ``name`` of ``obj`` names (an object the mirror does not expand,
    such as the chart's controller.resources, for what lies below it); None: the mirror has no such field."""
    node = _schema_of(obj)
    for field_name, selector in upstream_segments(name):
        if "properties" not in node and node.get("type") == "object":
            return node
        child = node.get("properties", {}).get(field_name)
        if child is None:
            return None
        node = child["items"] if selector is not None else child
    return node


def _at(obj: str, segments: list[tuple[str, str | None]]) -> tuple[Any, str]:
    """Upstream's own default at ``segments`` (or MISSING), and where it is from."""
    if obj == CHART:
        node: Mapping[str, Any] | None = _schema_of(obj)
        for field_name, _ in segments:
            node = (node or {}).get("properties", {}).get(field_name)
        value = _chart_default(node) if node is not None else MISSING
        return value, f"karpenter chart {VERSION} values.yaml, {_path(segments)}"
    path = _path([*segments[:-1], (segments[-1][0], None)])  # the field itself (a list, not its entries)
    if (obj, path) in DOCUMENTED:
        return DOCUMENTED[(obj, path)]
    return _crd_defaults(obj).get(path, MISSING), f"{obj} CRD {VERSION}, default of {path}"


def upstream_default(obj: str, name: str) -> tuple[Any, str]:
    """Upstream's default of what upstream name ``name`` of ``obj`` names (MISSING: none, it stays unset), and
    its source: the nearest field of the path that has a default (spec.disruption's holds consolidateAfter)."""
    segments = upstream_segments(name)
    for end in range(len(segments), 0, -1):
        value, source = _at(obj, segments[:end])
        if value is not MISSING:
            return _descend({"": value}, [("", segments[end - 1][1]), *segments[end:]]), source
    return (
        MISSING,
        f"no default in the karpenter chart {VERSION} values.yaml"
        if obj == CHART
        else f"no default in the {obj} CRD {VERSION}",
    )


def required(obj: str, name: str) -> bool:
    """Whether upstream requires what ``name`` names, so that it has no default to differ from: the list it is
    an entry of (requirements, amiSelectorTerms), else the field itself, is required by its object."""
    segments = upstream_segments(name)
    unit = next((i for i, (_, selector) in enumerate(segments) if selector is not None), len(segments) - 1)
    parent = schema_node(obj, _path(segments[:unit])) if unit else _schema_of(obj)
    return parent is not None and segments[unit][0] in parent.get("required", [])


@cache
def app_objects() -> dict[str, Any]:
    """What the app's defaults write: the default NodePool and EC2NodeClass, and the chart values of the default
    settings (the controller with IRSA, the default credentials)."""
    config = AppConfig()
    return {
        "NodePool": config.node_pools[0].manifest(),
        "EC2NodeClass": config.node_classes[0].manifest(cluster_name=config.cluster_name, node_role_name="node-role"),
        "NodeOverlay": {},  # none by default
        CHART: controller_values(
            cluster_name=config.cluster_name,
            interruption_queue=config.cluster_name,
            service_account=config.karpenter_service_account,
            role_arn="arn:aws:iam::111122223333:role/karpenter-controller",
            dns_policy="ClusterFirst",
            controller=config.controller,
        ),
    }


@dataclass(frozen=True)
class Compared:
    """A setting whose default writes a Karpenter field, against upstream's default of that field."""

    setting: str  # as the reference names it: nodePools[].limits
    default: Any  # the setting's default
    upstream: str  # Karpenter's field
    app: Any  # what the app's default writes there (MISSING: nothing)
    upstream_default: Any  # MISSING: upstream leaves it unset
    source: str
    reason: str | None  # the declared ``differs``

    @property
    def differs(self) -> bool:
        return self.app is not MISSING and self.app != self.upstream_default


def _settings() -> dict[type[BaseModel], str]:
    """Where each model is in the configuration (nodePools[], controller; "" for the settings themselves)."""
    found: dict[type[BaseModel], str] = {}
    for root, path in ROOTS:
        for nested in tree.walk(root, path):
            found.setdefault(nested.model, f"{nested.path}." if nested.path else "")
    return found


def compared() -> list[Compared]:
    """Every setting with a default whose Karpenter field has an upstream default to differ from (a field upstream
    requires, such as a requirement or amiSelectorTerms, has none), in the reference's order."""
    places, out = _settings(), []
    for (model, name), upstream in upstream_names().items():
        field, declared = model.model_fields[name], change_of(model, name)
        obj = object_of(model, declared) if declared is not None else None
        if obj is None or field.is_required() or obj != CHART and not upstream.startswith("spec."):
            continue  # no default, or metadata.name (the object's identity)
        default = field.get_default(call_default_factory=True)
        app = MISSING if default in (None, [], {}) else _descend(app_objects()[obj], upstream_segments(upstream))
        value, source = upstream_default(obj, upstream)
        if value is MISSING and required(obj, upstream):
            continue
        setting = places[model] + (field.alias or to_camel(name))
        out.append(Compared(setting, default, upstream, app, value, source, declared.differs if declared else None))
    return out


def _shown(value: Any) -> str:
    return "unset" if value is MISSING else f"`{json.dumps(value)}`"


def differing_defaults_markdown() -> str:
    """The reference's table of the defaults that differ from upstream's, each with the reason its field declares."""
    lines = [
        "| setting | default | Karpenter's field | Karpenter's default (source) | why the app differs |",
        "|---|---|---|---|---|",
    ]
    for row in compared():
        if row.differs:
            lines.append(
                f"| `{row.setting}` | {_shown(row.default)} | `{upstream_path(row.upstream)}` | "
                f"{_shown(row.upstream_default)} ({row.source}) | {row.reason} |"
            )
    return "\n".join(lines) + "\n"


def key_defaults(model: type[BaseModel], name: str) -> Mapping[str, Any] | None:
    """Upstream's default of each key of a map-typed field (settings.featureGates: the chart's), for the reference."""
    declared, upstream = change_of(model, name), upstream_names().get((model, name))
    obj = object_of(model, declared) if declared is not None else None
    if obj is None or upstream is None:
        return None
    value, _ = upstream_default(obj, upstream)
    return value if isinstance(value, Mapping) else None


def problems(rows: list[Compared]) -> list[str]:
    """A default that differs from upstream's without a declared reason, and a reason declared on a field whose
    default no longer differs."""
    found = []
    for row in rows:
        if row.differs and not row.reason:
            found.append(
                f"{row.setting}: its default writes {_shown(row.app)} to {upstream_path(row.upstream)}, Karpenter's "
                f"default is {_shown(row.upstream_default)}: declare why (differs= of its change(...))"
            )
        elif row.reason and not row.differs:
            found.append(f"{row.setting}: declares why it differs from Karpenter's default, but it no longer does")
    return found
