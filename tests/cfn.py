"""Helpers to read synthesized CloudFormation the way a reviewer would: token-bearing strings
rendered with readable placeholders, nested-stack outputs followed to their source."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from aws_cdk.assertions import Template

from tooling.releases import chart_render

# A stand-in for an intrinsic inside a rendered string (``${GetAtt:Res.Attr}``, ``${Ref:Res}``), and a string or an
# Fn::Join flattened into one string with such placeholders: the chart rendering's own
# (tooling/releases/chart_render.py).
placeholder = chart_render.placeholder
render = chart_render.flatten


def render_json(value: Any) -> Any:
    return json.loads(render(value))


def resources(template: Template, type_: str) -> dict[str, dict[str, Any]]:
    return template.find_resources(type_)


def each(items: Any) -> list[Any]:
    """The items a test loops over, refusing none: a loop over nothing would pass without checking."""
    items = list(items)
    assert items, "nothing to check: the loop would pass vacuously"
    return items


def only(items: dict[str, Any]) -> tuple[str, Any]:
    assert len(items) == 1, f"expected exactly one, found {sorted(items)}"
    return next(iter(items.items()))


def teardown(template: Template) -> tuple[tuple[str, Any], tuple[str, Any]]:
    """The teardown safety net's two custom resources: (safety net, drain bound), each (logical id, resource)."""
    found = resources(template, "Custom::KarpenterTeardown")
    net = only({k: v for k, v in found.items() if "Phase" not in v["Properties"]})
    bound = only({k: v for k, v in found.items() if v["Properties"].get("Phase") == "Instances"})
    assert len(found) == 2 + len(load_balancer_cleanups(template)), sorted(found)
    return net, bound


def load_balancer_cleanups(template: Template) -> dict[str, Any]:
    """The safety net's load-balancer cleanup (on a cluster the stack creates), by logical id."""
    found = resources(template, "Custom::KarpenterTeardown")
    return {k: v for k, v in found.items() if v["Properties"].get("Phase") == "LoadBalancers"}


def _without_prune_label(obj: dict[str, Any]) -> dict[str, Any]:
    """CDK labels every object it applies for `kubectl apply --prune`; that label is CDK's
    bookkeeping, not part of the object under test."""
    labels = obj["metadata"].get("labels", {})
    kept = {k: v for k, v in labels.items() if not k.startswith("aws.cdk.eks/prune-")}
    metadata = {k: v for k, v in obj["metadata"].items() if k != "labels"}
    if kept:
        metadata["labels"] = kept
    return {**obj, "metadata": metadata}


def kubernetes_objects(template: Template) -> dict[str, dict[str, Any]]:
    """Every object applied with add_manifest, keyed by '<Kind>/<name>', with the logical id of
    the manifest resource under '_logicalId' (CDK's prune label removed)."""
    objects: dict[str, dict[str, Any]] = {}
    for logical_id, res in resources(template, "Custom::AWSCDK-EKS-KubernetesResource").items():
        for obj in map(_without_prune_label, render_json(res["Properties"]["Manifest"])):
            key = f"{obj['kind']}/{obj['metadata']['name']}"
            assert key not in objects, f"{key} applied twice"
            objects[key] = {**obj, "_logicalId": logical_id}
    return objects


def applied_objects(synthesized: Any) -> dict[str, dict[str, Any]]:
    """:func:`kubernetes_objects` of a synthesized configuration and the node objects a GitOps tool applies
    (``nodeObjects: "gitops"``; their ``_logicalId``: None): every object the environment puts in the cluster."""
    objects = kubernetes_objects(synthesized.template)
    for obj in synthesized.stack.karpenter.gitops_objects:
        key = f"{obj['kind']}/{obj['metadata']['name']}"
        assert key not in objects, f"{key} applied twice"
        objects[key] = {**obj, "_logicalId": None}
    return objects


