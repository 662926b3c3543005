"""Deployed stacks update in place: no logical id of the last release disappears or changes its type
(CloudFormation would replace or delete that resource -- a new VPC, cluster, key or queue)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT
from tests.test_snapshots import all_templates
from tooling.releases.release_logical_ids import logical_ids_of

BASELINE = json.loads((ROOT / "tests" / "release" / "logical-ids.json").read_text())
# "<configuration>:<stack>/<logical id>" -> why that id may change. Empty: every id of the last
# release still stands.
ALLOWED_CHANGES: dict[str, str] = {
    "production:eks-karpenter/ClusterAdminRole047D4FCA": (
        "issue 33: the production profile requires administrators and creates no account-wide admin role; setting "
        "them deletes a deployed production stack's ClusterAdminRole and its mapping, which the synth says in a "
        "warning when the baseline has the role (CHANGELOG, docs/security.md)"
    ),
}


def _current(synthesized) -> dict[str, str]:
    """What `make release-ids` would record for this configuration now."""
    return logical_ids_of(all_templates(synthesized))


def _changed(baseline: dict[str, str], current: dict[str, str], configuration: str) -> dict[str, str]:
    return {
        key: f"{kind} -> {current.get(key, 'gone')}"
        for key, kind in baseline.items()
        if current.get(key) != kind and f"{configuration}:{key}" not in ALLOWED_CHANGES
    }


# configuration -> (at least this many ids, nested stacks included; one id that must be among them)
RECORDED = {
    "default": (100, "eks-karpenter/Cluster9EE0221C"),
    "production": (100, "eks-karpenter/Cluster9EE0221C"),
    "existing": (30, "shared-prod/KarpenterNodeAccessEntry459D4922"),
}


@pytest.mark.parametrize("configuration", sorted(RECORDED))
def test_no_logical_id_of_the_last_release_disappears_or_changes_type(configuration, request):
    baseline = BASELINE["configurations"][configuration]
    current = _current(request.getfixturevalue(configuration))
    at_least, example = RECORDED[configuration]
    assert len(baseline) > at_least and example in baseline
    assert _changed(baseline, current, configuration) == {}
    # every allowed change is a real one (no stale entries)
    allowed_here = {k.partition(":")[2] for k in ALLOWED_CHANGES if k.startswith(f"{configuration}:")}
    assert {k for k in allowed_here if baseline.get(k) != current.get(k) and k in baseline} == allowed_here


def test_the_guard_sees_a_renamed_resource(default):
    current = _current(default)
    renamed = dict(current)
    renamed["eks-karpenter/Cluster9EE0221Cx"] = renamed.pop("eks-karpenter/Cluster9EE0221C")
    assert _changed(current, renamed, "default") == {
        "eks-karpenter/Cluster9EE0221C": "Custom::AWSCDK-EKS-Cluster -> gone"
    }
