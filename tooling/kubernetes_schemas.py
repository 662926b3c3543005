"""Check Kubernetes objects and Helm values against the schemas in tooling/schemas/<karpenter-version>/,
with failure messages that name the object, the field path and the rule."""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
from jsonschema import Draft202012Validator

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
def _validator(karpenter_version: str, name: str) -> Draft202012Validator:
    return Draft202012Validator(schema(karpenter_version, name))


def _violations(document: Any, validator: Draft202012Validator, subject: str) -> list[str]:
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
    """Every EC2NodeClass, NodePool and NodeOverlay a loaded configuration applies (cluster "c")."""
    from constructs_lib import manifests

    classes, pools, overlays = manifests.node_objects(
        config.node_classes,
        config.node_pools,
        cluster_name="c",
        node_role_name="KarpenterNodeRole-c",
        node_overlays=config.node_overlays,
    )
    return [*classes.values(), *pools.values(), *overlays.values()]
