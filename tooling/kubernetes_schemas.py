"""Check Kubernetes objects and Helm values against the schemas in tooling/schemas/<karpenter-version>/,
with failure messages that name the object, the field path and the rule.

The CRD mirrors' patterns are Go RE2 expressions, which the API server searches unanchored (apiextensions'
OpenAPI validation, Go's regexp.MatchString). jsonschema's own ``pattern`` searches with Python's ``re``, which
differs from RE2 on values a user can write: ``$`` also matches before a final newline (``100Gi`` and a newline
would pass ``^...$``), ``\\d`` takes any Unicode digit (U+0663), ``\\s`` also takes a vertical tab and Unicode
spaces. So ``pattern`` is matched with RE2 itself here (google-re2), and the one format the API server checks in
these CRDs, ``date-time``, with an RFC 3339 checker (``date_time``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import re2
from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators

SCHEMAS = Path(__file__).resolve().parent / "schemas"
BY_KIND = {"NodePool": "nodepool", "EC2NodeClass": "ec2nodeclass", "NodeOverlay": "nodeoverlay"}


@cache
def schema(karpenter_version: str, name: str) -> dict[str, Any]:
    path = SCHEMAS / f"karpenter-{karpenter_version}" / f"{name}.schema.json"
    if not path.is_file():
        raise AssertionError(
            f"no schema {path.relative_to(SCHEMAS.parent)}: mirror Karpenter {karpenter_version}'s "
            "CRDs/chart values there before using that version"
        )
    schema: dict[str, Any] = json.loads(path.read_text())
    return schema


@cache
def _re2(pattern: str) -> Any:
    return re2.compile(pattern)


def re2_search(pattern: str, value: str) -> bool:
    """Whether the API server's pattern check accepts ``value``: an unanchored RE2 search."""
    return _re2(pattern).search(value) is not None


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not re2_search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_DATE_TIME = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2})[Tt]([0-9]{2}:[0-9]{2}:[0-9]{2})(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})", re.ASCII
)
FORMATS = FormatChecker(formats=())


@FORMATS.checks("date-time")
def date_time(value: object) -> bool:
    """An RFC 3339 date-time (2026-11-26T11:00:00Z), as the API server's "date-time" format takes it."""
    match = _DATE_TIME.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return not isinstance(value, str)
    try:
        datetime.fromisoformat(f"{match.group(1)}T{match.group(2)}")
    except ValueError:
        return False
    return True


# Draft 2020-12 with RE2 patterns and the API server's formats.
KubernetesValidator: Any = validators.extend(Draft202012Validator, {"pattern": _pattern})  # type: ignore[no-untyped-call]


@cache
def _validator(karpenter_version: str, name: str) -> Any:
    return KubernetesValidator(schema(karpenter_version, name), format_checker=FORMATS)


def _violations(document: Any, validator: Any, subject: str) -> list[str]:
    problems = []
    for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path)):
        problems.append(f"{subject}: {_path(error.absolute_path)}: {error.validator} rule: {error.message}")
    return problems


def object_violations(obj: dict[str, Any], karpenter_version: str, kubernetes_version: str) -> list[str]:
    """Karpenter kinds against the mirrored CRD schemas; core kinds against the Kubernetes API schema
    of the cluster's version (kubernetes-validate, strict: unknown fields rejected)."""
    return list(_object_violations(json.dumps(obj, sort_keys=True), karpenter_version, kubernetes_version))


@cache  # the suite validates the same objects in many configurations and tests
def _object_violations(document: str, karpenter_version: str, kubernetes_version: str) -> tuple[str, ...]:
    obj = json.loads(document)
    kind = obj.get("kind")
    subject = f"{kind}/{obj.get('metadata', {}).get('name')}"
    if kind in BY_KIND:
        return tuple(_violations(obj, _validator(karpenter_version, BY_KIND[kind]), subject))
    try:
        kubernetes_validate.validate(obj, f"{kubernetes_version}.0", strict=True)
    except kubernetes_validate.ValidationError as error:
        return (f"{subject}: {_path(error.absolute_path)}: {error.validator} rule: {error.message}",)
    return ()


def _path(parts: Iterable[object]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".") or "(root)"


def values_violations(values: dict[str, Any], karpenter_version: str) -> list[str]:
    return _violations(values, _validator(karpenter_version, "controller-values"), "karpenter chart values")


def config_objects(config: Any) -> list[dict[str, Any]]:
    """Every EC2NodeClass, NodePool and NodeOverlay a loaded configuration applies (its node role named as
    Karpenter's template names it)."""
    from constructs_lib.karpenter import manifests

    classes, pools, overlays = manifests.node_objects(
        config.node_classes,
        config.node_pools,
        cluster_name=config.cluster_name,
        node_role_name=f"KarpenterNodeRole-{config.cluster_name}",
        node_overlays=config.node_overlays,
    )
    return [*classes.values(), *pools.values(), *overlays.values()]
