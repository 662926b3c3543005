"""What moving from one Karpenter release to another changes, for the maintainer and the user
(``make release-report SINCE=1.13.1 VERSION=1.14.1``), read from what the project keeps of each release:

- the CRDs the ``karpenter-crd`` chart installs (tooling/upstream/karpenter-<version>/charts/, rendered offline with
  the pinned Helm: chart_render.py): kinds added or removed; per kind, spec fields added, removed or changed
  (type, enum, pattern, bounds, default, required-ness) and CEL rules (``x-kubernetes-validations``) added, removed
  or changed, by field path;
- the ``karpenter`` chart's values.yaml, flattened: keys added, removed, defaults changed (the image's tag and
  digest are the release itself); its feature gates (``settings.featureGates``) on their own;
- the IAM grants of the CloudFormation templates (templates/upstream/karpenter-<version>.yaml, upstream's, and
  templates/karpenter-<version>.yaml, the project's), per principal (constructs_lib/karpenter/template_parity.py);

each change with the app's settings it touches (their cdk.json keys: the fields' declared Karpenter names,
karpenter_stack/config/reference.py), and whether the app writes it (the node objects of the product's
configurations, tooling/releases/crd_paths.py; the chart values of constructs_lib/karpenter/release.py).

A change that needs a human decision is a decision, one line naming the kind and field (or the chart key, or the
grant): a new required field; a removed field or value key the app writes; an enum or pattern narrowed where the
app's defaults or settings produce a value it refuses; a field the app writes that changes its type; an upstream
IAM grant the project's template of the new release does not make. The command prints the report as Markdown and
exits 1 when there is a decision. :func:`compare` returns the same as data (the import and a review call it).

The parts: a release as kept and the report's types in report_base.py, what the app writes and which settings write
it in report_settings.py, the CRDs in report_crds.py; here, the chart values, the feature gates and the IAM grants,
:func:`compare` and the command.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from constructs_lib.karpenter.iam_grants import Grant
from tooling.releases import chart_render
from tooling.releases.report_base import IMPORT_COMMAND, ROOT, Change, Release, Report, ReportError, _show, load
from tooling.releases.report_crds import _crd_changes
from tooling.releases.report_settings import (
    CHART,
    FEATURE_GATES,
    _flatten_values,
    _names,
    _under,
    chart_keys_written,
    settings,
)

# Chart keys that are the release itself: they change with every release (shown as such, not as a changed default).
_RELEASE_KEY = re.compile(r"(^|\.)image\.(tag|digest)$", re.ASCII)


# --- chart values and feature gates ---


def _chart_touches(key: str) -> tuple[str, ...]:
    touched = [s for s in settings() if s.target == CHART and (_under(key, s.path) or _under(s.path, key))]
    written = chart_keys_written()
    how = [f"the app writes it ({written[key]})"] if key in written else []
    how += [f"the app writes {k} ({w})" for k, w in written.items() if k != key and _under(k, key)][:1]
    return tuple(_names(touched) + how)


def _value_changes(old: Release, new: Release) -> Iterator[Change]:
    before, after = dict(_flatten_values(old.values)), dict(_flatten_values(new.values))
    written = chart_keys_written()
    for key in sorted(set(before) | set(after)):
        if _under(key, FEATURE_GATES):
            continue
        a, b = before.get(key, ...), after.get(key, ...)
        if a == b:
            continue
        if _RELEASE_KEY.search(key) and a is not ... and b is not ...:
            yield Change("release", "", key, f"{a} → {b} (the release itself)")
            continue
        touches = _chart_touches(key)
        if a is ...:
            yield Change("chart value", "", key, f"added (default {_show(b)})", touches)
        elif b is ...:
            writes = [k for k in written if _under(k, key)]
            decision = (
                f"chart value {key}: removed in {new.version}, and the app writes it ({written[writes[0]]}; "
                "constructs_lib/karpenter/release.py)"
                if writes
                else None
            )
            yield Change("chart value", "", key, f"removed (default was {_show(a)})", touches, decision)
        else:
            yield Change("chart value", "", key, f"default {_show(a)} → {_show(b)}", touches)


def _gates(values: Mapping[str, Any]) -> dict[str, Any]:
    gates = values.get("settings", {}).get("featureGates", {})
    return dict(gates) if isinstance(gates, Mapping) else {}


def _gate_changes(old: Release, new: Release) -> Iterator[Change]:
    from constructs_lib.karpenter.specs.controller import FEATURE_GATE_DEFAULTS

    before, after = _gates(old.values), _gates(new.values)
    table = {str(gate): on for gate, on in FEATURE_GATE_DEFAULTS.items()}
    setting = "setting `controller.featureGates`"
    for gate in sorted(set(before) | set(after)):
        a, b = before.get(gate, ...), after.get(gate, ...)
        offered = gate in table
        app = (
            f"{setting} lists it (the app's table: default {_show(table[gate])}; the synth takes it where the chosen "
            "release has it)"
            if offered
            else f"{setting} does not list it (constructs_lib/karpenter/specs/controller.py FEATURE_GATE_DEFAULTS)"
        )
        if a is ...:
            yield Change("feature gate", "", gate, f"added, default {_show(b)}", (app,))
        elif b is ...:
            decision = (
                f"feature gate {FEATURE_GATES}.{gate}: removed in {new.version}; {setting} offers it and writes it "
                "when set (constructs_lib/karpenter/specs/controller.py FEATURE_GATE_DEFAULTS)"
                if offered
                else None
            )
            yield Change("feature gate", "", gate, f"removed (default was {_show(a)})", (app,), decision)
        elif a != b:
            yield Change("feature gate", "", gate, f"default {_show(a)} → {_show(b)}", (app,))
    for gate in sorted(g for g in after if g in table and table[g] != after[g]):
        yield Change(
            "feature gate",
            "",
            gate,
            f"the app's table says default {_show(table[gate])}, the {new.version} chart {_show(after[gate])}",
            (setting,),
        )


# --- IAM ---


def _grants(template: Mapping[str, Any]) -> dict[str, set[Grant]]:
    from constructs_lib.karpenter.template_parity import template_grants

    return {principal: set(found) for principal, found in template_grants(template).items()}


def _grant_diff(label: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> Iterator[Change]:
    before, after = _grants(old), _grants(new)
    for principal in sorted(set(before) | set(after)):
        a, b = before.get(principal, set()), after.get(principal, set())
        for grant in sorted(b - a, key=Grant.describe):
            yield Change("IAM", label, principal, f"grant added: {grant.describe()}")
        for grant in sorted(a - b, key=Grant.describe):
            yield Change("IAM", label, principal, f"grant removed: {grant.describe()}")


def _iam_changes(old: Release, new: Release) -> Iterator[Change]:
    from constructs_lib.karpenter.template_parity import narrowings

    missing = False
    for release in (old, new):
        absent = [
            path
            for template, path in (
                (release.upstream_template, f"templates/upstream/karpenter-{release.version}.yaml"),
                (release.project_template, f"templates/karpenter-{release.version}.yaml"),
            )
            if template is None
        ]
        if absent:
            missing = True
            yield Change(
                "IAM",
                "",
                "",
                f"{release.version}: no template imported ({', '.join(absent)}): its grants are not compared; "
                + IMPORT_COMMAND.format(version=release.version),
            )
    diffs: list[Change] = []
    if old.upstream_template is not None and new.upstream_template is not None:
        diffs += _grant_diff("upstream's template", old.upstream_template, new.upstream_template)
    if old.project_template is not None and new.project_template is not None:
        diffs += _grant_diff("the project's template", old.project_template, new.project_template)
    yield from diffs
    if not missing and not diffs:
        yield Change("IAM", "", "", "no change: each template grants the same in both releases, per principal")
    if new.project_template is not None and new.upstream_template is not None:
        dropped = narrowings(new.project_template, new.upstream_template)
        # one line per statement and action (its resources together), as the synth's widening check says them
        grouped: dict[tuple[str, str, str, str, str], list[str]] = {}
        for each in dropped:
            key = (each.principal, each.grant.policy, each.grant.sid, each.grant.effect, each.grant.action)
            grouped.setdefault(key, []).append(each.grant.resource)
        for (principal, policy, sid, effect, action), resources in grouped.items():
            said = f"{policy} statement {sid!r}: {effect} {action} on {', '.join(resources)}"
            yield Change(
                "IAM",
                "the project's template",
                principal,
                f"does not cover upstream's {said}",
                decision=f"IAM {principal}: upstream's {new.version} template grants {said}, which "
                f"templates/karpenter-{new.version}.yaml does not cover",
            )
        if not dropped:
            yield Change(
                "IAM",
                "",
                "",
                f"templates/karpenter-{new.version}.yaml covers every grant of upstream's {new.version} template",
            )


def compare(root: Path, old: str, new: str, trees: Mapping[str, Path] | None = None) -> Report:
    """The report of moving from Karpenter ``old`` to ``new``, from what ``root`` (the repository or a scratch copy
    of it) keeps of each (ReportError: a release that is not kept); ``trees``: a release read from another folder
    laid out as the project (the import's staging folder)."""
    trees = trees or {}
    before, after = load(trees.get(old, root), old), load(trees.get(new, root), new)
    report = Report(old, new)
    report.changes.append(
        Change(
            "release",
            "",
            "",
            f"Charts: karpenter {before.chart.get('version')} → {after.chart.get('version')} "
            f"(appVersion {before.chart.get('appVersion')} → {after.chart.get('appVersion')}).",
        )
    )
    report.changes += _value_changes(before, after)  # the release's own keys (image tag, digest) first
    report.changes += _crd_changes(before, after)
    report.changes += _gate_changes(before, after)
    report.changes += _iam_changes(before, after)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make release-report", description="What moving between two kept Karpenter releases changes."
    )
    parser.add_argument("old", nargs="?", default=os.environ.get("SINCE", ""), help="the release you run (SINCE)")
    parser.add_argument(
        "new", nargs="?", default=os.environ.get("VERSION", ""), help="the release to move to (VERSION)"
    )
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    version = re.compile(r"^\d+\.\d+\.\d+$", re.ASCII)
    for name, value in (("SINCE", args.old), ("VERSION", args.new)):
        if not version.match(value):
            print(
                f"{name}={json.dumps(value)}: a Karpenter release like 1.14.1 (kept: "
                f"{', '.join(chart_render.kept_versions())}), e.g. make release-report SINCE=1.13.1 VERSION=1.14.1",
                file=sys.stderr,
            )
            return 2
    from constructs_lib.karpenter.iam_resources import GrantError

    try:
        report = compare(args.root, args.old, args.new)
        text = report.markdown()
    except (ReportError, GrantError) as error:  # a GrantError: one line per grant a template hides
        print(error, file=sys.stderr)
        return 2
    print(text, end="")
    return 1 if report.decisions else 0


if __name__ == "__main__":
    raise SystemExit(main())
