"""What Karpenter's disruption controllers do after a deploy changes a NodePool or deletes one: which nodes are
disrupted, at what rate at most, and when. The review says it beside each change of a pool or class; the transition
matrix checks the review's verdict on every node pool move against :func:`disrupts` (tooling/review/transitions.py).

The rules, from Karpenter 1.14.1 (core at 6e7eab7a0f48, ``../shared/upstream/karpenter-v1.14.1/source/core``):

* Budgets (``pkg/apis/v1/nodepool.go``, ``GetAllowedDisruptionsByReason``, ``Budget.GetAllowedDisruptions``,
  ``IsActive``): the nodes disrupted at once for a reason are the least of the active budgets that name the reason or
  name none; a percentage is of the pool's nodes, rounded up; a budget with a schedule is active from each cron hit
  (UTC) for its duration, and otherwise does not count. The CRD defaults ``budgets`` to ``[{nodes: 10%}]``.
* Budgets limit drift, emptiness and consolidation only; expiry and a deleted pool's nodes are not limited by them
  (docs/concepts/disruption.md, "NodePool Disruption Budgets", "Expiration", "NodePool Deletion": NodeClaims are
  owned by their pool and deleted with it, by cascading deletion).
* Consolidation (``pkg/controllers/disruption/consolidation.go``, ``emptiness.go``, ``balanced.go``):
  ``WhenEmpty`` removes empty nodes only; ``WhenEmptyOrUnderutilized`` also deletes or replaces underutilized ones;
  ``Balanced`` (1.14) does that only where the saving outweighs the disruption; a node is a candidate once
  ``consolidateAfter`` has passed since its last pod change; ``Never`` turns consolidation off.
* ``expireAfter`` is part of the node template (drift); the replacements get the new value, and each node then
  drains when it is that old, whatever the budgets (docs: "Expiration").
* Limits and weight decide what Karpenter launches next; lowering a limit removes no node (docs/concepts/nodepools.md,
  "spec.limits").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from constructs_lib.karpenter.quantities import parse_quantity

REASONS = ("Drifted", "Underutilized", "Empty")
# The CRD's defaults of what this model reads (Karpenter 1.14.1 karpenter.sh_nodepools.yaml; the tests hold them to
# the vendored CRD mirror).
DEFAULTS = {
    "consolidationPolicy": "WhenEmptyOrUnderutilized",
    "consolidateAfter": "0s",
    "budgets": [{"nodes": "10%"}],
    "expireAfter": "720h",
}
# Which nodes each policy may consolidate: empty ones, or underutilized ones too (Balanced: where it pays off).
_REACH = {"WhenEmpty": 1, "Balanced": 2, "WhenEmptyOrUnderutilized": 3}
_DURATION = re.compile(r"([0-9]+)(h|m|s)")


def disruption(pool: Mapping[str, Any]) -> dict[str, Any]:
    """What a NodePool object says of disruption, the CRD's defaults filled in where it is silent."""
    spec = pool.get("spec", {})
    given = spec.get("disruption")
    block = dict(given) if isinstance(given, dict) else {"consolidateAfter": DEFAULTS["consolidateAfter"]}
    node = spec.get("template", {}).get("spec", {})
    return {
        "consolidationPolicy": block.get("consolidationPolicy", DEFAULTS["consolidationPolicy"]),
        "consolidateAfter": block.get("consolidateAfter", DEFAULTS["consolidateAfter"]),
        "budgets": block.get("budgets", DEFAULTS["budgets"]),
        "expireAfter": node.get("expireAfter", DEFAULTS["expireAfter"]),
        "terminationGracePeriod": node.get("terminationGracePeriod"),
        "limits": spec.get("limits") or {},
        "weight": spec.get("weight"),
    }


def seconds(duration: str) -> float:
    """A Go duration of hours, minutes and seconds (the CRD's pattern), or Never (infinite)."""
    if duration == "Never":
        return float("inf")
    return float(sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in _DURATION.findall(duration)))


def _zero(nodes: Any) -> bool:
    return str(nodes) in ("0", "0%")


def _applies(budget: Mapping[str, Any], reason: str) -> bool:
    return budget.get("reasons") is None or reason in budget["reasons"]


def allowed(budgets: Sequence[Mapping[str, Any]], reason: str) -> bool:
    """Whether the budgets ever let Karpenter disrupt a node for ``reason``: not when a budget without a schedule
    that applies to it allows 0 nodes."""
    return not any(_applies(b, reason) and "schedule" not in b and _zero(b["nodes"]) for b in budgets)


def rate(budgets: Sequence[Mapping[str, Any]], reason: str) -> str:
    """At most how many of a pool's nodes Karpenter disrupts at once for ``reason``, in words."""
    applying = [b for b in budgets if _applies(b, reason)]
    if not allowed(budgets, reason):
        return "none (a budget of 0 nodes applies)"
    always = [str(b["nodes"]) for b in applying if "schedule" not in b]
    windows = [b for b in applying if "schedule" in b]
    text = _least(always) if always else "no limit from the budgets"
    for b in windows:
        during = f"during '{b['schedule']}' (UTC) for {b['duration']}"
        text += f"; {'none' if _zero(b['nodes']) else _least([*always, str(b['nodes'])])} {during}"
    return text


