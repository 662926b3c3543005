"""What moving from one Karpenter release to another changes, for the maintainer and the user
(``make release-report SINCE=1.13.1 VERSION=1.14.1``), read from what the project keeps of each release:

- the CRDs the ``karpenter-crd`` chart installs (tooling/upstream/karpenter-<version>/charts/, rendered offline with
  the pinned Helm: chart_render.py): kinds added or removed; per kind, spec fields added, removed or changed
  (type, enum, pattern, bounds, default, required-ness) and CEL rules (``x-kubernetes-validations``) added, removed
  or changed, by field path;
- the ``karpenter`` chart's values.yaml, flattened: keys added, removed, defaults changed (the image's tag and
  digest are the release itself); its feature gates (``settings.featureGates``) on their own;
- the IAM grants of the CloudFormation templates (templates/upstream/karpenter-<version>.yaml, upstream's, and
  templates/karpenter-<version>.yaml, the project's), per principal (constructs_lib/template_parity.py);

each change with the app's settings it touches (their cdk.json keys: the fields' declared Karpenter names,
karpenter_stack/config/reference.py), and whether the app writes it (the node objects of the product's
configurations, tooling/releases/crd_paths.py; the chart values of constructs_lib/karpenter_release.py).

A change that needs a human decision is a decision, one line naming the kind and field (or the chart key, or the
grant): a new required field; a removed field or value key the app writes; an enum or pattern narrowed where the
app's defaults or settings produce a value it refuses; a field the app writes that changes its type; an upstream
IAM grant the project's template of the new release does not make. The command prints the report as Markdown and
exits 1 when there is a decision. :func:`compare` returns the same as data (the import and a review call it).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml

from constructs_lib import yaml_load
from constructs_lib.iam_grants import Grant
from constructs_lib.names import CONTROLLER_CHART, CRD_CHART
from tooling.releases import chart_render, helm

ROOT = chart_render.ROOT
IMPORT_COMMAND = "make karpenter-import VERSION={version}"

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
# Chart keys that are the release itself: they change with every release (shown as such, not as a changed default).
_RELEASE_KEY = re.compile(r"(^|\.)image\.(tag|digest)$", re.ASCII)
_SELECTOR = re.compile(r"\[[^\]]*\]", re.ASCII)


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
    from constructs_lib.template_parity import load_template

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


# --- what the app writes and which settings write it ---------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One of the app's settings and what it writes in Karpenter's terms."""

    key: str  # as in cdk.json: nodePools[].consolidationPolicy
    target: str  # NodePool, EC2NodeClass, NodeOverlay or chart
    path: str  # the Karpenter path it writes, selectors as []: spec.template.spec.requirements[]
    allowed: tuple[Any, ...] | None  # the values its type allows when it names them (a Literal), else None


def normalized(upstream: str) -> str:
    """A declared Karpenter name as a schema path: its note dropped, every ``[...]`` selector as ``[]``."""
    from constructs_lib.specs.change import upstream_path

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
    from constructs_lib.specs.change import CHART_VALUE, declaration
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
    """The chart keys the app writes (constructs_lib/karpenter_release.py controller_values, every optional part
    on), each with how: ``always`` or the setting that writes it; plus one ``settings.featureGates.<gate>`` per
    gate the setting controller.featureGates offers (constructs_lib/specs/controller.py)."""
    from constructs_lib.karpenter_release import controller_values
    from constructs_lib.specs.controller import FEATURE_GATE_DEFAULTS, ControllerSpec

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


def _names(settings_: Iterable[Setting]) -> list[str]:
    return sorted({f"setting `{s.key}`" for s in settings_})


# --- CRDs ---


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


# --- chart values and feature gates ---


def _chart_touches(key: str) -> tuple[str, ...]:
    touched = [s for s in settings() if s.target == CHART and (_under(key, s.path) or _under(s.path, key))]
    written = chart_keys_written()
    how = [f"the app writes it ({written[key]})"] if key in written else []
    how += [f"the app writes {k} ({w})" for k, w in written.items() if k != key and _under(k, key)][:1]
    return tuple(_names(touched) + how)


