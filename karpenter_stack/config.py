"""The app's configuration: one typed model, loaded once from CDK context.

Context keys are the camelCase field names below (``cdk synth -c clusterName=prod``). A setting comes
from the first layer that contains its key, from the top: ``-c`` flags, the environment's overrides
(``environments.<name>``), ``cdk.json``, the profile, the built-in defaults. Which layer *set* a key
decides -- never whether a value happens to equal a default -- so a value a user wrote is never
replaced. ``cdk.json`` holds what a user sets; the README's generated reference shows every default.
Values given on the command line arrive as strings: scalars are coerced, lists and objects
(``nodePools``, ``nodeClasses``, ``addonVersions``, ...) are parsed as JSON.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import re
from datetime import date
from typing import Any, Literal, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from . import versions
from .quantities import parse_duration, parse_quantity

DEFAULT_CLUSTER_NAME = "eks-karpenter"

# IAM role names are at most 64 characters and the template names the node role
# KarpenterNodeRole-<cluster>.
MAX_CLUSTER_NAME_LENGTH = 64 - len("KarpenterNodeRole-")
_CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                             r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
_BUDGET_DURATION = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$")
_SNS_TOPIC_ARN = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$")
_CRON = re.compile(r"^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|(\S+\s+){4}\S+)$")
# Requirement keys the NodePool fields produce (key -> field).
_STRUCTURED_REQUIREMENTS = {
    "karpenter.sh/capacity-type": "capacityTypes",
    "kubernetes.io/arch": "architectures",
    "kubernetes.io/os": "the pool (always linux)",
    "karpenter.k8s.aws/instance-category": "instanceCategories",
    "karpenter.k8s.aws/instance-generation": "minInstanceGeneration",
}
# NodePool spec.template.spec.terminationGracePeriod (CRD pattern: no Never).
_GRACE_PERIOD = re.compile(r"^([0-9]+(s|m|h))+$")
# aws-cdk's kubectl handler Lambda runs 15 minutes; kubectl delete of an EC2NodeClass waits for its
# finalizer, i.e. for every node to drain (bounded by this) and its instance to terminate (~2 min).
MAX_TERMINATION_GRACE_PERIOD_S = 12 * 60
_ADDON_VERSION = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8}([0-9a-f]{9})?$")

# Context keys the CDK itself may put in context without a prefix.
_CDK_OWN_KEYS = {"acknowledged-issue-numbers"}


class ConfigError(Exception):
    """Invalid configuration. ``str(err)`` is the message to show the user."""


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
    )


class NodeClassConfig(_Model):
    """One EC2NodeClass: how Karpenter launches EC2 instances."""

    name: str = Field("default", description="Kubernetes name of the EC2NodeClass.")
    ami_alias: str = Field(
        "al2023@latest",
        description="AMI alias `family@version`; pin a version (e.g. al2023@v20260801) in production.",
    )
    root_volume_size_gib: int = Field(50, ge=1, le=16384, description="Root EBS volume size in GiB.")
    root_volume_type: Literal["gp3", "gp2", "io1", "io2"] = Field("gp3", description="Root EBS volume type.")
    metadata_hop_limit: int = Field(
        1, ge=1, le=64, description="IMDSv2 hop limit; 1 keeps pods from reaching the node's credentials."
    )
    tags: dict[str, str] = Field(default_factory=dict, description="Extra tags on launched EC2 resources.")

    @field_validator("name")
    @classmethod
    def _k8s_name(cls, value: str) -> str:
        if not _DNS_SUBDOMAIN.match(value) or len(value) > 253:
            raise ValueError("must be a lowercase DNS subdomain (a-z, 0-9, '-', '.')")
        return value

    @field_validator("ami_alias")
    @classmethod
    def _alias(cls, value: str) -> str:
        if not re.fullmatch(r"(al2|al2023|bottlerocket|windows2019|windows2022|windows2025)@(latest|v[0-9][0-9.]*)", value):
            raise ValueError(
                "must be family@version with family al2, al2023, bottlerocket, windows2019, windows2022 "
                "or windows2025 and version 'latest' or a pinned vYYYYMMDD"
            )
        if value.startswith("windows") and not value.endswith("@latest"):
            raise ValueError("Windows AMI aliases only support @latest")
        return value


class DisruptionBudgetConfig(_Model):
    nodes: str = Field("10%", description="Nodes that may be disrupted at once: a count or a percentage.")
    reasons: Optional[list[Literal["Underutilized", "Empty", "Drifted"]]] = Field(
        None, description="Disruption reasons the budget applies to; unset = all."
    )
    schedule: Optional[str] = Field(None, description="Cron schedule (UTC) when the budget is active; needs duration.")
    duration: Optional[str] = Field(None, description="How long the budget stays active after each schedule hit.")

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, value: str) -> str:
        if not re.fullmatch(r"^((100|[0-9]{1,2})%|[0-9]+)$", value):
            raise ValueError("must be a whole number or a percentage 0%-100%")
        return value

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: Optional[str]) -> Optional[str]:
        return _optional_match(value, _CRON, "must be a cron expression of 5 fields (e.g. '0 9 * * mon-fri') or "
                                               "@hourly, @daily, @weekly, @monthly, @yearly")

    @field_validator("duration")
    @classmethod
    def _duration(cls, value: Optional[str]) -> Optional[str]:
        return _optional_match(value, _BUDGET_DURATION, "must be hours and/or minutes like 8h, 30m or 1h30m")

    @model_validator(mode="after")
    def _schedule_with_duration(self) -> "DisruptionBudgetConfig":
        if (self.schedule is None) != (self.duration is None):
            raise ValueError("a disruption budget needs schedule and duration together, or neither")
        return self


class RequirementConfig(_Model):
    """An extra scheduling requirement (Kubernetes node selector requirement)."""

    key: str = Field(description="Node label key, e.g. karpenter.k8s.aws/instance-family.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"] = Field(
        description="How the values apply."
    )
    values: list[str] = Field(default_factory=list, description="Values (none for Exists/DoesNotExist).")
    min_values: Optional[int] = Field(None, ge=1, le=50, description="Minimum distinct values Karpenter must keep.")

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        return _label_key(value)

    @model_validator(mode="after")
    def _values_fit_operator(self) -> "RequirementConfig":
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"requirement '{self.key}' with operator {self.operator} needs at least one value")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"requirement '{self.key}' with operator {self.operator} takes no values")
        if self.operator in ("Gt", "Lt", "Gte", "Lte") and (
            len(self.values) != 1 or not self.values[0].isdigit()
        ):
            raise ValueError(f"requirement '{self.key}' with operator {self.operator} needs exactly one whole number")
        return self


class TaintConfig(_Model):
    key: str = Field(description="Taint key.")
    value: Optional[str] = Field(None, description="Taint value.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(description="Taint effect.")

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        if not _QUALIFIED_NAME.match(value):
            raise ValueError("must be a Kubernetes qualified name like example.com/dedicated")
        return value


class NodePoolConfig(_Model):
    """One NodePool: what Karpenter may launch for pending pods, and when it may remove it."""

    name: str = Field("default", description="Kubernetes name of the NodePool.")
    node_class: str = Field("default", description="Name of the EC2NodeClass (from nodeClasses) this pool uses.")
    capacity_types: list[Literal["spot", "on-demand", "reserved"]] = Field(
        default_factory=lambda: ["spot", "on-demand"], min_length=1, description="karpenter.sh/capacity-type values."
    )
    architectures: list[Literal["amd64", "arm64"]] = Field(
        default_factory=lambda: ["amd64", "arm64"], min_length=1, description="kubernetes.io/arch values."
    )
    instance_categories: list[str] = Field(
        default_factory=lambda: ["c", "m", "r"], min_length=1,
        description="karpenter.k8s.aws/instance-category values (EC2 family letters).",
    )
    min_instance_generation: int = Field(
        2, ge=0, description="Only instance generations greater than this (karpenter.k8s.aws/instance-generation Gt)."
    )
    requirements: list[RequirementConfig] = Field(
        default_factory=list, description="Extra requirements, after the ones the fields above produce."
    )
    limits: dict[str, str] = Field(
        default_factory=lambda: {"cpu": "1000", "memory": "1000Gi"},
        description="Upper bound on the resources of all nodes in the pool (Kubernetes quantities).",
    )
    weight: Optional[int] = Field(None, ge=1, le=100, description="Priority among pools (higher first); unset = 0.")
    expire_after: str = Field("720h", description="Replace nodes older than this (duration or Never).")
    termination_grace_period: str = Field(
        "10m",
        description=(
            "Longest drain of a node (also expired or drifted ones): after it, Karpenter deletes the remaining "
            "pods even past PodDisruptionBudgets. At most 12m, so that a destroy's node-class deletion "
            "(drain + ~2 min instance termination) fits the 15-minute kubectl handler. Part of the node "
            "template: changing it replaces the pool's nodes by drift."
        ),
    )
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] = Field(
        "WhenEmptyOrUnderutilized", description="Which nodes Karpenter may consolidate."
    )
    consolidate_after: str = Field("1m", description="Wait this long after a pod change before consolidating.")
    budgets: list[DisruptionBudgetConfig] = Field(
        default_factory=lambda: [DisruptionBudgetConfig()], max_length=50,
        description="Disruption budgets: how many nodes may be disrupted at once.",
    )
    labels: dict[str, str] = Field(default_factory=dict, description="Labels put on the pool's nodes.")
    taints: list[TaintConfig] = Field(default_factory=list, description="Taints put on the pool's nodes.")

    @field_validator("limits")
    @classmethod
    def _limits(cls, value: dict[str, str]) -> dict[str, str]:
        for resource, quantity in value.items():
            try:
                amount = parse_quantity(quantity)
            except ValueError as err:
                raise ValueError(f"limit {resource} '{quantity}' {err}") from None
            if amount < 0:
                raise ValueError(f"limit {resource} '{quantity}' must not be negative")
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        for key, label in value.items():
            _label_key(key)
            if not _LABEL_VALUE.match(label):
                raise ValueError(f"label value '{label}' must be at most 63 characters of a-z, A-Z, 0-9, '-', '_', '.'")
        return value

    @model_validator(mode="after")
    def _no_duplicate_requirement_keys(self) -> "NodePoolConfig":
        for requirement in self.requirements:
            if requirement.key in _STRUCTURED_REQUIREMENTS:
                raise ValueError(
                    f"requirement '{requirement.key}' is set by "
                    f"{_STRUCTURED_REQUIREMENTS[requirement.key]}; use that field instead"
                )
        return self

    @field_validator("name", "node_class")
    @classmethod
    def _k8s_name(cls, value: str) -> str:
        if not _DNS_SUBDOMAIN.match(value) or len(value) > 253:
            raise ValueError("must be a lowercase DNS subdomain (a-z, 0-9, '-', '.')")
        return value

    @field_validator("expire_after", "consolidate_after")
    @classmethod
    def _duration(cls, value: str) -> str:
        parse_duration(value)
        return value

    @field_validator("termination_grace_period")
    @classmethod
    def _grace(cls, value: str) -> str:
        if value == "Never" or not _GRACE_PERIOD.match(value):
            raise ValueError("must be a duration like 30s, 5m or 1m30s (no 'Never': a drain must end)")
        seconds = parse_duration(value)
        if seconds > MAX_TERMINATION_GRACE_PERIOD_S:
            raise ValueError(
                f"is {seconds} s; at most {MAX_TERMINATION_GRACE_PERIOD_S // 60}m, so that deleting a node class "
                "(drain, then instance termination) fits the 15-minute kubectl handler on destroy"
            )
        return value


class AppConfig(_Model):
    """Everything the app builds is decided here."""

    profile: Literal["standard", "production"] = Field(
        "standard",
        description="production: deletion and termination protection, keys and logs kept on destroy, a NAT gateway per AZ, an on-demand system pool, pinned AMIs required.",
    )
    cluster_name: str = Field(DEFAULT_CLUSTER_NAME, description="EKS cluster name; also names the queue and IAM resources.")
    kubernetes_version: str = Field("1.36", description="EKS Kubernetes version (1.NN); needs its kubectl layer package.")
    karpenter_version: str = Field("1.14.1", description="Karpenter release; needs templates/karpenter-<version>.yaml.")
    karpenter_namespace: str = Field("kube-system", description="Namespace of the Karpenter controller.")
    karpenter_service_account: str = Field("karpenter", description="Service account of the Karpenter controller.")
    account: Optional[str] = Field(None, description="AWS account id; unset = environment-agnostic stack.")
    region: Optional[str] = Field(None, description="AWS region; unset = environment-agnostic stack.")
    vpc_id: Optional[str] = Field(None, description="Use this existing VPC (needs account and region) instead of creating one.")
    vpc_cidr: str = Field("10.0.0.0/16", description="CIDR of the new VPC.")
    max_azs: int = Field(2, ge=2, le=6, description="Availability zones of the new VPC (environment-agnostic stacks get 2).")
    nat_gateways: int = Field(1, ge=1, le=6, description="NAT gateways of the new VPC (one per AZ for zonal resilience).")
    endpoint_access: Literal["private", "public-and-private"] = Field(
        "private",
        description="Kubernetes API endpoint: private only, or private plus public restricted to publicAccessCidrs.",
    )
    public_access_cidrs: list[str] = Field(
        default_factory=list,
        description="CIDRs allowed to reach the public endpoint (with endpointAccess=public-and-private).",
    )
    additional_nag_packs: list[Literal["NIST80053R5", "NIST80053R4", "HIPAASecurity", "PCIDSS321", "Serverless"]] = Field(
        default_factory=list,
        description="cdk-nag packs checked on top of AwsSolutions (NIST80053R5 findings are handled by the app).",
    )
    controller_hosting: Literal["fargate", "nodegroup"] = Field(
        "fargate", description="Where the Karpenter controller and CoreDNS run: one Fargate profile, or a managed node group."
    )
    system_node_instance_type: str = Field("t3.medium", description="Instance type of the system node group (nodegroup hosting).")
    deletion_protection: bool = Field(
        False, description="EKS cluster deletion protection (checked only when the cluster itself is deleted, i.e. last)."
    )
    termination_protection: bool = Field(
        False, description="CloudFormation termination protection: refuses the whole stack deletion up front."
    )
    retain_on_destroy: bool = Field(
        False,
        description=(
            "Keep KMS keys and log groups when the stack is deleted (they outlive it and are billed); off: "
            "they are deleted with it (KMS keys after a 7-day waiting period)."
        ),
    )
    demo_workload: bool = Field(
        False, description="Apply the 'inflate' demo Deployment (pause containers, 0 replicas, 1 CPU each) to watch a scale-up."
    )
    service_monitor: bool = Field(
        False, description="Create the chart's Prometheus ServiceMonitor for Karpenter's metrics (needs the Prometheus operator CRDs)."
    )
    interruption_queue_alarms: bool = Field(
        False, description="CloudWatch alarms when interruption messages pile up or grow old in the queue."
    )
    alarm_topic_arn: Optional[str] = Field(None, description="SNS topic the alarms notify (with interruptionQueueAlarms).")
    create_spot_service_linked_role: bool = Field(
        False, description="Create AWSServiceRoleForEC2Spot (fails if the account already has it)."
    )
    addon_versions: dict[Literal["vpc-cni", "kube-proxy", "coredns"], str] = Field(
        default_factory=dict,
        description=(
            "Pin EKS managed add-on versions (e.g. {\"vpc-cni\": \"v1.20.1-eksbuild.3\"}); unset: coredns and "
            "kube-proxy follow kubernetesVersion (table in karpenter_stack/versions.py), vpc-cni is EKS's default."
        ),
    )
    node_classes: list[NodeClassConfig] = Field(
        default_factory=lambda: [NodeClassConfig()], min_length=1, description="EC2NodeClasses to apply."
    )
    node_pools: list[NodePoolConfig] = Field(
        default_factory=lambda: [NodePoolConfig()], min_length=1, description="NodePools to apply."
    )

    @field_validator("cluster_name")
    @classmethod
    def _cluster_name(cls, value: str) -> str:
        if not _CLUSTER_NAME.match(value):
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
        if not _DNS_LABEL.match(value) or len(value) > 63:
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
                raise ValueError(f"'{cidr}' opens the API endpoint to the whole internet; list your networks instead")
        return value

    @field_validator("addon_versions")
    @classmethod
    def _addon_versions(cls, value: dict[str, str]) -> dict[str, str]:
        for name, version in value.items():
            if not _ADDON_VERSION.match(version):
                raise ValueError(f"{name} '{version}' is not an EKS add-on version like v1.20.1-eksbuild.3")
        return value

    @field_validator("alarm_topic_arn")
    @classmethod
    def _topic(cls, value: Optional[str]) -> Optional[str]:
        return _optional_match(value, _SNS_TOPIC_ARN, "must be an SNS topic ARN like arn:aws:sns:<region>:<account>:<topic>")

    @field_validator("vpc_id")
    @classmethod
    def _vpc_id(cls, value: Optional[str]) -> Optional[str]:
        return _optional_match(value, _VPC_ID, "must look like vpc-0123456789abcdef0")

    @model_validator(mode="after")
    def _cross_field(self) -> "AppConfig":
        if self.endpoint_access == "public-and-private" and not self.public_access_cidrs:
            raise ValueError("endpointAccess 'public-and-private' needs publicAccessCidrs (the networks allowed in)")
        if self.endpoint_access == "private" and self.public_access_cidrs:
            raise ValueError("publicAccessCidrs is set but endpointAccess is 'private'; set endpointAccess=public-and-private")
        if self.alarm_topic_arn and not self.interruption_queue_alarms:
            raise ValueError("alarmTopicArn is set but interruptionQueueAlarms is false; set interruptionQueueAlarms=true")
        if self.vpc_id and not (self.account and self.region):
            raise ValueError("vpcId needs account and region: an existing VPC is looked up in that environment")
        if self.max_azs > 2 and not (self.account and self.region) and not self.vpc_id:
            raise ValueError(
                f"maxAzs ({self.max_azs}) needs account and region: an environment-agnostic stack "
                "only knows 2 availability zones (allowed without them: 2)"
            )
        if self.nat_gateways > self.max_azs:
            raise ValueError(f"natGateways ({self.nat_gateways}) cannot exceed maxAzs ({self.max_azs})")
        if self.profile == "production":
            for i, node_class in enumerate(self.node_classes):
                if node_class.ami_alias.endswith("@latest"):
                    raise ValueError(
                        f"nodeClasses[{i}].amiAlias '{node_class.ami_alias}': the production profile needs a pinned AMI "
                        "(e.g. al2023@v20260801), so node images change only when this setting does"
                    )
        _unique("nodeClasses", [c.name for c in self.node_classes])
        _unique("nodePools", [p.name for p in self.node_pools])
        class_names = {c.name for c in self.node_classes}
        for pool in self.node_pools:
            if pool.node_class not in class_names:
                raise ValueError(
                    f"nodePools '{pool.name}' refers to nodeClass '{pool.node_class}', "
                    f"which is not in nodeClasses ({', '.join(sorted(class_names))})"
                )
        return self

    # Filled by load_config: things the user should know that do not stop the synth.
    _warnings: tuple[str, ...] = PrivateAttr(default=())

    @property
    def warnings(self) -> tuple[str, ...]:
        return self._warnings


def _optional_match(value: Optional[str], pattern: re.Pattern[str], message: str) -> Optional[str]:
    if value is not None and not pattern.match(value):
        raise ValueError(message)
    return value


def _label_key(key: str) -> str:
    """A label or requirement key Karpenter accepts (not one of its restricted keys)."""
    if not _QUALIFIED_NAME.match(key) or len(key) > 316:
        raise ValueError(f"'{key}' is not a Kubernetes label key (optional DNS prefix/, then a name of at most 63 "
                         "characters)")
    if key in ("karpenter.sh/nodepool", "kubernetes.io/hostname") or (
        key.startswith("karpenter.sh/") and key != "karpenter.sh/capacity-type"
    ):
        raise ValueError(f"'{key}' is a label key Karpenter restricts (karpenter.sh/* other than "
                         "karpenter.sh/capacity-type, kubernetes.io/hostname)")
    return key


def _ipv4_network(cidr: str) -> ipaddress.IPv4Network:
    try:
        return ipaddress.IPv4Network(cidr, strict=True)
    except ValueError:
        raise ValueError(f"'{cidr}' is not an IPv4 CIDR like 10.0.0.0/16 (host bits must be zero)") from None


def _unique(setting: str, names: list[str]) -> None:
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"{setting} has duplicate names: {', '.join(duplicates)}")


CONTEXT_KEYS = {to_camel(name): name for name in AppConfig.model_fields}
_JSON_KEYS = {"nodeClasses", "nodePools", "publicAccessCidrs", "additionalNagPacks", "addonVersions"}


def _is_ours(key: str) -> bool:
    # Feature flags (@aws-cdk/...), CDK's own settings (aws:cdk:...) and lookup caches
    # (vpc-provider:...) all carry ':' or '@'.
    return ":" not in key and not key.startswith("@") and key not in _CDK_OWN_KEYS


def _parse_cli_value(key: str, value: Any) -> Any:
    if key in _JSON_KEYS and isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as err:
            kind = "an object" if key == "addonVersions" else "a list"
            raise ConfigError(f"{key}: '{value}' is not valid JSON ({err.msg}); expected a JSON {kind}") from None
    if isinstance(value, str) and value in ("", "null") and key in ("vpcId", "account", "region", "alarmTopicArn"):
        return None
    return value


def _format_location(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int) and parts:
            parts[-1] = f"{parts[-1]}[{item}]"
        else:
            parts.append(str(item))
    return ".".join(parts)


# Which model a nested key belongs to, to suggest the closest known key for a typo.
_NESTED_MODELS: dict[str, type[_Model]] = {
    "nodeClasses": NodeClassConfig,
    "nodePools": NodePoolConfig,
    "budgets": DisruptionBudgetConfig,
    "requirements": RequirementConfig,
    "taints": TaintConfig,
}


def _known_keys(loc: tuple[Any, ...]) -> list[str]:
    model: type[_Model] = AppConfig
    for item in loc[:-1]:
        if isinstance(item, str) and item in _NESTED_MODELS:
            model = _NESTED_MODELS[item]
    return [to_camel(name) for name in model.model_fields]


def _unknown_key(setting: str, key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"did you mean '{close[0]}'?" if close else f"known settings: {', '.join(sorted(known))}"
    return f"{setting}: unknown setting; {hint}"


def _format_errors(err: ValidationError, prefix: str = "") -> str:
    lines = []
    for error in err.errors():
        setting = prefix + _format_location(error["loc"]) if error["loc"] else ""
        if error["type"] == "extra_forbidden":
            lines.append(_unknown_key(setting, str(error["loc"][-1]), _known_keys(error["loc"])))
            continue
        message = error["msg"].removeprefix("Value error, ")
        if not setting:  # a cross-field rule: its message names the settings itself
            lines.append(prefix + message)
            continue
        if isinstance(error.get("input"), dict) and error["type"] == "value_error":
            lines.append(f"{setting}: {message}")  # a rule across fields of one entry
            continue
        lines.append(f"{setting} = {json.dumps(error.get('input'))}: {message}")
    return "\n".join(lines)


# What the production profile sets for keys no other layer contains (it never loosens anything).
SYSTEM_POOL = {
    "name": "system",
    "capacityTypes": ["on-demand"],
    "labels": {"workload-class": "system"},
    "taints": [{"key": "workload-class", "value": "system", "effect": "NoSchedule"}],
}


def _profile_defaults(raw: Mapping[str, Any]) -> dict[str, Any]:
    if raw.get("profile") != "production":
        return {}
    return {
        "deletionProtection": True,
        "terminationProtection": True,
        "retainOnDestroy": True,
        "natGateways": raw.get("maxAzs", AppConfig.model_fields["max_azs"].default),
        "nodePools": [SYSTEM_POOL, {"name": "default"}],
    }


def _without_nones(value: Any) -> Any:
    """Context values lose their nulls on the way through jsii; compare them without."""
    if isinstance(value, dict):
        return {k: _without_nones(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nones(v) for v in value]
    return value


_ENV_NAME = re.compile(r"^[a-z][a-z0-9-]{0,19}$")


def load_config(context: Mapping[str, Any], today: Optional[date] = None) -> AppConfig:
    """Validate the app's context (no environments) into an :class:`AppConfig`, or raise ConfigError.

    ``today`` decides EKS support (defaults to the current date); tests pass a fixed one."""
    configs = load_environments(context, today)
    if list(configs) != [""]:
        raise ConfigError("this context defines environments; use load_environments")
    return configs[""]


def load_environments(
    context: Mapping[str, Any], today: Optional[date] = None, file_context: Optional[Mapping[str, Any]] = None
) -> dict[str, AppConfig]:
    """Every environment's configuration: ``{"": config}`` without ``environments``, else
    ``{name: config}``.

    ``file_context`` is what ``cdk.json`` holds: a key of ``context`` whose value differs from it (or
    that it lacks) came from a ``-c`` flag and overrides even an environment's own setting. Without it
    every key counts as ``cdk.json``'s."""
    ours = {k: v for k, v in context.items() if _is_ours(k)}
    environments = _parse_environments(ours.pop("environments", None))
    unknown = sorted(k for k in ours if k not in CONTEXT_KEYS)
    if unknown:
        raise ConfigError("\n".join(_unknown_key(k, k, [*CONTEXT_KEYS, "environments"]) for k in unknown))
    shared = {k: _parse_cli_value(k, v) for k, v in ours.items()}
    if not environments:
        return {"": _validate(shared, today, prefix="")}
    from_file = {k: v for k, v in (file_context or {}).items() if _is_ours(k)}
    flags = {k: v for k, v in shared.items()
             if file_context is not None and (k not in from_file or _without_nones(from_file[k]) != _without_nones(ours[k]))}
    configs: dict[str, AppConfig] = {}
    for name, overrides in environments.items():
        if not _ENV_NAME.match(name):
            raise ConfigError(f"environments: '{name}' is not a valid environment name (lowercase letters, digits "
                              "and '-', starting with a letter, at most 20 characters)")
        # Each environment's cluster is named <shared clusterName>-<environment> unless it names its own.
        raw = {**shared, "clusterName": f"{shared.get('clusterName', DEFAULT_CLUSTER_NAME)}-{name}",
               **{k: _parse_cli_value(k, v) for k, v in overrides.items()},
               **{k: v for k, v in flags.items() if k != "clusterName"}}
        configs[name] = _validate(raw, today, prefix=f"environments.{name}.")
    names = [c.cluster_name for c in configs.values()]
    if len(set(names)) != len(names):
        raise ConfigError(f"environments: cluster names must differ, got {', '.join(names)}")
    return configs


