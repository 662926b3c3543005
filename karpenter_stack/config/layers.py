"""Loading the configuration from CDK context, in explicit layers.

A setting comes from the first layer that contains its key, from the top: ``-c`` flags, the
environment's overrides (``environments.<name>``), ``cdk.json``, the profile, the built-in defaults.
Which layer *set* a key decides -- never whether a value happens to equal a default -- so a value a
user wrote is never replaced. Values given on the command line arrive as strings: scalars are
coerced, and every setting the model types as a list, a map or a nested object is parsed as JSON
(``JSON_KINDS``, derived from the model).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import date
from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel, to_snake

from constructs_lib.specs.base import quoted

from .. import versions
from .errors import BUILT_IN, CDK_JSON, FLAG, ConfigError, format_errors, unknown_key, with_origins
from .model import CREATED_CLUSTER_ONLY, DEFAULT_CLUSTER_NAME, AppConfig, stack_name_for
from .pipeline import PipelineConfig

# Context keys the CDK itself may put in context without a prefix.
_CDK_OWN_KEYS = {"acknowledged-issue-numbers"}

CONTEXT_KEYS = {to_camel(name): name for name in AppConfig.model_fields}


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


def _parse_cli_value(key: str, value: Any, origin: str) -> Any:
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


# What the production profile sets for keys no other layer contains (it never loosens anything).
SYSTEM_POOL = {
    "name": "system",
    "capacityTypes": ["on-demand"],
    "labels": {"workload-class": "system"},
    "taints": [{"key": "workload-class", "value": "system", "effect": "NoSchedule"}],
}


def _profile_defaults(raw: Mapping[str, Any]) -> dict[str, Any]:
    if raw.get("profile") != "production":
        return {}
    profile = {
        "deletionProtection": True,
        "terminationProtection": True,
        "retainOnDestroy": True,
        "natGateways": raw.get("maxAzs", AppConfig.model_fields["max_azs"].default),
        "nodePools": [SYSTEM_POOL, {"name": "default"}],
    }
    if raw.get("existingCluster") is not None:  # no cluster or network of ours to protect or size
        profile = {k: v for k, v in profile.items() if to_snake(k) not in CREATED_CLUSTER_ONLY}
    return profile


def _without_nones(value: Any) -> Any:
    """Context values lose their nulls on the way through jsii; compare them without."""
    if isinstance(value, dict):
        return {k: _without_nones(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nones(v) for v in value]
    return value


_ENV_NAME = re.compile(r"^[a-z][a-z0-9-]{0,19}$")


def load_config(context: Mapping[str, Any], today: date | None = None) -> AppConfig:
    """Validate the app's context (no environments) into an :class:`AppConfig`, or raise ConfigError.

    ``today`` decides EKS support (defaults to the current date); tests pass a fixed one."""
    configs = load_environments(context, today)
    if list(configs) != [""]:
        raise ConfigError("this context defines environments; use load_environments")
    return configs[""]


def load_environments(
    context: Mapping[str, Any], today: date | None = None, file_context: Mapping[str, Any] | None = None
) -> dict[str, AppConfig]:
    """Every environment's configuration: ``{"": config}`` without ``environments``, else
    ``{name: config}``.

    ``file_context`` is what ``cdk.json`` holds: a key of ``context`` whose value differs from it (or
    that it lacks) came from a ``-c`` flag and overrides even an environment's own setting. Without it
    every key counts as ``cdk.json``'s. Every error line names the layer its setting came from."""
    ours, origins = _ours(context, file_context)
    environments = _parse_environments(ours.pop("environments", None))
    ours.pop("pipeline", None)  # the app's, not an environment's: load_pipeline
    flags = {k for k in ours if origins[k] == FLAG}
    unknown = sorted(k for k in ours if k not in CONTEXT_KEYS)
    if unknown:
        raise ConfigError(
            with_origins(
                "\n".join(unknown_key(k, k, [*CONTEXT_KEYS, "environments", "pipeline"]) for k in unknown), "", origins
            )
        )
    shared = {k: _parse_cli_value(k, v, origins[k]) for k, v in ours.items()}
    if not environments:
        return {"": _validate(shared, today, prefix="", origins=origins)}
    configs: dict[str, AppConfig] = {}
    for name, overrides in environments.items():
        if not _ENV_NAME.fullmatch(name):
            raise ConfigError(
                f"environments: {quoted(name)} is not a valid environment name (lowercase letters, digits "
                "and '-', starting with a letter, at most 20 characters)"
            )
        layer = f"environments.{name}"
        if "pipeline" in overrides:
            raise ConfigError(f"{layer}.pipeline: the pipeline is the app's, set at the top level only ({layer})")
        # Each environment's cluster is named <shared clusterName>-<environment> unless it names its own.
        raw = {
            **shared,
            "clusterName": f"{shared.get('clusterName', DEFAULT_CLUSTER_NAME)}-{name}",
            **{k: _parse_cli_value(k, v, layer) for k, v in overrides.items()},
            **{k: shared[k] for k in flags if k != "clusterName"},
        }
        env_origins = {
            **origins,
            # (unless the environment names its own: the shared name, with the environment's suffix)
            "clusterName": f"{origins.get('clusterName', BUILT_IN)} + suffix -{name}",
            **{k: layer for k in overrides},
            **{k: FLAG for k in flags if k != "clusterName"},
        }
        configs[name] = _validate(raw, today, prefix=f"{layer}.", origins=env_origins)
    names = [c.cluster_name for c in configs.values()]
    if len(set(names)) != len(names):
        raise ConfigError(f"environments: cluster names must differ, got {', '.join(names)}")
    return configs


