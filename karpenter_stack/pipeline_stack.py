"""Delivery to many accounts (``pipeline``): each environment becomes a Stage holding its cluster stack,
and a pipeline stack in the tooling account deploys the stages in waves.

An environment's stack keeps its stack name and every logical id inside a Stage, so turning the
pipeline on for clusters deployed by hand updates the same CloudFormation stacks (only path metadata
and the nested stacks' template URLs change): tests/test_pipeline.py compares the templates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Annotations, Environment, Stack, Stage
from constructs import Construct

from constructs_lib.delivery_pipeline import DeliveryPipeline, LiveReview, RepositorySource

from . import pipeline_tools
from .config import PipelineConfig, ResolvedEnvironment
from .stacks import environment_stack

# What the pipeline's synth step runs in the repository checkout: the README's test command, the
# security report (cdk-nag, cfn-lint, checkov), then the synth whose cloud assembly it deploys.
SYNTH_COMMANDS = ("make test", 'make security-report ARGS="--sarif-dir reports"', "make synth")


def live_review_commands(stacks: Sequence[str]) -> list[str]:
    """What the step before each environment's deploy runs in the checkout: the review of the environment's stack
    against what is deployed in its account (read through the account's CDK bootstrap lookup role), which exits
    non-zero -- failing the stage -- on a change the deployed stack cannot take (tooling/review/live.py)."""
    selected = " ".join(f"--stack {name}" for name in stacks)
    return [f'make review LIVE=1 ARGS="--lookup-role {selected}"']


class EnvironmentStage(Stage):
    """One environment: its cluster stack, under the stack name it has without the pipeline."""

    def __init__(self, scope: Construct, id: str, *, environment: ResolvedEnvironment, **kwargs: Any) -> None:
        config = environment.config
        super().__init__(scope, id, env=Environment(account=config.account, region=config.region), **kwargs)
        self.stack = environment_stack(self, environment, stack_name=environment.stack_name)


class DeliveryPipelineStack(Stack):
    """The pipeline, in its own account and region; its waves deploy the environments' stages."""

    def __init__(
        self,
        scope: Construct,
        *,
        config: PipelineConfig,
        cluster_name: str,
        stages: Mapping[str, EnvironmentStage],
        flags: list[str],
    ) -> None:
        name = config.pipeline_name(cluster_name)
        super().__init__(
            scope,
            name,
            env=Environment(account=config.account, region=config.region),
            description=f"Delivery pipeline of the EKS + Karpenter app ({config.repository}@{config.branch})",
        )
        self.delivery = DeliveryPipeline(
            self,
            "Delivery",
            source=RepositorySource(config.repository, config.branch, config.connection_arn),
            pipeline_name=name,
            synth_commands=SYNTH_COMMANDS,
            cli_version=pipeline_tools.cdk_cli_version(),
            cdk_assets_version=pipeline_tools.CDK_ASSETS_VERSION,
            build_runtimes=pipeline_tools.build_runtimes(),
            live_review=LiveReview(live_review_commands),
        )
        for wave in config.waves:
            self.delivery.add_wave(wave.name, [stages[e] for e in wave.environments], approval=wave.approval)
        self.delivery.build()
        if flags:
            Annotations.of(self).add_warning_v2(
                "eks-karpenter:pipeline-flags",
                f"settings given with -c ({', '.join(sorted(flags))}) are not in cdk.json: the pipeline's own synth "
                "reads cdk.json from the repository, so its next run deploys without them; commit them to cdk.json",
            )
