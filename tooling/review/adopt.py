"""Adopting a running Karpenter install: the NodePools, EC2NodeClasses and NodeOverlays the cluster runs today as
the "before" of Karpenter's objects, against what the first deploy applies (``make review ADOPT=<file>``, or
``ADOPT=live`` to read them with kubectl and your kubeconfig). For each object: created, adopted unchanged, or
changed, and whether its nodes drift, from the fields Karpenter 1.14.1 hashes:

* a NodePool's drift hash is its ``spec.template`` without the fields tagged ``hash:"ignore"`` (requirements,
  resources): core ``pkg/apis/v1/nodepool.go`` ``Hash()``, ``nodeclaim.go``; a changed requirement drifts only the
  nodes that no longer meet it (core ``pkg/controllers/nodeclaim/disruption/drift.go``, ``areRequirementsDrifted``);
* an EC2NodeClass's is its spec without ``amiSelectorTerms``, ``amiFamily``, ``subnetSelectorTerms``,
  ``securityGroupSelectorTerms``, ``capacityReservationSelectorTerms`` and ``ipPrefixCount`` (``hash:"ignore"``;
  ``volumeSize`` hashed as its quantity's string: ``hash:"string"``): provider ``pkg/apis/v1/ec2nodeclass.go``
  ``Hash()``; those selectors drift the nodes whose AMI, subnet or security groups they no longer select
  (provider ``pkg/cloudprovider/drift.go``).

Both sides are compared as the API server stores them (the CRD's defaults filled in; what ``kubectl get`` adds of
its own, status and server metadata, left out). The app applies over a running object of the same name
(``overwrite``): from then on the stack owns it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from constructs_lib.karpenter.quantities import parse_quantity

from . import disruption
from .kubernetes import _karpenter_version, _objects, _pools_of
from .model import CLUSTER, MANIFEST, ReviewError

KINDS = ("NodePool", "EC2NodeClass", "NodeOverlay")
# EC2NodeClass spec fields Karpenter's hash leaves out (hash:"ignore"), and what a change of each re-checks.
CLASS_IGNORED = {
    "amiSelectorTerms": "AMI",
    "amiFamily": "",
    "subnetSelectorTerms": "subnets",
    "securityGroupSelectorTerms": "security groups",
    "capacityReservationSelectorTerms": "capacity reservations",
    "ipPrefixCount": "",
}
POOL_IGNORED = ("requirements", "resources")  # of spec.template.spec
KUBECTL_GET = ["get", "nodepools.karpenter.sh,ec2nodeclasses.karpenter.k8s.aws,nodeoverlays.karpenter.sh", "-o", "json"]


def read_running(source: str, root: Path) -> dict[str, dict[str, Any]]:
    """The running objects by Kind/name: ``source`` is a ``kubectl get ... -o yaml`` (or json) file, or ``live``."""
    if source == "live":
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            raise ReviewError("ADOPT=live reads the cluster with kubectl, which is not on PATH; or give a file")
        done = subprocess.run([kubectl, *KUBECTL_GET], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise ReviewError(f"ADOPT=live: kubectl {' '.join(KUBECTL_GET)} failed: {last}")
        text = done.stdout
    else:
        path = root / source
        try:
            text = path.read_text()
        except OSError as err:
            raise ReviewError(f"ADOPT={source}: cannot read it ({err.strerror or type(err).__name__})") from None
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        raise ReviewError(f"ADOPT={source}: not YAML or JSON ({' '.join(str(err).split())})") from None
    items = [i for d in documents for i in (d.get("items", []) if d.get("kind") == "List" else [d])]
    running = {}
    for item in items:
        if isinstance(item, dict) and item.get("kind") in KINDS:
            metadata = item.get("metadata") or {}
            kept = {k: metadata[k] for k in ("name", "labels", "annotations") if metadata.get(k)}
            annotations = {
                k: v
                for k, v in (kept.get("annotations") or {}).items()
                if not k.startswith(("karpenter.sh/", "karpenter.k8s.aws/", "kubectl.kubernetes.io/"))
            }
            kept = (
                {**kept, "annotations": annotations}
                if annotations
                else {k: v for k, v in kept.items() if k != "annotations"}
            )
            running[f"{item['kind']}/{metadata.get('name')}"] = {
                "apiVersion": item.get("apiVersion"),
                "kind": item["kind"],
                "metadata": kept,
                "spec": item.get("spec") or {},
                # what Karpenter resolved (not compared): a pool's node count, a class's subnets and security groups
                "status": item.get("status") or {},
            }
    return running


def _applied(templates: Mapping[str, dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], dict[str, Any], str | None]:
    """The Karpenter objects the synth applies (by Kind/name), the template that applies them, its cluster's name."""
    found: dict[str, dict[str, Any]] = {}
    home: dict[str, Any] = {}
    cluster = None
    for template in templates.values():
        for resource in template.get("Resources", {}).values():
            if resource.get("Type") == CLUSTER:
                cluster = resource["Properties"].get("Config", {}).get("name")
            if resource.get("Type") == MANIFEST:
                objects = {
                    k: o for k, o in _objects(resource["Properties"].get("Manifest")).items() if o.get("kind") in KINDS
                }
                found |= objects
                home = template if objects else home
            if resource.get("Type") == "AWS::CloudFormation::Stack" and cluster is None:
                name = resource.get("Properties", {}).get("Parameters", {}).get("ClusterName")
                cluster = name if isinstance(name, str) else cluster
    return found, home, cluster


