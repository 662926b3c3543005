"""The app's configuration, split by job: ``model`` (settings and their rules), ``layers`` (loading
from CDK context in explicit layers), ``errors`` (messages), ``reference`` (the README's tables).

What the rest of the app uses is re-exported here.
"""

from .errors import ConfigError
from .layers import CONTEXT_KEYS, load_config, load_environments
from .model import DEFAULT_CLUSTER_NAME, MAX_CLUSTER_NAME_LENGTH, AppConfig, ExistingClusterConfig
from .reference import default_context, reference_markdown

__all__ = [
    "AppConfig",
    "CONTEXT_KEYS",
    "ConfigError",
    "DEFAULT_CLUSTER_NAME",
    "ExistingClusterConfig",
    "MAX_CLUSTER_NAME_LENGTH",
    "default_context",
    "load_config",
    "load_environments",
    "reference_markdown",
]