def _parse_environments(value: Any) -> dict[str, dict[str, Any]]:
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise ConfigError(f"environments: '{value}' is not valid JSON ({err.msg}); expected a JSON object") from None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ConfigError("environments: expected an object of environment name -> settings")
    return value


def _validate(raw: dict[str, Any], today: Optional[date], prefix: str) -> AppConfig:
    # The profile sits below every layer a user writes: it fills only keys none of them contains.
    raw = {**_profile_defaults(raw), **raw}
    try:
        config = AppConfig.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(_format_errors(err, prefix)) from None
    try:
        versions.eks_kubernetes_version(config.kubernetes_version)
        warning = versions.check_eks_support(config.kubernetes_version, today or date.today())
        versions.karpenter_template(config.karpenter_version)
        versions.check_compatibility(config.karpenter_version, config.kubernetes_version)
        versions.KubectlLayer.for_version(config.kubernetes_version).load()
        versions.addon_versions(config.kubernetes_version, dict(config.addon_versions))
    except versions.VersionError as err:
        raise ConfigError(prefix + str(err)) from None
    for i, node_class in enumerate(config.node_classes):
        try:
            versions.check_ami_alias(node_class.ami_alias, config.kubernetes_version)
        except versions.VersionError as err:
            raise ConfigError(f"{prefix}nodeClasses[{i}].{err}") from None
    config._warnings = (prefix + warning,) if warning else ()
    return config


