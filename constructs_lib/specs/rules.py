"""Rules across objects: what makes node classes, node pools, node overlays and the controller's feature
gates unusable together. The configuration checks them once, when it is validated."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .base import quoted
from .controller import FeatureGate, gate_on
from .node_class import NodeClassSpec
from .node_overlay import NodeOverlaySpec
from .node_pool import NodePoolSpec


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
