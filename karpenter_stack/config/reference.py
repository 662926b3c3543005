"""The configuration reference (docs/configuration-reference.md), generated from the model (``make docs``)."""

from __future__ import annotations

import json
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from constructs_lib.specs.change import CHANGE_TEXT, FieldChange, declaration

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


def reference_markdown() -> str:
    """The configuration reference as Markdown tables (docs/configuration-reference.md embeds this; a test keeps it current)."""
    # one section per model, in the order the tree first reaches it, titled with every path that holds it
    # (a TaintSpec is the entries of both nodePools[].taints[] and nodePools[].startupTaints[])
    where: dict[type[BaseModel], list[tree.Nested]] = {}
    for root, path in ROOTS:
        for nested in tree.walk(root, path):
            where.setdefault(nested.model, []).append(nested)
    sections = [(_title(places), model) for model, places in where.items()]
    out: list[str] = []
    for title, model in sections:
        defaults = {
            field.alias or to_camel(name): field.get_default(call_default_factory=True)
            for name, field in model.model_fields.items()
            if not field.is_required()
        }
        declares = any(declaration(f) is not None for f in model.model_fields.values())
        header = "| key | default | meaning |" + (" changing it on a running cluster |" if declares else "")
        out += [f"## {title}", "", header, "|---|---|---|" + ("---|" if declares else "")]
        for name, field in model.model_fields.items():
            key = field.alias or to_camel(name)
            if model is AppConfig and isinstance(defaults.get(key), list) and tree.child(model, key) is not None:
                entries = defaults[key]
                default_text = (
                    f"{'one entry' if len(entries) == 1 else f'{len(entries)} entries'} with the defaults below"
                    if entries
                    else "`[]` (entries: keys below)"
                )
            elif isinstance(defaults.get(key), BaseModel):
                default_text = "the defaults below"
            elif field.is_required():
                default_text = "required"
            else:
                default_text = f"`{json.dumps(_plain(defaults[key]))}`"
            allowed = _allowed(field.annotation)
            meaning = " ".join(filter(None, [field.description, allowed and f"{allowed}."]))
            declared = declaration(field)
            changing = f" {_changing(declared)} |" if declared else " |" if declares else ""
            out.append(f"| `{key}` | {default_text} | {meaning} |{changing}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


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
