"""The Karpenter controller's IAM role, assumed through IRSA or EKS Pod Identity."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from aws_cdk import Aws, CfnJson
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from .names import IRSA_AUDIENCE, POD_IDENTITY_PRINCIPAL, service_account_subject


class ControllerCredentials(Enum):
    """How the controller's pods get the role's credentials."""

    IRSA = "irsa"  # a projected service-account token and the cluster's OIDC provider (works everywhere)
    POD_IDENTITY = "pod-identity"  # an EKS Pod Identity association (not on Fargate; needs the agent add-on)


class ControllerRole(Construct):
    """An IAM role only the given service account of the given cluster can assume.

    Trust: ``sts:AssumeRoleWithWebIdentity`` from the cluster's OIDC provider with ``StringEquals`` on
    both ``<issuer>:aud`` and ``<issuer>:sub`` -- exact values, no wildcards. With
    ``ControllerCredentials.POD_IDENTITY`` also ``sts:AssumeRole`` + ``sts:TagSession`` by EKS Pod
    Identity, only with the session tags of this cluster, namespace and service account, plus the
    association of that service account with the role. The IRSA statement stays, so that a running
    controller switched either way keeps its credentials until its pods are replaced (and through a
    rollback of the switch); Karpenter's AWS SDK prefers a web identity token where a pod has both.
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
        credentials: ControllerCredentials = ControllerCredentials.IRSA,
        cluster_name: str | None = None,
    ) -> None:
        """:param cluster_name: the cluster's name (with ``POD_IDENTITY``: the session tag the trust checks)."""
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
        self.credentials = credentials
        self.pod_identity: eks.CfnPodIdentityAssociation | None = None
        if credentials is ControllerCredentials.POD_IDENTITY:
            if cluster_name is None:
                raise ValueError(
                    "ControllerCredentials.POD_IDENTITY needs cluster_name (the trust checks its session tag)"
                )
            self.pod_identity = self._pod_identity(cluster, cluster_name, namespace, service_account)

    def _pod_identity(
        self, cluster: eks.ICluster, cluster_name: str, namespace: str, service_account: str
    ) -> eks.CfnPodIdentityAssociation:
        """EKS Pod Identity may assume the role for the service account (with the session tags of this cluster,
        namespace and service account only), and the association of that service account with the role."""
        trust = self.role.assume_role_policy
        assert trust is not None  # a Role always has one
        trust.add_statements(
            iam.PolicyStatement(
                actions=["sts:AssumeRole", "sts:TagSession"],
                principals=[iam.ServicePrincipal(POD_IDENTITY_PRINCIPAL)],
                conditions={
                    "StringEquals": {
                        "aws:SourceAccount": Aws.ACCOUNT_ID,
                        "aws:RequestTag/eks-cluster-name": cluster_name,
                        "aws:RequestTag/kubernetes-namespace": namespace,
                        "aws:RequestTag/kubernetes-service-account": service_account,
                    }
                },
            )
        )
        return eks.CfnPodIdentityAssociation(
            self,
            "PodIdentityAssociation",
            cluster_name=cluster.cluster_name,
            namespace=namespace,
            service_account=service_account,
            role_arn=self.role.role_arn,
        )
