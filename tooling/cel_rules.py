"""Evaluate the CRDs' CEL rules (``x-kubernetes-validations``, mirrored in
tooling/schemas/karpenter-<version>/cel-rules.json) on an object, as the API server does on create:
defaults applied first, every rule on every value at its path, transition rules (``oldSelf``) skipped.

The CEL implementation is cel-python; the two Kubernetes library functions the rules use beyond standard
CEL are added with Kubernetes' semantics: ``<string>.split(<sep>)`` (strings extension) and
``<string>.find(<regex>)`` (regex extension: the first match, or "").
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from tooling.kubernetes_schemas import SCHEMAS

# Kubernetes kind -> the key of its CRD in the mirror.
KINDS = {
    "NodePool": "NodePool karpenter.sh/v1",
    "EC2NodeClass": "EC2NodeClass karpenter.k8s.aws/v1",
    "NodeOverlay": "NodeOverlay karpenter.sh/v1alpha1",
}
_TOKEN = re.compile(r"\[\]|\{\}|[^.\[\]{}]+")


def _split(value: Any, separator: Any) -> celtypes.ListType:
    return celtypes.ListType([celtypes.StringType(p) for p in str(value).split(str(separator))])


def _find(value: Any, pattern: Any) -> celtypes.StringType:
    match = re.search(str(pattern), str(value))
    return celtypes.StringType(match.group(0) if match else "")


_ENV = celpy.Environment()
_FUNCTIONS: dict[str, Any] = {"split": _split, "find": _find}


@cache
def _program(rule: str) -> Any:
    return _ENV.program(_ENV.compile(rule), functions=_FUNCTIONS)


@cache
def mirror(karpenter_version: str) -> dict[str, Any]:
    path = SCHEMAS / f"karpenter-{karpenter_version}" / "cel-rules.json"
    if not path.is_file():
        raise AssertionError(
            f"no CEL rules mirrored for Karpenter {karpenter_version}: run "
            "tooling/mirror_crd_rules.py against that release's CRDs"
        )
    rules: dict[str, Any] = json.loads(path.read_text())
    return rules


def _tokens(path: str) -> list[str]:
    return [] if path == "(root)" else _TOKEN.findall(path)


def locate(document: Any, tokens: list[str], where: str = "") -> Iterator[tuple[str, Any]]:
    """(concrete path, value) of every value at ``tokens`` (``[]``: each item, ``{}``: each map value)."""
    if not tokens:
        yield where or "(root)", document
        return
    head, rest = tokens[0], tokens[1:]
    if head == "[]" and isinstance(document, list):
        for i, item in enumerate(document):
            yield from locate(item, rest, f"{where}[{i}]")
    elif head == "{}" and isinstance(document, dict):
        for key, item in document.items():
            yield from locate(item, rest, f"{where}[{key}]")
    elif isinstance(document, dict) and head in document:
        yield from locate(document[head], rest, f"{where}.{head}" if where else head)


def _without_nulls(value: Any) -> Any:
    """The API server drops null values of fields that are not nullable (none of Karpenter's are)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def with_defaults(obj: dict[str, Any], defaults: list[dict[str, Any]]) -> dict[str, Any]:
    """A copy of ``obj`` without nulls and with the schema's defaults filled in where their parent
    exists, shallow paths first (a defaulted object then gets the defaults of its own fields), as the
    API server does."""
    result: dict[str, Any] = _without_nulls(copy.deepcopy(obj))
    for default in sorted(defaults, key=lambda d: len(_tokens(d["path"]))):
        *parent, name = _tokens(default["path"])
        for _, container in list(locate(result, parent)):
            if isinstance(container, dict) and name not in container:
                container[name] = copy.deepcopy(default["default"])
    return result


@dataclass
class Outcome:
    violations: list[str] = field(default_factory=list)
    evaluated: int = 0  # rule evaluations (a rule on a list item counts once per item)
    skipped: list[str] = field(default_factory=list)  # transition rules: only an update has an oldSelf


# (rule, value as JSON) -> whether the rule holds. The suite evaluates the same values under the same rules
# again and again (one node class in many configurations, every requirement item): about 6,700 evaluations,
# 1,300 of them distinct.
_VERDICTS: dict[tuple[str, str], bool] = {}


def _passes(rule: str, key: str, value: Any) -> bool:
    verdict = _VERDICTS.get((rule, key))
    if verdict is None:
        try:
            result = _program(rule).evaluate({"self": json_to_cel(value)})
        except CELEvalError as error:  # the API server refuses an object whose rule errors
            result = error
        verdict = _VERDICTS[(rule, key)] = result is True or result == celtypes.BoolType(True)
    return verdict


def evaluate(obj: dict[str, Any], karpenter_version: str) -> Outcome:
    crd = mirror(karpenter_version)["kinds"][KINDS[obj["kind"]]]
    subject = f"{obj['kind']}/{obj.get('metadata', {}).get('name')}"
    document = with_defaults(obj, crd["defaults"])
    outcome = Outcome()
    for rule in crd["rules"]:
        if rule["transition"]:
            outcome.skipped.append(f"{rule['path']}: {rule['rule']}")
            continue
        for where, value in locate(document, _tokens(rule["path"])):
            outcome.evaluated += 1
            if not _passes(rule["rule"], json.dumps(value, sort_keys=True), value):
                message = rule.get("message") or f"failed rule: {rule['rule']}"
                outcome.violations.append(f"{subject}: {where}: {message} (rule: {rule['rule']})")
    return outcome


def transition_violations(old: dict[str, Any], new: dict[str, Any], karpenter_version: str) -> list[str]:
    """The transition rules (``oldSelf``) an update from ``old`` to ``new`` breaks: what the API server
    refuses when CloudFormation applies a changed object to a running cluster. A rule applies where its
    path exists in both objects (after defaulting)."""
    crd = mirror(karpenter_version)["kinds"][KINDS[new["kind"]]]
    before, after = with_defaults(old, crd["defaults"]), with_defaults(new, crd["defaults"])
    broken = []
    for rule in (r for r in crd["rules"] if r["transition"]):
        olds = dict(locate(before, _tokens(rule["path"])))
        for where, value in locate(after, _tokens(rule["path"])):
            if where not in olds:
                continue
            result = _program(rule["rule"]).evaluate({"self": json_to_cel(value), "oldSelf": json_to_cel(olds[where])})
            if result is not True and result != celtypes.BoolType(True):
                broken.append(f"{where}: {rule.get('message') or rule['rule']}")
    return broken
