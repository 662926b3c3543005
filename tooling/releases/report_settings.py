"""What the app writes in Karpenter's terms, for the release report: each setting that declares the Karpenter field
it writes (:func:`settings`, karpenter_stack/config/reference.py), the CRD paths and values the app's node objects
hold (:func:`written_paths`, :func:`written_values`: the product's configurations and the transition matrix's moves,
crd_paths.py), the chart keys it writes (:func:`chart_keys_written`, constructs_lib/karpenter/release.py), and which
settings a change at a path touches (:func:`_settings_at`), named as the report names them."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from tooling.releases import chart_render

# Which kind of Karpenter object the settings below each top-level key write (a declared Karpenter name is a path
# from the object's root); chart values are ``chart``. existingCluster's subnets and security group are selector
# terms of the EC2NodeClasses.
SETTING_KINDS = {
    "nodePools": "NodePool",
    "nodeClasses": "EC2NodeClass",
    "nodeOverlays": "NodeOverlay",
    "existingCluster": "EC2NodeClass",
}
CHART = "chart"
FEATURE_GATES = "settings.featureGates"
_SELECTOR = re.compile(r"\[[^\]]*\]", re.ASCII)


@dataclass(frozen=True)
class Setting:
    """One of the app's settings and what it writes in Karpenter's terms."""

    key: str  # as in cdk.json: nodePools[].consolidationPolicy
    target: str  # NodePool, EC2NodeClass, NodeOverlay or chart
    path: str  # the Karpenter path it writes, selectors as []: spec.template.spec.requirements[]
    allowed: tuple[Any, ...] | None  # the values its type allows when it names them (a Literal), else None


def normalized(upstream: str) -> str:
    """A declared Karpenter name as a schema path: its note dropped, every ``[...]`` selector as ``[]``."""
    from constructs_lib.karpenter.specs.change import upstream_path

    return _SELECTOR.sub("[]", upstream_path(upstream))


def _literal_values(annotation: Any) -> tuple[Any, ...] | None:
    """The values a field's type names (a Literal; optional, in a list or as a map's keys), else None."""
    origin = get_origin(annotation)
    if origin is Literal:
        return get_args(annotation)
    if origin is Annotated:
        return _literal_values(get_args(annotation)[0])
    if origin in (Union, UnionType):
        found = [v for arg in get_args(annotation) if arg is not type(None) for v in (_literal_values(arg) or ())]
        return tuple(found) or None
    if origin in (list, dict):
        return _literal_values(get_args(annotation)[0])
    return None


@functools.cache
def settings() -> tuple[Setting, ...]:
    """Every setting that declares the Karpenter field it writes (karpenter_stack/config/reference.py)."""
    from constructs_lib.karpenter.specs.change import CHART_VALUE, declaration
    from karpenter_stack.config import tree
    from karpenter_stack.config.reference import ROOTS, upstream_names

    places: dict[type, list[str | None]] = {}
    for root_model, root_path in ROOTS:
        for nested in tree.walk(root_model, root_path):
            places.setdefault(nested.model, []).append(nested.path)
    found: list[Setting] = []
    for (model, name), upstream in upstream_names().items():
        declared = declaration(model.model_fields[name])
        key = tree.key_of(name, model)
        allowed = _literal_values(model.model_fields[name].annotation)
        for place in places.get(model, []):
            setting = f"{place}.{key}" if place else key
            if declared is not None and declared.manifest.startswith(CHART_VALUE) or place is None:
                target = CHART
            else:
                target = SETTING_KINDS.get(setting.split(".", 1)[0].removesuffix("[]"), "")
            found.append(Setting(setting, target, normalized(upstream), allowed))
    return tuple(found)


def _app_version() -> str:
    from karpenter_stack.config.model import AppConfig

    return str(AppConfig.model_fields["karpenter_version"].default)


@functools.cache
def _objects() -> tuple[dict[str, Any], ...]:
    from tooling.releases import crd_paths

    return tuple(crd_paths.objects_of(crd_paths.configurations()))


@functools.cache
def written_paths() -> dict[str, frozenset[str]]:
    """The CRD paths the app writes, by kind: the node objects of the product's configurations and of the transition
    matrix's moves (tooling/releases/crd_paths.py), read against the app's own release's mirrored schema."""
    from tooling.releases import crd_paths

    return {kind: frozenset(paths) for kind, paths in crd_paths.written_paths(_objects(), _app_version()).items()}


