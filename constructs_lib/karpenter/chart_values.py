"""``controller.chartValues``: any value of the release's ``karpenter`` chart, deep-merged over the values the app writes
(release.app_values), so that no team forks for a chart value.

- ``release.merge``: maps merge key by key, the map's scalars replace the app's, and a list the app writes keeps the app's
  entries with the map's added after them (the controller's ``AWS_REGION`` and its hosting's toleration stay).
- :func:`ownership`: which values the app writes itself, found where it builds them: ``app_values`` is run with every
  optional part on, and again with each of its parameters (and each field of the controller's typed settings) set
  otherwise; the values that change belong to that parameter, the values no parameter changes to the app itself.
  Only ``release.OVERRIDABLE`` (replicas, podDisruptionBudget, priorityClassName: defaults no setting writes) is the
  map's to change.
- :func:`problems`: the map against the chosen release's chart values schema (constructs_lib/karpenter/releases: an
  unknown key or a wrong type; ``required`` is the merged values' concern, not the map's) and against the app's own
  values (refused naming both the map's key and the setting that writes it), one line each."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from typing import Any

from .release import OVERRIDABLE, app_values
from .specs.controller import FEATURE_GATE_DEFAULTS, ControllerSpec

Path = tuple[str, ...]
SETTING = "controller.chartValues"

# Two values of each parameter of release.app_values that it writes differently (the first: unset where it may be).
_PROBES: dict[str, tuple[Any, Any]] = {
    "cluster_name": ("probe-a", "probe-b"),
    "interruption_queue": ("probe-a", "probe-b"),
    "service_account": ("probe-a", "probe-b"),
    "role_arn": (None, "arn:aws:iam::111122223333:role/probe"),
    "dns_policy": ("ClusterFirst", "Default"),
    "tolerations": (None, [{"key": "probe", "operator": "Exists"}]),
    "service_monitor": (False, True),
}
# ... and of each field of the controller's typed settings (ControllerSpec; chart_values is the map itself).
_CONTROLLER_PROBES: dict[str, tuple[Any, Any]] = {
    "feature_gates": ({}, dict.fromkeys(FEATURE_GATE_DEFAULTS, True)),
    "batch_max_duration": (None, "1s"),
    "batch_idle_duration": (None, "1s"),
    "zonal_shift": (None, True),
    "log_level": (None, "debug"),
    "cpu": ("1", "2"),
    "memory": ("1Gi", "2Gi"),
}
# Who writes a value, as the construct's props name it ("": the construct itself); the app passes its settings' names.
PROP_OWNERS: dict[str, str] = {
    "cluster_name": "cluster_name",
    "interruption_queue": "the interruption queue (named by cluster_name)",
    "service_account": "service_account",
    "role_arn": "controller_credentials",
    "dns_policy": "controller_dns_policy",
    "tolerations": "controller_tolerations",
    "service_monitor": "service_monitor",
    "pod_annotations": "controller_pod_annotations",
    "": "the construct",
}
_TYPES = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "array": "a list",
    "object": "a map",
    "null": "null",
}


def _leaves(values: Mapping[str, Any], path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every value below maps, by path: scalars, lists and empty maps."""
    for key, value in values.items():
        here = (*path, str(key))
        if isinstance(value, Mapping) and value:
            yield from _leaves(value, here)
        else:
            yield here, value


def _written(args: Mapping[str, Any], fields: Mapping[str, Any]) -> dict[Path, Any]:
    """What release.app_values writes with ``args`` and the controller's typed settings ``fields``, by path."""
    return dict(_leaves(app_values(**args, controller=ControllerSpec.model_construct(**fields))))


