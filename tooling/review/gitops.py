"""The review of the node objects a GitOps tool applies (``nodeObjects: "gitops"``): what the change of their files
makes Karpenter do, read with the same rules as the stack's node objects (``kubernetes``), and whether the folder
holds what the configuration renders."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from constructs_lib.karpenter.names import NODE_ROLE_NAME_PREFIX, node_role_name
from karpenter_stack import gitops

from .kubernetes import _objects, kubernetes_effects
from .model import MANIFEST

NODE_KINDS = ("EC2NodeClass", "NodePool", "NodeOverlay")


def _as_template(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """Objects as one manifest resource of a template: what the rules that look up pools read."""
    return {"Resources": {"GitOps": {"Type": MANIFEST, "Properties": {"Manifest": json.dumps(objects)}}}}


def stack_node_objects(template: dict[str, Any] | None, node_role: str) -> list[dict[str, Any]]:
    """The node objects a template's stack applies (what a GitOps tool takes over from it). A class names the
    stack's node role by a reference (to the nested stack's output): ``node_role``, the name that output holds."""
    if template is None:
        return []
    found = []
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") != MANIFEST:
            continue
        for obj in _objects(resource.get("Properties", {}).get("Manifest")).values():
            if obj.get("kind") not in NODE_KINDS:
                continue
            role = obj.get("spec", {}).get("role")
            if obj["kind"] == "EC2NodeClass" and isinstance(role, str) and "${" in role:
                obj = {**obj, "spec": {**obj["spec"], "role": node_role}}
            found.append(obj)
    return found


def _node_role(objects: list[dict[str, Any]], stack: str) -> str:
    """The app's node role's name, as the rendered classes write it (they name it literally)."""
    roles = [o["spec"]["role"] for o in objects if o.get("kind") == "EC2NodeClass" and "role" in o.get("spec", {})]
    return next((r for r in roles if r.startswith(NODE_ROLE_NAME_PREFIX)), node_role_name(stack))


def _retained(template: dict[str, Any] | None) -> bool:
    """Whether a template's stack retains every node object it applies (a baseline accepted in handover)."""
    held = [
        resource
        for resource in (template or {}).get("Resources", {}).values()
        if resource.get("Type") == MANIFEST
        and any(o.get("kind") in NODE_KINDS for o in _objects(resource.get("Properties", {}).get("Manifest")).values())
    ]
    return bool(held) and all(r.get("DeletionPolicy") == "Retain" for r in held)


def deleted_by_the_move(template: dict[str, Any] | None) -> list[str]:
    """The node objects a stack applies without retaining them: what a move to gitops would delete."""
    return [
        key
        for resource in (template or {}).get("Resources", {}).values()
        if resource.get("Type") == MANIFEST and resource.get("DeletionPolicy") != "Retain"
        for key, obj in _objects(resource.get("Properties", {}).get("Manifest")).items()
        if obj.get("kind") in NODE_KINDS
    ]


def review(
    recorded: dict[str, dict[str, Any]],
    old_templates: dict[str, dict[str, Any]],
    project: Path,
    base: str | None,
    stacks: Iterable[str] = (),
) -> tuple[list[str], list[str], list[str]]:
    """(lines of the report, folders that are not what the configuration renders, stacks whose move to gitops would
    delete node objects) for every stack whose node objects a GitOps tool applies (``recorded``: what the synth
    carries, karpenter_stack.gitops.recorded). The objects running before: the
    folder's files (at ``base``, or in the working tree); with none yet, the ones the baseline's stack applied (a
    handover). ``stacks``: the synth's stacks, of which one with a folder of written files and no objects for a GitOps
    tool moves them back to the stack."""
    lines: list[str] = []
    stale: list[str] = []
    blocked: list[str] = []
    for stack, written in sorted(recorded.items()):
        folder, new = written["folder"], written["objects"]
        files = gitops.committed(project, folder, base)
        old = (
            gitops.objects_of(files)
            if files
            else stack_node_objects(old_templates.get(f"{stack}.template"), _node_role(new, stack))
        )
        source = f"{folder}/" + (f" at {base}" if base else "") if files else "the stack (baseline)"
        handover = written.get("mode") == "handover"
        what = "takes over (handover)" if handover else "applies"
        lines += ["", f"## {stack}: node objects your GitOps tool {what} ({folder}/)", ""]
        lines.append(f"Before: {len(old)} object(s) from {source}; after: {len(new)} rendered by this configuration.")
        effects = kubernetes_effects(json.dumps(old), json.dumps(new), _as_template(new))
        lines += [f"- {effect}" for effect in effects] or ["- nothing changes for Karpenter"]
        if handover and _retained(old_templates.get(f"{stack}.template")):
            lines.append(
                "- the stack keeps applying these objects and retains them (DeletionPolicy Retain, as your baseline "
                f'records): once your GitOps tool applies {folder}/, set nodeObjects "gitops" and deploy: the objects '
                "keep running"
            )
        elif handover:
            lines.append(
                "- the stack keeps applying these objects and retains them from this deploy on (DeletionPolicy Retain; "
                "each resource is updated, re-applying the same objects, so that CloudFormation stores it): once your "
                f'GitOps tool applies {folder}/, set nodeObjects "gitops" and deploy: the objects keep running'
            )
        deleted = [] if handover else deleted_by_the_move(old_templates.get(f"{stack}.template"))
        if deleted:
            blocked.append(stack)
            lines.append(
                f"- **Blocked**: the baseline's stack applies {', '.join(deleted)} and does not retain them: this "
                "deploy deletes them (Karpenter drains every node of a deleted NodePool). Move in steps: nodeObjects "
                '"handover" (deploy, make accept), make manifests ARGS=--write and commit for your GitOps tool, then '
                '"gitops"'
            )
        if base is None and files != gitops.files(stack, new):
            stale.append(folder)
            lines.append(
                f"- {folder}/ is not what the configuration renders: make manifests ARGS=--write, then commit it "
                "(your GitOps tool applies what is committed)"
            )
    return lines + _back_to_the_stack(recorded, project, base, stacks), stale, blocked


def _back_to_the_stack(
    recorded: dict[str, dict[str, Any]], project: Path, base: str | None, stacks: Iterable[str]
) -> list[str]:
    """gitops -> stack: the stack applies over the objects the GitOps tool applied (Overwrite: kubectl apply), and
    owns them from then on; the tool must let go of them first, without deleting them."""
    lines = []
    for stack in sorted(set(stacks) - set(recorded)):
        folder = gitops.folder_of(stack)
        files = gitops.committed(project, folder, base)
        if not files:
            continue
        lines += [
            "",
            f"## {stack}: node objects move from your GitOps tool ({folder}/) to the stack",
            "",
            f"The stack applies its node objects over the {len(files)} your GitOps tool applied (kubectl apply: nothing "
            "is deleted, Karpenter sees the changes above) and owns them from then on. Before deploying, take them out "
            "of the tool without deleting them (Argo CD: remove them from the Application with pruning off; Flux: "
            f"prune: false), or it keeps applying its own; then remove {folder}/.",
        ]
    return lines