def adoption(running: Mapping[str, dict[str, Any]], templates: Mapping[str, dict[str, Any]]) -> list[str]:
    """The report's section: one line per object the first deploy applies or the cluster runs."""
    applied, home, cluster = _applied(templates)
    version = _karpenter_version(home) if home else "1.14.1"
    lines = [
        "## Karpenter's objects in the cluster (adopted)",
        "",
        f"What the first deploy does to the NodePools, EC2NodeClasses and NodeOverlays the cluster runs (Karpenter "
        f"{version}'s drift hashes):",
        "",
    ]
    for key in sorted(applied.keys() | running.keys()):
        kind, name = key.split("/", 1)
        if key not in applied:
            lines.append(f"- {kind} `{name}`: not in the app; it stays as it is, and the stack does not manage it")
            continue
        ours = _as_stored(_resolved(applied[key], cluster), version)
        if key not in running:
            lines.append(f"- {kind} `{name}`: created")
            continue
        theirs = _as_stored(running[key], version)
        effects = _effects(kind, name, theirs, ours, home, running)
        lines.append(
            f"- {kind} `{name}`: "
            + ("; ".join(effects) if effects else "adopted as it runs: nothing changes, no node drifts")
        )
    return lines


def _resolved(obj: dict[str, Any], cluster: str | None) -> dict[str, Any]:
    """The app's object with its node role named (the template writes it as a reference to its node role)."""
    spec = obj.get("spec", {})
    role = spec.get("role")
    if obj.get("kind") != "EC2NodeClass" or not isinstance(role, str) or "${" not in role:
        return obj
    # a reference to the Windows node role (a role of the stack's own), else to Karpenter's template's node role,
    # which that template names KarpenterNodeRole-<cluster>
    named = (
        "(the app's Windows node role)" if "WindowsNodeRole" in role or not cluster else f"KarpenterNodeRole-{cluster}"
    )
    return {**obj, "spec": {**spec, "role": named}}


def _as_stored(obj: dict[str, Any], version: str) -> dict[str, Any]:
    from tooling.cel_rules import KINDS as CEL_KINDS
    from tooling.cel_rules import mirror, with_defaults

    kind = CEL_KINDS.get(obj.get("kind", ""))
    kinds = mirror(version)["kinds"]
    metadata = {k: v for k, v in obj.get("metadata", {}).items() if k != "labels" or v}
    stored = {**obj, "metadata": metadata}
    return with_defaults(stored, kinds[kind]["defaults"]) if kind in kinds else stored


def _nodes(pools: list[str], running: Mapping[str, dict[str, Any]]) -> str:
    """The pools named, with the nodes they run (their status.resources.nodes) where the export says."""
    counts = [running.get(f"NodePool/{p}", {}).get("status", {}).get("resources", {}).get("nodes") for p in pools]
    known = [int(c) for c in counts if isinstance(c, (int, str)) and str(c).isdecimal()]
    shown = ", ".join(f"`{p}`" for p in pools) or "(none)"
    return f"{shown} ({sum(known)} running)" if known and len(known) == len(pools) else shown


def _selected(key: str, theirs: dict[str, Any], ours: dict[str, Any]) -> bool:
    """Whether our selector terms select what the running class resolved: our terms are ids, and the running
    class's status lists exactly those (Karpenter resolves each class's subnets and security groups into status)."""
    status_key = {"subnetSelectorTerms": "subnets", "securityGroupSelectorTerms": "securityGroups"}.get(key)
    terms = ours.get("spec", {}).get(key) or []
    if status_key is None or not terms or not all(isinstance(t, dict) and set(t) == {"id"} for t in terms):
        return False
    resolved = theirs.get("status", {}).get(status_key) or []
    return {t["id"] for t in terms} == {r.get("id") for r in resolved if isinstance(r, dict)}


