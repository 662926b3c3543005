"""What the app's two stacks share: environment, protection, configuration warnings, Karpenter's
outputs, and the passes that run once everything is built."""

from __future__ import annotations

from typing import Any

from aws_cdk import Annotations, CfnOutput, Environment, Stack
from constructs import Construct

from constructs_lib.destroy_policy import apply_destroy_policy
from constructs_lib.karpenter import Karpenter, NodeObjects
from constructs_lib.key_policies import deny_direct_grants
from constructs_lib.kubectl_timeouts import bound_kubectl_operations
from constructs_lib.stack_protection import TerminationProtection

from . import gitops
from .config import ResolvedEnvironment


class AppStack(Stack):
    """A stack built from one resolved environment (:attr:`resolved`; its configuration: :attr:`config`)."""

    def __init__(
        self, scope: Construct, id: str, *, environment: ResolvedEnvironment, description: str, **kwargs: Any
    ) -> None:
        config = environment.config
        env = Environment(account=config.account, region=config.region) if config.account or config.region else None
        super().__init__(
            scope,
            id,
            env=env,
            description=description,
            # Refuses DeleteStack up front; EKS deletion protection alone fails only once everything
            # else in the stack is already gone (the cluster is deleted last).
            termination_protection=config.termination_protection,
            **kwargs,
        )
        self.resolved = environment
        self.config = config
        if config.termination_protection:
            # CDK Pipelines ignores termination_protection: the stack protects itself (by hand, the CLI does too)
            TerminationProtection(self, "TerminationProtection")
        for warning in config.warnings:
            Annotations.of(self).add_warning_v2("eks-karpenter:configuration", warning)
        for note in config.notes:
            Annotations.of(self).add_info(note)

    def add_karpenter_outputs(self, karpenter: Karpenter) -> None:
        CfnOutput(
            self, "NodeRoleArn", value=karpenter.node_role_arn, description="IAM role of Karpenter-launched nodes"
        )
        CfnOutput(
            self,
            "ControllerRoleArn",
            value=karpenter.controller_role.role_arn,
            description="IRSA role of the Karpenter controller"
            if karpenter.controller_role.pod_identity is None
            else "IAM role of the Karpenter controller (EKS Pod Identity, and IRSA)",
        )
        CfnOutput(
            self, "InterruptionQueueName", value=karpenter.queue_name, description="SQS queue of interruption events"
        )
        if karpenter.props.node_objects is not NodeObjects.STACK:  # what a GitOps tool applies, or takes over
            gitops.record(self, self.stack_name, karpenter.gitops_objects, karpenter.props.node_objects.value)
        if karpenter.volume_key is not None:
            # The key of node classes with volumeKmsKey create: no grant but those AWS services make for a resource,
            # as for the app's other keys (EC2 makes its grants for the volumes so).
            deny_direct_grants(karpenter.volume_key)
            CfnOutput(
                self,
                "VolumeKeyArn",
                value=karpenter.volume_key.key_arn,
                description="KMS key of the EBS volumes of Karpenter's nodes (volumeKmsKey create)",
            )

    def finish(self) -> None:
        """Once everything is built: what a destroy keeps, and no kubectl operation that can leave
        CloudFormation waiting an hour."""
        apply_destroy_policy(self, retain=self.config.retain_on_destroy)
        bound_kubectl_operations(self)
