"""A node class's user data, checked at synth as Karpenter 1.14 merges it for each AMI family.

Sources (aws/karpenter-provider-aws, the 1.14 line): ``website/content/en/v1.14/concepts/nodeclasses.md``
("spec.userData"), ``pkg/providers/amifamily/bootstrap/{nodeadm,eksbootstrap,bottlerocket,bottlerocketsettings,
windows,custom}.go`` and ``bootstrap/mime/mime.go``; EC2's limit: the EC2 User Guide, "Instance user data"
(16 KB, before base64).

- AL2023: a MIME multi-part archive, a bare ``NodeConfig`` (YAML or JSON) or a shell script; Karpenter makes a
  non-MIME value one part and adds its own NodeConfig, whose values win (cluster, kubelet, labels, taints).
- AL2: a MIME archive or a shell script, run before the part Karpenter adds to call /etc/eks/bootstrap.sh.
- Bottlerocket: TOML; Karpenter overwrites the cluster's settings, the node labels and taints and every
  ``settings.kubernetes`` key its kubelet settings write, and drops keys its settings model does not know.
- Windows: PowerShell commands, put inside Karpenter's ``<powershell>`` block before its bootstrap call.
- Custom: used as given; it must join the node to the cluster itself.

What Karpenter would override is refused here, naming the key and the setting that says it instead: the node
would otherwise run with something other than what Karpenter computed its capacity from.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from typing import Any

from .. import yaml_load
from .base import quoted

# EC2 refuses user data over 16 KB, counted before base64 (EC2 User Guide, "Instance user data").
EC2_USER_DATA_BYTES = 16 * 1024
# What Karpenter adds to the user's data, at most, for each family: its bootstrap part rendered with a
# 100-character cluster name, an 80-character endpoint, an EKS cluster CA (a 1,1xx-byte PEM: 1,500
# base64 characters), the cluster DNS IP and a node-labels flag of 600 characters (the pool's own labels and
# Karpenter's), plus the MIME framing. The user's part may take the rest of EC2's 16 KB.
KARPENTER_PART_BYTES = {
    "al2023": 3000,
    "al2": 2800,
    "bottlerocket": 2700,
    "windows": 2600,
    "custom": 0,
}

NODE_CONFIG_API_VERSION = "node.eks.aws/v1alpha1"
NODE_CONFIG_CONTENT_TYPE = "application/node.eks.aws"
SHELL_CONTENT_TYPE = "text/x-shellscript"
# nodeadm.go: a NodeConfig's spec.cluster comes from Karpenter (name, endpoint, CA, service CIDR).
NODE_CONFIG_CLUSTER_KEYS = ("name", "apiServerEndpoint", "certificateAuthority", "cidr")
# nodeadm.go: kubelet config keys Karpenter writes besides those of spec.kubelet (taints: registerWithTaints).
NODE_CONFIG_KUBELET_KEYS = {"registerWithTaints": "the pool's taints and startupTaints"}
# nodeadm.go: kubelet flags Karpenter passes (the pool's labels, via --node-labels).
NODE_CONFIG_FLAGS = {"--node-labels": "the pool's labels", "--register-with-taints": "the pool's taints"}

# bottlerocket.go: settings.kubernetes keys Karpenter always sets, with the setting that says them instead.
BOTTLEROCKET_OWNED = {
    "cluster-name": "the cluster (clusterName)",
    "api-server": "the cluster's endpoint",
    "cluster-certificate": "the cluster's CA",
    "node-labels": "the pool's labels",
    "node-taints": "the pool's taints and startupTaints",
}
# bottlerocket.go: the kubelet settings (spec.kubelet) Karpenter writes as settings.kubernetes keys.
BOTTLEROCKET_KUBELET_KEYS = {
    "maxPods": "max-pods",
    "clusterDNS": "cluster-dns-ip",
    "systemReserved": "system-reserved",
    "kubeReserved": "kube-reserved",
    "evictionHard": "eviction-hard",
    "evictionSoft": "eviction-soft",
    "evictionSoftGracePeriod": "eviction-soft-grace-period",
    "evictionMaxPodGracePeriod": "eviction-max-pod-grace-period",
    "imageGCHighThresholdPercent": "image-gc-high-threshold-percent",
    "imageGCLowThresholdPercent": "image-gc-low-threshold-percent",
    "cpuCFSQuota": "cpu-cfs-quota-enforced",
}
# bottlerocketsettings.go, BottlerocketKubernetes: the settings.kubernetes keys Karpenter keeps (others are dropped,
# "Unknown parameter in userData K8s settings").
BOTTLEROCKET_KUBERNETES_KEYS = frozenset(
    {
        *BOTTLEROCKET_OWNED,
        *BOTTLEROCKET_KUBELET_KEYS.values(),
        "cloud-provider",
        "credential-providers",
        "static-pods",
        "allowed-unsafe-sysctls",
        "server-tls-bootstrap",
        "registry-qps",
        "registry-burst",
        "event-qps",
        "event-burst",
        "kube-api-qps",
        "kube-api-burst",
        "container-log-max-size",
        "container-log-max-files",
        "cpu-manager-policy",
        "cpu-manager-policy-options",
        "cpu-manager-reconcile-period",
        "topology-manager-scope",
        "topology-manager-policy",
        "ids-per-pod",
        "shutdown-grace-period",
        "shutdown-grace-period-for-critical-pods",
        "cluster-domain",
        "seccomp-default",
        "pod-pids-limit",
        "device-ownership-from-security-context",
        "single-process-oom-kill",
        "container-log-max-workers",
        "container-log-monitor-interval",
        "hostname-override-source",
        "log-level",
    }
)
# The kubelet settings of spec.kubelet Karpenter passes to AL2023 as NodeConfig kubelet config (its own names).
KUBELET_CONFIG_KEYS = tuple(BOTTLEROCKET_KUBELET_KEYS) + ("podsPerCore",)

_MIME_START = re.compile(r"^\s*(MIME-Version:|Content-Type:)", re.IGNORECASE | re.ASCII)


@dataclass(frozen=True)
class Part:
    content_type: str  # the media type, lowercase, without parameters
    body: str


def check(family: str, text: str) -> None:
    """Refuse user data Karpenter 1.14 cannot merge for ``family`` (al2023, al2, bottlerocket, windows20XX,
    custom) or whose keys it would override; ValueError names the part, key and the setting to use."""
    if not text.strip():
        raise ValueError("user data is empty: leave it unset")
    kind = "windows" if family.startswith("windows") else family
    limit = EC2_USER_DATA_BYTES - KARPENTER_PART_BYTES[kind]
    size = len(text.encode())
    if size > limit:
        raise ValueError(
            f"user data of {size} bytes is too large: EC2 allows {EC2_USER_DATA_BYTES} bytes for the final user "
            f"data, and Karpenter's {kind} bootstrap part takes up to {KARPENTER_PART_BYTES[kind]} of them "
            f"(at most {limit} are yours)"
        )
    {"al2023": _al2023, "al2": _al2, "bottlerocket": _bottlerocket, "windows": _windows, "custom": _custom}[kind](text)


def is_mime(text: str) -> bool:
    """Karpenter reads user data as a MIME archive when it starts with a MIME-Version or Content-Type header."""
    return _MIME_START.match(text) is not None


def mime_parts(text: str) -> list[Part]:
    """The parts of a MIME multi-part archive as Karpenter reads it (bootstrap/mime/mime.go over Go's net/mail and
    mime/multipart): a multipart Content-Type with a boundary, then parts each opened by a ``--boundary`` line. A
    part ends at the next boundary line; ``--boundary--`` closes the archive, and so does a ``--boundary`` line
    with nothing after it (Go's reader then finds no part headers: io.EOF, which Karpenter takes as the end). A
    part that runs to the end of the text with no boundary line after it fails Go's reader (unexpected EOF)."""
    head, sep, body = text.lstrip().replace("\r\n", "\n").partition("\n\n")
    if not sep:
        raise ValueError("MIME user data: no blank line between the headers and the parts")
    content_type = _header(head, "content-type")
    match = re.match(r'\s*multipart/[a-z]+\s*;.*boundary="?([^";\n]+)"?', content_type or "", re.IGNORECASE | re.ASCII)
    if match is None:
        raise ValueError(
            f"MIME user data: Content-Type {quoted(content_type or '')} is not multipart/mixed with a boundary"
        )
    delimiter = f"--{match.group(1)}"
    lines = body.split("\n")
    marks = [i for i, line in enumerate(lines) if line.rstrip() in (delimiter, delimiter + "--")]
    if not marks or lines[marks[0]].rstrip() != delimiter:
        raise ValueError(f"MIME user data: no part starts with a {quoted(delimiter)} line")
    closed = next((i for i in marks if lines[i].rstrip() == delimiter + "--"), None)
    opens = [i for i in marks if closed is None or i < closed]
    parts: list[Part] = []
    for start, end in zip(opens, [*opens[1:], closed if closed is not None else len(lines)], strict=True):
        segment = "\n".join(lines[start + 1 : end])
        if end == len(lines):  # after the last boundary line, with no closing line
            if not segment.strip():
                break
            raise ValueError(
                f"MIME user data: the last part runs to the end with no {quoted(delimiter)} or "
                f"{quoted(delimiter + '--')} line after it; Karpenter's MIME reader fails on it"
            )
        part_head, _, part_body = segment.partition("\n\n")
        part_type = (_header(part_head, "content-type") or "text/plain").split(";", 1)[0].strip().lower()
        parts.append(Part(part_type, part_body))
    return parts


def _header(head: str, name: str) -> str | None:
    for line in head.split("\n"):
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == name:
            return value.strip()
    return None


def _al2023(text: str) -> None:
    if is_mime(text):
        parts = mime_parts(text)
    else:  # nodeadm.go: YAML (a NodeConfig) if it parses as a YAML map, else a shell script
        parts = [Part(NODE_CONFIG_CONTENT_TYPE if _yaml_map(text) else SHELL_CONTENT_TYPE, text)]
    for number, part in enumerate(parts, 1):
        if part.content_type == NODE_CONFIG_CONTENT_TYPE:
            for document in _yaml_documents(part.body, f"part {number}"):
                _node_config(document, f"part {number}")


def _yaml_map(text: str) -> bool:
    """One YAML document, a mapping (read bounded: yaml_load.user_documents)."""
    try:
        documents = yaml_load.user_documents(text)
    except ValueError:
        return False
    return len(documents) == 1 and isinstance(documents[0], dict)


def _yaml_documents(text: str, where: str) -> list[Any]:
    try:
        return [d for d in yaml_load.user_documents(text) if d is not None]
    except ValueError as err:
        raise ValueError(f"user data {where}: {err}") from None


def _node_config(document: Any, where: str) -> None:
    """One NodeConfig document: the right apiVersion and kind, and none of the fields Karpenter writes."""
    if not isinstance(document, dict):
        raise ValueError(f"user data {where}: a NodeConfig is a YAML or JSON object")
    api, kind = document.get("apiVersion"), document.get("kind")
    if api != NODE_CONFIG_API_VERSION or kind != "NodeConfig":
        raise ValueError(
            f"user data {where}: apiVersion {quoted(api)} kind {quoted(kind)} is not a NodeConfig "
            f"(apiVersion {NODE_CONFIG_API_VERSION}, kind NodeConfig); Karpenter reads YAML user data as a NodeConfig, "
            "so other YAML (e.g. #cloud-config) goes in a MIME part of its own type"
        )
    spec = document.get("spec") or {}
    cluster = spec.get("cluster") or {}
    for key in NODE_CONFIG_CLUSTER_KEYS:
        if key in cluster:
            raise ValueError(
                f"user data {where}: NodeConfig spec.cluster.{key} is written by Karpenter from the cluster, "
                "and Karpenter's value wins; leave it out"
            )
    kubelet = spec.get("kubelet") or {}
    config = kubelet.get("config") or {}
    for key in config:
        if key in KUBELET_CONFIG_KEYS:
            raise ValueError(_kubelet_owned(f"user data {where}: NodeConfig spec.kubelet.config.{key}", key))
        if key in NODE_CONFIG_KUBELET_KEYS:
            raise ValueError(
                _owned(f"user data {where}: NodeConfig spec.kubelet.config.{key}", NODE_CONFIG_KUBELET_KEYS[key])
            )
    for flag in kubelet.get("flags") or []:
        name = str(flag).split("=", 1)[0].strip()
        if name in NODE_CONFIG_FLAGS:
            raise ValueError(_owned(f"user data {where}: NodeConfig kubelet flag {name}", NODE_CONFIG_FLAGS[name]))


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
    parts = mime_parts(text) if is_mime(text) else [Part(SHELL_CONTENT_TYPE, text)]
    for number, part in enumerate(parts, 1):
        if "/etc/eks/bootstrap.sh" in part.body:
            raise ValueError(
                f"user data part {number} calls /etc/eks/bootstrap.sh: Karpenter adds a part that runs it with the "
                "cluster's and the pool's parameters after yours, and a node must join once (for a bootstrap of "
                "your own: amiFamily Custom)"
            )


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
    kubernetes = (settings_toml.get("settings") or {}).get("kubernetes") or {}
    for key in kubernetes:
        _bottlerocket_key(key)


def _bottlerocket_key(key: str) -> None:
    where = f"Bottlerocket user data: settings.kubernetes.{key}"
    if key in BOTTLEROCKET_OWNED:
        raise ValueError(_owned(where, BOTTLEROCKET_OWNED[key]))
    kubelet = {toml_key: name for name, toml_key in BOTTLEROCKET_KUBELET_KEYS.items()}
    if key in kubelet:
        raise ValueError(_kubelet_owned(where, kubelet[key]))
    if key not in BOTTLEROCKET_KUBERNETES_KEYS:
        raise ValueError(f"{where} is not a setting Karpenter 1.14 knows: it drops it from the user data")


def _windows(text: str) -> None:
    if re.search(r"</?powershell>", text, re.IGNORECASE):
        raise ValueError(
            "Windows user data: leave out <powershell> tags; Karpenter puts your commands inside its own "
            "<powershell> block, before its bootstrap call"
        )


def _custom(text: str) -> None:
    """Custom: no merge; nothing to check but that it is there (the node class refuses Custom without it)."""
