"""The topic validators across one environment's settings of the cluster (``validate`` runs them, in the order of
its :data:`~karpenter_stack.config.validate.RULES`): an existing cluster, networking, alarms, the controller and
access. Each is a small function returning its problems, one line each, naming the settings."""

from __future__ import annotations

import json
import re

from pydantic.alias_generators import to_camel

from constructs_lib.karpenter.specs.base import quoted
from constructs_lib.karpenter.specs.controller import FARGATE_MAX_CPU, FARGATE_MAX_MEMORY_GIB
from constructs_lib.karpenter.specs.rules import role_name
from constructs_lib.karpenter.specs.volume_key import KEY_ARN, key_region

from . import capacity
from .addresses import PRODUCTION_MAX_PUBLIC, public_addresses
from .forms import ROLE_ARN
from .model import CREATED_CLUSTER_ONLY, AppConfig
from .node_rules import volume_key_settings

# The partition of an ARN, and the region of an EKS OIDC issuer (oidc.eks.<region>.amazonaws.com[.cn]).
_ARN_PARTITION = re.compile(r"^arn:(aws[a-z-]*):")
_OIDC_REGION = re.compile(r":oidc-provider/oidc\.eks\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?/")


# --- existing cluster ---------------------------------------------------------------------------------------


def existing_cluster(config: AppConfig) -> list[str]:
    """With existingCluster, none of the settings that shape a cluster this app creates."""
    if config.existing_cluster is None:
        return []
    return [
        f"{key}: applies only to a cluster this app creates; remove it when existingCluster is set"
        for key in sorted(to_camel(f) for f in config.model_fields_set & set(CREATED_CLUSTER_ONLY))
    ]


# --- networking ---------------------------------------------------------------------------------------------


def api_endpoint(config: AppConfig) -> list[str]:
    """A public endpoint exactly when there are networks allowed in."""
    if config.endpoint_access == "public-and-private" and not config.public_access_cidrs:
        return ["endpointAccess 'public-and-private' needs publicAccessCidrs (the networks allowed in)"]
    if config.endpoint_access == "private" and config.public_access_cidrs:
        return ["publicAccessCidrs is set but endpointAccess is 'private'; set endpointAccess=public-and-private"]
    return []


def _beyond_production_bound(config: AppConfig) -> int | None:
    """The public addresses a production endpoint reaches when they are more than PRODUCTION_MAX_PUBLIC (judged on
    what the CIDRs cover together: overlaps once, private ranges not counted), else None."""
    if config.profile != "production" or not config.public_access_cidrs:
        return None
    covered = public_addresses(config.public_access_cidrs)
    return covered if covered > PRODUCTION_MAX_PUBLIC else None


def production_endpoint(config: AppConfig) -> list[str]:
    """The production profile opens the public endpoint to at most PRODUCTION_MAX_PUBLIC public addresses, judged
    on what the CIDRs cover, not on how they are written; more only with widePublicAccessReason."""
    covered = _beyond_production_bound(config)
    if covered is None or config.wide_public_access_reason:
        return []
    return [
        f"publicAccessCidrs {json.dumps(config.public_access_cidrs)}: the production profile opens the public endpoint "
        f"to at most {PRODUCTION_MAX_PUBLIC:,} public addresses in all (a /16); these cover {covered:,}; list narrower "
        "networks (your offices' or VPN's egress ranges), keep the endpoint private, or say why in "
        "widePublicAccessReason (make security-report lists it)"
    ]


def wide_public_access(config: AppConfig) -> str | None:
    """What widePublicAccessReason acknowledges (the public addresses the endpoint reaches beyond the production
    profile's bound), or None when it acknowledges nothing."""
    covered = _beyond_production_bound(config)
    if covered is None:
        return None
    return f"the public endpoint reaches {covered:,} public addresses (production's bound: {PRODUCTION_MAX_PUBLIC:,})"


