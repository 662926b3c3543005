"""Configuration error messages: one line per problem, naming the setting, the value and what is
allowed; a did-you-mean for unknown keys at any depth."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from constructs_lib.controller_spec import ControllerSpec
from constructs_lib.node_specs import (
    CamelModel,
    CapacityReservationTermSpec,
    DataVolumeSpec,
    DisruptionBudgetSpec,
    KubeletSpec,
    NodeClassSpec,
    NodeOverlaySpec,
    NodePoolSpec,
    OverlayRequirementSpec,
    RequirementSpec,
    SecurityGroupTermSpec,
    SubnetTermSpec,
    TaintSpec,
)

from .model import AppConfig, ExistingClusterConfig
from .pipeline import WaveSpec


class ConfigError(Exception):
    """Invalid configuration. ``str(err)`` is the message to show the user."""


# Names of the layers a setting can come from, as error messages show them.
FLAG = "-c"
CDK_JSON = "cdk.json"
BUILT_IN = "built-in default"
_LEADING_KEY = re.compile(r"[A-Za-z]+")
_SETTINGS = {to_camel(name) for name in AppConfig.model_fields}


def with_origins(message: str, prefix: str, origins: Mapping[str, str]) -> str:
    """Each line of ``message`` that starts with a setting (after ``prefix``) ends with the layer that
    setting came from: ``(from -c)``, ``(from cdk.json)``, ``(from environments.prod)``,
    ``(from profile production)`` or ``(from built-in default)``."""
    lines = []
    for line in message.split("\n"):
        body = line[len(prefix) :] if line.startswith(prefix) else line
        key = _LEADING_KEY.match(body)
        if key and (key.group() in origins or key.group() in _SETTINGS):
            line += f" (from {origins.get(key.group(), BUILT_IN)})"
        lines.append(line)
    return "\n".join(lines)


def format_location(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int) and parts:
            parts[-1] = f"{parts[-1]}[{item}]"
        else:
            parts.append(str(item))
    return ".".join(parts)


# Which model a nested key belongs to, to suggest the closest known key for a typo.
NESTED_MODELS: dict[str, type[CamelModel]] = {
    "existingCluster": ExistingClusterConfig,
    "controller": ControllerSpec,
    "kubelet": KubeletSpec,
    "nodeClasses": NodeClassSpec,
    "nodePools": NodePoolSpec,
    "budgets": DisruptionBudgetSpec,
    "requirements": RequirementSpec,
    "taints": TaintSpec,
    "dataVolumes": DataVolumeSpec,
    "extraSubnetSelectorTerms": SubnetTermSpec,
    "extraSecurityGroupSelectorTerms": SecurityGroupTermSpec,
    "capacityReservationSelectorTerms": CapacityReservationTermSpec,
    "nodeOverlays": NodeOverlaySpec,
    "waves": WaveSpec,
}
# Keys whose model depends on where they are: (enclosing key, key) -> model.
NESTED_IN: dict[tuple[str | None, str], type[CamelModel]] = {("nodeOverlays", "requirements"): OverlayRequirementSpec}


def _known_keys(loc: tuple[Any, ...], root: type[CamelModel] = AppConfig) -> list[str]:
    model: type[CamelModel] = root
    before: str | None = None
    for item in (i for i in loc[:-1] if isinstance(i, str)):
        if (before, item) in NESTED_IN:
            model = NESTED_IN[(before, item)]
        elif item in NESTED_MODELS:
            model = NESTED_MODELS[item]
        before = item
    return [field.alias or to_camel(name) for name, field in model.model_fields.items()]


def unknown_key(setting: str, key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"did you mean '{close[0]}'?" if close else f"known settings: {', '.join(sorted(known))}"
    return f"{setting}: unknown setting; {hint}"


def _shown(value: Any) -> str:
    """The value as JSON, or its size when that would not fit on a line."""
    text = json.dumps(value)
    if len(text) <= 100:
        return text
    if isinstance(value, list):
        return f"[{len(value)} items]"
    if isinstance(value, dict):
        return f"{{{len(value)} keys}}"
    return text[:60] + '..."'


def format_errors(err: ValidationError, prefix: str = "", root: type[CamelModel] = AppConfig) -> str:
    lines = []
    for error in err.errors():
        setting = prefix + format_location(error["loc"]) if error["loc"] else ""
        if error["type"] == "missing":  # the input is the enclosing object: name the setting only
            lines.append(f"{setting}: required, and not set")
            continue
        if error["type"] == "extra_forbidden":
            lines.append(unknown_key(setting, str(error["loc"][-1]), _known_keys(error["loc"], root)))
            continue
        message = error["msg"].removeprefix("Value error, ")
        if not setting:  # a cross-field rule: its message names the settings itself
            lines += [prefix + line for line in message.split("\n")]
            continue
        if isinstance(error.get("input"), dict) and error["type"] == "value_error":
            lines.append(f"{setting}: {message}")  # a rule across fields of one entry
            continue
        if error["loc"][-1] == "[key]":  # a map key that is not allowed: name the map and the key
            setting = prefix + format_location(error["loc"][:-2])
            lines.append(f"{setting}: key {json.dumps(error['input'])}: {message}")
            continue
        lines.append(f"{setting} = {_shown(error.get('input'))}: {message}")
    return "\n".join(lines)
