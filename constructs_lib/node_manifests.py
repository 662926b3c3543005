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

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from . import yaml_load
from .manifest_opinions import SILENT_POOL, opinions
from .names import (
    DISCOVERY_TAG_KEY,
    NODE_CLASS_API_VERSION,
    NODE_CLASS_GROUP,
    NODE_CLASS_KIND,
    NODE_OVERLAY_API_VERSION,
    NODE_POOL_API_VERSION,
)
from .specs import ami
from .specs.base import ascii_int, quoted, shown
from .specs.files import inside, project_path, read_project_file
from .specs.node_class import NodeClassSpec
from .specs.node_overlay import NodeOverlaySpec
from .specs.node_pool import OS_KEY, SHORTCUTS, NodePoolSpec
from .specs.not_exposed import not_exposed

CLUSTER_NAME_PLACEHOLDER = "${CLUSTER_NAME}"
CLUSTER_NAME_VARIABLE = "CLUSTER_NAME"
# A placeholder of a team's own templating: ${VAR} (envsubst, Terraform) or <<VAR>>; its name is group 1 or 2.
PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|<<([A-Za-z_][A-Za-z0-9_]*)>>", re.ASCII)
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_GLOB = re.compile(r"[*?\[]", re.ASCII)
_GIB = re.compile(r"([1-9][0-9]*)Gi", re.ASCII)
# What the app writes of spec.metadataOptions (IMDSv2 required, IPv6 IMDS off); the hop limit is metadataHopLimit.
METADATA_OPTIONS = {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpTokens": "required"}
# The fields of each kind's spec in Karpenter 1.14.1's CRDs (a field not here is none of the CRD's: kubectl
# refuses it); those the app does not write are refused with their reason (specs/not_exposed.py).
CLASS_FIELDS = (
    "role",
    "instanceProfile",
    "amiSelectorTerms",
    "amiFamily",
    "userData",
    "subnetSelectorTerms",
    "securityGroupSelectorTerms",
    "capacityReservationSelectorTerms",
    "blockDeviceMappings",
    "metadataOptions",
    "kubelet",
    "tags",
    "detailedMonitoring",
    "associatePublicIPAddress",
    "instanceStorePolicy",
    "networkInterfaces",
    "ipPrefixCount",
    "connectionTracking",
    "cpuOptions",
    "placementGroupSelector",
    "context",
)
POOL_FIELDS = ("template", "disruption", "limits", "weight", "replicas")
TEMPLATE_SPEC_FIELDS = (
    "nodeClassRef",
    "requirements",
    "taints",
    "startupTaints",
    "expireAfter",
    "terminationGracePeriod",
)
DISRUPTION_FIELDS = ("consolidationPolicy", "consolidateAfter", "budgets")
OVERLAY_FIELDS = ("requirements", "price", "priceAdjustment", "capacity", "weight")
MAPPING_FIELDS = ("deviceName", "ebs", "rootVolume")
EBS_FIELDS = (
    "volumeSize",
    "volumeType",
    "iops",
    "throughput",
    "encrypted",
    "kmsKeyID",
    "deleteOnTermination",
    "snapshotID",
    "volumeInitializationRate",
)
# The shortcut field of each key and the operator it writes.
_SHORTCUT_OPERATOR = {alias: ("Gt" if alias == "minInstanceGeneration" else "In") for alias in SHORTCUTS.values()}


class ManifestError(ValueError):
    """Node manifests the app cannot apply: ``str(err)`` has one line per problem, each naming the file, the object
    and the field; ``problems`` holds the lines."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


class _Refused(Exception):
    """One field of one object the app refuses: its path in the object, its value, why."""

    def __init__(self, path: str, message: str, value: Any = None, show: bool = True) -> None:
        super().__init__(message)
        self.path, self.message, self.value, self.show = path, message, value, show

    def line(self) -> str:
        where = f"{self.path} {shown(self.value)}".strip() if self.show else self.path
        return f"{where}: {self.message}"


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
    (``yaml_load.user_documents``); ValueError with the line."""
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


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check_top(obj: dict[str, Any], kind: str) -> list[str]:
    """Only apiVersion, kind, metadata (name, labels, annotations) and spec; no path the app does not expose. A
    namespace is dropped, as the API server drops it from a cluster-scoped object: the note that says so."""
    for key in obj:
        if key not in ("apiVersion", "kind", "metadata", "spec"):
            why = "written by Karpenter, not applied" if key == "status" else "not a field of the object"
            raise _Refused(key, f"{why}; leave it out", show=False)
    notes = []
    if "namespace" in obj["metadata"]:
        namespace = obj["metadata"].pop("namespace")
        notes.append(
            f"metadata.namespace {quoted(namespace)}: left out: {'an' if kind[0] in 'AEIOU' else 'a'} {kind} is "
            "cluster-scoped, and the API server "
            "ignores a namespace on it"
        )
    for key in obj["metadata"]:
        if key not in ("name", "labels", "annotations"):
            raise _Refused(
                f"metadata.{key}",
                "the app applies metadata.name, labels and annotations only (the objects are cluster-scoped; the "
                "API server writes the rest)",
                obj["metadata"][key],
            )
    if not isinstance(obj.get("spec"), dict):
        raise _Refused("spec", "required: a mapping", obj.get("spec"), show="spec" in obj)
    for path, generic, value in _paths(obj["spec"], "spec", "spec"):
        reason = not_exposed(kind, generic)
        if reason is not None:
            raise _Refused(path, f"not exposed by the app: {reason}", value)
    return notes


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


def _paths(value: Any, path: str, generic: str) -> Iterable[tuple[str, str, Any]]:
    """Every field of a value: its path, its path with ``[]`` for a list's entries (the CRD's), its value."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield f"{path}.{key}", f"{generic}.{key}", child
            yield from _paths(child, f"{path}.{key}", f"{generic}.{key}")
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _paths(child, f"{path}[{i}]", generic + "[]")


def _known(value: Mapping[str, Any], fields: Sequence[str], path: str, kind: str) -> None:
    for key in value:
        if key not in fields:
            raise _Refused(
                f"{path}.{key}", f"Karpenter 1.14.1's {kind} has no such field (known: {', '.join(fields)})", show=False
            )


def _mapping_at(value: Mapping[str, Any], key: str, path: str) -> dict[str, Any]:
    found = value.get(key)
    if found is None:
        return {}
    if not isinstance(found, dict):
        raise _Refused(_join(path, key), "must be a mapping", found)
    return found


def _list_at(value: Mapping[str, Any], key: str, path: str) -> list[Any]:
    found = value.get(key)
    if found is None:
        return []
    if not isinstance(found, list):
        raise _Refused(_join(path, key), "must be a list", found)
    return found


# --- EC2NodeClass -------------------------------------------------------------------------------------------

Converted = tuple[dict[str, Any], dict[str, str], tuple[str, Any] | None]


def node_class_settings(obj: Mapping[str, Any], cluster_name: str) -> Converted:
    """An EC2NodeClass as nodeClasses settings, with the manifest path of each setting."""
    spec = obj["spec"]
    _known(spec, CLASS_FIELDS, "spec", NODE_CLASS_KIND)
    settings, paths = _metadata_settings(obj)
    settings |= _ami_settings(spec, paths)
    for key in ("amiFamily", "userData", "kubelet", "tags", "detailedMonitoring", "associatePublicIPAddress"):
        if key in spec:
            settings[key], paths[key] = spec[key], f"spec.{key}"
    for key in ("instanceStorePolicy", "capacityReservationSelectorTerms"):
        if key in spec:
            settings[key], paths[key] = spec[key], f"spec.{key}"
    for key, setting in (
        ("subnetSelectorTerms", "extraSubnetSelectorTerms"),
        ("securityGroupSelectorTerms", "extraSecurityGroupSelectorTerms"),
    ):
        settings |= _extra_terms(spec, key, setting, cluster_name, paths)
    settings |= _metadata_options(_mapping_at(spec, "metadataOptions", "spec"), paths)
    settings |= volume_settings(spec, _family(spec), paths)
    return settings, paths, None


def _metadata_settings(obj: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    metadata = obj["metadata"]
    settings: dict[str, Any] = {"name": metadata["name"]}
    paths = {"name": "metadata.name"}
    for key, setting in (("labels", "objectLabels"), ("annotations", "objectAnnotations")):
        if metadata.get(key) is not None:
            settings[setting], paths[setting] = metadata[key], f"metadata.{key}"
    return settings, paths


def _ami_settings(spec: Mapping[str, Any], paths: dict[str, str]) -> dict[str, Any]:
    """One alias term alone -> amiAlias; any other terms -> amiSelectorTerms (the CRD requires at least one)."""
    terms = spec.get("amiSelectorTerms")
    if not terms:
        raise _Refused(
            "spec.amiSelectorTerms",
            "required (the CRD's): e.g. [{alias: al2023@latest}] or [{id: ami-...}]",
            terms,
            show="amiSelectorTerms" in spec,
        )
    if isinstance(terms, list) and len(terms) == 1 and isinstance(terms[0], dict) and set(terms[0]) == {"alias"}:
        paths["amiAlias"] = "spec.amiSelectorTerms[0].alias"
        return {"amiAlias": terms[0]["alias"]}
    paths["amiSelectorTerms"] = "spec.amiSelectorTerms"
    return {"amiSelectorTerms": terms}


def _family(spec: Mapping[str, Any]) -> str | None:
    """The AMI family Karpenter applies (lowercase), None when the terms do not say it (the spec refuses that)."""
    if isinstance(spec.get("amiFamily"), str):
        return str(spec["amiFamily"]).lower()
    terms = spec.get("amiSelectorTerms") or []
    alias = next((t.get("alias") for t in terms if isinstance(t, dict) and isinstance(t.get("alias"), str)), None)
    return None if alias is None else ami.family_of(alias)


def _extra_terms(
    spec: Mapping[str, Any], key: str, setting: str, cluster_name: str, paths: dict[str, str]
) -> dict[str, Any]:
    """The discovery-tag term of this cluster is the app's own selection; the other terms are added to it."""
    extra: list[Any] = []
    for j, term in enumerate(_list_at(spec, key, "spec")):
        if term == {"tags": {DISCOVERY_TAG_KEY: cluster_name}}:
            continue
        paths[f"{setting}[{len(extra)}]"] = f"spec.{key}[{j}]"
        extra.append(term)
    return {setting: extra} if extra else {}


def _metadata_options(options: Mapping[str, Any], paths: dict[str, str]) -> dict[str, Any]:
    for key, value in options.items():
        if key == "httpPutResponseHopLimit":
            continue
        if key not in METADATA_OPTIONS:
            raise _Refused(
                f"spec.metadataOptions.{key}", "Karpenter 1.14.1's EC2NodeClass has no such field", show=False
            )
        if value != METADATA_OPTIONS[key]:
            raise _Refused(
                f"spec.metadataOptions.{key}",
                f"must be {METADATA_OPTIONS[key]}: the app requires IMDSv2 with the endpoint on and IPv6 IMDS off; "
                "only httpPutResponseHopLimit is yours",
                value,
            )
    if "httpPutResponseHopLimit" not in options:
        return {}
    paths["metadataHopLimit"] = "spec.metadataOptions.httpPutResponseHopLimit"
    return {"metadataHopLimit": options["httpPutResponseHopLimit"]}


def volume_settings(spec: Mapping[str, Any], family: str | None, paths: dict[str, str]) -> dict[str, Any]:
    """blockDeviceMappings -> the storage volume's settings (the family's device; Custom: the first mapping) and
    dataVolumes; Bottlerocket's OS volume as Karpenter's default, which the app writes itself."""
    mappings = _list_at(spec, "blockDeviceMappings", "spec")
    if family == ami.CUSTOM and not mappings:
        return {}  # the image's own volumes (manifest_opinions says so)
    if not mappings and family in ami.KARPENTER_VOLUME_GIB:  # Karpenter's own volumes for the family
        paths["rootVolumeSizeGib"] = paths["rootVolumeType"] = "spec.blockDeviceMappings"
        return {"rootVolumeSizeGib": ami.KARPENTER_VOLUME_GIB[family], "rootVolumeType": "gp3"}
    settings: dict[str, Any] = {}
    data: list[dict[str, Any]] = []
    storage = None if family is None else ami.STORAGE_DEVICE.get(family)
    for j, mapping in enumerate(mappings):
        path = f"spec.blockDeviceMappings[{j}]"
        device, ebs = _mapping_parts(mapping, path)
        if family == "bottlerocket" and device == ami.BOTTLEROCKET_OS_VOLUME["deviceName"]:
            _bottlerocket_os_volume(ebs, path)
        elif device == storage or (family == ami.CUSTOM and "rootVolumeDeviceName" not in settings):
            settings |= _storage_volume(device, ebs, path, paths, custom=family == ami.CUSTOM)
        else:
            data.append(_data_volume(device, ebs, path, len(data), paths))
    return {**settings, **({"dataVolumes": data} if data else {})}


def _mapping_parts(mapping: Any, path: str) -> tuple[Any, dict[str, Any]]:
    if not isinstance(mapping, dict):
        raise _Refused(path, "must be a mapping (deviceName, ebs)", mapping)
    _known(mapping, MAPPING_FIELDS, path, NODE_CLASS_KIND)
    ebs = _mapping_at(mapping, "ebs", path)
    _known(ebs, EBS_FIELDS, f"{path}.ebs", NODE_CLASS_KIND)
    for key in ("encrypted", "deleteOnTermination"):
        if key in ebs and not isinstance(ebs[key], bool):
            raise _Refused(f"{path}.ebs.{key}", "must be true or false (the CRD's boolean)", ebs[key])
    return mapping.get("deviceName"), ebs


def _gib(ebs: Mapping[str, Any], path: str) -> int | None:
    size = ebs.get("volumeSize")
    if size is None:
        return None
    match = _GIB.fullmatch(str(size))
    if match is None:
        raise _Refused(f"{path}.ebs.volumeSize", "write whole GiB, like 100Gi", size)
    return int(match.group(1))


def _storage_volume(
    device: Any, ebs: Mapping[str, Any], path: str, paths: dict[str, str], custom: bool
) -> dict[str, Any]:
    if "snapshotID" in ebs:
        raise _Refused(
            f"{path}.ebs.snapshotID",
            "the volume for images, logs and pods is created from the image's own snapshot",
            ebs["snapshotID"],
        )
    out: dict[str, Any] = {"rootVolumeDeviceName": device} if custom else {}
    fields = {"volumeSize": "rootVolumeSizeGib", "volumeType": "rootVolumeType", "iops": "rootVolumeIops"}
    for key, setting in {**fields, "throughput": "rootVolumeThroughput", "deviceName": "rootVolumeDeviceName"}.items():
        paths[setting] = f"{path}.{key}" if key == "deviceName" else f"{path}.ebs.{key}"
    size = _gib(ebs, path)
    out |= {"rootVolumeSizeGib": size} if size is not None else {}
    out |= {fields[k]: ebs[k] for k in ("volumeType", "iops") if k in ebs}
    out |= {"rootVolumeThroughput": ebs["throughput"]} if "throughput" in ebs else {}
    return out


def _data_volume(device: Any, ebs: Mapping[str, Any], path: str, index: int, paths: dict[str, str]) -> dict[str, Any]:
    setting = f"dataVolumes[{index}]"
    paths[setting] = path
    renamed = {"deviceName": "deviceName", "sizeGib": "ebs.volumeSize", "volumeType": "ebs.volumeType"}
    for key, manifest in {
        **renamed,
        "iops": "ebs.iops",
        "throughput": "ebs.throughput",
        "snapshotID": "ebs.snapshotID",
    }.items():
        paths[f"{setting}.{key}"] = f"{path}.{manifest}"
    out: dict[str, Any] = {"deviceName": device}
    size = _gib(ebs, path)
    out |= {"sizeGib": size} if size is not None else {}
    out |= {k: ebs[k] for k in ("volumeType", "iops", "throughput", "snapshotID") if k in ebs}
    return out


def _bottlerocket_os_volume(ebs: Mapping[str, Any], path: str) -> None:
    os_volume = ami.BOTTLEROCKET_OS_VOLUME
    written = {"volumeSize": os_volume["size"], "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}
    for key, value in ebs.items():
        if written.get(key) != value:
            raise _Refused(
                f"{path}.ebs.{key}",
                f"Bottlerocket's OS volume ({os_volume['deviceName']}) is Karpenter's default, which the app writes: "
                f"{os_volume['size']} gp3, encrypted; leave it out or write that",
                value,
            )


# --- NodePool -------------------------------------------------------------------------------------------------


def node_pool_settings(obj: Mapping[str, Any], cluster_name: str) -> Converted:
    """A NodePool as nodePools settings, with the manifest path of each setting."""
    spec = obj["spec"]
    _known(spec, POOL_FIELDS, "spec", "NodePool")
    settings, paths = _metadata_settings(obj)
    template = _mapping_at(spec, "template", "spec")
    _known(template, ("metadata", "spec"), "spec.template", "NodePool")
    node = _mapping_at(template, "spec", "spec.template")
    _known(node, TEMPLATE_SPEC_FIELDS, "spec.template.spec", "NodePool")
    node_metadata = _mapping_at(template, "metadata", "spec.template")
    _known(node_metadata, ("labels", "annotations"), "spec.template.metadata", "NodePool")
    settings["nodeClass"], paths["nodeClass"] = _node_class_name(node), "spec.template.spec.nodeClassRef.name"
    requirements, os_requirement = requirement_settings(_list_at(node, "requirements", "spec.template.spec"), paths)
    settings |= requirements
    for key in ("labels", "annotations"):
        if key in node_metadata:
            settings[key], paths[key] = node_metadata[key], f"spec.template.metadata.{key}"
    for key in ("taints", "startupTaints", "expireAfter", "terminationGracePeriod"):
        if key in node:
            settings[key], paths[key] = node[key], f"spec.template.spec.{key}"
    disruption = _mapping_at(spec, "disruption", "spec")
    _known(disruption, DISRUPTION_FIELDS, "spec.disruption", "NodePool")
    if "disruption" in spec and "consolidateAfter" not in disruption:
        raise _Refused(
            "spec.disruption.consolidateAfter",
            "required (the CRD's, once spec.disruption is given; its default 0s applies only without disruption): "
            "e.g. 1m, 0s or Never",
            show=False,
        )
    for key, value in disruption.items():
        settings[key], paths[key] = value, f"spec.disruption.{key}"
    for key in ("limits", "weight", "replicas"):
        if key in spec:
            settings[key], paths[key] = spec[key], f"spec.{key}"
    # Where the file is silent, the spec holds what the cluster then runs (the CRD's defaults), not the app's.
    settings.setdefault("consolidateAfter", SILENT_POOL["consolidateAfter"])
    settings.setdefault("limits", {})
    settings.setdefault("terminationGracePeriod", None)
    return settings, paths, os_requirement


def _node_class_name(node: Mapping[str, Any]) -> Any:
    ref = node.get("nodeClassRef")
    path = "spec.template.spec.nodeClassRef"
    if not isinstance(ref, dict):
        raise _Refused(
            path,
            f"required (the CRD's): group {NODE_CLASS_GROUP}, kind {NODE_CLASS_KIND}, name",
            ref,
            show=ref is not None,
        )
    _known(ref, ("group", "kind", "name"), path, "NodePool")
    if ref.get("group") != NODE_CLASS_GROUP:
        raise _Refused(
            f"{path}.group",
            f"must be {NODE_CLASS_GROUP} (an API group, without a version: the CRD's pattern ^[^/]*$ refuses a '/')",
            ref.get("group"),
        )
    if ref.get("kind") != NODE_CLASS_KIND:
        raise _Refused(f"{path}.kind", f"must be {NODE_CLASS_KIND}", ref.get("kind"))
    return ref.get("name")


def requirement_settings(
    requirements: Sequence[Any], paths: dict[str, str]
) -> tuple[dict[str, Any], tuple[str, Any] | None]:
    """A pool's requirements as shortcuts (a requirement a shortcut writes exactly, its key named once) and
    requirements, in upstream's order; every shortcut no requirement names is null. kubernetes.io/os is returned
    apart (the app writes it from the class)."""
    settings: dict[str, Any] = {alias: None for alias in SHORTCUTS.values()}
    own: list[Any] = []
    os_requirement = None
    keys = [r.get("key") if isinstance(r, dict) else None for r in requirements]
    for j, requirement in enumerate(requirements):
        path = f"spec.template.spec.requirements[{j}]"
        key = keys[j]
        if key == OS_KEY and keys.count(OS_KEY) == 1:
            os_requirement = (path, requirement)
            continue
        shortcut = SHORTCUTS.get(str(key)) if keys.count(key) == 1 else None
        value = _shortcut_value(shortcut, requirement) if shortcut else None
        if shortcut is not None and value is not None:
            settings[shortcut], paths[shortcut] = value, f"{path}.values"
            continue
        paths[f"requirements[{len(own)}]"] = path
        own.append(requirement)
    return {**settings, **({"requirements": own} if own else {})}, os_requirement


def _shortcut_value(shortcut: str, requirement: Mapping[str, Any]) -> Any:
    """What the shortcut takes to write exactly ``requirement`` (None: it cannot)."""
    values = requirement.get("values")
    if set(requirement) - {"key", "operator", "values"} or requirement.get("operator") != _SHORTCUT_OPERATOR[shortcut]:
        return None
    if not isinstance(values, list) or not values:
        return None
    if shortcut != "minInstanceGeneration":
        return values
    return int(values[0]) if len(values) == 1 and isinstance(values[0], str) and ascii_int(values[0]) else None


# --- NodeOverlay ----------------------------------------------------------------------------------------------


def node_overlay_settings(obj: Mapping[str, Any], cluster_name: str) -> Converted:
    """A NodeOverlay as nodeOverlays settings (the same fields)."""
    spec = obj["spec"]
    _known(spec, OVERLAY_FIELDS, "spec", "NodeOverlay")
    settings, paths = _metadata_settings(obj)
    for key, value in spec.items():
        settings[key], paths[key] = value, f"spec.{key}"
    return settings, paths, None


CONVERTERS: dict[tuple[str, str], Callable[[Mapping[str, Any], str], Converted]] = {
    (NODE_CLASS_API_VERSION, NODE_CLASS_KIND): node_class_settings,
    (NODE_POOL_API_VERSION, "NodePool"): node_pool_settings,
    (NODE_OVERLAY_API_VERSION, "NodeOverlay"): node_overlay_settings,
}
SPECS: dict[str, type[BaseModel]] = {
    NODE_CLASS_KIND: NodeClassSpec,
    "NodePool": NodePoolSpec,
    "NodeOverlay": NodeOverlaySpec,
}


# --- the spec's own checks, named in the manifest's terms ---------------------------------------------------------


class _Invalid(Exception):
    """The spec's own refusals of one object, one line each."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def _validated(kind: str, settings: Mapping[str, Any], paths: Mapping[str, str]) -> Any:
    try:
        return SPECS[kind].model_validate(settings, context={"written": True})
    except ValidationError as err:
        raise _Invalid([_error_line(error, paths) for error in err.errors()]) from None


def _error_line(error: Any, paths: Mapping[str, str]) -> str:
    """A pydantic error at a setting's location, as the manifest's field, its value and the message."""
    message = " ".join(str(error["msg"]).removeprefix("Value error, ").split())
    if error["type"] == "extra_forbidden":
        return f"{manifest_path(error['loc'], paths)}: Karpenter 1.14.1 has no such field here"
    if not error["loc"]:  # a rule across the object's settings: the first setting it names
        named = [
            (message.find(s), s)
            for s in paths
            if "[" not in s and s != "name" and re.search(rf"\b{re.escape(s)}\b", message, re.ASCII)
        ]
        setting = min(named)[1] if named else ""
        return f"{paths[setting] if named else 'spec'}: {message.removeprefix(f'{setting}: ')}"
    value = error.get("input")
    if isinstance(value, dict) and error["type"] == "value_error":
        return f"{manifest_path(error['loc'], paths)}: {message}"
    return f"{manifest_path(error['loc'], paths)} {shown(value)}: {message}"


def manifest_path(loc: Sequence[Any], paths: Mapping[str, str]) -> str:
    """The manifest path of a setting's location (``dataVolumes[0].sizeGib`` ->
    ``spec.blockDeviceMappings[2].ebs.volumeSize``): the longest known prefix's path, then the rest."""
    tokens = [f"[{item}]" if isinstance(item, int) else f".{item}" for item in loc]
    for cut in range(len(tokens), 0, -1):
        prefix = "".join(tokens[:cut]).lstrip(".")
        if prefix in paths:
            return paths[prefix] + "".join(tokens[cut:])
    return "spec" + "".join(tokens)


def _check_alias(spec: NodeClassSpec, kubernetes_version: str | None, paths: Mapping[str, str]) -> None:
    """An alias with no image for the cluster's Kubernetes version (specs.rules.ami_problems, named here)."""
    match = re.fullmatch(r"1\.(\d+)", kubernetes_version or "", re.ASCII)
    if spec.alias is None or match is None:
        return
    problem = ami.unavailable_alias(spec.alias, str(kubernetes_version), int(match.group(1)))
    if problem is not None:
        path = paths.get("amiAlias", "spec.amiSelectorTerms[0].alias")
        raise _Refused(path, problem.removeprefix(f"amiAlias {quoted(spec.alias)}").lstrip(": "), spec.alias)


def settings_json(manifests: NodeManifests) -> str:
    """The objects as typed settings, JSON for cdk.json."""
    return json.dumps(manifests.settings(), indent=2)
