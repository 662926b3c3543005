"""Step 1 of 4, parse: the app's own keys of the CDK context, the layer each came from (``-c`` or ``cdk.json``),
and their values as the model reads them.

Values given on the command line arrive as strings: every setting the model types as a list, a map or a nested
object is parsed as JSON (``JSON_KINDS``, derived from the model), and ``""``/``"null"`` unsets an optional one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from constructs_lib.karpenter.specs.base import quoted

from .errors import CDK_JSON, FLAG, ConfigError, unknown_key, with_origins
from .model import AppConfig

# Context keys the CDK itself may put in context without a prefix.
_CDK_OWN_KEYS = {"acknowledged-issue-numbers"}

CONTEXT_KEYS = {to_camel(name): name for name in AppConfig.model_fields}
# Top-level keys that are not an environment's settings.
APP_KEYS = ("environments", "pipeline")
_ENV_NAME = re.compile(r"^[a-z][a-z0-9-]{0,19}$")


def _json_kind(annotation: Any) -> str | None:
    """'list' or 'object' for a setting whose value is JSON-shaped (a list, a map or a nested model,
    optional or not), else None."""
    origin = get_origin(annotation)
    if origin in (Union, UnionType):
        kinds = {_json_kind(arg) for arg in get_args(annotation) if arg is not type(None)}
        return next(iter(kinds - {None}), None)
    if annotation is list or origin is list:
        return "list"
    if annotation is dict or origin is dict or (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
        return "object"
    return None


def _optional(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, UnionType) and type(None) in get_args(annotation)


# Derived from the model: which settings a -c flag gives as JSON text, and which may be given as null.
JSON_KINDS: dict[str, str] = {
    to_camel(name): kind
    for name, field in AppConfig.model_fields.items()
    if (kind := _json_kind(field.annotation)) is not None
}
_NULLABLE = {to_camel(name) for name, field in AppConfig.model_fields.items() if _optional(field.annotation)}


def _is_ours(key: str) -> bool:
    # Feature flags (@aws-cdk/...), CDK's own settings (aws:cdk:...) and lookup caches
    # (vpc-provider:...) all carry ':' or '@'.
    return ":" not in key and not key.startswith("@") and key not in _CDK_OWN_KEYS


def _without_nones(value: Any) -> Any:
    """Context values lose their nulls on the way through jsii; compare them without."""
    if isinstance(value, dict):
        return {k: _without_nones(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nones(v) for v in value]
    return value


def settings_of(
    context: Mapping[str, Any], file_context: Mapping[str, Any] | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The app's own keys of the context, and the layer each came from (``-c`` or ``cdk.json``).

    ``file_context`` is what ``cdk.json`` holds: a key of ``context`` whose value differs from it (or that it
    lacks) came from a ``-c`` flag. Without it every key counts as ``cdk.json``'s."""
    ours = {k: v for k, v in context.items() if _is_ours(k)}
    from_file = {k: v for k, v in (file_context or {}).items() if _is_ours(k)}
    flags = {
        k
        for k in ours
        if file_context is not None and (k not in from_file or _without_nones(from_file[k]) != _without_nones(ours[k]))
    }
    if file_context is not None:  # cdk.json's own values, with the nulls jsii dropped (null = "leave it unset")
        ours = {k: v if k in flags else from_file[k] for k, v in ours.items()}
        # (a setting that is null itself is dropped whole: it still says "unset", e.g. over a profile's value)
        ours.update({k: None for k, v in from_file.items() if v is None and k not in ours})
    return ours, {k: FLAG if k in flags else CDK_JSON for k in ours}


def flag_settings(context: Mapping[str, Any], file_context: Mapping[str, Any] | None) -> list[str]:
    """The app's settings that came from ``-c`` flags rather than ``cdk.json``."""
    return sorted(k for k, origin in settings_of(context, file_context)[1].items() if origin == FLAG)


def check_known(settings: Mapping[str, Any], origins: Mapping[str, str]) -> None:
    """ConfigError naming every key that is no setting (with the closest known one)."""
    unknown = sorted(k for k in settings if k not in CONTEXT_KEYS)
    if unknown:
        raise ConfigError(
            with_origins("\n".join(unknown_key(k, k, [*CONTEXT_KEYS, *APP_KEYS]) for k in unknown), "", origins)
        )


def parse_value(key: str, value: Any, origin: str) -> Any:
    """A setting's value as the model reads it: JSON text of a list, map or object parsed, "" or "null" of an
    optional setting unset."""
    if isinstance(value, str) and value in ("", "null") and key in _NULLABLE:
        return None
    if key in JSON_KINDS and isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as err:
            raise ConfigError(
                f"{key}: {json.dumps(value)} is not valid JSON ({err.msg}); expected a JSON {JSON_KINDS[key]} "
                f"(from {origin})"
            ) from None
    return value


def parse_environments(value: Any) -> dict[str, dict[str, Any]]:
    """``environments``: environment name -> its settings (``{}`` when unset)."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise ConfigError(
                f"environments: {quoted(value)} is not valid JSON ({err.msg}); expected a JSON object"
            ) from None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ConfigError("environments: expected an object of environment name -> settings")
    return value


def check_environment(name: str, overrides: Mapping[str, Any]) -> None:
    """ConfigError for an environment name that is none, or an environment that sets the app's pipeline."""
    if not _ENV_NAME.fullmatch(name):
        raise ConfigError(
            f"environments: {quoted(name)} is not a valid environment name (lowercase letters, digits "
            "and '-', starting with a letter, at most 20 characters)"
        )
    layer = f"environments.{name}"
    if "pipeline" in overrides:
        raise ConfigError(f"{layer}.pipeline: the pipeline is the app's, set at the top level only ({layer})")


def parse_pipeline(value: Any, origins: Mapping[str, str]) -> dict[str, Any] | None:
    """``pipeline``: its settings, or None when it is not set."""
    if value is None or value == "null":
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            message = f"pipeline: {quoted(value)} is not valid JSON ({err.msg}); expected a JSON object"
            raise ConfigError(with_origins(message, "", origins)) from None
    if not isinstance(value, dict):
        message = f"pipeline = {json.dumps(value)}: expected an object (connectionArn, repository, account, ...)"
        raise ConfigError(with_origins(message, "", origins))
    return value
