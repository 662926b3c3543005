"""The synth warnings: what the user should know about one environment's configuration that does not stop the
synth, each function returning its lines (:data:`WARNINGS`, in the order they are said), and how a warning names
where its setting was written (``_placed``)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping

from constructs_lib.karpenter.specs.base import quoted
from constructs_lib.karpenter.volume_key import SIDS

from . import access_steps, capacity
from .addresses import PRODUCTION_MAX_PUBLIC
from .cluster_rules import arn_settings, wide_public_access
from .errors import BUILT_IN
from .merge import SYSTEM_POOL
from .model import AppConfig
from .node_rules import _selector_reach, volume_key_settings


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


def _volume_key_warnings(config: AppConfig, origins: Mapping[str, str]) -> list[str]:
    """A key of someone else's: the stack lets the controller use it, its key policy is its owner's to extend
    (constructs_lib/karpenter/volume_key.py: the statements, and the AWS documents that require them)."""
    return [
        f"{setting} {quoted(arn)}: a key the app does not create: the stack lets the controller role (output "
        "ControllerRoleArn) use it through EC2, and its key policy must let EC2's launching service-linked roles "
        "AWSServiceRoleForAutoScaling and AWSServiceRoleForEC2Spot use it (statements "
        f"{SIDS['service']} and {SIDS['service_grant']}; also {SIDS['launch']} and {SIDS['grant']} for the "
        "controller role where the key policy does not delegate to IAM), or nodes terminate as they launch: "
        "docs/security.md#customer-managed-keys-for-node-volumes prints them"
        for setting, arn in volume_key_settings(config)
    ]


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
    access_steps.warning,
    _selector_warnings,
    _volume_key_warnings,
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