def _least(values: Sequence[str]) -> str:
    def shown(value: str) -> str:
        return f"{value} of its nodes (rounded up)" if value.endswith("%") else f"{value} node{'s' * (value != '1')}"

    unique = list(dict.fromkeys(values))
    return shown(unique[0]) + " at a time" if len(unique) == 1 else "the least of " + ", ".join(map(shown, unique))


def drift_effect(pool: str, settings: Mapping[str, Any], which: str) -> str:
    """Nodes of ``pool`` drift (``which``: 'all nodes' or 'nodes ... that no longer ...'): when and how fast."""
    budgets = settings["budgets"]
    if not allowed(budgets, "Drifted"):
        return f"{which} drift, but its budgets allow no Drifted disruption: Karpenter keeps them until a budget does"
    return (
        f"{which} will be replaced by drift, starting right after the deploy, at most "
        f"{rate(budgets, 'Drifted')} (its disruption budgets for Drifted)"
    )


def deleted_effect(pool: str, settings: Mapping[str, Any]) -> str:
    grace = settings["terminationGracePeriod"]
    bound = (
        f"each drain bounded by its terminationGracePeriod {grace}"
        if grace
        else ("each drain waiting for every PodDisruptionBudget without bound (no terminationGracePeriod)")
    )
    return (
        f"NodePool `{pool}` is deleted: Karpenter drains and terminates all its nodes at once (a deleted pool's nodes "
        f"are deleted with it; its disruption budgets do not apply), {bound}"
    )


