"""Every Kubernetes object and Helm values document an environment applies, as YAML, in the order they are applied.

``make manifests`` (``python -m tooling.manifests``) synthesizes your configuration as ``make synth`` does (CONTEXT_FILE,
SET, ARGS) and reads what each stack applies from the synth itself:

- what the stack applies: every ``Custom::AWSCDK-EKS-KubernetesResource`` (its objects), ``-HelmChart`` (its release
  and values) and ``-KubernetesPatch`` of the stack's template, in the order CloudFormation creates them (their
  ``DependsOn`` and references; template order among equals). A value CloudFormation fills in at deploy (a role's
  ARN) is shown as ``${LogicalId}`` or ``${LogicalId.Attribute}``;
- then, with ``nodeObjects: "gitops"``, the node objects your GitOps tool applies, as ``--write`` writes them to
  ``gitops/<stack>/`` (karpenter_stack/gitops.py): every value known.

``--write`` writes the folders of the environments whose node objects a GitOps tool applies (and prints nothing
else); ``--stack NAME`` keeps one stack (repeatable). Exit 2: a configuration error (one line, nothing written).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from karpenter_stack import gitops
from tooling.review.lifecycle_model import references

MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
HELM = "Custom::AWSCDK-EKS-HelmChart"
PATCH = "Custom::AWSCDK-EKS-KubernetesPatch"
APPLIED = (MANIFEST, HELM, PATCH)


def text(value: Any) -> str:
    """A CloudFormation string value as text: a ``Fn::Join`` joined, what resolves at deploy as a placeholder."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Fn::Join":
            separator, parts = argument
            return str(separator).join(text(p) for p in parts)
        if function == "Ref":
            return "${" + str(argument) + "}"
        if function == "Fn::GetAtt":
            return "${" + ".".join(str(a) for a in argument) + "}"
    return "${" + json.dumps(value, sort_keys=True) + "}"


def creation_order(resources: dict[str, Any]) -> list[str]:
    """Logical ids in an order CloudFormation may create them: after everything each depends on or refers to,
    template order among those that are ready together."""
    needs: dict[str, set[str]] = {}
    for logical_id, resource in resources.items():
        depends = resource.get("DependsOn", [])
        depends = [depends] if isinstance(depends, str) else list(depends)
        refs = set(references(resource.get("Properties", {})))
        needs[logical_id] = {d for d in (*depends, *refs) if d in resources and d != logical_id}
    order: list[str] = []
    done: set[str] = set()
    while len(order) < len(resources):
        ready = [r for r in resources if r not in done and needs[r] <= done]
        if not ready:  # a cycle CloudFormation would refuse: the rest in template order
            ready = [r for r in resources if r not in done]
        order.append(ready[0])
        done.add(ready[0])
    return order


def stack_documents(template: dict[str, Any]) -> list[tuple[str, Any]]:
    """(header, document) of everything the template applies to the cluster, in creation order."""
    resources = template.get("Resources", {})
    documents: list[tuple[str, Any]] = []
    for logical_id in creation_order(resources):
        resource = resources[logical_id]
        kind, props = resource["Type"], resource.get("Properties", {})
        if kind not in APPLIED:
            continue
        if kind == MANIFEST:
            for obj in json.loads(text(props["Manifest"])):
                what = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
                documents.append((f"{what}: applied by the stack ({logical_id})", obj))
        elif kind == HELM:
            release = (
                f"Helm release {props.get('Release')} (chart {text(props.get('Chart', ''))} "
                f"{text(props.get('Version', ''))} from {text(props.get('Repository', ''))}, namespace "
                f"{text(props.get('Namespace', 'default'))}): its values, installed by the stack ({logical_id})"
            )
            values = json.loads(text(props["Values"])) if "Values" in props else {}
            documents.append((release, values))
        else:
            target = f"{text(props.get('ResourceNamespace', 'default'))}/{text(props.get('ResourceName'))}"
            documents.append(
                (
                    f"patch of {target} ({props.get('PatchType')}): applied by the stack ({logical_id})",
                    json.loads(text(props["ApplyPatchJson"])),
                ),
            )
    return documents


