"""The review of an app: one report per stack (template), nested stacks included -- stacks new, gone or renamed
(named after their cluster), a nested stack's parameters its parent changes, and one-way changes that are safe
only in a deploy that changes nothing else."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from .diff import _template_change, compare_template
from .model import ONE_WAY_MARK, Change, Replayed, StackReport, _stateful_kind
from .values import _differs


def _alnum(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "", text)


def stack_names(templates: Mapping[str, dict[str, Any]]) -> dict[str, str]:
    """Template name -> the stack as a reviewer names it: a top-level stack by its name, a nested one as
    ``<parent> > nested <id>`` (CDK names a nested template after its parent's and its own construct id)."""
    tops = [n.removesuffix(".template") for n in templates if not n.endswith(".nested.template")]
    names = {}
    for name in templates:
        if not name.endswith(".nested.template"):
            names[name] = name.removesuffix(".template")
            continue
        stem = name.removesuffix(".nested.template")
        parent = next((t for t in sorted(tops, key=len, reverse=True) if stem.startswith(_alnum(t))), None)
        inner = stem[len(_alnum(parent)) :] if parent else stem
        names[name] = f"{parent} > nested {re.sub(r'[0-9A-F]{8}$', '', inner)}" if parent else stem
    return names


def _top_level(templates: Iterable[str]) -> list[str]:
    return sorted(t.removesuffix(".template") for t in templates if not t.endswith(".nested.template"))


def _common_suffix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def _renames(gone: list[str], arrived: list[str]) -> dict[str, str]:
    """Stacks gone from the app paired with stacks that arrived: the only pair, or each gone stack with the one
    arrived stack that shares the longest name suffix with it (an environment's stack is ``<cluster>-<env>``,
    so renaming the cluster keeps each environment's suffix); unpaired stacks stay unpaired."""
    if len(gone) == 1 and len(arrived) == 1:
        return {gone[0]: arrived[0]}
    pairs: dict[str, str] = {}
    for was in gone:
        scores = {now: _common_suffix(was, now) for now in arrived}
        best = max(scores.values(), default=0)
        winners = [now for now, score in scores.items() if score == best]
        if best > 1 and len(winners) == 1 and winners[0] not in pairs.values():
            pairs[was] = winners[0]
    return pairs


def _renamed_report(was: str, now: str, new: Mapping[str, dict[str, Any]]) -> StackReport:
    """A stack renamed (it is named after its cluster): CloudFormation creates the new stack from nothing and
    leaves the old one running."""
    created = sorted(
        {
            what
            for template in new
            if stack_names(new)[template].split(" > ")[0] == now
            for logical_id, res in new[template]["Resources"].items()
            if (what := (_stateful_kind(logical_id, res["Type"]) or ("",))[0]) and what != "nested stack"
        }
    )
    return StackReport(
        f"{now} (replaces {was})",
        [
            Change(
                "*",
                "AWS::CloudFormation::Stack",
                "replaced",
                f"the stack is named after its cluster: `cdk deploy` creates stack `{now}` from nothing and leaves "
                f"`{was}` running until it is destroyed",
                f"a second cluster with everything it needs, all created anew ({', '.join(created)})",
                [f"workloads stay on the cluster of `{was}`: the new cluster starts with no workload and no node"],
            )
        ],
        stack_override=was,
    )


def _left_running(was: str) -> StackReport:
    """A stack no longer in the app: `cdk deploy` neither updates nor deletes it."""
    return StackReport(
        was,
        [
            Change(
                "*",
                "AWS::CloudFormation::Stack",
                "removed",
                "stack no longer in the app: `cdk deploy` leaves it running (nothing is deleted)",
                "its cluster, nodes and everything else keep running and costing, outside the app: `cdk destroy "
                f"{was}` (with the app that still has it) removes it",
            )
        ],
    )


def review(old: Mapping[str, dict[str, Any]], new: Mapping[str, dict[str, Any]]) -> list[StackReport]:
    """One report per stack (template), nested stacks included, in the order a reviewer reads them."""
    gone, arrived = _top_level(old.keys() - new.keys()), _top_level(new.keys() - old.keys())
    renames = _renames(gone, arrived)
    names = {**stack_names(old), **stack_names(new)}
    reports = [_renamed_report(was, now, new) for was, now in sorted(renames.items())]
    paired = set(renames) | set(renames.values())
    replaced_in: dict[str, tuple[set[str], dict[str, Any], dict[str, Any]]] = {}
    for template in sorted(
        old.keys() | new.keys(), key=lambda t: (names[t].split(" > ")[0], " > " in names[t], names[t])
    ):
        if names[template].split(" > ")[0] in paired:
            continue  # (in the rename's report)
        if template not in old:
            reports.append(StackReport(names[template], [], "new stack: every resource is created"))
        elif template not in new:
            nested = " > nested " in names[template]
            reports.append(
                StackReport(
                    names[template],
                    [],
                    "nested template gone: its parent's nested-stack resource changes (see the parent)",
                )
                if nested
                else _left_running(names[template])
            )
        else:
            inputs = _changed_parameters(names[template], new, names, replaced_in)
            changes = _template_change(old[template], new[template]) + compare_template(
                old[template], new[template], inputs
            )
            replaced_in[names[template]] = (
                {c.logical_id for c in changes if c.action == "replaced"},
                old[template],
                new[template],
            )
            reports.append(StackReport(names[template], changes))
    return _replayed(_one_way_alone(reports), old, new)


def _replayed(
    reports: list[StackReport], old: Mapping[str, dict[str, Any]], new: Mapping[str, dict[str, Any]]
) -> list[StackReport]:
    """Each top-level stack's deploy replayed step by step (tooling/review/simulator): its findings on its report."""
    from tooling.review.simulator import simulate

    by_stack = {r.name: r for r in reports}
    for stack, simulation in simulate(old, new).items():
        report = by_stack.get(stack)
        if report is None:
            continue
        report.replayed_steps = len(simulation.deploy.steps)
        for finding in simulation.findings():
            # a step's own failure (or refused rollback) is named by its resource, as the table names it
            step = "/" in finding.subject
            key = f"{stack}/{finding.subject.rsplit('/', 1)[1]}" if step else f"{stack}/replay"
            report.replayed.append(Replayed(finding.text, finding.severity, key))
    return reports


def _one_way_alone(reports: list[StackReport]) -> list[StackReport]:
    """A one-way change (its rollback is refused) is safe only in a deploy that changes nothing else: if anything
    else fails, CloudFormation rolls the one-way change back too, the handler refuses, and the stack is left in
    UPDATE_ROLLBACK_FAILED."""
    changes = [c for r in reports for c in r.changes]
    others = [c for c in changes if ONE_WAY_MARK not in c.why]
    for change in changes:
        if ONE_WAY_MARK in change.why and others:
            change.one_way = True
            # (what its rollback does is the change's own: after the mark; the replay names the steps)
            rollback = change.why.split(ONE_WAY_MARK, 1)[1].rsplit(")", 1)[0]
            change.stateful = (
                f"its rollback cannot undo it: with {len(others)} other change(s) in this deploy, a failure of any "
                f"of them rolls it back, and {rollback} (the replayed lines below say what breaks then); deploy it "
                "with as little else as you can (what follows it in the same template, e.g. a Kubernetes upgrade's "
                "add-ons or a mode's access entries, cannot be left out), then acknowledge the risk"
            )
    return reports


def _changed_parameters(
    name: str,
    new: Mapping[str, dict[str, Any]],
    names: Mapping[str, str],
    replaced_in: Mapping[str, tuple[set[str], dict[str, Any], dict[str, Any]]],
) -> set[str]:
    """A nested stack's parameters whose values change: its parent passes a different value, or one that
    refers to a resource the parent replaces (parents are compared first)."""
    if " > nested " not in name:
        return set()
    parent, inner = name.split(" > nested ")
    if parent not in replaced_in:
        return set()
    replaced, parent_old, parent_new = replaced_in[parent]
    changed: set[str] = set()
    for logical_id, res in parent_new["Resources"].items():
        if res["Type"] != "AWS::CloudFormation::Stack" or not logical_id.startswith(f"{inner}NestedStack"):
            continue
        params_new = res.get("Properties", {}).get("Parameters", {})
        params_old = parent_old["Resources"].get(logical_id, {}).get("Properties", {}).get("Parameters", {})
        # (parameter names derived from construct paths are the same on both sides when ids are kept)
        changed |= {k for k in params_new if _differs(params_old.get(k), params_new[k], replaced)}
    return changed