def _effects(
    kind: str,
    name: str,
    theirs: dict[str, Any],
    ours: dict[str, Any],
    template: dict[str, Any],
    running: Mapping[str, dict[str, Any]],
) -> list[str]:
    a, b = theirs.get("spec", {}), ours.get("spec", {})
    effects = []
    if theirs.get("metadata") != ours.get("metadata"):
        effects.append("its labels or annotations change (no node drifts)")
    if kind == "NodePool":
        ta, tb = a.get("template", {}), b.get("template", {})
        hashed = sorted(
            f"template.spec.{k}"
            for k in ta.get("spec", {}).keys() | tb.get("spec", {}).keys()
            if k not in POOL_IGNORED and ta.get("spec", {}).get(k) != tb.get("spec", {}).get(k)
        ) + (["template.metadata"] if ta.get("metadata") != tb.get("metadata") else [])
        settings = disruption.disruption(ours)
        if hashed:
            effects.append(f"{', '.join(hashed)} change: " + disruption.drift_effect(name, settings, "all its nodes"))
        elif ta.get("spec", {}).get("requirements") != tb.get("spec", {}).get("requirements"):
            which = "its nodes that no longer meet its requirements"
            effects.append("requirements change: " + disruption.drift_effect(name, settings, which))
        effects += disruption.pool_effects(name, theirs, ours)
    elif kind == "EC2NodeClass":
        fields = sorted(k for k in a.keys() | b.keys() if not _same(k, a.get(k), b.get(k)))
        same = [f for f in fields if _selected(f, theirs, ours)]
        fields = [f for f in fields if f not in same]
        hashed = [f for f in fields if f not in CLASS_IGNORED]
        family_same = _family(theirs) == _family(ours)
        selected = [CLASS_IGNORED[f] for f in fields if CLASS_IGNORED.get(f)]
        pools = _nodes(_pools_of(name, template), running)
        if same:
            effects.append(
                f"{', '.join(same)} by id select what the running class resolved (its status): no node drifts for them"
            )
        if "role" in hashed:
            effects.append(
                f"role {a.get('role')} → {b.get('role')}: the role is part of the class's drift hash, so all nodes of "
                f"pools {pools} drift and are replaced within their budgets (to keep the running role, list its ARN in "
                "existingNodeRoles and name it in the class)"
            )
            hashed = [f for f in hashed if f != "role"]
        if hashed or (not family_same and "amiFamily" in fields):
            effects.append(
                f"{', '.join(hashed or ['amiFamily'])} change: all nodes of pools {pools} drift and are replaced within "
                "their budgets"
            )
        elif selected:
            effects.append(
                f"{', '.join(f for f in fields if f in CLASS_IGNORED)} change: nodes of pools {pools} whose "
                f"{', '.join(selected)} no longer match are replaced by drift, within their budgets"
            )
    elif a != b:
        effects.append("re-applied with changes (no node drifts)")
    return effects


def _same(key: str, old: Any, new: Any) -> bool:
    """Equal as Karpenter hashes them: a volume size by its quantity (hash:"string" of the parsed quantity)."""
    if key != "blockDeviceMappings" or not isinstance(old, list) or not isinstance(new, list) or len(old) != len(new):
        return bool(old == new)
    return all(_volume(x) == _volume(y) for x, y in zip(old, new, strict=True))


def _volume(mapping: Any) -> Any:
    if not isinstance(mapping, dict) or not isinstance(mapping.get("ebs"), dict) or "volumeSize" not in mapping["ebs"]:
        return mapping
    ebs = {**mapping["ebs"], "volumeSize": str(parse_quantity(str(mapping["ebs"]["volumeSize"])))}
    return {**mapping, "ebs": ebs}


def _family(obj: dict[str, Any]) -> str:
    spec = obj.get("spec", {})
    alias = next((t["alias"] for t in spec.get("amiSelectorTerms", []) if isinstance(t, dict) and "alias" in t), "@")
    return str(spec.get("amiFamily") or alias.split("@", 1)[0]).lower()


def running_json(objects: Mapping[str, dict[str, Any]]) -> str:
    """The objects as ``kubectl get -o json`` lists them (for tests and stand-ins)."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects.values())})
