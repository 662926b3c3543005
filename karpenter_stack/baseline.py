"""Your deployed cluster as your accepted baseline records it (``baseline/``, written by ``make accept`` and
committed with your configuration): the synth refuses a configuration that the running cluster cannot be
updated to -- a deploy that aws-cdk's handler or EKS would refuse, and whose CloudFormation rollback (the
Update re-sent with old and new swapped) the handler would refuse again, leaving the stack in
UPDATE_ROLLBACK_FAILED. The message names the safe sequence. Without a baseline nothing is checked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import context_sources
from .cluster_updates import auth_mode_refusal, auth_mode_sequence, version_step_refusal
from .config import AppConfig, ConfigError, stack_name_for

BASELINE_DIR = "baseline"
CLUSTER_TYPE = "Custom::AWSCDK-EKS-Cluster"
MANIFEST_TYPE = "Custom::AWSCDK-EKS-KubernetesResource"
HELM_TYPE = "Custom::AWSCDK-EKS-HelmChart"


def _baseline(stack_name: str, root: Path | None) -> tuple[str, dict[str, Any]] | None:
    """(the baseline file as messages name it, its resources), or None when nothing was accepted for the stack."""
    path = (root or context_sources.project_dir()) / BASELINE_DIR / f"{stack_name}.template.json"
    if not path.is_file():
        return None
    return f"{BASELINE_DIR}/{path.name}", json.loads(path.read_text()).get("Resources", {})


def deployed_cluster(stack_name: str, root: Path | None = None) -> tuple[str, dict[str, Any]] | None:
    """(the baseline file, the cluster resource's ``Config``) of the stack, or None: nothing accepted for it, or
    no cluster of its own in it (an existing cluster)."""
    found = _baseline(stack_name, root)
    if found is None:
        return None
    source, resources = found
    configs = [r.get("Properties", {}).get("Config", {}) for r in resources.values() if r.get("Type") == CLUSTER_TYPE]
    return (source, configs[0]) if configs else None


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


def refusals(config: AppConfig, stack_name: str, root: Path | None = None) -> list[str]:
    """Why deploying ``config`` over the baseline's stack would fail (empty: it would not, or no baseline)."""
    return (
        _release_refusals(config, stack_name, root)
        + _pool_refusals(config, stack_name, root)
        + _hosting_refusals(config, stack_name, root)
        + _network_refusals(config, stack_name, root)
        + _cluster_refusals(config, stack_name, root)
    )


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


def _cluster_refusals(config: AppConfig, stack_name: str, root: Path | None) -> list[str]:
    deployed = deployed_cluster(stack_name, root)
    if deployed is None or config.existing_cluster is not None:
        return []
    source, old = deployed
    problems: list[str] = []
    # Each kind of cluster update the handler counts: setting -> (old, new) when it changes.
    kinds: dict[str, tuple[Any, Any]] = {}
    old_mode, new_mode = (old.get("accessConfig") or {}).get("authenticationMode"), config.authentication_mode
    if old_mode != new_mode:
        kinds["authenticationMode"] = (_mode(old_mode), _mode(new_mode))
        refused = auth_mode_refusal(old_mode, new_mode)
        if refused:
            problems.append(
                f"authenticationMode {json.dumps(new_mode) if new_mode else 'unset'}: the deployed cluster ({source}) is "
                f"{_mode(old_mode)}, "
                f"and aws-cdk's handler refuses {_mode(old_mode)} → {_mode(new_mode)} ({refused}), on the deploy and "
                f"again on its rollback; {auth_mode_sequence(old_mode, new_mode)}"
            )
    old_version, new_version = old.get("version"), config.kubernetes_version
    if old_version != new_version:
        kinds["kubernetesVersion"] = (old_version, new_version)
        refused = version_step_refusal(old_version, new_version)
        if refused:
            keep = f"; keep {old_version}" if "downgrade" in refused else ""
            problems.append(
                f"kubernetesVersion {json.dumps(new_version)}: the deployed cluster ({source}) runs {refused}{keep}"
            )
    old_public = (old.get("resourcesVpcConfig") or {}).get("endpointPublicAccess")
    new_public = config.endpoint_access == "public-and-private"
    if isinstance(old_public, bool) and old_public != new_public:
        kinds["endpointAccess"] = ("public-and-private" if old_public else "private", config.endpoint_access)
    old_protection = old.get("deletionProtection")
    if old_protection != config.deletion_protection and not (
        old_protection is None and config.deletion_protection is None
    ):
        kinds["deletionProtection"] = (old_protection, config.deletion_protection)
    if len(kinds) > 1 and not problems:  # (a refused step above is the first thing to change)
        steps = "; then ".join(
            f"{name} {new if name == 'authenticationMode' else json.dumps(new)}" for name, (_, new) in kinds.items()
        )
        problems.append(
            f"{' and '.join(kinds)} change together against the deployed cluster ({source}): aws-cdk's handler "
            "allows one kind of cluster update per deploy, and refuses the rollback's too; deploy one at a time: "
            f"first {steps}"
        )
    return problems


def check(configs: dict[str, AppConfig], root: Path | None = None) -> None:
    """Raise ConfigError naming every environment whose configuration its deployed cluster cannot take."""
    problems = [
        f"{p}{'' if name == '' else f' (environment {name})'}"
        for name, config in configs.items()
        for p in refusals(config, stack_name_for(config.cluster_name), root)
    ]
    if problems:
        raise ConfigError("\n".join(problems))
