"""CloudFormation template comparison: the resources a deploy adds, removes, replaces or updates -- from the
resource type's create-only properties (cfn-lint's resource schemas) and, for aws-cdk's EKS custom resources,
from what their handlers do (cluster.py, kubernetes.py) -- with replacements propagated through references."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from constructs_lib.karpenter import releases
from constructs_lib.karpenter.names import CONTROLLER_CHART, CRD_CHART

from . import upgrade
from .cluster import (
    FARGATE_PROFILES,
    _fargate_evicts,
    _rolling_effects,
    cluster_update,
    fargate_update,
    nodegroup_launch_template_refusal,
    nodegroup_roll,
)
from .kubernetes import _helm_effects, _objects, crd_refusals, kubernetes_effects, manifest_update
from .model import CLUSTER, CUSTOM_RESOURCE_RULES, FARGATE, HELM, MANIFEST, PATCH, Change, _stateful
from .values import _MISSING, _at, _differs, _render

NODEGROUP = "AWS::EKS::Nodegroup"
_SCHEMAS: dict[str, list[tuple[str, ...]] | None] = {}
_PROVIDER: list[tuple[Path, dict[str, str]]] = []  # (schemas folder, type -> schema file), read once


def create_only_paths(resource_type: str) -> list[tuple[str, ...]] | None:
    """The create-only property paths of an AWS resource type (cfn-lint's resource schemas); ``None``
    when the type has no schema there."""
    if resource_type not in _SCHEMAS:
        if not _PROVIDER:
            import cfnlint

            folder = Path(cfnlint.__file__).parent / "data" / "schemas"
            _PROVIDER.append((folder, json.loads((folder / "providers" / "us-east-1.json").read_text())))
        schemas, provider = _PROVIDER[0]
        if resource_type not in provider:
            _SCHEMAS[resource_type] = None
        else:
            schema = json.loads((schemas / "resources" / f"{provider[resource_type]}.json").read_text())
            _SCHEMAS[resource_type] = [
                tuple(p.split("/")[2:]) for p in schema.get("createOnlyProperties", []) if p.startswith("/properties/")
            ]
    return _SCHEMAS[resource_type]


def _aws_change(resource_type: str, old: dict[str, Any], new: dict[str, Any], replaced: set[str]) -> tuple[str, str]:
    paths = create_only_paths(resource_type)
    if paths is None:
        return "updated", "no resource schema for this type: in place assumed (not decided)"
    hits = []
    for path in paths:
        parent = tuple(p for p in path if p != "*")  # array items: compare the whole array
        if _differs(_at(old, parent), _at(new, parent), replaced):
            hits.append(".".join(parent))
    if hits:
        return "replaced", f"create-only {', '.join(sorted(set(hits)))} changes"
    changed = sorted(k for k in old.keys() | new.keys() if _differs(old.get(k), new.get(k), replaced))
    return "updated", f"in place: {_deltas(old, new, changed)}"


_SHOWN = 48  # characters of a value shown in a delta (the end of a longer one: hashes and names differ there)


def _value(value: Any) -> str:
    if value is _MISSING or value is None:
        return "unset"
    text = value if isinstance(value, str) else _render(value)
    return text if len(text) <= _SHOWN else "…" + text[-(_SHOWN - 1) :]


def _leaf_deltas(old: Any, new: Any, path: str) -> list[str]:
    if (
        isinstance(old, dict)
        and isinstance(new, dict)
        and not ({"Ref", "Fn::GetAtt", "Fn::Join"} & (old.keys() | new.keys()))
    ):
        return [
            d
            for k in sorted(old.keys() | new.keys())
            for d in _leaf_deltas(old.get(k, _MISSING), new.get(k, _MISSING), f"{path}.{k}")
        ]
    return [] if old == new else [f"{path}: {_value(old)} → {_value(new)}"]


def _deltas(old: dict[str, Any], new: dict[str, Any], keys: list[str]) -> str:
    """``Key.sub: old → new`` for each changed property (at most two leaves of each; long values shortened),
    or the property's name where its value only changes by what a replaced resource resolves to."""
    shown = []
    for key in keys:
        leaves = _leaf_deltas(old.get(key, _MISSING), new.get(key, _MISSING), key)
        shown += leaves[:2] + ([f"{key}: {len(leaves) - 2} more"] if len(leaves) > 2 else []) if leaves else [key]
    return ", ".join(shown)


_PATH_HASH = re.compile(r"[0-9A-F]{8}$")


def _stem(logical_id: str) -> str:
    """A CDK logical id without its construct-path hash: the construct's name."""
    return _PATH_HASH.sub("", logical_id)


def compare_template(old: dict[str, Any], new: dict[str, Any], changed_inputs: Iterable[str] = ()) -> list[Change]:
    """The changes deploying ``new`` over a stack running ``old`` makes, replacements propagated through
    references (a subnet whose VPC is replaced is replaced). ``changed_inputs``: parameters whose values
    change (a nested stack's, from its parent), which count as changed wherever they are referenced."""
    before, after = old.get("Resources", {}), new.get("Resources", {})
    changes: dict[str, Change] = {}
    removed, added = sorted(before.keys() - after.keys()), sorted(after.keys() - before.keys())
    renamed: dict[str, str] = {}  # a new logical id -> the old one it replaces (the same construct name)
    # A logical id that disappears while one of the same type and the same construct name appears (only its
    # path hash differs): a replacement under a new id. Others of one type are unrelated: removed and added.
    for logical_id in removed:
        kind = before[logical_id]["Type"]
        same = [a for a in added if after[a]["Type"] == kind and _stem(a) == _stem(logical_id)]
        olds = [r for r in removed if before[r]["Type"] == kind and _stem(r) == _stem(logical_id)]
        if len(same) == 1 and len(olds) == 1:
            changes[logical_id] = Change(
                logical_id,
                kind,
                "replaced",
                f"logical id changes to {same[0]}: created anew, the old one deleted",
                _stateful(logical_id, kind),
            )
            added.remove(same[0])
            renamed[same[0]] = logical_id
            if kind == MANIFEST:  # its objects: the new one's applied (update phase), the old one's deleted (cleanup)
                changes[logical_id].effects = kubernetes_effects(
                    before[logical_id]["Properties"].get("Manifest"), after[same[0]]["Properties"].get("Manifest"), new
                )
        else:
            changes[logical_id] = _removed(logical_id, before[logical_id], new)
    for logical_id in added:
        changes[logical_id] = _added(logical_id, after[logical_id], new)
    replaced = {c.logical_id for c in changes.values() if c.action == "replaced"} | set(changed_inputs)
    kept = sorted(before.keys() & after.keys())
    # Replacement spreads through references: iterate until nothing more is replaced.
    while True:
        grown = False
        for logical_id in kept:
            if logical_id in replaced:
                continue
            kept_change = _kept_change(logical_id, before[logical_id], after[logical_id], replaced, new)
            if kept_change is None:
                changes.pop(logical_id, None)
                continue
            changes[logical_id] = kept_change
            if kept_change.action == "replaced":
                replaced.add(logical_id)
                grown = True
        if not grown:
            break
    _add_launch_template_rolls(kept, after, changes)
    _one_access_entry_per_principal(before, after, changes, renamed)
    ordered = [changes[k] for k in sorted(changes)]
    return karpenter_upgrade(old, new, ordered)


def _removed(logical_id: str, resource: dict[str, Any], new: dict[str, Any]) -> Change:
    """A resource the deploy removes: deleted (a manifest's objects with kubectl delete), or, retained, forgotten by
    CloudFormation (no handler runs: what it made keeps running)."""
    kind = resource["Type"]
    if resource.get("DeletionPolicy") == "Retain":
        change = Change(logical_id, kind, "removed", "retained: CloudFormation deletes nothing")
        if kind == MANIFEST:
            change.effects = [
                f"{key.replace('/', ' `', 1)}` keeps running: left in the cluster, no longer the stack's"
                for key in _objects(resource["Properties"].get("Manifest"))
            ]
        return change
    change = Change(logical_id, kind, "removed", "deleted", _stateful(logical_id, kind))
    if kind == MANIFEST:  # the handler's Delete: kubectl delete of every object in the manifest
        change.effects = kubernetes_effects(resource["Properties"].get("Manifest"), "[]", new)
    if kind in FARGATE_PROFILES:
        change.effects = [_fargate_evicts(resource)]
    return change


def _added(logical_id: str, resource: dict[str, Any], new: dict[str, Any]) -> Change:
    """A resource the deploy creates; a manifest's objects are applied, unless a CRD rule refuses one."""
    change = Change(logical_id, resource["Type"], "added", "created")
    if resource["Type"] == MANIFEST:
        manifest = resource["Properties"].get("Manifest")
        change.effects = kubernetes_effects("[]", manifest, new)
        refused = crd_refusals("[]", manifest, new)
        if refused:
            change.action, change.why = "fails", f"the API server refuses it: {refused[0]}"
    return change


ACCESS_ENTRY = "AWS::EKS::AccessEntry"


def _one_access_entry_per_principal(
    before: dict[str, Any], after: dict[str, Any], changes: dict[str, Change], renamed: dict[str, str]
) -> None:
    """An access entry CloudFormation creates (added, or replaced: created anew before the old one goes) for a
    principal that has one in the running stack fails: EKS keeps one access entry per principal and cluster
    (CreateAccessEntry: ResourceInUseException), and CloudFormation deletes the old entry only in the cleanup, after
    the update. The deploy then rolls back."""
    held: dict[str, list[str]] = {}
    for logical_id, resource in before.items():
        if resource.get("Type") == ACCESS_ENTRY:
            held.setdefault(_principal(resource), []).append(logical_id)
    for logical_id, resource in after.items():
        change = changes.get(renamed.get(logical_id, logical_id))
        if resource.get("Type") != ACCESS_ENTRY or change is None or change.action not in ("added", "replaced"):
            continue
        holders = held.get(_principal(resource), [])
        if holders:
            principal = _render(resource["Properties"].get("PrincipalArn"))
            change.action = "fails"
            change.why = (
                f"the deploy fails: EKS keeps one access entry per principal, and {principal} still has "
                f"{', '.join(holders)} while CloudFormation creates this one (the old entry goes only in the cleanup); "
                "keep the principal's entry where it is, or remove it in one deploy and add it in the next"
            )


def _principal(resource: dict[str, Any]) -> str:
    properties = resource.get("Properties", {})
    return json.dumps([properties.get("ClusterName"), properties.get("PrincipalArn")], sort_keys=True)


def _add_launch_template_rolls(kept: list[str], after: dict[str, Any], changes: dict[str, Change]) -> None:
    """The node groups left unchanged whose launch template is updated: they roll to its new version."""
    for logical_id in kept:
        if logical_id not in changes and (rolled := _new_launch_template_version(after[logical_id], changes)):
            changes[logical_id] = Change(
                logical_id,
                NODEGROUP,
                "updated",
                f"in place: LaunchTemplate.Version (a new version of {rolled}, which is updated)",
                _stateful(logical_id, NODEGROUP),
                [nodegroup_roll(["LaunchTemplate.Version"])],
            )


def _new_launch_template_version(resource: dict[str, Any], changes: dict[str, Change]) -> str | None:
    """The launch template whose update gives a node group a new version to roll to (its ``LaunchTemplate.Version``
    reads the template's latest or default version number, which CloudFormation's update of the template
    changes, and the node group is updated with it), or None."""
    if resource.get("Type") != NODEGROUP:
        return None
    version = (resource.get("Properties", {}).get("LaunchTemplate") or {}).get("Version")
    target = version.get("Fn::GetAtt") if isinstance(version, dict) else None
    if not isinstance(target, list) or len(target) != 2:
        return None
    name, attribute = target
    change = changes.get(name)
    if change is None or change.action != "updated" or change.type != "AWS::EC2::LaunchTemplate":
        return None
    return str(name) if attribute in ("LatestVersionNumber", "DefaultVersionNumber") else None


def _kept_change(
    logical_id: str, old: dict[str, Any], new: dict[str, Any], replaced: set[str], new_template: dict[str, Any]
) -> Change | None:
    kind = new["Type"]
    props_old, props_new = old.get("Properties", {}), new.get("Properties", {})
    if kind != old["Type"]:
        return Change(logical_id, kind, "replaced", f"type changes from {old['Type']}", _stateful(logical_id, kind))
    if not any(_differs(props_old.get(k), props_new.get(k), replaced) for k in props_old.keys() | props_new.keys()):
        return None  # metadata, DependsOn or deletion policy only: CloudFormation changes no resource
    stateful = _stateful(logical_id, kind)
    if kind == CLUSTER:
        return cluster_update(logical_id, props_old, props_new, replaced, new_template, stateful)
    if kind == FARGATE:
        return fargate_update(logical_id, stateful)
    if kind == HELM:
        action, why, effects = _helm_effects(props_old, props_new, replaced)
        return Change(logical_id, kind, action, why, stateful, effects)
    if kind == MANIFEST:
        return manifest_update(logical_id, props_old, props_new, replaced, new_template, stateful)
    if kind == PATCH:
        return Change(logical_id, kind, "updated", "in place (kubectl patch)", stateful)
    if kind in ("Custom::AWSCDKCfnJson", "Custom::KarpenterTeardown"):
        return Change(logical_id, kind, "updated", f"in place: {CUSTOM_RESOURCE_RULES[kind]}", stateful)
    if kind.startswith("Custom::"):
        changed = sorted(
            k for k in props_old.keys() | props_new.keys() if _differs(props_old.get(k), props_new.get(k), replaced)
        )
        return Change(
            logical_id, kind, "updated", f"its handler decides (not modelled): {', '.join(changed)}", stateful
        )
    if kind == NODEGROUP and (refused := nodegroup_launch_template_refusal(props_old, props_new, replaced)):
        return Change(logical_id, kind, "fails", f"the deploy fails: {refused}", stateful)
    action, why = _aws_change(kind, props_old, props_new, replaced)
    return Change(logical_id, kind, action, why, stateful, _rolling_effects(kind, props_old, props_new, action))


def _chart_versions(template: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """The Karpenter charts of a template: release name -> (logical id, version)."""
    return {
        str(r["Properties"].get("Release")): (logical_id, str(r["Properties"].get("Version")))
        for logical_id, r in template.get("Resources", {}).items()
        if r.get("Type") == HELM and r["Properties"].get("Release") in (CRD_CHART, CONTROLLER_CHART)
    }


def karpenter_upgrade(old: dict[str, Any], new: dict[str, Any], changes: list[Change]) -> list[Change]:
    """A Karpenter release change, in the deploy's order (tooling/review/upgrade.py): the CRD chart's change first,
    with what its CRDs change and which stored objects their rules refuse, then the controller chart's, with its
    new defaults; a downgrade blocks until acknowledged, saying what it loses."""
    before, after = _chart_versions(old), _chart_versions(new)
    if CRD_CHART not in before or CRD_CHART not in after or before[CRD_CHART][1] == after[CRD_CHART][1]:
        return changes
    (crd_id, was), (_, now) = before[CRD_CHART], after[CRD_CHART]
    if not {was, now} <= set(releases.imported()):
        return changes  # a release this project has not imported: nothing to compare it with
    by_id = {c.logical_id: c for c in changes}
    stored = [
        obj
        for r in old.get("Resources", {}).values()
        if r.get("Type") == MANIFEST
        for obj in _objects(r["Properties"].get("Manifest")).values()
    ]
    step = upgrade.crd_step(was, now, stored)
    crd = by_id.get(crd_id)
    if crd is not None:
        crd.effects = step.effects[:1] + crd.effects[:1] + step.effects[1:] + crd.effects[1:]
        if step.fails is not None:
            crd.action, crd.why = "fails", f"the deploy fails: {step.fails}"
        elif step.downgrade is not None:
            crd.stateful, crd.loses = step.downgrade, True
    controller = by_id.get(after.get(CONTROLLER_CHART, ("", ""))[0])
    if controller is not None:
        then = upgrade.controller_step(was, now)
        controller.effects = then[:1] + controller.effects[:1] + then[1:] + controller.effects[1:]
    # the deploy's order: the controller chart waits for the CRD chart
    first = [c for c in changes if c is crd]
    return first + [c for c in changes if c is not crd]


def _template_change(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """Template-level changes (description, parameters, outputs) besides the resources'."""
    keys = [k for k in ("Description", "Parameters", "Outputs") if old.get(k) != new.get(k)]
    return [Change("(template)", "template", "updated", f"{', '.join(keys)} change")] if keys else []
