"""The app's configuration model: every setting, its type, default, description and rules.

Node classes and node pools are the Karpenter construct's own specs (constructs_lib.specs);
this model adds what the app decides: the cluster, its network, hosting, protection and versions.
The model checks each setting on its own; the rules across settings are ``validate``'s topic validators.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, overload

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator

from constructs_lib.node_manifests import CLUSTER_NAME_VARIABLE, VARIABLE_NAME
from constructs_lib.specs.base import CamelModel, optional_match, quoted
from constructs_lib.specs.change import (
    CHART_OUTSIDE_POD_TEMPLATE,
    CHART_POD_TEMPLATE,
    EC2_NODE_CLASS_SELECTORS,
    Change,
    change,
)
from constructs_lib.specs.controller import ControllerSpec
from constructs_lib.specs.ec2 import EC2_ID, INSTANCE_TYPE, unknown_instance_type
from constructs_lib.specs.files import project_path
from constructs_lib.specs.node_class import NodeClassSpec
from constructs_lib.specs.node_overlay import NodeOverlaySpec
from constructs_lib.specs.node_pool import NodePoolSpec
from constructs_lib.specs.rules import duplicates

from . import changes as facts
from .addresses import whole_internet

DEFAULT_CLUSTER_NAME = "eks-karpenter"


def stack_name_for(cluster_name: str) -> str:
    """The stack is named after its cluster; stack names allow no '_'."""
    return cluster_name.replace("_", "-")


# IAM role names are at most 64 characters and the template names the node role
# KarpenterNodeRole-<cluster>.
MAX_CLUSTER_NAME_LENGTH = 64 - len("KarpenterNodeRole-")
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
_CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]*$")
_ROLE_NAME = re.compile(r"[A-Za-z0-9+=,.@_-]{1,64}", re.ASCII)
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SNS_TOPIC_ARN = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$")
_ADDON_VERSION = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$")
_VPC_ID = EC2_ID["vpc"]
_ACCOUNT = re.compile(r"^[0-9]{12}$")
_RELEASE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")
# AWS region names: <area>[-gov|-iso*]-<direction>-<n> (us-east-1, eu-central-2, us-gov-west-1, ap-southeast-7).
_REGION = re.compile(
    r"^[a-z]{2}(-gov|-iso[a-z]?)?-(north|south|east|west|central|northeast|northwest|southeast|"
    r"southwest)-[0-9]{1,2}$"
)
_SUBNET_ID, _SECURITY_GROUP_ID = EC2_ID["subnet"], EC2_ID["sg"]
ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/([\w+=,.@-]+/)*[\w+=,.@-]{1,64}$", re.ASCII)
_KUBERNETES_VERSION = re.compile(r"^1\.[0-9]+$")
_OIDC_PROVIDER_ARN = re.compile(
    r"^arn:aws[a-z-]*:iam::[0-9]{12}:oidc-provider/oidc\.eks\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/id/[A-Za-z0-9]+$"
)
# existingCluster field -> the form AWS gives it, and the message naming that form.
_ID_FORMATS = {
    "kubectl_role_arn": (ROLE_ARN, "must be an IAM role ARN like arn:aws:iam::<account>:role/<name>"),
    "open_id_connect_provider_arn": (
        _OIDC_PROVIDER_ARN,
        "must be an EKS OIDC provider ARN like arn:aws:iam::"
        "<account>:oidc-provider/oidc.eks.<region>.amazonaws.com/id/<ID>",
    ),
    "cluster_security_group_id": (_SECURITY_GROUP_ID, "must look like sg-0123456789abcdef0"),
    "vpc_id": (_VPC_ID, "must look like vpc-0123456789abcdef0"),
}
# Settings whose value has one form (what a CDK or CloudFormation parser, or AWS, expects) -> that form
# and the message naming it.
_FORMATS = {
    "kubernetes_version": (_KUBERNETES_VERSION, "must be a Kubernetes minor version of the form 1.NN, like 1.36"),
    "karpenter_version": (_RELEASE, "must be a Karpenter release like 1.14.1"),
    "account": (_ACCOUNT, "must be a 12-digit AWS account id"),
    "region": (_REGION, "must be an AWS region name like eu-west-1 or us-gov-west-1"),
    "system_node_instance_type": (INSTANCE_TYPE, "must be an EC2 instance type like t3.medium or m7g.large"),
    "alarm_topic_arn": (_SNS_TOPIC_ARN, "must be an SNS topic ARN like arn:aws:sns:<region>:<account>:<topic>"),
    "vpc_id": (_VPC_ID, "must look like vpc-0123456789abcdef0"),
}


@overload
def formatted(table: Mapping[str, tuple[re.Pattern[str], str]], value: str, info: ValidationInfo) -> str: ...
@overload
def formatted(
    table: Mapping[str, tuple[re.Pattern[str], str]], value: str | None, info: ValidationInfo
) -> str | None: ...
def formatted(table: Mapping[str, tuple[re.Pattern[str], str]], value: str | None, info: ValidationInfo) -> str | None:
    """A field validator's body for settings with one form: ``table`` maps the field to its pattern and
    the message naming that form."""
    pattern, message = table[info.field_name or ""]
    return optional_match(value, pattern, message)


@dataclass(frozen=True)
class KarpenterProp:
    """Marks a setting that is, as it is, a prop of the Karpenter construct (``KarpenterProps``): under the
    setting's own name, or ``name``. The app builds the construct's props from the settings so marked."""

    name: str | None = None


@dataclass(frozen=True)
class _CreatedCluster:
    """Marks a setting that shapes a cluster this app creates: with existingCluster nobody may set it (and the
    profile does not fill it in)."""


CREATED_CLUSTER = _CreatedCluster()


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


class AppConfig(CamelModel):
    """Everything the app builds is decided here."""

    profile: Literal["standard", "production"] = Field(
        "standard",
        description="production: deletion and termination protection, keys and logs kept on destroy, a NAT gateway per AZ, an on-demand system pool, pinned AMIs and administrators required.",
        json_schema_extra=change(
            Change.INTERRUPTS,
            "the settings the profile fills in, and its system NodePool",
            facts.PROFILE,
            needs={
                "nodeClasses": [{"name": "default", "amiAlias": "al2023@v20260801"}],
                "administrators": ["arn:aws:iam::111122223333:role/platform-admins"],
            },
        ),
    )
    cluster_name: Annotated[str, KarpenterProp()] = Field(
        DEFAULT_CLUSTER_NAME,
        description="EKS cluster name; also names the queue and IAM resources.",
        examples=["eks-karpenter-b"],
        json_schema_extra=change(
            Change.ANOTHER_STACK, "the stack's name and every name derived from it", facts.CLUSTER_NAME
        ),
    )
    kubernetes_version: str = Field(
        "1.36",
        description="EKS Kubernetes version (1.NN); needs its kubectl layer package.",
        examples=["1.35"],
        json_schema_extra=change(Change.ONE_WAY, "Custom::AWSCDK-EKS-Cluster Config.version", facts.KUBERNETES_VERSION),
    )
    karpenter_version: Annotated[str, KarpenterProp("version")] = Field(
        "1.14.1",
        description="Karpenter release: one of the imported releases (1.13.1, 1.14.1; `make karpenter-import "
        "VERSION=<x.y.z>` imports another); its charts, CRDs, feature gates and template are the ones checked.",
        examples=["1.13.1"],
        json_schema_extra=change(
            Change.RESTARTS_CONTROLLER, "Custom::AWSCDK-EKS-HelmChart Version", facts.KARPENTER_VERSION
        ),
    )
    karpenter_namespace: Annotated[str, KarpenterProp("namespace")] = Field(
        "kube-system",
        description="Namespace of the Karpenter controller.",
        examples=["karpenter"],
        json_schema_extra=change(Change.REFUSED, "Custom::AWSCDK-EKS-HelmChart Namespace", facts.HELM_NAMESPACE),
    )
    karpenter_service_account: Annotated[str, KarpenterProp("service_account")] = Field(
        "karpenter",
        description="Service account of the Karpenter controller.",
        examples=["karpenter-controller"],
        json_schema_extra=change(
            Change.RESTARTS_CONTROLLER,
            "chart value serviceAccount.name",
            CHART_POD_TEMPLATE,
            differs="written out so that the controller role's IRSA trust (system:serviceaccount:<namespace>:<name>) "
            "and the Pod Identity association can name it; the chart's empty name stands for the release's name, "
            "karpenter, the same account",
        ),
    )
    account: str | None = Field(
        None,
        description="AWS account id; unset = environment-agnostic stack.",
        json_schema_extra=change(
            Change.ANOTHER_STACK,
            "the stack's env",
            facts.STACK_ENVIRONMENT,
            not_moved="names the account the stack is deployed to: another account is another stack",
        ),
    )
    region: str | None = Field(
        None,
        description="AWS region; unset = environment-agnostic stack.",
        json_schema_extra=change(
            Change.ANOTHER_STACK,
            "the stack's env",
            facts.STACK_ENVIRONMENT,
            not_moved="names the region the stack is deployed to: another region is another stack",
        ),
    )
    vpc_id: Annotated[str | None, CREATED_CLUSTER] = Field(
        None,
        description="Use this existing VPC (needs account and region) instead of creating one.",
        json_schema_extra=change(
            Change.REFUSED,
            "Custom::AWSCDK-EKS-Cluster Config.resourcesVpcConfig",
            facts.VPC,
            not_moved="an existing VPC needs its lookups in cdk.context.json (tests/test_existing_vpc.py)",
        ),
    )
    vpc_cidr: Annotated[str, CREATED_CLUSTER] = Field(
        "10.0.0.0/16",
        description="CIDR of the new VPC.",
        examples=["10.1.0.0/16"],
        json_schema_extra=change(Change.REFUSED, "AWS::EC2::VPC CidrBlock", facts.VPC),
    )
    max_azs: Annotated[int, CREATED_CLUSTER] = Field(
        2,
        ge=2,
        le=6,
        description="Availability zones of the new VPC (environment-agnostic stacks get 2).",
        json_schema_extra=change(
            Change.REFUSED,
            "AWS::EC2::Subnet, Custom::AWSCDK-EKS-Cluster Config.resourcesVpcConfig.subnetIds",
            facts.ZONES,
            needs={"account": "444455556666", "region": "eu-west-1"},
        ),
    )
    nat_gateways: Annotated[int, CREATED_CLUSTER] = Field(
        1,
        ge=1,
        le=6,
        description="NAT gateways of the new VPC (one per AZ for zonal resilience).",
        json_schema_extra=change(Change.RESOURCES, "AWS::EC2::NatGateway", facts.NAT_GATEWAYS),
    )
    endpoint_access: Annotated[Literal["private", "public-and-private"], CREATED_CLUSTER] = Field(
        "private",
        description="Kubernetes API endpoint: private only, or private plus public restricted to publicAccessCidrs.",
        json_schema_extra=change(
            Change.IN_PLACE,
            "Custom::AWSCDK-EKS-Cluster Config.resourcesVpcConfig",
            facts.ENDPOINT,
            needs_for={'"public-and-private"': {"publicAccessCidrs": ["203.0.113.0/24"]}},
        ),
    )
    public_access_cidrs: Annotated[list[str], CREATED_CLUSTER] = Field(
        default_factory=list,
        description="CIDRs allowed to reach the public endpoint (with endpointAccess=public-and-private).",
        examples=[["203.0.113.0/24", "198.51.100.0/24"]],
        json_schema_extra=change(
            Change.IN_PLACE,
            "Custom::AWSCDK-EKS-Cluster Config.resourcesVpcConfig.publicAccessCidrs",
            facts.ENDPOINT,
            needs={"endpointAccess": "public-and-private", "publicAccessCidrs": ["198.51.100.0/24"]},
        ),
    )
    wide_public_access_reason: Annotated[str | None, CREATED_CLUSTER] = Field(
        None,
        min_length=20,
        description="Why the production profile's public endpoint may reach more than 65,536 public addresses in all "
        "(publicAccessCidrs), which it refuses otherwise; make security-report lists it. A reviewer must be able to "
        "check it: at least 20 characters.",
        examples=["Partner CI runners egress from 198.18.0.0/15 (reviewed by security, ticket SEC-1234)."],
        json_schema_extra=change(Change.NOTHING_DEPLOYED, "the synth's checks", facts.SYNTH_ONLY),
    )
    additional_nag_packs: list[Literal["NIST80053R5", "NIST80053R4", "HIPAASecurity", "PCIDSS321", "Serverless"]] = (
        Field(
            default_factory=list,
            description="cdk-nag packs checked on top of AwsSolutions (NIST80053R5 findings are handled by the app).",
            examples=[["NIST80053R5"]],
            json_schema_extra=change(Change.NOTHING_DEPLOYED, "the synth's checks", facts.NAG),
        )
    )
    controller_hosting: Annotated[Literal["fargate", "nodegroup"], CREATED_CLUSTER] = Field(
        "fargate",
        description="Where the Karpenter controller and CoreDNS run: one Fargate profile, or a managed node group.",
        json_schema_extra=change(
            Change.INTERRUPTS, "Custom::AWSCDK-EKS-FargateProfile, AWS::EKS::Nodegroup", facts.HOSTING
        ),
    )
    system_node_instance_type: Annotated[str, CREATED_CLUSTER] = Field(
        "t3.medium",
        description="Instance type of the system node group (nodegroup hosting); a controller replica must fit "
        "one of its nodes beside CoreDNS, kube-proxy and the VPC CNI (checked at synth for t3, t3a, t4g and c, m, r "
        "sizes up to 4xlarge; other types: a warning).",
        examples=["t3.large"],
        json_schema_extra=change(
            Change.REPLACE,
            "AWS::EKS::Nodegroup InstanceTypes",
            facts.SYSTEM_INSTANCE_TYPE,
            needs={"controllerHosting": "nodegroup"},
        ),
    )
    deletion_protection: Annotated[bool | None, CREATED_CLUSTER] = Field(
        None,
        description="EKS cluster deletion protection (checked only when the cluster itself is deleted, i.e. last). "
        "Unset: off on a new cluster; on a running one that had it, unset is refused (aws-cdk's handler would send "
        "EKS an empty update): write false to turn protection off. Writing it on a running cluster is one way: "
        "CloudFormation's rollback would send that empty update.",
        json_schema_extra=change(
            Change.ONE_WAY, "Custom::AWSCDK-EKS-Cluster Config.deletionProtection", facts.DELETION_PROTECTION
        ),
    )
    termination_protection: bool = Field(
        False,
        description="CloudFormation termination protection: refuses the whole stack deletion up front. The stack "
        "sets it itself too (a custom resource), since CDK Pipelines' deploy actions ignore it; false turns it off.",
        json_schema_extra=change(Change.RESOURCES, "the stack's termination protection", facts.TERMINATION_PROTECTION),
    )
    retain_on_destroy: bool = Field(
        False,
        description=(
            "Keep KMS keys and log groups when the stack is deleted (they outlive it and are billed); off: "
            "they are deleted with it (KMS keys after a 7-day waiting period)."
        ),
        json_schema_extra=change(Change.IN_PLACE, "DeletionPolicy of the KMS keys and log groups", facts.RETENTION),
    )
    demo_workload: bool = Field(
        False,
        description="Apply the 'inflate' demo Deployment (pause containers, 0 replicas, 1 CPU each) to watch a scale-up.",
        json_schema_extra=change(Change.RESOURCES, "Custom::AWSCDK-EKS-KubernetesResource", facts.DEMO_WORKLOAD),
    )
    service_monitor: Annotated[bool, KarpenterProp()] = Field(
        False,
        description="Create the chart's Prometheus ServiceMonitor for Karpenter's metrics (needs the Prometheus operator CRDs).",
        json_schema_extra=change(
            Change.IN_PLACE, "chart value serviceMonitor", CHART_OUTSIDE_POD_TEMPLATE, upstream="serviceMonitor.enabled"
        ),
    )
    interruption_queue_alarms: Annotated[bool, KarpenterProp()] = Field(
        False,
        description="CloudWatch alarms when interruption messages pile up or grow old in the queue.",
        json_schema_extra=change(Change.RESOURCES, "AWS::CloudWatch::Alarm", facts.ALARMS),
    )
    alarm_topic_arn: Annotated[str | None, KarpenterProp()] = Field(
        None,
        description="SNS topic the alarms notify (with interruptionQueueAlarms).",
        examples=["arn:aws:sns:eu-west-1:111122223333:platform-alerts"],
        json_schema_extra=change(
            Change.IN_PLACE,
            "AWS::CloudWatch::Alarm AlarmActions",
            facts.ALARMS,
            needs={"interruptionQueueAlarms": True},
        ),
    )
    create_spot_service_linked_role: Annotated[bool, KarpenterProp("spot_service_linked_role")] = Field(
        False,
        description="Create AWSServiceRoleForEC2Spot (fails if the account already has it).",
        json_schema_extra=change(Change.RESOURCES, "AWS::IAM::ServiceLinkedRole", facts.SPOT_ROLE),
    )
    addon_versions: Annotated[
        dict[Literal["vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent"], str], CREATED_CLUSTER
    ] = Field(
        default_factory=dict,
        description=(
            'Pin EKS managed add-on versions (e.g. {"vpc-cni": "v1.20.1-eksbuild.3"}); unset: coredns and '
            "kube-proxy follow kubernetesVersion (a table per minor in karpenter_stack/versions.py: a Kubernetes "
            "upgrade updates them in place, after the control plane), vpc-cni and eks-pod-identity-agent stay at "
            "EKS's default of the day the cluster was created, also through an upgrade (EKS lists one vpc-cni "
            "version for every minor, and the agent's versions are not per minor: the documented reasons in "
            "versions.py); pin them to move them. A kube-proxy pin must be of the cluster's minor, a coredns pin "
            "not of a CoreDNS line EKS lists only for later minors."
        ),
        examples=[{"vpc-cni": "v1.20.1-eksbuild.3"}],
        json_schema_extra=change(Change.INTERRUPTS, "AWS::EKS::Addon AddonVersion", facts.ADDON_VERSIONS),
    )
    controller_credentials: Annotated[Literal["irsa", "pod-identity"], CREATED_CLUSTER] = Field(
        "irsa",
        description=(
            "How the Karpenter controller gets its role: irsa (the cluster's OIDC provider), or pod-identity (an EKS "
            "Pod Identity association and the eks-pod-identity-agent add-on; needs controllerHosting=nodegroup, as Pod "
            "Identity does not work on Fargate). Switching keeps the role and lets running pods keep their credentials."
        ),
        json_schema_extra=change(
            Change.RESTARTS_CONTROLLER,
            "chart value podAnnotations",
            facts.CREDENTIALS,
            needs={"controllerHosting": "nodegroup"},
            upstream="serviceAccount.annotations eks.amazonaws.com/role-arn (irsa; pod-identity: none, an EKS Pod "
            "Identity association names the role)",
            differs="the chart creates the service account without the IRSA annotation, and the controller would have "
            "no AWS credentials",
        ),
    )
    authentication_mode: Annotated[Literal["CONFIG_MAP", "API_AND_CONFIG_MAP", "API"] | None, CREATED_CLUSTER] = Field(
        None,
        description=(
            "How the cluster authenticates IAM principals. Unset: EKS's CONFIG_MAP (the aws-auth ConfigMap). "
            "API_AND_CONFIG_MAP adds EKS access entries (node role, administrators) and keeps aws-auth; API uses access "
            "entries only. One way only (unset/CONFIG_MAP -> API_AND_CONFIG_MAP -> API), one step per deploy, and in a "
            "deploy that changes nothing else of the cluster; a mode once written (even CONFIG_MAP) cannot be unset "
            "again. With an accepted baseline the synth refuses any other step."
        ),
        json_schema_extra=change(
            Change.ONE_WAY,
            "Custom::AWSCDK-EKS-Cluster Config.accessConfig.authenticationMode",
            facts.AUTHENTICATION_MODE,
        ),
    )
    administrators: Annotated[list[str], CREATED_CLUSTER] = Field(
        default_factory=list,
        description="IAM role ARNs with cluster-admin (access entries with AmazonEKSClusterAdminPolicy; with "
        "CONFIG_MAP, system:masters in aws-auth), instead of the stack's ClusterAdminRole that anyone in "
        "the account allowed sts:AssumeRole may assume (unset: that role). Setting them on a running "
        "cluster deletes that role and its mapping in place. Not service-linked roles; role paths only with "
        "access entries (aws-auth matches roles without their path).",
        examples=[["arn:aws:iam::111122223333:role/platform-admins"]],
        json_schema_extra=change(
            Change.RESOURCES, "the ClusterAdminRole, access entries and aws-auth", facts.ADMINISTRATORS
        ),
    )
    controller: Annotated[ControllerSpec, KarpenterProp()] = Field(
        default_factory=ControllerSpec,
        description="The Karpenter controller: featureGates, batchMaxDuration, batchIdleDuration, zonalShift, logLevel, "
        "cpu, memory (keys below).",
        json_schema_extra=change(Change.BY_FIELD, "the karpenter chart's values", facts.BY_FIELD),
        examples=[{"logLevel": "debug", "featureGates": {"nodeOverlay": True}}],
    )
    existing_cluster: ExistingClusterConfig | None = Field(
        None,
        description=(
            "Install Karpenter onto this existing EKS cluster (named clusterName, running kubernetesVersion) instead of "
            "creating one: no VPC, cluster, hosting or add-ons are created, and the settings that shape them are refused."
        ),
        json_schema_extra=change(
            Change.BY_FIELD,
            "the imported cluster; adding or removing it makes another kind of stack",
            facts.BY_FIELD,
        ),
        examples=[EXISTING_CLUSTER_EXAMPLE],
    )
    node_classes: Annotated[list[NodeClassSpec], KarpenterProp()] = Field(
        default_factory=lambda: [NodeClassSpec()],
        min_length=1,
        description="EC2NodeClasses to apply.",
        json_schema_extra=change(
            Change.BY_FIELD,
            "EC2NodeClass objects; an entry removed deletes its EC2NodeClass (refused while a pool uses it)",
            facts.BY_FIELD,
        ),
        examples=[[{"name": "default", "amiAlias": "bottlerocket@latest", "rootVolumeSizeGib": 100}]],
    )
    node_pools: Annotated[list[NodePoolSpec], KarpenterProp()] = Field(
        default_factory=lambda: [NodePoolSpec()],
        min_length=1,
        description="NodePools to apply.",
        json_schema_extra=change(
            Change.BY_FIELD,
            "NodePool objects; an entry removed deletes its NodePool, and Karpenter drains all its nodes",
            facts.BY_FIELD,
        ),
        examples=[
            [{"name": "general", "capacityTypes": ["on-demand", "spot"]}, {"name": "arm", "architectures": ["arm64"]}]
        ],
    )
    node_overlays: Annotated[list[NodeOverlaySpec], KarpenterProp()] = Field(
        default_factory=list,
        description="NodeOverlays to apply (alpha, needs controller.featureGates.nodeOverlay): price or extended-"
        "resource capacity Karpenter assumes for matching instance types.",
        json_schema_extra=change(
            Change.BY_FIELD,
            "NodeOverlay objects; an entry removed deletes its NodeOverlay (no node drifts)",
            facts.BY_FIELD,
            needs={"controller": {"featureGates": {"nodeOverlay": True}}},
        ),
        examples=[
            [
                {
                    "name": "gpu-slices",
                    "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g6"]}],
                    "capacity": {"nvidia.com/gpu-slice": "4"},
                }
            ]
        ],
    )

    node_manifests: list[str] = Field(
        default_factory=list,
        description="Karpenter YAML files of your own (EC2NodeClass, NodePool, NodeOverlay; several objects per file "
        "with ---), as paths or globs relative to the project folder (where cdk.json is). Each object becomes a node "
        "class, pool or overlay next to those of nodeClasses, nodePools and nodeOverlays, checked like them; the app "
        "fills in the node role, the cluster's subnets and security groups (the karpenter.sh/discovery terms) and "
        "${CLUSTER_NAME}. Where the files define classes (pools) and nodeClasses (nodePools) is not set, the built-in "
        "default class (pool) is not added.",
        json_schema_extra=change(
            Change.INTERRUPTS,
            "the EC2NodeClass, NodePool and NodeOverlay objects of the files",
            facts.NODE_MANIFESTS,
        ),
        examples=[["examples/manifests/node-*.yaml"]],
    )
    node_manifest_variables: dict[str, str] = Field(
        default_factory=dict,
        description="Values of your own placeholders in the nodeManifests files, by name: ${NAME} and <<NAME>> alike "
        "(as envsubst, Terraform or your CI wrote them), in any field; a value may hold ${CLUSTER_NAME}, which the app "
        "fills in itself. A placeholder without a value is refused, but in spec.userData, where a shell's ${VAR} is "
        "the script's own.",
        json_schema_extra=change(
            Change.INTERRUPTS,
            "the EC2NodeClass, NodePool and NodeOverlay objects of the files, where they use the placeholder",
            facts.NODE_MANIFESTS,
            not_moved=facts.NOT_MOVED_FILLING,
        ),
        examples=[{"KARPENTER_NODE_IAM_ROLE_NAME": "KarpenterNodeRole-${CLUSTER_NAME}", "TEAM": "payments"}],
    )
    existing_node_roles: Annotated[list[str], KarpenterProp("own_node_roles")] = Field(
        default_factory=list,
        description="On an existing cluster: ARNs of node roles your team already has (a running install's), which "
        "nodeManifests classes may name in spec.role (by name) and keep: the app authorizes each (an EC2_LINUX or "
        "EC2_WINDOWS access entry) and lets the controller pass it to EC2, as it does its own node role; the safety "
        "net removes the instance profiles Karpenter made for them with the rest of this stack's.",
        json_schema_extra=change(
            Change.RESOURCES,
            "an access entry per role and the controller's PassRole policy for them",
            facts.NODE_MANIFESTS,
            not_moved=facts.NOT_MOVED_FILLING,
            needs={"existingCluster": EXISTING_CLUSTER_EXAMPLE},
        ),
        examples=[["arn:aws:iam::111122223333:role/eks-node-role"]],
    )
    node_manifest_roles: list[str] = Field(
        default_factory=list,
        description="Names your nodeManifests files give spec.role for the app's node role (KarpenterNodeRole-"
        "<clusterName>, Karpenter's own name for it, always means it): such a class launches with the app's node role "
        "(Windows classes: its Windows node role), which the app authorizes, lets the controller pass and cleans up "
        "after. Another role in a file is refused.",
        json_schema_extra=change(
            Change.INTERRUPTS,
            "the EC2NodeClass objects of the files that name one of these roles",
            facts.NODE_MANIFESTS,
            not_moved=facts.NOT_MOVED_FILLING,
        ),
        examples=[["eks-node-role", "karpenter-node"]],
    )

    @field_validator("cluster_name")
    @classmethod
    def _cluster_name(cls, value: str) -> str:
        if not _CLUSTER_NAME.fullmatch(value):
            raise ValueError("must start with a letter or digit and contain only letters, digits, '-' and '_'")
        if len(value) > MAX_CLUSTER_NAME_LENGTH:
            raise ValueError(
                f"must be at most {MAX_CLUSTER_NAME_LENGTH} characters so that KarpenterNodeRole-<cluster> "
                f"fits IAM's 64-character limit (got {len(value)})"
            )
        return value

    @field_validator("node_manifests")
    @classmethod
    def _manifest_paths(cls, value: list[str]) -> list[str]:
        for path in value:
            project_path(path)
        _unique("nodeManifests", value, what="paths")
        return value

    @field_validator("node_manifest_variables")
    @classmethod
    def _variables(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not VARIABLE_NAME.fullmatch(name):
                raise ValueError(
                    f"{quoted(name)} is not a placeholder name: letters, digits and '_', not starting with a digit "
                    "(the NAME of ${NAME} or <<NAME>>)"
                )
            if name == CLUSTER_NAME_VARIABLE:
                raise ValueError("CLUSTER_NAME is the cluster's name (clusterName), which the app fills in itself")
        return value

    @field_validator("node_manifest_roles")
    @classmethod
    def _roles(cls, value: list[str]) -> list[str]:
        for name in value:
            if not _ROLE_NAME.fullmatch(name):
                raise ValueError(f"{quoted(name)} is not an IAM role name (1-64 of letters, digits and +=,.@_-)")
        _unique("nodeManifestRoles", value, what="names")
        return value

    @field_validator("karpenter_namespace", "karpenter_service_account")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        if not _DNS_LABEL.fullmatch(value) or len(value) > 63:
            raise ValueError("must be a Kubernetes name: lowercase a-z, 0-9 and '-', at most 63 characters")
        return value

    @field_validator("vpc_cidr")
    @classmethod
    def _vpc_cidr(cls, value: str) -> str:
        network = _ipv4_network(value)
        if not 16 <= network.prefixlen <= 24:
            raise ValueError("must be an IPv4 CIDR with a prefix length from /16 to /24")
        return value

    @field_validator("public_access_cidrs")
    @classmethod
    def _public_cidrs(cls, value: list[str]) -> list[str]:
        for cidr in value:
            if _ipv4_network(cidr).prefixlen == 0:
                raise ValueError(
                    f"{quoted(cidr)} opens the API endpoint to the whole internet; list your networks instead"
                )
        if whole_internet(value):  # (the same internet, spelled as several ranges)
            raise ValueError(
                "together these cover every public IPv4 address, which opens the API endpoint to the whole internet; "
                "list your networks instead"
            )
        return value

    @field_validator("addon_versions")
    @classmethod
    def _addon_versions(cls, value: dict[str, str]) -> dict[str, str]:
        for name, version in value.items():
            if not _ADDON_VERSION.fullmatch(version):
                raise ValueError(f"{name} {quoted(version)} is not an EKS add-on version like v1.20.1-eksbuild.3")
        return value

    @field_validator(*_FORMATS)
    @classmethod
    def _format(cls, value: str | None, info: ValidationInfo) -> str | None:
        value = formatted(_FORMATS, value, info)
        if info.field_name == "system_node_instance_type" and value is not None:
            unknown = unknown_instance_type(value)  # of the right form: is it one EC2 has?
            if unknown:
                raise ValueError(unknown)
        return value

    def karpenter_settings(self) -> dict[str, Any]:
        """The settings marked :class:`KarpenterProp`, by the name of the construct's prop they are."""
        return {
            marker.name or name: getattr(self, name)
            for name, field in type(self).model_fields.items()
            for marker in field.metadata
            if isinstance(marker, KarpenterProp)
        }

    @property
    def pinned_addon_versions(self) -> dict[str, str]:
        """addonVersions by add-on name."""
        return {str(name): version for name, version in self.addon_versions.items()}

    # Filled by load_config: things the user should know that do not stop the synth.
    _warnings: tuple[str, ...] = PrivateAttr(default=())
    # Filled by load_config: what the app did that changes nothing the user meant (a namespace left out of a
    # cluster-scoped object of a file), said as information, not as a warning.
    _notes: tuple[str, ...] = PrivateAttr(default=())

    @property
    def warnings(self) -> tuple[str, ...]:
        return self._warnings

    @property
    def notes(self) -> tuple[str, ...]:
        return self._notes

    # Filled by load_config: where each node class was written ("" for nodeClasses, else "<file>: EC2NodeClass/<name>"
    # of nodeManifests), so that a rule's message names the file.
    _node_class_sources: tuple[str, ...] = PrivateAttr(default=())

    @property
    def node_class_sources(self) -> tuple[str, ...]:
        return self._node_class_sources


def _ipv4_network(cidr: str) -> ipaddress.IPv4Network:
    try:
        return ipaddress.IPv4Network(cidr, strict=True)
    except ValueError:
        raise ValueError(f"{quoted(cidr)} is not an IPv4 CIDR like 10.0.0.0/16 (host bits must be zero)") from None


def _unique(setting: str, names: list[str], what: str = "names") -> None:
    problem = duplicates(setting, names, what)
    if problem:
        raise ValueError(problem)


# The settings marked CREATED_CLUSTER, by field name.
CREATED_CLUSTER_ONLY = tuple(
    name for name, field in AppConfig.model_fields.items() if any(m is CREATED_CLUSTER for m in field.metadata)
)
