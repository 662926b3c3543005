"""Review: what deploying the current synth over your accepted baseline would do.

For every stack (nested stacks included): resources added, removed and changed, and for each change
whether CloudFormation updates it in place, replaces it, or the deploy fails -- from the resource type's
own schema (its create-only properties, as shipped with cfn-lint) and, for aws-cdk's EKS custom resources,
from what their handlers do (aws-cdk-lib 2.275's cluster-resource and kubectl handlers; see
CUSTOM_RESOURCE_RULES). A logical-id change is a replacement. Replacing or removing a stateful or slow
resource (cluster, VPC, subnets, KMS keys, node role, queue, nested stacks, ...) is flagged and makes the
review fail unless the change acknowledges it (``acknowledged-replacements.yaml`` or ``--acknowledge``).
Kubernetes-level effects are named in plain words: Helm upgrades, NodePools whose nodes Karpenter replaces
by drift, objects deleted.

The baseline is yours: the templates of the configuration you last accepted (``make accept``, into
``baseline/``), committed with the configuration -- what is deployed. Before you have accepted one, the
review lists what a first deploy would create and passes.

    make review                                   # your configuration (cdk.json) against your baseline
    make review BASE=origin/main                  # against the baseline of another revision (CI: the PR's base)
    make review CONTEXT_FILE=examples/gpu.json    # what adopting an example's settings would do
    make accept                                   # after reviewing: the current synth becomes the baseline
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# Karpenter's drift, derived from what each spec field declares (constructs_lib/specs/change.py).
from constructs_lib.specs.node_class import CLASS_DYNAMIC
from constructs_lib.specs.node_pool import POOL_BEHAVIORAL, POOL_DYNAMIC
from karpenter_stack.cluster_updates import (
    auth_mode_refusal,
    auth_mode_sequence,
    version_step_refusal,
)
from tooling.lifecycle_model import references as _references

ROOT = Path(__file__).resolve().parent.parent

BASELINE = "baseline"
ACKNOWLEDGMENTS = ROOT / "acknowledged-replacements.yaml"

# Resources whose replacement or removal loses state or takes long: type -> what goes with it.
STATEFUL = {
    "Custom::AWSCDK-EKS-Cluster": ("EKS cluster", "every workload and node on it; a new one takes ~15 min"),
    "AWS::EKS::Cluster": ("EKS cluster", "every workload and node on it; a new one takes ~15 min"),
    "AWS::EC2::VPC": ("VPC", "every subnet, node and load balancer in it"),
    "AWS::EC2::Subnet": ("subnet", "the nodes and load balancers in it"),
    "AWS::KMS::Key": ("KMS key", "what it encrypted (the cluster's secrets) cannot be read without it"),
    "AWS::SQS::Queue": ("interruption queue", "spot interruption notices in flight are lost"),
    "AWS::CloudFormation::Stack": ("nested stack", "every resource in it"),
    "AWS::EKS::Nodegroup": ("system node group", "its nodes and the pods on them"),
    "AWS::Logs::LogGroup": ("log group", "the logs in it"),
}
# The node role of Karpenter's template (by logical id): every Karpenter node's identity.
NODE_ROLE_IDS = {"KarpenterNodeRole": ("node role", "every Karpenter node's identity (aws-auth, access entry)")}

HELM = "Custom::AWSCDK-EKS-HelmChart"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
CLUSTER = "Custom::AWSCDK-EKS-Cluster"
FARGATE = "Custom::AWSCDK-EKS-FargateProfile"
PATCH = "Custom::AWSCDK-EKS-KubernetesPatch"

# What aws-cdk-lib 2.275's handlers do on a CloudFormation Update (read in its bundled
# custom-resource-handlers/dist/aws-eks): cluster-resource-handler (cluster, Fargate profile) and
# kubectl-handler (helm, apply, patch).
CUSTOM_RESOURCE_RULES = {
    CLUSTER: "onUpdate: a new name, role, bootstrapClusterCreatorAdminPermissions or bootstrapSelfManagedAddons "
    "creates a new cluster; an encryption change fails; otherwise one kind of update per deploy (version, "
    "logging, endpoint access, subnets/security groups, authentication mode, deletion protection, scaling "
    "tier; tags along with any), more kinds fail",
    FARGATE: "onUpdate = onCreate: a new profile, then CloudFormation deletes the old one",
    HELM: "helm upgrade --install of the release named in Release, in Namespace; the old release is never "
    "uninstalled on an update (and Helm refuses a new release that would take over its cluster-scoped objects)",
    MANIFEST: "kubectl apply --prune -l <PruneLabel>: objects no longer in the manifest are deleted",
    PATCH: "kubectl patch with ApplyPatchJson",
    "Custom::AWSCDKCfnJson": "a value computed in CloudFormation: nothing outside the stack changes",
    "Custom::KarpenterTeardown": "this app's safety net (constructs_lib/teardown_handler): Create and Update do nothing",
}
# Custom resources whose update this review does not model (their handlers decide): Custom::AWS runs the
# SDK calls in its own properties; Custom::VpcRestrictDefaultSG re-restricts the VPC's default group.
# The handlers' cluster update kinds: (Config path, kind).
_CLUSTER_REPLACE = (
    ("name",),
    ("roleArn",),
    ("accessConfig", "bootstrapClusterCreatorAdminPermissions"),
    ("bootstrapSelfManagedAddons",),
)
_CLUSTER_UPDATES = {
    "version": "updateVersion (a Kubernetes upgrade, ~10 min; add-ons follow)",
    "logging": "updateLogging",
    "resourcesVpcConfig.subnetIds": "updateVpc",
    "resourcesVpcConfig.securityGroupIds": "updateVpc",
    "resourcesVpcConfig.endpointPrivateAccess": "updateAccess",
    "resourcesVpcConfig.endpointPublicAccess": "updateAccess",
    "resourcesVpcConfig.publicAccessCidrs": "updateAccess",
    "accessConfig.authenticationMode": "updateAuthMode",
    "deletionProtection": "updateDeletionProtection",
    "controlPlaneScalingConfig": "updateControlPlaneScalingConfig",
}


# What the effects below say when pods restart or nodes go (the report's "interrupts").
INTERRUPTING = ("replaced by drift", "drains", "deleted with it", "restart", "roll", "one at a time")
# As whole words: "controller" holds "roll" (a serviceMonitor switch was reported as interrupting: the matrix).
_INTERRUPTING = re.compile(r"\b(" + "|".join(re.escape(p) for p in INTERRUPTING) + r")\b")


@dataclass
class Change:
    logical_id: str
    type: str
    action: str  # added | removed | updated | replaced | fails
    why: str = ""
    stateful: str | None = None  # what goes with it, when that is state or time
    effects: list[str] = field(default_factory=list)  # in plain words (Kubernetes, pods)
    one_way: bool = False  # its rollback is refused: with anything else in the deploy it can wedge the stack

    @property
    def destructive(self) -> bool:
        return self.stateful is not None and (self.action in ("replaced", "removed") or self.one_way)

    @property
    def interrupts(self) -> bool:
        """Whether pods restart or nodes are replaced (what its effects say)."""
        return any(_INTERRUPTING.search(effect) for effect in self.effects)


@dataclass
class StackReport:
    name: str  # "eks-karpenter" or "eks-karpenter > nested Karpenter"
    changes: list[Change]
    note: str = ""
    stack_override: str | None = None

    @property
    def stack(self) -> str:
        """The top-level stack, as acknowledgments name it (``<stack>/<logical id>``)."""
        return self.stack_override or self.name.split(" > ")[0]


# -- reading templates -----------------------------------------------------------------------------------


def baseline_templates(directory: str, base: str | None = None, root: Path = ROOT) -> dict[str, dict[str, Any]]:
    """The accepted templates in ``directory`` (template name -> template): from git revision ``base``, or
    the working tree; empty when nothing was accepted there."""
    if base is None:
        return {
            p.name.removesuffix(".json"): json.loads(p.read_text()) for p in sorted((root / directory).glob("*.json"))
        }
    listing = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{base}:{directory}"], cwd=root, capture_output=True, text=True
    )
    if listing.returncode != 0:  # no such folder at that revision: nothing accepted there
        _git(["rev-parse", "--verify", "--quiet", f"{base}^{{commit}}"], root)  # but the revision must exist
        return {}
    return {
        name.removesuffix(".json"): json.loads(_git(["show", f"{base}:{directory}/{name}"], root))
        for name in listing.stdout.splitlines()
        if name.endswith(".template.json")
    }


def accept(outdir: Path, directory: Path) -> list[str]:
    """Make the templates of a cloud assembly the baseline in ``directory`` (replacing what was there);
    returns the names written."""
    templates = sorted(outdir.rglob("*.template.json"))
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("*.template.json"):
        old.unlink()
    for path in templates:
        shutil.copyfile(path, directory / path.name)
    return [p.name for p in templates]


def _git(args: list[str], root: Path) -> str:
    result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if result.returncode != 0:
        raise ReviewError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


class ReviewError(Exception):
    pass


def synthesized_templates(outdir: Path) -> dict[str, dict[str, Any]]:
    """Template name -> template of a cloud assembly (the stages' nested assemblies included)."""
    return {p.name.removesuffix(".json"): json.loads(p.read_text()) for p in sorted(outdir.rglob("*.template.json"))}


def _alnum(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "", text)


def stack_names(templates: Mapping[str, dict[str, Any]]) -> dict[str, str]:
    """Template name -> the stack as a reviewer names it: a top-level stack by its name, a nested one as
    ``<parent> > nested <id>`` (CDK names a nested template after its parent's and its own construct id)."""
    tops = [n.removesuffix(".template") for n in templates if not n.endswith(".nested.template")]
    names = {}
    for name in templates:
        if not name.endswith(".nested.template"):
            names[name] = name.removesuffix(".template")
            continue
        stem = name.removesuffix(".nested.template")
        parent = next((t for t in sorted(tops, key=len, reverse=True) if stem.startswith(_alnum(t))), None)
        inner = stem[len(_alnum(parent)) :] if parent else stem
        names[name] = f"{parent} > nested {re.sub(r'[0-9A-F]{8}$', '', inner)}" if parent else stem
    return names


# -- what a change does -------------------------------------------------------------------------------------


def references(value: Any) -> set[str]:
    """Logical ids (and parameters) a value refers to: the lifecycle model's walker (Ref, Fn::GetAtt, Fn::Sub)."""
    return set(_references(value))


def _differs(old: Any, new: Any, replaced: set[str]) -> bool:
    """A value changes when its text does, or when it refers to a resource being replaced (whose id and
    attributes change)."""
    return old != new or bool(references(new) & replaced)


_MISSING = object()


def _at(value: Any, path: Iterable[str]) -> Any:
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return _MISSING
        value = value[key]
    return value


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


# A change whose CloudFormation rollback (the Update re-sent with old and new swapped) is refused: its reason
# starts with this marker. Safe only in a deploy that changes nothing else (see _one_way_alone).
ONE_WAY_MARK = "one way: "
ONE_WAY = ONE_WAY_MARK + "CloudFormation's rollback re-sends the old mode, which aws-cdk's handler refuses"
ONE_WAY_VERSION = (
    ONE_WAY_MARK + "CloudFormation's rollback would send the old version, a downgrade EKS refuses (aws-cdk's handler "
    "calls UpdateClusterVersion unless the cluster already runs it)"
)


def _auth_mode_change(old: str | None, new: str | None) -> tuple[str, str] | None:
    refused = auth_mode_refusal(old, new)
    if refused:
        return "fails", (
            f"authenticationMode {old or 'unset'} → {new or 'unset'}: aws-cdk's handler refuses ({refused}); "
            + auth_mode_sequence(old, new)
        )
    if old != new:
        return "updated", f"in place: updateAuthMode {old or 'unset'} → {new} ({ONE_WAY})"
    return None


def _cluster_change(
    old: dict[str, Any], new: dict[str, Any], replaced: set[str], vpc_replaced: bool
) -> tuple[str, str]:
    config_old, config_new = old.get("Config", {}), new.get("Config", {})
    replacing = [".".join(p) for p in _CLUSTER_REPLACE if _differs(_at(config_old, p), _at(config_new, p), replaced)]
    if replacing:
        return "replaced", f"Config.{', Config.'.join(replacing)} changes: aws-cdk's handler creates a new cluster"
    if _differs(config_old.get("encryptionConfig"), config_new.get("encryptionConfig"), replaced):
        return "fails", "Config.encryptionConfig changes: aws-cdk's handler refuses (Cannot update cluster encryption)"
    kinds = sorted(
        {
            kind
            for path, kind in _CLUSTER_UPDATES.items()
            if _differs(_at(config_old, path.split(".")), _at(config_new, path.split(".")), replaced)
        }
    )
    if "updateVpc" in kinds and vpc_replaced:
        return "fails", (
            "its subnets and security group move to a replaced VPC: aws-cdk's handler updates subnets in place "
            "(updateVpc), and EKS keeps a cluster in the VPC it was created in; a new VPC needs a new cluster"
        )
    version = version_step_refusal(config_old.get("version"), config_new.get("version"))
    if version:
        return "fails", version
    if len(kinds) > 1:
        return "fails", f"{', '.join(kinds)} in one deploy: aws-cdk's handler allows one kind of update per deploy"
    modes = [_at(c, ("accessConfig", "authenticationMode")) for c in (config_old, config_new)]
    auth = _auth_mode_change(*(None if m is _MISSING else m for m in modes))
    if auth:
        return auth
    if kinds == ["updateDeletionProtection"] and config_new.get("deletionProtection") is None:
        # aws-cdk 2.275's handler sends the new value; an absent one is undefined, which changes nothing
        return "updated", (
            f"deletionProtection {json.dumps(config_old.get('deletionProtection'))} → unset: aws-cdk's handler "
            "sends no value, so EKS keeps the cluster's deletion protection as it is (write false to turn it off)"
        )
    if kinds and kinds[0].startswith("updateVersion") and config_old.get("version") != config_new.get("version"):
        return "updated", f"in place: {kinds[0]} ({ONE_WAY_VERSION})"
    if kinds:
        return "updated", f"in place: {kinds[0]}"
    return "updated", "in place: " + ", ".join(
        sorted(k for k in old.keys() | new.keys() if _differs(old.get(k), new.get(k), replaced))
    )


def _render(value: Any) -> str:
    """A string or Fn::Join with placeholders for what is resolved at deploy time."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return str(sep).join(p if isinstance(p, str) else "${" + ",".join(sorted(references(p))) + "}" for p in parts)
    return json.dumps(value)


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


def _names(items: list[str]) -> str:
    return ", ".join(f"`{i}`" for i in items) if items else "(none)"


def kubernetes_effects(old: Any, new: Any, new_template: dict[str, Any]) -> list[str]:
    """What a manifest change does in the cluster, in plain words."""
    before, after = _objects(old), _objects(new)
    effects = [_deleted(key) for key in sorted(before.keys() - after.keys())]
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


def _deleted(key: str) -> str:
    kind, name = key.split("/", 1)
    if kind == "NodePool":
        return (
            f"NodePool `{name}` is deleted: Karpenter drains and terminates all its nodes (disruption budgets "
            "do not apply to a deleted pool)"
        )
    return f"{kind} `{name}` is deleted"


def _node_class_effects(name: str, a: dict[str, Any], b: dict[str, Any], new_template: dict[str, Any]) -> list[str]:
    """An EC2NodeClass changed: which nodes Karpenter replaces by drift (CLASS_DYNAMIC: only those that no
    longer match what the fields select)."""
    fields = sorted(
        k for k in a.get("spec", {}).keys() | b.get("spec", {}).keys() if a["spec"].get(k) != b["spec"].get(k)
    )
    pools = _pools_of(name, new_template)
    static = [f for f in fields if f not in CLASS_DYNAMIC]
    if static:
        return [
            f"EC2NodeClass `{name}` ({', '.join(fields)}): all nodes of pools {_names(pools)} will be replaced "
            "by drift, within their disruption budgets"
        ]
    if _aliases(a) and _aliases(b) and _aliases(a) != _aliases(b):
        return [
            f"EC2NodeClass `{name}` (amiSelectorTerms: alias {', '.join(_aliases(a))} → {', '.join(_aliases(b))}): "
            f"nodes of pools {_names(pools)} not running the AMI {', '.join(_aliases(b))} resolves to will be "
            "replaced by drift, within their disruption budgets (all of them, unless it is the AMI they run)"
        ]
    if fields:
        return [
            f"EC2NodeClass `{name}` ({', '.join(fields)}): nodes of pools {_names(pools)} that no longer match "
            "the selected AMI, subnets or security groups will be replaced by drift, within their disruption "
            "budgets"
        ]
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
    behavioral = sorted(k for k in POOL_BEHAVIORAL if spec_a.get(k) != spec_b.get(k))
    effects = []
    if static:
        effects.append(
            f"NodePool `{name}` ({', '.join(tmpl_fields)}): all nodes of pool `{name}` will be replaced by drift, "
            "within its disruption budgets"
        )
    elif tmpl_fields:
        effects.append(
            f"NodePool `{name}` ({', '.join(tmpl_fields)}): nodes of pool `{name}` that no longer meet its "
            "requirements will be replaced by drift, within its disruption budgets"
        )
    if behavioral:
        effects.append(f"NodePool `{name}` ({', '.join(behavioral)}): no node is replaced (behavioral settings)")
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
    rules (CEL with ``oldSelf``, mirrored per release in tests/data; e.g. a NodePool cannot switch between static
    and dynamic capacity)."""
    from tooling.cel_rules import KINDS, transition_violations

    before, after = _objects(old), _objects(new)
    version = _karpenter_version(new_template)
    return [
        f"{key}: {problem} (Karpenter {version} CRD rule)"
        for key in sorted(before.keys() & after.keys())
        if after[key].get("kind") in KINDS and before[key] != after[key]
        for problem in transition_violations(before[key], after[key], version)
    ]


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
            f"Helm release `{release}` is upgraded {old.get('Version')} → {new.get('Version')} (helm upgrade)"
        )
    if _differs(old.get("Values"), new.get("Values"), replaced):
        try:
            va, vb = json.loads(_render(old.get("Values", "{}"))), json.loads(_render(new.get("Values", "{}")))
            keys = sorted(k for k in va.keys() | vb.keys() if va.get(k) != vb.get(k)) or ["resolved values"]
        except json.JSONDecodeError:
            keys = ["values"]
        effects.append(f"Helm release `{release}` values change ({', '.join(keys)}): helm upgrade")
    if effects and release == "karpenter":
        if old.get("Version") != new.get("Version") or _pod_template_changes(old, new):
            effects.append(
                "the Karpenter controller pods restart one at a time (PodDisruptionBudget maxUnavailable 1); "
                "provisioning pauses during the leader handover"
            )
        else:
            effects.append(
                "the controller's pod template is unchanged: its pods keep running as they are (a service-account "
                "annotation reaches only pods created later)"
            )
    changed = sorted(k for k in old.keys() | new.keys() if _differs(old.get(k), new.get(k), replaced))
    return "updated", f"in place (helm upgrade): {', '.join(changed)}", effects


