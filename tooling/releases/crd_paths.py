"""The field paths of Karpenter's NodePool, NodeOverlay and EC2NodeClass CRDs (from the mirrored schemas in
``tooling/schemas/``) and which of them the app writes, found in the objects it emits: a path is ``spec.a.b``, with
``[]`` for a list's entries (``spec.template.spec.requirements[].minValues``); a map's keys are values, not paths.

``python -m tooling.releases.crd_paths`` prints, per CRD, how many paths the product's configurations and the transition
matrix's moves write, and those neither written nor listed in ``constructs_lib/karpenter/specs/not_exposed.py``."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from constructs_lib.karpenter.specs.not_exposed import not_exposed
from tooling.kubernetes_schemas import BY_KIND, config_objects, schema

KINDS = tuple(BY_KIND)  # NodePool, EC2NodeClass, NodeOverlay


def crd_paths(karpenter_version: str, kind: str) -> list[str]:
    """Every field path of ``kind``'s mirrored schema, parents before children."""
    return list(_paths(schema(karpenter_version, BY_KIND[kind]), ""))


def _paths(node: Mapping[str, Any], path: str) -> Iterator[str]:
    for key, child in (node.get("properties") or {}).items():
        below = f"{path}.{key}" if path else key
        yield below
        yield from _paths(child, below)
    if isinstance(node.get("items"), dict):
        yield from _paths(node["items"], path + "[]")


def written_paths(objects: Iterable[Mapping[str, Any]], karpenter_version: str) -> dict[str, set[str]]:
    """The field paths each kind's ``objects`` set, by kind (every kind present, empty when none is given)."""
    found: dict[str, set[str]] = {kind: set() for kind in KINDS}
    for obj in objects:
        kind = str(obj.get("kind"))
        _written(obj, schema(karpenter_version, BY_KIND[kind]), "", found[kind])
    return found


def _written(value: Any, node: Mapping[str, Any], path: str, out: set[str]) -> None:
    properties = node.get("properties")
    if isinstance(value, Mapping) and properties:
        for key, child in value.items():
            if key in properties:
                below = f"{path}.{key}" if path else key
                out.add(below)
                _written(child, properties[key], below, out)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for item in value:
            _written(item, node["items"], path + "[]", out)


def uncovered(karpenter_version: str, written: Mapping[str, set[str]]) -> list[str]:
    """``Kind: path`` of every CRD path neither written nor listed as deliberately not exposed."""
    return [
        f"{kind}: {path}"
        for kind in KINDS
        for path in crd_paths(karpenter_version, kind)
        if path not in written[kind] and not_exposed(kind, path) is None
    ]


def stale(written: Mapping[str, set[str]]) -> list[str]:
    """``Kind: path`` of every not-exposed entry the app writes after all (or one below it)."""
    from constructs_lib.karpenter.specs.not_exposed import NOT_EXPOSED

    return [
        f"{kind}: {entry}"
        for kind, entries in NOT_EXPOSED.items()
        for entry in entries
        if any(path == entry or path.startswith((entry + ".", entry + "[]")) for path in written[kind])
    ]


def configurations() -> Iterator[dict[str, Any]]:
    """The settings of the product's configurations (tooling/configurations.py, examples/) and of every move of the
    transition matrix's node object fields (each field's examples and modes), one environment each."""
    import json

    from tooling import configurations as product
    from tooling.review.transition_moves import field_transitions

    base = product.PRODUCT_CONTEXT
    yield dict(base)
    for overrides in (product.ALTERNATIVE, product.PRODUCTION, product.EXISTING):
        yield {**base, **overrides}
    for path in sorted((product.ROOT / "examples").glob("*.json")):
        settings = json.loads(path.read_text())
        environments = settings.pop("environments", None) or {"": {}}
        settings.pop("pipeline", None)
        for environment in environments.values():
            yield {**base, **settings, **{k: v for k, v in environment.items() if k not in ("account", "region")}}
    for move in field_transitions():
        if move.setting.split(".", 1)[0] in ("nodePools", "nodeClasses", "nodeOverlays"):
            yield {**base, **move.overrides("new")}


def objects_of(settings: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """The node objects of each configuration that loads (one the model refuses emits none)."""
    from karpenter_stack.config import ConfigError, load_config

    for each in settings:
        try:
            config = load_config(each)
        except ConfigError:
            continue
        yield from config_objects(config)


def main(argv: list[str] | None = None) -> int:
    version = (argv or sys.argv[1:] or ["1.14.1"])[0]
    written = written_paths(objects_of(configurations()), version)
    for kind in KINDS:
        paths = crd_paths(version, kind)
        listed = [p for p in paths if p not in written[kind] and not_exposed(kind, p) is not None]
        print(f"{kind}: {len(paths)} field paths, {len(written[kind])} written, {len(listed)} not exposed (listed)")
    for line in uncovered(version, written):
        print(f"  neither written nor listed: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