def pool_effects(pool: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What Karpenter's disruption controllers do after ``old`` becomes ``new`` besides drift (which the caller says
    with :func:`drift_effect`): consolidation, budgets, expiry, limits, weight."""
    a, b = disruption(old), disruption(new)
    effects: list[str] = []
    effects += _consolidation(pool, a, b)
    effects += _budgets(pool, a, b)
    if seconds(b["expireAfter"]) < seconds(a["expireAfter"]):
        effects.append(
            f"NodePool `{pool}` (expireAfter {a['expireAfter']} → {b['expireAfter']}): each node launched from now on "
            f"drains when it is {b['expireAfter']} old, whatever the budgets (expiry is forceful; nodes launched "
            "together expire together); running nodes keep their own expireAfter until they are replaced"
        )
    effects += _limits(pool, a["limits"], b["limits"])
    if a["weight"] != b["weight"]:
        effects.append(
            f"NodePool `{pool}` (weight {a['weight'] or 0} → {b['weight'] or 0}): new nodes come from pools in "
            "weight order; no running node is removed for it"
        )
    return effects


def _limits(pool: str, old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    """A pool's limits bound what Karpenter launches for it, never what runs, and a resource without a limit is not
    bounded (karpenter core 1.14.1 pkg/apis/v1/nodepool.go, Limits.ExceededBy checks only the resources listed): a
    limit lowered or added holds new nodes back, one raised or removed lets the pool grow."""
    moved = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    grows = [k for k in moved if k not in new or (k in old and _quantity(new[k]) > _quantity(old[k]))]
    held = [k for k in moved if k not in grows]

    def changes(keys: list[str]) -> str:
        return ", ".join(f"{k} {old.get(k, 'none')} → {new.get(k, 'none')}" for k in keys)

    effects = []
    if held:
        effects.append(
            f"NodePool `{pool}` (limits {changes(held)}): Karpenter launches nothing beyond the new limits; no running "
            "node is removed for them"
        )
    if grows:
        unbounded = [k for k in grows if k not in new]
        effects.append(
            f"NodePool `{pool}` (limits {changes(grows)}): the pool may grow beyond the old limits"
            + (f" ({', '.join(unbounded)}: no limit at all now)" if unbounded else "")
            + "; no running node is affected"
        )
    return effects


def _quantity(value: Any) -> Decimal:
    """A limit's value (a quantity string, or a number as YAML and JSON give it); one that is no quantity counts as
    none larger (the CRD refuses it before Karpenter reads it)."""
    try:
        return parse_quantity(str(value))
    except ValueError:
        return Decimal("-Infinity")


def _consolidates(settings: Mapping[str, Any], reason: str = "Underutilized") -> int:
    """How far the pool consolidates (0: not at all; 1: empty nodes; 2, 3: underutilized ones too)."""
    if settings["consolidateAfter"] == "Never":
        return 0
    reach = _REACH.get(settings["consolidationPolicy"], 3)
    return reach if allowed(settings["budgets"], reason if reach > 1 else "Empty") else 0


def _consolidation(pool: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    before, after = _consolidates(a), _consolidates(b)
    what = f"consolidationPolicy {b['consolidationPolicy']}, consolidateAfter {b['consolidateAfter']}"
    changed = [f"{key} {a[key]} → {b[key]}" for key in ("consolidationPolicy", "consolidateAfter") if a[key] != b[key]]
    if after > before:
        nodes = "empty nodes" if after == 1 else "empty and underutilized nodes"
        reason = "Empty" if after == 1 else "Underutilized"
        return [
            f"NodePool `{pool}` ({', '.join(changed) or what}): Karpenter starts consolidating its {nodes} right "
            f"after the deploy: each, {b['consolidateAfter']} after its last pod change, drains and is removed or "
            f"replaced by a cheaper node, at most {rate(b['budgets'], reason)}"
        ]
    if after < before:
        return [
            f"NodePool `{pool}` ({', '.join(changed)}): Karpenter consolidates fewer of its nodes; none is removed for it"
        ]
    if changed and after:
        sooner = seconds(b["consolidateAfter"]) < seconds(a["consolidateAfter"])
        return [
            f"NodePool `{pool}` ({', '.join(changed)}): nodes become candidates for consolidation "
            f"{'sooner' if sooner else 'later'} after a pod change; no node is removed for the change itself"
        ]
    return []


def _budgets(pool: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    if a["budgets"] == b["budgets"]:
        return []
    effects = []
    for reason in REASONS:
        was, now = allowed(a["budgets"], reason), allowed(b["budgets"], reason)
        if not was and now and reason == "Drifted":
            effects.append(
                f"NodePool `{pool}` (budgets): Drifted disruptions were blocked: its nodes that drifted meanwhile "
                f"(an AMI release, a changed class) will be replaced by drift right after the deploy, at most "
                f"{rate(b['budgets'], reason)}"
            )
        elif not was and now and _consolidates(b, reason):
            effects.append(
                f"NodePool `{pool}` (budgets): {reason} disruptions were blocked: Karpenter resumes consolidating "
                f"its {'empty' if reason == 'Empty' else 'underutilized'} nodes right after the deploy (each drains), "
                f"at most {rate(b['budgets'], reason)}"
            )
        elif was and not now:
            effects.append(f"NodePool `{pool}` (budgets): no {reason} disruption from now on")
        elif rate(a["budgets"], reason) != rate(b["budgets"], reason):
            effects.append(
                f"NodePool `{pool}` (budgets, {reason}): at most {rate(a['budgets'], reason)} → "
                f"{rate(b['budgets'], reason)}"
            )
    return effects


def refused_labels(old: dict[str, Any], new: dict[str, Any]) -> list[str] | None:
    """The node labels (``key=value``) the new requirements refuse and the old ones allowed, where every change of the
    requirements removes values from an ``In`` or adds values to a ``NotIn`` of a key both name, with the same
    operator and minValues, or drops a requirement: a node carrying such a label drifts, and no other (karpenter core
    1.14.1 pkg/controllers/nodeclaim/disruption/drift.go, areRequirementsDrifted: the NodeClaim's labels must stay
    compatible with the pool's requirements; the 1.14 disruption docs' example: In [m5.large] → In [m5.large,
    m5.2xlarge] drifts no m5.large node). ``[]``: the requirements only widen (values added to an ``In``, removed
    from a ``NotIn``, a requirement dropped); None: any other change, whose nodes are told by their labels."""
    before = {r.get("key"): r for r in old.get("requirements", [])}
    after = {r.get("key"): r for r in new.get("requirements", [])}
    if not after.keys() <= before.keys():  # a requirement on a new key: which nodes it refuses is their labels'
        return None
    refused = []
    for key, b in after.items():
        a = before[key]
        if {k: v for k, v in a.items() if k != "values"} != {k: v for k, v in b.items() if k != "values"}:
            return None
        if b.get("operator") == "In":
            refused += [f"{key}={v}" for v in a.get("values", []) if v not in b.get("values", [])]
        elif b.get("operator") == "NotIn":
            refused += [f"{key}={v}" for v in b.get("values", []) if v not in a.get("values", [])]
        elif a != b:
            return None
    return refused


def disrupts(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, drifts: bool) -> bool:
    """Whether Karpenter disrupts running nodes of the pool after ``old`` becomes ``new`` (None: absent): the pool
    deleted; its nodes drifted (``drifts``: its template changed, or its class's spec) while budgets allow Drifted;
    consolidation widened; blocked Drifted or consolidation disruptions released by its budgets."""
    if new is None:
        return old is not None
    if old is None:
        return False
    a, b = disruption(old), disruption(new)
    if drifts and allowed(b["budgets"], "Drifted"):
        return True
    if _consolidates(b) > _consolidates(a):
        return True
    released = [r for r in REASONS if not allowed(a["budgets"], r) and allowed(b["budgets"], r)]
    return "Drifted" in released or any(_consolidates(b, r) for r in released if r != "Drifted")
