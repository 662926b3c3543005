"""The rules across environments: the delivery pipeline checked against the environments it delivers (every
problem of every rule of :data:`PIPELINE_RULES` is reported), and no two environments of one cluster name."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from constructs_lib.karpenter.specs.base import quoted

from .errors import ConfigError, format_errors, with_origins
from .model import AppConfig, stack_name_for
from .pipeline import PipelineConfig

PipelineRule = Callable[[PipelineConfig, Mapping[str, AppConfig], str], list[str]]


def validate_pipeline(
    settings: Mapping[str, Any], configs: Mapping[str, AppConfig], shared_name: str, origins: Mapping[str, str]
) -> PipelineConfig:
    """The delivery pipeline, checked against the environments (``shared_name``: the top-level clusterName):
    every environment is delivered by exactly one wave and names its account and region."""

    def fail(message: str) -> ConfigError:
        return ConfigError(with_origins(message, "", origins))

    try:
        pipeline = PipelineConfig.model_validate(settings)
    except ValidationError as err:
        raise fail(format_errors(err, "pipeline.", root=PipelineConfig)) from None
    if list(configs) == [""]:
        raise fail(
            "pipeline: needs environments (the pipeline deploys each environment as a stage of a wave); "
            'define them, e.g. "environments": {"dev": {...}, "prod": {...}}'
        )
    problems = [problem for rule in PIPELINE_RULES for problem in rule(pipeline, configs, shared_name)]
    if problems:
        raise fail("\n".join(problems))
    return pipeline


def _wave_of(pipeline: PipelineConfig, configs: Mapping[str, AppConfig]) -> dict[str, str]:
    """Each environment's (first) wave."""
    wave_of: dict[str, str] = {}
    for wave in pipeline.waves:
        for name in wave.environments:
            if name in configs and name not in wave_of:
                wave_of[name] = wave.name
    return wave_of


def wave_environments(pipeline: PipelineConfig, configs: Mapping[str, AppConfig], shared_name: str) -> list[str]:
    """Waves name environments, each in one wave."""
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
    return problems


def every_environment_delivered(
    pipeline: PipelineConfig, configs: Mapping[str, AppConfig], shared_name: str
) -> list[str]:
    wave_of = _wave_of(pipeline, configs)
    return [
        f"pipeline.waves: environment {quoted(name)} is in no wave; with the pipeline on, it delivers every environment"
        for name in configs
        if name not in wave_of
    ]


def delivered_into_named_environments(
    pipeline: PipelineConfig, configs: Mapping[str, AppConfig], shared_name: str
) -> list[str]:
    wave_of = _wave_of(pipeline, configs)
    return [
        f"pipeline.waves: environment {quoted(name)} needs account and region (environments.{name}.account/region): "
        "the pipeline deploys into a named account and region"
        for name, config in configs.items()
        if name in wave_of and not (config.account and config.region)
    ]


def pipeline_name(pipeline: PipelineConfig, configs: Mapping[str, AppConfig], shared_name: str) -> list[str]:
    """The pipeline's stack is no environment's."""
    taken = {stack_name_for(c.cluster_name) for c in configs.values()}
    if pipeline.pipeline_name(shared_name) in taken:
        return [
            f"pipeline.name: {quoted(pipeline.pipeline_name(shared_name))} is an environment's stack name; choose another"
        ]
    return []


# Every problem of every rule is reported, in this order.
PIPELINE_RULES: tuple[PipelineRule, ...] = (
    wave_environments,
    every_environment_delivered,
    delivered_into_named_environments,
    pipeline_name,
)


def distinct_cluster_names(configs: Mapping[str, AppConfig]) -> None:
    """ConfigError when two environments name the same cluster."""
    names = [c.cluster_name for c in configs.values()]
    if len(set(names)) != len(names):
        raise ConfigError(f"environments: cluster names must differ, got {', '.join(names)}")