def controller_values(template: Template) -> dict[str, Any]:
    """The values the ``karpenter`` chart is installed with."""
    (chart,) = [
        r
        for r in resources(template, "Custom::AWSCDK-EKS-HelmChart").values()
        if r["Properties"]["Release"] == "karpenter"
    ]
    return render_json(chart["Properties"]["Values"])


def depends_on(template_json: dict[str, Any], logical_id: str) -> list[str]:
    deps = template_json["Resources"][logical_id].get("DependsOn", [])
    return [deps] if isinstance(deps, str) else list(deps)


def create_only_properties(resource_type: str) -> set[str]:
    """The top-level properties whose change makes CloudFormation replace a resource of ``resource_type``:
    the resource schema's createOnlyProperties, as shipped with the pinned cfn-lint (the review's rule)."""
    from tooling.review import create_only_paths

    paths = create_only_paths(resource_type)
    if paths is None:
        raise KeyError(resource_type)
    return {path[0] for path in paths}


def template_change(before: dict[str, Any], after: dict[str, Any]) -> tuple[set[str], set[str], dict[str, list[str]]]:
    """What deploying ``after`` over a stack running ``before`` does to its resources: the logical ids
    added, the ids removed, and per kept id the top-level properties that change (DependsOn and
    Metadata left out: neither changes a resource)."""
    old, new = before["Resources"], after["Resources"]
    changed = {}
    for logical_id in old.keys() & new.keys():
        a, b = old[logical_id].get("Properties", {}), new[logical_id].get("Properties", {})
        names = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        if names or old[logical_id]["Type"] != new[logical_id]["Type"]:
            changed[logical_id] = names
    return new.keys() - old.keys(), old.keys() - new.keys(), changed


def assemblies_in_tmp() -> set[str]:
    """Cloud assemblies left in the temp directory (each ~60 MB with the kubectl layer): a command that
    synthesizes into one of its own must remove it."""
    import tempfile

    return {p.name for p in Path(tempfile.gettempdir()).iterdir() if (p / "manifest.json").is_file()}


# aws-cdk's own provider nested stacks (eks.Cluster's cluster-resource provider and its kubectl provider): not this
# app's templates, so not snapshotted (tests/test_snapshots.py).
PROVIDER_TEMPLATE = re.compile(r"(awscdkawseksClusterResourceProvider|KubectlProvider)[0-9A-F]{8}\.nested\.template")
SNAPSHOTS = "tests/__snapshots__/test_snapshots"
SNAPSHOT = re.compile(
    r"^test_templates_match_their_snapshots\[(?P<configuration>[^\]]+)\]\[(?P<template>[^\]]+)\]\.json$"
)


def snapshot_templates(configuration: str, providers_of: Path, base: str | None = None) -> dict[str, dict[str, Any]]:
    """The committed templates of a snapshot configuration (``default`` is the product's cdk.json): template name
    (e.g. ``eks-karpenter.template``) -> template; from git revision ``base``, or the working tree. aws-cdk's
    provider templates, which are not snapshotted, come from the cloud assembly ``providers_of`` (the same
    aws-cdk-lib's)."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    names = (
        git("ls-tree", "--name-only", f"{base}:{SNAPSHOTS}").splitlines()
        if base
        else [p.name for p in (root / SNAPSHOTS).glob("*.json")]
    )
    out = {
        p.name.removesuffix(".json"): json.loads(p.read_text())
        for p in sorted(providers_of.glob("*.template.json"))
        if PROVIDER_TEMPLATE.search(p.name)
    }
    for name in names:
        match = SNAPSHOT.match(name)
        if match and match["configuration"] == configuration:
            text = git("show", f"{base}:{SNAPSHOTS}/{name}") if base else (root / SNAPSHOTS / name).read_text()
            out[match["template"]] = json.loads(text)
    return out


def node_pool(name: str, *requirements: tuple[str, str], **spec: Any) -> dict[str, Any]:
    """A NodePool as the API server takes it: the default node class, one ``In`` requirement per (key, value), and
    ``spec``'s other fields."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [{"key": k, "operator": "In", "values": [v]} for k, v in requirements],
                }
            },
            **spec,
        },
    }
