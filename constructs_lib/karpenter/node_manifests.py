"""Karpenter YAML files of a repository (EC2NodeClass, NodePool, NodeOverlay, as teams write them) as the typed
node specs of the :class:`~constructs_lib.karpenter.Karpenter` construct, so that every check of the specs, of the
construct (``specs.rules``) and of the app runs on them as on typed settings.

Each object is converted into the settings of its spec (``NodeClassSpec``, ``NodePoolSpec``, ``NodeOverlaySpec``:
the JSON a ``nodeClasses``/``nodePools``/``nodeOverlays`` entry would hold, :attr:`ManifestObject.settings`), then
validated as one. What belongs to the cluster is the app's, filled in:

* ``${CLUSTER_NAME}`` in any key or value is the cluster's name (the only placeholder; any other ``${...}`` is
  refused outside ``spec.userData``, where a shell's ``${VAR}`` is the script's own);
* ``spec.role``: absent, or upstream's ``KarpenterNodeRole-${CLUSTER_NAME}`` -> the construct's node role (its
  Windows node role for Windows classes); any other role is refused;
* subnet and security group terms ``{tags: {karpenter.sh/discovery: <cluster>}}`` -> the app's own selection (the
  discovery tag, or the ids it is given); other terms are added to it (``extra*SelectorTerms``).

A pool's requirements: ``kubernetes.io/os`` must be what its class launches (the app writes it from the class); a
requirement on a shortcut's key that the shortcut writes exactly (``In`` without minValues; generation ``Gt N``)
becomes that shortcut, any other stays a requirement, and shortcuts no requirement names are null (upstream's
pool has no such requirement). What a file leaves out takes the spec's default (limits, terminationGracePeriod,
volumes, ...), as an entry of the typed settings would.

Refused, one line each naming the file, the object (``Kind/name``) and the field, the value and what is allowed:
YAML that does not parse (with its line) or has a key twice, an unknown apiVersion or kind, a field the 1.14.1 CRDs
do not have, one ``specs.not_exposed`` lists (with its reason), ``metadataOptions`` other than the app's IMDSv2,
volumes the app cannot express, and everything the specs refuse. :func:`load_node_manifests` also refuses a name
used twice (across files and the typed specs given) and a pool whose class is in neither.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import yaml_load
from .manifest_fields import _check_top, _join, _Refused
from .manifest_opinions import opinions
from .manifest_settings import (
    CONVERTERS,
    _check_alias,
    _family,
    _Invalid,
    _validated,
)
from .names import (
    CLUSTER_NAME_PLACEHOLDER,
    NODE_CLASS_KIND,
)
from .specs.base import quoted, shown
from .specs.files import inside, project_path, read_project_file
from .specs.node_class import NodeClassSpec
from .specs.node_overlay import NodeOverlaySpec
from .specs.node_pool import OS_KEY, NodePoolSpec

CLUSTER_NAME_VARIABLE = "CLUSTER_NAME"
# A placeholder of a team's own templating: ${VAR} (envsubst, Terraform) or <<VAR>>; its name is group 1 or 2.
PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|<<([A-Za-z_][A-Za-z0-9_]*)>>", re.ASCII)
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_GLOB = re.compile(r"[*?\[]", re.ASCII)


class ManifestError(ValueError):
    """Node manifests the app cannot apply: ``str(err)`` has one line per problem, each naming the file, the object
    and the field; ``problems`` holds the lines."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


@dataclass(frozen=True)
class Opinion:
    """A field of a file's object that is not what the app recommends (the app deploys it as written): a warning,
    and a refusal under the production profile where the docs promise a guarantee (``guaranteed``)."""

    path: str
    message: str
    guaranteed: bool = False


@dataclass(frozen=True)
class ManifestObject:
    """One object of a file: where it is, its typed settings (cdk.json's JSON) and its spec."""

    source: str  # the file, relative to the project folder
    kind: str  # EC2NodeClass, NodePool or NodeOverlay
    name: str
    settings: dict[str, Any]
    spec: NodeClassSpec | NodePoolSpec | NodeOverlaySpec
    # a pool's kubernetes.io/os requirement (its path and values), checked against its class by check_with
    os_requirement: tuple[str, Any] | None = None
    notes: tuple[str, ...] = ()  # what the app did to the object besides its fill-ins (a namespace left out)
    opinions: tuple[Opinion, ...] = ()  # where the object is not what the app recommends

    def note_lines(self) -> list[str]:
        return [f"{self.where}: {note}" for note in self.notes]

    @property
    def where(self) -> str:
        return f"{self.source}: {self.kind}/{self.name}"


