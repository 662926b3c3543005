"""The review as Markdown: each stack's changes, what they do in the cluster, what blocks the change and what
fails the deploy; or, before any baseline was accepted, what a first deploy creates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .model import StackReport
from .stacks import stack_names

_SYMBOL = {"added": "+", "removed": "-", "updated": "~", "replaced": "±", "fails": "✗"}


def render(reports: list[StackReport], acknowledged: Mapping[str, str]) -> tuple[str, list[str], list[str]]:
    """The report as Markdown; the destructive changes left unacknowledged and those that fail the deploy
    (each ``<stack>/<logical id>``); acknowledgments that match nothing are listed in the text."""
    lines = ["# Review", ""]
    blocking: list[str] = []
    failing: list[str] = []
    used: set[str] = set()
    total = sum(len(r.changes) + len(r.replayed) for r in reports) + sum(1 for r in reports if r.note)
    if total == 0:
        lines.append("No change: every stack deploys as its baseline (nothing added, removed, replaced or updated).")
    for report in reports:
        if not report.changes and not report.note and not report.replayed:
            continue
        counts = {a: sum(c.action == a for c in report.changes) for a in _SYMBOL}
        summary = ", ".join(f"{n} {a}" for a, n in counts.items() if n)
        lines += [f"## {report.name}", "", report.note or summary, ""]
        if not report.changes:
            lines += _replayed(report, acknowledged, blocking, failing, used)
            continue
        lines += ["| | resource | type | change | why |", "|---|---|---|---|---|"]
        for c in report.changes:
            key = f"{report.stack}/{c.logical_id}"
            flag = ""
            if c.action == "fails":
                flag = "✗ FAILS"
                failing.append(key)
            elif c.destructive and key in acknowledged:
                flag = "acknowledged"
                used.add(key)
            elif c.destructive:
                flag = "‼ STATEFUL"
                blocking.append(key)
            what = f"**{c.action}**" if c.action in ("replaced", "removed", "fails") else c.action
            if c.interrupts:
                what += ", **interrupts**"
            lines.append(f"| {flag} | `{c.logical_id}` | {c.type} | {_SYMBOL[c.action]} {what} | {c.why} |")
        loud = [c for c in report.changes if c.destructive]
        if loud:
            lines += ["", "Stateful or slow resources replaced or deleted, or changes whose rollback is refused:"]
            lines += [f"- `{c.logical_id}` ({'one way' if c.one_way else c.action}): {c.stateful}" for c in loud]
        effects = [e for c in report.changes for e in c.effects]
        if effects:
            lines += ["", "In the cluster:"] + [f"- {e}" for e in effects]
        lines.append("")
        lines += _replayed(report, acknowledged, blocking, failing, used)
    stale = sorted(set(acknowledged) - used)
    if stale:
        lines += ["Acknowledgments that match nothing in this change (remove them): " + ", ".join(stale), ""]
    if failing:
        lines.append(f"**The deploy would fail** at: {', '.join(failing)}.")
    if blocking:
        lines.append(
            f"**Blocked**: stateful or slow resources replaced, deleted or changed one way without acknowledgment: "
            f"{', '.join(blocking)}. "
            "If that is intended, list each in acknowledged-replacements.yaml (`- resource: <stack>/<logical id>` "
            "and a `reason`) or pass `--acknowledge <stack>/<logical id>` (through make: "
            '`make review ARGS="--acknowledge <stack>/<logical id>"`).'
        )
    return "\n".join(lines).rstrip() + "\n", blocking, failing


def _replayed(
    report: StackReport, acknowledged: Mapping[str, str], blocking: list[str], failing: list[str], used: set[str]
) -> list[str]:
    """The deploy simulator's findings (tooling/review/simulator): what breaks in the running cluster, step by step."""
    if not report.replayed:
        if not report.replayed_steps:
            return []
        return [
            f"Replayed step by step: {report.replayed_steps} steps of the deploy, and CloudFormation's rollback from "
            "a failure at each: the running cluster keeps every invariant (nodes authorized, CoreDNS and the "
            "controller Ready, its credentials, one cluster update, kubelet skew, NodePool classes).",
            "",
        ]
    lines = ["Replayed step by step (CloudFormation's order, aws-cdk's handlers, EKS, the nodes):"]
    for finding in report.replayed:
        flag = "✗"
        if finding.severity == "fails":
            if finding.key not in failing:
                failing.append(finding.key)
        elif finding.key in acknowledged:
            flag = "acknowledged:"
            used.add(finding.key)
        else:
            flag = "‼"
            if finding.key not in blocking:
                blocking.append(finding.key)
        lines.append(f"- {flag} {finding.text}")
    return [*lines, ""]


def first_deploy(new: Mapping[str, dict[str, Any]], directory: str) -> str:
    """The report when nothing was accepted yet: what a first deploy creates."""
    names = stack_names(new)
    lines = [
        "# Review",
        "",
        f"No accepted baseline yet ({directory}/): this compares nothing, and deploying creates everything below.",
        "After reviewing it, accept it with `make accept` and commit the baseline with your configuration.",
        "",
        "| stack | resources created |",
        "|---|---|",
    ]
    lines += [
        f"| {names[t]} | {len(new[t].get('Resources', {}))} |"
        for t in sorted(new, key=lambda t: (names[t].split(" > ")[0], " > " in names[t], names[t]))
    ]
    return "\n".join(lines) + "\n"