@functools.cache
def written_values() -> dict[tuple[str, str], frozenset[str]]:
    """The values (as JSON) the app's node objects hold, by (kind, path): a list's scalar items at ``path[]``."""
    found: dict[tuple[str, str], set[str]] = {}

    def walk(kind: str, value: Any, path: str) -> None:
        if isinstance(value, Mapping):
            for key, child in value.items():
                walk(kind, child, f"{path}.{key}" if path else str(key))
        elif isinstance(value, list):
            for item in value:
                walk(kind, item, path + "[]")
        else:
            found.setdefault((kind, path), set()).add(json.dumps(value))

    for obj in _objects():
        walk(str(obj.get("kind")), obj, "")
    return {key: frozenset(values) for key, values in found.items()}


def _flatten_values(values: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Any]]:
    """A chart's values as (dotted key, value) leaves: scalars, lists, empty maps and the maps the chart passes
    through whole (chart_render.PASS_THROUGH)."""
    for key, value in values.items():
        here = f"{path}.{key}" if path else str(key)
        if isinstance(value, Mapping) and value and here not in chart_render.PASS_THROUGH:
            yield from _flatten_values(value, here)
        else:
            yield here, value


@functools.cache
def chart_keys_written() -> dict[str, str]:
    """The chart keys the app writes (constructs_lib/karpenter/release.py controller_values, every optional part
    on), each with how: ``always`` or the setting that writes it; plus one ``settings.featureGates.<gate>`` per
    gate the setting controller.featureGates offers (constructs_lib/karpenter/specs/controller.py)."""
    from constructs_lib.karpenter.release import controller_values
    from constructs_lib.karpenter.specs.controller import FEATURE_GATE_DEFAULTS, ControllerSpec

    everything = controller_values(
        cluster_name="c",
        interruption_queue="q",
        service_account="karpenter",
        role_arn="arn:aws:iam::111111111111:role/r",
        dns_policy="Default",
        tolerations=[{"key": "k", "operator": "Exists"}],
        service_monitor=True,
        controller=ControllerSpec(
            batch_max_duration="10s", batch_idle_duration="1s", zonal_shift=False, log_level="info"
        ),
        pod_annotations={"a": "b"},
    )
    defaults = controller_values(
        cluster_name="c", interruption_queue="q", service_account="karpenter", role_arn=None, dns_policy="Default"
    )
    always = {key for key, _ in _flatten_values(defaults)}
    found: dict[str, str] = {}
    for key, _ in _flatten_values(everything):
        if key == FEATURE_GATES:
            continue
        found[key] = "always" if key in always else "by a setting"
    for gate in FEATURE_GATE_DEFAULTS:
        found[f"{FEATURE_GATES}.{gate}"] = "when the setting sets it"
    return found


def _under(path: str, top: str) -> bool:
    """Whether ``path`` is ``top`` or a field below it."""
    return path == top or path.startswith((top + ".", top + "[]")) or top == ""


def _settings_at(target: str, path: str, *, below: bool = False, rule: str | None = None) -> list[Setting]:
    """The settings a change at ``path`` of ``target`` touches: those that write it or a field above it; with
    ``below`` (a removal, a type change) those that write a field below it too (not below the whole object or
    spec); with ``rule`` (a CEL rule at it) those below it whose field the rule names (``self.weight``)."""
    found = []
    for setting in settings():
        if setting.target != target:
            continue
        if _under(path, setting.path):
            found.append(setting)
        elif _under(setting.path, path):
            leaf = setting.path.rsplit(".", 1)[-1].removesuffix("[]")
            if rule is not None and re.search(rf"\bself\.{re.escape(leaf)}\b", rule, re.ASCII):
                found.append(setting)  # a rule above the field that names it (self.weight)
            elif below and path not in ("", "spec", "metadata"):
                found.append(setting)
    return found


def _writes(kind: str, path: str, *, below: bool = False) -> bool:
    written = written_paths().get(kind, frozenset())
    return path in written or below and any(_under(p, path) for p in written)


def _names(settings_: Iterable[Setting]) -> list[str]:
    return sorted({f"setting `{s.key}`" for s in settings_})