@dataclass(frozen=True)
class NodeManifests:
    """The objects of the files, in file order, each converted into its spec."""

    objects: tuple[ManifestObject, ...] = ()
    notes: tuple[str, ...] = ()  # what a glob left out, one line each

    def specs(self, kind: str) -> list[Any]:
        return [o.spec for o in self.objects if o.kind == kind]

    @property
    def class_objects(self) -> list[ManifestObject]:
        return [o for o in self.objects if o.kind == NODE_CLASS_KIND]

    @property
    def node_classes(self) -> list[NodeClassSpec]:
        return self.specs(NODE_CLASS_KIND)

    @property
    def node_pools(self) -> list[NodePoolSpec]:
        return self.specs("NodePool")

    @property
    def node_overlays(self) -> list[NodeOverlaySpec]:
        return self.specs("NodeOverlay")

    def settings(self) -> dict[str, list[dict[str, Any]]]:
        """The objects as the app's typed settings (``nodeClasses``, ``nodePools``, ``nodeOverlays``: what to write
        in cdk.json instead of the files), the kinds that have objects."""
        out: dict[str, list[dict[str, Any]]] = {}
        for obj in self.objects:
            out.setdefault(SETTING[obj.kind], []).append(obj.settings)
        return out

    def check_with(
        self,
        node_classes: Sequence[NodeClassSpec] = (),
        node_pools: Sequence[NodePoolSpec] = (),
        node_overlays: Sequence[NodeOverlaySpec] = (),
    ) -> None:
        """ManifestError for what the objects cannot be with the typed specs they are applied with: a name twice,
        a pool whose class is in neither, a pool whose kubernetes.io/os is not what its class launches."""
        typed = {NODE_CLASS_KIND: node_classes, "NodePool": node_pools, "NodeOverlay": node_overlays}
        problems = _duplicates(self.objects, typed)
        classes = {c.name: c for c in [*node_classes, *self.node_classes]}
        for obj in self.objects:
            if isinstance(obj.spec, NodePoolSpec):
                problems += [f"{obj.where}: {p}" for p in _pool_class_problems(obj, obj.spec, classes)]
        if problems:
            raise ManifestError(problems)


SETTING = {NODE_CLASS_KIND: "nodeClasses", "NodePool": "nodePools", "NodeOverlay": "nodeOverlays"}


def _duplicates(objects: Sequence[ManifestObject], typed: Mapping[str, Sequence[Any]]) -> list[str]:
    seen: dict[tuple[str, str], str] = {(kind, s.name): SETTING[kind] for kind, specs in typed.items() for s in specs}
    problems = []
    for obj in objects:
        first = seen.setdefault((obj.kind, obj.name), obj.source)
        if first is not obj.source:
            problems.append(
                f"{obj.where}: metadata.name {quoted(obj.name)}: {'an' if obj.kind[0] in 'AEIOU' else 'a'} {obj.kind} of "
                f"that name is also in {first}; "
                "each object is applied once, by its name"
            )
    return problems


def _pool_class_problems(obj: ManifestObject, pool: NodePoolSpec, classes: Mapping[str, NodeClassSpec]) -> list[str]:
    node_class = classes.get(pool.node_class)
    if node_class is None:
        return [
            f"spec.template.spec.nodeClassRef.name {quoted(pool.node_class)}: no EC2NodeClass of that name in "
            f"nodeManifests or nodeClasses (there: {', '.join(sorted(classes)) or 'none'})"
        ]
    if obj.os_requirement is None:
        return []
    path, requirement = obj.os_requirement
    wanted = {"key": OS_KEY, "operator": "In", "values": [node_class.operating_system]}
    if requirement == wanted:
        return []
    return [
        f"{path} {shown(requirement)}: the app writes {OS_KEY} In [{node_class.operating_system}] from the node "
        f"class {quoted(node_class.name)} (its AMI family), so that the pool's nodes run their image's OS; write "
        "that or leave the requirement out"
    ]


