"""Create/delete order as a dependency graph, upgrades, and interruption wiring."""

from __future__ import annotations

import pytest

from karpenter_stack.config import ConfigError
from tests.cfn import each, kubernetes_objects, only, render_json, resources
from tooling.review.lifecycle_model import depends_transitively, references


def dependency_graph(template: dict) -> dict[str, set[str]]:
    """Logical id -> the resources it depends on (DependsOn, Ref, GetAtt, Sub), i.e. what CloudFormation
    creates before it and deletes after it. A reference to a nested stack's output is an edge to the
    nested stack resource, which holds everything the nested template creates."""
    resources_ = template["Resources"]
    graph = {}
    for logical_id, res in resources_.items():
        deps = res.get("DependsOn", [])
        deps = {deps} if isinstance(deps, str) else set(deps)
        deps |= {r for r in references(res.get("Properties", {})) if r in resources_}
        graph[logical_id] = deps
    return graph


def _lifecycle_nodes(synthesized) -> dict[str, list[str]]:
    template = synthesized.template
    objects = kubernetes_objects(template)
    charts = {r["Properties"]["Release"]: lid for lid, r in resources(template, "Custom::AWSCDK-EKS-HelmChart").items()}
    hosting = resources(template, "Custom::AWSCDK-EKS-FargateProfile") or resources(template, "AWS::EKS::Nodegroup")
    return {
        "NodePool": [o["_logicalId"] for o in objects.values() if o["kind"] == "NodePool"],
        "EC2NodeClass": [o["_logicalId"] for o in objects.values() if o["kind"] == "EC2NodeClass"],
        "aws-auth": [objects["ConfigMap/aws-auth"]["_logicalId"]],
        "controller chart": [charts["karpenter"]],
        "CRD chart": [charts["karpenter-crd"]],
        "controller role": [k for k in resources(template, "AWS::IAM::Role") if k.startswith("ControllerRole")],
        "Karpenter nested stack (node role, policies, queue, rules)": [
            synthesized.stack.resolve(synthesized.stack.karpenter.infra.nested_stack_resource.logical_id)
        ],
        "hosting": list(hosting),
        "cluster": list(resources(template, "Custom::AWSCDK-EKS-Cluster")),
        "VPC": list(resources(template, "AWS::EC2::VPC")),
    }


# (deleted first, deleted after): the first depends on the second.
DELETE_ORDER = [
    ("NodePool", "aws-auth"),
    ("EC2NodeClass", "controller chart"),
    ("EC2NodeClass", "aws-auth"),
    ("controller chart", "CRD chart"),
    ("controller chart", "controller role"),
    ("controller chart", "Karpenter nested stack (node role, policies, queue, rules)"),
    ("controller chart", "hosting"),
    ("controller role", "Karpenter nested stack (node role, policies, queue, rules)"),
    ("controller role", "cluster"),
    ("CRD chart", "cluster"),
    ("hosting", "cluster"),
    ("cluster", "VPC"),
]


@pytest.mark.parametrize("configuration", ["default", "alternative", "production"])
def test_delete_order_is_encoded_in_the_dependency_graph(configuration, request):
    synthesized = request.getfixturevalue(configuration)
    graph = dependency_graph(synthesized.json)
    nodes = _lifecycle_nodes(synthesized)
    missing = [
        f"{first} ({a}) does not depend on {then} ({b})"
        for first, then in DELETE_ORDER
        for a in nodes[first]
        for b in nodes[then]
        if not depends_transitively(graph, a, b)
    ]
    objects = kubernetes_objects(synthesized.template)
    for obj in each(objects.values()):
        if obj["kind"] == "NodePool":  # each pool before the class its nodes were launched from
            node_class = objects[f"EC2NodeClass/{obj['spec']['template']['spec']['nodeClassRef']['name']}"]
            if not depends_transitively(graph, obj["_logicalId"], node_class["_logicalId"]):
                missing.append(f"NodePool {obj['metadata']['name']} does not depend on its EC2NodeClass")
    assert all(nodes.values()), nodes
    assert missing == []


def test_the_graph_helper_sees_missing_edges():
    graph = {"a": {"b"}, "b": set(), "c": set()}
    assert depends_transitively(graph, "a", "b") and not depends_transitively(graph, "a", "c")


