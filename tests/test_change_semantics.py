"""Every field of the node specs says what changing it does on a running cluster (constructs_lib/specs/change.py),
and the tables `make review` reads are derived from those declarations."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from constructs_lib.specs.change import Change, change, change_of, undeclared
from constructs_lib.specs.kubelet import KubeletSpec
from constructs_lib.specs.node_class import CLASS_DYNAMIC, NodeClassSpec
from constructs_lib.specs.node_overlay import NodeOverlaySpec
from constructs_lib.specs.node_pool import POOL_BEHAVIORAL, POOL_DYNAMIC, NodePoolSpec
from tooling.kubernetes_schemas import schema

SPECS = (NodePoolSpec, NodeClassSpec, KubeletSpec, NodeOverlaySpec)
# The object each spec's manifest paths are in, by the mirrored CRD schema's name (tooling/schemas/).
OBJECT = {
    NodePoolSpec: "nodepool",
    NodeClassSpec: "ec2nodeclass",
    KubeletSpec: "ec2nodeclass",
    NodeOverlaySpec: "nodeoverlay",
}


def test_every_field_of_the_node_specs_declares_what_changing_it_does():
    missing = [name for spec in SPECS for name in undeclared(spec)]
    assert missing == [], (
        "these fields do not declare what changing them does on a running cluster; add "
        "json_schema_extra=change(Change.<kind>, '<manifest path>', <source>) to their Field: " + ", ".join(missing)
    )


def test_a_field_without_a_declaration_is_found():
    class Spec(BaseModel):
        declared: int = Field(0, json_schema_extra=change(Change.BEHAVIORAL, "spec.weight", "a source"))
        forgotten: int = Field(0, description="no declaration")

    assert undeclared(Spec) == ["Spec.forgotten"]
    assert change_of(Spec, "declared") is not None and change_of(Spec, "declared").change is Change.BEHAVIORAL


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.__name__)
def test_each_declared_manifest_field_is_one_the_crd_has(spec):
    properties = schema("1.14.1", OBJECT[spec])
    unknown = []
    for name in spec.model_fields:
        declared = change_of(spec, name)
        assert declared is not None and declared.source
        node = properties
        for part in declared.manifest.split("."):
            node = node.get("properties", {}).get(part)
            if node is None:
                unknown.append(f"{name}: {declared.manifest}")
                break
    assert unknown == []


def test_the_reviews_drift_tables_are_derived_from_the_declarations():
    """The values `make review` kept by hand before they were derived."""
    assert sorted(POOL_BEHAVIORAL) == sorted(("weight", "limits", "disruption", "replicas"))
    assert POOL_DYNAMIC == ("requirements", "resources")
    assert CLASS_DYNAMIC == (
        "amiSelectorTerms",
        "subnetSelectorTerms",
        "securityGroupSelectorTerms",
        "capacityReservationSelectorTerms",
    )
    from tooling import review

    assert (review.POOL_BEHAVIORAL, review.POOL_DYNAMIC, review.CLASS_DYNAMIC) == (
        POOL_BEHAVIORAL,
        POOL_DYNAMIC,
        CLASS_DYNAMIC,
    )


def test_what_the_declarations_say_of_a_few_fields():
    assert change_of(NodePoolSpec, "weight").change is Change.BEHAVIORAL
    assert change_of(NodePoolSpec, "labels").change is Change.STATIC_DRIFT
    assert change_of(NodePoolSpec, "capacity_types").change is Change.DYNAMIC_DRIFT
    assert change_of(NodePoolSpec, "name").change is Change.REPLACE
    assert change_of(NodeClassSpec, "ami_alias").manifest == "spec.amiSelectorTerms"
    assert change_of(KubeletSpec, "max_pods").change is Change.STATIC_DRIFT
    assert change_of(NodeOverlaySpec, "price").change is Change.BEHAVIORAL