def load_node_manifests(
    patterns: Sequence[str],
    *,
    cluster_name: str,
    kubernetes_version: str | None = None,
    root: Path | None = None,
    node_classes: Sequence[NodeClassSpec] = (),
    node_pools: Sequence[NodePoolSpec] = (),
    node_overlays: Sequence[NodeOverlaySpec] = (),
    variables: Mapping[str, str] | None = None,
    role_names: Sequence[str] = (),
    own_roles: Sequence[str] = (),
) -> NodeManifests:
    """The objects of the files ``patterns`` name (paths or globs relative to ``root``, the project folder by
    default), converted and checked, also against the typed specs they are applied with (``node_classes``, ...):
    ManifestError naming each problem. Pass ``[*typed, *result.node_classes]`` (and the pools and overlays) to the
    Karpenter construct, which then checks them all together."""
    manifests = read_node_manifests(
        patterns,
        cluster_name=cluster_name,
        kubernetes_version=kubernetes_version,
        root=root,
        variables=variables,
        role_names=role_names,
        own_roles=own_roles,
    )
    manifests.check_with(node_classes, node_pools, node_overlays)
    return manifests


def read_node_manifests(
    patterns: Sequence[str],
    *,
    cluster_name: str,
    kubernetes_version: str | None = None,
    root: Path | None = None,
    variables: Mapping[str, str] | None = None,
    role_names: Sequence[str] = (),
    own_roles: Sequence[str] = (),
) -> NodeManifests:
    """The objects of the files, each converted into its spec (not yet checked against other specs:
    :meth:`NodeManifests.check_with`); ManifestError naming every file and object the app refuses.
    ``kubernetes_version``: an AMI alias without images for it is refused. ``variables``: the values of the
    files' own placeholders (``${VAR}``, ``<<VAR>>``); ``role_names``: names the files give the app's node role;
    ``own_roles``: names of node roles the team has, kept as written."""
    filling = Filling(cluster_name, dict(variables or {}), tuple(role_names), tuple(own_roles))
    problems: list[str] = []
    objects: list[ManifestObject] = []
    notes: list[str] = []
    files = manifest_files(patterns, root, problems, notes)
    unrelated: dict[str, list[str]] = {}  # a glob -> its files that hold no node object
    for source, glob in files:
        try:
            documents = parse_yaml(read_project_file(source, root))
        except ValueError as err:
            problems.append(f"nodeManifests: {err}" if str(err).startswith(quoted(source)) else f"{source}: {err}")
            continue
        if glob is not None and not any(_node_object(d) for d in documents) and _many(glob, files):
            unrelated.setdefault(glob, []).append(source)
            continue
        for number, document in enumerate(documents, 1):
            try:
                objects.append(convert(document, source, filling, kubernetes_version))
            except ManifestError as err:
                problems += err.problems
            except _Refused as err:
                problems.append(f"{source}: document {number}: {err.line()}")
    for glob, sources in unrelated.items():
        taken = sum(1 for _, g in files if g == glob) - len(sources)
        hold = "holds" if len(sources) == 1 else "hold"
        held = f"{len(sources)} of its files {hold} no EC2NodeClass, NodePool or NodeOverlay (e.g. {sources[0]})"
        if taken == 0:
            problems.append(
                f"nodeManifests: {quoted(glob)}: {held}: name the files of your node objects, or a narrower glob"
            )
        else:
            notes.append(f"nodeManifests: {quoted(glob)}: {held} and are left out")
    if problems:
        raise ManifestError(problems)
    return NodeManifests(tuple(objects), tuple(notes))


def _many(glob: str, files: Sequence[tuple[str, str | None]]) -> bool:
    """A glob that matched more than one file: its files without node objects are counted in one line (one file is
    refused object by object, as a named file is)."""
    return sum(1 for _, g in files if g == glob) > 1


def _node_object(document: Any) -> bool:
    return isinstance(document, dict) and str(document.get("kind")) in {kind for _, kind in CONVERTERS}