def _ours(context: Mapping[str, Any], file_context: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, str]]:
    """The app's own keys of the context, and the layer each came from (``-c`` or ``cdk.json``)."""
    ours = {k: v for k, v in context.items() if _is_ours(k)}
    from_file = {k: v for k, v in (file_context or {}).items() if _is_ours(k)}
    flags = {
        k
        for k in ours
        if file_context is not None and (k not in from_file or _without_nones(from_file[k]) != _without_nones(ours[k]))
    }
    if file_context is not None:  # cdk.json's own values, with the nulls jsii dropped (null = "leave it unset")
        ours = {k: v if k in flags else from_file[k] for k, v in ours.items()}
    return ours, {k: FLAG if k in flags else CDK_JSON for k in ours}


def flag_settings(context: Mapping[str, Any], file_context: Mapping[str, Any] | None) -> list[str]:
    """The app's settings that came from ``-c`` flags rather than ``cdk.json``."""
    return sorted(k for k, origin in _ours(context, file_context)[1].items() if origin == FLAG)


def load_pipeline(
    context: Mapping[str, Any], configs: Mapping[str, AppConfig], file_context: Mapping[str, Any] | None = None
) -> PipelineConfig | None:
    """The delivery pipeline (``pipeline``), checked against the environments ``load_environments``
    returned: ``None`` when it is not set. Every environment is delivered by exactly one wave and names
    its account and region."""
    ours, origins = _ours(context, file_context)
    value = ours.get("pipeline")
    if value is None or value == "null":
        return None

    def fail(message: str) -> ConfigError:
        return ConfigError(with_origins(message, "", origins))

    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise fail(f"pipeline: {quoted(value)} is not valid JSON ({err.msg}); expected a JSON object") from None
    if not isinstance(value, dict):
        raise fail(f"pipeline = {json.dumps(value)}: expected an object (connectionArn, repository, account, ...)")
    try:
        pipeline = PipelineConfig.model_validate(value)
    except ValidationError as err:
        raise fail(format_errors(err, "pipeline.", root=PipelineConfig)) from None
    if list(configs) == [""]:
        raise fail(
            "pipeline: needs environments (the pipeline deploys each environment as a stage of a wave); "
            'define them, e.g. "environments": {"dev": {...}, "prod": {...}}'
        )
    problems: list[str] = []
    wave_of: dict[str, str] = {}
    for i, wave in enumerate(pipeline.waves):
        for j, name in enumerate(wave.environments):
            if name not in configs:
                problems.append(
                    f"pipeline.waves[{i}].environments[{j}] = {json.dumps(name)}: not an environment "
                    f"(environments: {', '.join(configs)})"
                )
            elif name in wave_of:
                problems.append(
                    f"pipeline.waves: environment {quoted(name)} is in waves {quoted(wave_of[name])} and {quoted(wave.name)}"
                )
            else:
                wave_of[name] = wave.name
    problems += [
        f"pipeline.waves: environment {quoted(name)} is in no wave; with the pipeline on, it delivers every environment"
        for name in configs
        if name not in wave_of
    ]
    problems += [
        f"pipeline.waves: environment {quoted(name)} needs account and region (environments.{name}.account/region): "
        "the pipeline deploys into a named account and region"
        for name, config in configs.items()
        if name in wave_of and not (config.account and config.region)
    ]
    shared_name = str(ours.get("clusterName", DEFAULT_CLUSTER_NAME))
    taken = {stack_name_for(c.cluster_name) for c in configs.values()}
    if pipeline.pipeline_name(shared_name) in taken:
        problems.append(
            f"pipeline.name: {quoted(pipeline.pipeline_name(shared_name))} is an environment's stack name; choose another"
        )
    if problems:
        raise fail("\n".join(problems))
    return pipeline