# Karpenter 1.14.1 chart values that render outside the controller Deployment's pod template: the service
# account's annotations (the Deployment has no checksum of them), the PodDisruptionBudget, the ServiceMonitor,
# and the replica count (a scale, not a restart). Every other value reaches the pod template.
_OUTSIDE_POD_TEMPLATE = (
    ("serviceAccount", "annotations"),
    ("podDisruptionBudget",),
    ("serviceMonitor",),
    ("replicas",),
)


def _pod_template_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The controller chart's changed values that change its pods (each as a dotted path)."""
    try:
        va, vb = json.loads(_render(old.get("Values", "{}"))), json.loads(_render(new.get("Values", "{}")))
    except json.JSONDecodeError:
        return ["values (not decided: unreadable)"]

    def leaves(a: Any, b: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
        if isinstance(a, dict) and isinstance(b, dict):
            return [p for k in sorted(a.keys() | b.keys()) for p in leaves(a.get(k), b.get(k), (*path, k))]
        return [] if a == b else [path]

    return [
        ".".join(p)
        for p in leaves(va, vb, ())
        if not any(p[: len(outside)] == outside for outside in _OUTSIDE_POD_TEMPLATE)
    ]


def _stateful_kind(logical_id: str, resource_type: str) -> tuple[str, str] | None:
    return NODE_ROLE_IDS.get(logical_id) or STATEFUL.get(resource_type)


def _stateful(logical_id: str, resource_type: str) -> str | None:
    """What goes with a stateful or slow resource when it is replaced or deleted (``None``: nothing)."""
    kind = _stateful_kind(logical_id, resource_type)
    return f"the {kind[0]}: {kind[1]}" if kind else None


_PATH_HASH = re.compile(r"[0-9A-F]{8}$")
FARGATE_PROFILES = ("Custom::AWSCDK-EKS-FargateProfile", "AWS::EKS::FargateProfile")


def _stem(logical_id: str) -> str:
    """A CDK logical id without its construct-path hash: the construct's name."""
    return _PATH_HASH.sub("", logical_id)


def _fargate_evicts(resource: dict[str, Any]) -> str:
    """EKS deletes the pods a Fargate profile runs when the profile is deleted (EKS User Guide, "Delete a
    Fargate profile"): they reschedule only where other capacity matches them."""
    props = resource.get("Properties", {})
    selectors = (props.get("Config") or props).get("selectors") or (props.get("Config") or props).get("Selectors") or []
    namespaces = sorted({str(s.get("namespace") or s.get("Namespace")) for s in selectors if isinstance(s, dict)})
    return (
        f"the pods this Fargate profile runs (namespaces {', '.join(namespaces) or 'unknown'}) are deleted with it: "
        "they restart only where other capacity matches them"
    )


def compare_template(old: dict[str, Any], new: dict[str, Any], changed_inputs: Iterable[str] = ()) -> list[Change]:
    """The changes deploying ``new`` over a stack running ``old`` makes, replacements propagated through
    references (a subnet whose VPC is replaced is replaced). ``changed_inputs``: parameters whose values
    change (a nested stack's, from its parent), which count as changed wherever they are referenced."""
    before, after = old.get("Resources", {}), new.get("Resources", {})
    changes: dict[str, Change] = {}
    removed, added = sorted(before.keys() - after.keys()), sorted(after.keys() - before.keys())
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
        else:
            changes[logical_id] = Change(logical_id, kind, "removed", "deleted", _stateful(logical_id, kind))
            if kind == MANIFEST:  # the handler's Delete: kubectl delete of every object in the manifest
                changes[logical_id].effects = kubernetes_effects(
                    before[logical_id]["Properties"].get("Manifest"), "[]", new
                )
            if kind in FARGATE_PROFILES:
                changes[logical_id].effects = [_fargate_evicts(before[logical_id])]
    for logical_id in added:
        kind = after[logical_id]["Type"]
        change = Change(logical_id, kind, "added", "created")
        if kind == MANIFEST:
            change.effects = kubernetes_effects("[]", after[logical_id]["Properties"].get("Manifest"), new)
        changes[logical_id] = change
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
    return [changes[k] for k in sorted(changes)]


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
        vpc_replaced = any(
            t.get("Type") == "AWS::EC2::VPC" for r, t in new_template["Resources"].items() if r in replaced
        )
        action, why = _cluster_change(props_old, props_new, replaced, vpc_replaced)
        return Change(logical_id, kind, action, why, stateful)
    if kind == FARGATE:
        return Change(
            logical_id,
            kind,
            "replaced",
            "any change: aws-cdk's handler creates a new profile, the old one is deleted",
            stateful,
            [
                "the pods the old profile scheduled (the Karpenter controller, CoreDNS) are deleted with it and start "
                "again on Fargate: provisioning pauses until the controller is back"
            ],
        )
    if kind == HELM:
        action, why, effects = _helm_effects(props_old, props_new, replaced)
        return Change(logical_id, kind, action, why, stateful, effects)
    if kind == MANIFEST:
        effects = kubernetes_effects(props_old.get("Manifest"), props_new.get("Manifest"), new_template)
        refused = crd_refusals(props_old.get("Manifest"), props_new.get("Manifest"), new_template)
        if refused:
            return Change(
                logical_id, kind, "fails", f"the API server refuses the update: {refused[0]}", stateful, effects
            )
        changed = sorted(
            k for k in props_old.keys() | props_new.keys() if _differs(props_old.get(k), props_new.get(k), replaced)
        )
        return Change(logical_id, kind, "updated", f"in place (kubectl apply): {', '.join(changed)}", stateful, effects)
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
    action, why = _aws_change(kind, props_old, props_new, replaced)
    return Change(logical_id, kind, action, why, stateful, _rolling_effects(kind, props_old, props_new, action))


# In-place updates that restart pods or replace nodes (EKS managed node groups and add-ons).
_NODEGROUP_ROLLS = ("Version", "ReleaseVersion", "LaunchTemplate")
_ADDON_ROLLS = ("AddonVersion", "ConfigurationValues")


def _rolling_effects(kind: str, old: dict[str, Any], new: dict[str, Any], action: str) -> list[str]:
    if action != "updated":
        return []
    if kind == "AWS::EKS::Nodegroup":
        rolls = [k for k in _NODEGROUP_ROLLS if old.get(k) != new.get(k)]
        if rolls:
            return [
                f"the node group's nodes are replaced one at a time ({', '.join(rolls)}): EKS drains each, its pods "
                "are evicted and rescheduled"
            ]
    if kind == "AWS::EKS::Addon":
        rolls = [k for k in _ADDON_ROLLS if old.get(k) != new.get(k)]
        if rolls:
            return [f"add-on `{new.get('AddonName')}` is updated ({', '.join(rolls)}): its pods roll"]
    return []


def _template_change(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """Template-level changes (description, parameters, outputs) besides the resources'."""
    keys = [k for k in ("Description", "Parameters", "Outputs") if old.get(k) != new.get(k)]
    return [Change("(template)", "template", "updated", f"{', '.join(keys)} change")] if keys else []


def _top_level(templates: Iterable[str]) -> list[str]:
    return sorted(t.removesuffix(".template") for t in templates if not t.endswith(".nested.template"))


def _common_suffix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def _renames(gone: list[str], arrived: list[str]) -> dict[str, str]:
    """Stacks gone from the app paired with stacks that arrived: the only pair, or each gone stack with the one
    arrived stack that shares the longest name suffix with it (an environment's stack is ``<cluster>-<env>``,
    so renaming the cluster keeps each environment's suffix); unpaired stacks stay unpaired."""
    if len(gone) == 1 and len(arrived) == 1:
        return {gone[0]: arrived[0]}
    pairs: dict[str, str] = {}
    for was in gone:
        scores = {now: _common_suffix(was, now) for now in arrived}
        best = max(scores.values(), default=0)
        winners = [now for now, score in scores.items() if score == best]
        if best > 1 and len(winners) == 1 and winners[0] not in pairs.values():
            pairs[was] = winners[0]
    return pairs


def _renamed_report(was: str, now: str, new: Mapping[str, dict[str, Any]]) -> StackReport:
    """A stack renamed (it is named after its cluster): CloudFormation creates the new stack from nothing and
    leaves the old one running."""
    created = sorted(
        {
            what
            for template in new
            if stack_names(new)[template].split(" > ")[0] == now
            for logical_id, res in new[template]["Resources"].items()
            if (what := (_stateful_kind(logical_id, res["Type"]) or ("",))[0]) and what != "nested stack"
        }
    )
    return StackReport(
        f"{now} (replaces {was})",
        [
            Change(
                "*",
                "AWS::CloudFormation::Stack",
                "replaced",
                f"the stack is named after its cluster: `cdk deploy` creates stack `{now}` from nothing and leaves "
                f"`{was}` running until it is destroyed",
                f"a second cluster with everything it needs, all created anew ({', '.join(created)})",
                [f"workloads stay on the cluster of `{was}`: the new cluster starts with no workload and no node"],
            )
        ],
        stack_override=was,
    )


def _left_running(was: str) -> StackReport:
    """A stack no longer in the app: `cdk deploy` neither updates nor deletes it."""
    return StackReport(
        was,
        [
            Change(
                "*",
                "AWS::CloudFormation::Stack",
                "removed",
                "stack no longer in the app: `cdk deploy` leaves it running (nothing is deleted)",
                "its cluster, nodes and everything else keep running and costing, outside the app: `cdk destroy "
                f"{was}` (with the app that still has it) removes it",
            )
        ],
    )


def review(old: Mapping[str, dict[str, Any]], new: Mapping[str, dict[str, Any]]) -> list[StackReport]:
    """One report per stack (template), nested stacks included, in the order a reviewer reads them."""
    gone, arrived = _top_level(old.keys() - new.keys()), _top_level(new.keys() - old.keys())
    renames = _renames(gone, arrived)
    names = {**stack_names(old), **stack_names(new)}
    reports = [_renamed_report(was, now, new) for was, now in sorted(renames.items())]
    paired = set(renames) | set(renames.values())
    replaced_in: dict[str, tuple[set[str], dict[str, Any], dict[str, Any]]] = {}
    for template in sorted(
        old.keys() | new.keys(), key=lambda t: (names[t].split(" > ")[0], " > " in names[t], names[t])
    ):
        if names[template].split(" > ")[0] in paired:
            continue  # (in the rename's report)
        if template not in old:
            reports.append(StackReport(names[template], [], "new stack: every resource is created"))
        elif template not in new:
            nested = " > nested " in names[template]
            reports.append(
                StackReport(
                    names[template],
                    [],
                    "nested template gone: its parent's nested-stack resource changes (see the parent)",
                )
                if nested
                else _left_running(names[template])
            )
        else:
            inputs = _changed_parameters(names[template], new, names, replaced_in)
            changes = _template_change(old[template], new[template]) + compare_template(
                old[template], new[template], inputs
            )
            replaced_in[names[template]] = (
                {c.logical_id for c in changes if c.action == "replaced"},
                old[template],
                new[template],
            )
            reports.append(StackReport(names[template], changes))
    return _one_way_alone(reports)


def _one_way_alone(reports: list[StackReport]) -> list[StackReport]:
    """A one-way change (its rollback is refused) is safe only in a deploy that changes nothing else: if anything
    else fails, CloudFormation rolls the one-way change back too, the handler refuses, and the stack is left in
    UPDATE_ROLLBACK_FAILED."""
    changes = [c for r in reports for c in r.changes]
    others = [c for c in changes if ONE_WAY_MARK not in c.why]
    for change in changes:
        if ONE_WAY_MARK in change.why and others:
            change.one_way = True
            change.stateful = (
                f"its rollback is refused: with {len(others)} other change(s) in this deploy, any failure rolls it "
                "back and leaves the stack in UPDATE_ROLLBACK_FAILED (recovery: continue-update-rollback skipping "
                "the cluster); deploy it with as little else as you can (what follows it in the same template, e.g. "
                "a Kubernetes upgrade's add-ons or a mode's access entries, cannot be left out), then acknowledge the "
                "risk"
            )
    return reports


def _changed_parameters(
    name: str,
    new: Mapping[str, dict[str, Any]],
    names: Mapping[str, str],
    replaced_in: Mapping[str, tuple[set[str], dict[str, Any], dict[str, Any]]],
) -> set[str]:
    """A nested stack's parameters whose values change: its parent passes a different value, or one that
    refers to a resource the parent replaces (parents are compared first)."""
    if " > nested " not in name:
        return set()
    parent, inner = name.split(" > nested ")
    if parent not in replaced_in:
        return set()
    replaced, parent_old, parent_new = replaced_in[parent]
    changed: set[str] = set()
    for logical_id, res in parent_new["Resources"].items():
        if res["Type"] != "AWS::CloudFormation::Stack" or not logical_id.startswith(f"{inner}NestedStack"):
            continue
        params_new = res.get("Properties", {}).get("Parameters", {})
        params_old = parent_old["Resources"].get(logical_id, {}).get("Properties", {}).get("Parameters", {})
        # (parameter names derived from construct paths are the same on both sides when ids are kept)
        changed |= {k for k in params_new if _differs(params_old.get(k), params_new[k], replaced)}
    return changed


# -- acknowledgments and the report -------------------------------------------------------------------------


def acknowledgments(path: Path = ACKNOWLEDGMENTS) -> dict[str, str]:
    """`<stack>/<logical id>` -> reason, from the change's acknowledgment file (none when it is absent)."""
    if not path.is_file():
        return {}
    entries = yaml.safe_load(path.read_text()) or []
    out = {}
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("resource") or not str(entry.get("reason", "")).strip():
            raise ReviewError(f"{path.name}: each entry needs `resource: <stack>/<logical id>` and a `reason`")
        out[str(entry["resource"])] = str(entry["reason"])
    return out


_SYMBOL = {"added": "+", "removed": "-", "updated": "~", "replaced": "±", "fails": "✗"}


def render(reports: list[StackReport], acknowledged: Mapping[str, str]) -> tuple[str, list[str], list[str]]:
    """The report as Markdown; the destructive changes left unacknowledged and those that fail the deploy
    (each ``<stack>/<logical id>``); acknowledgments that match nothing are listed in the text."""
    lines = ["# Review", ""]
    blocking, failing, used = [], [], set()
    total = sum(len(r.changes) for r in reports) + sum(1 for r in reports if r.note)
    if total == 0:
        lines.append("No change: every stack deploys as its baseline (nothing added, removed, replaced or updated).")
    for report in reports:
        if not report.changes and not report.note:
            continue
        counts = {a: sum(c.action == a for c in report.changes) for a in _SYMBOL}
        summary = ", ".join(f"{n} {a}" for a, n in counts.items() if n)
        lines += [f"## {report.name}", "", report.note or summary, ""]
        if not report.changes:
            continue
        lines += ["| | resource | type | change | why |", "|---|---|---|---|---|"]
        for c in report.changes:
            key = f"{report.stack}/{c.logical_id}"
            flag = ""
            if c.action == "fails":
                flag = "✗ FAILS"
                failing.append(key)
            elif c.destructive and key in acknowledged:
                flag = "acknowledged"
                used.add(key)
            elif c.destructive:
                flag = "‼ STATEFUL"
                blocking.append(key)
            what = f"**{c.action}**" if c.action in ("replaced", "removed", "fails") else c.action
            if c.interrupts:
                what += ", **interrupts**"
            lines.append(f"| {flag} | `{c.logical_id}` | {c.type} | {_SYMBOL[c.action]} {what} | {c.why} |")
        loud = [c for c in report.changes if c.destructive]
        if loud:
            lines += ["", "Stateful or slow resources replaced or deleted, or changes whose rollback is refused:"]
            lines += [f"- `{c.logical_id}` ({'one way' if c.one_way else c.action}): {c.stateful}" for c in loud]
        effects = [e for c in report.changes for e in c.effects]
        if effects:
            lines += ["", "In the cluster:"] + [f"- {e}" for e in effects]
        lines.append("")
    stale = sorted(set(acknowledged) - used)
    if stale:
        lines += ["Acknowledgments that match nothing in this change (remove them): " + ", ".join(stale), ""]
    if failing:
        lines.append(f"**The deploy would fail** at: {', '.join(failing)}.")
    if blocking:
        lines.append(
            f"**Blocked**: stateful or slow resources replaced, deleted or changed one way without acknowledgment: "
            f"{', '.join(blocking)}. "
            "If that is intended, list each in acknowledged-replacements.yaml (`- resource: <stack>/<logical id>` "
            "and a `reason`) or pass `--acknowledge <stack>/<logical id>` (through make: "
            '`make review ARGS="--acknowledge <stack>/<logical id>"`).'
        )
    return "\n".join(lines).rstrip() + "\n", blocking, failing


def first_deploy(new: Mapping[str, dict[str, Any]], directory: str) -> str:
    """The report when nothing was accepted yet: what a first deploy creates."""
    names = stack_names(new)
    lines = [
        "# Review",
        "",
        f"No accepted baseline yet ({directory}/): this compares nothing, and deploying creates everything below.",
        "After reviewing it, accept it with `make accept` and commit the baseline with your configuration.",
        "",
        "| stack | resources created |",
        "|---|---|",
    ]
    lines += [
        f"| {names[t]} | {len(new[t].get('Resources', {}))} |"
        for t in sorted(new, key=lambda t: (names[t].split(" > ")[0], " > " in names[t], names[t]))
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="git revision whose baseline is compared (default: the working tree's)")
    parser.add_argument(
        "--context-file", default=os.environ.get("CONTEXT_FILE") or None, help="a JSON file of settings (CONTEXT_FILE)"
    )
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--acknowledge", action="append", default=[], metavar="STACK/LOGICAL_ID")
    parser.add_argument("--output", type=Path, help="also write the report there (e.g. a CI job summary)")
    parser.add_argument("--accept", action="store_true", help="make the current synth the baseline instead")
    args = parser.parse_args(argv)
    from karpenter_stack import context_sources

    try:
        context = context_sources.working_context(args.context_file, [a for c in args.context for a in ("-c", c)])
    except context_sources.ContextFileError as err:
        print(err, file=sys.stderr)
        return 2
    # The cloud assembly (~60 MB with the kubectl layer) lives only as long as the review.
    with tempfile.TemporaryDirectory(prefix="review-") as outdir:
        return _review(args, context, BASELINE, outdir)


def _review(args: argparse.Namespace, context: dict[str, Any], directory: str, outdir: str) -> int:
    from karpenter_stack import context_sources
    from karpenter_stack.application import build, missing_lookups, new_app
    from karpenter_stack.config import ConfigError

    project = context_sources.project_dir()
    try:
        old = {} if args.accept else baseline_templates(directory, args.base, project)
        acknowledged = {
            **acknowledgments(project / ACKNOWLEDGMENTS.name),
            **{a: "--acknowledge" for a in args.acknowledge},
        }
        app = new_app(context={**context, "aws:cdk:enable-path-metadata": True}, outdir=outdir)
        build(app)
        try:
            assembly = app.synth()
        except RuntimeError:
            assembly = None  # open security findings are the security gate's business; the templates are written
    except ConfigError as err:
        print(f"Configuration error:\n{err}", file=sys.stderr)
        return 2
    except ReviewError as err:
        print(f"review: {err}", file=sys.stderr)
        return 2
    missing = missing_lookups(assembly) if assembly is not None else []
    if missing:
        print("\n".join(missing), file=sys.stderr)
        return 2
    if args.accept:
        written = accept(Path(outdir), project / directory)
        print(f"Accepted {len(written)} templates into {directory}/: commit them with your configuration.")
        return 0
    new = synthesized_templates(Path(outdir))
    if not old:
        text, blocking, failing = first_deploy(new, directory), list[str](), list[str]()
    else:
        text, blocking, failing = render(review(old, new), acknowledged)
    print(text)
    if args.output:
        args.output.write_text(text)
    return 1 if blocking or failing else 0


if __name__ == "__main__":
    sys.exit(main())