def manifest_files(
    patterns: Iterable[str], root: Path | None, problems: list[str], notes: list[str] | None = None
) -> list[tuple[str, str | None]]:
    """The files ``patterns`` name, each once, in pattern order (a glob's matches sorted), relative to ``root``, with
    the glob that found each (None: named). A glob takes only regular files inside the project (symlinks resolved);
    what it leaves out is said in one line (``notes``)."""
    base = root or Path()
    found: list[tuple[str, str | None]] = []
    for pattern in patterns:
        try:
            project_path(pattern)
        except ValueError as err:
            problems.append(f"nodeManifests: {err}")
            continue
        if not _GLOB.search(pattern):
            found += [] if pattern in [f for f, _ in found] else [(pattern, None)]
            continue
        matches, left_out = [], 0
        for path in sorted(base.glob(pattern)):
            relative = path.relative_to(base).as_posix()
            if path.is_dir() and not path.is_symlink():
                continue  # a folder is no file a glob means
            try:
                inside(relative, root)
            except ValueError:
                left_out += 1
                continue
            matches.append(relative)
        outside = f"{left_out} left out: symlinks outside the project or not regular files"
        if not matches:
            problems.append(
                f"nodeManifests: {quoted(pattern)} matches no file (paths are relative to the project folder)"
                + (f"; {outside}" if left_out else "")
            )
        elif left_out and notes is not None:
            notes.append(f"nodeManifests: {quoted(pattern)}: took {len(matches)} files; {outside}")
        found += [(m, pattern) for m in matches if m not in [f for f, _ in found]]
    return found


def parse_yaml(text: str) -> list[Any]:
    """The documents of a YAML file (``---``-separated; empty ones left out), read as kubectl reads them and bounded
    (``yaml_load.user_documents``); ValueError with the line. Each call gets documents of its own."""
    return copy.deepcopy(_parsed(text))


@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> list[Any]:
    """A file's documents, read once per text: a configuration is loaded more than once in a run (the synth's check,
    its build, the review), and the pure-Python loader kubectl's reading needs is slow."""
    return [d for d in yaml_load.user_documents(text) if d is not None]


@dataclass(frozen=True)
class Filling:
    """What the app fills into the files' objects: the cluster's name, the values of the team's own placeholders
    (``nodeManifestVariables``) and the role names that mean the app's node role (``nodeManifestRoles``)."""

    cluster_name: str
    variables: Mapping[str, str] = field(default_factory=dict)
    role_names: Sequence[str] = ()
    own_roles: Sequence[str] = ()  # names of node roles the team already has (KarpenterProps.own_node_roles)

    def value(self, name: str) -> str | None:
        """The value of the placeholder ``name`` (CLUSTER_NAME is the cluster's name), None when none is given."""
        if name == CLUSTER_NAME_VARIABLE:
            return self.cluster_name
        given = self.variables.get(name)
        return None if given is None else given.replace(CLUSTER_NAME_PLACEHOLDER, self.cluster_name)

    def app_role(self, role: Any) -> bool:
        """``role`` names the app's node role: upstream's name for it, or one of ``role_names``."""
        return role == f"KarpenterNodeRole-{self.cluster_name}" or (isinstance(role, str) and role in self.role_names)


