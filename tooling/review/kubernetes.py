"""Kubernetes: what a manifest change does in the cluster (objects created, deleted or re-applied; the nodes
Karpenter replaces by drift, from the drift tables constructs_lib/specs derives from each field's declaration),
what the CRDs' transition rules refuse, and what a Helm release's upgrade does to its pods."""

from __future__ import annotations

import json
from typing import Any

# Karpenter's drift, derived from what each spec field declares (constructs_lib/karpenter/specs/change.py).
from constructs_lib.karpenter.specs.node_class import CLASS_DYNAMIC
from constructs_lib.karpenter.specs.node_pool import POOL_BEHAVIORAL, POOL_DYNAMIC

from . import disruption
from .model import HELM, MANIFEST, Change
from .values import _differs, _render


def _objects(manifest: Any) -> dict[str, dict[str, Any]]:
    """The Kubernetes objects of a manifest property, by '<Kind>/<name>' (CDK's prune label dropped)."""
    try:
        objects = json.loads(_render(manifest))
    except json.JSONDecodeError:
        return {}
    out = {}
    for obj in objects if isinstance(objects, list) else [objects]:
        labels = {
            k: v for k, v in obj.get("metadata", {}).get("labels", {}).items() if not k.startswith("aws.cdk.eks/prune-")
        }
        obj = {**obj, "metadata": {**obj.get("metadata", {}), "labels": labels}}
        out[f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"] = obj
    return out


def _pools_of(node_class: str, template: dict[str, Any]) -> list[str]:
    pools = []
    for res in template["Resources"].values():
        if res["Type"] == MANIFEST:
            for obj in _objects(res["Properties"].get("Manifest")).values():
                ref = obj.get("spec", {}).get("template", {}).get("spec", {}).get("nodeClassRef", {})
                if obj.get("kind") == "NodePool" and ref.get("name") == node_class:
                    pools.append(obj["metadata"]["name"])
    return sorted(pools)


def _aliases(node_class: dict[str, Any]) -> list[str]:
    return [t["alias"] for t in node_class.get("spec", {}).get("amiSelectorTerms", []) if "alias" in t]


def _family(node_class: dict[str, Any]) -> str:
    """Karpenter's EC2NodeClass.AMIFamily(): spec.amiFamily, else the family of the alias term (lowercase here)."""
    spec = node_class.get("spec", {})
    return str(spec.get("amiFamily") or next(iter(_aliases(node_class)), "@").split("@", 1)[0]).lower()


def own_image_classes(template: dict[str, Any]) -> list[str]:
    """The EC2NodeClasses of a template that select images of their own (no alias): Karpenter does not move
    those with the cluster's Kubernetes version."""
    return sorted(
        obj["metadata"]["name"]
        for res in template["Resources"].values()
        if res["Type"] == MANIFEST
        for obj in _objects(res["Properties"].get("Manifest")).values()
        if obj.get("kind") == "EC2NodeClass" and not _aliases(obj)
    )


def _names(items: list[str]) -> str:
    return ", ".join(f"`{i}`" for i in items) if items else "(none)"


def kubernetes_effects(old: Any, new: Any, new_template: dict[str, Any]) -> list[str]:
    """What a manifest change does in the cluster, in plain words."""
    before, after = _objects(old), _objects(new)
    effects = [_deleted(key, before[key]) for key in sorted(before.keys() - after.keys())]
    for key in sorted(after.keys() - before.keys()):
        kind, name = key.split("/", 1)
        effects.append(f"{kind} `{name}` is created")
    for key in sorted(before.keys() & after.keys()):
        kind, name = key.split("/", 1)
        a, b = before[key], after[key]
        if a == b:
            continue
        if kind == "EC2NodeClass":
            effects += _node_class_effects(name, a, b, new_template)
        elif kind == "NodePool":
            effects += _node_pool_effects(name, a, b)
        else:
            effects.append(f"{kind} `{name}` is re-applied with changes")
    return effects


def _deleted(key: str, obj: dict[str, Any]) -> str:
    kind, name = key.split("/", 1)
    if kind == "NodePool":
        return disruption.deleted_effect(name, disruption.disruption(obj))
    return f"{kind} `{name}` is deleted"


def _pool_objects(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        obj["metadata"]["name"]: obj
        for res in template["Resources"].values()
        if res["Type"] == MANIFEST
        for obj in _objects(res["Properties"].get("Manifest")).values()
        if obj.get("kind") == "NodePool"
    }


def _class_drift(name: str, which: tuple[str, str], new_template: dict[str, Any]) -> list[str]:
    """The pools of a drifted class, each with when and how fast its nodes are replaced (its own budgets)."""
    pools = _pool_objects(new_template)
    return [
        f"EC2NodeClass `{name}` ({which[0]}): "
        + disruption.drift_effect(pool, disruption.disruption(pools[pool]), which[1].format(pool=pool))
        for pool in _pools_of(name, new_template)
    ] or [f"EC2NodeClass `{name}` ({which[0]}): no pool uses it, no node drifts"]


def _node_class_effects(name: str, a: dict[str, Any], b: dict[str, Any], new_template: dict[str, Any]) -> list[str]:
    """An EC2NodeClass changed: which nodes Karpenter replaces by drift (CLASS_DYNAMIC: only those that no
    longer match what the fields select), pool by pool, at the rate of each pool's budgets."""
    # Karpenter 1.14 EC2NodeClass.Hash(): amiFamily is hash:"ignore"; the hash takes AMIFamily() instead (amiFamily,
    # else the alias's family), so writing the family an alias implies drifts nothing
    fields = sorted(
        k
        for k in a.get("spec", {}).keys() | b.get("spec", {}).keys()
        if a["spec"].get(k) != b["spec"].get(k) and not (k == "amiFamily" and _family(a) == _family(b))
    )
    static = [f for f in fields if f not in CLASS_DYNAMIC]
    # (the hash takes AMIFamily(): an alias of another family drifts every node, whatever AMI it runs)
    if _family(a) != _family(b) and "amiFamily" not in static:
        fields = [*fields, f"AMI family {_family(a)} → {_family(b)}"]
        static = fields
    if static:
        return _class_drift(name, (", ".join(fields), "all nodes of pool `{pool}`"), new_template)
    if _aliases(a) and _aliases(b) and _aliases(a) != _aliases(b):
        change = f"amiSelectorTerms: alias {', '.join(_aliases(a))} → {', '.join(_aliases(b))}"
        which = f"nodes of pool `{{pool}}` not running the AMI {', '.join(_aliases(b))} resolves to (all, unless it is theirs)"
        return _class_drift(name, (change, which), new_template)
    if fields:
        which = "nodes of pool `{pool}` that no longer match the selected AMI, subnets or security groups"
        return _class_drift(name, (", ".join(fields), which), new_template)
    return []


def _node_pool_effects(name: str, a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """A NodePool changed: its template's fields drift its nodes (POOL_DYNAMIC: only those no longer meeting
    them), its behavioral settings (POOL_BEHAVIORAL) replace none."""
    spec_a, spec_b = a.get("spec", {}), b.get("spec", {})
    template_a = spec_a.get("template", {})
    template_b = spec_b.get("template", {})
    tmpl_fields = sorted(
        f"template.spec.{k}"
        for k in template_a.get("spec", {}).keys() | template_b.get("spec", {}).keys()
        if template_a.get("spec", {}).get(k) != template_b.get("spec", {}).get(k)
    ) + (["template.metadata"] if template_a.get("metadata") != template_b.get("metadata") else [])
    static = [f for f in tmpl_fields if f.removeprefix("template.spec.") not in POOL_DYNAMIC]
    settings = disruption.disruption(b)
    effects = []
    if static:
        which = f"all nodes of pool `{name}`"
        effects.append(
            f"NodePool `{name}` ({', '.join(tmpl_fields)}): " + disruption.drift_effect(name, settings, which)
        )
    elif tmpl_fields:
        refused = (
            disruption.refused_labels(template_a.get("spec", {}), template_b.get("spec", {}))
            if tmpl_fields == ["template.spec.requirements"]
            else None
        )
        if refused == []:
            effects.append(
                f"NodePool `{name}` (template.spec.requirements): the requirements only widen, so no running node "
                "drifts (Karpenter drifts a node whose labels its pool's requirements no longer allow)"
            )
        else:
            which = (
                f"nodes of pool `{name}` labelled {' or '.join(refused)}"
                if refused
                else f"nodes of pool `{name}` that no longer meet its requirements"
            )
            effects.append(
                f"NodePool `{name}` ({', '.join(tmpl_fields)}): " + disruption.drift_effect(name, settings, which)
            )
    effects += disruption.pool_effects(name, a, b)
    behavioral = sorted(k for k in POOL_BEHAVIORAL if spec_a.get(k) != spec_b.get(k))
    if behavioral and not effects:
        effects.append(f"NodePool `{name}` ({', '.join(behavioral)}): no node is disrupted for it")
    return effects


def _karpenter_version(template: dict[str, Any]) -> str:
    """The Karpenter release the template installs (its controller chart's version), else the model's default."""
    for resource in template.get("Resources", {}).values():
        props = resource.get("Properties", {})
        if (
            resource.get("Type") == HELM
            and props.get("Release") == "karpenter"
            and isinstance(props.get("Version"), str)
        ):
            return str(props["Version"])
    from karpenter_stack.config import AppConfig

    return str(AppConfig.model_fields["karpenter_version"].default)


def crd_refusals(old: Any, new: Any, new_template: dict[str, Any]) -> list[str]:
    """What the API server refuses of applying ``new``'s Karpenter objects over ``old``'s: the CRDs' transition
    rules (CEL with ``oldSelf``, mirrored per release in tooling/schemas; e.g. a NodePool cannot switch between static
    and dynamic capacity), and every other rule on an object created or changed."""
    from constructs_lib.karpenter import releases
    from tooling.cel_rules import KINDS, evaluate, transition_violations

    before, after = _objects(old), _objects(new)
    version = _karpenter_version(new_template)
    if version not in releases.imported():
        return []  # no rules of a release this project has not imported
    refused = [
        f"{key}: {problem} (Karpenter {version} CRD rule)"
        for key in sorted(before.keys() & after.keys())
        if after[key].get("kind") in KINDS and before[key] != after[key]
        for problem in transition_violations(before[key], after[key], version)
    ]
    # an object created or changed is checked against every rule of the release the cluster runs after this deploy
    # (its CRD chart is upgraded first): a rule the synth does not mirror (a newer release's) fails the apply here
    return refused + [
        f"{problem} (Karpenter {version} CRD rule)"
        for key in sorted(after)
        if after[key].get("kind") in KINDS and before.get(key) != after[key]
        for problem in evaluate(after[key], version).violations
    ]


def manifest_update(
    logical_id: str,
    old: dict[str, Any],
    new: dict[str, Any],
    replaced: set[str],
    new_template: dict[str, Any],
    stateful: str | None,
) -> Change:
    """A Kubernetes manifest custom resource changed: kubectl apply, unless the API server refuses it."""
    effects = kubernetes_effects(old.get("Manifest"), new.get("Manifest"), new_template)
    refused = crd_refusals(old.get("Manifest"), new.get("Manifest"), new_template)
    if refused:
        return Change(
            logical_id, MANIFEST, "fails", f"the API server refuses the update: {refused[0]}", stateful, effects
        )
    changed = sorted(k for k in old.keys() | new.keys() if _differs(old.get(k), new.get(k), replaced))
    return Change(logical_id, MANIFEST, "updated", f"in place (kubectl apply): {', '.join(changed)}", stateful, effects)


def _graded(old: Any, new: Any) -> str:
    """``downgraded`` when both are releases (x.y.z) and the new one is older, else ``upgraded``."""
    try:
        older = tuple(int(p) for p in str(new).split(".")) < tuple(int(p) for p in str(old).split("."))
    except ValueError:
        return "upgraded"
    return "downgraded" if older else "upgraded"


def _helm_effects(old: dict[str, Any], new: dict[str, Any], replaced: set[str]) -> tuple[str, str, list[str]]:
    release = new.get("Release")
    if old.get("Release") != release or old.get("Namespace") != new.get("Namespace"):
        return (
            "fails",
            f"release `{old.get('Release')}` in `{old.get('Namespace')}` → `{release}` in `{new.get('Namespace')}`: "
            "aws-cdk's handler runs helm upgrade --install of a new release, and Helm refuses to take over the old "
            "release's cluster-scoped objects (Karpenter's CRDs and ClusterRoles carry meta.helm.sh/release-name and "
            "release-namespace annotations), so the deploy fails; keep the release's name and namespace",
            [],
        )
    effects = []
    if old.get("Version") != new.get("Version"):
        effects.append(
            f"Helm release `{release}` is {_graded(old.get('Version'), new.get('Version'))} {old.get('Version')} → "
            f"{new.get('Version')} (helm upgrade)"
        )
    if _differs(old.get("Values"), new.get("Values"), replaced):
        try:
            va, vb = json.loads(_render(old.get("Values", "{}"))), json.loads(_render(new.get("Values", "{}")))
            keys = sorted(k for k in va.keys() | vb.keys() if va.get(k) != vb.get(k)) or ["resolved values"]
        except json.JSONDecodeError:
            keys = ["values"]
        effects.append(f"Helm release `{release}` values change ({', '.join(keys)}): helm upgrade")
    if effects and release == "karpenter":
        rolling = _pod_template_changes(old, new)
        if old.get("Version") != new.get("Version") or rolling:
            effects.append(
                f"{CONTROLLER_RESTARTS} one at a time (PodDisruptionBudget maxUnavailable 1); "
                "provisioning pauses during the leader handover"
                + (f"; the values in their pod template that change: {', '.join(rolling)}" if rolling else "")
            )
        else:
            effects.append(
                "the controller's pod template is unchanged: its pods keep running as they are (a service-account "
                "annotation reaches only pods created later)"
            )
    changed = sorted(k for k in old.keys() | new.keys() if _differs(old.get(k), new.get(k), replaced))
    return "updated", f"in place (helm upgrade): {', '.join(changed)}", effects


# What the review says when a new pod template rolls the controller's pods.
CONTROLLER_RESTARTS = "the Karpenter controller pods restart"

# Karpenter 1.14.1 chart values that render outside the controller Deployment's pod template
# (charts/karpenter/templates/): the service account's annotations (the Deployment has no checksum of them), the
# PodDisruptionBudget, the ServiceMonitor, the Service's annotations, the ClusterRole's extra rules, the Deployment's
# own replica count (a scale, not a restart), revision history, rollout strategy, annotations (additionalAnnotations)
# and labels (additionalLabels: every object's metadata, not the pod template's, which has podLabels). Every other value
# of the chart reaches the pod template (tests/test_chart_values.py renders each key of the chart values schema).
_OUTSIDE_POD_TEMPLATE = (
    ("serviceAccount", "annotations"),
    ("podDisruptionBudget",),
    ("serviceMonitor",),
    ("replicas",),
    ("service",),
    ("additionalClusterRoleRules",),
    ("revisionHistoryLimit",),
    ("strategy",),
    ("additionalAnnotations",),
    ("additionalLabels",),
)


def _pod_template_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The controller chart's changed values that change its pods (each as a dotted path)."""
    try:
        va, vb = json.loads(_render(old.get("Values", "{}"))), json.loads(_render(new.get("Values", "{}")))
    except json.JSONDecodeError:
        return ["values (not decided: unreadable)"]

    def leaves(a: Any, b: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
        if isinstance(a, dict) and b is None or a is None and isinstance(b, dict):  # a map added or removed: its keys
            a, b = a or {}, b or {}
        if isinstance(a, dict) and isinstance(b, dict):
            return [p for k in sorted(a.keys() | b.keys()) for p in leaves(a.get(k), b.get(k), (*path, k))]
        return [] if a == b else [path]

    return [
        ".".join(p)
        for p in leaves(va, vb, ())
        if not any(p[: len(outside)] == outside for outside in _OUTSIDE_POD_TEMPLATE)
    ]
