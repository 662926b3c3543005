"""What the project's Karpenter template changes from upstream's, and why (``make template-diff``).

Compares templates/karpenter-<version>.yaml with upstream's template of the same release
(templates/upstream/karpenter-<version>.yaml, unmodified) and prints:

- the grants, per principal (constructs_lib.karpenter.template_parity): how many each template makes, every grant the
  project's adds (a widening: refused by the synth unless acknowledged) and every grant it drops (a narrowing);
- every other difference: the template's description, parameters, resources renamed (matched by type and
  name), properties added, removed or changed (values compared with their intrinsics written as ``${...}``;
  a policy document compared by its grants);

each with the reason given in templates/changes/karpenter-<version>.yaml (``changes:``). A subject may be a glob
pattern, except for IAM content (constructs_lib.karpenter.iam_resources: a resource that grants, added, removed or renamed, or
one of its properties that hold, direct or attach grants): that is explained only by a reason under its exact
subject, and each grant it adds by a ``widenings:`` entry naming principal, policy, statement, action and resource;
a pattern never explains it. Exits 1 when a difference has no reason, a reason matches no difference (or only IAM
content), a grant cannot be read, or a widening is not acknowledged.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from constructs_lib.karpenter import yaml_load
from constructs_lib.karpenter.iam_grants import render
from constructs_lib.karpenter.iam_resources import GrantError
from constructs_lib.karpenter.iam_types import grant_properties, is_iam_type
from constructs_lib.karpenter.template_parity import (
    acknowledged_widenings,
    changes_file,
    load_template,
    narrowings,
    template_grants,
    upstream_template,
    widening_problems,
    widenings,
)
from karpenter_stack import versions

# CloudFormation's defaults: writing them out or leaving them out is the same resource.
DEFAULTS = {"Path": "/"}


@dataclass(frozen=True)
class Difference:
    subject: str  # e.g. Resources.KarpenterNodeRole.Properties.Path (the project's logical id)
    what: str
    iam: bool = False  # IAM content: explained by its exact subject (and its grants by widenings:), never a pattern


def _value(node: Any) -> Any:
    """A property value with intrinsics rendered, so equal values written differently compare equal."""
    if isinstance(node, dict):
        if len(node) == 1 and next(iter(node)) in ("Fn::Sub", "Ref", "Fn::GetAtt", "Fn::Join"):
            return render(node)
        return {k: _value(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_value(v) for v in node]
    return node


def _show(value: Any) -> str:
    return json.dumps(_value(value), sort_keys=True)


def _identity(logical_id: str, resource: Mapping[str, Any]) -> tuple[str, str]:
    props = resource.get("Properties", {})
    for name in ("ManagedPolicyName", "RoleName", "QueueName"):
        if name in props:
            return (str(resource.get("Type")), render(props[name]))
    return (str(resource.get("Type")), logical_id)


def differences(project: Mapping[str, Any], upstream: Mapping[str, Any]) -> list[Difference]:
    found: list[Difference] = []
    if project.get("Description") != upstream.get("Description"):
        found.append(Difference("Description", "the template's description rewritten"))
    ours_p, theirs_p = project.get("Parameters", {}), upstream.get("Parameters", {})
    for name in sorted(set(ours_p) | set(theirs_p)):
        found.extend(_mapping_diff(f"Parameters.{name}", ours_p.get(name), theirs_p.get(name)))
    ours = {_identity(k, v): (k, v) for k, v in project.get("Resources", {}).items()}
    theirs = {_identity(k, v): (k, v) for k, v in upstream.get("Resources", {}).items()}
    for identity in sorted(set(ours) | set(theirs)):
        kind = identity[0]
        iam = is_iam_type(kind)
        if identity not in ours:
            found.append(Difference(f"Resources.{theirs[identity][0]}", f"removed {kind} (upstream has it)", iam))
            continue
        logical_id, resource = ours[identity]
        if identity not in theirs:
            found.append(Difference(f"Resources.{logical_id}", f"added {kind} (upstream has no such resource)", iam))
            continue
        upstream_id, upstream_resource = theirs[identity]
        if upstream_id != logical_id:
            found.append(Difference(f"Resources.{logical_id}", f"logical id {upstream_id} renamed", iam))
        props, upstream_props = resource.get("Properties", {}), upstream_resource.get("Properties", {})
        for name in sorted(set(props) | set(upstream_props)):
            subject = f"Resources.{logical_id}.Properties.{name}"
            mine, other = props.get(name, DEFAULTS.get(name)), upstream_props.get(name, DEFAULTS.get(name))
            if name in grant_properties(kind):
                if _show(mine) != _show(other):
                    change = "rewritten" if name in props and name in upstream_props else "added" if mine else "removed"
                    found.append(Difference(subject, f"{change} (IAM content: compared by its grants above)", True))
            elif _show(mine) != _show(other):
                found.append(Difference(subject, f"{_show(other)} -> {_show(mine)}"))
        for key in sorted((set(resource) | set(upstream_resource)) - {"Properties", "Type"}):
            if _show(resource.get(key)) != _show(upstream_resource.get(key)):
                found.append(
                    Difference(
                        f"Resources.{logical_id}.{key}",
                        f"{_show(upstream_resource.get(key))} -> {_show(resource.get(key))}",
                    )
                )
    return found


def _mapping_diff(subject: str, mine: Any, other: Any) -> list[Difference]:
    if mine is None or other is None:
        return [Difference(subject, "added" if other is None else "removed")] if mine != other else []
    return [
        Difference(
            f"{subject}.{key}",
            f"{_show(other.get(key)) if key in other else '(none)'} -> {_show(mine.get(key)) if key in mine else '(none)'}",
        )
        for key in sorted(set(mine) | set(other))
        if _show(mine.get(key)) != _show(other.get(key))
    ]


def report(template: Path) -> tuple[list[str], list[str]]:
    """The diff as lines, and the problems (differences without a reason, stale reasons, grants the gate cannot
    read, open widenings)."""
    reference = upstream_template(template)
    project, upstream = load_template(template), load_template(reference)
    reasons_path = changes_file(template)
    where = f"templates/changes/{reasons_path.name}"
    reasons: dict[str, str] = (
        (yaml_load.safe_load(reasons_path.read_text()) or {}).get("changes") or {} if reasons_path.exists() else {}
    )
    lines = [
        f"{template.name} against upstream's template of the release ({reference.relative_to(template.parent.parent)})",
        "",
    ]
    grant_lines, problems = _grant_section(template, project, upstream, where)
    diff_lines, unexplained = _explained(template.name, differences(project, upstream), reasons, where)
    # the widenings: entries themselves (malformed, or acknowledging a grant the template does not make)
    problems += unexplained + [p for p in widening_problems(template) if p.startswith("templates/changes/")]
    return [*lines, *grant_lines, "", *diff_lines], problems


def _grant_section(
    template: Path, project: Mapping[str, Any], upstream: Mapping[str, Any], where: str
) -> tuple[list[str], list[str]]:
    """The grants per principal, the wider ones with their acknowledgment, the narrower ones."""
    lines: list[str] = []
    problems: list[str] = []
    names = (f"templates/{template.name}", f"templates/upstream/{template.name}")
    try:
        ours, theirs = template_grants(project, names[0]), template_grants(upstream, names[1])
        wider, narrower = widenings(project, upstream, names), narrowings(project, upstream, names)
    except GrantError as error:
        lines.append("Grants: not read (the gate reads every grant or refuses the template)")
        problems.extend(error.lines)
        ours, theirs, wider, narrower = {}, {}, [], []
    else:
        lines.append("Grants (one action on one resource), per principal: the project's / upstream's")
        for principal in sorted(set(ours) | set(theirs)):
            lines.append(f"  {principal}: {len(ours.get(principal, []))} / {len(theirs.get(principal, []))}")
    acknowledged = acknowledged_widenings(template)
    lines.append(f"Wider than upstream's: {len(wider) or 'none'}")
    for w in wider:
        why = acknowledged.get(w.key)
        lines.append(f"  + {w.describe()}")
        lines.append(f"      why: {why}" if why else "      NOT ACKNOWLEDGED")
        if not why:
            problems.append(
                f"{template.name}: {w.describe()}: wider than upstream's, not acknowledged (widenings: in {where})"
            )
    lines.append(f"Narrower than upstream's: {len(narrower) or 'none'}")
    lines.extend(f"  - {n.describe()}" for n in narrower)
    return lines, problems


def _explained(
    name: str, found: list[Difference], reasons: Mapping[str, str], where: str
) -> tuple[list[str], list[str]]:
    """Each difference with its reason; a pattern explains no IAM content (only its exact subject does)."""
    lines, problems = [f"Other differences: {len(found)}"], []
    used: set[str] = set()
    patterns_over_iam: dict[str, list[str]] = {}
    for difference in found:
        matched = [pattern for pattern in reasons if fnmatch.fnmatchcase(difference.subject, pattern)]
        refused = [p for p in matched if difference.iam and p != difference.subject]
        matched = [p for p in matched if p not in refused]
        for pattern in refused:
            patterns_over_iam.setdefault(pattern, []).append(difference.subject)
        lines.append(f"  {difference.subject}: {difference.what}")
        if matched:
            used.update(matched)
            lines.append(f"      why: {' '.join(str(reasons[matched[0]]).split())}")
        elif difference.iam:
            lines.append("      NO REASON GIVEN (IAM content: a reason under this exact subject, never a pattern)")
            not_patterns = f", never by a pattern ({', '.join(map(repr, refused))} does not explain it)"
            problems.append(
                f"{name}: {difference.subject}: {difference.what}: no reason in {where}; IAM content is explained by "
                "a reason under its exact subject and its grants under widenings:" + (not_patterns if refused else "")
            )
        else:
            lines.append("      NO REASON GIVEN")
            problems.append(f"{name}: {difference.subject}: no reason in {where}")
    problems.extend(
        f"{where}: {pattern!r} is a pattern over IAM content ({', '.join(patterns_over_iam[pattern])}), which is "
        "explained only under its exact subject; write each subject out"
        if pattern in patterns_over_iam
        else f"{where}: {pattern!r} matches no difference any more; remove it"
        for pattern in reasons
        if pattern not in used
    )
    return lines, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tooling.releases.template_parity", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("versions", nargs="*", help="Karpenter versions (default: every template in templates/)")
    args = parser.parse_args(argv)
    failed = False
    for version in args.versions or versions.available_karpenter_versions():
        lines, problems = report(versions.karpenter_template(version))
        print("\n".join([*lines, *([""] + problems if problems else [])]))
        failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
