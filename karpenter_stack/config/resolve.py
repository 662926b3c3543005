"""Step 4 of 4, resolve: each validated configuration with what it stands for -- the Karpenter template of its
version, the EKS version, kubectl layer and add-on versions of its Kubernetes version, the Karpenter construct's
props -- as the one object a stack reads (:class:`ResolvedEnvironment`), and the app's environments and pipeline
as one (:class:`ResolvedApp`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from aws_cdk import aws_eks as eks

from constructs_lib.karpenter.names import POD_IDENTITY_AGENT
from constructs_lib.karpenter.props import KarpenterProps

from .. import versions
from .load import load_environments, load_pipeline, shared_cluster_name
from .model import AppConfig, stack_name_for
from .parse import flag_settings
from .pipeline import PipelineConfig


@dataclass(frozen=True)
class ResolvedEnvironment:
    """One environment, as its stack builds it."""

    name: str  # "" when the app defines no environments
    config: AppConfig
    template_file: Path  # Karpenter's CloudFormation template of config.karpenter_version
    kubernetes_version: eks.KubernetesVersion
    kubectl_layer: type  # the kubectl layer class of config.kubernetes_version
    # EKS managed add-ons -> pinned version (None: EKS's default for the cluster's version)
    addon_versions: Mapping[str, str | None]

    @property
    def stack_name(self) -> str:
        return stack_name_for(self.config.cluster_name)

    def karpenter_props(self, **placement: Any) -> KarpenterProps:
        """The Karpenter construct's props: the settings that are props as they are (``KarpenterProp``), the
        template of their Karpenter version, the Kubernetes version (the construct checks the AMI aliases against
        it), and what the stack places it with (``placement``: the cluster, how nodes are authorized, what the
        controller and the nodes come after, how they select subnets)."""
        return KarpenterProps(
            template_file=self.template_file,
            kubernetes_version=self.config.kubernetes_version,
            **self.config.karpenter_settings(),
            **placement,
        )


def resolve_environment(name: str, config: AppConfig) -> ResolvedEnvironment:
    """``config`` (validated: every version here is one this app supports) resolved."""
    addons = versions.addon_versions(config.kubernetes_version, config.pinned_addon_versions)
    if config.controller_credentials == "pod-identity":
        # The agent (a DaemonSet on the node group) hands the controller's pods their credentials.
        addons[POD_IDENTITY_AGENT] = config.pinned_addon_versions.get(POD_IDENTITY_AGENT)
    return ResolvedEnvironment(
        name=name,
        config=config,
        template_file=versions.karpenter_template(config.karpenter_version),
        kubernetes_version=versions.eks_kubernetes_version(config.kubernetes_version),
        kubectl_layer=versions.KubectlLayer.for_version(config.kubernetes_version).load(),
        addon_versions=addons,
    )


@dataclass(frozen=True)
class ResolvedApp:
    """Every environment, and the delivery pipeline when there is one."""

    environments: dict[str, ResolvedEnvironment]
    pipeline: PipelineConfig | None
    shared_cluster_name: str  # the top-level clusterName (the pipeline's name derives from it)
    flags: list[str]  # the settings given with -c (the pipeline's synth passes them on)

    @property
    def configs(self) -> dict[str, AppConfig]:
        return {name: environment.config for name, environment in self.environments.items()}


def resolve_app(
    context: Mapping[str, Any], *, today: date | None = None, file_context: Mapping[str, Any] | None = None
) -> ResolvedApp:
    """Parse, merge, validate and resolve the app's context (ConfigError naming every problem)."""
    configs = load_environments(context, today=today, file_context=file_context)
    pipeline = load_pipeline(context, configs, file_context=file_context)
    return ResolvedApp(
        environments={name: resolve_environment(name, config) for name, config in configs.items()},
        pipeline=pipeline,
        shared_cluster_name=shared_cluster_name(context),
        flags=flag_settings(context, file_context),
    )
