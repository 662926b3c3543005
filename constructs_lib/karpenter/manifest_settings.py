"""Karpenter objects of a file as the typed settings of their specs: each EC2NodeClass, NodePool and NodeOverlay
field in the setting that says it (``nodeClasses``, ``nodePools``, ``nodeOverlays``), with the manifest path of
each setting so that a refusal names the file's own field (constructs_lib/karpenter/node_manifests.py reads the files and
runs these converters); and the helpers both use to walk an object and refuse one of its fields.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from .manifest_fields import (
    _GIB,
    _SHORTCUT_OPERATOR,
    CLASS_FIELDS,
    DISRUPTION_FIELDS,
    EBS_FIELDS,
    MAPPING_FIELDS,
    METADATA_OPTIONS,
    OVERLAY_FIELDS,
    POOL_FIELDS,
    TEMPLATE_SPEC_FIELDS,
    _known,
    _list_at,
    _mapping_at,
    _Refused,
)
from .manifest_opinions import SILENT_POOL
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
from .specs.node_class import NodeClassSpec
from .specs.node_overlay import NodeOverlaySpec
from .specs.node_pool import OS_KEY, SHORTCUTS, NodePoolSpec
from .specs.volume_key import KEY_ARN_FORM, key_problem

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
    if "kmsKeyID" in ebs:
        _volume_key(ebs, path)
    return mapping.get("deviceName"), ebs


def _volume_key(ebs: Mapping[str, Any], path: str) -> None:
    """A customer-managed key the grants can name (a key ARN: specs.volume_key), on an encrypted volume."""
    key = ebs["kmsKeyID"]
    problem = key_problem(key, create=False) if isinstance(key, str) else f"must be {KEY_ARN_FORM}"
    if problem is not None:
        raise _Refused(f"{path}.ebs.kmsKeyID", problem, key)
    if ebs.get("encrypted") is not True:
        raise _Refused(
            f"{path}.ebs.kmsKeyID",
            "needs encrypted: true beside it: EC2 encrypts a volume with a KMS key only when the volume is encrypted "
            "(EC2 API Reference, EbsBlockDevice KmsKeyId)",
            key,
        )


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
        if written.get(key) != value and key != "kmsKeyID":  # (its key: checked with the mapping)
            raise _Refused(
                f"{path}.ebs.{key}",
                f"Bottlerocket's OS volume ({os_volume['deviceName']}) is Karpenter's default, which the app writes: "
                f"{os_volume['size']} gp3, encrypted (with a kmsKeyID of yours, if you like); leave it out or write that",
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