def _everything(pod_annotations: frozenset[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The arguments of app_values with every optional part on, and the controller's fields so."""
    probes = {**_PROBES, "pod_annotations": (None, dict.fromkeys(sorted(pod_annotations), "probe"))}
    return {n: v[1] for n, v in probes.items()}, {n: v[1] for n, v in _CONTROLLER_PROBES.items()}


@cache
def ownership(pod_annotations: frozenset[str] = frozenset()) -> dict[Path, str]:
    """Every value the app writes that the map may not change, by path, with the parameter of release.app_values
    that writes it (``controller.<field>`` for a typed setting of the controller; "": the app itself).
    ``pod_annotations``: the keys of the pod annotations the construct is given (its prop of that name)."""
    args, fields = _everything(pod_annotations)
    written = _written(args, fields)
    variants = [(name, {**args, name: values[0]}, fields) for name, values in _PROBES.items()]
    variants.append(("pod_annotations", {**args, "pod_annotations": None}, fields))
    variants += [
        (f"controller.{ControllerSpec.model_fields[name].alias or name}", args, {**fields, name: values[0]})
        for name, values in _CONTROLLER_PROBES.items()
    ]
    owners: dict[Path, str] = {}
    for owner, changed_args, changed_fields in variants:
        other = _written(changed_args, changed_fields)
        for path in written.keys() | other.keys():
            if written.get(path, _MISSING) != other.get(path, _MISSING):
                owners.setdefault(path, owner)
    return {path: owners.get(path, "") for path in written if path[0] not in OVERRIDABLE}


_MISSING = object()


def _shown(path: Path) -> str:
    return ".".join((SETTING, *path))


def _owner(owner: str, names: Mapping[str, str]) -> str:
    return owner if owner.startswith("controller.") else names[owner]


def conflicts(
    chart_values: Mapping[str, Any], names: Mapping[str, str], pod_annotations: frozenset[str] = frozenset()
) -> list[str]:
    """Each value of the map the app writes itself, naming the map's key and the setting that writes it. A list the
    app writes takes more entries, but not one of the name of the app's (an environment variable)."""
    owned = ownership(pod_annotations)
    written = _written(*_everything(pod_annotations))
    problems = []
    for path, value in _leaves(chart_values):
        found = next(
            (
                (mine, owner)
                for mine, owner in owned.items()
                if path[: len(mine)] == mine or (mine[: len(path)] == path and not isinstance(value, Mapping))
            ),
            None,
        )
        if found is None:
            continue
        mine, owner = found
        who = _owner(owner, names)
        if mine == path and isinstance(value, list) and isinstance(written[mine], list):
            taken = {e.get("name") for e in written[mine] if isinstance(e, Mapping) and "name" in e}
            problems += [
                f"{_shown(path)}[{i}]: {who if not owner else 'the app'} writes the entry named {entry['name']!r}"
                f"{'' if not owner else f' from {who}'}; use another name"
                for i, entry in enumerate(value)
                if isinstance(entry, Mapping) and entry.get("name") in taken
            ]
            continue
        if owner:
            problems.append(f"{_shown(path)}: the app writes {'.'.join(mine)} from {who}; set {who} instead")
        else:
            problems.append(
                f"{_shown(path)}: {who} writes {'.'.join(mine)} = {json.dumps(written[mine])}; it is not a value to change"
            )
    return problems


def schema_problems(chart_values: Mapping[str, Any], version: str) -> list[str]:
    """What the release's chart values schema refuses of the map (nothing for a release not imported here)."""
    from . import releases

    if version not in releases.imported():
        return []
    from jsonschema import Draft202012Validator

    schema = releases.chart_values_schema(version)
    where = f"karpenter {version} chart values"
    chart = f"karpenter {version} chart"
    problems = []
    for error in sorted(Draft202012Validator(schema).iter_errors(chart_values), key=lambda e: [*map(str, e.path)]):
        path: Path = tuple(str(p) for p in error.absolute_path)
        if error.validator == "required":
            continue  # the app's values hold them
        if error.validator == "additionalProperties":
            known = list(error.schema.get("properties", {}))
            for key in [k for k in error.instance if k not in known]:
                problems.append(
                    f"{_shown((*path, key))}: not a value of the {chart}{_did_you_mean(key, known)} "
                    f"(there: {', '.join(known)})"
                )
        elif error.validator == "type":
            kinds = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
            allowed = " or ".join(_TYPES.get(str(k), str(k)) for k in kinds)
            problems.append(f"{_shown(path)}: {json.dumps(error.instance)} is not {allowed} ({where})")
        elif error.validator == "minLength":
            problems.append(f"{_shown(path)}: {json.dumps(error.instance)} must not be empty ({where})")
        else:
            problems.append(f"{_shown(path)}: {error.message} ({where})")
    return problems


def _did_you_mean(key: str, known: list[str]) -> str:
    close = [k for k in known if k.lower() == key.lower()] or difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""


def problems(
    chart_values: Mapping[str, Any],
    version: str | None,
    *,
    pod_annotations: Iterable[str] = (),
    names: Mapping[str, str] = PROP_OWNERS,
) -> list[str]:
    """The map's problems: the schema's first (an unknown key, a wrong type), else the app's own values it sets."""
    if not chart_values:
        return []
    found = schema_problems(chart_values, version) if version is not None else []
    return found or conflicts(chart_values, names, frozenset(pod_annotations))
