"""The user data Karpenter 1.14 sends to a node: the user's parts and its own, for one pool of a node class.

Built as aws/karpenter-provider-aws v1.14.1 builds it (``pkg/providers/amifamily/bootstrap/``): ``nodeadm.go``
(the user's parts, then Karpenter's NodeConfig, as one MIME archive), ``eksbootstrap.go`` and ``bootstrap.go``
(the user's parts, then a shell part calling bootstrap.sh with the kubelet's extra arguments), ``bottlerocket.go``
(the user's TOML with Karpenter's settings.kubernetes keys written over it), ``windows.go`` (the user's commands
inside Karpenter's ``<powershell>`` block, before its Start-EKSBootstrap call), ``custom.go`` (as given).

What only the running cluster knows is taken at its largest (:data:`CLUSTER`): a 100-character cluster name (EKS's
limit), an endpoint of EKS's form in the longest region name, the CA as EKS issues it (a PEM of about 1,100 bytes:
1,500 base64 characters), an IPv6 service CIDR and cluster DNS address. What the pool decides comes from its spec:
its labels with Karpenter's own (``karpenter.sh/nodepool``, ``karpenter.sh/capacity-type``,
``karpenter.k8s.aws/ec2nodeclass``) and each requirement's longest ``In`` value, its taints and startup taints with
Karpenter's ``karpenter.sh/unregistered:NoExecute``, and the class's kubelet settings. So the size is the most
Karpenter may send: EC2 refuses more than 16 KB (EC2 User Guide, "Instance user data", counted before base64)."""

from __future__ import annotations

import functools
import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from . import mime
from .user_data import entries

EC2_USER_DATA_BYTES = 16 * 1024


@dataclass(frozen=True)
class Cluster:
    name: str
    endpoint: str
    ca: str  # base64
    cidr: str
    dns: str


CLUSTER = Cluster(
    name="c" * 100,
    endpoint="https://" + "0" * 32 + ".gr7.ap-southeast-5.eks.amazonaws.com",
    ca="A" * 1500,
    cidr="fd00:ffff:ffff:ffff:ffff:ffff::/108",
    dns="fd00:ffff:ffff:ffff:ffff:ffff:0000:000a",
)
UNREGISTERED_TAINT = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
CAPACITY_TYPE_LONGEST = "on-demand"
# libyaml's dumper where PyYAML has it (the same text, about 15 times faster than the pure-Python one).
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+", re.ASCII)  # a TOML bare key


@dataclass(frozen=True)
class Pool:
    """What a pool adds to its nodes' user data."""

    name: str
    labels: Mapping[str, str]
    taints: Sequence[Mapping[str, str]]


def pool_of(pool: Any, class_name: str) -> Pool:
    """A NodePoolSpec's labels and taints as Karpenter passes them for a node of ``class_name``."""
    labels = dict(pool.labels)
    for requirement in pool.requirements:
        if requirement.operator == "In" and requirement.values:
            labels[requirement.key] = max(requirement.values, key=len)
    labels |= {
        "karpenter.sh/nodepool": pool.name,
        "karpenter.sh/capacity-type": CAPACITY_TYPE_LONGEST,
        "karpenter.k8s.aws/ec2nodeclass": class_name,
    }
    taints = [t.manifest() for t in [*pool.taints, *pool.startup_taints]] + [UNREGISTERED_TAINT]
    return Pool(pool.name, labels, taints)


BARE_POOL = Pool(
    "p" * 63,
    {"karpenter.sh/nodepool": "p" * 63, "karpenter.sh/capacity-type": CAPACITY_TYPE_LONGEST},
    [UNREGISTERED_TAINT],
)


