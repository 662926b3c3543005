"""The Karpenter template (templates/karpenter-<version>.yaml) held to upstream's (templates/upstream/).

The project's template is its own version of upstream's getting-started template. What it grants must be what
upstream grants for the same release, or less: :func:`widenings` lists every grant of the project's template that
upstream's does not make (a new action, a wider resource, a dropped condition, a dropped Deny, a new principal or
managed policy), per principal: the controller (every managed policy: the installer attaches all of them to the
controller's role), each role, user or group, each resource policy. The grants are read by
constructs_lib.karpenter.iam_resources, whatever resource type or intrinsic holds them; one it cannot read refuses the template.
The synth refuses a widening that is not acknowledged with a reason in ``templates/changes/karpenter-<version>.yaml``
(``widenings:``, each naming principal, policy, statement, action and resource), which also says why each other
difference exists (``make template-diff`` prints them all: tooling/template_parity.py).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import yaml_load
from .iam_grants import Grant, uncovered
from .iam_resources import CONTROLLER as CONTROLLER
from .iam_resources import GrantError as GrantError
from .iam_resources import cdk_out_nested, read_grants


class _CfnLoader(yaml_load.SAFE_LOADER):  # type: ignore[misc,valid-type]
    """Keeps CloudFormation's short-form tags as {'Fn::X': value} (``!Ref`` as {'Ref': value})."""


