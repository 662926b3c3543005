"""The topic validators across one environment's node classes, pools and overlays (``validate`` runs them in the
order of its :data:`~karpenter_stack.config.validate.RULES`, and ``node_images`` after the version checks): what
the production profile keeps fixed on Karpenter's nodes, the node roles the team has, and the construct's own node
rules (constructs_lib.karpenter.specs.rules) run on the configuration, so that their messages name where each setting came
from."""

from __future__ import annotations

import json

from constructs_lib.karpenter.specs.base import quoted
from constructs_lib.karpenter.specs.node_class import NodeClassSpec
from constructs_lib.karpenter.specs.node_objects import NodeObjects
from constructs_lib.karpenter.specs.reach import Reach
from constructs_lib.karpenter.specs.rules import (
    ami_problems,
    delivery_problems,
    name_problems,
    pool_problems,
    role_name,
    role_problems,
    user_data_problems,
)

from .forms import ROLE_ARN
from .model import AppConfig


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


def volume_key_settings(config: AppConfig) -> list[tuple[str, str]]:
    """The customer-managed keys of others the node classes' volumes name, by where they are written: a typed class's
    volumeKmsKey, or a file's first ebs.kmsKeyID naming the key."""
    sources, found = config.node_class_sources, []
    for i, node_class in enumerate(config.node_classes):
        source = sources[i] if i < len(sources) else ""
        if not source:
            found += [(f"nodeClasses[{i}].volumeKmsKey", arn) for arn in node_class.volume_key_arns]
            continue
        mappings = ((node_class.written or {}).get("spec") or {}).get("blockDeviceMappings") or []
        keys = [((m or {}).get("ebs") or {}).get("kmsKeyID") for m in mappings]
        found += [
            (f"{source}: spec.blockDeviceMappings[{keys.index(arn)}].ebs.kmsKeyID", arn)
            for arn in node_class.volume_key_arns
        ]
    return found


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


def node_lists(config: AppConfig) -> list[str]:
    """The stack applies at least one node class and pool (a GitOps tool may apply none, or its own)."""
    if config.node_objects is NodeObjects.GITOPS:
        return []
    return [
        f"{setting} []: no {what}, and the stack applies the node objects (nodeObjects {json.dumps(config.node_objects.value)}), "
        f'so Karpenter would launch nothing; give at least one, or set nodeObjects "gitops" (a GitOps tool applies '
        "them)"
        for setting, what, items in (
            ("nodeClasses", "EC2NodeClass", config.node_classes),
            ("nodePools", "NodePool", config.node_pools),
        )
        if not items
    ][:1]


def default_class_left_out(config: AppConfig) -> list[str]:
    """A pool on the built-in default class, which is not added once nodeManifests defines classes and nodeClasses
    is not set: say so, before the construct's rule says only that the class is missing."""
    sources = config.node_class_sources
    if not config.node_manifests or not sources or not all(sources):
        return []
    names = [c.name for c in config.node_classes]
    return [
        f"nodePools {quoted(pool.name)} uses nodeClass 'default', the built-in class, which is not added because "
        f"nodeManifests defines the node classes ({', '.join(names)}) and nodeClasses is not set: add "
        '{"name": "default"} to nodeClasses, or give the pool one of the files\' classes'
        for pool in config.node_pools
        if pool.node_class == "default" and "default" not in names
    ][:1]


# The node rules are the construct's own (constructs_lib.karpenter.specs.rules, run by Karpenter when it is built): the
# configuration runs the same functions, so its messages name where each setting came from.


def distinct_names(config: AppConfig) -> list[str]:
    """No two node classes, pools or overlays of one name (the first list with duplicates)."""
    return name_problems(config.node_classes, config.node_pools, config.node_overlays)


def pools_fit_classes(config: AppConfig) -> list[str]:
    """Every pool's class, capacity types, features and overlays fit together."""
    return pool_problems(config.node_classes, config.node_pools, config.controller.feature_gates, config.node_overlays)


def delivery_fits(config: AppConfig) -> list[str]:
    """What a GitOps tool applies is written at synth: no class only a deploy can name (specs.rules)."""
    return delivery_problems(config.node_classes, config.node_objects)


def user_data_fits(config: AppConfig) -> list[str]:
    """The user data Karpenter would send to a node of each pool fits EC2's 16 KB (specs.rules)."""
    return user_data_problems(config.node_classes, config.node_pools)


def node_images(config: AppConfig) -> list[str]:
    """Every node class's AMI alias has images for the Kubernetes version (run after the version checks)."""
    return ami_problems(config.node_classes, config.kubernetes_version)


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
