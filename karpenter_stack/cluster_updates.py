"""What a running cluster refuses to become: the rules of aws-cdk's cluster handler and of EKS for an update of
the cluster resource, mirrored once here for the synth (against your deployed baseline), ``make review`` and the
tests.

Sources: aws-cdk-lib 2.275's bundled ``custom-resource-handlers/dist/aws-eks/cluster-resource-handler``
(``onUpdate``/``analyzeUpdate``: authentication modes go unset -> API_AND_CONFIG_MAP -> API, one step per
deploy, never back; one kind of update per deploy) and the EKS User Guide ("Update existing cluster to new
Kubernetes version": one minor at a time, never down).
"""

from __future__ import annotations

from typing import Any

# How far along the one-way path an authentication mode is (unset is CONFIG_MAP).
AUTH_ORDER: dict[str | None, int] = {None: 0, "CONFIG_MAP": 0, "API_AND_CONFIG_MAP": 1, "API": 2}


def auth_mode_refusal(old: str | None, new: str | None) -> str | None:
    """Why the handler refuses moving the cluster from authentication mode ``old`` to ``new`` (None: allowed)."""
    if old == new:
        return None
    if old == "API":
        return f"Cannot fallback authenticationMode from API to {new}"
    if old == "API_AND_CONFIG_MAP" and new == "CONFIG_MAP":
        return "Cannot fallback authenticationMode from API_AND_CONFIG_MAP to CONFIG_MAP"
    if old is not None and new is None:
        return "Cannot fallback authenticationMode from defined to undefined"
    if old is None and new == "API":
        return "Cannot update from undefined(CONFIG_MAP) to API"
    if old == "CONFIG_MAP" and new == "API":
        return "Cannot update from CONFIG_MAP to API"
    return None


def auth_mode_sequence(old: str | None, new: str | None) -> str:
    """The safe way from ``old`` to ``new`` when the direct step is refused."""
    if AUTH_ORDER.get(new, 0) > AUTH_ORDER.get(old, 0):
        return "first deploy API_AND_CONFIG_MAP alone, then API"
    return "EKS never moves a cluster back: keep the current mode"


def version_step_refusal(old: Any, new: Any) -> str | None:
    """Why EKS refuses a Kubernetes version change (``None`` when it does not): one minor up at a time, never down."""
    if not (isinstance(old, str) and isinstance(new, str)) or old == new:
        return None
    try:
        (a_major, a_minor), (b_major, b_minor) = (tuple(int(x) for x in v.split(".")[:2]) for v in (old, new))
    except ValueError:
        return None
    if (b_major, b_minor) < (a_major, a_minor):
        return f"version {old} → {new}: EKS never downgrades a cluster"
    if b_major == a_major and b_minor > a_minor + 1:
        return (
            f"version {old} → {new}: EKS upgrades one minor version at a time ({old} → {a_major}.{a_minor + 1} first)"
        )
    return None
