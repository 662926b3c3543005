"""A rule's message about a node class, pool or overlay of nodeManifests, in the file's terms: the rules name the
settings that write an object (``nodePools[2].consolidationPolicy``, ``nodePools 'batch'``), which a file's author
never wrote; for an object of a file the message names the file, the object and its field instead
(``examples/manifests/pools.yaml: NodePool/batch: spec.disruption.consolidationPolicy ...``). The field is the one
the setting writes, as the spec field declares it (``change(..., manifest=...)``, constructs_lib/karpenter/specs)."""

from __future__ import annotations

import re
from typing import Any

from pydantic.alias_generators import to_snake

from constructs_lib.karpenter.specs.change import change_of, upstream_name, upstream_path

from .model import AppConfig

# nodePools[2]..., nodePools 'batch' ..., nodePools "batch" ...
_NAMED = re.compile(
    r"(nodeClasses|nodePools|nodeOverlays)(?:\[(\d+)\]|\s+'([^']*)'|\s+\"([^\"]*)\")(.*)", re.DOTALL | re.ASCII
)
# .field, .field[3], then the rest of the message
_FIELD = re.compile(r"\.([A-Za-z]+)(\[\d+\])?(.*)", re.DOTALL | re.ASCII)


def in_file_terms(line: str, config: AppConfig) -> str | None:
    """``line`` about an object of nodeManifests, as ``<file>: <Kind>/<name>: <field> ...``; None when it is about an
    entry of the typed settings (or nothing of the node lists)."""
    match = _NAMED.match(line)
    if match is None:
        return None
    setting, index, *names, rest = match.groups()
    specs: list[Any] = getattr(config, to_snake(setting))
    if index is None:
        name = next(n for n in names if n is not None)
        found = [i for i, spec in enumerate(specs) if spec.name == name]
        if not found:
            return None
        index = found[0]
    i = int(index)
    sources = config.node_sources.get(setting, ())
    if i >= len(sources) or not sources[i]:
        return None
    field = _FIELD.match(rest)
    if field is None:
        return f"{sources[i]}:{rest}" if rest.startswith(" ") else f"{sources[i]}: {rest}"
    key, position, tail = field.groups()
    return f"{sources[i]}: {_written(setting, specs[i], key)}{position or ''}{tail}"


def _written(setting: str, spec: Any, key: str) -> str:
    """The field of the object a setting's key writes."""
    if setting == "nodeClasses":  # a class's settings are its spec's fields; its alias is its first term's
        return "spec.amiSelectorTerms[0].alias" if key == "amiAlias" else f"spec.{key}"
    name = to_snake(key)
    declared = change_of(type(spec), name) if name in type(spec).model_fields else None
    found = upstream_name(declared, key) if declared is not None else None
    return upstream_path(found) if found else f"spec.{key}"
