"""Node objects a GitOps tool applies (``nodeObjects: "gitops"``): carried in the cloud assembly, written to a folder.

The Karpenter construct renders the EC2NodeClasses, NodePools and NodeOverlays with every fill-in resolved
(``Karpenter.gitops_objects``); the stack records them as metadata of its artifact in the cloud assembly (not in its
template: CloudFormation deploys none of them), so every synth -- ``make synth``, the gate's, the review's -- carries
them. ``make manifests ARGS=--write`` writes them to ``gitops/<stack>/``, one file per object, named by kind and name and
numbered by the kind's place in the order they are applied (``kubectl apply -f`` and Argo CD read a folder in that order; Flux's kustomize-controller makes a
kustomization of it): the folder you commit and point the tool at.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from constructs import Construct

# The metadata entry's type in the cloud assembly (manifest.json: the stack artifact's metadata).
GITOPS_METADATA = "karpenter-stack:gitops-objects"
# Under the project folder: gitops/<stack>/.
GITOPS_ROOT = "gitops"
# What every written file starts with.
HEADER = (
    "# Written by `make manifests ARGS=--write` from this project's configuration (stack {stack}): change the\n"
    "# configuration (cdk.json, nodeManifests files) and write again; an edit here is overwritten.\n"
)


# The files a write makes: NN-<kind>-<name>.yaml.
WRITTEN = re.compile(r"[0-9]{2}-[a-z0-9]+-.+\.yaml", re.ASCII)


def folder_of(stack_name: str) -> str:
    """The project-relative folder of a stack's node objects."""
    return f"{GITOPS_ROOT}/{stack_name}"


def record(stack: Construct, stack_name: str, objects: Sequence[Mapping[str, Any]], mode: str) -> None:
    """Carry ``objects`` (in apply order) in the cloud assembly as the stack's metadata, with the mode (``gitops``:
    the tool applies them; ``handover``: the stack still does, and the tool takes them over)."""
    stack.node.add_metadata(
        GITOPS_METADATA,
        {"stack": stack_name, "folder": folder_of(stack_name), "mode": mode, "objects": [dict(o) for o in objects]},
    )


def recorded(outdir: Path) -> dict[str, dict[str, Any]]:
    """Stack name -> {"folder", "mode", "objects"} of every stack of a cloud assembly (nested assemblies included)
    whose node objects a GitOps tool applies or takes over."""
    found: dict[str, dict[str, Any]] = {}
    for manifest in sorted(outdir.rglob("manifest.json")):
        for artifact in json.loads(manifest.read_text()).get("artifacts", {}).values():
            metadata = dict(artifact.get("metadata", {}))
            extra = manifest.parent / artifact.get("additionalMetadataFile", "-")
            if extra.is_file():  # (aws-cdk-lib 2.275 writes a stack's metadata there)
                metadata.update(json.loads(extra.read_text()))
            for entries in metadata.values():
                for entry in entries:
                    if entry.get("type") == GITOPS_METADATA:
                        data = entry["data"]
                        found[data["stack"]] = {k: data[k] for k in ("folder", "mode", "objects")}
    return found


# Where each kind comes in apply order: classes first (a pool's class exists before the pool), overlays before the
# pools whose launches they price, then pools. Files are named by kind and name, not by position: adding or
# removing one object adds or removes one file.
KIND_ORDER = {"EC2NodeClass": 10, "NodeOverlay": 20, "NodePool": 30}


def file_name(obj: Mapping[str, Any]) -> str:
    """``30-nodepool-default.yaml``: the kind's place in apply order, the kind and the name."""
    return f"{KIND_ORDER[str(obj['kind'])]}-{str(obj['kind']).lower()}-{obj['metadata']['name']}.yaml"


class _Dumper(yaml.SafeDumper):
    """Every value written out where it is: no anchors and aliases for values the specs share (a class's subnet
    and security group terms), which would make the same object two different files."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def as_yaml(obj: Any) -> str:
    """An object as YAML, its keys in the order Kubernetes writes them (apiVersion, kind, metadata, spec)."""
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)


def files(stack_name: str, objects: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """File name -> text of the folder of a stack's node objects."""
    return dict(sorted((file_name(obj), HEADER.format(stack=stack_name) + as_yaml(obj)) for obj in objects))


def is_written(name: str) -> bool:
    """A file this module writes (``NN-kind-name.yaml``): the only files a write replaces or removes."""
    return WRITTEN.fullmatch(name) is not None


def write(root: Path, folder: str, wanted: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """Make ``root/folder`` hold ``wanted``: (files written or changed, files removed). Other files of the folder
    (a kustomization.yaml, a README of yours) are left alone."""
    target = root / folder
    target.mkdir(parents=True, exist_ok=True)
    changed = [n for n, text in wanted.items() if not (target / n).is_file() or (target / n).read_text() != text]
    for name in changed:
        (target / name).write_text(wanted[name])
    removed = sorted(p.name for p in target.glob("*.yaml") if is_written(p.name) and p.name not in wanted)
    for name in removed:
        (target / name).unlink()
    return changed, removed


def committed(root: Path, folder: str, base: str | None = None) -> dict[str, str]:
    """File name -> text of the written files in ``folder``: in the working tree, or at git revision ``base``
    (empty when the folder does not exist there)."""
    if base is None:
        target = root / folder
        return {p.name: p.read_text() for p in sorted(target.glob("*.yaml")) if is_written(p.name)}
    listing = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{base}:{folder}"], cwd=root, capture_output=True, text=True
    )
    if listing.returncode != 0:
        return {}
    return {
        name: subprocess.run(
            ["git", "show", f"{base}:{folder}/{name}"], cwd=root, capture_output=True, text=True, check=True
        ).stdout
        for name in listing.stdout.splitlines()
        if is_written(name)
    }


def objects_of(texts: Mapping[str, str]) -> list[dict[str, Any]]:
    """The objects of a folder's files, in file order (a file that is not one YAML object is skipped: the review
    reads what the tool would apply, and ``make manifests ARGS=--write`` rewrites it)."""
    found = []
    for name in sorted(texts):
        try:
            obj = yaml.safe_load(texts[name])
        except yaml.YAMLError:
            continue
        if isinstance(obj, dict) and "kind" in obj:
            found.append(obj)
    return found
