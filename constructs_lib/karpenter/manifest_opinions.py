"""Where a node object of a file (``nodeManifests``) is not what the app recommends. The app deploys the object as
written (:mod:`constructs_lib.karpenter.specs.written`); each of these is a warning naming the file, the object and the field,
and what the app recommends — the defaults its typed settings write. Those the docs promise as a guarantee
(docs/security.md: encrypted volumes, selector terms bounded to what they name) are refused under the production
profile.

The silent values are the CRD's defaults (Karpenter 1.14.1's ``karpenter.sh_nodepools.yaml``: ``disruption``
defaults to ``{consolidateAfter: 0s}``; ``terminationGracePeriod`` and ``limits`` have none) and Karpenter's own
volumes per AMI family (``specs.ami.KARPENTER_VOLUME_GIB``); ``tests/test_node_manifests.py`` holds them to the
vendored CRDs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .names import NODE_CLASS_KIND
from .specs import ami
from .specs.base import quoted
from .specs.node_class import NodeClassSpec
from .specs.node_pool import NodePoolSpec
from .specs.reach import SUBNET, selector_reach
from .specs.written import SELECTOR_LISTS

# What a NodePool runs with where its file is silent (the CRD's defaults).
SILENT_POOL = {"consolidateAfter": "0s"}


def _app_default(model: type[Any], name: str) -> Any:
    return model.model_fields[name].get_default(call_default_factory=True)


def pool_opinions(written: Mapping[str, Any]) -> Iterator[tuple[str, str, bool]]:
    spec = written.get("spec") or {}
    node = (spec.get("template") or {}).get("spec") or {}
    if "limits" not in spec and "replicas" not in spec:
        limits = _app_default(NodePoolSpec, "limits")
        yield (
            "spec.limits",
            "not given: the pool's nodes have no upper bound (Karpenter's default), so a runaway Deployment grows the "
            f"bill without end; the app recommends a bound, like nodePools' default {_flow(limits)}",
            False,
        )
    if "terminationGracePeriod" not in node:
        grace = _app_default(NodePoolSpec, "termination_grace_period")
        yield (
            "spec.template.spec.terminationGracePeriod",
            "not given: a drain then waits for every PodDisruptionBudget and do-not-disrupt pod without end "
            f"(Karpenter's default); the app recommends a bound, like nodePools' default {grace}",
            False,
        )
    if "disruption" not in spec:
        after = _app_default(NodePoolSpec, "consolidate_after")
        yield (
            "spec.disruption.consolidateAfter",
            f"not given: {SILENT_POOL['consolidateAfter']} (the CRD's default), so a node may be consolidated as soon "
            f"as its pods change, in the middle of a rollout; the app recommends nodePools' default {after}",
            False,
        )


def class_opinions(
    written: Mapping[str, Any], family: str | None, cluster_name: str | None = None
) -> Iterator[tuple[str, str, bool]]:
    spec = written.get("spec") or {}
    mappings = spec.get("blockDeviceMappings")
    recommended = _app_default(NodeClassSpec, "root_volume_size_gib")
    if not mappings and family in ami.KARPENTER_VOLUME_GIB and ami.KARPENTER_VOLUME_GIB[family] < recommended:
        yield (
            "spec.blockDeviceMappings",
            f"not given: Karpenter's {family} default, {ami.STORAGE_DEVICE[family]} "
            f"{ami.KARPENTER_VOLUME_GIB[family]}Gi gp3 encrypted, for images, logs and pods; the app recommends "
            f"nodeClasses' default {recommended}Gi",
            False,
        )
    if not mappings and family == ami.CUSTOM:
        yield (
            "spec.blockDeviceMappings",
            "not given: amiFamily Custom has no default volumes, so the image's own block device mappings apply, with "
            "the size and encryption its snapshots have; the app recommends giving the root device (deviceName, "
            "ebs.volumeSize, encrypted: true)",
            True,
        )
    for j, mapping in enumerate(mappings or []):
        ebs = (mapping or {}).get("ebs") or {}
        path = f"spec.blockDeviceMappings[{j}].ebs"
        if "encrypted" not in ebs:
            yield (
                f"{path}.encrypted",
                "not given: the volume is encrypted only where the account's EBS encryption by default is on; the "
                "app's volumes are encrypted (true)",
                True,
            )
        elif ebs["encrypted"] is False:
            yield f"{path}.encrypted", "false: the volume is not encrypted; the app's volumes are (true)", True
        if ebs.get("deleteOnTermination") is False:
            yield (
                f"{path}.deleteOnTermination",
                "false: the volume outlives its instance, and is billed until someone deletes it; the app's volumes "
                "are deleted with their instance (true)",
                False,
            )
    # subnet and security group terms that reach beyond what they name, as EC2 reads them (docs/security.md)
    terms = [[t if isinstance(t, Mapping) else {} for t in spec.get(key) or []] for key in SELECTOR_LISTS]
    for kind, j, reach in selector_reach(terms[0], terms[1], cluster_name):
        key = SELECTOR_LISTS[0] if kind == SUBNET else SELECTOR_LISTS[1]
        yield f"spec.{key}[{j}].{reach.field}", reach.opinion(), True


def opinions(
    kind: str, written: Mapping[str, Any], family: str | None, cluster_name: str | None = None
) -> Iterator[tuple[str, str, bool]]:
    """(path, message, guaranteed) for each field of ``written`` that is not what the app recommends."""
    if kind == NODE_CLASS_KIND:
        yield from class_opinions(written, family, cluster_name)
    elif kind == "NodePool":
        yield from pool_opinions(written)


def _flow(value: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {quoted(v)}" for k, v in value.items()) + "}"
