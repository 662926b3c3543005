"""What a transition's review must agree with (tooling/review/transitions.py runs these on every move): aws-cdk's real
cluster handler on the cluster's update (its refusals and the version skew of node groups and add-ons), and
Karpenter's own hashes on which node objects drift and which restart the controller."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from karpenter_stack.cluster_updates import UpdateRefused, update, version_step_refusal
from tooling import review as rv


def mirrored_problems(
    old: Mapping[str, dict[str, Any]], new: Mapping[str, dict[str, Any]], reports: list[rv.StackReport]
) -> list[str]:
    """Where the review's verdict on deploying ``new`` over ``old`` disagrees with a mirrored rule."""
    problems: list[str] = []
    by_id = {(r.name, c.logical_id): c for r in reports for c in r.changes}
    names = rv.stack_names(new)
    for template_name in old.keys() & new.keys():
        stack = names[template_name]
        before, after = old[template_name].get("Resources", {}), new[template_name].get("Resources", {})
        for logical_id in before.keys() & after.keys():
            kind = after[logical_id]["Type"]
            props_old, props_new = before[logical_id].get("Properties", {}), after[logical_id].get("Properties", {})
            change = by_id.get((stack, logical_id))
            paths = None if kind.startswith("Custom::") else rv.create_only_paths(kind)
            # CloudFormation: a changed create-only property replaces the resource.
            moved = [p for p in paths or [] if rv._at(props_old, p) != rv._at(props_new, p)]
            if moved and (change is None or change.action not in ("replaced", "fails")):
                problems.append(
                    f"{stack}/{logical_id}: create-only {'.'.join(moved[0])} changes, review says "
                    f"{change.action if change else 'no change'}"
                )
            if kind == rv.CLUSTER:
                problems += _cluster_problems(stack, logical_id, props_old, props_new, change)
            if kind == rv.MANIFEST:
                problems += _drift_problems(stack, logical_id, props_old, props_new, change)
            if (
                kind == rv.HELM
                and props_new.get("Release") in ("karpenter", "karpenter-crd")
                and props_old != props_new
            ):
                problems += _restart_problems(stack, logical_id, props_old, props_new, change)
            if kind == rv.FARGATE and props_old != props_new and (change is None or not change.interrupts):
                problems.append(f"{stack}/{logical_id}: a replaced Fargate profile deletes its pods, review says not")
        for logical_id in before.keys() - after.keys():
            if before[logical_id]["Type"] == rv.FARGATE:
                change = by_id.get((stack, logical_id))
                if change is None or not change.interrupts:
                    problems.append(
                        f"{stack}/{logical_id}: a deleted Fargate profile deletes its pods, review says not"
                    )
    problems += _skew_problems(new)
    return sorted(problems)


def _skew_problems(templates: Mapping[str, dict[str, Any]]) -> list[str]:
    """EKS's version skew (EKS User Guide, "Update existing cluster"): a managed node group runs the control
    plane's minor (it must before the next upgrade) and kube-proxy is of that minor (never newer)."""
    problems = []
    for name, template in templates.items():
        resources = template.get("Resources", {})
        versions = [
            r["Properties"].get("Config", {}).get("version") for r in resources.values() if r["Type"] == rv.CLUSTER
        ]
        if not versions or not isinstance(versions[0], str):
            continue
        minor = versions[0]
        for logical_id, r in resources.items():
            props = r.get("Properties", {})
            if r["Type"] == "AWS::EKS::Nodegroup" and props.get("Version") != minor:
                problems.append(f"{name}/{logical_id}: node group at {props.get('Version')}, cluster at {minor}")
            if r["Type"] == "AWS::EKS::Addon" and props.get("AddonName") == "kube-proxy":
                if not str(props.get("AddonVersion", "")).startswith(f"v{minor}."):
                    problems.append(f"{name}/{logical_id}: kube-proxy {props.get('AddonVersion')}, cluster at {minor}")
    return problems


def _cluster_problems(
    stack: str, logical_id: str, old: dict[str, Any], new: dict[str, Any], change: rv.Change | None
) -> list[str]:
    config_old, config_new = old.get("Config", {}), new.get("Config", {})
    if not isinstance(config_old, dict) or not isinstance(config_new, dict) or config_old == config_new:
        return []
    refused = version_step_refusal(config_old.get("version"), config_new.get("version"))
    try:
        update(config_old, config_new)
    except UpdateRefused as err:
        refused = refused or str(err)
    action = change.action if change else "no change"
    if refused and action not in ("fails", "replaced"):
        return [f"{stack}/{logical_id}: the handler refuses ({refused}), review says {action}"]
    if not refused:
        # CloudFormation's rollback: the Update with old and new swapped.
        back = version_step_refusal(config_new.get("version"), config_old.get("version"))
        try:
            update(config_new, config_old)
        except UpdateRefused as err:
            back = back or str(err)
        if back and (change is None or rv.ONE_WAY_MARK not in change.why):
            return [f"{stack}/{logical_id}: its rollback is refused ({back}), review does not say one way"]
    return []