def production_administrators(config: AppConfig) -> list[str]:
    """The production profile creates no account-wide cluster admin: without administrators the stack creates
    ClusterAdminRole, which every principal of the account allowed sts:AssumeRole may assume, as system:masters."""
    if config.profile != "production" or config.existing_cluster is not None or config.administrators:
        return []
    return [
        "administrators []: the production profile needs the IAM role ARNs of your cluster administrators; without "
        "them the stack would create ClusterAdminRole, which any principal of the account allowed sts:AssumeRole "
        "may assume, with system:masters"
    ]


def vpc_environment(config: AppConfig) -> list[str]:
    """An existing VPC, or more than 2 zones, need the stack's account and region."""
    if config.vpc_id and not (config.account and config.region):
        return ["vpcId needs account and region: an existing VPC is looked up in that environment"]
    if config.max_azs > 2 and not (config.account and config.region) and not config.vpc_id:
        return [
            f"maxAzs ({config.max_azs}) needs account and region: an environment-agnostic stack "
            "only knows 2 availability zones (allowed without them: 2)"
        ]
    return []


def nat_gateways(config: AppConfig) -> list[str]:
    if config.nat_gateways > config.max_azs:
        return [f"natGateways ({config.nat_gateways}) cannot exceed maxAzs ({config.max_azs})"]
    return []


# --- alarms -------------------------------------------------------------------------------------------------


def alarm_topic(config: AppConfig) -> list[str]:
    if config.alarm_topic_arn and not config.interruption_queue_alarms:
        return ["alarmTopicArn is set but interruptionQueueAlarms is false; set interruptionQueueAlarms=true"]
    return []


# --- the controller -----------------------------------------------------------------------------------------


def controller(config: AppConfig) -> list[str]:
    """EKS Pod Identity needs nodes; the controller's size must fit a Fargate pod where it runs on Fargate."""
    if config.controller_credentials == "pod-identity" and config.controller_hosting == "fargate":
        return [
            "controllerCredentials 'pod-identity' needs controllerHosting=nodegroup: EKS Pod Identity "
            "does not work for pods on Fargate (allowed with fargate: irsa)"
        ]
    fargate = config.controller_hosting == "fargate" and config.existing_cluster is None
    if fargate and not config.controller.fits_fargate():
        return [
            f"controller cpu {config.controller.cpu} / memory {config.controller.memory} does not fit a Fargate pod "
            f"(at most {FARGATE_MAX_CPU} vCPU and {FARGATE_MAX_MEMORY_GIB} GiB); use controllerHosting=nodegroup"
        ]
    if config.controller_hosting == "nodegroup" and config.existing_cluster is None:
        problem = capacity.controller_fit(
            config.system_node_instance_type, config.controller.cpu, config.controller.memory
        )
        if problem is not None:
            return [f"controller cpu {config.controller.cpu} / memory {config.controller.memory}: {problem}"]
    return []


# --- access -------------------------------------------------------------------------------------------------


def administrators(config: AppConfig) -> list[str]:
    """Each administrator a role people can assume, in a form the authentication mode matches, and a principal of
    its own: EKS keeps one access entry per principal (and aws-auth one mapping per role ARN)."""
    node_roles = {
        f"KarpenterNodeRole-{config.cluster_name}",
        *config.node_manifest_roles,
        *(role_name(arn) for arn in config.existing_node_roles),
    }
    for i, arn in enumerate(config.administrators):
        if not ROLE_ARN.fullmatch(arn):
            return [
                f"administrators[{i}] {quoted(arn)} must be an IAM role ARN like arn:aws:iam::<account>:role/<name>"
            ]
        if arn in config.administrators[:i]:
            return [
                f"administrators[{i}] {quoted(arn)}: also administrators[{config.administrators.index(arn)}]; a "
                "principal has one access entry (EKS) and one aws-auth mapping: list it once"
            ]
        role = arn.split(":role/", 1)[1]
        if role.rsplit("/", 1)[-1] in node_roles:
            return [
                f"administrators[{i}] {quoted(arn)}: that is the node role of Karpenter's nodes, which has an access "
                "entry or aws-auth mapping of its own (a principal has one); name a role people assume"
            ]
        if role.startswith("aws-service-role/"):
            # IAM User Guide, "Service-linked roles": only the linked service can assume one.
            return [
                f"administrators[{i}] {quoted(arn)} is a service-linked role (path /aws-service-role/): only "
                "its AWS service can assume it, so nobody could use it to administer the cluster; name a role "
                "people assume"
            ]
        if "/" in role and config.authentication_mode in (None, "CONFIG_MAP"):
            # EKS User Guide, "Create access entries": ARNs in aws-auth ConfigMap entries can't include a path
            # (the authenticator matches the role ARN STS reports, which has none: aws-iam-authenticator#268).
            return [
                f"administrators[{i}] {quoted(arn)}: aws-auth (authenticationMode "
                f"{config.authentication_mode or 'unset: CONFIG_MAP'}) matches a role by its ARN without the path; "
                f"write {quoted(arn.split(':role/', 1)[0] + ':role/' + role.rsplit('/', 1)[1])}, or use "
                "authenticationMode API_AND_CONFIG_MAP (access entries take the path)"
            ]
    return []