def _value_changes(old: Release, new: Release) -> Iterator[Change]:
    before, after = dict(_flatten_values(old.values)), dict(_flatten_values(new.values))
    written = chart_keys_written()
    for key in sorted(set(before) | set(after)):
        if _under(key, FEATURE_GATES):
            continue
        a, b = before.get(key, ...), after.get(key, ...)
        if a == b:
            continue
        if _RELEASE_KEY.search(key) and a is not ... and b is not ...:
            yield Change("release", "", key, f"{a} → {b} (the release itself)")
            continue
        touches = _chart_touches(key)
        if a is ...:
            yield Change("chart value", "", key, f"added (default {_show(b)})", touches)
        elif b is ...:
            writes = [k for k in written if _under(k, key)]
            decision = (
                f"chart value {key}: removed in {new.version}, and the app writes it ({written[writes[0]]}; "
                "constructs_lib/karpenter_release.py)"
                if writes
                else None
            )
            yield Change("chart value", "", key, f"removed (default was {_show(a)})", touches, decision)
        else:
            yield Change("chart value", "", key, f"default {_show(a)} → {_show(b)}", touches)


def _gates(values: Mapping[str, Any]) -> dict[str, Any]:
    gates = values.get("settings", {}).get("featureGates", {})
    return dict(gates) if isinstance(gates, Mapping) else {}


def _gate_changes(old: Release, new: Release) -> Iterator[Change]:
    from constructs_lib.specs.controller import FEATURE_GATE_DEFAULTS

    before, after = _gates(old.values), _gates(new.values)
    table = {str(gate): on for gate, on in FEATURE_GATE_DEFAULTS.items()}
    setting = "setting `controller.featureGates`"
    for gate in sorted(set(before) | set(after)):
        a, b = before.get(gate, ...), after.get(gate, ...)
        offered = gate in table
        app = (
            f"{setting} lists it (the app's table: default {_show(table[gate])}; the synth takes it where the chosen "
            "release has it)"
            if offered
            else f"{setting} does not list it (constructs_lib/specs/controller.py FEATURE_GATE_DEFAULTS)"
        )
        if a is ...:
            yield Change("feature gate", "", gate, f"added, default {_show(b)}", (app,))
        elif b is ...:
            decision = (
                f"feature gate {FEATURE_GATES}.{gate}: removed in {new.version}; {setting} offers it and writes it "
                "when set (constructs_lib/specs/controller.py FEATURE_GATE_DEFAULTS)"
                if offered
                else None
            )
            yield Change("feature gate", "", gate, f"removed (default was {_show(a)})", (app,), decision)
        elif a != b:
            yield Change("feature gate", "", gate, f"default {_show(a)} → {_show(b)}", (app,))
    for gate in sorted(g for g in after if g in table and table[g] != after[g]):
        yield Change(
            "feature gate",
            "",
            gate,
            f"the app's table says default {_show(table[gate])}, the {new.version} chart {_show(after[gate])}",
            (setting,),
        )


# --- IAM ---


def _grants(template: Mapping[str, Any]) -> dict[str, set[Grant]]:
    from constructs_lib.template_parity import template_grants

    return {principal: set(found) for principal, found in template_grants(template).items()}


