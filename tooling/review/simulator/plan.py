"""CloudFormation's order for an update of a stack and its nested stacks, as steps (CloudFormation User Guide,
"Update behaviors of stack resources" and "Monitor the progress of a stack update"):

- the update phase creates, updates and replaces resources in dependency order (``DependsOn``, ``Ref``,
  ``Fn::GetAtt``, ``Fn::Sub``; a nested stack's resources after the nested stack's dependencies); a replacement
  creates the new physical resource and leaves the old one running;
- the cleanup phase (``UPDATE_COMPLETE_CLEANUP_IN_PROGRESS``, nested stacks' deferred to the root's) deletes removed
  resources and the old physical resources of replaced ones, in reverse dependency order of the old templates;
- a failed step rolls the update back (``UPDATE_ROLLBACK_IN_PROGRESS``): what the update did is undone in reverse --
  an update is sent again with old and new properties swapped, a replacement returns to the old physical resource --
  then the rollback's cleanup deletes what the update created (``UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS``).

The order is one linearization of CloudFormation's parallel schedule: resources that do not depend on each other
run in key order. Keys are the lifecycle model's (``<stack>/<logical id>``, nested: ``<stack>/<nested stack
resource>/<logical id>``)."""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass
from typing import Any

from tooling.review.lifecycle_model import Lifecycle, references

NESTED_STACK = "AWS::CloudFormation::Stack"
# aws-cdk-lib 2.275's handlers: any change of a Fargate profile creates a new one (cluster-resource-handler
# FargateProfileResourceHandler.onUpdate = onCreate); the cluster's own replacement is the handler's to decide.
REPLACED_ON_ANY_CHANGE = ("Custom::AWSCDK-EKS-FargateProfile",)

UPDATE, CLEANUP, ROLLBACK, ROLLBACK_CLEANUP = "update", "cleanup", "rollback", "rollback cleanup"


@dataclass(frozen=True)
class Step:
    phase: str  # update | cleanup | rollback | rollback cleanup
    action: str  # create | update | replace | delete (| restore: a rollback back to the old physical resource)
    key: str
    type: str
    label: str  # what the resource is, in a platform engineer's words

    @property
    def logical_id(self) -> str:
        return self.key.rsplit("/", 1)[1]

    def describe(self) -> str:
        noun = {
            "create": "creation",
            "update": "update",
            "replace": "replacement",
            "delete": "deletion",
            "restore": "return to the old physical resource",
        }[self.action]
        return f"the {noun} of {self.label}" + ("" if self.phase == UPDATE else f" in the {self.phase}")


def label(resource_type: str, props: Any, logical_id: str) -> str:
    """A resource as a platform engineer names it."""
    if resource_type == "Custom::AWSCDK-EKS-KubernetesResource":
        from tooling.review.kubernetes import _objects

        objects = sorted(_objects(props.get("Manifest")))
        if "ConfigMap/aws-auth" in objects:
            return "the aws-auth ConfigMap"
        return ", ".join(o.replace("/", " `") + "`" for o in objects) or f"the Kubernetes manifest {logical_id}"
    named = {
        "Custom::AWSCDK-EKS-Cluster": "the EKS cluster",
        "Custom::AWSCDK-EKS-FargateProfile": f"the Fargate profile {logical_id}",
        "AWS::EKS::Nodegroup": f"the node group {logical_id}",
        "AWS::EKS::Addon": f"the {props.get('AddonName')} add-on",
        "Custom::AWSCDK-EKS-HelmChart": f"the Helm release {props.get('Release')}",
        "AWS::EKS::PodIdentityAssociation": "the controller's Pod Identity association",
        "AWS::EKS::AccessEntry": f"the access entry {logical_id}",
        "AWS::IAM::Role": f"the IAM role {logical_id}",
    }
    return named.get(resource_type, f"{logical_id} ({resource_type})")


def _props(lifecycle: Lifecycle, key: str) -> Any:
    return lifecycle.nodes[key].resource.get("Properties", {})


def _create_only(resource_type: str) -> list[tuple[str, ...]]:
    from tooling.review.diff import create_only_paths

    return create_only_paths(resource_type) or []


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if part == "*" or not isinstance(value, dict):
            return value
        value = value.get(part)
    return value


def _local(key: str, name: str) -> str:
    return f"{key.rsplit('/', 1)[0]}/{name}"


