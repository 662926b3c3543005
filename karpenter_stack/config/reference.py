"""The configuration reference (docs/configuration-reference.md), generated from the model (``make docs``)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

from constructs_lib.karpenter import releases
from constructs_lib.karpenter.specs.change import (
    CHANGE_TEXT,
    CHART_VALUE,
    FieldChange,
    declaration,
    upstream_leaf,
    upstream_name,
)

from . import tree
from .model import AppConfig
from .pipeline import PipelineConfig

# The roots of the reference: the settings (context keys), and the pipeline (a top-level key of its own).
ROOTS: tuple[tuple[type[BaseModel], str | None], ...] = ((AppConfig, None), (PipelineConfig, "pipeline"))


def default_context() -> dict[str, Any]:
    """Every built-in default as a context value (what docs/configuration-reference.md lists)."""
    return AppConfig().model_dump(by_alias=True, mode="json")


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, mode="json", exclude_none=True)
    return value


# Upstream's default of each key of a map-typed field, where upstream has one (``tooling.upstream_defaults`` reads
# Karpenter's mirrored CRDs and chart values; the model itself does not): (model, field name) -> key -> default.
KeyDefaults = Callable[[type[BaseModel], str], Mapping[str, Any] | None]


@functools.cache  # the models do not change while a process runs; the suite asks several times
def reference_markdown(key_defaults: KeyDefaults | None = None) -> str:
    """The configuration reference as Markdown tables (docs/configuration-reference.md embeds this, with
    ``key_defaults`` from the mirrored upstream values; a test keeps it current)."""
    # one section per model, in the order the tree first reaches it, titled with every path that holds it
    # (a TaintSpec is the entries of both nodePools[].taints[] and nodePools[].startupTaints[])
    where: dict[type[BaseModel], list[tree.Nested]] = {}
    for root, path in ROOTS:
        for nested in tree.walk(root, path):
            where.setdefault(nested.model, []).append(nested)
    upstream = upstream_names()
    out: list[str] = []
    for model, places in where.items():
        declares = any(declaration(f) is not None for f in model.model_fields.values())
        header = "| key | default | meaning |" + (" changing it on a running cluster |" if declares else "")
        out += [f"## {_title(places)}", "", header, "|---|---|---|" + ("---|" if declares else "")]
        for name, field in model.model_fields.items():
            key = field.alias or to_camel(name)
            meaning = " ".join(
                filter(
                    None,
                    [
                        field.description,
                        (allowed := _allowed(field.annotation)) and f"{allowed}.",
                        _keys(field.annotation, key_defaults and key_defaults(model, name)),
                        _karpenters_name(key, upstream.get((model, name)), declaration(field)),
                        _needs_release(field.annotation, upstream.get((model, name))),
                    ],
                )
            )
            declared = declaration(field)
            changing = f" {_changing(declared)} |" if declared else " |" if declares else ""
            out.append(f"| `{key}` | {_default_text(model, name, field)} | {meaning} |{changing}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _default_text(model: type[BaseModel], name: str, field: FieldInfo) -> str:
    """A field's default as the reference shows it."""
    key = field.alias or to_camel(name)
    default = None if field.is_required() else field.get_default(call_default_factory=True)
    if model is AppConfig and isinstance(default, list) and tree.child(model, key) is not None:
        if not default:
            return "`[]` (entries: keys below)"
        return f"{'one entry' if len(default) == 1 else f'{len(default)} entries'} with the defaults below"
    if isinstance(default, BaseModel):
        return "the defaults below"
    if field.is_required():
        return "required"
    return f"`{json.dumps(_plain(default))}`"


def upstream_names() -> dict[tuple[type[BaseModel], str], str]:
    """Karpenter's own name of what each declared field of the tree writes (``change.upstream_name``), by model and
    field name; a field of a nested object (``kubelet``) knows the manifest of the field that holds it."""
    holders: dict[type[BaseModel], str] = {}
    models = [n.model for root, path in ROOTS for n in tree.walk(root, path)]
    for model in models:
        for name, field in model.model_fields.items():
            held, declared = tree.child(model, tree.key_of(name, model)), declaration(field)
            if held is not None and declared is not None:
                holders.setdefault(held, declared.manifest)
    names: dict[tuple[type[BaseModel], str], str] = {}
    for model in models:
        for name, field in model.model_fields.items():
            declared = declaration(field)
            found = declared and upstream_name(declared, tree.key_of(name, model), holders.get(model))
            if found:
                names[(model, name)] = found
    return names


