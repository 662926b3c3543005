"""YAML reading, with libyaml's loader where PyYAML was built with it (about 5 times faster than the pure-Python
one, the same YAML 1.1 safe subset): every YAML file the app, its tooling and its tests read goes through here."""

from __future__ import annotations

from typing import Any

import yaml

SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    return yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 - a safe loader


def safe_load_all(text: str) -> list[Any]:
    """Every document, empty ones included (None)."""
    return list(yaml.load_all(text, Loader=SAFE_LOADER))  # noqa: S506 - a safe loader


# --- YAML users write (nodeManifests, user data): as kubectl reads it, and bounded ------------------------------

# The nodes a document may hold once its aliases are expanded: a Karpenter file of many objects holds a few
# thousand; a few hundred bytes of nested aliases (an "alias bomb") expand to billions.
MAX_EXPANDED_NODES = 100_000
# YAML's core schema: what JSON (and so the API server) has. PyYAML's safe loader also takes timestamps, binary,
# sets, ordered maps and pairs (YAML 1.1), which no Kubernetes field is.
CORE_TAGS = frozenset(
    f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "seq", "map", "merge", "value")
)


class UserLoader(yaml.SafeLoader):  # the pure-Python loader: its error messages are the ones users read
    """YAML as kubectl reads it: a key given twice in one mapping is an error, not the last one winning; a date is a
    string (no timestamp type)."""


def _mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    keys: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base`: merged below, its keys overridden by these
            continue
        key = loader.construct_object(key_node)
        if key in keys:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is given twice in one mapping", key_node.start_mark
            )
        keys.add(key)
    return dict(loader.construct_mapping(node))


UserLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
UserLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _check(node: yaml.Node) -> None:
    """A composed document: no tag beyond the core schema, no alias that refers to a node it is inside of, and at
    most MAX_EXPANDED_NODES nodes once its aliases are expanded (each node counted as often as it is reached)."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(current: yaml.Node) -> int:
        key = id(current)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise yaml.composer.ComposerError(
                None, None, "an alias refers to a node it is inside of (a recursive alias)", current.start_mark
            )
        if current.tag not in CORE_TAGS:
            raise yaml.composer.ComposerError(
                None, None, f"tag {current.tag!r} is not YAML's core schema (JSON's types)", current.start_mark
            )
        open_nodes.add(key)
        children: list[yaml.Node] = []
        if isinstance(current, yaml.SequenceNode):
            children = list(current.value)
        elif isinstance(current, yaml.MappingNode):
            children = [n for pair in current.value for n in pair]
        total = 1
        for child in children:
            total += size(child)
            if total > MAX_EXPANDED_NODES:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"its aliases expand it to more than {MAX_EXPANDED_NODES:,} nodes (an alias bomb)",
                    current.start_mark,
                )
        open_nodes.discard(key)
        sizes[key] = total
        return total

    size(node)


def user_documents(text: str, first_only: bool = False) -> list[Any]:
    """The documents of YAML a user wrote, each checked before it is built (:func:`_check`); ValueError in one line:
    ``line L, column C: not valid YAML (<reason>)``. ``first_only``: read the first document only, as go-yaml v2's
    Unmarshal does (what follows it is not parsed)."""
    loader = UserLoader(text)
    documents: list[Any] = []
    try:
        while loader.check_node() and not (first_only and documents):
            node = loader.get_node()
            if node is None:
                documents.append(None)
                continue
            _check(node)
            documents.append(loader.construct_document(node))
        return documents
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        # what was open when it failed (a flow sequence, a mapping) starts where the mistake usually is
        context, opened = getattr(err, "context", None), getattr(err, "context_mark", None)
        since = f", {context} from line {opened.line + 1}" if context and opened is not None else ""
        raise ValueError(f"{where}not valid YAML ({' '.join(str(problem).split())}{since})") from None
    except RecursionError:
        raise ValueError("not valid YAML (nested too deeply to read)") from None
    finally:
        loader.dispose()
