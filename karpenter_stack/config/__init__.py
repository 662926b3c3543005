"""The app's configuration, in four steps, one module each: ``parse`` (the app's keys of the CDK context and
their values), ``merge`` (the layers: defaults < profile < cdk.json < environment < -c), ``validate`` (the
model's checks of each setting, then the topic validators across settings of ``cluster_rules`` and
``node_rules``), ``resolve`` (what each environment stands for, as the one object its stack reads); ``load`` runs
the first three in order.

The settings are declared once in ``model`` (and ``pipeline``, the delivery pipeline's); ``tree`` walks the
models from their roots, for ``errors`` (the messages) and ``reference`` (docs/configuration-reference.md). What the rest of the app uses is re-exported
here.
"""

from .cluster_settings import DEFAULT_CLUSTER_NAME, MAX_CLUSTER_NAME_LENGTH
from .errors import ConfigError
from .existing_cluster import ExistingClusterConfig
from .load import load_config, load_environments, load_pipeline
from .model import AppConfig, stack_name_for
from .parse import CONTEXT_KEYS, flag_settings
from .pipeline import PipelineConfig, WaveSpec
from .reference import default_context, reference_markdown
from .resolve import ResolvedApp, ResolvedEnvironment, resolve_app, resolve_environment

__all__ = [
    "stack_name_for",
    "AppConfig",
    "CONTEXT_KEYS",
    "ConfigError",
    "DEFAULT_CLUSTER_NAME",
    "ExistingClusterConfig",
    "MAX_CLUSTER_NAME_LENGTH",
    "default_context",
    "flag_settings",
    "load_config",
    "load_environments",
    "load_pipeline",
    "PipelineConfig",
    "ResolvedApp",
    "ResolvedEnvironment",
    "WaveSpec",
    "reference_markdown",
    "resolve_app",
    "resolve_environment",
]
