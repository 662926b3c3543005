"""The app's configuration, split by job: ``model`` (settings and their rules), ``layers`` (loading
from CDK context in explicit layers), ``errors`` (messages), ``reference`` (the generated reference in docs/).

What the rest of the app uses is re-exported here.
"""

from .errors import ConfigError
from .layers import CONTEXT_KEYS, flag_settings, load_config, load_environments, load_pipeline
from .model import DEFAULT_CLUSTER_NAME, MAX_CLUSTER_NAME_LENGTH, AppConfig, ExistingClusterConfig, stack_name_for
from .pipeline import PipelineConfig, WaveSpec
from .reference import default_context, reference_markdown

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
    "WaveSpec",
    "reference_markdown",
]
