"""Bare stacks for construct tests: one construct, an imported cluster, no app configuration."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam

from karpenter_stack import versions

CLUSTER_NAME = "bare"
ACCOUNT = "111122223333"  # the AWS documentation's example account
OIDC_PROVIDER_ARN = (
    f"arn:aws:iam::{ACCOUNT}:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF"
)
KUBECTL_ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/eks-cluster-admin"
SECURITY_GROUP_ID = "sg-0123456789abcdef0"


def bare_stack() -> cdk.Stack:
    # CDK's built-in CloudFormation validation off, as in the app (cfn-lint checks templates instead);
    # on, it costs ~1.8 s on the first synth of a session. Assets referenced where they are, as in every in-process
    # synth of the suite (tooling/configurations.py): each synth copied the 60 MB kubectl layer into its assembly.
    app = cdk.App(builtin_cloud_formation_validation=False, context={"aws:cdk:disable-asset-staging": True})
    return cdk.Stack(app, "Bare")


def imported_cluster(stack: cdk.Stack, kubernetes_version: str = "1.35") -> eks.ICluster:
    """An EKS cluster as another app would import it: name, kubectl role and layer, OIDC provider,
    cluster security group."""
    layer = versions.KubectlLayer.for_version(kubernetes_version).load()
    return eks.Cluster.from_cluster_attributes(
        stack,
        "Imported",
        cluster_name=CLUSTER_NAME,
        kubectl_role_arn=KUBECTL_ROLE_ARN,
        kubectl_layer=layer(stack, "KubectlLayer"),
        open_id_connect_provider=iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
            stack, "Oidc", OIDC_PROVIDER_ARN
        ),
        cluster_security_group_id=SECURITY_GROUP_ID,
    )
