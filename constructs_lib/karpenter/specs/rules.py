"""Rules across objects: what makes node classes, node pools, node overlays, the controller's feature gates and
the cluster's Kubernetes version unusable together.

Each rule is a function ``*_problems`` returning its problems, one line each, starting with the setting. The
:class:`~constructs_lib.karpenter.Karpenter` construct runs every one of them when it is built
(:func:`check_nodes`), so a CDK app of its user's own gets the same refusals as this app; the app's
configuration calls the same functions and adds where each setting came from."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import ami, user_data_merged
from .base import quoted
from .controller import ControllerSpec, FeatureGate, gate_on
from .node_class import NodeClassSpec
from .node_objects import NodeObjects
from .node_overlay import NodeOverlaySpec
from .node_pool import NodePoolSpec

_KUBERNETES_MINOR = re.compile(r"1\.(\d+)", re.ASCII)


class NodeSpecsError(ValueError):
    """Node specs that do not fit together: ``str(err)`` names the construct and each problem (one line each),
    ``problems`` holds the problems as the rules return them."""

    def __init__(self, where: str, problems: Sequence[str]) -> None:
        super().__init__("\n".join(f"{where}: {problem}" for problem in problems))
        self.problems = list(problems)


def duplicates(setting: str, names: Sequence[str], what: str = "names") -> str | None:
    """The problem of a list that names something twice, or None."""
    twice = sorted({n for n in names if names.count(n) > 1})
    return f"{setting} has duplicate {what}: {', '.join(twice)}" if twice else None


def name_problems(
    node_classes: Sequence[NodeClassSpec],
    node_pools: Sequence[NodePoolSpec],
    node_overlays: Sequence[NodeOverlaySpec] = (),
) -> list[str]:
    """No two node classes, pools or overlays of one name: each is one Kubernetes object (the first list with
    duplicates)."""
    found = (
        duplicates("nodeClasses", [c.name for c in node_classes])
        or duplicates("nodePools", [p.name for p in node_pools])
        or duplicates("nodeOverlays", [o.name for o in node_overlays])
    )
    return [found] if found else []


def pool_problems(
    node_classes: Sequence[NodeClassSpec],
    node_pools: Sequence[NodePoolSpec],
    feature_gates: Mapping[FeatureGate, bool],
    node_overlays: Sequence[NodeOverlaySpec] = (),
) -> list[str]:
    """What makes pools, their classes and overlays unusable together: an unknown class, the reserved
    capacity type without reservations to launch into or with its gate off, static capacity or overlays
    with their gate off, a Windows pool that allows only arm64 (EKS's Windows AMIs are x86-64). One line
    per problem, each starting with the setting."""
    classes = {c.name: c for c in node_classes}
    problems = []
    if node_overlays and not gate_on(feature_gates, "nodeOverlay"):
        problems.append(
            f"nodeOverlays {', '.join(quoted(o.name) for o in node_overlays)}: Karpenter ignores node "
            "overlays unless controller.featureGates.nodeOverlay is true"
        )
    for pool in node_pools:
        node_class = classes.get(pool.node_class)
        if node_class is None:
            problems.append(
                f"nodePools {quoted(pool.name)} refers to nodeClass {quoted(pool.node_class)}, which is not in "
                f"nodeClasses ({', '.join(sorted(classes))})"
            )
            continue
        capacity_types = pool.listed("karpenter.sh/capacity-type") or []
        if "reserved" in capacity_types:
            if not node_class.capacity_reservation_selector_terms:
                problems.append(
                    f"nodePools {quoted(pool.name)} allows the reserved capacity type, but its nodeClass "
                    f"{quoted(node_class.name)} has no capacityReservationSelectorTerms: it would launch nothing "
                    "reserved"
                )
            if not gate_on(feature_gates, "reservedCapacity"):
                problems.append(
                    f"nodePools {quoted(pool.name)} allows the reserved capacity type, which Karpenter ignores "
                    "while controller.featureGates.reservedCapacity is false"
                )
        architectures = pool.listed("kubernetes.io/arch")
        if node_class.windows and architectures is not None and "amd64" not in architectures:
            problems.append(
                f"nodePools {quoted(pool.name)} uses the Windows nodeClass {quoted(node_class.name)} but allows only "
                "arm64: EKS's Windows AMIs are amd64 only, so it would launch nothing"
            )
    static = [p.name for p in node_pools if p.replicas is not None]
    if static and not gate_on(feature_gates, "staticCapacity"):
        problems.append(
            f"nodePools {', '.join(quoted(n) for n in static)} set replicas (static capacity), which "
            "Karpenter ignores unless controller.featureGates.staticCapacity is true"
        )
    return problems


def ami_problems(node_classes: Sequence[NodeClassSpec], kubernetes_version: str | None) -> list[str]:
    """Every node class's AMI alias has images for the cluster's Kubernetes version (``ami.unavailable_alias``:
    Amazon Linux 2 ends with 1.32, a pinned alias built before EKS released the minor has none); nothing to
    check when the version is not known (None)."""
    if kubernetes_version is None:
        return []
    match = _KUBERNETES_MINOR.fullmatch(kubernetes_version)
    if match is None:
        return [f"kubernetesVersion {quoted(kubernetes_version)} is not of the form 1.NN (e.g. 1.35)"]
    minor = int(match.group(1))
    # own images (no alias): Karpenter does not pick them by Kubernetes version, their kubelet's skew is the
    # user's (the review says so on an upgrade)
    return [
        f"nodeClasses[{i}].{_alias_setting(node_class, problem)}"
        for i, node_class in enumerate(node_classes)
        if node_class.alias is not None
        and (problem := ami.unavailable_alias(node_class.alias, kubernetes_version, minor)) is not None
    ]


def _alias_setting(node_class: NodeClassSpec, problem: str) -> str:
    """``problem`` naming the setting that holds the alias: amiAlias, or the alias term of amiSelectorTerms."""
    return (
        ("amiSelectorTerms[0].alias" + problem.removeprefix("amiAlias")) if node_class.ami_selector_terms else problem
    )


def release_problems(
    node_classes: Sequence[NodeClassSpec],
    node_pools: Sequence[NodePoolSpec],
    node_overlays: Sequence[NodeOverlaySpec],
    feature_gates: Mapping[FeatureGate, bool],
    karpenter_version: str,
) -> list[str]:
    """The feature gates, and the fields and values of the node objects, that the Karpenter release does not know
    (constructs_lib/releases: what its chart and CRDs hold; e.g. consolidationPolicy Balanced before 1.14), each
    named by the setting that writes it."""
    from ..manifests import node_objects
    from ..releases import gate_and_object_problems

    classes, pools, overlays = node_objects(
        node_classes, node_pools, cluster_name="cluster", node_role_name="node-role", node_overlays=node_overlays
    )
    gates, objects = gate_and_object_problems(
        [*classes.values(), *pools.values(), *overlays.values()], feature_gates, karpenter_version
    )
    specs: dict[str, Sequence[Any]] = {
        "EC2NodeClass": node_classes,
        "NodePool": node_pools,
        "NodeOverlay": node_overlays,
    }
    return gates + [_release_problem(p, specs[p.kind]) for p in objects]


_SETTING_OF_KIND = {"EC2NodeClass": "nodeClasses", "NodePool": "nodePools", "NodeOverlay": "nodeOverlays"}
_SELECTOR = re.compile(r"\[key=[^\]]*\]", re.ASCII)


def _release_problem(problem: Any, specs: Sequence[Any]) -> str:
    """A release's refusal of an object field, named by the setting that writes it (``nodePools[1].consolidationPolicy
    = 'Balanced': ...``) where one does, else by the object and its field; with what to do."""
    from .change import change_of, upstream_name, upstream_path

    index = next((i for i, spec in enumerate(specs) if spec.name == problem.name), None)
    where = f"{_SETTING_OF_KIND[problem.kind]}[{index}]"
    setting = None
    if index is not None:
        model = type(specs[index])
        for name, info in model.model_fields.items():
            declared, key = change_of(model, name), info.alias or name
            found = upstream_name(declared, key) if declared is not None else None
            written = _SELECTOR.sub("[]", upstream_path(found)) if found else None
            if written == problem.path and getattr(specs[index], name) is not None:
                setting = f"{where}.{key}"
                break
    fix = "use one of those" if problem.allowed else "remove it"
    if setting is None:
        return f"{where} ({problem.text}); {fix}, or another karpenterVersion"
    value = f" = {quoted(problem.value)}" if problem.allowed else ""
    return f"{setting}{value}: {problem.verdict}; {fix}, or another karpenterVersion"


def chart_value_problems(
    chart_values: Mapping[str, Any],
    karpenter_version: str | None,
    pod_annotations: Iterable[str] = (),
    owners: Mapping[str, str] | None = None,
) -> list[str]:
    """``controller.chartValues`` (``chart_values``) against the release's chart values schema and the values the construct writes
    itself (constructs_lib/karpenter/chart_values.py): an unknown key, a wrong type, or a value a setting writes
    (``owners``: who writes what, by the parameter of release.app_values; the construct's props by default)."""
    from ..chart_values import PROP_OWNERS, problems

    names = PROP_OWNERS if owners is None else owners
    return problems(chart_values, karpenter_version, pod_annotations=pod_annotations, names=names)


def role_name(arn: str) -> str:
    """An IAM role's name (its ARN's last part, without the path): what an EC2NodeClass's spec.role says."""
    return arn.rsplit("/", 1)[-1]


def own_role_classes(
    node_classes: Sequence[NodeClassSpec], own_node_roles: Sequence[str]
) -> dict[str, list[NodeClassSpec]]:
    """Each of ``own_node_roles`` (ARNs) with the classes (of files) whose spec.role names it."""
    return {
        arn: [c for c in node_classes if c.written is not None and c.written["spec"].get("role") == role_name(arn)]
        for arn in own_node_roles
    }


def role_problems(node_classes: Sequence[NodeClassSpec], own_node_roles: Sequence[str] = ()) -> list[str]:
    """A class that names a role of its own (spec.role of a file) names one of ``own_node_roles``; each such role is
    used by classes of one operating system (its access entry is EC2_LINUX or EC2_WINDOWS)."""
    names = {role_name(arn) for arn in own_node_roles}
    problems = [
        f"nodeClasses {quoted(c.name)} names the role {quoted(c.written['spec']['role'])}, which is not among "
        f"own_node_roles ({', '.join(sorted(names)) or 'none'}): the construct authorizes and passes only its node "
        "roles and those"
        for c in node_classes
        if c.written is not None and "role" in c.written["spec"] and c.written["spec"]["role"] not in names
    ]
    for arn, classes in own_role_classes(node_classes, own_node_roles).items():
        systems = sorted({c.operating_system for c in classes})
        if len(systems) > 1:
            problems.append(
                f"own node role {quoted(arn)} is named by Linux and Windows classes "
                f"({', '.join(c.name for c in classes)}): an EKS access entry is EC2_LINUX or EC2_WINDOWS; give each "
                "operating system a role of its own"
            )
    return problems


def user_data_problems(node_classes: Sequence[NodeClassSpec], node_pools: Sequence[NodePoolSpec]) -> list[str]:
    """The user data Karpenter would send to a node of each pool fits EC2's 16 KB: the class's user data with
    Karpenter's part for the pool's labels, taints and the class's kubelet settings (specs/user_data_merged.py);
    one problem per class, naming its largest pool."""
    problems = []
    for node_class in node_classes:
        pools = [p for p in node_pools if p.node_class == node_class.name]
        if not pools:
            continue
        text, kubelet = node_class.user_data_text, node_class.kubelet.manifest()
        sizes = {
            p.name: user_data_merged.size(
                node_class.family, text, kubelet, user_data_merged.pool_of(p, node_class.name)
            )
            for p in pools
        }
        worst = max(sizes, key=lambda name: sizes[name])
        if sizes[worst] > user_data_merged.EC2_USER_DATA_BYTES:
            problems.append(
                f"nodeClasses {quoted(node_class.name)}: the user data Karpenter would send to a node of nodePools "
                f"{quoted(worst)} is {sizes[worst]} bytes (the class's userData, {len((text or '').encode())} bytes, "
                f"and Karpenter's {node_class.family} part with the pool's labels, taints and the class's kubelet "
                "settings): EC2 takes at most "
                f"{user_data_merged.EC2_USER_DATA_BYTES}; shorten the user data or the pool's labels"
            )
    return problems


def delivery_problems(node_classes: Sequence[NodeClassSpec], node_objects: NodeObjects) -> list[str]:
    """Node objects for a GitOps tool (NodeObjects.GITOPS, and HANDOVER, which writes them for the tool to take over)
    are written with every value known at synth: a class whose node role (Windows) or volume key (volumeKmsKey
    create) only a deploy names cannot be written (the first such class)."""
    if node_objects is NodeObjects.STACK:
        return []
    mode = f"(nodeObjects {json.dumps(node_objects.value)})"
    for i, node_class in enumerate(node_classes):
        if node_class.windows:
            return [
                f"nodeClasses[{i}] {quoted(node_class.name)} is a Windows class, whose node role CloudFormation names "
                f"at deploy, which files in git cannot name {mode}: apply Windows classes with the stack (nodeObjects "
                '"stack")'
            ]
        if node_class.creates_volume_key:
            return [
                f'nodeClasses[{i}].volumeKmsKey "create": the key\'s ARN is known only once the stack is deployed, '
                f"which files in git cannot name {mode}: give the ARN of a key you keep"
            ]
    return []


def check_nodes(
    where: str,
    *,
    node_classes: Sequence[NodeClassSpec],
    node_pools: Sequence[NodePoolSpec],
    node_overlays: Sequence[NodeOverlaySpec] = (),
    feature_gates: Mapping[FeatureGate, bool],
    kubernetes_version: str | None = None,
    karpenter_version: str | None = None,
    own_node_roles: Sequence[str] = (),
    controller: ControllerSpec | None = None,
    pod_annotations: Iterable[str] = (),
    node_objects: NodeObjects = NodeObjects.STACK,
) -> None:
    """Every rule of this module, in the order the app's configuration runs them: :class:`NodeSpecsError` with
    the problems of the first rule that finds any (``where``: the construct, as the message names it;
    ``controller``/``pod_annotations``: the controller's settings and the keys of the construct's
    ``controller_pod_annotations``, whose chart values are checked)."""
    problems = (
        name_problems(node_classes, node_pools, node_overlays)
        or role_problems(node_classes, own_node_roles)
        or pool_problems(node_classes, node_pools, feature_gates, node_overlays)
        or ami_problems(node_classes, kubernetes_version)
        or user_data_problems(node_classes, node_pools)
        or delivery_problems(node_classes, node_objects)
        or (
            release_problems(node_classes, node_pools, node_overlays, feature_gates, karpenter_version)
            if karpenter_version is not None
            else []
        )
        or (
            chart_value_problems(controller.chart_values, karpenter_version, pod_annotations)
            if controller is not None
            else []
        )
    )
    if problems:
        raise NodeSpecsError(where, problems)
