"""What the app knows of each imported Karpenter release, one ``karpenter-<version>.json`` per release, written by
``python -m tooling.releases.karpenter_import`` (``make karpenter-import``) from the release's charts: its feature
gates (``settings.featureGates`` of the karpenter chart's values.yaml) with their defaults, the fields of each
kind's spec with their enums (from the CRDs the karpenter-crd chart installs), and the chart's values schema
(:func:`chart_values_schema`). ``karpenterVersion`` chooses among them:
:func:`imported` lists them, and :func:`gate_and_object_problems` finds, for the chosen release, a feature gate or an
object field or value that release does not know (e.g. ``consolidationPolicy: Balanced``, new in 1.14)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..specs.base import quoted

FOLDER = Path(__file__).resolve().parent
_NAME = re.compile(r"^karpenter-(\d+\.\d+\.\d+)\.json$", re.ASCII)


def imported(folder: Path = FOLDER) -> list[str]:
    """The imported releases, oldest first."""
    found = [m.group(1) for p in folder.glob("karpenter-*.json") if (m := _NAME.match(p.name))]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


@cache
def _release(version: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FOLDER / f"karpenter-{version}.json").read_text())
    return data


def feature_gates(version: str) -> dict[str, bool]:
    """The feature gates of a release and the chart's default of each, in values.yaml's order."""
    return {str(name): bool(on) for name, on in _release(version)["featureGates"].items()}


def chart_values_schema(version: str) -> dict[str, Any]:
    """The JSON Schema of the release's ``karpenter`` chart values (generated from the chart at import: every key its
    values.yaml and templates read, each with its default's type; ``controller.chartValues`` is checked against
    it)."""
    schema: dict[str, Any] = _release(version)["chartValues"]
    return schema


def object_fields(version: str, kind: str) -> dict[str, Any]:
    """The fields of ``kind``'s spec in a release, by path: enum, ``"map"`` or None."""
    fields: dict[str, Any] = _release(version)["objects"][kind]
    return fields


def _others(version: str, holds: Any, verb: str = "has") -> str:
    """The other imported releases for which ``holds(release)`` is true, named for the message."""
    others = [v for v in imported() if v != version and holds(v)]
    plural = {"has": "have", "allows": "allow"}[verb]
    return f"; {', '.join(others)} {verb if len(others) == 1 else plural} it" if others else ""


def gate_problems(gates: Iterable[str], version: str) -> list[str]:
    """A set feature gate the release's chart does not have (the chart would pass it on, and the controller ignore
    it)."""
    known = feature_gates(version)
    return [
        f"controller.featureGates.{gate}: Karpenter {version} (karpenterVersion) has no such feature gate "
        f"(its gates: {', '.join(known)}){_others(version, lambda v, g=gate: g in feature_gates(v))}"
        for gate in gates
        if gate not in known
    ]


def _walk(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item, f"{path}[]")


@dataclass(frozen=True)
class ObjectProblem:
    """A field or value of an object that the release's CRD does not have."""

    kind: str
    name: str
    path: str  # the field (``[]``: a list's items)
    version: str
    value: Any = None  # the value outside the field's enum (None: the field itself is unknown)
    allowed: tuple[str, ...] = ()  # the enum of the release, for a value
    others: str = ""  # "; 1.14.1 allows it": the other imported releases that take it

    @property
    def text(self) -> str:
        """The problem without the setting that wrote it (an object of nodeManifests, the construct's own)."""
        what = f"{self.path} = {quoted(self.value)}" if self.allowed else self.path
        return f"{self.kind} {quoted(self.name)} sets {what}: {self.verdict}"

    @property
    def verdict(self) -> str:
        if self.allowed:
            return (
                f"Karpenter {self.version} (karpenterVersion) does not allow it (allowed: {', '.join(self.allowed)})"
                f"{self.others}"
            )
        return f"Karpenter {self.version}'s {self.kind} (karpenterVersion) has no such field{self.others}"


def object_problems(obj: Mapping[str, Any], version: str) -> list[ObjectProblem]:
    """Each field of the object's spec the release's CRD does not have, or a value outside the field's enum: what
    the API server of a cluster running that release refuses."""
    kind, name = str(obj["kind"]), str(obj.get("metadata", {}).get("name"))
    fields, problems = object_fields(version, kind), []
    skip: tuple[str, ...] = ()
    for path, value in _walk(obj.get("spec", {}), "spec"):
        if skip and path.startswith(skip):
            continue
        if path not in fields:
            others = _others(version, lambda v, p=path: p in object_fields(v, kind))
            problems.append(ObjectProblem(kind, name, path, version, others=others))
            skip = (f"{path}.", f"{path}[]")
            continue
        known = fields[path]
        if known == "map":
            skip = (f"{path}.",)
        elif isinstance(known, list) and value not in known:
            others = _others(version, lambda v, p=path, x=value: x in (object_fields(v, kind).get(p) or ()), "allows")
            allowed = tuple(str(v) for v in known)
            problems.append(ObjectProblem(kind, name, path, version, value, allowed, others))
    return problems


def gate_and_object_problems(
    objects: Sequence[Mapping[str, Any]], gates: Iterable[str], version: str
) -> tuple[list[str], list[ObjectProblem]]:
    """What the chosen release refuses of a configuration: its feature gates, and its objects' fields (nothing for a
    release not imported here: the construct, used on its own, may install one this project knows nothing of)."""
    if version not in imported():
        return [], []
    return gate_problems(gates, version), [p for obj in objects for p in object_problems(obj, version)]