def gitops_documents(stack: str, objects: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """(header, object) of the node objects a GitOps tool applies, as ``--write`` names their files."""
    folder = gitops.folder_of(stack)
    return [
        (f"{o['kind']}/{o['metadata']['name']}: applied by your GitOps tool ({folder}/{gitops.file_name(o)})", o)
        for o in sorted(objects, key=gitops.file_name)
    ]


def render(documents: list[tuple[str, Any]], stack: str) -> str:
    """The documents as one YAML stream, each under a comment saying what it is and who applies it."""
    out = [f"# Stack {stack}: {len(documents)} documents, in the order they are applied\n"]
    for n, (header, document) in enumerate(documents, start=1):
        body = gitops.as_yaml(document)
        out.append(f"---\n# {n}. {header}\n{body}")
    return "".join(out)


def top_level_templates(outdir: Path) -> dict[str, dict[str, Any]]:
    """Stack name -> template of every stack of the assembly (nested assemblies included, nested stacks not:
    they apply nothing to the cluster)."""
    return {
        p.name.removesuffix(".template.json"): json.loads(p.read_text())
        for p in sorted(outdir.rglob("*.template.json"))
        if not p.name.endswith(".nested.template.json")
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make manifests", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--context-file", default=os.environ.get("CONTEXT_FILE") or None, help="a JSON file of settings (CONTEXT_FILE)"
    )
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--stack", action="append", default=[], metavar="NAME", help="only this stack (repeatable)")
    parser.add_argument(
        "--write", action="store_true", help="write the node objects of gitops environments to gitops/<stack>/"
    )
    args = parser.parse_args(argv)
    from karpenter_stack import context_sources
    from karpenter_stack.config import ConfigError

    try:
        context = context_sources.working_context(args.context_file, [a for c in args.context for a in ("-c", c)])
    except context_sources.ContextFileError as err:
        print(err, file=sys.stderr)
        return 2
    try:
        templates, recorded = _synthesized(context)
    except ConfigError as err:
        print(f"Configuration error:\n{err}", file=sys.stderr)
        return 2
    unknown = [s for s in args.stack if s not in templates]
    if unknown:
        print(f"--stack {unknown[0]}: no such stack (the configuration's: {', '.join(templates)})", file=sys.stderr)
        return 2
    stacks = [s for s in templates if not args.stack or s in args.stack]
    if args.write:
        return _write(stacks, recorded, context_sources.project_dir())
    print("\n".join(render(_documents(s, templates[s], recorded), s) for s in stacks), end="")
    return 0


# What a configuration synthesizes to, by the configuration: printing and writing one configuration's objects in
# one process (the README's two commands, under test) synthesizes it once.
_SYNTHESIZED: dict[str, tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]] = {}


def _synthesized(context: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """(templates of the stacks, the node objects a GitOps tool applies) of the configuration ``context``."""
    from tooling.review.synth import synthesize

    key = json.dumps(context, sort_keys=True, default=str)
    if key not in _SYNTHESIZED:
        with tempfile.TemporaryDirectory(prefix="manifests-") as outdir:  # (the assembly only while it is read)
            synthesize(context, outdir)
            _SYNTHESIZED[key] = top_level_templates(Path(outdir)), gitops.recorded(Path(outdir))
    return _SYNTHESIZED[key]


def _documents(stack: str, template: dict[str, Any], recorded: dict[str, dict[str, Any]]) -> list[tuple[str, Any]]:
    documents = stack_documents(template)
    if stack in recorded and recorded[stack].get("mode") == "gitops":  # (in a handover the stack still applies them)
        documents += gitops_documents(stack, recorded[stack]["objects"])
    return documents


def _write(stacks: list[str], recorded: dict[str, dict[str, Any]], root: Path) -> int:
    written = [s for s in stacks if s in recorded]
    if not written:
        print('No stack\'s node objects are applied by a GitOps tool (nodeObjects "gitops"): nothing written.')
        return 0
    for stack in written:
        folder = recorded[stack]["folder"]
        changed, removed = gitops.write(root, folder, gitops.files(stack, recorded[stack]["objects"]))
        count = len(recorded[stack]["objects"])
        print(
            f"{folder}/: {count} node object{'s' if count != 1 else ''}, {len(changed)} file(s) written, "
            f"{len(removed)} removed{': ' + ', '.join(removed) if removed else ''}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
