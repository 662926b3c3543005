"""Step 3 of 4, validate: one environment's layered settings into an :class:`AppConfig`, or a ConfigError naming
every problem and the layer its setting came from.

The model checks each setting on its own (type, form, range: ``model``). The rules across settings are the
topic validators below: small functions, each returning its problems (one line each, naming the settings),
registered in :data:`RULES`. Then the versions are checked against what this app supports, and the warnings
(what the user should know that does not stop the synth) are collected.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import date
from typing import Any

from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from constructs_lib import template_parity
from constructs_lib.node_manifests import ManifestError, read_node_manifests
from constructs_lib.specs.base import quoted
from constructs_lib.specs.controller import FARGATE_MAX_CPU, FARGATE_MAX_MEMORY_GIB
from constructs_lib.specs.node_class import NodeClassSpec
from constructs_lib.specs.reach import Reach
from constructs_lib.specs.rules import (
    ami_problems,
    name_problems,
    pool_problems,
    release_problems,
    role_name,
    role_problems,
    user_data_problems,
)

from .. import versions
from . import capacity
from .addresses import PRODUCTION_MAX_PUBLIC, public_addresses
from .errors import BUILT_IN, ConfigError, format_errors, with_origins
from .merge import SYSTEM_POOL, Layered
from .model import CREATED_CLUSTER_ONLY, ROLE_ARN, AppConfig, stack_name_for
from .pipeline import PipelineConfig

Rule = Callable[[AppConfig], list[str]]

# The partition of an ARN, and the region of an EKS OIDC issuer (oidc.eks.<region>.amazonaws.com[.cn]).
_ARN_PARTITION = re.compile(r"^arn:(aws[a-z-]*):")
_OIDC_REGION = re.compile(r":oidc-provider/oidc\.eks\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?/")


def validate(layered: Layered, today: date | None) -> AppConfig:
    """The environment's configuration, its warnings attached; ``today`` decides EKS support (default: the
    current date)."""
    prefix, origins = layered.prefix, layered.origins

    def fail(message: str) -> ConfigError:
        return ConfigError(with_origins(message, prefix, origins))

    try:
        config = AppConfig.model_validate(layered.settings)
    except ValidationError as err:
        raise fail(format_errors(err, prefix)) from None
    config, origins, file_warnings, file_notes = with_node_manifests(config, layered)
    problems = rule_problems(config)
    if problems:
        raise fail("\n".join(_in_files(line, config, layered) or prefix + line for line in problems))
    try:
        support = _check_versions(config, today)
    except versions.VersionError as err:
        raise fail(prefix + str(err)) from None
    released = chosen_release(config)
    if released:  # what the chosen Karpenter release does not know (after the version checks: an imported one)
        raise fail("\n".join(prefix + line for line in released))
    amis = node_images(config)
    if amis:  # after the version checks: a version this app supports
        raise fail("\n".join(prefix + line for line in amis))
    warnings = [support] if support else []
    warnings += [w for warn in WARNINGS for w in warn(config, origins)]
    config._warnings = (*(_placed(w, prefix, origins) for w in warnings), *file_warnings)
    config._notes = tuple(file_notes)
    return config


_NODE_LISTS = ("node_classes", "node_pools", "node_overlays")


def with_node_manifests(config: AppConfig, layered: Layered) -> tuple[AppConfig, dict[str, str], list[str], list[str]]:
    """The configuration with the objects of nodeManifests after the typed node classes, pools and overlays (a kind
    the files define and no layer sets loses its built-in default), the origins with the files' layer for the
    node settings they fill, the warnings about the files' objects (where one is not what the app recommends) and
    the notes (what the app left out); ConfigError with one line per file and object refused, naming nodeManifests' layer (the
    production profile refuses what its guarantees exclude)."""
    origins = dict(layered.origins)
    if not config.node_manifests:
        return config, origins, [], []
    try:
        files = read_node_manifests(
            config.node_manifests,
            cluster_name=config.cluster_name,
            kubernetes_version=config.kubernetes_version,
            variables=config.node_manifest_variables,
            role_names=config.node_manifest_roles,
            own_roles=[role_name(arn) for arn in config.existing_node_roles],
        )
        typed = {
            name: getattr(config, name) if name in config.model_fields_set or not getattr(files, name) else []
            for name in _NODE_LISTS
        }
        files.check_with(typed["node_classes"], typed["node_pools"], typed["node_overlays"])
    except ManifestError as err:
        raise ConfigError("\n".join(_from_files(line, layered) for line in err.problems)) from None
    for name in _NODE_LISTS:
        if getattr(files, name):
            origins.setdefault(to_camel(name), origins.get("nodeManifests", BUILT_IN))
    merged = config.model_copy(update={name: [*typed[name], *getattr(files, name)] for name in _NODE_LISTS})
    merged._node_class_sources = (*([""] * len(typed["node_classes"])), *(o.where for o in files.class_objects))
    production = config.profile == "production"
    refused = [
        _from_files(f"{o.where}: {p.path}: {p.message}; the production profile requires it", layered)
        for o in files.objects
        for p in o.opinions
        if production and p.guaranteed
    ]
    if refused:
        raise ConfigError("\n".join(refused))
    warnings = [
        _from_files(f"{o.where}: {p.path}: {p.message}", layered)
        for o in files.objects
        for p in o.opinions
        if not (production and p.guaranteed)
    ]
    notes = [_from_files(line, layered) for line in [*files.notes, *(n for o in files.objects for n in o.note_lines())]]
    return merged, origins, warnings, notes


def _in_files(line: str, config: AppConfig, layered: Layered) -> str | None:
    """A rule's problem of a node class of nodeManifests (``nodeClasses[i].<field> ...``), named in its file and its
    manifest's terms; None for any other problem."""
    match = re.match(r"nodeClasses\[(\d+)\]\.([A-Za-z]+(\[\d+\])?)(.*)", line, re.DOTALL | re.ASCII)
    sources = config.node_class_sources
    if match is None or int(match.group(1)) >= len(sources) or not sources[int(match.group(1))]:
        return None
    field = "amiSelectorTerms[0].alias" if match.group(2) == "amiAlias" else match.group(2)
    return _from_files(f"{sources[int(match.group(1))]}: spec.{field}{match.group(4)}", layered)