def convert(
    document: Any,
    source: str,
    cluster_name: str | Filling,
    kubernetes_version: str | None = None,
) -> ManifestObject:
    """One object of ``source`` as its spec, deploying the object as written (placeholders filled, the app's node
    role left for the construct to fill in); ManifestError (or _Refused, before its name is known)."""
    filling = cluster_name if isinstance(cluster_name, Filling) else Filling(cluster_name)
    if not isinstance(document, dict):
        raise _Refused("", "a Kubernetes object is a mapping (apiVersion, kind, metadata, spec)", document)
    api, kind = str(document.get("apiVersion")), str(document.get("kind"))
    metadata = document.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if (api, kind) not in CONVERTERS:
        refused = _Refused("apiVersion", _unknown_kind(api, kind), document.get("apiVersion"))
        if "kind" in document and isinstance(name, str):
            raise ManifestError([f"{source}: {kind}/{name}: {refused.line()}"])
        raise refused
    if not isinstance(name, str) or not name:
        raise _Refused(f"{kind}: metadata.name", "required: the object's name", name, show=name is not None)
    where = f"{source}: {kind}/{name}"
    try:
        obj = with_placeholders(document, filling)
        notes = _check_top(obj, kind)
        written = _without_app_role(obj, filling) if kind == NODE_CLASS_KIND else obj
        settings, paths, os_requirement = CONVERTERS[(api, kind)](obj, filling.cluster_name)
        spec = _validated(kind, settings, paths)
        if isinstance(spec, NodeClassSpec):
            _check_alias(spec, kubernetes_version, paths)
    except _Refused as err:
        raise ManifestError([f"{where}: {err.line()}"]) from None
    except _Invalid as err:
        raise ManifestError([f"{where}: {line}" for line in err.lines]) from None
    spec.as_written(written)
    return ManifestObject(
        source,
        kind,
        spec.name,
        settings,
        spec,
        os_requirement,
        notes=tuple(notes),
        opinions=tuple(Opinion(*o) for o in opinions(kind, written, _family(written["spec"]), filling.cluster_name)),
    )


def _unknown_kind(api: Any, kind: Any) -> str:
    known = ", ".join(f"{a} {k}" for a, k in CONVERTERS)
    if isinstance(api, str) and api.endswith("/v1beta1"):
        return f"v1beta1 is no longer served by Karpenter 1.14 (v1 since Karpenter 1.0); node objects are {known}"
    return f"not a node object the app applies: {known}"


def with_placeholders(value: Any, filling: Filling | str, path: str = "") -> Any:
    """``value`` with every placeholder (``${VAR}``, ``<<VAR>>``) replaced in every key and string: CLUSTER_NAME by
    the cluster's name, the others by ``nodeManifestVariables``; one without a value is refused (but in
    spec.userData, where a shell's ${VAR} is the script's own and stays)."""
    filling = filling if isinstance(filling, Filling) else Filling(filling)
    if isinstance(value, dict):
        return {
            with_placeholders(k, filling, path): with_placeholders(v, filling, _join(path, str(k)))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [with_placeholders(v, filling, f"{path}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value
    unknown: list[str] = []

    def fill(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        given = filling.value(name)
        if given is None:
            unknown.append(match.group())
            return match.group()
        return given

    filled = PLACEHOLDER.sub(fill, value)
    if unknown and path != "spec.userData":
        hint = " (pin the alias, e.g. al2023@v20260801, or write @latest)" if unknown[0] == "${ALIAS_VERSION}" else ""
        name = PLACEHOLDER.fullmatch(unknown[0])
        variable = (name.group(1) or name.group(2)) if name else unknown[0]
        raise _Refused(
            path or "(key)",
            f'{unknown[0]} has no value: give it in nodeManifestVariables (e.g. {{{json.dumps(variable)}: "..."}}) '
            f"or write the value; the app fills in {CLUSTER_NAME_PLACEHOLDER} itself{hint}",
            value,
        )
    return filled


def _without_app_role(obj: dict[str, Any], filling: Filling) -> dict[str, Any]:
    """An EC2NodeClass as written, without spec.role where it names the app's node role (the construct fills in the
    role of the class: its node role, or its Windows node role); another role is refused."""
    spec = obj["spec"]
    role = spec.get("role")
    if "role" in spec and role in filling.own_roles:
        return obj  # a node role the team has: deployed as written, authorized and passed by the construct
    if "role" in spec and not filling.app_role(role):
        raise _Refused(
            "spec.role",
            f"not the app's node role (KarpenterNodeRole-{filling.cluster_name}, Karpenter's name for it; Windows "
            "classes get a Windows node role of their own): list the name your files give it in nodeManifestRoles, "
            "give a placeholder's value in nodeManifestVariables, on an existing cluster list your own role's ARN in "
            "existingNodeRoles, or leave role out",
            role,
        )
    return {**obj, "spec": {k: v for k, v in spec.items() if k != "role"}}


def settings_json(manifests: NodeManifests) -> str:
    """The objects as typed settings, JSON for cdk.json."""
    return json.dumps(manifests.settings(), indent=2)
