"""A node class's user data, judged at synth as Karpenter 1.14 reads and merges it for each AMI family.

Sources (aws/karpenter-provider-aws v1.14.1, ``pkg/providers/amifamily/bootstrap/``): ``nodeadm.go`` (AL2023),
``eksbootstrap.go`` (AL2), ``bottlerocket.go`` and ``bottlerocketsettings.go`` (Bottlerocket), ``windows.go``,
``custom.go``, and ``mime/mime.go``; the 1.14 docs' "spec.userData" (website/content/en/v1.14/concepts/nodeclasses.md).

- **Reading.** A value that starts (spaces trimmed) with ``MIME-Version:`` or ``Content-Type:`` exactly as written
  is a MIME archive, read by Go's library (:mod:`.mime` mirrors it; what it refuses, Karpenter refuses and launches
  no node). Otherwise AL2023 takes it as one NodeConfig part if its first YAML document is a mapping (or empty), else
  as a shell script; AL2 as a shell script. A value that starts with those headers in another case is neither.
- **Karpenter's values.** What Karpenter writes from the cluster and the pools (cluster identity, kubelet settings,
  labels, taints) is refused wherever the user data says it too, naming the setting that says it instead: in each
  YAML document of a NodeConfig part (config keys and kubelet flags, in either spelling), as a kubelet flag anywhere
  in a shell part (``--max-pods=5``, ``--max-pods 5``, ``--max_pods``), as a call of ``/etc/eks/bootstrap.sh`` or
  ``nodeadm init`` (Karpenter's part does that), in Bottlerocket's ``settings.kubernetes``.
- **Bottlerocket types.** The TOML is decoded into Karpenter's settings structs (:mod:`.bottlerocket_settings`): a
  value of the wrong type fails there, on every launch.
- **Windows.** The user's commands go inside Karpenter's ``<powershell>`` block: EC2Launch's own tags cannot.
- **Size.** EC2 takes at most 16 KB of user data; :mod:`.user_data_merged` builds what Karpenter sends (the
  user's parts and Karpenter's, for the pool's labels, taints and kubelet settings); the node class alone is
  checked with a pool that adds nothing, each pool by the cross-object rules (rules.py).
"""

from __future__ import annotations

import functools
import re
import tomllib
from typing import Any

from .. import yaml_load
from . import bottlerocket_settings as br
from . import mime
from .base import quoted
from .user_data_shell import flags, words

NODE_CONFIG_API_VERSION = "node.eks.aws/v1alpha1"
# nodeadm.go: a NodeConfig's spec.cluster comes from Karpenter (name, endpoint, CA, service CIDR).
NODE_CONFIG_CLUSTER_KEYS = ("name", "apiServerEndpoint", "certificateAuthority", "cidr")
# The kubelet settings of spec.kubelet, by the name Karpenter writes them in a NodeConfig's kubelet config
# (KubeletConfiguration JSON), as bootstrap.sh / kubelet flags (bootstrap.go kubeletExtraArgs, the flags Karpenter
# passes on AL2 and Windows) and as Bottlerocket settings.kubernetes keys (bottlerocket.go).
KUBELET_SETTINGS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "maxPods": (("max-pods",), "max-pods"),
    "podsPerCore": (("pods-per-core",), None),
    "systemReserved": (("system-reserved",), "system-reserved"),
    "kubeReserved": (("kube-reserved",), "kube-reserved"),
    "evictionHard": (("eviction-hard",), "eviction-hard"),
    "evictionSoft": (("eviction-soft",), "eviction-soft"),
    "evictionSoftGracePeriod": (("eviction-soft-grace-period",), "eviction-soft-grace-period"),
    "evictionMaxPodGracePeriod": (("eviction-max-pod-grace-period",), "eviction-max-pod-grace-period"),
    "imageGCHighThresholdPercent": (("image-gc-high-threshold",), "image-gc-high-threshold-percent"),
    "imageGCLowThresholdPercent": (("image-gc-low-threshold",), "image-gc-low-threshold-percent"),
    "cpuCFSQuota": (("cpu-cfs-quota",), "cpu-cfs-quota-enforced"),
    "clusterDNS": (("cluster-dns", "dns-cluster-ip"), "cluster-dns-ip"),
}
KUBELET_CONFIG_KEYS = tuple(KUBELET_SETTINGS)
BOTTLEROCKET_KUBELET_KEYS = {name: key for name, (_, key) in KUBELET_SETTINGS.items() if key is not None}
# Kubelet flags Karpenter passes from the pools (bootstrap.go nodeLabelArg, nodeTaintArg), and nodeadm.go's
# registerWithTaints kubelet config key.
POOL_FLAGS = {"node-labels": "the pool's labels", "register-with-taints": "the pool's taints and startupTaints"}
NODE_CONFIG_KUBELET_KEYS = {"registerWithTaints": "the pool's taints and startupTaints"}
# bootstrap.sh's own flags that carry what Karpenter passes (eksbootstrap.go eksBootstrapScript).
BOOTSTRAP_FLAGS = {
    "kubelet-extra-args": "the node class's kubelet settings and the pool's labels and taints",
    "use-max-pods": "the node class's kubelet.maxPods",
    "apiserver-endpoint": "the cluster",
    "b64-cluster-ca": "the cluster",
}
# bottlerocket.go: settings.kubernetes keys Karpenter writes from the cluster and the pools.
BOTTLEROCKET_OWNED = {
    "cluster-name": "the cluster (clusterName)",
    "api-server": "the cluster's endpoint",
    "cluster-certificate": "the cluster's CA",
    "node-labels": "the pool's labels",
    "node-taints": "the pool's taints and startupTaints",
}
# EC2Launch's user data tags (EC2 User Guide, "Run commands on your Windows instance at launch"): Karpenter writes
# the user's commands inside its own <powershell> block, where none of them is read as a tag.
WINDOWS_TAGS = ("powershell", "script", "persist", "runAsLocalSystem", "powershellArguments")

