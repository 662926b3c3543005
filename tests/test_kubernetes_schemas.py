"""Every Kubernetes object the app applies, and the controller chart's values, match the schemas of
the Karpenter version they are for (tooling/schemas/karpenter-<version>/)."""

from __future__ import annotations

import copy
import json

import pytest

from karpenter_stack import versions
from tests.cfn import applied_objects, controller_values, each
from tests.conftest import EXAMPLE_FIXTURES
from tooling.kubernetes_schemas import SCHEMAS, object_violations, schema, values_violations
from tooling.releases.chart_render import unknown_values

# configuration -> kinds of the objects it applies (aws-auth is a ConfigMap; an existing cluster's nodes
# join through an access entry instead)
CONFIGURATIONS = {
    "default": {"NodePool", "EC2NodeClass", "ConfigMap"},
    "alternative": {"NodePool", "EC2NodeClass", "ConfigMap"},
    "production": {"NodePool", "EC2NodeClass", "ConfigMap"},
    "existing": {"NodePool", "EC2NodeClass"},
    "pod_identity": {"NodePool", "EC2NodeClass", "ConfigMap"},
    "karpenter_1_13": {"NodePool", "EC2NodeClass", "ConfigMap"},  # against 1.13.1's CRDs and chart
    **{example: {"NodePool", "EC2NodeClass", "ConfigMap"} for example in EXAMPLE_FIXTURES},
    "example_baseline_and_burst": {"NodePool", "EC2NodeClass", "ConfigMap", "NodeOverlay"},
}


def _objects(synthesized) -> dict[str, dict]:
    return {k: {f: v for f, v in o.items() if f != "_logicalId"} for k, o in applied_objects(synthesized).items()}


def _karpenter_objects(synthesized) -> dict[str, dict]:
    return {k: o for k, o in _objects(synthesized).items() if o["apiVersion"].startswith("karpenter")}


def _check(obj: dict, synthesized) -> list[str]:
    return object_violations(obj, synthesized.config.karpenter_version, synthesized.config.kubernetes_version)


@pytest.mark.parametrize("configuration", sorted(CONFIGURATIONS))
def test_every_applied_object_matches_its_schema(configuration, request):
    synthesized = request.getfixturevalue(configuration)
    objects = _objects(synthesized)
    assert {o["kind"] for o in objects.values()} == CONFIGURATIONS[configuration]
    assert [p for o in objects.values() for p in _check(o, synthesized)] == []


@pytest.mark.parametrize("configuration", sorted(CONFIGURATIONS))
def test_controller_values_use_only_keys_the_chart_reads(configuration, request):
    """Against the chart's own values.yaml of the configuration's version (tooling/releases/chart_render.py), and the
    types of the mirrored values schema."""
    synthesized = request.getfixturevalue(configuration)
    values, version = controller_values(synthesized.template), synthesized.config.karpenter_version
    assert unknown_values(values, version) == []
    assert values_violations(values, version) == []


def test_unknown_field_is_reported_with_object_path_and_rule(default):
    node_class = copy.deepcopy(_karpenter_objects(default)["EC2NodeClass/default"])
    ebs = node_class["spec"]["blockDeviceMappings"][0]["ebs"]
    ebs["kmsKeyId"] = "alias/nodes"  # the CRD spells it kmsKeyID
    assert _check(node_class, default) == [
        "EC2NodeClass/default: spec.blockDeviceMappings[0].ebs: additionalProperties rule: "
        "Additional properties are not allowed ('kmsKeyId' was unexpected)"
    ]


def test_enum_pattern_and_required_rules_are_enforced(default):
    pool = copy.deepcopy(_karpenter_objects(default)["NodePool/default"])
    pool["spec"]["disruption"]["consolidationPolicy"] = "Always"
    pool["spec"]["template"]["spec"]["expireAfter"] = "30d"
    del pool["spec"]["template"]["spec"]["nodeClassRef"]["group"]
    assert _check(pool, default) == [
        "NodePool/default: spec.disruption.consolidationPolicy: enum rule: 'Always' is not one of "
        "['WhenEmpty', 'WhenEmptyOrUnderutilized', 'Balanced']",
        "NodePool/default: spec.template.spec.expireAfter: pattern rule: '30d' does not match "
        "'^(([0-9]+(s|m|h))+|Never)$'",
        "NodePool/default: spec.template.spec.nodeClassRef: required rule: 'group' is a required property",
    ]


def test_core_objects_are_checked_against_the_kubernetes_api_schema(default):
    aws_auth = copy.deepcopy(_objects(default)["ConfigMap/aws-auth"])
    aws_auth["dat"] = aws_auth.pop("data")
    assert _check(aws_auth, default) == [
        "ConfigMap/aws-auth: (root): additionalProperties rule: Additional properties are not allowed "
        "('dat' was unexpected)"
    ]


def test_helm_value_typo_is_reported(default):
    values = copy.deepcopy(controller_values(default.template))
    values["settings"]["interruptionqueue"] = values["settings"].pop("interruptionQueue")
    assert values_violations(values, "1.14.1") == [
        "karpenter chart values: settings: additionalProperties rule: Additional properties are not allowed "
        "('interruptionqueue' was unexpected)"
    ]


def test_every_karpenter_version_with_a_template_has_schemas_of_that_version():
    for version in each(versions.available_karpenter_versions()):
        for name in ("nodepool", "ec2nodeclass", "controller-values"):
            assert schema(version, name)["x-upstream"]["version"] == version
    assert sorted(p.name for p in SCHEMAS.iterdir()) == [
        f"karpenter-{v}" for v in versions.available_karpenter_versions()
    ]


def test_the_schemas_are_themselves_valid_json_schema():
    from jsonschema import Draft202012Validator

    for path in each(sorted(SCHEMAS.glob("*/*.schema.json"))):
        Draft202012Validator.check_schema(json.loads(path.read_text()))
