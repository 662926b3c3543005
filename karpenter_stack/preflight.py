"""What stops a run before anything is built: the working copy's configuration (cdk.json, CONTEXT_FILE, -c
flags) is invalid, or an environment with an account has no availability zones in cdk.context.json, so an
offline synth cannot build it. `make test` and `make check` ask this first (tooling/cdk.py --check-config):
one message, exit 2, no test started."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from . import baseline
from .config import AppConfig, ConfigError, load_environments, load_pipeline
from .context_sources import ContextFileError, cached_lookups, cdk_json_context, working_context


def zones_key(account: str, region: str) -> str:
    """The key under which the CDK CLI caches an environment's availability zones in cdk.context.json."""
    return f"availability-zones:account={account}:region={region}"


def lookup_note(key: str, account: str, region: str) -> str:
    """What to do about a lookup that cdk.context.json does not hold."""
    zones = key.startswith("availability-zones:")
    what = f"availability zones for account {account}, region {region}" if zones else f"cached lookup {key}"
    hint = (
        f" or add the key by hand with the zone names of `aws ec2 describe-availability-zones --region {region}`"
        if zones
        else ""
    )
    return (
        f"cdk.context.json has no {what} (key {json.dumps(key)}): run `make synth` once with "
        f"credentials for account {account} (the CDK CLI caches the answer there){hint}, then commit "
        "cdk.context.json"
    )


def working_environments(context_file: str | None, args: Sequence[str], root: Path) -> dict[str, AppConfig]:
    """The working copy's environments, loaded as the app loads them (ConfigError / ContextFileError)."""
    context = working_context(context_file, args, root=root)
    file_context = cdk_json_context(root)
    configs = load_environments(context, file_context=file_context)
    load_pipeline(context, configs, file_context=file_context)
    baseline.check(configs, root)  # what the deployed cluster (your accepted baseline) cannot take
    return configs


def missing_zones(configs: Iterable[AppConfig], root: Path) -> list[str]:
    """A note for each environment with an account whose availability zones cdk.context.json lacks."""
    cache = cached_lookups(root)
    return [
        lookup_note(zones_key(c.account, c.region), c.account, c.region)
        for c in configs
        if c.account and c.region and zones_key(c.account, c.region) not in cache
    ]


def stop_reason(context_file: str | None, args: Sequence[str], root: Path) -> tuple[str, str] | None:
    """(what to print, one-line summary) when a run must not start; None when it may."""
    try:
        configs = working_environments(context_file, args, root)
    except ConfigError as err:
        return f"Configuration error:\n{err}", "your configuration is invalid (above)"
    except ContextFileError as err:
        return str(err), "your configuration is invalid (above)"
    notes = missing_zones(configs.values(), root)
    if notes:
        return "\n".join(
            f"Note: {n}" for n in notes
        ), "your configuration needs lookups cdk.context.json does not hold (above)"
    return None
