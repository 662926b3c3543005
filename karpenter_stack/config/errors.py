"""Configuration error messages: one line per problem, naming the setting, the value and what is
allowed; a did-you-mean for unknown keys at any depth."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from constructs_lib.karpenter.specs.base import CamelModel, named, quoted, shown

from . import tree
from .model import AppConfig


class ConfigError(Exception):
    """Invalid configuration. ``str(err)`` is the message to show the user."""


# Names of the layers a setting can come from, as error messages show them.
FLAG = "-c"
CDK_JSON = "cdk.json"
BUILT_IN = "built-in default"
_LEADING_KEY = re.compile(r"[A-Za-z]+", re.ASCII)
# What splits a line (str.splitlines): escaped in a message that must stay one line.
_LINE_BREAKS = re.compile("[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_SETTINGS = {to_camel(name) for name in AppConfig.model_fields}


def with_origins(message: str, prefix: str, origins: Mapping[str, str]) -> str:
    """Each line of ``message`` that starts with a setting (after ``prefix``) ends with the layer that
    setting came from: ``(from -c)``, ``(from cdk.json)``, ``(from environments.prod)``,
    ``(from profile production)`` or ``(from built-in default)``."""
    lines = []
    layer = prefix.removesuffix(".")  # an environment's ("environments.prod"), or "" at the top level
    for line in message.split("\n"):
        body = line[len(prefix) :] if line.startswith(prefix) else line
        match = _LEADING_KEY.match(body)
        key = match.group() if match else next((k for k in origins if body.startswith(named(k) + ":")), None)
        if key and (key in origins or key in _SETTINGS):
            origin = origins.get(key, BUILT_IN)
            if layer and line.startswith(prefix) and origin != layer:
                # written outside the environment (cdk.json's top level, -c, ...): named where it was written
                line = f"{body} (from {origin}; environment {layer.split('.', 1)[1]})"
            else:
                line += f" (from {origin})"
        lines.append(line)
    return "\n".join(lines)


def format_location(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int) and parts:
            parts[-1] = f"{parts[-1]}[{item}]"
        else:
            parts.append(named(str(item)))  # a key with a stray space or newline shows quoted
    return ".".join(parts)


def _known_keys(loc: tuple[Any, ...], root: type[CamelModel] = AppConfig) -> list[str]:
    """The keys of the model where the last key of ``loc`` is (walking the model tree from ``root``), to
    suggest the closest known key for a typo."""
    model: type[BaseModel] = root
    for item in (i for i in loc[:-1] if isinstance(i, str)):
        model = tree.child(model, item) or model
    return [tree.key_of(name, model) for name in model.model_fields]


def unknown_key(setting: str, key: str, known: list[str]) -> str:
    """``setting`` names the key where it is (a top-level key is its own setting: then shown quoted when
    it is no plain name, e.g. "clusterName " with a stray space)."""
    if setting == key:
        setting = named(key)
    if key.strip() in known:
        hint = f"did you mean {quoted(key.strip())} (without the surrounding whitespace)?"
    elif close := difflib.get_close_matches(key, known, n=1):
        hint = f"did you mean {quoted(close[0])}?"
    else:
        hint = f"known settings: {', '.join(sorted(known))}"
    return f"{setting}: unknown setting; {hint}"


def _type_hint(setting: str, value: Any) -> str:
    """A number or true/false given where a string belongs: the quoted spelling that fixes it (for a
    version, what a dropped trailing zero was)."""
    text = json.dumps(value)
    hint = f"must be a string; write it in quotes: {json.dumps(text)}"
    fraction = text.partition(".")[2] if isinstance(value, float) and setting.lower().endswith("version") else ""
    if len(fraction) == 1:  # 1.30 arrives as 1.3: JSON numbers drop trailing zeros
        hint += f" (JSON reads {text}0 as the number {text}: if you meant {text}0, write {json.dumps(text + '0')})"
    return hint


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
        if error["type"] == "string_type" and isinstance(error.get("input"), (int, float)):  # (bool is an int)
            message = _type_hint(setting, error["input"])
        if error["type"] == "bool_type":  # (a strict boolean: JSON's true or false, not "yes", 1 or "false")
            message = "must be true or false (JSON booleans, not a string or a number)"
        if setting:  # one problem, one line, whatever a value it echoes holds
            message = _LINE_BREAKS.sub(lambda m: repr(m.group())[1:-1], message)
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
        lines.append(f"{setting} = {shown(error.get('input'), json.dumps)}: {message}")
    return "\n".join(lines)
