"""Every refusal of an object of nodeManifests names the file, the object and its field -- whatever rule refuses it
(a cross-object rule, the chosen release's, the production profile's) -- never a setting the file's author did
not write (karpenter_stack/config/file_messages.py); an entry of the typed settings keeps its setting's name."""

from __future__ import annotations

import pytest

from karpenter_stack.config import ConfigError, load_config

POOL = "tests/fixtures/file-messages/reserved-pool.yaml"
CLASS = "tests/fixtures/file-messages/latest-class.yaml"


def _refusal(**settings) -> str:
    with pytest.raises(ConfigError) as err:
        load_config({"clusterName": "x", **settings})
    return str(err.value)


def test_a_cross_object_rule_names_the_pools_file():
    assert _refusal(nodeManifests=[POOL]) == (
        f"{POOL}: NodePool/batch: allows the reserved capacity type, but its nodeClass 'default' has no "
        "capacityReservationSelectorTerms: it would launch nothing reserved (from cdk.json)"
    )


def test_the_releases_rule_names_the_field_the_file_writes():
    pool = "tests/fixtures/file-messages/reserved-pool.yaml"
    assert _refusal(
        nodeManifests=[pool],
        karpenterVersion="1.13.1",
        nodeClasses=[{"name": "default", "capacityReservationSelectorTerms": [{"id": "cr-0123456789abcdef0"}]}],
    ) == (
        f"{pool}: NodePool/batch: spec.disruption.consolidationPolicy = 'Balanced': Karpenter 1.13.1 (karpenterVersion) "
        "does not allow it (allowed: WhenEmpty, WhenEmptyOrUnderutilized); 1.14.1 allows it; use one of those, or "
        "another karpenterVersion (from cdk.json)"
    )


def test_the_same_rule_names_a_typed_entry_by_its_setting():
    assert _refusal(
        karpenterVersion="1.13.1", nodePools=[{"name": "batch", "consolidationPolicy": "Balanced"}]
    ).startswith("nodePools[0].consolidationPolicy = 'Balanced': Karpenter 1.13.1 (karpenterVersion) does not allow it")


def test_the_production_profiles_rule_names_the_classs_file():
    assert _refusal(
        nodeManifests=[CLASS], profile="production", administrators=["arn:aws:iam::111122223333:role/admins"]
    ) == (
        f"{CLASS}: EC2NodeClass/default: spec.amiSelectorTerms[0].alias 'al2023@latest': the production profile needs "
        "a pinned AMI (e.g. al2023@v20260801), so node images change only when this setting does (from cdk.json)"
    )


def test_a_pool_on_the_built_in_class_the_files_replaced_is_told_why(tmp_path):
    """Found by a newcomer trial: a file's class replaces the built-in default class, and a typed pool on it was
    refused as if the class were missing from nodeClasses."""
    assert _refusal(
        nodeManifests=["tests/fixtures/file-messages/other-class.yaml"], nodePools=[{"name": "general"}]
    ) == (
        "nodePools 'general' uses nodeClass 'default', the built-in class, which is not added because nodeManifests "
        'defines the node classes (batch) and nodeClasses is not set: add {"name": "default"} to nodeClasses, or give '
        "the pool one of the files' classes (from cdk.json)"
    )