_LOOKS_MIME = re.compile(r"(mime-version|content-type)[ \t]*:", re.IGNORECASE | re.ASCII)
_WINDOWS_TAG = re.compile(r"</?(" + "|".join(WINDOWS_TAGS) + r")\s*>", re.IGNORECASE | re.ASCII)


@functools.lru_cache(maxsize=256)  # a configuration's classes are checked again on every synth of it
def check(family: str, text: str) -> None:
    """Refuse user data Karpenter 1.14 cannot read for ``family`` (al2023, al2, bottlerocket, windows20XX, custom) or
    whose values it writes itself; ValueError names the part, the key and the setting to use."""
    if not text.strip():
        raise ValueError("user data is empty: leave it unset")
    kind = "windows" if family.startswith("windows") else family
    {"al2023": _al2023, "al2": _al2, "bottlerocket": _bottlerocket, "windows": _windows, "custom": _custom}[kind](text)


def entries(family: str, text: str) -> list[mime.Entry]:
    """The parts Karpenter makes of AL2023 or AL2 user data (nodeadm.go parseUserData, eksbootstrap.go mimeify)."""
    if mime.is_mime(text):
        try:
            return mime.read_archive(text)
        except mime.MimeError as err:
            before = text[: len(text) - len(text.lstrip(mime.GO_SPACE))]
            if before:  # found by the trimmed text, read from the first line (nodeadm.go, eksbootstrap.go)
                raise ValueError(
                    f"user data has {len(before)} blank character(s) before its first MIME header: Karpenter takes it "
                    "as MIME by its trimmed text but reads the headers from the first line, where there are none "
                    f"({err}); start the user data with 'MIME-Version:' or 'Content-Type:'"
                ) from None
            raise ValueError(
                f"user data starts with a MIME header, and Karpenter's MIME reader refuses it: {err}"
            ) from None
    if _LOOKS_MIME.match(text.lstrip()):
        first = text.lstrip().split(":", 1)[0]
        raise ValueError(
            f"user data starts with {quoted(first + ':')}: Karpenter takes user data as MIME only when it starts with "
            "'MIME-Version:' or 'Content-Type:' written so, and would run this one as a shell script"
        )
    if family == "al2023" and _node_config_first(text):
        return [mime.Entry(mime.CONTENT_TYPE_NODE_CONFIG, text)]
    return [mime.Entry(mime.CONTENT_TYPE_SHELL, text)]


def _node_config_first(text: str) -> bool:
    """nodeadm.go: sigs.k8s.io/yaml Unmarshal into a map succeeds: the first YAML document is a mapping or empty."""
    try:
        first = yaml_load.user_documents(text, first_only=True)
    except ValueError:
        return False
    return not first or first[0] is None or isinstance(first[0], dict)


