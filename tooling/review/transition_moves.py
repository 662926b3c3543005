"""The transition matrix's moves, generated from the configuration model: every top-level setting moved from its
default to another valid value and back (modes: every ordered pair), and every field of the settings declared
``BY_FIELD`` (node pools, node classes, node overlays, the controller, an existing cluster) in its one object or entry.
What each move does is judged by ``transitions.py`` (synthesized, reviewed, replayed); ``tooling/releases/crd_paths.py``
reads the moves' objects (which CRD paths the app writes). Nothing here synthesizes or reviews."""

from __future__ import annotations

import itertools
import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic.fields import FieldInfo

from constructs_lib.karpenter.specs.change import Change, FieldChange, declaration
from karpenter_stack.config import AppConfig, tree


@dataclass(frozen=True)
class Transition:
    setting: str  # a setting (``maxAzs``), or a field of an object or list entry (``nodePools.taints``)
    base: Mapping[str, Any]  # the other settings of both configurations (what the values need besides)
    old: Any  # a value, or DEFAULT: the setting left out (a field: as its holder has it)
    new: Any
    declared: FieldChange | None = None  # what the setting declares changing it does
    holder: Any = None  # a field's object, or ``[entry]``, in which it is set (None: ``[{"name": "default"}]``)

    @property
    def label(self) -> str:
        return f"{self.setting}: {_show(self.old)} → {_show(self.new)}"

    def overrides(self, which: str) -> dict[str, Any]:
        value = self.old if which == "old" else self.new
        needs = {} if value is DEFAULT or self.declared is None else self.declared.companions(value)
        if "." in self.setting:  # a field of an object or a list entry: that object, with the field set
            outer, name = self.setting.split(".", 1)
            holder = self.holder if self.holder is not None else [{"name": "default"}]
            entry = holder[0] if isinstance(holder, list) else holder
            # what the value needs in its own entry (a need of the field's own setting, one unnamed entry)
            same = needs.get(outer)
            own = same[0] if isinstance(same, list) and len(same) == 1 and "name" not in same[0] else {}
            needs = {k: v for k, v in needs.items() if not (own and k == outer)}
            entry = {**entry, **own, **({} if value is DEFAULT else {name: value})}
            return {**self.base, **needs, outer: [entry] if isinstance(holder, list) else entry}
        return {**self.base, **needs, **({} if value is DEFAULT else {self.setting: value})}


class _Default:
    def __repr__(self) -> str:
        return "default"


DEFAULT: Any = _Default()


def _show(value: Any) -> str:
    return "default" if value is DEFAULT else json.dumps(value)


def _literal_values(annotation: Any) -> list[Any] | None:
    """The values a Literal (or an Optional of one, or a bool) allows, None included when optional."""
    args = typing.get_args(annotation)
    if annotation is bool:
        return [False, True]
    if typing.get_origin(annotation) is typing.Literal:
        return list(args)
    if type(None) in args:
        inner = [a for a in args if a is not type(None)]
        values = _literal_values(inner[0]) if len(inner) == 1 else None
        return None if values is None else [*values, None]
    return None


def _list_of_literals(annotation: Any) -> list[Any] | None:
    """The values of a ``list[Literal[...]]`` field, each as a one-item list (the field's modes)."""
    if typing.get_origin(annotation) is list:
        values = _literal_values(typing.get_args(annotation)[0])
        return None if values is None else [[v] for v in values]
    return None


def _declared(key: str, info: FieldInfo) -> FieldChange:
    declared = declaration(info)
    if declared is None:
        raise KeyError(f"{key}: no declaration of what changing it does (json_schema_extra=change(...))")
    return declared


def _not_moved(key: str, declared: FieldChange) -> str | None:
    """Why the matrix does not move a setting as one (None: it does)."""
    if declared.not_moved:
        return declared.not_moved
    if declared.change is Change.BY_FIELD:
        return f"moved field by field (the {key}.<field> rows)"
    return None


