"""Your deployed cluster as your accepted baseline records it (``baseline/``, written by ``make accept`` and
committed with your configuration): the synth refuses a configuration that the running cluster cannot be
updated to -- a deploy that aws-cdk's handler or EKS would refuse, and whose CloudFormation rollback (the
Update re-sent with old and new swapped) the handler would refuse again, leaving the stack in
UPDATE_ROLLBACK_FAILED. The message names the safe sequence. Without a baseline nothing is checked.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from constructs_lib.karpenter.names import ADMIN_ROLE_ID
from constructs_lib.karpenter.specs.node_objects import NodeObjects

from . import cluster_updates as cu
from . import context_sources
from .config import AppConfig, ConfigError, stack_name_for
from .deployed import BASELINE_DIR as BASELINE_DIR
from .deployed import CLUSTER_TYPE as CLUSTER_TYPE
from .deployed import deployed_cluster as deployed_cluster
from .deployed import read_baseline as _baseline

MANIFEST_TYPE = "Custom::AWSCDK-EKS-KubernetesResource"
HELM_TYPE = "Custom::AWSCDK-EKS-HelmChart"


def deployed_pools(stack_name: str, root: Path | None = None) -> tuple[str, dict[str, dict[str, Any]]] | None:
    """(the baseline file, its NodePools by name), or None when nothing was accepted for the stack. A manifest
    that is not plain JSON (CloudFormation functions in it) is skipped: NodePools never hold any."""
    found = _baseline(stack_name, root)
    if found is None:
        return None
    source, resources = found
    pools: dict[str, dict[str, Any]] = {}
    for resource in resources.values():
        manifest = resource.get("Properties", {}).get("Manifest")
        if resource.get("Type") != MANIFEST_TYPE or not isinstance(manifest, str):
            continue
        for obj in json.loads(manifest):
            if obj.get("kind") == "NodePool":
                pools[obj["metadata"]["name"]] = obj
    return source, pools


def _pool_refusals(config: AppConfig, stack_name: str, root: Path | None) -> list[str]:
    """A NodePool cannot switch between static capacity (replicas) and dynamic in place: the Karpenter CRD's
    transition rule refuses the update (and so the deploy, and its rollback's re-apply is refused too)."""
    found = deployed_pools(stack_name, root)
    if found is None:
        return []
    source, pools = found
    problems = []
    for i, pool in enumerate(config.node_pools):
        deployed = pools.get(pool.name)
        if deployed is None or ("replicas" in deployed.get("spec", {})) == (pool.replicas is not None):
            continue
        was = "static (replicas)" if pool.replicas is None else "dynamic (no replicas)"
        problems.append(
            f"nodePools[{i}].replicas {json.dumps(pool.replicas)}: the deployed pool {json.dumps(pool.name)} ({source}) "
            f"is {was}, and the NodePool CRD refuses a switch between static and dynamic capacity in place; give the "
            "pool a new name to switch (the old pool's nodes drain, the new pool's launch)"
        )
    return problems


def _windows(node_class: dict[str, Any]) -> bool:
    spec = node_class.get("spec", {})
    aliases = [t.get("alias", "") for t in spec.get("amiSelectorTerms", []) if isinstance(t, dict)]
    return str(spec.get("amiFamily", "")).lower().startswith("windows") or any(
        str(a).startswith("windows") for a in aliases
    )


def _text(manifest: Any) -> str | None:
    """A manifest property as JSON text: a string, or an Fn::Join whose references (a role's name) stand in as
    ``"?"``; None for anything else."""
    if isinstance(manifest, str):
        return manifest
    if isinstance(manifest, dict) and isinstance(manifest.get("Fn::Join"), list):
        separator, parts = manifest["Fn::Join"]
        return str(separator).join(p if isinstance(p, str) else "?" for p in parts)
    return None


def _node_role_refusals(config: AppConfig, stack_name: str, root: Path | None) -> list[str]:
    """Every role a node runs with stays authorized until its nodes are gone. Without Windows classes the app drops
    the Windows node role and its aws-auth mapping or access entry, in CloudFormation's update phase; a deployed
    Windows pool is deleted (and drained) only in the cleanup, after it: its nodes would go NotReady and their pods
    die without a drain (tooling/simulator replays it). Two deploys: the pools first, then the classes."""
    found = _baseline(stack_name, root)
    if found is None or any(c.windows for c in config.node_classes):
        return []
    source, resources = found
    objects = [
        obj
        for resource in resources.values()
        if resource.get("Type") == MANIFEST_TYPE
        for obj in json.loads(_text(resource.get("Properties", {}).get("Manifest")) or "[]")
        if isinstance(obj, dict)
    ]
    windows = {o["metadata"]["name"] for o in objects if o.get("kind") == "EC2NodeClass" and _windows(o)}
    pools = sorted(
        o["metadata"]["name"]
        for o in objects
        if o.get("kind") == "NodePool"
        and o.get("spec", {}).get("template", {}).get("spec", {}).get("nodeClassRef", {}).get("name") in windows
    )
    if not pools:
        return []
    return [
        f"nodeClasses: the deployed Windows pools {', '.join(json.dumps(p) for p in pools)} ({source}) run with the "
        "Windows node role, which this deploy removes with the last Windows class before CloudFormation's cleanup "
        "deletes the pools: their nodes would go NotReady and their pods die without a drain; deploy twice: first "
        "without the Windows pools (Karpenter drains their nodes), then without the Windows classes"
    ]


def _hosting_refusals(config: AppConfig, stack_name: str, root: Path | None) -> list[str]:
    """The controller's hosting and its credentials cannot switch in one deploy: the Helm upgrade creates the new
    pods while the old hosting still exists (it is deleted in CloudFormation's cleanup), so they land there -- on
    Fargate, where Pod Identity never works, or with an IRSA annotation removed -- and run without AWS credentials
    until the cleanup moves them; a rollback does the same the other way (tooling/simulator replays both)."""
    found = _baseline(stack_name, root)
    if found is None or config.existing_cluster is not None:
        return []
    source, resources = found
    types = {r.get("Type") for r in resources.values()}
    if CLUSTER_TYPE not in types:
        return []
    hosting = "fargate" if "Custom::AWSCDK-EKS-FargateProfile" in types else "nodegroup"
    credentials = "pod-identity" if "AWS::EKS::PodIdentityAssociation" in types else "irsa"
    if hosting == config.controller_hosting or credentials == config.controller_credentials:
        return []
    first = (
        f"first controllerHosting {json.dumps(config.controller_hosting)} (keeping controllerCredentials "
        f"{json.dumps(credentials)}), then controllerCredentials {json.dumps(config.controller_credentials)}"
        if config.controller_hosting == "nodegroup"
        else f"first controllerCredentials {json.dumps(config.controller_credentials)} (keeping controllerHosting "
        f"{json.dumps(hosting)}), then controllerHosting {json.dumps(config.controller_hosting)}"
    )
    return [
        f"controllerHosting {json.dumps(config.controller_hosting)} and controllerCredentials "
        f"{json.dumps(config.controller_credentials)} change together against the deployed cluster ({source}: "
        f"{hosting}, {credentials}): the controller's new pods start on the old hosting, which CloudFormation deletes "
        f"only in its cleanup, and run without AWS credentials until then; deploy one at a time: {first}"
    ]


def _mode(value: str | None) -> str:
    return "unset (CONFIG_MAP)" if value is None else value


def dropped_admin(config: AppConfig, stack_name: str, root: Path | None = None) -> str | None:
    """With ``administrators``, over a baseline whose stack has the default ClusterAdminRole: what the deploy takes
    away, said as a synth warning (a wrong ARN in the list then locks everyone out of kubectl); else None."""
    if not config.administrators:
        return None
    found = _baseline(stack_name, root)
    if found is None:
        return None
    source, resources = found
    roles = [k for k, r in resources.items() if r.get("Type") == "AWS::IAM::Role" and k.startswith(ADMIN_ROLE_ID)]
    if not roles:
        return None
    count = len(config.administrators)
    return (
        f"administrators replaces the deployed stack's {roles[0]} ({source}): the deploy deletes it and its "
        f"system:masters mapping, and then only the {count} role{'s' if count > 1 else ''} listed can use kubectl; "
        "a wrong ARN locks everyone out, so check each (aws iam get-role) before deploying"
    )


def say_dropped_admin(stack: Any, root: Path | None = None) -> None:
    """:func:`dropped_admin` of a stack the app built (``stack.config``), as a warning on the stack."""
    import aws_cdk as cdk

    dropped = dropped_admin(stack.config, stack.stack_name, root)
    if dropped:
        cdk.Annotations.of(stack).add_warning_v2("eks-karpenter:administrators", dropped)


def refusals(config: AppConfig, stack_name: str, root: Path | None = None) -> list[str]:
    """Why deploying ``config`` over the baseline's stack would fail (empty: it would not, or no baseline)."""
    return (
        _release_refusals(config, stack_name, root)
        + _pool_refusals(config, stack_name, root)
        + _node_role_refusals(config, stack_name, root)
        + _hosting_refusals(config, stack_name, root)
        + _network_refusals(config, stack_name, root)
        + _cluster_refusals(config, stack_name, root)
        + _node_objects_refusals(config, stack_name, root)
    )


NODE_KINDS = ("EC2NodeClass", "NodePool", "NodeOverlay")


def _node_objects_refusals(config: AppConfig, stack_name: str, root: Path | None) -> list[str]:
    """nodeObjects "gitops" takes the node objects out of the stack: a resource CloudFormation deletes runs the
    handler's kubectl delete (every pool drained). Only resources the deployed stack retains (handover) leave
    their objects running."""
    found = _baseline(stack_name, root)
    if found is None or config.node_objects is not NodeObjects.GITOPS:
        return []
    source, resources = found
    held = [
        f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
        for resource in resources.values()
        if resource.get("Type") == MANIFEST_TYPE and resource.get("DeletionPolicy") != "Retain"
        for obj in json.loads(_text(resource.get("Properties", {}).get("Manifest")) or "[]")
        if obj.get("kind") in NODE_KINDS
    ]
    if not held:
        return []
    return [
        f'nodeObjects "gitops": the stack your baseline records ({source}) applies {", ".join(held)} and would '
        "delete them (Karpenter drains every node of a deleted NodePool); hand them over in steps: nodeObjects "
        '"handover" (the stack keeps them, and leaves them running when they leave it), deploy, make accept, '
        'make manifests ARGS=--write and let your GitOps tool apply the files, then "gitops" (a stack never '
        "deployed: remove its templates from baseline/)"
    ]


def _network_refusals(config: AppConfig, stack_name: str, root: Path | None) -> list[str]:
    """A new CIDR replaces the stack's VPC and its subnets, and EKS keeps a cluster in the VPC it was created in:
    aws-cdk's handler would move the cluster's subnets (updateVpc) and EKS refuses, so the deploy fails."""
    found = _baseline(stack_name, root)
    if found is None or config.vpc_id is not None or config.existing_cluster is not None:
        return []
    source, resources = found
    cidrs = [r["Properties"].get("CidrBlock") for r in resources.values() if r.get("Type") == "AWS::EC2::VPC"]
    if not cidrs or cidrs[0] == config.vpc_cidr:
        return []
    return [
        f"vpcCidr {json.dumps(config.vpc_cidr)}: the deployed VPC ({source}) is {cidrs[0]}; a new CIDR replaces the VPC "
        "and its subnets, and EKS keeps a cluster in the VPC it was created in, so the deploy fails; keep "
        f"{cidrs[0]} (another network needs another cluster: a new clusterName, a new stack)"
    ]


def _release_refusals(config: AppConfig, stack_name: str, root: Path | None) -> list[str]:
    """Karpenter's Helm releases cannot move to another namespace: aws-cdk's handler installs a new release, and
    Helm refuses to take over the old one's CRDs and ClusterRoles (their release-namespace annotation)."""
    found = _baseline(stack_name, root)
    if found is None:
        return []
    source, resources = found
    namespaces = sorted(
        {
            str(r["Properties"].get("Namespace"))
            for r in resources.values()
            if r.get("Type") == HELM_TYPE and r.get("Properties", {}).get("Release") in ("karpenter", "karpenter-crd")
        }
    )
    if not namespaces or namespaces == [config.karpenter_namespace]:
        return []
    return [
        f"karpenterNamespace {json.dumps(config.karpenter_namespace)}: Karpenter's deployed releases ({source}) are in "
        f"{json.dumps(namespaces[0])}, and Helm refuses to install them in another namespace (their CRDs and "
        f"ClusterRoles belong to the releases there); keep {json.dumps(namespaces[0])}"
    ]


def synthesized_cluster_config(config: AppConfig, root: Path | None = None) -> dict[str, Any] | None:
    """The cluster resource's ``Config`` the app synthesizes for ``config`` (the built ``eks.Cluster``'s resolved
    properties: CDK decides them, no list of ours), or None (an existing cluster, a VPC lookup pending): read from the
    stack this process built for ``config``, or from a stack built up to its cluster."""
    key = _key(config, context_sources.cached_lookups(root))
    if key not in _SYNTHESIZED:
        cluster_only_config(config, root)
    return _SYNTHESIZED[key]


def cluster_only_config(config: AppConfig, root: Path | None = None) -> dict[str, Any] | None:
    """The cluster's ``Config`` of ``config``'s stack built only up to its cluster (nothing built after the cluster
    changes its resource's Config; tests/test_transitions.py holds the two to each other)."""
    import aws_cdk as cdk

    from .cluster_stack import KarpenterClusterStack
    from .config.resolve import resolve_environment

    # (its assets referenced where they are: nothing of this app is deployed or written)
    app = cdk.App(context={**context_sources.cached_lookups(root), "aws:cdk:disable-asset-staging": True})
    environment = resolve_environment("", config)
    stack = KarpenterClusterStack(app, environment.stack_name, environment=environment, cluster_only=True)
    return remember_built(stack)


def remember_built(stack: Any) -> dict[str, Any] | None:
    """Keep the cluster Config of a stack the app has built for its configuration (``stack.config``): the synth's
    guard and the review read it instead of building the stack again (resolving it costs about 2 ms a stack)."""
    import aws_cdk as cdk

    config: AppConfig = stack.config
    # aws-cdk's eks.Cluster (the stack's ``cluster``) holds its custom resource at Resource/Resource/Default
    cluster = getattr(stack, "cluster", None)
    found = []
    if cluster is not None:
        resource = cluster.node.try_find_child("Resource")
        inner = resource.node.try_find_child("Resource") if resource is not None else None
        child = inner.node.default_child if inner is not None else None
        found = [child] if isinstance(child, cdk.CfnResource) and child.cfn_resource_type == CLUSTER_TYPE else []
    key = _key(config, stack.node.get_all_context())
    _SYNTHESIZED[key] = stack.resolve(found[0]._cfn_properties)["Config"] if found else None
    return _SYNTHESIZED[key]


def _key(config: AppConfig, context: dict[str, Any]) -> tuple[str, str]:
    """What a cluster's Config depends on: the configuration, and the lookups (an environment's zones) in the context
    it is built with (the CLI hands the app the project's cdk.context.json), not where the project is."""
    lookups = {k: v for k, v in context.items() if _LOOKUP.match(k)}
    return config.model_dump_json(), json.dumps(lookups, sort_keys=True)


# A lookup's context key, as aws-cdk names it: <provider>:account=<id>:... (availability-zones, vpc-provider, ssm, ...)
_LOOKUP = re.compile(r"[a-z-]+:account=")

_SYNTHESIZED: dict[tuple[str, str], dict[str, Any] | None] = {}

# The settings behind the cluster's Config (for messages; what is refused is the handler's, cluster_updates).
_SETTINGS: dict[tuple[str, ...], str] = {
    ("version",): "kubernetesVersion",
    ("resourcesVpcConfig", "endpointPublicAccess"): "endpointAccess",
    ("resourcesVpcConfig", "publicAccessCidrs"): "publicAccessCidrs",
    ("resourcesVpcConfig", "subnetIds"): "maxAzs",
    ("deletionProtection",): "deletionProtection",
    ("accessConfig", "authenticationMode"): "authenticationMode",
    ("name",): "clusterName",
}


_ONE_STEP = {"endpointAccess": "updateAccess", "publicAccessCidrs": "updateAccess"}


def _at(config: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        config = config.get(key) if isinstance(config, dict) else None  # type: ignore[assignment]
    return config


def _value(path: tuple[str, ...], value: Any) -> str:
    if value is None:
        return "unset"
    if path == ("resourcesVpcConfig", "endpointPublicAccess"):
        return json.dumps("public-and-private" if value else "private")
    if path == ("resourcesVpcConfig", "subnetIds"):
        return f"{len(value)} zones ({len(value)} private subnets)"
    return json.dumps(value)


def _changed(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(setting, old, new) for each setting whose part of the Config changes."""
    return [
        (setting, _value(path, _at(old, path)), _value(path, _at(new, path)))
        for path, setting in _SETTINGS.items()
        if cu.delivered(_at(old, path)) != cu.delivered(_at(new, path))
    ]


def _verdict(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    try:
        cu.update(old, new)
    except cu.UpdateRefused as err:
        return str(err)
    return None


def _cluster_refusals(config: AppConfig, stack_name: str, root: Path | None) -> list[str]:
    """The deploy of the cluster Config the app synthesizes, against the baseline's, through the handler's rules
    (``cluster_updates``, which agrees with aws-cdk's real handler), forward and for CloudFormation's rollback
    (old and new swapped, the cluster as the forward left it), plus EKS's own rules the handler does not know."""
    deployed = deployed_cluster(stack_name, root)
    if deployed is None or config.existing_cluster is not None:
        return []
    source, old = deployed
    new = synthesized_cluster_config(config, root)
    if new is None:
        return []
    problems: list[str] = []
    old_mode, new_mode = _at(old, ("accessConfig", "authenticationMode")), config.authentication_mode
    refused = cu.auth_mode_refusal(old_mode, new_mode) if old_mode != new_mode else None
    if refused:
        problems.append(
            f"authenticationMode {json.dumps(new_mode) if new_mode else 'unset'}: the deployed cluster ({source}) is "
            f"{_mode(old_mode)}, "
            f"and aws-cdk's handler refuses {_mode(old_mode)} → {_mode(new_mode)} ({refused}), on the deploy and "
            f"again on its rollback; {cu.auth_mode_sequence(old_mode, new_mode)}"
        )
    old_version, new_version = old.get("version"), new.get("version")
    step = cu.version_step_refusal(old_version, new_version)
    if step and cu.is_downgrade(old_version, new_version):
        problems.append(
            f"kubernetesVersion {json.dumps(new_version)}: the deployed cluster ({source}) runs {step}; a deploy would "
            "start that rollback through CloudFormation with Karpenter's nodes on the newer kubelet (never newer "
            f"than the control plane): {cu.downgrade_runbook(str(old_version), str(new_version))}, or keep {old_version}"
        )
    elif step:
        problems.append(f"kubernetesVersion {json.dumps(new_version)}: the deployed cluster ({source}) runs {step}")
    old_subnets = _at(old, ("resourcesVpcConfig", "subnetIds"))
    if config.vpc_id is None and isinstance(old_subnets, list) and len(old_subnets) != config.max_azs:
        problems.append(
            f"maxAzs {config.max_azs}: the deployed cluster ({source}) has its subnets in {len(old_subnets)} zones, and "
            "EKS keeps a cluster's subnets in the availability zones chosen when it was created (EKS User Guide, "
            f"network requirements): the deploy fails; keep {len(old_subnets)} (more zones need a new cluster)"
        )
    if old.get("deletionProtection") is not None and new.get("deletionProtection") is None:
        problems.append(
            f"deletionProtection unset: the deployed cluster ({source}) has {json.dumps(old['deletionProtection'])}, "
            "and aws-cdk's handler sends an UpdateClusterConfig with no setting in it (the new value, undefined), "
            "which EKS refuses as an empty update; write false to turn it off, or "
            f"{json.dumps(old['deletionProtection'])} to keep it"
        )
    if problems:  # (a refused step above is the first thing to change)
        return problems
    return _combined_refusals(source, old, new)


def _combined_refusals(source: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The handler's verdict on the deploy, and on its rollback where it refuses a combination."""
    # The rollback: refused as a combination (one kind per deploy); a one-way step refused only on its rollback is
    # the review's warning (it fails only when something else fails the deploy after the cluster updated).
    forward, back = _verdict(old, new), _verdict(new, old)
    back = back if back and back == cu.ONE_KIND else None
    if forward is None and back is None:
        return []
    changed = _changed(old, new)
    named = " and ".join(f"{s} {a} → {b}" for s, a, b in changed) or "the cluster's Config"
    if changed and (forward or back or "").startswith("Only one type of update"):
        steps: dict[str, list[str]] = {}  # (the endpoint's settings are one kind of update: one step)
        for setting, _, value in changed:
            steps.setdefault(_ONE_STEP.get(setting, setting), []).append(f"{setting} {value}")
        sequence = "; then ".join(" with ".join(step) for step in steps.values())
        return [
            f"{named} change together against the deployed cluster ({source}): aws-cdk's handler allows one kind of "
            f"cluster update per deploy, and refuses the rollback's too; deploy one at a time: first {sequence}"
        ]
    when = "the deploy" if forward else "CloudFormation's rollback of the deploy (UPDATE_ROLLBACK_FAILED)"
    return [f"{named} against the deployed cluster ({source}): aws-cdk's handler refuses {when} ({forward or back})"]


def check(configs: dict[str, AppConfig], root: Path | None = None) -> None:
    """Raise ConfigError naming every environment whose configuration its deployed cluster cannot take."""
    problems = [
        f"{p}{'' if name == '' else f' (environment {name})'}"
        for name, config in configs.items()
        for p in refusals(config, stack_name_for(config.cluster_name), root)
    ]
    if problems:
        raise ConfigError("\n".join(problems))