def _parse_environments(value: Any) -> dict[str, dict[str, Any]]:
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


def _validate(raw: dict[str, Any], today: date | None, prefix: str, origins: Mapping[str, str]) -> AppConfig:
    # The profile sits below every layer a user writes: it fills only keys none of them contains.
    profile = _profile_defaults(raw)
    origins = {**{k: f"profile {raw['profile']}" for k in profile if k not in raw}, **origins}
    raw = {**profile, **raw}

    def fail(message: str) -> ConfigError:
        return ConfigError(with_origins(message, prefix, origins))

    try:
        config = AppConfig.model_validate(raw)
    except ValidationError as err:
        raise fail(format_errors(err, prefix)) from None
    try:
        versions.eks_kubernetes_version(config.kubernetes_version)
        warning = versions.check_eks_support(config.kubernetes_version, today or date.today())
        versions.karpenter_template(config.karpenter_version)
        versions.check_compatibility(config.karpenter_version, config.kubernetes_version)
        versions.KubectlLayer.for_version(config.kubernetes_version).load()
        versions.addon_versions(config.kubernetes_version, config.pinned_addon_versions)
    except versions.VersionError as err:
        raise fail(prefix + str(err)) from None
    for i, node_class in enumerate(config.node_classes):
        try:
            versions.check_ami_alias(node_class.ami_alias, config.kubernetes_version)
        except versions.VersionError as err:
            raise fail(f"{prefix}nodeClasses[{i}].{err}") from None
    warnings = [warning] if warning else []
    if config.existing_cluster is not None and config.existing_cluster.authentication_mode is None:
        warnings.append(
            "existingCluster.authenticationMode is not set: Karpenter's nodes join through an EKS access entry, "
            "which needs authentication mode API or API_AND_CONFIG_MAP (a CONFIG_MAP cluster fails the deploy at "
            "the access entry); set it to what `aws eks describe-cluster` reports to check it at synth"
        )
    if config.existing_cluster is not None and any(c.windows for c in config.node_classes):
        warnings.append(
            "nodeClasses: Windows nodes need Windows IPAM (the vpc-cni add-on's enableWindowsIpam) and "
            "AmazonEKSVPCResourceController on the cluster role; this app sets both on clusters it creates, not on "
            "existingCluster: check them there, or Windows pods get no IP address"
        )
    if config.profile == "production":
        warnings += [
            f"nodeClasses[{i}].amiAlias {quoted(c.ami_alias)}: Windows AMIs cannot be pinned (alias @latest only), so "
            "this class's nodes move to each new Windows AMI by drift, within their pools' disruption budgets"
            for i, c in enumerate(config.node_classes)
            if c.windows
        ]
        # A list a user sets replaces the profile's whole list (layers never merge lists): say what that drops.
        if not origins.get("nodePools", "").startswith("profile") and SYSTEM_POOL["name"] not in {
            p.name for p in config.node_pools
        }:
            warnings.append(
                "nodePools: your list replaces the production profile's, so its on-demand 'system' pool (label and "
                "taint workload-class=system, for cluster add-ons) is not created; to keep it, add "
                + json.dumps(SYSTEM_POOL, separators=(", ", ": "))
                + f" to nodePools (from {origins.get('nodePools', BUILT_IN)})"
            )
    config._warnings = tuple(_placed(w, prefix, origins) for w in warnings)
    return config


def _placed(warning: str, prefix: str, origins: Mapping[str, str]) -> str:
    """A warning about a setting, named where the setting was written: in an environment, its path under
    ``environments.<name>.``; written at the top level (or with -c), its own path and the environment."""
    layer = prefix.removesuffix(".")
    key = re.match(r"[A-Za-z]+", warning)
    origin = origins.get(key.group()) if key else None
    if not layer or origin is None or origin == layer:
        return prefix + warning
    environment = f"environment {layer.split('.', 1)[1]}"
    if warning.endswith(")") and "(from " in warning:
        return f"{warning[:-1]}; {environment})"
    return f"{warning} ({environment})"