def test_a_karpenter_upgrade_changes_exactly_the_chart_versions_and_the_template(karpenter_1_13, default):
    """The default configuration on 1.13.1, then on 1.14.1 (the two imported releases): only the charts' Version and
    the nested template differ."""
    old, new = karpenter_1_13, default
    before, after = old.json["Resources"], new.json["Resources"]
    changed = {k for k in before if before[k] != after.get(k)} | (set(after) - set(before))
    charts = {k for k, r in before.items() if r["Type"] == "Custom::AWSCDK-EKS-HelmChart"}
    nested = new.stack.resolve(new.stack.karpenter.infra.nested_stack_resource.logical_id)
    assert changed == charts | {nested}
    for chart in charts:
        assert before[chart]["Properties"]["Version"] == "1.13.1"
        assert {**before[chart]["Properties"], "Version": "1.14.1"} == after[chart]["Properties"]
        assert after[chart]["DependsOn"] == before[chart]["DependsOn"]
    # the controller chart still waits for the CRD chart, so CRDs are upgraded first
    (crd,) = [c for c in charts if before[c]["Properties"]["Release"] == "karpenter-crd"]
    (controller,) = charts - {crd}
    assert crd in after[controller]["DependsOn"]
    assert old.karpenter_json["Description"].replace("1.13.1", "1.14.1") == new.karpenter_json["Description"]
    assert {k: v for k, v in old.karpenter_json.items() if k != "Description"} == {
        k: v for k, v in new.karpenter_json.items() if k != "Description"
    }


def test_queue_in_the_chart_is_the_queue_the_five_rules_target(default):
    values = render_json(
        only(
            {
                k: r
                for k, r in resources(default.template, "Custom::AWSCDK-EKS-HelmChart").items()
                if r["Properties"]["Release"] == "karpenter"
            }
        )[1]["Properties"]["Values"]
    )
    stack_id = default.stack.resolve(default.stack.karpenter.infra.nested_stack_resource.logical_id)
    output = values["settings"]["interruptionQueue"].removeprefix(f"${{GetAtt:{stack_id}.Outputs.").removesuffix("}")
    queue_source = default.karpenter_json["Outputs"][output]["Value"]
    assert queue_source == {"Fn::GetAtt": ["KarpenterInterruptionQueue", "QueueName"]}
    rules = [r for r in default.karpenter_json["Resources"].values() if r["Type"] == "AWS::Events::Rule"]
    assert len(rules) == 5
    targets = {t["Arn"]["Fn::GetAtt"] for r in rules for t in r["Properties"]["Targets"]}
    assert targets == {"KarpenterInterruptionQueue.Arn"}  # CfnInclude keeps the template's short form


def test_controller_placement_needs_two_zones():
    from aws_cdk import aws_ec2 as ec2  # noqa: F401  (jsii types only)

    from karpenter_stack.cluster_stack import check_controller_placement

    class Subnet:
        def __init__(self, az):
            self.availability_zone = az

    check_controller_placement([Subnet("eu-west-1a"), Subnet("eu-west-1b")], "fargate")
    with pytest.raises(ConfigError) as info:
        check_controller_placement([Subnet("eu-west-1a"), Subnet("eu-west-1a")], "nodegroup")
    assert str(info.value) == (
        "controllerHosting 'nodegroup': the private subnets span 1 availability zone(s) (eu-west-1a); the "
        "Karpenter controller's two replicas need private subnets in at least 2 zones (zone spread, DoNotSchedule)"
    )


@pytest.mark.parametrize("configuration", ["default", "alternative", "production"])
def test_no_kubectl_operation_can_leave_cloudformation_waiting_an_hour(configuration, request):
    """Every manifest, chart and patch answers within 16 minutes or fails with CloudFormation's timeout
    reason; a destroy does not get there: the drain bound ends the drains (tests/test_teardown.py)."""
    synthesized = request.getfixturevalue(configuration)
    from constructs_lib.kubectl_timeouts import KUBECTL_RESOURCE_TYPES

    timeouts = {
        lid: r["Properties"].get("ServiceTimeout")
        for lid, r in synthesized.json["Resources"].items()
        if r["Type"] in KUBECTL_RESOURCE_TYPES
    }
    assert len(timeouts) >= 5 and set(timeouts.values()) == {960}
    pools = [o for o in kubernetes_objects(synthesized.template).values() if o["kind"] == "NodePool"]
    # The running cluster's policy: EKS Auto Mode's bound, not the destroy's.
    assert pools and {p["spec"]["template"]["spec"]["terminationGracePeriod"] for p in pools} == {"24h"}


def test_the_docs_business_hours_drift_budget_is_a_valid_configuration():
    """The upgrade notes (docs/operations.md) suggest this budget; it must pass the configuration model."""
    import json as json_

    from karpenter_stack.config import load_config
    from tests.conftest import ROOT

    operations = (ROOT / "docs" / "operations.md").read_text()
    budget = json_.loads(operations.split("add a budget such as\n  `", 1)[1].split("`", 1)[0])
    pool = load_config({"nodePools": [{"budgets": [{"nodes": "10%"}, budget]}]}).node_pools[0]
    assert [b.model_dump(by_alias=True, exclude_none=True) for b in pool.budgets][1] == {
        "nodes": "0",
        "reasons": ["Drifted"],
        "schedule": "0 8 * * mon-fri",
        "duration": "10h",
    }
