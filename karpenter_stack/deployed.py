"""What the running stack holds, as the accepted baseline records it (``baseline/<stack>.template.json``, written
by ``make accept``): read by the stacks while they build (an access entry keeps its deployed logical id) and by the
synth's guard (karpenter_stack/baseline.py). Nothing here builds a stack."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import context_sources

BASELINE_DIR = "baseline"
ACCESS_ENTRY_TYPE = "AWS::EKS::AccessEntry"
CLUSTER_TYPE = "Custom::AWSCDK-EKS-Cluster"


def read_baseline(stack_name: str, root: Path | None) -> tuple[str, dict[str, Any]] | None:
    """(the baseline file as messages name it, its resources), or None when nothing was accepted for the stack."""
    path = (root or context_sources.project_dir()) / BASELINE_DIR / f"{stack_name}.template.json"
    if not path.is_file():
        return None
    return f"{BASELINE_DIR}/{path.name}", json.loads(path.read_text()).get("Resources", {})


def deployed_access_entries(stack_name: str, root: Path | None = None) -> dict[str, str]:
    """The logical id of each access entry of the baseline's stack, by its principal (an ARN written as a string;
    an entry whose principal is a reference, a node role's, is the construct's own): none without a baseline."""
    found = read_baseline(stack_name, root)
    if found is None:
        return {}
    return {
        principal: logical_id
        for logical_id, resource in found[1].items()
        if resource.get("Type") == ACCESS_ENTRY_TYPE
        and isinstance(principal := resource.get("Properties", {}).get("PrincipalArn"), str)
    }


def deployed_cluster(stack_name: str, root: Path | None = None) -> tuple[str, dict[str, Any]] | None:
    """(the baseline file, the cluster resource's ``Config``) of the stack, or None: nothing accepted for it, or
    no cluster of its own in it (an existing cluster)."""
    found = read_baseline(stack_name, root)
    if found is None:
        return None
    source, resources = found
    configs = [r.get("Properties", {}).get("Config", {}) for r in resources.values() if r.get("Type") == CLUSTER_TYPE]
    return (source, configs[0]) if configs else None


def deployed_authentication_mode(stack_name: str, root: Path | None = None) -> tuple[str, str | None] | None:
    """(the baseline file, the authentication mode its cluster runs with: None for unset, EKS's CONFIG_MAP), or None
    when the baseline records no cluster of the stack (a new cluster, as far as the app can know)."""
    found = deployed_cluster(stack_name, root)
    if found is None:
        return None
    source, config = found
    mode = (config.get("accessConfig") or {}).get("authenticationMode")
    return source, mode if isinstance(mode, str) else None