def partition_of(region: str) -> str:
    """The AWS partition of a region: aws-cn for cn-*, aws-us-gov for us-gov-*, aws-iso(-b/-e/-f) for the
    isolated regions, else aws."""
    area = region.split("-")[1]
    if region.startswith("cn-"):
        return "aws-cn"
    if area == "gov":
        return "aws-us-gov"
    if area.startswith("iso"):
        return "aws-iso" + (f"-{area[3:]}" if area[3:] else "")
    return "aws"


def partitions(config: AppConfig) -> list[str]:
    """Every ARN setting in the partition of the stack's region, and an existing cluster's OIDC issuer in
    that region (when the region is set): IAM and SNS refuse a principal or topic of another partition,
    and the controller's IRSA trust would name an issuer the cluster does not have."""
    return [problem for setting, arn in arn_settings(config) for problem in _arn_problems(setting, arn, config.region)]


def arn_settings(config: AppConfig) -> list[tuple[str, str]]:
    """Every ARN the configuration names, by its setting: administrators, the alarm topic, an existing cluster's
    kubectl role and OIDC provider, the KMS keys of node volumes."""
    arns = [(f"administrators[{i}]", arn) for i, arn in enumerate(config.administrators)]
    arns += [("alarmTopicArn", config.alarm_topic_arn)] if config.alarm_topic_arn else []
    if config.existing_cluster is not None:
        arns += [
            ("existingCluster.kubectlRoleArn", config.existing_cluster.kubectl_role_arn),
            ("existingCluster.openIdConnectProviderArn", config.existing_cluster.open_id_connect_provider_arn),
        ]
    return arns + volume_key_settings(config)


def _arn_problems(setting: str, arn: str, region: str | None) -> list[str]:
    problems = []
    match = _ARN_PARTITION.match(arn)
    oidc = _OIDC_REGION.search(arn)
    if oidc and (oidc.group(2) is not None) != (partition_of(oidc.group(1)) == "aws-cn"):
        problems.append(
            f"{setting} {quoted(arn)}: an issuer in {oidc.group(1)} ends in "
            f"{'.amazonaws.com.cn' if partition_of(oidc.group(1)) == 'aws-cn' else '.amazonaws.com'}"
        )
    if region is None or match is None:
        return problems
    expected = partition_of(region)
    if match.group(1) != expected:
        problems.append(
            f"{setting} {quoted(arn)} is in partition {match.group(1)}, but region {quoted(region)} is in "
            f"partition {expected} (ARNs there start arn:{expected}:)"
        )
    elif KEY_ARN.fullmatch(arn) and key_region(arn) != region:
        # KMS keys are regional, and EC2 encrypts a volume only with a key of the volume's region.
        problems.append(
            f"{setting} {quoted(arn)}: a key of region {key_region(arn)}, but region is {quoted(region)}; the nodes' "
            "volumes take a key of their own region"
        )
    elif oidc and oidc.group(1) != region:
        problems.append(
            f"{setting} {quoted(arn)}: the cluster's OIDC issuer is in {oidc.group(1)}, but region is "
            f"{quoted(region)}; an existing cluster is in the stack's region"
        )
    return problems


def distinct_administrators(config: AppConfig) -> list[str]:
    return (
        ["administrators lists a role twice"] if len(set(config.administrators)) != len(config.administrators) else []
    )