def merged(family: str, text: str | None, kubelet: Mapping[str, Any], pool: Pool, cluster: Cluster = CLUSTER) -> str:
    """The user data Karpenter would send for ``family`` (lowercase), before base64."""
    kind = "windows" if family.startswith("windows") else family
    if kind == "custom":
        return text or ""
    if kind == "bottlerocket":
        return _bottlerocket(text, kubelet, pool, cluster)
    if kind == "windows":
        return _windows(text, kubelet, pool, cluster)
    custom = entries(kind, text) if text else []
    if kind == "al2023":
        return mime.serialize(
            [*custom, mime.Entry(mime.CONTENT_TYPE_NODE_CONFIG, _node_config(kubelet, pool, cluster))]
        )
    return mime.serialize([*custom, mime.Entry(mime.CONTENT_TYPE_SHELL, _bootstrap_sh(kubelet, pool, cluster))])


def _taint(taint: Mapping[str, str]) -> str:
    """corev1.Taint.ToString: key=value:effect, or key:effect."""
    value = taint.get("value")
    return f"{taint['key']}={value}:{taint['effect']}" if value else f"{taint['key']}:{taint['effect']}"


def _go_quote(text: str) -> str:
    return json.dumps(text)  # Go's %q of printable ASCII


def _label_arg(pool: Pool) -> str:
    joined = ",".join(f"{k}={pool.labels[k]}" for k in sorted(pool.labels))
    return f"--node-labels={_go_quote(joined)}" if pool.labels else ""


def _extra_args(kubelet: Mapping[str, Any], pool: Pool) -> list[str]:
    """bootstrap.go kubeletExtraArgs."""
    args = [_label_arg(pool), f"--register-with-taints={_go_quote(','.join(_taint(t) for t in pool.taints))}"]
    for key, flag in (("maxPods", "max-pods"), ("podsPerCore", "pods-per-core")):
        if key in kubelet:
            args.append(f"--{flag}={kubelet[key]}")
    for key, flag, sep in (
        ("systemReserved", "system-reserved", "="),
        ("kubeReserved", "kube-reserved", "="),
        ("evictionHard", "eviction-hard", "<"),
        ("evictionSoft", "eviction-soft", "<"),
        ("evictionSoftGracePeriod", "eviction-soft-grace-period", "="),
    ):
        if kubelet.get(key):
            args.append(f"--{flag}={_go_quote(','.join(f'{k}{sep}{v}' for k, v in kubelet[key].items()))}")
    for key, flag in (
        ("evictionMaxPodGracePeriod", "eviction-max-pod-grace-period"),
        ("imageGCHighThresholdPercent", "image-gc-high-threshold"),
        ("imageGCLowThresholdPercent", "image-gc-low-threshold"),
    ):
        if key in kubelet:
            args.append(f"--{flag}={kubelet[key]}")
    if "cpuCFSQuota" in kubelet:
        args.append(f"--cpu-cfs-quota={str(kubelet['cpuCFSQuota']).lower()}")
    return [a for a in args if a]


def _bootstrap_sh(kubelet: Mapping[str, Any], pool: Pool, cluster: Cluster) -> str:
    """eksbootstrap.go eksBootstrapScript (IPv6, the larger form)."""
    script = (
        "#!/bin/bash -xe\nexec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n"
        f"/etc/eks/bootstrap.sh '{cluster.name}' --apiserver-endpoint '{cluster.endpoint}' "
        f"--b64-cluster-ca '{cluster.ca}' \\\n--ip-family ipv6 \\\n--dns-cluster-ip '{cluster.dns}'"
    )
    if "maxPods" in kubelet:
        script += " \\\n--use-max-pods false"
    return script + f" \\\n--kubelet-extra-args '{' '.join(_extra_args(kubelet, pool))}'"


def _node_config(kubelet: Mapping[str, Any], pool: Pool, cluster: Cluster) -> str:
    """nodeadm.go getNodeConfigYAML (sigs.k8s.io/yaml: keys sorted)."""
    config = {key: value for key, value in kubelet.items()} | {"registerWithTaints": list(pool.taints)}
    spec: dict[str, Any] = {
        "cluster": {
            "apiServerEndpoint": cluster.endpoint,
            "certificateAuthority": cluster.ca,
            "cidr": cluster.cidr,
            "name": cluster.name,
        },
        "containerd": {},
        "instance": {"localStorage": {}},
        "kubelet": {"config": config, **({"flags": [_label_arg(pool)]} if pool.labels else {})},
    }
    document = {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
    }
    return "# Karpenter Generated NodeConfig\n" + yaml.dump(document, Dumper=_DUMPER, sort_keys=True, width=10**9)


