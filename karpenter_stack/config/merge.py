"""Step 2 of 4, merge: one environment's settings from the layers, and the layer each came from.

A setting comes from the first layer that contains its key, from the top: ``-c`` flags, the environment's
overrides (``environments.<name>``), ``cdk.json``, the profile, the built-in defaults (the model's, filled in
by the validation). Which layer *set* a key decides -- never whether a value happens to equal a default -- so a
value a user wrote is never replaced. Lists are never merged: a list a layer sets replaces the whole list.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any

from pydantic.alias_generators import to_snake

from .cluster_settings import DEFAULT_CLUSTER_NAME
from .errors import BUILT_IN, FLAG
from .model import CREATED_CLUSTER_ONLY, AppConfig

# What the production profile sets for keys no other layer contains (it never loosens anything).
SYSTEM_POOL = {
    "name": "system",
    "capacityTypes": ["on-demand"],
    "labels": {"workload-class": "system"},
    "taints": [{"key": "workload-class", "value": "system", "effect": "NoSchedule"}],
}


def profile_defaults(settings: Mapping[str, Any]) -> dict[str, Any]:
    """What the settings' profile sets."""
    if settings.get("profile") != "production":
        return {}
    profile = {
        "deletionProtection": True,
        "terminationProtection": True,
        "retainOnDestroy": True,
        "natGateways": settings.get("maxAzs", AppConfig.model_fields["max_azs"].default),
        "nodePools": [SYSTEM_POOL, {"name": "default"}],
    }
    if settings.get("nodeManifests"):  # pools of the files: the profile's would collide with them by name
        profile.pop("nodePools")
    if settings.get("existingCluster") is not None:  # no cluster or network of ours to protect or size
        profile = {k: v for k, v in profile.items() if to_snake(k) not in CREATED_CLUSTER_ONLY}
    return profile


@dataclass(frozen=True)
class Layered:
    """One environment's settings from every layer a user writes and the profile, and the layer each came
    from (a key in no layer is the model's built-in default)."""

    settings: dict[str, Any]
    origins: dict[str, str]
    # "environments.<name>." for an environment's, "" without environments: what its messages start with
    prefix: str = ""


def top_level(settings: Mapping[str, Any], origins: Mapping[str, str]) -> Layered:
    """The app's one environment, when it defines no ``environments``."""
    return _with_profile(dict(settings), dict(origins), prefix="")


def environment(
    name: str,
    overrides: Mapping[str, Any],
    shared: Mapping[str, Any],
    origins: Mapping[str, str],
    flags: Set[str],
) -> Layered:
    """Environment ``name``: its ``overrides`` over the shared settings, under the ``-c`` flags (``flags``: the
    shared keys that came from one)."""
    layer = f"environments.{name}"
    # Each environment's cluster is named <shared clusterName>-<environment> unless it names its own.
    settings = {
        **shared,
        "clusterName": f"{shared.get('clusterName', DEFAULT_CLUSTER_NAME)}-{name}",
        **overrides,
        **{k: shared[k] for k in flags if k != "clusterName"},
    }
    env_origins = {
        **origins,
        # (unless the environment names its own: the shared name, with the environment's suffix)
        "clusterName": f"{origins.get('clusterName', BUILT_IN)} + suffix -{name}",
        **{k: layer for k in overrides},
        **{k: FLAG for k in flags if k != "clusterName"},
    }
    return _with_profile(settings, env_origins, prefix=f"{layer}.")


def _with_profile(settings: dict[str, Any], origins: dict[str, str], prefix: str) -> Layered:
    # The profile sits below every layer a user writes: it fills only keys none of them contains.
    profile = profile_defaults(settings)
    return Layered(
        settings={**profile, **settings},
        origins={**{k: f"profile {settings['profile']}" for k in profile if k not in settings}, **origins},
        prefix=prefix,
    )