def default_context() -> dict[str, Any]:
    """Every built-in default as a context value (what the README's reference lists)."""
    return AppConfig().model_dump(by_alias=True, mode="json")


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, mode="json", exclude_none=True)
    return value


def reference_markdown() -> str:
    """The configuration reference as Markdown tables (the README embeds this; a test keeps it current)."""
    sections: list[tuple[str, type[_Model]]] = [
        ("Settings (context keys)", AppConfig),
        ("`nodeClasses[]` entries", NodeClassConfig),
        ("`nodePools[]` entries", NodePoolConfig),
        ("`nodePools[].requirements[]` entries", RequirementConfig),
        ("`nodePools[].taints[]` entries", TaintConfig),
        ("`nodePools[].budgets[]` entries", DisruptionBudgetConfig),
    ]
    out: list[str] = []
    for title, model in sections:
        defaults = {
            to_camel(name): field.get_default(call_default_factory=True)
            for name, field in model.model_fields.items()
            if not field.is_required()
        }
        out += [f"#### {title}", "", "| key | default | meaning |", "|---|---|---|"]
        for name, field in model.model_fields.items():
            key = to_camel(name)
            if model is AppConfig and key in _NESTED_MODELS:
                default_text = "one entry with the defaults below"
            elif field.is_required():
                default_text = "required"
            else:
                default_text = f"`{json.dumps(_plain(defaults[key]))}`"
            out.append(f"| `{key}` | {default_text} | {field.description or ''} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
