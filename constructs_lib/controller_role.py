"""The Karpenter controller's IAM role, assumed through IRSA."""

from __future__ import annotations

from typing import Sequence

from aws_cdk import CfnJson
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from .names import IRSA_AUDIENCE, service_account_subject


class ControllerRole(Construct):
    """An IAM role only the given service account of the given cluster can assume.

    Trust: ``sts:AssumeRoleWithWebIdentity`` from the cluster's OIDC provider with ``StringEquals`` on
    both ``<issuer>:aud`` and ``<issuer>:sub`` -- exact values, no wildcards. IRSA rather than EKS Pod
    Identity because Pod Identity does not work for pods on Fargate.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: eks.ICluster,
        namespace: str,
        service_account: str,
        managed_policy_arns: Sequence[str],
    ) -> None:
        super().__init__(scope, id)
        provider = cluster.open_id_connect_provider
        issuer = provider.open_id_connect_provider_issuer
        # The issuer is a token, and CloudFormation does not accept tokens as JSON keys: CfnJson
        # resolves the whole condition block at deploy time.
        conditions = CfnJson(
            self,
            "TrustConditions",
            value={
                f"{issuer}:aud": IRSA_AUDIENCE,
                f"{issuer}:sub": service_account_subject(namespace, service_account),
            },
        )
        self.role = iam.Role(
            self,
            "Role",
            description=f"Karpenter controller ({namespace}/{service_account})",
            assumed_by=iam.FederatedPrincipal(
                provider.open_id_connect_provider_arn,
                {"StringEquals": conditions},
                "sts:AssumeRoleWithWebIdentity",
            ),
            managed_policies=[
                iam.ManagedPolicy.from_managed_policy_arn(self, f"Policy{i}", arn)
                for i, arn in enumerate(managed_policy_arns)
            ],
        )
        self.role_arn = self.role.role_arn