def _windows(text: str | None, kubelet: Mapping[str, Any], pool: Pool, cluster: Cluster) -> str:
    """windows.go Script."""
    out = "<powershell>\n" + (f"{text}\n" if text else "")
    out += '[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"\n'
    out += f"& $EKSBootstrapScriptFile -EKSClusterName '{cluster.name}' -APIServerEndpoint '{cluster.endpoint}'"
    out += f" -Base64ClusterCA '{cluster.ca}' -KubeletExtraArgs '{' '.join(_extra_args(kubelet, pool))}'"
    out += f" -DNSClusterIP '{cluster.dns}'"
    return out + "\n</powershell>"


def _bottlerocket(text: str | None, kubelet: Mapping[str, Any], pool: Pool, cluster: Cluster) -> str:
    """bottlerocket.go Script: the user's settings with Karpenter's settings.kubernetes keys written over them."""
    document = tomllib.loads(text) if text else {}
    settings = dict(document.get("settings", {}))
    kubernetes = dict(settings.get("kubernetes", {}))
    kubernetes |= {
        "cluster-name": cluster.name,
        "api-server": cluster.endpoint,
        "cluster-certificate": cluster.ca,
        "cluster-dns-ip": cluster.dns,
        "node-labels": {**kubernetes.get("node-labels", {}), **pool.labels},
        "node-taints": _bottlerocket_taints(pool),
    }
    for key, toml_key in (
        ("maxPods", "max-pods"),
        ("systemReserved", "system-reserved"),
        ("kubeReserved", "kube-reserved"),
        ("evictionHard", "eviction-hard"),
        ("evictionSoft", "eviction-soft"),
        ("evictionSoftGracePeriod", "eviction-soft-grace-period"),
        ("evictionMaxPodGracePeriod", "eviction-max-pod-grace-period"),
        ("imageGCHighThresholdPercent", "image-gc-high-threshold-percent"),
        ("imageGCLowThresholdPercent", "image-gc-low-threshold-percent"),
        ("cpuCFSQuota", "cpu-cfs-quota-enforced"),
    ):
        if key in kubelet:
            kubernetes[toml_key] = kubelet[key]
    settings["kubernetes"] = kubernetes
    return _toml({"settings": settings})


def _bottlerocket_taints(pool: Pool) -> dict[str, list[str]]:
    taints: dict[str, list[str]] = {}
    for taint in pool.taints:
        taints.setdefault(taint["key"], []).append(f"{taint.get('value', '')}:{taint['effect']}")
    return taints


def _toml(table: Mapping[str, Any], prefix: str = "") -> str:
    """A TOML document of ``table`` (go-toml v2's layout: a table's values, then its sub-tables)."""
    lines, tables = [], []
    for key, value in table.items():
        name = key if _BARE_KEY.fullmatch(key) else json.dumps(key)
        if isinstance(value, dict):
            tables.append((f"{prefix}{name}", value))
        else:
            lines.append(f"{name} = {_toml_value(value)}\n")
    out = (f"[{prefix[:-1]}]\n" if prefix and lines else "") + "".join(lines)
    for name, sub in tables:
        out += "\n" + _toml(sub, f"{name}.")
    return out


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


def size(family: str, text: str | None, kubelet: Mapping[str, Any], pool: Pool) -> int:
    """Bytes of the user data Karpenter would send (before base64, as EC2 counts)."""
    return _size(
        family,
        text,
        json.dumps(kubelet, sort_keys=True),
        json.dumps(sorted(pool.labels.items())),
        json.dumps(list(pool.taints), sort_keys=True),
    )


@functools.lru_cache(maxsize=1024)
def _size(family: str, text: str | None, kubelet: str, labels: str, taints: str) -> int:
    """:func:`size` of its inputs as JSON (a configuration is checked again on every synth of it)."""
    pool = Pool("", dict(json.loads(labels)), json.loads(taints))
    return len(merged(family, text, json.loads(kubelet), pool).encode())
