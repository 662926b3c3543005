"""The tree of the configuration's models, walked from a root (``AppConfig``, ``PipelineConfig``) by the
fields' annotations: which model a nested key holds (error hints: the known keys where a typo is), and every
nested object and list of entries with its path (the sections of the generated reference)."""

from __future__ import annotations

from dataclasses import dataclass
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.alias_generators import to_camel


@dataclass(frozen=True)
class Nested:
    """A model of the tree, where it is: ``path`` like ``nodeClasses[].kubelet`` (None for the root)."""

    path: str | None
    model: type[BaseModel]
    entries: bool = False  # a list of entries of the model (``nodePools[]``), not one object


def _held(annotation: Any) -> tuple[type[BaseModel], bool] | None:
    """The model a field's annotation holds -- itself, optional, or as the items of a list -- and whether as
    list items; None for a field of plain values."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _held(get_args(annotation)[0])
    if origin in (Union, UnionType):
        return next((held for arg in get_args(annotation) if (held := _held(arg)) is not None), None)
    if origin is list:
        item = _held(get_args(annotation)[0])
        return (item[0], True) if item is not None else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    return None


def key_of(name: str, model: type[BaseModel]) -> str:
    """A field's key as the configuration spells it (its camelCase alias)."""
    return model.model_fields[name].alias or to_camel(name)


def child(model: type[BaseModel], key: str) -> type[BaseModel] | None:
    """The model that ``model``'s key ``key`` holds (an object or a list's entries), or None."""
    for name, field in model.model_fields.items():
        if key_of(name, model) == key:
            held = _held(field.annotation)
            return held[0] if held is not None else None
    return None


def walk(root: type[BaseModel], path: str | None = None) -> list[Nested]:
    """``root`` and every model below it, depth first in the order of the fields."""
    found = [Nested(path, root)]
    for name, field in root.model_fields.items():
        held = _held(field.annotation)
        if held is None:
            continue
        model, entries = held
        key = key_of(name, root)
        below = f"{path}.{key}" if path else key
        found.append(Nested(below + ("[]" if entries else ""), model, entries))
        found += walk(model, below + ("[]" if entries else ""))[1:]
    return found