def _intrinsic(loader: Any, suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if name == "Fn::GetAtt":
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return {name: value}


_CfnLoader.add_multi_constructor("!", _intrinsic)


def load_template(path: Path) -> dict[str, Any]:
    """A CloudFormation YAML template with its short-form intrinsics as the long form."""
    loaded = yaml.load(path.read_text(), Loader=_CfnLoader)  # noqa: S506 - a SafeLoader subclass
    if not isinstance(loaded, dict):
        raise ValueError(f"{path}: not a CloudFormation template")
    return loaded


def template_grants(template: Mapping[str, Any], where: str = "the template") -> dict[str, list[Grant]]:
    """Every grant of a template, per principal, whatever resource type or intrinsic holds it
    (constructs_lib.karpenter.iam_resources); raises GrantError, one line per grant it cannot read."""
    return read_grants(template, where)


@dataclass(frozen=True)
class Widening:
    principal: str
    grant: Grant

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        """How an acknowledgment names it: principal, policy (logical id), statement Sid, action, resource."""
        return (self.principal, self.grant.policy, self.grant.sid, self.grant.action, self.grant.resource)

    def describe(self) -> str:
        """One grant, with whom it is granted to; a dropped Deny says so."""
        said = self.grant.describe()
        return (
            f"{said} (to {self.principal})" if self.grant.effect == "Allow" else f"{said}, dropped ({self.principal})"
        )


def widenings(
    project: Mapping[str, Any], upstream: Mapping[str, Any], names: tuple[str, str] = ("the template", "upstream's")
) -> list[Widening]:
    """Grants of ``project`` that ``upstream`` does not make, per principal (and upstream's Deny that it drops);
    raises GrantError when a grant of either cannot be read (``names`` name them in its lines)."""
    ours, theirs = template_grants(project, names[0]), template_grants(upstream, names[1])
    return [
        Widening(principal, grant)
        for principal in sorted(set(ours) | set(theirs))
        for grant in uncovered(ours.get(principal, []), theirs.get(principal, []))
    ]


def narrowings(
    project: Mapping[str, Any], upstream: Mapping[str, Any], names: tuple[str, str] = ("the template", "upstream's")
) -> list[Widening]:
    """Grants of ``upstream`` that ``project`` does not make (what the project narrowed or dropped)."""
    return widenings(upstream, project, (names[1], names[0]))


def upstream_template(template: Path) -> Path:
    """Upstream's template of the same release: templates/upstream/<same name>."""
    return template.parent / "upstream" / template.name


def changes_file(template: Path) -> Path:
    """Why the project's template differs from upstream's: templates/changes/<same name>."""
    return template.parent / "changes" / template.name


@functools.cache
def _changes(path: Path) -> dict[str, Any]:
    loaded = yaml_load.safe_load(path.read_text()) if path.exists() else {}
    return loaded or {}


WIDENING_KEYS = ("principal", "policy", "sid", "action", "resource", "why")
MIN_REASON = 20


def _widening_entries(template: Path) -> tuple[list[dict[str, str]], list[str]]:
    """The changes file's ``widenings:`` entries, and one line per entry that is not {principal, policy, sid, action,
    resource, why} with a reason a reviewer can check (every field written out: a pattern matches only itself)."""
    entries, problems = [], []
    where = f"templates/changes/{template.name}"
    for i, entry in enumerate(_changes(changes_file(template)).get("widenings") or []):
        if not isinstance(entry, dict) or set(entry) != set(WIDENING_KEYS):
            keys = sorted(entry) if isinstance(entry, dict) else type(entry).__name__
            problems.append(f"{where}: widenings[{i}] has {keys}: each needs exactly {', '.join(WIDENING_KEYS)}")
        elif len(str(entry["why"]).strip()) < MIN_REASON:
            problems.append(
                f"{where}: widenings[{i}].why: a reason a reviewer can check, at least {MIN_REASON} characters"
            )
        else:
            entries.append({k: str(entry[k]) for k in WIDENING_KEYS})
    return entries, problems


def _key(entry: Mapping[str, str]) -> tuple[str, str, str, str, str]:
    return (entry["principal"], entry["policy"], entry["sid"], entry["action"], entry["resource"])


def acknowledged_widenings(template: Path) -> dict[tuple[str, str, str, str, str], str]:
    """The widenings acknowledged in the changes file: (principal, policy, sid, action, resource) -> reason."""
    return {_key(w): w["why"] for w in _widening_entries(template)[0]}


@functools.cache
def parsed_template(path: Path) -> dict[str, Any]:
    """:func:`load_template`, once per file and process (not to be changed by the caller)."""
    return load_template(path)


@functools.cache
def widening_problems(template: Path) -> tuple[str, ...]:
    """The synth's check (empty: the template grants no more than upstream's, or says why): one line per grant the
    gate cannot read (an unknown IAM type, a document hidden behind an intrinsic, a nested stack), one for the grants
    without a reason (grouped by principal, statement and action), one per malformed acknowledgment, one per
    acknowledgment of a grant the template does not make (it would approve that grant in advance)."""
    reference = upstream_template(template)
    where = f"templates/{template.name}"
    if not reference.exists():
        return (f"{where}: upstream's template of the release is missing (templates/upstream/{template.name})",)
    entries, problems = _widening_entries(template)
    acknowledged = acknowledged_widenings(template)
    try:
        found = widenings(
            parsed_template(template), parsed_template(reference), (where, f"templates/upstream/{template.name}")
        )
    except GrantError as error:
        return (*error.lines, *problems)
    open_: dict[tuple[str, str, str, str, str], list[str]] = {}
    for w in found:
        if w.key not in acknowledged:
            open_.setdefault((w.principal, w.grant.policy, w.grant.sid, w.grant.effect, w.grant.action), []).append(
                w.grant.resource
            )
    if open_:
        said = "; ".join(
            f"{principal}: {policy} "
            + (f"statement {sid!r}: " if sid else "(a statement without Sid): ")
            + (
                f"Allow {action} on {', '.join(resources)}"
                if effect == "Allow"
                else f"drops upstream's Deny {action} on {', '.join(resources)}"
            )
            for (principal, policy, sid, effect, action), resources in open_.items()
        )
        problems.append(
            f"{where} grants more than upstream's template of the release: {said} (acknowledge each grant with a "
            f"reason under widenings: in templates/changes/{template.name}, naming its principal, policy, sid, "
            "action and resource, or remove it)"
        )
    made = {w.key for w in found}
    problems += [
        f"templates/changes/{template.name}: widenings acknowledges {e['action']} on {e['resource']} "
        f"({e['principal']}: {e['policy']} statement {e['sid']!r}), which the template does not grant beyond "
        "upstream's; remove it"
        for e in entries
        if _key(e) not in made
    ]
    return tuple(problems)


def synthesized_problems(outdir: Path, karpenter: Mapping[str, tuple[Path, str]]) -> list[str]:
    """The gate over a synth (cdk.out/): one line per grant of any stack, nested stacks included (through their
    templates in ``outdir``), that the gate cannot read; and, for each stack of ``karpenter`` (template file name ->
    the Karpenter template it includes and the cluster name), one line per grant of its Karpenter nested stack
    that the Karpenter template does not make (what the synth added after the template was held to upstream's)."""
    problems: list[str] = []
    nested = cdk_out_nested(outdir)
    for file in sorted(outdir.glob("*.template.json")):
        if file.name.endswith(".nested.template.json"):
            continue  # read through the stack that holds it
        template = json.loads(file.read_text())
        where = f"{outdir.name}/{file.name}"
        try:
            read_grants(template, where, nested=nested)
        except GrantError as error:
            problems.extend(error.lines)
            continue
        if file.name not in karpenter:
            continue
        source, cluster_name = karpenter[file.name]
        expected = parsed_template(source)
        ids = set(expected.get("Resources", {}))
        found = [
            (name, stack)
            for logical_id, resource in template.get("Resources", {}).items()
            if resource.get("Type") == "AWS::CloudFormation::Stack"
            for name, stack in [nested(logical_id, resource)]
            if ids <= set(stack.get("Resources", {}))
        ]
        if not found:
            problems.append(f"{where}: no nested stack holds templates/{source.name}'s resources")
        for name, stack in found:
            ours = read_grants(stack, name, nested=nested, cluster_name=cluster_name)
            theirs = template_grants(expected, f"templates/{source.name}")
            problems += [
                f"{name}: the synthesized Karpenter stack grants more than templates/{source.name}: "
                f"{grant.describe()} (to {principal}); the template is what is held to upstream's: put the grant "
                "there (and acknowledge it) or remove what adds it"
                for principal in sorted(ours)
                for grant in uncovered(ours[principal], theirs.get(principal, []))
            ]
    return problems
