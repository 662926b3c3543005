"""The security gate: cdk-nag packs on every synth, and narrow, explained acknowledgments.

Every acknowledgment goes through :func:`constructs_lib.karpenter.nag.acknowledge`, made by the construct that
causes the finding; it names one exact (granular) finding id, sits on the narrowest construct that
produces the finding, and says why it is acceptable here. Fixes are
preferred: see docs/security.md for what is fixed rather than acknowledged.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import cdk_nag
from aws_cdk import App, Stack, Validations
from aws_cdk import aws_eks as eks

from constructs_lib.karpenter.nag import PACK_PREFIXES

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


def is_cdk_provider_stack(stack: Stack) -> bool:
    """Nested stacks aws-cdk-lib creates for its own providers (no resource of ours inside): the EKS
    cluster-resource and kubectl providers of a created cluster, the kubectl provider of an imported one."""
    return stack.nested_stack_parent is not None and (
        stack.node.id.startswith("@aws-cdk--") or isinstance(stack, eks.KubectlProvider)
    )


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
                found.append(Finding(name, violation.rule_name, resource.construct_path or "", violation.description))
    return found


# Rule-id prefixes of the cdk-nag packs (CDK itself records acknowledgments of its own, e.g.
# CloudFormation-Validate ones, in the same metadata; those are not the gate's).
NAG_RULE_PREFIXES = tuple(PACK_PREFIXES.values())
_ACK_METADATA = "aws:cdk:acknowledged-rules"
_ACK_PREFIX = "Annotation::"
_TEMPLATE_FILE_METADATA = "aws:cdk:templateFile"


def acknowledgments(app: App) -> list[AcknowledgmentRecord]:
    """Every cdk-nag acknowledgment in the app, read back from the cloud assembly's metadata files
    (one per stack: construct path -> metadata entries), which the synth writes even when findings
    fail it -- reading them is one file per stack instead of a jsii call per construct."""
    try:
        app.synth()
    except RuntimeError:
        pass  # open findings: the assembly is written all the same
    records = []
    for metadata_file in sorted(Path(app.outdir).glob("*.metadata.json")):
        for path, entries in json.loads(metadata_file.read_text()).items():
            on_stack = any(e["type"] == _TEMPLATE_FILE_METADATA for e in entries)  # a stack, nested or not
            for entry in entries:
                if entry["type"] != _ACK_METADATA:
                    continue
                for rule, reason in entry["data"].items():
                    if rule.removeprefix(_ACK_PREFIX).startswith(NAG_RULE_PREFIXES):
                        records.append(
                            AcknowledgmentRecord(
                                path=path.lstrip("/"),
                                rule=rule.removeprefix(_ACK_PREFIX),
                                reason=reason,
                                on_stack=on_stack,
                            )
                        )
    return records


def covers(ack: AcknowledgmentRecord, finding: Finding) -> bool:
    return ack.rule == finding.rule and (finding.path == ack.path or finding.path.startswith(ack.path + "/"))
