"""An EKS cluster this app does not create, onto which Karpenter is installed (``existingCluster``): its settings,
each checked on its own, and the example the documentation gives of one."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator

from constructs_lib.karpenter.specs.base import CamelModel, optional_match, quoted
from constructs_lib.karpenter.specs.change import EC2_NODE_CLASS_SELECTORS, Change, change

from . import changes as facts
from .forms import _ID_FORMATS, _SUBNET_ID, _unique, formatted

# An existing cluster as its owner describes it (the documentation's account and ids).
EXISTING_CLUSTER_EXAMPLE: dict[str, Any] = {
    "kubectlRoleArn": "arn:aws:iam::111122223333:role/eks-cluster-admin",
    "openIdConnectProviderArn": "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com"
    "/id/0123456789ABCDEF0123456789ABCDEF",
    "clusterSecurityGroupId": "sg-0123456789abcdef0",
    "vpcId": "vpc-0123456789abcdef0",
    "subnetIds": ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"],
    "privateEndpoint": True,
    "authenticationMode": "API_AND_CONFIG_MAP",
}


class ExistingClusterConfig(CamelModel):
    """An EKS cluster this app does not create: Karpenter is installed onto it."""

    REFERENCE_NOTE: ClassVar[str] = "Karpenter on a cluster this app does not create"

    kubectl_role_arn: str = Field(
        description="IAM role CDK's kubectl handler assumes to install the charts and objects; it needs cluster-admin "
        "(an access entry with AmazonEKSClusterAdminPolicy) and must trust this account.",
        examples=["arn:aws:iam::111122223333:role/platform-kubectl"],
        json_schema_extra=change(Change.IN_PLACE, "RoleArn of the Kubernetes resources", facts.EXISTING_KUBECTL_ROLE),
    )
    open_id_connect_provider_arn: str = Field(
        description="The cluster's IAM OIDC provider (arn:...:oidc-provider/oidc.eks.<region>.amazonaws.com/id/<ID>): "
        "the controller's IRSA role trusts it.",
        examples=[
            "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/FEDCBA9876543210FEDCBA9876543210"
        ],
        json_schema_extra=change(Change.IN_PLACE, "AWS::IAM::Role AssumeRolePolicyDocument", facts.EXISTING_OIDC),
    )
    cluster_security_group_id: str = Field(
        description="The cluster security group EKS created; Karpenter's nodes join it (selected by id, never tagged).",
        examples=["sg-0fedcba9876543210"],
        json_schema_extra=change(
            Change.DYNAMIC_DRIFT,
            "EC2NodeClass spec.securityGroupSelectorTerms",
            EC2_NODE_CLASS_SELECTORS,
            upstream="spec.securityGroupSelectorTerms[].id",
        ),
    )
    vpc_id: str = Field(
        description="The cluster's VPC.",
        examples=["vpc-0fedcba9876543210"],
        json_schema_extra=change(
            Change.NOTHING_DEPLOYED, "the imported VPC (no template property)", facts.EXISTING_VPC
        ),
    )
    subnet_ids: list[str] = Field(
        min_length=2,
        description="Private subnets (at least 2 zones) Karpenter launches nodes into, selected by id.",
        examples=[["subnet-0123456789abcdef0", "subnet-0aaaabbbbccccdddd"]],
        json_schema_extra=change(
            Change.DYNAMIC_DRIFT,
            "EC2NodeClass spec.subnetSelectorTerms",
            EC2_NODE_CLASS_SELECTORS,
            upstream="spec.subnetSelectorTerms[].id",
        ),
    )
    private_endpoint: bool = Field(
        False,
        description="The API endpoint is private only: CDK's kubectl handler then runs in subnetIds, in the "
        "cluster security group.",
        json_schema_extra=change(Change.IN_PLACE, "the kubectl handler's VpcConfig", facts.EXISTING_PRIVATE_ENDPOINT),
    )
    authentication_mode: Literal["API", "API_AND_CONFIG_MAP", "CONFIG_MAP"] | None = Field(
        None,
        description="The cluster's authentication mode, when known; nodes join through an EKS access entry, "
        "so CONFIG_MAP is refused (unset: a synth warning).",
        json_schema_extra=change(Change.NOTHING_DEPLOYED, "the synth's checks", facts.EXISTING_AUTHENTICATION_MODE),
    )

    @field_validator(*_ID_FORMATS)
    @classmethod
    def _id_format(cls, value: str, info: ValidationInfo) -> str:
        return formatted(_ID_FORMATS, value, info)

    @field_validator("subnet_ids")
    @classmethod
    def _subnets(cls, value: list[str]) -> list[str]:
        for subnet in value:
            optional_match(subnet, _SUBNET_ID, f"{quoted(subnet)} must look like subnet-0123456789abcdef0")
        _unique("subnetIds", value, what="ids")
        return value

    @field_validator("authentication_mode")
    @classmethod
    def _mode(cls, value: str | None) -> str | None:
        if value == "CONFIG_MAP":
            raise ValueError(
                "Karpenter's nodes join through an EKS access entry, which a CONFIG_MAP cluster ignores (and this app "
                "does not edit the aws-auth ConfigMap of a cluster it does not own); switch the cluster to "
                "API_AND_CONFIG_MAP first (aws eks update-cluster-config --access-config "
                "authenticationMode=API_AND_CONFIG_MAP; it cannot be switched back)"
            )
        return value
