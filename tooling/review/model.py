"""What the review reports: the resource types whose handlers it models, what their handlers do, which
resources are stateful or slow, a change and a stack's report, and the review's error."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

HELM = "Custom::AWSCDK-EKS-HelmChart"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
CLUSTER = "Custom::AWSCDK-EKS-Cluster"
FARGATE = "Custom::AWSCDK-EKS-FargateProfile"
PATCH = "Custom::AWSCDK-EKS-KubernetesPatch"

# What aws-cdk-lib 2.275's handlers do on a CloudFormation Update (read in its bundled
# custom-resource-handlers/dist/aws-eks): cluster-resource-handler (cluster, Fargate profile) and
# kubectl-handler (helm, apply, patch).
CUSTOM_RESOURCE_RULES = {
    CLUSTER: "onUpdate: a new name, role, bootstrapClusterCreatorAdminPermissions or bootstrapSelfManagedAddons "
    "creates a new cluster; an encryption change fails; otherwise one kind of update per deploy (version, "
    "logging, endpoint access, subnets/security groups, authentication mode, deletion protection, scaling "
    "tier; tags along with any), more kinds fail",
    FARGATE: "onUpdate = onCreate: a new profile, then CloudFormation deletes the old one",
    HELM: "helm upgrade --install of the release named in Release, in Namespace; the old release is never "
    "uninstalled on an update (and Helm refuses a new release that would take over its cluster-scoped objects)",
    MANIFEST: "kubectl apply --prune -l <PruneLabel>: objects no longer in the manifest are deleted",
    PATCH: "kubectl patch with ApplyPatchJson",
    "Custom::AWSCDKCfnJson": "a value computed in CloudFormation: nothing outside the stack changes",
    "Custom::KarpenterTeardown": "this app's safety net (constructs_lib/teardown_handler): Create and Update do nothing",
}
# Custom resources whose update this review does not model (their handlers decide): Custom::AWS runs the
# SDK calls in its own properties; Custom::VpcRestrictDefaultSG re-restricts the VPC's default group.

# Resources whose replacement or removal loses state or takes long: type -> what goes with it.
STATEFUL = {
    "Custom::AWSCDK-EKS-Cluster": ("EKS cluster", "every workload and node on it; a new one takes ~15 min"),
    "AWS::EKS::Cluster": ("EKS cluster", "every workload and node on it; a new one takes ~15 min"),
    "AWS::EC2::VPC": ("VPC", "every subnet, node and load balancer in it"),
    "AWS::EC2::Subnet": ("subnet", "the nodes and load balancers in it"),
    "AWS::KMS::Key": (
        "KMS key",
        "what it encrypted (the cluster's secrets, the flow logs, node volumes once detached) cannot be read without "
        "it",
    ),
    "AWS::SQS::Queue": ("interruption queue", "spot interruption notices in flight are lost"),
    "AWS::CloudFormation::Stack": ("nested stack", "every resource in it"),
    "AWS::EKS::Nodegroup": ("system node group", "its nodes and the pods on them"),
    "AWS::Logs::LogGroup": ("log group", "the logs in it"),
}


# The node role of Karpenter's template (by logical id): every Karpenter node's identity.
NODE_ROLE_IDS = {"KarpenterNodeRole": ("node role", "every Karpenter node's identity (aws-auth, access entry)")}


def _stateful_kind(logical_id: str, resource_type: str) -> tuple[str, str] | None:
    return NODE_ROLE_IDS.get(logical_id) or STATEFUL.get(resource_type)


def _stateful(logical_id: str, resource_type: str) -> str | None:
    """What goes with a stateful or slow resource when it is replaced or deleted (``None``: nothing)."""
    kind = _stateful_kind(logical_id, resource_type)
    return f"the {kind[0]}: {kind[1]}" if kind else None


# A change whose CloudFormation rollback (the Update re-sent with old and new swapped) is refused: its reason
# starts with this marker. Safe only in a deploy that changes nothing else (see stacks._one_way_alone).
ONE_WAY_MARK = "one way: "

# What a change's effects say when pods restart or nodes go (the report's "interrupts").
INTERRUPTING = ("replaced by drift", "drains", "deleted with it", "restart", "roll", "one at a time")
# As whole words: "controller" holds "roll" (a serviceMonitor switch was reported as interrupting: the matrix).
_INTERRUPTING = re.compile(r"\b(" + "|".join(re.escape(p) for p in INTERRUPTING) + r")\b")


@dataclass
class Change:
    logical_id: str
    type: str
    action: str  # added | removed | updated | replaced | fails
    why: str = ""
    stateful: str | None = None  # what goes with it, when that is state or time
    effects: list[str] = field(default_factory=list)  # in plain words (Kubernetes, pods)
    one_way: bool = False  # its rollback is refused: with anything else in the deploy it can wedge the stack
    loses: bool = False  # an update that deletes state of its own (a Karpenter downgrade: a CRD and its objects)

    @property
    def destructive(self) -> bool:
        return self.stateful is not None and (self.action in ("replaced", "removed") or self.one_way or self.loses)

    @property
    def interrupts(self) -> bool:
        """Whether pods restart or nodes are replaced (what its effects say)."""
        return any(_INTERRUPTING.search(effect) for effect in self.effects)


@dataclass(frozen=True)
class Replayed:
    """What the deploy simulator (simulator/) finds replaying the deploy and its rollbacks step by step."""

    text: str
    severity: str  # fails | one way (a rollback aws-cdk's cluster handler or EKS refuses: acknowledgeable)
    key: str  # how acknowledgments name it: "<stack>/<logical id>" of the one-way step, or "<stack>/replay"


@dataclass
class StackReport:
    name: str  # "eks-karpenter" or "eks-karpenter > nested Karpenter"
    changes: list[Change]
    note: str = ""
    stack_override: str | None = None
    replayed: list[Replayed] = field(default_factory=list)
    replayed_steps: int = 0  # the steps of the deploy the simulator replayed (0: none, or not replayed)

    @property
    def stack(self) -> str:
        """The top-level stack, as acknowledgments name it (``<stack>/<logical id>``)."""
        return self.stack_override or self.name.split(" > ")[0]


class ReviewError(Exception):
    pass
