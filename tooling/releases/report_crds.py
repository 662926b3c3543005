"""The release report's CRDs: each CRD and API version added or removed, and per field of each served version's
schema the facets that changed (type, enum, pattern, bounds, default, required-ness) and the CEL rules added, removed
or changed -- each with the settings it touches (report_settings.py), and a decision where the app writes or produces
what the new release refuses (:func:`_crd_changes`, which release_report.py calls)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tooling.releases.report_base import Change, Release, _show
from tooling.releases.report_settings import (
    SETTING_KINDS,
    Setting,
    _names,
    _objects,
    _settings_at,
    _under,
    _writes,
    settings,
    written_values,
)

# The facets of a field's schema the report compares (descriptions are not: they change with every release).
TYPE_FACETS = ("type", "format", "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields")
BOUND_FACETS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
)
OTHER_FACETS = ("default", "nullable", "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type")
FACETS = (*TYPE_FACETS, "enum", "pattern", *BOUND_FACETS, *OTHER_FACETS)


@dataclass(frozen=True)
class _Field:
    facets: dict[str, Any]
    required: bool
    rules: tuple[dict[str, Any], ...]


def _fields(schema: Mapping[str, Any]) -> dict[str, _Field]:
    """Every field of a CRD version's schema by path (``""``: the object; ``[]``: a list's items; ``.*``: a map's
    values), without ``status`` (the controller's, not the user's)."""
    found: dict[str, _Field] = {}

    def walk(node: Mapping[str, Any], path: str, required: bool) -> None:
        facets = {k: node[k] for k in FACETS if k in node}
        found[path] = _Field(facets, required, tuple(node.get("x-kubernetes-validations") or ()))
        needed = set(node.get("required") or ())
        for key, child in (node.get("properties") or {}).items():
            if path == "" and key == "status":
                continue
            walk(child, f"{path}.{key}" if path else str(key), key in needed)
        if isinstance(node.get("items"), Mapping):
            walk(node["items"], path + "[]", False)
        if isinstance(node.get("additionalProperties"), Mapping):
            walk(node["additionalProperties"], path + ".*", False)

    walk(schema, "", False)
    return found


def _versions(crd: Mapping[str, Any]) -> dict[str, dict[str, _Field]]:
    return {
        str(v["name"]): _fields(v.get("schema", {}).get("openAPIV3Schema", {}))
        for v in crd.get("spec", {}).get("versions", [])
    }


def _kind(crd: Mapping[str, Any]) -> str:
    return str(crd.get("spec", {}).get("names", {}).get("kind", crd["metadata"]["name"]))


def _crd_changes(old: Release, new: Release) -> Iterator[Change]:
    for name in sorted(set(new.crds) - set(old.crds)):
        crd = new.crds[name]
        versions = _versions(crd)
        fields = sum(len(f) - 1 for f in versions.values())
        rules = sum(len(x.rules) for f in versions.values() for x in f.values())
        group = crd["spec"].get("group", "")
        yield Change(
            "CRD",
            "",
            name,
            f"CRD added: {_kind(crd)} ({', '.join(f'{group}/{v}' for v in versions)}; {fields} fields, {rules} CEL "
            "rules); the app writes no object of it",
        )
    for name in sorted(set(old.crds) - set(new.crds)):
        kind = _kind(old.crds[name])
        writes = any(str(o.get("kind")) == kind for o in _objects())
        yield Change(
            "CRD",
            "",
            name,
            f"CRD removed: {kind}"
            + ("; the app writes objects of it" if writes else "; the app writes no object of it"),
            decision=f"{kind} ({name}): the CRD is removed in {new.version}, and the app writes {kind} objects"
            if writes
            else None,
        )
    for name in sorted(set(old.crds) & set(new.crds)):
        kind = _kind(new.crds[name])
        group = new.crds[name]["spec"].get("group", "")
        before, after = _versions(old.crds[name]), _versions(new.crds[name])
        for version in sorted(set(after) - set(before)):
            yield Change("CRD", kind, "", f"API version {group}/{version} added")
        for version in sorted(set(before) - set(after)):
            yield Change(
                "CRD",
                kind,
                "",
                f"API version {group}/{version} removed",
                decision=f"{kind}: API version {group}/{version} is removed in {new.version} (stored objects of it "
                "must be migrated first)",
            )
        for version in sorted(set(before) & set(after)):
            yield from _field_changes(kind, before[version], after[version], new.version)


def _field_changes(kind: str, before: dict[str, _Field], after: dict[str, _Field], version: str) -> Iterator[Change]:
    def parent(path: str) -> str:
        if path.endswith("[]"):
            return path[:-2]
        return path.rsplit(".", 1)[0] if "." in path else ""

    def shown(path: str) -> str:
        return path or "(the object)"

    for path in sorted(set(after) - set(before)):
        if parent(path) not in before:
            continue  # inside an added field: counted there
        below = [p for p in after if p != path and _under(p, path)]
        field_ = after[path]
        touched = _settings_at(kind, path)
        text = "field added" + (" (required)" if field_.required else "")
        text += f" ({len(below)} fields below)" if below else ""
        text += f" ({len(field_.rules)} CEL rules)" if field_.rules else ""
        decision = None
        if field_.required:
            decision = f"{kind} {shown(path)}: a new required field in {version}; the app's objects do not write it"
        yield Change("CRD", kind, shown(path), text, tuple(_names(touched)), decision)
    for path in sorted(set(before) - set(after)):
        if parent(path) not in after:
            continue
        touched = _settings_at(kind, path, below=True)
        writes = _writes(kind, path, below=True)
        how = _names(touched) + (["the app writes it"] if writes else [])
        decision = None
        if writes or touched:
            decision = f"{kind} {shown(path)}: removed in {version}, and the app writes it" + (
                f" ({', '.join(_names(touched))})" if touched else ""
            )
        yield Change("CRD", kind, shown(path), "field removed", tuple(how), decision)
    for path in sorted(set(before) & set(after)):
        yield from _facet_changes(kind, path, before[path], after[path], version)
        yield from _rule_changes(kind, path, before[path].rules, after[path].rules)


def _producible(kind: str, path: str) -> tuple[dict[str, str], list[Setting]]:
    """The values (as JSON) the app produces at ``path``, each with where it comes from (its objects, the type of a
    setting writing it); and the settings writing it that take free values (any value the schema admits)."""
    values = {value: ["the app's objects hold it"] for value in sorted(written_values().get((kind, path), ()))}
    free = []
    for setting in settings():
        if setting.target == kind and setting.path == path:
            if setting.allowed is None:
                free.append(setting)
            else:
                for value in setting.allowed:
                    values.setdefault(json.dumps(value), []).append(f"setting `{setting.key}` allows it")
    return {value: "; ".join(why) for value, why in values.items()}, free


def _matches(pattern: str, value: Any) -> bool:
    try:
        return isinstance(value, str) and re.search(pattern, value, re.ASCII) is not None
    except re.error:
        return True  # a pattern Python cannot read: not held against the app's values here


def _facet_changes(kind: str, path: str, old: _Field, new: _Field, version: str) -> Iterator[Change]:
    touched = _settings_at(kind, path)
    names = tuple(_names(touched) + (["the app writes it"] if _writes(kind, path) else []))
    where = path or "(the object)"
    for facet in FACETS:
        a, b = old.facets.get(facet), new.facets.get(facet)
        if a == b:
            continue
        decision = None
        if facet == "enum":
            gained = [v for v in (b or []) if v not in (a or [])]
            lost = [v for v in (a or []) if v not in (b or [])] if b is not None else []
            parts = [f"+ `{v}`" for v in gained] + [f"− `{v}`" for v in lost]
            text = "enum " + (", ".join(parts) if parts else f"{_show(a)} → {_show(b)}")
            for setting in (s for s in touched if s.path == path and gained):
                allowed = setting.allowed or ()
                if not allowed:
                    continue
                offered = [f"`{v}`" for v in gained if v in allowed]
                missing = [f"`{v}`" for v in gained if v not in allowed]
                text += (
                    f" (setting `{setting.key}` lists {', '.join(offered)}; the synth takes it where the chosen release's CRD does)"
                    if offered
                    else ""
                )
                text += f" (setting `{setting.key}` does not list {', '.join(missing)})" if missing else ""
            values, free = _producible(kind, path)
            refused = [f"{v} ({why})" for v, why in values.items() if json.loads(v) in lost]
            if refused or lost and free:
                said = ", ".join(refused) if refused else f"any value ({', '.join(_names(free))} takes free values)"
                decision = f"{kind} {where}: enum narrowed in {version} (drops {', '.join(map(str, lost))}); the app produces {said}"
        elif facet == "pattern":
            text = f"pattern `{a}` → `{b}`" if a and b else (f"pattern `{b}` added" if b else f"pattern `{a}` removed")
            if b is not None:
                values, free = _producible(kind, path)
                refused = [f"{v} ({why})" for v, why in values.items() if not _matches(str(b), json.loads(v))]
                if refused or free:
                    said = ", ".join(refused) if refused else f"free values ({', '.join(_names(free))})"
                    decision = f"{kind} {where}: pattern {'narrowed' if a is None else 'changed'} in {version} to {b}; the app produces {said}"
        elif facet in TYPE_FACETS:
            text = f"{facet} {_show(a)} → {_show(b)}"
            if _writes(kind, path, below=True) and facet == "type":
                decision = f"{kind} {where}: its type changes in {version} ({a} → {b}), and the app writes it"
        else:
            text = f"{facet} {_show(a) if a is not None else '(none)'} → {_show(b) if b is not None else '(none)'}"
            if facet == "default" and touched:
                text += " (upstream's default of the settings: the reference's differing defaults, make docs)"
        yield Change("CRD", kind, where, text, names, decision)
    if old.required != new.required:
        decision = (
            f"{kind} {where}: required from {version} on; the app's objects must write it" if new.required else None
        )
        yield Change("CRD", kind, where, "now required" if new.required else "no longer required", names, decision)


def _rule_changes(
    kind: str, path: str, old: tuple[dict[str, Any], ...], new: tuple[dict[str, Any], ...]
) -> Iterator[Change]:
    where = path or "(the object)"
    if kind in SETTING_KINDS.values():
        # the synth checks the app's objects against the mirrored rules of the release it deploys
        checked = " (the synth's CEL check of the app's objects: tooling/schemas/karpenter-<version>/cel-rules.json)"
    else:
        checked = ""
    by_rule_old = {r.get("rule"): r for r in old}
    by_rule_new = {r.get("rule"): r for r in new}
    gone = [r for r in old if r.get("rule") not in by_rule_new]
    came = [r for r in new if r.get("rule") not in by_rule_old]
    # a rule rewritten with the same message is one rule changed
    for before in list(gone):
        after = next((r for r in came if r.get("message") and r.get("message") == before.get("message")), None)
        if after is not None:
            gone.remove(before)
            came.remove(after)
            touched = _names(_settings_at(kind, path, rule=f"{before.get('rule')} {after.get('rule')}"))
            yield Change(
                "CRD",
                kind,
                where,
                f"CEL rule changed: `{before.get('rule')}` → `{after.get('rule')}`{checked}",
                tuple(touched),
            )
    for rule in sorted(set(by_rule_old) & set(by_rule_new), key=str):
        a, b = by_rule_old[rule], by_rule_new[rule]
        for key in ("message", "messageExpression", "reason", "fieldPath"):
            if a.get(key) != b.get(key):
                touched = _names(_settings_at(kind, path, rule=str(rule)))
                yield Change(
                    "CRD",
                    kind,
                    where,
                    f"CEL rule `{rule}`: {key} {_show(a.get(key))} → {_show(b.get(key))}",
                    tuple(touched),
                )
    for rule in came:
        touched = _names(_settings_at(kind, path, rule=str(rule.get("rule"))))
        yield Change(
            "CRD",
            kind,
            where,
            f"CEL rule added: `{rule.get('rule')}` ({rule.get('message', '')}){checked}",
            tuple(touched),
        )
    for rule in gone:
        touched = _names(_settings_at(kind, path, rule=str(rule.get("rule"))))
        yield Change("CRD", kind, where, f"CEL rule removed: `{rule.get('rule')}`{checked}", tuple(touched))
