"""cdk-nag acknowledgments, made by the constructs that cause the findings.

Each construct acknowledges the findings of its own resources right where it creates them, by exact
(granular) finding id, on the narrowest construct, with a reason a security reviewer can check.
Outside :func:`acknowledging` every acknowledgment is registered as made (a construct used in
another app). Inside it, only findings of the given packs are registered -- an acknowledgment of a
pack that does not run would be stale -- and with one call into jsii per construct on exit.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from aws_cdk import Acknowledgment, App, CfnElement, Stack, Validations
from constructs import IConstruct

# Finding-id prefix of each cdk-nag pack (the app's pack names).
PACK_PREFIXES = {
    "AwsSolutions": "AwsSolutions-",
    "NIST80053R5": "NIST.800.53.R5-",
    "NIST80053R4": "NIST.800.53.R4-",
    "HIPAASecurity": "HIPAA.Security-",
    "PCIDSS321": "PCI.DSS.321-",
    "Serverless": "Serverless-",
}

EKS_NODE_POLICIES_REASON = (
    "One of the three AWS managed policies EKS requires of worker nodes (WorkerNode, CNI, ECR pull-only); AWS "
    "maintains them as EKS evolves."
)
# Not EKS's requirement (EKS User Guide, "Amazon EKS node IAM role" lists the three above): the project's choice.
SSM_CORE_REASON = (
    "The project's choice, not EKS's requirement: Session Manager gives operators a shell on a node without SSH "
    "keys or open ports (nodes get no SSH key); the cost is that anyone your account allows ssm:StartSession on the "
    "instance gets a root shell there, so scope ssm:StartSession in your IAM."
)


def node_policy_reason(policy: str) -> str:
    """Why a node role carries an AWS managed policy (NODE_MANAGED_POLICIES)."""
    return SSM_CORE_REASON if policy == "AmazonSSMManagedInstanceCore" else EKS_NODE_POLICIES_REASON


class Batch:
    """Acknowledgments made inside :func:`acknowledging`, per construct, until registered."""

    def __init__(self, packs: Iterable[str]) -> None:
        self.prefixes = tuple(PACK_PREFIXES[p] for p in packs)
        self.pending: dict[int, tuple[IConstruct, list[Acknowledgment]]] = {}

    def register(self) -> None:
        """One call into jsii per construct."""
        for scope, acks in self.pending.values():
            Validations.of(scope).acknowledge(*acks)
        self.pending = {}


_BATCH: ContextVar[Batch | None] = ContextVar("_BATCH", default=None)


def acknowledge(scope: IConstruct, finding_id: str, reason: str) -> None:
    """Acknowledge one finding on one construct (and what it contains)."""
    if isinstance(scope, App):
        raise ValueError(f"{finding_id}: acknowledgments never go on the app")
    if not reason.strip():
        raise ValueError(f"{finding_id}: an acknowledgment needs a reason")
    batch = _BATCH.get()
    if batch is None:
        Validations.of(scope).acknowledge(Acknowledgment(id=finding_id, reason=reason))
    elif finding_id.startswith(batch.prefixes):
        batch.pending.setdefault(id(scope), (scope, []))[1].append(Acknowledgment(id=finding_id, reason=reason))


def registers(pack: str) -> bool:
    """Whether acknowledgments of ``pack`` are registered here: lets a construct skip looking up the
    scopes of findings of a pack that does not run (each lookup is a call into jsii)."""
    batch = _BATCH.get()
    return batch is None or PACK_PREFIXES[pack] in batch.prefixes


@contextmanager
def acknowledging(packs: Iterable[str], *, defer: bool = False) -> Iterator[Batch]:
    """Register only the acknowledgments of ``packs`` made inside it (none for no packs), with one
    call per construct on exit: every call into the jsii runtime costs about a millisecond. With
    ``defer``, they are registered when the caller calls ``register()`` on the yielded batch (the
    findings before acknowledgments can be read in between, from the same build)."""
    batch = Batch(packs)
    token = _BATCH.set(batch)
    try:
        yield batch
        if not defer:
            batch.register()
    finally:
        _BATCH.reset(token)


def managed_policy_finding(policy_name: str, service_role: bool = False) -> str:
    """The granular AwsSolutions-IAM4 id for an AWS managed policy."""
    path = f"service-role/{policy_name}" if service_role else policy_name
    return f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{path}]"


def nag_value(stack: Stack, value: str) -> str:
    """How cdk-nag writes a pseudo parameter in a finding id: the literal when the stack's environment
    is known, ``<AWS::Region>`` style when it is not."""
    resolved = stack.resolve(value)
    if isinstance(resolved, dict) and "Ref" in resolved:
        return f"<{resolved['Ref']}>"
    return str(resolved)


def pseudo_values(stack: Stack) -> tuple[str, str, str]:
    """Partition, region and account as cdk-nag writes them in finding ids (resolve once, reuse)."""
    return nag_value(stack, stack.partition), nag_value(stack, stack.region), nag_value(stack, stack.account)


def arn_prefix(pseudo: tuple[str, str, str], service: str, *, regional: bool = True) -> str:
    """``arn:<partition>:<service>:<region>:<account>`` as it appears in finding ids."""
    partition, region, account = pseudo
    return f"arn:{partition}:{service}:{region if regional else ''}:{account}"


def logical_id_of(construct: IConstruct) -> str:
    """The CloudFormation logical id of a construct's resource, as cdk-nag writes it in finding ids
    (found through the construct, never written out)."""
    resource: IConstruct | None = construct
    while not isinstance(resource, CfnElement):  # e.g. HelmChart -> CustomResource -> CfnResource
        if resource is None:
            raise ValueError(f"{construct.node.path} has no CloudFormation resource")
        resource = resource.node.default_child
    return str(resource.stack.resolve(resource.logical_id))
