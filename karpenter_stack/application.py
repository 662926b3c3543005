"""Build the app's stacks from an App's context (shared by app.py, the tests and the reviewer report)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import date
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import cx_api

from constructs_lib.karpenter.nag import acknowledging

from . import baseline, context_sources
from .cluster_stack import KarpenterClusterStack
from .config import ResolvedApp, resolve_app
from .existing_cluster_stack import KarpenterOnExistingClusterStack
from .preflight import lookup_note
from .security import register_packs
from .stacks import environment_stack


def new_app(**kwargs: Any) -> cdk.App:
    """The app, as app.py, the tests and the scripts create it.

    CDK's built-in CloudFormation validator is off: it took ~1.8 s of a ~3.8 s synth and duplicates
    cfn-lint, which checks every synthesized template in the test suite and in `make security-report`
    (CI). cdk-nag, also a validation plugin, still runs on every synth."""
    return cdk.App(builtin_cloud_formation_validation=False, **kwargs)


def build(
    app: cdk.App,
    *,
    acknowledge: bool = True,
    today: date | None = None,
    file_context: Mapping[str, Any] | None = None,
) -> list[KarpenterClusterStack | KarpenterOnExistingClusterStack]:
    """Validate the app's context, register the cdk-nag packs and add one cluster stack per
    environment (one stack when no environments are configured). Raises ConfigError before creating
    anything if any environment's configuration is invalid.

    ``acknowledge=False`` builds without acknowledgments, to count the raw findings (reviewer report).
    """
    stacks, register = build_deferred(app, today=today, acknowledge=acknowledge, file_context=file_context)
    register()
    return stacks


def build_deferred(
    app: cdk.App,
    *,
    today: date | None = None,
    acknowledge: bool = True,
    file_context: Mapping[str, Any] | None = None,
) -> tuple[list[KarpenterClusterStack | KarpenterOnExistingClusterStack], Callable[[], None]]:
    """:func:`build`, with the acknowledgments registered only when the returned function is called:
    the findings before and after acknowledgments come from one build (reviewer report, tests).

    ``file_context`` is the ``cdk.json`` layer the settings are told apart from (``-c`` flags are what
    differs): by default the project's (the working directory's, where the CDK CLI runs the app)."""
    context = app.node.get_all_context()
    if file_context is None:
        file_context = context_sources.cdk_json_context()
    resolved = resolve_app(context, today=today, file_context=file_context)
    # Packs are validation plugins of the whole app, so every stack is checked by (and acknowledges
    # for) every pack any environment enables.
    packs = register_packs(app, sorted({p for c in resolved.configs.values() for p in c.additional_nag_packs}))
    # Constructs acknowledge their own findings as they are built; only those of the packs that run
    # are registered (none when acknowledge=False).
    with acknowledging(packs if acknowledge else (), defer=True) as batch:
        stacks = _stacks(app, resolved)
    # What the deployed cluster (your accepted baseline) cannot take: against the cluster Config just built (the
    # app is in memory; nothing is written before this passes).
    for stack in stacks:
        baseline.remember_built(stack)
        baseline.say_dropped_admin(stack)
    baseline.check(resolved.configs)
    return stacks, batch.register


def _stacks(app: cdk.App, resolved: ResolvedApp) -> list[KarpenterClusterStack | KarpenterOnExistingClusterStack]:
    """One stack per environment, or with the pipeline, one stage per environment and the pipeline's stack."""
    if resolved.pipeline is None:
        return [environment_stack(app, environment) for environment in resolved.environments.values()]
    # (imported here: CDK Pipelines' modules cost a synth without a pipeline ~30 ms)
    from .pipeline_stack import DeliveryPipelineStack, EnvironmentStage

    # Each environment in a Stage (same stack name, same logical ids), deployed by the pipeline.
    stages = {
        name: EnvironmentStage(app, name, environment=environment)
        for name, environment in resolved.environments.items()
    }
    DeliveryPipelineStack(
        app,
        config=resolved.pipeline,
        cluster_name=resolved.shared_cluster_name,
        stages=stages,
        flags=resolved.flags,
    )
    return [stage.stack for stage in stages.values()]


_LOOKUP_FIELD = re.compile(r"(account|region)=([^:]+)", re.ASCII)


def failed_lookups(context: Mapping[str, Any]) -> list[str]:
    """One line per lookup the CDK CLI tried and could not make (no credentials for that account): the CLI runs the
    app again with the key set to its error (``$providerError``), and the app stops there, saying what to do,
    instead of building with placeholder values that the CLI then refuses in several lines."""
    lines = []
    for key, value in context.items():
        if isinstance(value, dict) and "$providerError" in value:
            fields = dict(_LOOKUP_FIELD.findall(key))
            lines.append(lookup_note(key, fields.get("account", "?"), fields.get("region", "?")))
    return lines


def missing_lookups(assembly: cx_api.CloudAssembly) -> list[str]:
    """One line per lookup the synth needed that ``cdk.context.json`` does not hold: the CDK CLI would make it
    with credentials for that account; offline, nothing can."""
    # (read from the manifest file: jsii cannot hand over a manifest whose stacks are not written yet)
    manifest = json.loads((Path(assembly.directory) / "manifest.json").read_text())
    return [
        lookup_note(str(m["key"]), m.get("props", {}).get("account", "?"), m.get("props", {}).get("region", "?"))
        for m in manifest.get("missing", [])
    ]