def changes(old: Lifecycle, new: Lifecycle) -> tuple[set[str], set[str], set[str], set[str]]:
    """(created, updated, replaced, deleted) keys of an update from ``old`` to ``new``. A resource whose
    properties refer to a replaced one changes too (its reference resolves to the new physical resource)."""
    created = set(new.nodes) - set(old.nodes)
    deleted = set(old.nodes) - set(new.nodes)
    common = sorted(set(new.nodes) & set(old.nodes))
    replaced: set[str] = set()
    updated: set[str] = set()
    referred: dict[str, set[str]] = {}  # key -> what its new properties refer to (read once)
    grew = True
    while grew:
        grew = False
        for key in common:
            if key in replaced:
                continue
            node = new.nodes[key]
            if node.type == NESTED_STACK:
                continue
            a, b = _props(old, key), _props(new, key)
            if replaced and key not in referred:
                referred[key] = {_local(key, r) for r in references(b)}
            moved = bool(replaced) and bool(referred[key] & replaced)
            if a == b and not moved:
                continue
            is_replaced = node.type in REPLACED_ON_ANY_CHANGE or any(
                json.dumps(_at(a, p), sort_keys=True) != json.dumps(_at(b, p), sort_keys=True)
                or (moved and {_local(key, r) for r in references(_at(b, p))} & replaced)
                for p in ([] if node.type.startswith("Custom::") else _create_only(node.type))
            )
            if is_replaced:
                replaced.add(key)
                updated.discard(key)
                grew = True
            elif key not in updated:
                updated.add(key)
    return created, updated, replaced, deleted


def _waits(lifecycle: Lifecycle, key: str) -> bool:
    """A Helm release that waits for its pods (``Wait``): it takes until they are Ready or its timeout, so what runs
    beside it finishes first."""
    node = lifecycle.nodes[key]
    return node.type == "Custom::AWSCDK-EKS-HelmChart" and bool(node.resource.get("Properties", {}).get("Wait"))


def _order(lifecycle: Lifecycle, reverse: bool = False) -> list[str]:
    """A topological order of every resource (dependencies first; ``reverse``: dependents first), among what may
    run side by side: a waiting Helm release last, then in key order (a cycle: the first key still pending)."""
    waits_for = lifecycle.dependents if reverse else lifecycle.deps
    pending = set(lifecycle.nodes)
    blocked = {k: {d for d in waits_for[k] if d != k} for k in pending}
    unblocks: dict[str, list[str]] = {}
    for k, ds in blocked.items():
        for d in ds:
            unblocks.setdefault(d, []).append(k)
    ready = [(_waits(lifecycle, k), k) for k in pending if not blocked[k]]
    heapq.heapify(ready)
    order: list[str] = []
    while pending:
        pick = heapq.heappop(ready)[1] if ready else min(pending)
        order.append(pick)
        pending.discard(pick)
        for k in unblocks.get(pick, ()):
            if k in pending and pick in blocked[k]:
                blocked[k].discard(pick)
                if not blocked[k]:
                    heapq.heappush(ready, (_waits(lifecycle, k), k))
    return order


def _step(lifecycle: Lifecycle, phase: str, action: str, key: str) -> Step:
    node = lifecycle.nodes[key]
    return Step(phase, action, key, node.type, label(node.type, node.resource.get("Properties", {}), node.logical_id))


def forward(old: Lifecycle, new: Lifecycle) -> tuple[list[Step], list[Step]]:
    """(the update phase's steps, the cleanup phase's steps) of the update from ``old`` to ``new``."""
    created, updated, replaced, deleted = changes(old, new)
    update = [
        _step(new, UPDATE, "create" if k in created else "replace" if k in replaced else "update", k)
        for k in _order(new)
        if k in created | updated | replaced and new.nodes[k].type != NESTED_STACK
    ]
    cleanup = [
        _step(old, CLEANUP, "delete", k)
        for k in _order(old, reverse=True)
        if k in deleted | replaced and old.nodes[k].type != NESTED_STACK and not old.nodes[k].retained
    ]
    return update, cleanup


def rollback(done: list[Step], old: Lifecycle, new: Lifecycle) -> tuple[list[Step], list[Step]]:
    """(the rollback's steps, its cleanup's steps) after the update-phase steps ``done`` (a failed step is not
    in ``done``: what it did is treated as not done)."""
    actions = {s.key: s.action for s in done}
    order = _order(new, reverse=True)
    back = [
        _step(old, ROLLBACK, "update" if actions[k] == "update" else "restore", k)
        for k in order
        if actions.get(k) in ("update", "replace")
    ]
    cleanup = [
        _step(new, ROLLBACK_CLEANUP, "delete", k)
        for k in order
        if actions.get(k) in ("create", "replace") and not new.nodes[k].retained
    ]
    return back, cleanup
