"""Every setting says what changing it does on a running cluster (constructs_lib/karpenter/specs/change.py): the node specs'
fields, the app's settings, the controller's and an existing cluster's; the tables `make review` reads, the
transition matrix and the reference are derived from those declarations, and the matrix checks each against the
review's verdict (`make transitions`)."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field

from constructs_lib.karpenter.release import controller_values
from constructs_lib.karpenter.specs.change import CHANGE_TEXT, Change, change, change_of, undeclared
from constructs_lib.karpenter.specs.controller import ControllerSpec
from constructs_lib.karpenter.specs.kubelet import KubeletSpec
from constructs_lib.karpenter.specs.node_class import CLASS_DYNAMIC, NodeClassSpec
from constructs_lib.karpenter.specs.node_overlay import NodeOverlaySpec
from constructs_lib.karpenter.specs.node_pool import POOL_BEHAVIORAL, POOL_DYNAMIC, NodePoolSpec
from karpenter_stack.config import AppConfig, ExistingClusterConfig, PipelineConfig, WaveSpec, tree
from tooling import review as rv
from tooling.kubernetes_schemas import schema
from tooling.releases.chart_render import kept_versions, unknown_values
from tooling.review import transition_moves as moves
from tooling.review import transitions as tr

SPECS = (NodePoolSpec, NodeClassSpec, KubeletSpec, NodeOverlaySpec)
# ... and every other model of the configuration (the delivery pipeline's: its own stack)
SETTINGS = (AppConfig, ControllerSpec, ExistingClusterConfig, PipelineConfig, WaveSpec)
# The object each spec's manifest paths are in, by the mirrored CRD schema's name (tooling/schemas/).
OBJECT = {
    NodePoolSpec: "nodepool",
    NodeClassSpec: "ec2nodeclass",
    KubeletSpec: "ec2nodeclass",
    NodeOverlaySpec: "nodeoverlay",
}


def test_every_setting_declares_what_changing_it_does():
    """The settings, each object or entry a setting declared 'by field' holds (and the kubelet's); the entries of
    a list field (taints, requirements, budgets, ...) change as their list declares."""
    by_field = {
        tree.child(AppConfig, info.alias)
        for name, info in AppConfig.model_fields.items()
        if change_of(AppConfig, name).change is Change.BY_FIELD
    }
    assert by_field | {AppConfig, KubeletSpec, PipelineConfig, WaveSpec} == {*SPECS, *SETTINGS}
    assert {n.model for n in tree.walk(PipelineConfig)} == {PipelineConfig, WaveSpec}
    missing = [name for spec in (*SPECS, *SETTINGS) for name in undeclared(spec)]
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


def _chart_path(declared) -> list[str] | None:
    return (
        declared.manifest.removeprefix("chart value ").split(".")
        if declared.manifest.startswith("chart value ")
        else None
    )


def test_each_declared_chart_value_is_one_the_chart_has():
    """Settings that write a value of Karpenter's chart name it; it is in the chart's own values.yaml, of each kept
    release (tooling/releases/chart_render.py)."""
    declared = [(m, n, change_of(m, n)) for m in SETTINGS for n in m.model_fields]
    paths = {f"{m.__name__}.{n}": path for m, n, d in declared if (path := _chart_path(d)) is not None}
    assert len(paths) == 10  # the controller's seven, serviceAccount.name, serviceMonitor, podAnnotations
    for version in kept_versions():
        unknown = []
        for name, path in paths.items():
            value: dict = {}
            node = value
            for part in path[:-1]:
                node = node.setdefault(part, {})
            node[path[-1]] = {}  # a leaf of the chart or one of its maps: only the path is checked
            unknown += [f"{name}: {problem}" for problem in unknown_values(value, version)]
        assert unknown == [], version


@pytest.mark.parametrize("name", list(ControllerSpec.model_fields))
def test_a_controller_setting_declared_to_restart_the_controller_changes_its_pod_template(name):
    """The declaration against the mirrored chart rule the review applies (values rendered into the Deployment's
    pod template roll its pods): each controller field, from its default to its first example or mode."""
    declared = change_of(ControllerSpec, name)
    info = ControllerSpec.model_fields[name]
    value = (info.examples or [v for v in moves._literal_values(info.annotation) if v != info.default])[0]
    chart = {"cluster_name": "c", "interruption_queue": "q", "service_account": "karpenter", "role_arn": "r"}
    old = controller_values(**chart, dns_policy="Default")
    new = controller_values(**chart, dns_policy="Default", controller=ControllerSpec(**{name: value}))
    changed = rv._pod_template_changes({"Values": json.dumps(old)}, {"Values": json.dumps(new)})
    assert declared.change is Change.RESTARTS_CONTROLLER
    path = _chart_path(declared)
    if path is None:  # controller.chartValues: any key; its example's values are in the pod template
        assert name == "chart_values"
        assert changed == ["podAnnotations.example.com/team", "settings.vmMemoryOverheadPercent"]
        return
    assert changed and all(c.startswith(".".join(path)) for c in changed), changed


def test_the_service_monitor_is_declared_in_place_and_leaves_the_pod_template_as_it_is():
    chart = {"cluster_name": "c", "interruption_queue": "q", "role_arn": "r", "dns_policy": "Default"}
    old, new = (controller_values(**chart, service_account="karpenter", service_monitor=m) for m in (False, True))
    assert rv._pod_template_changes({"Values": json.dumps(old)}, {"Values": json.dumps(new)}) == []
    assert change_of(AppConfig, "service_monitor").change is Change.IN_PLACE
    renamed = controller_values(**chart, service_account="karpenter-controller")
    assert rv._pod_template_changes({"Values": json.dumps(old)}, {"Values": json.dumps(renamed)}) == [
        "serviceAccount.name"
    ]
    assert change_of(AppConfig, "karpenter_service_account").change is Change.RESTARTS_CONTROLLER


def test_every_kind_has_its_words_in_the_reference():
    assert set(CHANGE_TEXT) == set(Change)


def _outcome(setting, kind, category, rollback="in place", interrupts=False, restarts=False):
    declared = change_of(AppConfig, "cluster_name").__class__(kind, "somewhere", "a source")
    transition = moves.Transition(setting, {}, moves.DEFAULT, "x", declared)
    return tr.Outcome(transition, category, rollback, "", interrupts=interrupts, restarts=restarts)


def test_the_matrix_finds_a_declaration_the_review_contradicts():
    """What `make transitions` reports when a setting declares one thing and the review finds another."""
    assert tr.declaration_problems(_outcome("s", Change.IN_PLACE, "in place")) == []
    assert tr.declaration_problems(_outcome("s", Change.IN_PLACE, "interrupt", interrupts=True)) == [
        "declared 'in-place', review says interrupt"
    ]
    assert tr.declaration_problems(_outcome("s", Change.RESTARTS_CONTROLLER, "in place")) == [
        "declared 'restarts the controller', review says in place"
    ]
    assert tr.declaration_problems(_outcome("s", Change.RESOURCES, "replace", interrupts=True)) == [
        "declared 'adds or removes resources', review says replace, interrupts"
    ]
    assert tr.declaration_problems(_outcome("s", Change.REFUSED, "in place")) == [
        "declared 'refused', review says in place"
    ]
    assert tr.declaration_problems(_outcome("s", Change.NOTHING_DEPLOYED, "refused")) == []  # a refused value
    # per setting: some move interrupts / some allowed step has a refused rollback
    quiet = [_outcome("a", Change.INTERRUPTS, "in place"), _outcome("w", Change.ONE_WAY, "in place")]
    assert tr.setting_problems(quiet) == [
        "a: declared 'interrupts', but the review finds no move that evicts or restarts pods or replaces nodes",
        "w: declared 'one way', but the review finds no step the deploy takes whose rollback is refused",
    ]
    assert tr.setting_problems([_outcome("a", Change.INTERRUPTS, "replace", interrupts=True)]) == []
