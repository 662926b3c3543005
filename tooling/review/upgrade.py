"""What moving a running cluster between two imported Karpenter releases does, in the deploy's order, from the
release report (tooling/releases/release_report.py: the two releases' rendered charts and CRDs):

1. the ``karpenter-crd`` chart first (the controller chart's custom resource depends on it): the CRDs added,
   removed or changed, and which stored objects a new CEL rule refuses;
2. then the ``karpenter`` chart: the controller's pods restart one at a time, with the chart's new defaults and
   feature gates;
3. the NodePools and EC2NodeClasses are applied afterwards, against the new CRDs (``kubectl apply``; the synth has
   checked them against the chosen release: constructs_lib/releases, and the gate's CRD schema and CEL rules).

A downgrade is explained and blocks until acknowledged: Helm deletes what the older CRD chart does not have (a
CRD, and with it every object of it), and values the older CRDs do not allow stay stored where its controller does
not expect them. A CRD whose storage version the older release does not serve fails the deploy: the API server
cannot read what it stored."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from constructs_lib.karpenter import releases
from tooling.releases import release_report, report_base

_KINDS = ("NodePool", "EC2NodeClass", "NodeOverlay")


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@functools.cache
def _report(old: str, new: str) -> report_base.Report:
    return release_report.compare(report_base.ROOT, old, new)


@dataclass(frozen=True)
class CrdStep:
    effects: list[str]
    downgrade: str | None  # what a downgrade loses (the change blocks until acknowledged), else None
    fails: str | None  # why the API server cannot take it, else None


def _storage(crds: Mapping[str, dict[str, Any]]) -> dict[str, str]:
    """Each CRD's storage version (its name → the version stored in etcd)."""
    return {
        name: next((str(v["name"]) for v in crd["spec"]["versions"] if v.get("storage")), "")
        for name, crd in crds.items()
    }


def crd_step(old: str, new: str, stored: Iterable[Mapping[str, Any]]) -> CrdStep:
    """Step 1: the CRD chart. ``stored``: the Karpenter objects the cluster holds (the deployed template's)."""
    report = _report(old, new)
    effects = [
        f"Karpenter {old} → {new}, step 1 of 2: the `karpenter-crd` chart first (the controller chart waits for it)"
    ]
    effects += [f"CRDs: {c.line().removeprefix('- ')}" for c in report.section("CRD")] or ["CRDs: no change"]
    stored = list(stored)
    effects += _refused_when_stored(stored, new)
    if version_key(new) >= version_key(old):
        return CrdStep(effects, None, None)
    before, after = report_base.load(report_base.ROOT, old), report_base.load(report_base.ROOT, new)
    gone = sorted(set(before.crds) - set(after.crds))
    old_storage, new_storage = _storage(before.crds), _storage(after.crds)
    unserved = [
        f"{name} stores {old_storage[name]}, which {new} does not serve"
        for name in sorted(set(old_storage) & set(new_storage))
        if old_storage[name] not in {str(v["name"]) for v in after.crds[name]["spec"]["versions"] if v.get("served")}
    ]
    if unserved:
        return CrdStep(effects, None, f"a downgrade the API server cannot take: {'; '.join(unserved)}")
    narrowed = [p.text for obj in stored if obj.get("kind") in _KINDS for p in releases.object_problems(obj, new)]
    lost = (
        f"Helm deletes what the {new} chart does not have: the {', '.join(gone)} CRD"
        f"{'s' if len(gone) > 1 else ''} and every object of {'them' if len(gone) > 1 else 'it'} in the cluster; "
        if gone
        else ""
    )
    kept = (
        f"what {new}'s CRDs do not allow stays stored, where its controller does not expect it ({'; '.join(narrowed)}); "
        if narrowed
        else ""
    )
    same = ", ".join(sorted({f"{n.split('.', 1)[0]} {v}" for n, v in new_storage.items() if n in old_storage}))
    return CrdStep(
        effects,
        f"a Karpenter downgrade {old} → {new}: {lost}{kept}every CRD keeps its storage version ({same}), so nothing is "
        "migrated",
        None,
    )


def _refused_when_stored(stored: Iterable[Mapping[str, Any]], new: str) -> list[str]:
    """The stored objects a rule of the new CRDs refuses: kept as stored, but their next update fails."""
    from tooling.cel_rules import KINDS, evaluate

    out = []
    for obj in stored:
        if obj.get("kind") in KINDS:
            for violation in evaluate(dict(obj), new).violations:
                out.append(f"a stored object the {new} CRDs refuse (its next update fails): {violation}")
    return out


def controller_step(old: str, new: str) -> list[str]:
    """Step 2: the controller chart's new defaults and feature gates (the restart itself is said beside it)."""
    report = _report(old, new)
    effects = [f"Karpenter {old} → {new}, step 2 of 2: the `karpenter` chart"]
    effects += [f"new chart default: {c.line().removeprefix('- ')}" for c in report.section("chart value")] or [
        "chart defaults: no change"
    ]
    effects += [f"feature gate: {c.line().removeprefix('- ')}" for c in report.section("feature gate")]
    return effects
