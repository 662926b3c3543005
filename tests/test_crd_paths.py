"""Every field path of Karpenter 1.14.1's NodePool, NodeOverlay and EC2NodeClass CRDs (the project's mirrored
schemas, tooling/schemas/) is either written by the app or listed, with its reason, in
constructs_lib/karpenter/specs/not_exposed.py. What the app writes is found in the objects it emits: the product's
configurations and examples, every move of the transition matrix (each field's examples and modes) and the
configurations this suite holds valid (tests/test_good_configuration.py, tests/test_pool_requirements.py)."""

from __future__ import annotations

import functools

import pytest

from constructs_lib.karpenter.specs.not_exposed import NOT_EXPOSED, not_exposed
from tests.test_good_configuration import GOOD
from tests.test_pool_requirements import UPSTREAM
from tooling.configurations import PRODUCT_CONTEXT
from tooling.releases.crd_paths import KINDS, configurations, crd_paths, objects_of, stale, uncovered, written_paths

VERSION = "1.14.1"


@functools.cache
def _written() -> dict[str, set[str]]:
    suite = [*GOOD.values(), *({"nodePools": [pool]} for pool, _, _ in UPSTREAM.values())]
    settings = [*configurations(), *({**PRODUCT_CONTEXT, **each} for each in suite)]
    return written_paths(objects_of(settings), VERSION)


def test_every_crd_field_path_is_written_or_listed_as_not_exposed():
    missing = uncovered(VERSION, _written())
    assert missing == [], (
        "these CRD field paths are neither written by any configuration the app builds nor listed, with the reason, "
        "in constructs_lib/karpenter/specs/not_exposed.py:\n  " + "\n  ".join(missing)
    )


def test_no_path_listed_as_not_exposed_is_written():
    assert stale(_written()) == [], (
        "the app writes these now: remove them from constructs_lib/karpenter/specs/not_exposed.py"
    )


@pytest.mark.parametrize("kind", KINDS)
def test_each_not_exposed_entry_is_a_field_path_of_the_crd_with_a_reason(kind):
    paths = set(crd_paths(VERSION, kind))
    assert [p for p in NOT_EXPOSED[kind] if p not in paths] == []
    assert all(len(reason) > 20 for reason in NOT_EXPOSED[kind].values())


def test_the_walk_counts_what_the_app_expresses():
    """The numbers issue 31 reports (before it: 39 of 44 NodePool paths, 13 of 15 NodeOverlay, 52 of 80
    EC2NodeClass)."""
    written = _written()
    totals = {kind: len(crd_paths(VERSION, kind)) for kind in KINDS}
    assert totals == {"NodePool": 44, "EC2NodeClass": 80, "NodeOverlay": 15}
    assert {kind: len(written[kind]) for kind in KINDS} == {"NodePool": 42, "EC2NodeClass": 62, "NodeOverlay": 15}


def test_a_missing_path_is_reported_and_a_listed_one_covers_its_children():
    written = {kind: set() for kind in KINDS}
    missing = uncovered(VERSION, written)
    assert "NodePool: spec.template.spec.requirements[].minValues" in missing
    assert "EC2NodeClass: spec.networkInterfaces[].deviceIndex" not in missing
    assert (
        not_exposed("EC2NodeClass", "spec.networkInterfaces[].deviceIndex")
        == NOT_EXPOSED["EC2NodeClass"]["spec.networkInterfaces"]
    )
    assert not_exposed("NodePool", "spec.weight") is None
