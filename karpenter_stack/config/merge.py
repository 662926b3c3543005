"""Step 2 of 4, merge: one environment's settings from the layers, and the layer each came from.

A setting comes from the first layer that contains its key, from the top: ``-c`` flags, the environment's
overrides (``environments.<name>``), ``cdk.json``, the profile, the built-in defaults (the model's, filled in
by the validation). Which layer *set* a key decides -- never whether a value happens to equal a default -- so a
value a user wrote is never replaced. Lists are never merged: a list a layer sets replaces the whole list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass
from typing import Any

from pydantic.alias_generators import to_snake

from .cluster_settings import DEFAULT_CLUSTER_NAME
from .errors import BUILT_IN, FLAG
from .model import CREATED_CLUSTER_ONLY, AppConfig, stack_name_for

# A stack's cluster as deployed, as far as the app knows it (the accepted baseline): stack name -> (where that was
# read, its authenticationMode, None for unset) or None for a cluster not deployed yet.
DeployedMode = Callable[[str], tuple[str, str | None] | None]

# The production profile's authenticationMode for a new cluster: administrators (and a stack's ClusterAdminRole)
# as EKS access entries with AmazonEKSClusterAdminPolicy, never system:masters in aws-auth; the node role keeps its
# aws-auth mapping beside its EC2_LINUX access entry. A deployed cluster keeps its mode (PROFILE_KEPT).
NEW_CLUSTER_MODE = "API_AND_CONFIG_MAP"
# The origin of an authenticationMode the profile kept as deployed: "profile production, as deployed (<file>)".
PROFILE_KEPT = "as deployed"

# What the production profile sets for keys no other layer contains (it never loosens anything).
SYSTEM_POOL = {
    "name": "system",
    "capacityTypes": ["on-demand"],
    "labels": {"workload-class": "system"},
    "taints": [{"key": "workload-class", "value": "system", "effect": "NoSchedule"}],
}


def profile_defaults(settings: Mapping[str, Any], deployed: DeployedMode | None = None) -> dict[str, Any]:
    """What the settings' profile sets (``deployed``: the stack's cluster as deployed; None: a new cluster)."""
    return {k: v for k, (v, _) in _profile(settings, deployed).items()}


def _profile(settings: Mapping[str, Any], deployed: DeployedMode | None) -> dict[str, tuple[Any, str]]:
    """What the settings' profile sets, each value with the origin messages name."""
    if settings.get("profile") != "production":
        return {}
    name = "profile production"
    profile: dict[str, tuple[Any, str]] = {
        "deletionProtection": (True, name),
        "terminationProtection": (True, name),
        "retainOnDestroy": (True, name),
        "natGateways": (settings.get("maxAzs", AppConfig.model_fields["max_azs"].default), name),
        "nodePools": ([SYSTEM_POOL, {"name": "default"}], name),
        "authenticationMode": _authentication_mode(settings, deployed),
    }
    if settings.get("nodeManifests"):  # pools of the files: the profile's would collide with them by name
        profile.pop("nodePools")
    if settings.get("existingCluster") is not None:  # no cluster or network of ours to protect or size
        profile = {k: v for k, v in profile.items() if to_snake(k) not in CREATED_CLUSTER_ONLY}
    return profile


def _authentication_mode(settings: Mapping[str, Any], deployed: DeployedMode | None) -> tuple[str | None, str]:
    """A new cluster starts on access entries; a deployed one keeps the mode it runs with -- unset or CONFIG_MAP
    too: the move is one way in EKS (aws-cdk's handler refuses every step back), so the profile never makes it
    silently (the synth warns with the steps, config/access_steps.py)."""
    found = deployed(stack_name_for(str(settings.get("clusterName", DEFAULT_CLUSTER_NAME)))) if deployed else None
    if found is None:
        return NEW_CLUSTER_MODE, "profile production"
    source, mode = found
    return mode, f"profile production, {PROFILE_KEPT} ({source})"


@dataclass(frozen=True)
class Layered:
    """One environment's settings from every layer a user writes and the profile, and the layer each came
    from (a key in no layer is the model's built-in default)."""

    settings: dict[str, Any]
    origins: dict[str, str]
    # "environments.<name>." for an environment's, "" without environments: what its messages start with
    prefix: str = ""


def top_level(settings: Mapping[str, Any], origins: Mapping[str, str], deployed: DeployedMode | None = None) -> Layered:
    """The app's one environment, when it defines no ``environments`` (``deployed``: its cluster as deployed)."""
    return _with_profile(dict(settings), dict(origins), prefix="", deployed=deployed)


def environment(
    name: str,
    overrides: Mapping[str, Any],
    shared: Mapping[str, Any],
    origins: Mapping[str, str],
    flags: Set[str],
    deployed: DeployedMode | None = None,
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
    return _with_profile(settings, env_origins, prefix=f"{layer}.", deployed=deployed)


def _with_profile(
    settings: dict[str, Any], origins: dict[str, str], prefix: str, deployed: DeployedMode | None
) -> Layered:
    # The profile sits below every layer a user writes: it fills only keys none of them contains.
    profile = _profile(settings, deployed)
    return Layered(
        settings={**{k: v for k, (v, _) in profile.items()}, **settings},
        origins={**{k: origin for k, (_, origin) in profile.items() if k not in settings}, **origins},
        prefix=prefix,
    )