# Karpenter's drift hashes (kubernetes-sigs/karpenter pkg/apis/v1 NodePool, karpenter-provider-aws pkg/apis/v1
# EC2NodeClass, v1.14): a NodePool's spec.template is hashed except its requirements (hash:"ignore"); an
# EC2NodeClass's spec is hashed except its selector terms, which drift only the nodes that no longer match, and
# amiFamily, whose place in the hash AMIFamily() takes (spec.amiFamily, else the alias term's family).
_POOL_NOT_HASHED = ("requirements",)
_CLASS_NOT_HASHED = (
    "amiSelectorTerms",
    "subnetSelectorTerms",
    "securityGroupSelectorTerms",
    "capacityReservationSelectorTerms",
    "amiFamily",
)
_ALIAS_FAMILIES = {
    "al2": "AL2",
    "al2023": "AL2023",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}


def _ami_family(spec: dict[str, Any]) -> str | None:
    """Karpenter 1.14 EC2NodeClass.AMIFamily(): spec.amiFamily if set, else the family of the alias term."""
    if spec.get("amiFamily"):
        return str(spec["amiFamily"])
    alias = next((t["alias"] for t in spec.get("amiSelectorTerms", []) if "alias" in t), None)
    return None if alias is None else _ALIAS_FAMILIES.get(str(alias).split("@", 1)[0])


def _drift_problems(
    stack: str, logical_id: str, old: dict[str, Any], new: dict[str, Any], change: rv.Change | None
) -> list[str]:
    before, after = rv._objects(old.get("Manifest")), rv._objects(new.get("Manifest"))
    change_effects = change.effects if change else []
    problems = []
    # Kubernetes: the CRDs' transition rules (CEL with oldSelf) refuse the apply, so the deploy fails.
    refused = rv.crd_refusals(old.get("Manifest"), new.get("Manifest"), {})
    if refused and (change is None or change.action != "fails"):
        problems.append(
            f"{stack}/{logical_id}: the API server refuses ({refused[0]}), review says "
            f"{change.action if change else 'no change'}"
        )
    for key in before.keys() & after.keys():
        kind, name = key.split("/", 1)
        a, b = before[key].get("spec", {}), after[key].get("spec", {})
        if kind == "NodePool":
            ta, tb = a.get("template", {}), b.get("template", {})
            hashed = ta.get("metadata") != tb.get("metadata") or any(
                ta.get("spec", {}).get(k) != tb.get("spec", {}).get(k)
                for k in ta.get("spec", {}).keys() | tb.get("spec", {}).keys()
                if k not in _POOL_NOT_HASHED
            )
            says = any(
                e.startswith(f"NodePool `{name}` (") and f"all nodes of pool `{name}` will be replaced by drift" in e
                for e in change_effects
            )
        elif kind == "EC2NodeClass":
            hashed = _ami_family(a) != _ami_family(b) or any(
                a.get(k) != b.get(k) for k in a.keys() | b.keys() if k not in _CLASS_NOT_HASHED
            )
            says = any(e.startswith(f"EC2NodeClass `{name}` (") and "all nodes of pool `" in e for e in change_effects)
        else:
            continue
        if hashed != says:
            problems.append(
                f"{stack}/{logical_id}: {kind} `{name}` {'changes' if hashed else 'keeps'} its drift hash, review says "
                f"{'no drift' if hashed else 'all nodes drift'}"
            )
    return problems


def _restart_problems(
    stack: str, logical_id: str, old: dict[str, Any], new: dict[str, Any], change: rv.Change | None
) -> list[str]:
    """Helm (Karpenter 1.14.1's chart): the controller's pods restart when a value rendered into the Deployment's
    pod template changes (tooling/review/kubernetes.py's _OUTSIDE_POD_TEMPLATE lists the values rendered elsewhere)
    or the chart's version does; otherwise the running pods stay as they are."""
    restarts = bool(rv._pod_template_changes(old, new)) or old.get("Version") != new.get("Version")
    moved = old.get("Release") != new.get("Release") or old.get("Namespace") != new.get("Namespace")
    says = change is not None and any("pods restart" in e for e in change.effects)
    if moved:  # Helm refuses a new release that would take over the old one's cluster-scoped objects
        return (
            []
            if change is not None and change.action == "fails"
            else [f"{stack}/{logical_id}: a moved release fails (Helm ownership), review says not"]
        )
    if new.get("Release") != "karpenter" or restarts == says:  # (the CRD chart runs no pods)
        return []
    return [
        f"{stack}/{logical_id}: the pod template {'changes' if restarts else 'stays'}, review says pods "
        f"{'keep running' if restarts else 'restart'}"
    ]


Synth = Callable[[Mapping[str, Any]], Mapping[str, dict[str, Any]]]
