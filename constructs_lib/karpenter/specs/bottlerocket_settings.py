"""Bottlerocket user data decoded into the types Karpenter 1.14 decodes it into.

Source: aws/karpenter-provider-aws v1.14.1, ``pkg/providers/amifamily/bootstrap/bottlerocketsettings.go``
(``BottlerocketConfig.UnmarshalTOML``): the TOML is decoded with go-toml v2 into ``BottlerocketSettings``
(``settings.kubernetes`` as ``BottlerocketKubernetes``, ``settings.bootstrap-commands`` as
``map[string]BootstrapCommand``), not strict: a key the struct does not know is ignored there and dropped when
Karpenter writes the TOML back (``MarshalTOML`` replaces ``settings.kubernetes`` with the struct); a value of
another type than the field's fails the decode, and Karpenter then launches no node for the class ("invalid
UserData"). Other ``settings.*`` tables are kept as written; top-level keys other than ``settings`` are dropped.

:data:`KUBERNETES` is that struct, field by field (the TOML key and its Go type); :func:`type_problem` says,
for a decoded TOML value, how go-toml v2 would fail to decode it (integers into ``int`` fields, strings into
``*string``, booleans into ``*bool``, tables into maps and structs, arrays into slices; no conversion between
them; ``log-level`` is a ``uint32``)."""

from __future__ import annotations

from typing import Any

# A Go type: "string", "int", "uint32", "bool", ("map", T), ("list", T), or a struct {toml key: type}.
GoType = Any

_STRINGS = ("map", "string")
CREDENTIAL_PROVIDER: dict[str, GoType] = {
    "enabled": "bool",
    "cache-duration": "string",
    "image-patterns": ("list", "string"),
    "environment": _STRINGS,
}
STATIC_POD: dict[str, GoType] = {"enabled": "bool", "manifest": "string"}
TOPOLOGY_OPTIONS: dict[str, GoType] = {"prefer-closest-numa-nodes": "bool", "max-allowable-numa-nodes": "int"}
BOOTSTRAP_COMMAND: dict[str, GoType] = {"commands": ("list", ("list", "string")), "mode": "string", "essential": "bool"}
# Bottlerocket's own values of a bootstrap command's mode (bottlerocket-core-kit bootstrap-commands).
BOOTSTRAP_MODES = ("always", "once", "off")

KUBERNETES: dict[str, GoType] = {
    "api-server": "string",
    "cloud-provider": "string",
    "cluster-certificate": "string",
    "cluster-name": "string",
    "cluster-dns-ip": "string",
    "credential-providers": ("map", CREDENTIAL_PROVIDER),
    "node-labels": _STRINGS,
    "node-taints": ("map", ("list", "string")),
    "max-pods": "int",
    "static-pods": ("map", STATIC_POD),
    "eviction-hard": _STRINGS,
    "eviction-soft": _STRINGS,
    "eviction-soft-grace-period": _STRINGS,
    "eviction-max-pod-grace-period": "int",
    "kube-reserved": _STRINGS,
    "system-reserved": _STRINGS,
    "allowed-unsafe-sysctls": ("list", "string"),
    "server-tls-bootstrap": "bool",
    "registry-qps": "int",
    "registry-burst": "int",
    "event-qps": "int",
    "event-burst": "int",
    "kube-api-qps": "int",
    "kube-api-burst": "int",
    "container-log-max-size": "string",
    "container-log-max-files": "int",
    "cpu-manager-policy": "string",
    "cpu-manager-policy-options": ("list", "string"),
    "cpu-manager-reconcile-period": "string",
    "memory-manager-policy": "string",
    "topology-manager-scope": "string",
    "topology-manager-policy": "string",
    "topology-manager-policy-options": TOPOLOGY_OPTIONS,
    "image-gc-high-threshold-percent": "string",
    "image-gc-low-threshold-percent": "string",
    "ids-per-pod": "int",
    "cpu-cfs-quota-enforced": "bool",
    "shutdown-grace-period": "string",
    "shutdown-grace-period-for-critical-pods": "string",
    "cluster-domain": "string",
    "seccomp-default": "bool",
    "pod-pids-limit": "int",
    "device-ownership-from-security-context": "bool",
    "single-process-oom-kill": "bool",
    "container-log-max-workers": "int",
    "container-log-monitor-interval": "string",
    "hostname-override-source": "string",
    "log-level": "uint32",
}

_INT64 = (-(2**63), 2**63 - 1)
_NAMES = {
    "string": "a string",
    "int": "an integer",
    "uint32": "an integer from 0 to 4294967295",
    "bool": "true or false",
}


def describe(go_type: GoType) -> str:
    """What a Go type takes, in words."""
    if isinstance(go_type, str):
        return _NAMES[go_type]
    if isinstance(go_type, dict):
        return "a table"
    kind, inner = go_type
    return f"a table of {_plural(inner)}" if kind == "map" else f"an array of {_plural(inner)}"


def _plural(go_type: GoType) -> str:
    word = describe(go_type)
    return {"a string": "strings", "an integer": "integers", "true or false": "booleans", "a table": "tables"}.get(
        word, word
    )


# tomllib's value types, in the order to test them (a bool is also an int), by TOML's names.
_TOML_KINDS = ((bool, "a boolean"), (int, "an integer"), (float, "a float"), (str, "a string"), (list, "an array"))


def _toml_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a table"
    return next((name for kind, name in _TOML_KINDS if isinstance(value, kind)), "a date or time")


def type_problem(value: Any, go_type: GoType, path: str) -> str | None:
    """Why go-toml v2 cannot decode ``value`` (from tomllib) into ``go_type``: the path and what it takes, or None."""
    wrong = f"{path} is {_toml_kind(value)} ({value!r}), and Karpenter decodes it as {describe(go_type)}"
    if go_type == "string":
        return None if isinstance(value, str) else wrong
    if go_type == "bool":
        return None if isinstance(value, bool) else wrong
    if go_type in ("int", "uint32"):
        if isinstance(value, bool) or not isinstance(value, int):
            return wrong
        low, high = (0, 2**32 - 1) if go_type == "uint32" else _INT64
        return None if low <= value <= high else wrong
    if isinstance(go_type, dict):
        if not isinstance(value, dict):
            return wrong
        for key, item in value.items():
            if key in go_type and (problem := type_problem(item, go_type[key], f"{path}.{key}")):
                return problem
        return None
    kind, inner = go_type
    if kind == "map":
        if not isinstance(value, dict):
            return wrong
        return next((p for k, v in value.items() if (p := type_problem(v, inner, f"{path}.{k}"))), None)
    if not isinstance(value, list):
        return wrong
    return next((p for i, v in enumerate(value) if (p := type_problem(v, inner, f"{path}[{i}]"))), None)