def _modes(declared: FieldChange, annotation: Any, lists: bool = True) -> list[Any] | None:
    """A field's modes: declared, or named by its type (Literal, bool and, with ``lists``, a list of Literals)."""
    if declared.modes is not None:
        return list(declared.modes)
    return _literal_values(annotation) or (_list_of_literals(annotation) if lists else None)


def transitions(fields: Mapping[str, FieldInfo] | None = None) -> tuple[list[Transition], dict[str, str]]:
    """Every transition the model's top-level settings allow, and the settings that are not one (with why)."""
    found: list[Transition] = []
    not_one: dict[str, str] = {}
    for name, info in (fields or AppConfig.model_fields).items():
        key = info.alias or name
        declared = _declared(key, info)
        why = _not_moved(key, declared)
        if why:
            not_one[key] = why
            continue
        modes = _modes(declared, info.annotation, lists=False)  # (lists of a setting's own: by their example)
        found += _field_transitions(key, info, modes, declared, declared.needs)
        found += _with_needs(key, info, modes, declared)
    return found, not_one


def _with_needs(key: str, info: FieldInfo, modes: list[Any] | None, declared: FieldChange) -> list[Transition]:
    """A value that needs other settings (``needs``), moved from every default in ONE deploy, and back: the deploy a
    user makes who writes the value and what it needs together (found by the deploy simulator: a hosting and a
    credentials switch in one deploy leave the controller without credentials)."""
    default = info.get_default(call_default_factory=True)
    values = [m for m in modes or [] if m != default and declared.companions(m)]
    return [
        t
        for v in values
        for t in (Transition(key, {}, DEFAULT, v, declared), Transition(key, {}, v, DEFAULT, declared))
    ]


def _holder(info: FieldInfo) -> Any:
    """What a field of a ``BY_FIELD`` setting is set in: the setting's default entry (by its name) or object, or,
    when it has none, the first the setting's examples give."""
    default = info.get_default(call_default_factory=True)
    if isinstance(default, list):
        return [{"name": default[0].name}] if default else [info.examples[0][0]] if info.examples else None
    return {} if default is not None else (info.examples or [None])[0]


def field_transitions() -> list[Transition]:
    """The fields of the settings declared ``BY_FIELD`` (node pools, node classes, node overlays, the controller,
    an existing cluster) moved from their holder's value and back (modes: every pair), each in the one object or
    entry of its setting."""
    found: list[Transition] = []
    for name, info in AppConfig.model_fields.items():
        key = info.alias or name
        outer = _declared(key, info)
        model = tree.child(AppConfig, key)
        if outer.change is not Change.BY_FIELD or model is None:
            continue
        holder = _holder(info)
        for field_name, field_info in model.model_fields.items():
            field_key = f"{key}.{field_info.alias or field_name}"
            declared = _declared(field_key, field_info)
            modes = _modes(declared, field_info.annotation)
            base = {**outer.needs, **declared.needs}
            found += _field_transitions(field_key, field_info, modes, declared, base, holder)
    return found


def _field_transitions(
    key: str,
    info: FieldInfo,
    modes: list[Any] | None,
    declared: FieldChange,
    base: Mapping[str, Any],
    holder: Any = None,
) -> list[Transition]:
    """A field's transitions: every ordered pair of its modes; else its default to another value (the next
    bounded integer, or the example the field declares, ``Field(examples=[...])``) and back."""
    if modes is not None:
        return [Transition(key, base, a, b, declared, holder) for a, b in itertools.permutations(modes, 2)]
    if info.annotation is int:
        bound = next((m.le for m in info.metadata if getattr(m, "le", None) is not None), None)
        value = info.default + 1 if bound is None or info.default + 1 <= bound else info.default - 1
    elif info.examples:
        value = info.examples[0]
    else:
        raise KeyError(f"{key}: no example value (Field examples=[...]) and no reason it is not a transition")
    return [
        Transition(key, base, DEFAULT, value, declared, holder),
        Transition(key, base, value, DEFAULT, declared, holder),
    ]