def _from_files(line: str, layered: Layered) -> str:
    """A problem of a file, ending with where nodeManifests was set (and the environment, when it is not there)."""
    layer, origin = layered.prefix.removesuffix("."), layered.origins.get("nodeManifests", BUILT_IN)
    where = origin if not layer or origin == layer else f"{origin}; environment {layer.split('.', 1)[1]}"
    return f"{line} (from {where})"


def chosen_release(config: AppConfig) -> list[str]:
    """What the chosen Karpenter release does not know of the node objects and feature gates (specs.rules)."""
    return release_problems(
        config.node_classes,
        config.node_pools,
        config.node_overlays,
        config.controller.feature_gates,
        config.karpenter_version,
    )


def rule_problems(config: AppConfig) -> list[str]:
    """The problems of the first rule that finds any (one line each; empty: the settings fit together)."""
    return next((problems for rule in RULES if (problems := rule(config))), [])


def _check_versions(config: AppConfig, today: date | None) -> str | None:
    """VersionError for a version this app cannot build; the EKS support warning, if any."""
    versions.eks_kubernetes_version(config.kubernetes_version)
    warning = versions.check_eks_support(config.kubernetes_version, today or date.today())
    widened = template_parity.widening_problems(versions.karpenter_template(config.karpenter_version))
    if widened:  # the template's own problems, not a setting's: one line
        raise versions.VersionError("; ".join(widened))
    versions.check_compatibility(config.karpenter_version, config.kubernetes_version)
    versions.KubectlLayer.for_version(config.kubernetes_version).load()
    versions.addon_versions(config.kubernetes_version, config.pinned_addon_versions)
    return warning


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


