"""The steps in order, for every environment: parse the context (``parse``), merge the layers (``merge``),
validate (``validate``); ``resolve`` then turns each configuration into what the stacks build from.

Each environment is merged and validated in turn, so the first problem an environment has is the one reported
(with every other problem of the same step and setting: one line each, naming the layer it came from), for every
environment that has one; a value written outside the environments that fails in several is named once."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from typing import Any

from ..deployed import deployed_authentication_mode
from . import merge, parse
from .cluster_settings import DEFAULT_CLUSTER_NAME
from .errors import FLAG, ConfigError
from .model import AppConfig
from .pipeline import PipelineConfig
from .pipeline_rules import distinct_cluster_names, validate_pipeline
from .validate import validate


def load_config(
    context: Mapping[str, Any], today: date | None = None, deployed: merge.DeployedMode | None = None
) -> AppConfig:
    """Validate the app's context (no environments) into an :class:`AppConfig`, or raise ConfigError.

    ``today`` decides EKS support (defaults to the current date); tests pass a fixed one."""
    configs = load_environments(context, today, deployed=deployed)
    if list(configs) != [""]:
        raise ConfigError("this context defines environments; use load_environments")
    return configs[""]


def load_environments(
    context: Mapping[str, Any],
    today: date | None = None,
    file_context: Mapping[str, Any] | None = None,
    deployed: merge.DeployedMode | None = None,
) -> dict[str, AppConfig]:
    """Every environment's configuration: ``{"": config}`` without ``environments``, else
    ``{name: config}``.

    ``file_context`` is what ``cdk.json`` holds: a key of ``context`` whose value differs from it (or
    that it lacks) came from a ``-c`` flag and overrides even an environment's own setting. Without it
    every key counts as ``cdk.json``'s. Every error line names the layer its setting came from.

    ``deployed`` says which stacks' clusters are deployed, and in which authentication mode (the production
    profile keeps it): by default the project's accepted baseline (``baseline/``, karpenter_stack/deployed.py)."""
    deployed = deployed or deployed_authentication_mode
    ours, origins = parse.settings_of(context, file_context)
    environments = parse.parse_environments(ours.pop("environments", None))
    ours.pop("pipeline", None)  # the app's, not an environment's: load_pipeline
    flags = {k for k in ours if origins[k] == FLAG}
    parse.check_known(ours, origins)
    shared = {k: parse.parse_value(k, v, origins[k]) for k, v in ours.items()}
    if not environments:
        return {"": validate(merge.top_level(shared, origins, deployed), today)}
    configs: dict[str, AppConfig] = {}
    failed: dict[str, list[str]] = {}
    for name, overrides in environments.items():
        layer = f"environments.{name}"
        try:
            parse.check_environment(name, overrides)
            parsed = {k: parse.parse_value(k, v, layer) for k, v in overrides.items()}
            configs[name] = validate(merge.environment(name, parsed, shared, origins, flags, deployed), today)
        except ConfigError as err:
            failed[name] = str(err).split("\n")
    if failed:
        raise ConfigError(_in_every_environment(failed))
    distinct_cluster_names(configs)
    return configs


# The end of a line about a value written outside an environment: "(from <layer>; environment <name>)"
_FAILED_IN = re.compile(r"; environment ([^;()]+)\)$")


def _in_every_environment(failed: Mapping[str, list[str]]) -> str:
    """Every environment's problems, in order, one line each: a value written outside the environments that fails
    in several is one line naming them all (``(from cdk.json; environments dev, prod)``)."""
    lines: dict[str, list[str]] = {}  # a line without its environment -> the environments it fails in
    for name, problems in failed.items():
        for line in problems:
            found = _FAILED_IN.search(line)
            names = lines.setdefault(line[: found.start()] + ")" if found else line, [])
            names += [name] if found else []
    return "\n".join(
        f"{line[:-1]}; environment{'s' if len(names) > 1 else ''} {', '.join(names)})" if names else line
        for line, names in lines.items()
    )


def load_pipeline(
    context: Mapping[str, Any], configs: Mapping[str, AppConfig], file_context: Mapping[str, Any] | None = None
) -> PipelineConfig | None:
    """The delivery pipeline (``pipeline``), checked against the environments ``load_environments``
    returned: ``None`` when it is not set. Every environment is delivered by exactly one wave and names
    its account and region."""
    ours, origins = parse.settings_of(context, file_context)
    settings = parse.parse_pipeline(ours.get("pipeline"), origins)
    if settings is None:
        return None
    return validate_pipeline(settings, configs, shared_cluster_name(ours), origins)


def shared_cluster_name(settings: Mapping[str, Any]) -> str:
    """The top-level clusterName (environments' clusters are named after it, and so is the pipeline)."""
    return str(settings.get("clusterName", DEFAULT_CLUSTER_NAME))