def _grant_diff(label: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> Iterator[Change]:
    before, after = _grants(old), _grants(new)
    for principal in sorted(set(before) | set(after)):
        a, b = before.get(principal, set()), after.get(principal, set())
        for grant in sorted(b - a, key=Grant.describe):
            yield Change("IAM", label, principal, f"grant added: {grant.describe()}")
        for grant in sorted(a - b, key=Grant.describe):
            yield Change("IAM", label, principal, f"grant removed: {grant.describe()}")


def _iam_changes(old: Release, new: Release) -> Iterator[Change]:
    from constructs_lib.template_parity import narrowings

    missing = False
    for release in (old, new):
        absent = [
            path
            for template, path in (
                (release.upstream_template, f"templates/upstream/karpenter-{release.version}.yaml"),
                (release.project_template, f"templates/karpenter-{release.version}.yaml"),
            )
            if template is None
        ]
        if absent:
            missing = True
            yield Change(
                "IAM",
                "",
                "",
                f"{release.version}: no template imported ({', '.join(absent)}): its grants are not compared; "
                + IMPORT_COMMAND.format(version=release.version),
            )
    diffs: list[Change] = []
    if old.upstream_template is not None and new.upstream_template is not None:
        diffs += _grant_diff("upstream's template", old.upstream_template, new.upstream_template)
    if old.project_template is not None and new.project_template is not None:
        diffs += _grant_diff("the project's template", old.project_template, new.project_template)
    yield from diffs
    if not missing and not diffs:
        yield Change("IAM", "", "", "no change: each template grants the same in both releases, per principal")
    if new.project_template is not None and new.upstream_template is not None:
        dropped = narrowings(new.project_template, new.upstream_template)
        # one line per statement and action (its resources together), as the synth's widening check says them
        grouped: dict[tuple[str, str, str, str, str], list[str]] = {}
        for each in dropped:
            key = (each.principal, each.grant.policy, each.grant.sid, each.grant.effect, each.grant.action)
            grouped.setdefault(key, []).append(each.grant.resource)
        for (principal, policy, sid, effect, action), resources in grouped.items():
            said = f"{policy} statement {sid!r}: {effect} {action} on {', '.join(resources)}"
            yield Change(
                "IAM",
                "the project's template",
                principal,
                f"does not cover upstream's {said}",
                decision=f"IAM {principal}: upstream's {new.version} template grants {said}, which "
                f"templates/karpenter-{new.version}.yaml does not cover",
            )
        if not dropped:
            yield Change(
                "IAM",
                "",
                "",
                f"templates/karpenter-{new.version}.yaml covers every grant of upstream's {new.version} template",
            )


def compare(root: Path, old: str, new: str, trees: Mapping[str, Path] | None = None) -> Report:
    """The report of moving from Karpenter ``old`` to ``new``, from what ``root`` (the repository or a scratch copy
    of it) keeps of each (ReportError: a release that is not kept); ``trees``: a release read from another folder
    laid out as the project (the import's staging folder)."""
    trees = trees or {}
    before, after = load(trees.get(old, root), old), load(trees.get(new, root), new)
    report = Report(old, new)
    report.changes.append(
        Change(
            "release",
            "",
            "",
            f"Charts: karpenter {before.chart.get('version')} → {after.chart.get('version')} "
            f"(appVersion {before.chart.get('appVersion')} → {after.chart.get('appVersion')}).",
        )
    )
    report.changes += _value_changes(before, after)  # the release's own keys (image tag, digest) first
    report.changes += _crd_changes(before, after)
    report.changes += _gate_changes(before, after)
    report.changes += _iam_changes(before, after)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make release-report", description="What moving between two kept Karpenter releases changes."
    )
    parser.add_argument("old", nargs="?", default=os.environ.get("SINCE", ""), help="the release you run (SINCE)")
    parser.add_argument(
        "new", nargs="?", default=os.environ.get("VERSION", ""), help="the release to move to (VERSION)"
    )
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    version = re.compile(r"^\d+\.\d+\.\d+$", re.ASCII)
    for name, value in (("SINCE", args.old), ("VERSION", args.new)):
        if not version.match(value):
            print(
                f"{name}={json.dumps(value)}: a Karpenter release like 1.14.1 (kept: "
                f"{', '.join(chart_render.kept_versions())}), e.g. make release-report SINCE=1.13.1 VERSION=1.14.1",
                file=sys.stderr,
            )
            return 2
    from constructs_lib.iam_resources import GrantError

    try:
        report = compare(args.root, args.old, args.new)
        text = report.markdown()
    except (ReportError, GrantError) as error:  # a GrantError: one line per grant a template hides
        print(error, file=sys.stderr)
        return 2
    print(text, end="")
    return 1 if report.decisions else 0


if __name__ == "__main__":
    raise SystemExit(main())