def _al2023(text: str) -> None:
    for number, entry in enumerate(entries("al2023", text), 1):
        where = f"user data part {number}"
        if entry.media_type == mime.CONTENT_TYPE_NODE_CONFIG:
            documents = _yaml_documents(entry.content, where)
            if not any(d is not None for d in documents):
                raise ValueError(
                    f"{where}: a NodeConfig part with no YAML document (Karpenter takes user data whose first YAML "
                    "document is empty, e.g. only comments, as a NodeConfig)"
                )
            for index, document in enumerate(documents):
                if document is not None:
                    _node_config(document, where if len(documents) == 1 else f"{where}, document {index + 1}")
        elif entry.media_type == "text/x-shellscript":
            _shell(entry.content, where, "al2023")


def _yaml_documents(text: str, where: str) -> list[Any]:
    try:
        return yaml_load.user_documents(text)
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None


def _node_config(document: Any, where: str) -> None:
    """One NodeConfig document: the right apiVersion and kind, and none of the fields Karpenter writes."""
    if not isinstance(document, dict):
        raise ValueError(f"{where}: a NodeConfig is a YAML or JSON object")
    api, kind = document.get("apiVersion"), document.get("kind")
    if api != NODE_CONFIG_API_VERSION or kind != "NodeConfig":
        raise ValueError(
            f"{where}: apiVersion {quoted(api)} kind {quoted(kind)} is not a NodeConfig "
            f"(apiVersion {NODE_CONFIG_API_VERSION}, kind NodeConfig); Karpenter reads YAML user data as a NodeConfig, "
            "so other YAML (e.g. #cloud-config) goes in a MIME part of its own type"
        )
    spec = _mapping(document.get("spec"))
    cluster = _mapping(spec.get("cluster"))
    for key in NODE_CONFIG_CLUSTER_KEYS:
        if key in cluster:
            raise ValueError(
                f"{where}: NodeConfig spec.cluster.{key} is written by Karpenter from the cluster, "
                "and Karpenter's value wins; leave it out"
            )
    kubelet = _mapping(spec.get("kubelet"))
    for key in _mapping(kubelet.get("config")):
        if key in KUBELET_SETTINGS:
            raise ValueError(_kubelet_owned(f"{where}: NodeConfig spec.kubelet.config.{key}", key))
        if key in NODE_CONFIG_KUBELET_KEYS:
            raise ValueError(_owned(f"{where}: NodeConfig spec.kubelet.config.{key}", NODE_CONFIG_KUBELET_KEYS[key]))
    raw_flags = kubelet.get("flags") or []
    for flag in raw_flags if isinstance(raw_flags, list) else [raw_flags]:
        _kubelet_flags(str(flag), f"{where}: NodeConfig kubelet flag")