def _karpenters_name(key: str, upstream: str | None, declared: FieldChange | None) -> str:
    """Karpenter's own name of the setting, where it is not the setting's own (declared, or a derived path that
    ends in another name): "Karpenter: `spec.amiSelectorTerms[].alias`." ("Karpenter chart value: ..." for a value
    of the chart)."""
    if upstream is None or declared is None or not declared.upstream and upstream_leaf(upstream) == key:
        return ""
    path, _, note = upstream.partition(" ")
    where = "Karpenter chart value" if declared.manifest.startswith(CHART_VALUE) else "Karpenter"
    return f"{where}: `{path}`{f' {note}' if note else ''}."


def _literals(annotation: Any) -> tuple[Any, ...]:
    """The values a Literal (optional, a list's items or a map's keys) names."""
    origin = get_origin(annotation)
    if origin is Literal:
        return get_args(annotation)
    if origin in (list, dict):
        return _literals(get_args(annotation)[0])
    if origin in (Annotated, Union, UnionType):
        args = get_args(annotation)
        return next((found for arg in (args[:1] if origin is Annotated else args) if (found := _literals(arg))), ())
    return ()


def _needs_release(annotation: Any, upstream: str | None) -> str:
    """The values of a field that only some imported Karpenter releases take (constructs_lib/releases: a CRD enum, or
    a feature gate of the chart): "Karpenter releases: `Balanced` needs 1.14.1 (imported: 1.13.1, 1.14.1)."."""
    if upstream is None:
        return ""
    path = re.sub(r"\[key=[^\]]*\]", "[]", upstream.split(" ", 1)[0])
    imported = releases.imported()

    def takes(version: str, value: Any) -> bool | None:
        if path == "settings.featureGates":
            return value in releases.feature_gates(version)
        for kind in ("NodePool", "EC2NodeClass", "NodeOverlay"):
            enum = releases.object_fields(version, kind).get(path)
            if isinstance(enum, list):
                return value in enum
        return None

    needs = []
    for value in _literals(annotation):
        taking = [v for v in imported if takes(v, value)]
        if taking and len(taking) < len(imported) and all(takes(v, value) is not None for v in imported):
            needs.append(f"`{value}` needs {', '.join(taking)}")
    return f"Karpenter releases: {'; '.join(needs)} (imported: {', '.join(imported)})." if needs else ""


def _keys(annotation: Any, defaults: Mapping[str, Any] | None) -> str:
    """The keys a map-typed field allows when its key type names them (a Literal), as Markdown, each with
    upstream's default where ``defaults`` has it: "Keys: `cpu`, `memory`, `ephemeral-storage` or `pid`."."""
    origin = get_origin(annotation)
    if origin in (Annotated, Union, UnionType):
        args = get_args(annotation)
        return next(
            (found for arg in (args[:1] if origin is Annotated else args) if (found := _keys(arg, defaults))), ""
        )
    if origin is not dict or get_origin(get_args(annotation)[0]) is not Literal:
        return ""
    shown = [
        f"`{k}`" + (f" (upstream's default: `{json.dumps(defaults[k])}`)" if defaults and k in defaults else "")
        for k in get_args(get_args(annotation)[0])
    ]
    return "Keys: " + (", ".join(shown[:-1]) + f" or {shown[-1]}" if len(shown) > 1 else shown[0]) + "."


def _changing(declared: FieldChange) -> str:
    """What changing a setting does, and what it writes (a manifest field, a chart value, a resource)."""
    return f"{CHANGE_TEXT[declared.change]} ({declared.manifest})"


def _title(places: list[tree.Nested]) -> str:
    """``Settings (context keys)`` for the settings, else the paths (``nodePools[].taints[]`` entries,
    ``controller`` keys) and the model's note."""
    first = places[0]
    if first.path is None:
        return "Settings (context keys)"
    note = getattr(first.model, "REFERENCE_NOTE", "")
    paths = " and ".join(f"`{p.path}`" for p in places)
    return f"{paths} {'entries' if first.entries else 'keys'}" + (f" ({note})" if note else "")


def _allowed(annotation: Any) -> str:
    """The values a field's type allows when it names them (a Literal, optional or as list items), as Markdown:
    "One of `NoSchedule`, `PreferNoSchedule` or `NoExecute`" ("Each one of ..." for a list); "" otherwise."""
    origin = get_origin(annotation)
    if origin is Literal:
        shown = [f"`{v if isinstance(v, str) else json.dumps(v)}`" for v in get_args(annotation)]
        return f"Only {shown[0]}" if len(shown) == 1 else "One of " + ", ".join(shown[:-1]) + f" or {shown[-1]}"
    if origin is list:
        found = _allowed(get_args(annotation)[0])
        return "Each one of" + found.removeprefix("One of") if found.startswith("One of") else found
    if origin in (Annotated, Union, UnionType):
        args = get_args(annotation)
        return next((found for arg in (args[:1] if origin is Annotated else args) if (found := _allowed(arg))), "")
    return ""
