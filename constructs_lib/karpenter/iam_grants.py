"""IAM policy documents as grants a gate can compare: one (effect, action, resource, conditions) per pair.

The Karpenter template (templates/) writes each controller policy as ``!Sub`` over a JSON string, because its
condition keys embed the cluster name (``aws:ResourceTag/kubernetes.io/cluster/${ClusterName}``) and a YAML key
cannot hold an intrinsic. :func:`structured_document` turns such a string into a structured document with the same
intrinsics (every value that substitutes stays a ``Fn::Sub``; a key gets the cluster name written out), so that
cdk-nag, checkov and cfn-lint read its statements. :func:`grants` flattens a document, structured or not, into
grants; :func:`uncovered` says which grants of one set another set does not make -- a new action, a wider
resource, a dropped condition -- which is how the project's template is held to upstream's (constructs_lib.parity).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

_PLACEHOLDER = re.compile(r"\$\{(?!!)([^}]*)\}", re.ASCII)
CLUSTER_NAME = "ClusterName"

Condition = tuple[str, str, frozenset[str]]  # operator, key (IAM compares keys case-insensitively), values


@dataclass(frozen=True)
class Grant:
    """One action on one resource, under every condition of its statement."""

    policy: str  # logical id of the policy (or role) that holds the statement
    sid: str
    effect: str
    action: str
    resource: str
    conditions: frozenset[Condition]

    def describe(self) -> str:
        where = f"{self.policy} statement {self.sid!r}" if self.sid else f"{self.policy} (a statement without Sid)"
        when = "; ".join(
            f"{op} {key} {'|'.join(sorted(values))}" for op, key, values in sorted(self.conditions, key=str)
        )
        return f"{where}: {self.effect} {self.action} on {self.resource}" + (f" when {when}" if when else "")


class DocumentError(ValueError):
    """A policy string the importer cannot structure."""


def structured_document(text: str, cluster_name: str) -> dict[str, Any]:
    """The JSON policy of a ``!Sub`` string as a structured document with the same intrinsics.

    Values with a substitution become ``{"Fn::Sub": value}``; keys may substitute only ``${ClusterName}``, which is
    written out (it is the nested stack's ClusterName parameter, known at synth).
    """
    if "${" in cluster_name:
        raise DocumentError(f"cluster name {cluster_name!r} cannot be written into a policy's condition keys")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise DocumentError(f"not a JSON policy document ({error.msg} at line {error.lineno})") from None

    def key(name: str) -> str:
        names = set(_PLACEHOLDER.findall(name))
        if names - {CLUSTER_NAME}:
            raise DocumentError(
                f"key {name!r} substitutes {sorted(names - {CLUSTER_NAME})}: keys take only ${{ClusterName}}"
            )
        return name.replace("${" + CLUSTER_NAME + "}", cluster_name).replace("${!", "${")

    def value(node: Any) -> Any:
        if isinstance(node, dict):
            return {key(k): value(v) for k, v in node.items()}
        if isinstance(node, list):
            return [value(v) for v in node]
        if isinstance(node, str) and "${" in node:
            return {"Fn::Sub": node}
        return node

    result = value(document)
    if not isinstance(result, dict):
        raise DocumentError("a policy document is a JSON object")
    return result


def render(node: Any) -> str:
    """A value with its intrinsics written as ``${...}`` (the form of a ``!Sub`` string), to compare and to show."""
    if isinstance(node, str):
        return node
    if isinstance(node, dict) and len(node) == 1:
        ((fn, arg),) = node.items()
        if fn == "Fn::Sub":
            return arg if isinstance(arg, str) else _sub_with(arg[0], arg[1])
        if fn == "Ref":
            return "${" + str(arg) + "}"
        if fn == "Fn::GetAtt":
            return "${" + (arg if isinstance(arg, str) else ".".join(arg)) + "}"
        if fn == "Fn::Join":
            return str(arg[0]).join(render(part) for part in arg[1])
    return json.dumps(node, sort_keys=True)


def _sub_with(text: str, variables: Mapping[str, Any]) -> str:
    return _PLACEHOLDER.sub(lambda m: render(variables[m.group(1)]) if m.group(1) in variables else m.group(0), text)


def _as_list(node: Any) -> list[Any]:
    return node if isinstance(node, list) else [node]


def _conditions(block: Any, cluster_name: str | None) -> frozenset[Condition]:
    found = set()
    for operator, pairs in (block or {}).items():
        for name, values in pairs.items():
            name = name if cluster_name is None else name.replace(cluster_name, "${" + CLUSTER_NAME + "}")
            found.add((operator, name, frozenset(render(v) for v in _as_list(values))))
    return frozenset(found)


def grants(policy: str, document: Mapping[str, Any], cluster_name: str | None = None) -> Iterator[Grant]:
    """Every (action, resource) pair of a document's statements; with ``cluster_name``, a key that holds it is
    written back as ``${ClusterName}`` (so a structured document compares equal to its ``!Sub`` string)."""
    if set(document) == {"Fn::Sub"}:
        document = json.loads(render(document))
    for statement in _as_list(document.get("Statement", [])):
        if "NotAction" in statement or "NotResource" in statement or "NotPrincipal" in statement:
            # cannot be held to a list of grants: reported as one grant that covers nothing upstream has
            yield Grant(policy, str(statement.get("Sid", "")), str(statement["Effect"]), "Not*", "Not*", frozenset())
            continue
        conditions = _conditions(statement.get("Condition"), cluster_name)
        resources = [render(r) for r in _as_list(statement.get("Resource", []))]
        if "Principal" in statement:  # a trust policy: the principal is what is granted the action
            resources = (
                [f"principal {kind}:{render(p)}" for kind, ps in statement["Principal"].items() for p in _as_list(ps)]
                if isinstance(statement["Principal"], dict)
                else [f"principal {render(statement['Principal'])}"]
            )
        for action in _as_list(statement.get("Action", [])):
            for resource in resources:
                yield Grant(
                    policy,
                    str(statement.get("Sid", "")),
                    str(statement["Effect"]),
                    render(action),
                    resource,
                    conditions,
                )


def _pattern_covers(pattern: str, value: str, *, case: bool) -> bool:
    if not case:
        pattern, value = pattern.lower(), value.lower()
    return pattern == value or fnmatch.fnmatchcase(value, pattern.replace("[", "[[]"))


def covers(wide: Grant, narrow: Grant) -> bool:
    """Whether ``wide`` allows at least what ``narrow`` allows: its action and resource patterns match
    ``narrow``'s (a ``*`` in ``narrow`` only by a ``*`` in ``wide``), and each of its conditions is in
    ``narrow`` with no other values."""
    if wide.effect != narrow.effect:
        return False
    if not _pattern_covers(wide.action, narrow.action, case=False):
        return False
    if not _pattern_covers(wide.resource, narrow.resource, case=True):
        return False
    by_key = {(op, key.lower()): values for op, key, values in narrow.conditions}
    return all(
        (op, key.lower()) in by_key and by_key[(op, key.lower())] <= values for op, key, values in wide.conditions
    )


def uncovered(these: Iterable[Grant], reference: Iterable[Grant]) -> list[Grant]:
    """The Allow grants of ``these`` that no Allow grant of ``reference`` covers, and the Deny grants of
    ``reference`` that no Deny of ``these`` covers (a dropped Deny widens too)."""
    these, reference = list(these), list(reference)
    allows = [g for g in reference if g.effect == "Allow"]
    denies = [g for g in these if g.effect == "Deny"]
    wider = [g for g in these if g.effect == "Allow" and not any(covers(r, g) for r in allows)]
    dropped = [g for g in reference if g.effect == "Deny" and not any(covers(d, g) for d in denies)]
    return wider + dropped


def _nag_form(value: str) -> str:
    """A ``!Sub`` string as cdk-nag writes it in a finding id (``${AWS::Region}`` -> ``<AWS::Region>``)."""
    return _PLACEHOLDER.sub(lambda m: f"<{m.group(1)}>", value)


WILDCARD_RESOURCE = (
    "Karpenter creates or chooses these resources at run time (from the node classes' selectors and the pools), so "
    "their ids cannot be named at deploy"
)
ANY_RESOURCE = "Resource '*' as upstream writes it for these calls"


def wildcard_acknowledgments(policy: str, text: str, template: str) -> dict[str, str]:
    """cdk-nag's AwsSolutions-IAM5 finding ids of a ``!Sub`` policy's wildcards, each with a reason that says what
    the statements holding the wildcard grant, under which conditions (derived from the statements themselves)."""
    by_finding: dict[str, list[Grant]] = {}
    for grant in grants(policy, {"Fn::Sub": text}):
        if grant.effect != "Allow":
            continue
        if "*" in grant.resource:
            by_finding.setdefault(f"AwsSolutions-IAM5[Resource::{_nag_form(grant.resource)}]", []).append(grant)
        if "*" in grant.action:
            by_finding.setdefault(f"AwsSolutions-IAM5[Action::{grant.action}]", []).append(grant)
    return {finding: _reason(held, template) for finding, held in by_finding.items()}


def _reason(held: list[Grant], template: str) -> str:
    statements: dict[str, tuple[list[str], frozenset[Condition]]] = {}
    for grant in held:
        actions, _ = statements.setdefault(grant.sid or "(no Sid)", ([], grant.conditions))
        if grant.action not in actions:
            actions.append(grant.action)
    said = "; ".join(
        f"{sid}: {', '.join(actions)} "
        + (f"when {', '.join(sorted({key for _, key, _ in conditions}))}" if conditions else "with no condition")
        for sid, (actions, conditions) in statements.items()
    )
    kind = ANY_RESOURCE if held[0].resource == "*" else WILDCARD_RESOURCE
    bound = [g for g in held if g.conditions]
    kind += (
        ": nothing but the actions bounds it."
        if not bound
        else "; the conditions listed bound it."
        if len(bound) == len(held)
        else "; the conditions listed bound the statements that have them, the others only by their actions."
    )
    return (
        f"Karpenter's controller policy from {template}, which grants no more than upstream's template of the release "
        f"(the synth refuses a widening; make template-diff): {said}. {kind}"
    )
