"""The security gate: cdk-nag packs on every synth, and narrow, explained acknowledgments.

Every acknowledgment goes through :func:`acknowledge`, names one exact (granular) finding id, sits on
the narrowest construct that produces the finding, and says why it is acceptable here. Fixes are
preferred: see README, "Security gate", for what is fixed rather than acknowledged.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional

import cdk_nag
from aws_cdk import Acknowledgment, App, Stack, Validations
from constructs import IConstruct

# Pack names accepted by the `additionalNagPacks` setting, and AwsSolutions (always on).
PACKS: dict[str, type[cdk_nag.NagPack]] = {
    "AwsSolutions": cdk_nag.AwsSolutionsChecks,
    "NIST80053R5": cdk_nag.NIST80053R5Checks,
    "NIST80053R4": cdk_nag.NIST80053R4Checks,
    "HIPAASecurity": cdk_nag.HIPAASecurityChecks,
    "PCIDSS321": cdk_nag.PCIDSS321Checks,
    "Serverless": cdk_nag.ServerlessChecks,
}
ALWAYS_ON = "AwsSolutions"


def register_packs(app: App, additional: Iterable[str]) -> list[str]:
    """Register AwsSolutions and the additional packs as validation plugins; returns their names."""
    names = [ALWAYS_ON, *[p for p in additional if p != ALWAYS_ON]]
    for name in names:
        Validations.of(app).add_plugins(PACKS[name](app))
    return names


# Inside ``batched_acknowledgments()``: acknowledgments waiting to be registered, per construct.
_BATCH: ContextVar[Optional[dict[int, tuple[IConstruct, list[Acknowledgment]]]]] = ContextVar("_BATCH", default=None)


def acknowledge(scope: IConstruct, finding_id: str, reason: str) -> None:
    """Acknowledge one finding on one construct (and what it contains)."""
    if isinstance(scope, App):
        raise ValueError(f"{finding_id}: acknowledgments never go on the app")
    if not reason.strip():
        raise ValueError(f"{finding_id}: an acknowledgment needs a reason")
    batch = _BATCH.get()
    if batch is None:
        Validations.of(scope).acknowledge(Acknowledgment(id=finding_id, reason=reason))
    else:
        batch.setdefault(id(scope), (scope, []))[1].append(Acknowledgment(id=finding_id, reason=reason))


@contextmanager
def batched_acknowledgments() -> Iterator[None]:
    """Registers the acknowledgments made inside it with one call per construct on exit: every call
    into the jsii runtime costs about a millisecond, and one per finding was ~90 per synth."""
    token = _BATCH.set({})
    try:
        yield
        for scope, acks in (_BATCH.get() or {}).values():
            Validations.of(scope).acknowledge(*acks)
    finally:
        _BATCH.reset(token)


def managed_policy_finding(policy_name: str, service_role: bool = False) -> str:
    """The granular AwsSolutions-IAM4 id for an AWS managed policy."""
    path = f"service-role/{policy_name}" if service_role else policy_name
    return f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{path}]"


def is_cdk_provider_stack(stack: Stack) -> bool:
    """Nested stacks aws-cdk-lib creates for its own providers (no resource of ours inside)."""
    return stack.nested_stack_parent is not None and stack.node.id.startswith("@aws-cdk--")


@dataclass(frozen=True)
class Finding:
    pack: str
    rule: str  # the exact (granular) id, e.g. AwsSolutions-IAM4[Policy::...]
    path: str  # construct path of the violating resource
    description: str


@dataclass(frozen=True)
class AcknowledgmentRecord:
    path: str  # construct path of the acknowledging scope
    rule: str
    reason: str
    on_stack: bool


def findings(app: App, packs: Iterable[str]) -> list[Finding]:
    """Run the packs over the app's construct tree; acknowledged findings are not returned."""
    found = []
    for name in packs:
        report = PACKS[name]().validate_scope(app)
        for violation in report.violations:
            for resource in violation.violating_resources:
                found.append(Finding(name, violation.rule_name, resource.construct_path, violation.description))
    return found


# Rule-id prefixes of the cdk-nag packs (CDK itself records acknowledgments of its own, e.g.
# CloudFormation-Validate ones, in the same metadata; those are not the gate's).
NAG_RULE_PREFIXES = ("AwsSolutions-", "NIST.800.53.R5-", "NIST.800.53.R4-", "HIPAA.Security-", "PCI.DSS.321-",
                     "Serverless-")
_ACK_METADATA = "aws:cdk:acknowledged-rules"
_ACK_PREFIX = "Annotation::"


def acknowledgments(app: App) -> list[AcknowledgmentRecord]:
    """Every cdk-nag acknowledgment in the app, read back from construct metadata."""
    records = []
    for construct in app.node.find_all():
        for entry in construct.node.metadata:
            if entry.type != _ACK_METADATA:
                continue
            for rule, reason in entry.data.items():
                if not rule.removeprefix(_ACK_PREFIX).startswith(NAG_RULE_PREFIXES):
                    continue
                records.append(
                    AcknowledgmentRecord(
                        path=construct.node.path,
                        rule=rule.removeprefix(_ACK_PREFIX),
                        reason=reason,
                        on_stack=isinstance(construct, Stack),
                    )
                )
    return records


def covers(ack: AcknowledgmentRecord, finding: Finding) -> bool:
    return ack.rule == finding.rule and (finding.path == ack.path or finding.path.startswith(ack.path + "/"))
