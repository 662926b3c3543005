"""The settings of the cluster the app decides: its versions, network, hosting, protection and add-ons
(:class:`ClusterSettings`, the first of :class:`~karpenter_stack.config.model.AppConfig`'s settings, in their
order, each checked on its own), the cluster name's default and limit, and the marks a setting can carry (a prop
of the Karpenter construct, a setting of a cluster this app creates)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from constructs_lib.karpenter.specs.base import CamelModel, quoted
from constructs_lib.karpenter.specs.change import CHART_OUTSIDE_POD_TEMPLATE, CHART_POD_TEMPLATE, Change, change
from constructs_lib.karpenter.specs.ec2 import unknown_instance_type

from . import changes as facts
from .addresses import whole_internet
from .forms import _ADDON_VERSION, _CLUSTER_NAME, _DNS_LABEL, _FORMATS, _ipv4_network, formatted

DEFAULT_CLUSTER_NAME = "eks-karpenter"


# IAM role names are at most 64 characters and the template names the node role
# KarpenterNodeRole-<cluster>.
MAX_CLUSTER_NAME_LENGTH = 64 - len("KarpenterNodeRole-")


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


class ClusterSettings(CamelModel):
    """The cluster the app decides: its versions, network, hosting, protection and add-ons.
    :class:`~karpenter_stack.config.model.AppConfig` adds who administers it, the controller, an existing cluster
    and the nodes."""

    profile: Literal["standard", "production"] = Field(
        "standard",
        description="production: deletion and termination protection, keys and logs kept on destroy, a NAT gateway per AZ, an on-demand system pool, pinned AMIs and administrators required; a new cluster on authenticationMode API_AND_CONFIG_MAP (administrators as access entries), a deployed one (the baseline's) kept on its mode.",
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