def _mapping(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def _kubelet_flags(text: str, where: str) -> None:
    """Refuse a kubelet flag of Karpenter's in ``text`` (a word or an argument list), in any spelling."""
    for name, written in flags(text):
        if name in POOL_FLAGS:
            raise ValueError(_owned(f"{where} {written}", POOL_FLAGS[name]))
        setting = next((s for s, (names, _) in KUBELET_SETTINGS.items() if name in names), None)
        if setting is not None:
            raise ValueError(_kubelet_owned(f"{where} {written}", setting))


def _shell(script: str, where: str, family: str) -> None:
    """A shell part: no call of the bootstrap Karpenter runs, no kubelet flag Karpenter passes."""
    found = words(script)
    for index, word in enumerate(found):
        name = word.text.rsplit("/", 1)[-1]
        if word.command and name == "bootstrap.sh":
            raise ValueError(
                f"{where}, line {word.line}, runs {word.text}: "
                + (
                    "Karpenter adds a part that runs it with the cluster's and the pool's parameters after yours, "
                    "and a node must join once (for a bootstrap of your own: amiFamily Custom)"
                    if family == "al2"
                    else "AL2023 images join with nodeadm and Karpenter's NodeConfig part (for a bootstrap of your "
                    "own: amiFamily Custom)"
                )
            )
        following = found[index + 1] if index + 1 < len(found) else None
        if word.command and name == "nodeadm" and following is not None and following.text == "init":
            raise ValueError(
                f"{where}, line {word.line}, runs nodeadm init: the node runs it once with Karpenter's NodeConfig "
                "part and yours merged; give your settings in a NodeConfig part instead"
            )
        for flag, written in flags(word.text):
            if flag in BOOTSTRAP_FLAGS:
                raise ValueError(
                    _owned(f"{where}, line {word.line}: bootstrap.sh flag {written}", BOOTSTRAP_FLAGS[flag])
                )
        _kubelet_flags(word.text, f"{where}, line {word.line}: kubelet flag")


def _owned(what: str, instead: str) -> str:
    """``what`` (where in the user data, and the key) is Karpenter's, from ``instead``."""
    return f"{what} is set by Karpenter from {instead}, which wins; set it there"


def _kubelet_owned(what: str, kubelet_key: str) -> str:
    """``what`` is Karpenter's, from the node class's kubelet setting ``kubelet_key``."""
    return (
        f"{what} is set by Karpenter from the node class's kubelet.{kubelet_key} (it computes each node's capacity "
        f"from it); set kubelet.{kubelet_key} instead"
    )


def _al2(text: str) -> None:
    for number, entry in enumerate(entries("al2", text), 1):
        if entry.media_type in ("text/x-shellscript", ""):
            _shell(entry.content, f"user data part {number}", "al2")


def _bottlerocket(text: str) -> None:
    try:
        settings_toml = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"Bottlerocket user data is not TOML ({err})") from None
    others = sorted(set(settings_toml) - {"settings"})
    if others:
        raise ValueError(
            f"Bottlerocket user data: top-level {', '.join(quoted(k) for k in others)} is dropped by Karpenter, "
            "which keeps only [settings]"
        )
    settings = settings_toml.get("settings", {})
    if not isinstance(settings, dict):
        raise ValueError(_typed(br.type_problem(settings, {}, "settings")))
    kubernetes = settings.get("kubernetes", {})
    if (problem := br.type_problem(kubernetes, {}, "settings.kubernetes")) is not None:
        raise ValueError(_typed(problem))
    for key, value in kubernetes.items():
        _bottlerocket_key(key)
        if (problem := br.type_problem(value, br.KUBERNETES[key], f"settings.kubernetes.{key}")) is not None:
            raise ValueError(_typed(problem))
    commands = settings.get("bootstrap-commands", {})
    if (problem := br.type_problem(commands, ("map", br.BOOTSTRAP_COMMAND), "settings.bootstrap-commands")) is not None:
        raise ValueError(_typed(problem))
    for name, command in commands.items():
        mode = command.get("mode")
        if mode is not None and mode not in br.BOOTSTRAP_MODES:
            raise ValueError(
                f"Bottlerocket user data: settings.bootstrap-commands.{name}.mode {quoted(mode)} is not a mode "
                f"Bottlerocket runs ({', '.join(br.BOOTSTRAP_MODES)})"
            )


def _typed(problem: str | None) -> str:
    return (
        f"Bottlerocket user data: {problem} (bottlerocketsettings.go): the decode fails and no node of the class "
        "launches"
    )


def _bottlerocket_key(key: str) -> None:
    where = f"Bottlerocket user data: settings.kubernetes.{key}"
    if key in BOTTLEROCKET_OWNED:
        raise ValueError(_owned(where, BOTTLEROCKET_OWNED[key]))
    kubelet = {toml_key: name for name, toml_key in BOTTLEROCKET_KUBELET_KEYS.items()}
    if key in kubelet:
        raise ValueError(_kubelet_owned(where, kubelet[key]))
    if key not in br.KUBERNETES:
        raise ValueError(f"{where} is not a setting Karpenter 1.14 knows: it drops it from the user data")


def _windows(text: str) -> None:
    tag = _WINDOWS_TAG.search(text)
    if tag is not None:
        raise ValueError(
            f"Windows user data: leave out {tag.group(0)}; Karpenter writes your commands inside its own <powershell> "
            "block, before its bootstrap call, where EC2Launch reads no tag"
        )
    _kubelet_flags(text, "Windows user data: kubelet flag")


def _custom(text: str) -> None:
    """Custom: no merge; nothing to check but that it is there (the node class refuses Custom without it)."""