def _system_capacity_warnings(config: AppConfig, origins: Mapping[str, str]) -> list[str]:
    """A system node type the capacity table does not know: the controller's fit is not checked."""
    if config.controller_hosting != "nodegroup" or config.existing_cluster is not None:
        return []
    if capacity.shape(config.system_node_instance_type) is not None:
        return []
    return [
        f"systemNodeInstanceType {quoted(config.system_node_instance_type)}: the app knows the allocatable CPU and "
        "memory of t3, t3a and t4g sizes and of 5th-generation-and-later c, m and r sizes up to 4xlarge, not this "
        f"type's, so it cannot check that a controller replica ({config.controller.cpu} CPU, "
        f"{config.controller.memory}) fits one of its nodes beside CoreDNS, kube-proxy and the VPC CNI"
    ]


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
    kubectl role and OIDC provider."""
    arns = [(f"administrators[{i}]", arn) for i, arn in enumerate(config.administrators)]
    arns += [("alarmTopicArn", config.alarm_topic_arn)] if config.alarm_topic_arn else []
    if config.existing_cluster is not None:
        arns += [
            ("existingCluster.kubectlRoleArn", config.existing_cluster.kubectl_role_arn),
            ("existingCluster.openIdConnectProviderArn", config.existing_cluster.open_id_connect_provider_arn),
        ]
    return arns


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


# --- node capacity ------------------------------------------------------------------------------------------


def pinned_amis(config: AppConfig) -> list[str]:
    """The production profile: node images change only when a setting does (Windows AMIs: a synth warning)."""
    if config.profile != "production":
        return []
    return [_unpinned(i, c) for i, c in enumerate(config.node_classes) if not c.pinned and not c.windows][:1]


def production_nodes(config: AppConfig) -> list[str]:
    """The production profile keeps what docs/security.md calls fixed on Karpenter's nodes: IMDSv2 at hop limit 1
    (a pod cannot reach the node's role), no public IP addresses, and selector terms bounded to what they name, read
    as EC2 reads them (specs.reach: a wildcard anywhere reaches subnets of any VPC, the public ones among them, and
    other workloads' security groups; a subnet term that can match a public subnet's tag reaches those)."""
    if config.profile != "production":
        return []
    problems = []
    reach = _selector_reach(config)
    for i, node_class in enumerate(config.node_classes):
        if node_class.metadata_hop_limit != 1:
            problems.append(
                f"nodeClasses[{i}].metadataHopLimit {node_class.metadata_hop_limit}: the production profile keeps IMDSv2 "
                "at hop limit 1, so pods cannot reach the node's credentials; use 1 (pods that need AWS credentials get "
                "their own through IRSA or Pod Identity)"
            )
        if node_class.associate_public_ip_address:
            problems.append(
                f"nodeClasses[{i}].associatePublicIPAddress true: the production profile launches nodes without "
                "public IP addresses (private subnets only); use false or leave it unset"
            )
        problems += [r.refusal(setting) for at, setting, r in reach if at == i]
    return problems


def _selector_reach(config: AppConfig) -> list[tuple[int, str, Reach]]:
    """Where the typed classes' extra selector terms reach beyond what they name (specs.reach): (the class's index,
    the term's setting, the Reach). A class of nodeManifests is its file's: its opinions name the file's own fields."""
    sources = config.node_class_sources
    return [
        (i, f"nodeClasses[{i}].{setting}", reach)
        for i, node_class in enumerate(config.node_classes)
        if not (i < len(sources) and sources[i])
        for setting, reach in node_class.selector_reach(config.cluster_name)
    ]


def _unpinned(i: int, node_class: NodeClassSpec) -> str:
    """Why a class's images can change without a setting changing (the production profile refuses it)."""
    if node_class.alias is not None:
        setting = "amiAlias" if not node_class.ami_selector_terms else "amiSelectorTerms[0].alias"
        return (
            f"nodeClasses[{i}].{setting} {quoted(node_class.alias)}: the production profile needs a pinned AMI "
            "(e.g. al2023@v20260801), so node images change only when this setting does"
        )
    j, term = next((j, t) for j, t in enumerate(node_class.ami_selector_terms) if not t.pinned)
    return (
        f"nodeClasses[{i}].amiSelectorTerms[{j}] selects by {term.moves_by}: a new image that matches it replaces every "
        "node (drift) without a setting changing, which the production profile refuses; select by id (ami-...) or "
        "by an exact name with one owner account"
    )


# The node rules are the construct's own (constructs_lib.specs.rules, run by Karpenter when it is built): the
# configuration runs the same functions, so its messages name where each setting came from.


def distinct_names(config: AppConfig) -> list[str]:
    """No two node classes, pools or overlays of one name (the first list with duplicates)."""
    return name_problems(config.node_classes, config.node_pools, config.node_overlays)


def pools_fit_classes(config: AppConfig) -> list[str]:
    """Every pool's class, capacity types, features and overlays fit together."""
    return pool_problems(config.node_classes, config.node_pools, config.controller.feature_gates, config.node_overlays)


def user_data_fits(config: AppConfig) -> list[str]:
    """The user data Karpenter would send to a node of each pool fits EC2's 16 KB (specs.rules)."""
    return user_data_problems(config.node_classes, config.node_pools)


def node_images(config: AppConfig) -> list[str]:
    """Every node class's AMI alias has images for the Kubernetes version (run after the version checks)."""
    return ami_problems(config.node_classes, config.kubernetes_version)


# The rules across settings, in the order they run: a configuration is told the problems of the first rule
# that finds any (the order in which these messages have always come).
def existing_node_roles(config: AppConfig) -> list[str]:
    """Node roles the team has: role ARNs, each name once, on an existing cluster only (a cluster the app creates
    runs no node of another role); a class names one of them or the app's (specs.rules.role_problems)."""
    arns = config.existing_node_roles
    if not arns:
        return []
    if config.existing_cluster is None:
        return [
            f"existingNodeRoles {json.dumps(arns)}: only with existingCluster (a running install's roles); on a cluster "
            "the app creates, classes use its node role"
        ]
    for i, arn in enumerate(arns):
        if not ROLE_ARN.fullmatch(arn):
            return [
                f"existingNodeRoles[{i}] {quoted(arn)} must be an IAM role ARN like arn:aws:iam::<account>:role/<name>"
            ]
        if (
            role_name(arn) in [role_name(a) for a in arns[:i]]
            or role_name(arn) == f"KarpenterNodeRole-{config.cluster_name}"
        ):
            return [
                f"existingNodeRoles[{i}] {quoted(arn)}: its name is also another node role's (a class names its role "
                "by name): one role per name"
            ]
    return []


def own_roles_fit(config: AppConfig) -> list[str]:
    """The classes that name a role of their own name one of existingNodeRoles, of one OS each (specs.rules)."""
    return role_problems(config.node_classes, config.existing_node_roles)


RULES: tuple[Rule, ...] = (
    existing_cluster,
    existing_node_roles,
    own_roles_fit,
    api_endpoint,
    production_endpoint,
    alarm_topic,
    vpc_environment,
    controller,
    administrators,
    partitions,
    distinct_administrators,
    nat_gateways,
    pinned_amis,
    production_nodes,
    distinct_names,
    pools_fit_classes,
    user_data_fits,
    production_administrators,  # last: what else a production configuration needs is said first
)


# --- the delivery pipeline, against the environments --------------------------------------------------------

PipelineRule = Callable[[PipelineConfig, Mapping[str, AppConfig], str], list[str]]


def validate_pipeline(
    settings: Mapping[str, Any], configs: Mapping[str, AppConfig], shared_name: str, origins: Mapping[str, str]
) -> PipelineConfig:
    """The delivery pipeline, checked against the environments (``shared_name``: the top-level clusterName):
    every environment is delivered by exactly one wave and names its account and region."""

    def fail(message: str) -> ConfigError:
        return ConfigError(with_origins(message, "", origins))

    try:
        pipeline = PipelineConfig.model_validate(settings)
    except ValidationError as err:
        raise fail(format_errors(err, "pipeline.", root=PipelineConfig)) from None
    if list(configs) == [""]:
        raise fail(
            "pipeline: needs environments (the pipeline deploys each environment as a stage of a wave); "
            'define them, e.g. "environments": {"dev": {...}, "prod": {...}}'
        )
    problems = [problem for rule in PIPELINE_RULES for problem in rule(pipeline, configs, shared_name)]
    if problems:
        raise fail("\n".join(problems))
    return pipeline


def _wave_of(pipeline: PipelineConfig, configs: Mapping[str, AppConfig]) -> dict[str, str]:
    """Each environment's (first) wave."""
    wave_of: dict[str, str] = {}
    for wave in pipeline.waves:
        for name in wave.environments:
            if name in configs and name not in wave_of:
                wave_of[name] = wave.name
    return wave_of


def wave_environments(pipeline: PipelineConfig, configs: Mapping[str, AppConfig], shared_name: str) -> list[str]:
    """Waves name environments, each in one wave."""
    problems: list[str] = []
    wave_of: dict[str, str] = {}
    for i, wave in enumerate(pipeline.waves):
        for j, name in enumerate(wave.environments):
            if name not in configs:
                problems.append(
                    f"pipeline.waves[{i}].environments[{j}] = {json.dumps(name)}: not an environment "
                    f"(environments: {', '.join(configs)})"
                )
            elif name in wave_of:
                problems.append(
                    f"pipeline.waves: environment {quoted(name)} is in waves {quoted(wave_of[name])} and {quoted(wave.name)}"
                )
            else:
                wave_of[name] = wave.name
    return problems


def every_environment_delivered(
    pipeline: PipelineConfig, configs: Mapping[str, AppConfig], shared_name: str
) -> list[str]:
    wave_of = _wave_of(pipeline, configs)
    return [
        f"pipeline.waves: environment {quoted(name)} is in no wave; with the pipeline on, it delivers every environment"
        for name in configs
        if name not in wave_of
    ]


def delivered_into_named_environments(
    pipeline: PipelineConfig, configs: Mapping[str, AppConfig], shared_name: str
) -> list[str]:
    wave_of = _wave_of(pipeline, configs)
    return [
        f"pipeline.waves: environment {quoted(name)} needs account and region (environments.{name}.account/region): "
        "the pipeline deploys into a named account and region"
        for name, config in configs.items()
        if name in wave_of and not (config.account and config.region)
    ]


def pipeline_name(pipeline: PipelineConfig, configs: Mapping[str, AppConfig], shared_name: str) -> list[str]:
    """The pipeline's stack is no environment's."""
    taken = {stack_name_for(c.cluster_name) for c in configs.values()}
    if pipeline.pipeline_name(shared_name) in taken:
        return [
            f"pipeline.name: {quoted(pipeline.pipeline_name(shared_name))} is an environment's stack name; choose another"
        ]
    return []


# Every problem of every rule is reported, in this order.
PIPELINE_RULES: tuple[PipelineRule, ...] = (
    wave_environments,
    every_environment_delivered,
    delivered_into_named_environments,
    pipeline_name,
)


def distinct_cluster_names(configs: Mapping[str, AppConfig]) -> None:
    """ConfigError when two environments name the same cluster."""
    names = [c.cluster_name for c in configs.values()]
    if len(set(names)) != len(names):
        raise ConfigError(f"environments: cluster names must differ, got {', '.join(names)}")


# --- warnings: what the user should know that does not stop the synth ----------------------------------------


def _existing_cluster_warnings(config: AppConfig, origins: Mapping[str, str]) -> list[str]:
    if config.existing_cluster is None:
        return []
    warnings = []
    if config.existing_cluster.authentication_mode is None:
        warnings.append(
            "existingCluster.authenticationMode is not set: Karpenter's nodes join through an EKS access entry, "
            "which needs authentication mode API or API_AND_CONFIG_MAP (a CONFIG_MAP cluster fails the deploy at "
            "the access entry); set it to what `aws eks describe-cluster` reports to check it at synth"
        )
    if any(c.windows for c in config.node_classes):
        warnings.append(
            "nodeClasses: Windows nodes need Windows IPAM (the vpc-cni add-on's enableWindowsIpam) and "
            "AmazonEKSVPCResourceController on the cluster role; this app sets both on clusters it creates, not on "
            "existingCluster: check them there, or Windows pods get no IP address"
        )
    return warnings


_ARN_ACCOUNT = re.compile(r"^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:(\d{12}):", re.ASCII)


def _foreign_account_warnings(config: AppConfig, origins: Mapping[str, str]) -> list[str]:
    """An ARN setting naming another account than the stack's (when the stack names its account): allowed -- a
    role or topic of another account can be trusted -- but said, since a typo in an account id is silent until
    someone is locked out or an alarm goes nowhere."""
    if config.account is None:
        return []
    warnings = []
    for setting, arn in arn_settings(config):
        match = _ARN_ACCOUNT.match(arn)
        if match and match.group(1) != config.account:
            warnings.append(
                f"{setting} {quoted(arn)} is in account {match.group(1)}, the stack in account {config.account}: "
                "intended for a cross-account setup, otherwise a typo that takes effect silently"
            )
    return warnings


def _production_warnings(config: AppConfig, origins: Mapping[str, str]) -> list[str]:
    if config.profile != "production":
        return []
    warnings = [
        f"nodeClasses[{i}].amiAlias {quoted(c.ami_alias)}: Windows AMIs cannot be pinned (alias @latest only), so "
        "this class's nodes move to each new Windows AMI by drift, within their pools' disruption budgets"
        for i, c in enumerate(config.node_classes)
        if c.windows
    ]
    # A list a user sets replaces the profile's whole list (layers never merge lists): say what that drops.
    if not origins.get("nodePools", "").startswith("profile") and SYSTEM_POOL["name"] not in {
        p.name for p in config.node_pools
    }:
        warnings.append(
            "nodePools: your list replaces the production profile's, so its on-demand 'system' pool (label and "
            "taint workload-class=system, for cluster add-ons) is not created; to keep it, add "
            + json.dumps(SYSTEM_POOL, separators=(", ", ": "))
            + f" to nodePools (from {origins.get('nodePools', BUILT_IN)})"
        )
    return warnings


def _selector_warnings(config: AppConfig, origins: Mapping[str, str]) -> list[str]:
    """Outside the production profile, the selector terms it refuses (production_nodes) are synth warnings."""
    if config.profile == "production":
        return []
    return [reach.warning(setting) for _, setting, reach in _selector_reach(config)]


def _stale_reason_warnings(config: AppConfig, origins: Mapping[str, str]) -> list[str]:
    """widePublicAccessReason where the endpoint is within the production profile's bound: it acknowledges nothing."""
    if config.wide_public_access_reason is None or wide_public_access(config) is not None:
        return []
    return [
        "widePublicAccessReason acknowledges nothing: only the production profile's public endpoint beyond "
        f"{PRODUCTION_MAX_PUBLIC:,} public addresses needs it; remove it"
    ]


WARNINGS: tuple[Callable[[AppConfig, Mapping[str, str]], list[str]], ...] = (
    _existing_cluster_warnings,
    _system_capacity_warnings,
    _stale_reason_warnings,
    _foreign_account_warnings,
    _production_warnings,
    _selector_warnings,
)


def _placed(warning: str, prefix: str, origins: Mapping[str, str]) -> str:
    """A warning about a setting, named where the setting was written: in an environment, its path under
    ``environments.<name>.``; written at the top level (or with -c), its own path and the environment."""
    layer = prefix.removesuffix(".")
    key = re.match(r"[A-Za-z]+", warning)
    origin = origins.get(key.group()) if key else None
    if not layer or origin is None or origin == layer:
        return prefix + warning
    environment = f"environment {layer.split('.', 1)[1]}"
    if warning.endswith(")") and "(from " in warning:
        return f"{warning[:-1]}; {environment})"
    return f"{warning} ({environment})"
