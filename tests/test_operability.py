"""Operability switches: demo workload, ServiceMonitor, interruption-queue alarms (the CI example: tests/test_workflows.py)."""

from __future__ import annotations

import pytest

from tests.cfn import controller_values, kubernetes_objects, render, resources
from tests.conftest import synth
from tests.test_lifecycle import dependency_graph, depends_transitively
from tooling.kubernetes_schemas import object_violations
from tooling.releases.chart_render import unknown_values

TOPIC = f"arn:aws:sns:eu-west-1:{'1' * 12}:karpenter-alerts"
CONTROLLER = {
    "featureGates": {"spotToSpotConsolidation": True, "nodeRepair": True},
    "batchMaxDuration": "20s",
    "batchIdleDuration": "2s",
    "zonalShift": True,
    "logLevel": "debug",
    "cpu": "2",
    "memory": "2Gi",
}
OPS = {
    "demoWorkload": True,
    "serviceMonitor": True,
    "interruptionQueueAlarms": True,
    "alarmTopicArn": TOPIC,
    "controller": CONTROLLER,
}


@pytest.fixture(scope="module")
def ops():
    return synth(**OPS)


def test_switches_are_off_by_default(default):
    assert "Deployment/inflate" not in kubernetes_objects(default.template)
    assert "serviceMonitor" not in controller_values(default.template)
    default.template.resource_count_is("AWS::CloudWatch::Alarm", 0)


def test_demo_workload_is_a_zero_replica_pause_deployment_applied_after_the_node_pools(ops):
    objects = kubernetes_objects(ops.template)
    demo = objects["Deployment/inflate"]
    assert demo["spec"]["replicas"] == 0
    (container,) = demo["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "public.ecr.aws/eks-distro/kubernetes/pause:3.7"
    assert container["resources"] == {"requests": {"cpu": "1"}}
    assert demo["metadata"]["namespace"] == "default"
    graph = dependency_graph(ops.json)
    assert depends_transitively(graph, demo["_logicalId"], objects["NodePool/default"]["_logicalId"])
    manifest = {k: v for k, v in demo.items() if k != "_logicalId"}
    assert object_violations(manifest, ops.config.karpenter_version, ops.config.kubernetes_version) == []
    # like every manifest, it cannot leave CloudFormation waiting an hour
    assert ops.json["Resources"][demo["_logicalId"]]["Properties"]["ServiceTimeout"] == 960


def test_service_monitor_switch(ops):
    values = controller_values(ops.template)
    assert values["serviceMonitor"] == {"enabled": True}
    assert unknown_values(values, ops.config.karpenter_version) == []


def test_controller_settings_reach_the_charts_values(ops, default):
    values = controller_values(ops.template)
    assert {k: v for k, v in values["settings"].items() if k not in ("clusterName", "interruptionQueue")} == {
        "featureGates": {"spotToSpotConsolidation": True, "nodeRepair": True},
        "batchMaxDuration": "20s",
        "batchIdleDuration": "2s",
        "enableZonalShift": True,
    }
    assert values["logLevel"] == "debug"
    assert values["controller"]["resources"] == {
        "requests": {"cpu": "2", "memory": "2Gi"},
        "limits": {"cpu": "2", "memory": "2Gi"},
    }
    assert unknown_values(values, ops.config.karpenter_version) == []  # every key one of the chart's values.yaml
    # unset, nothing is written: the chart's defaults stand and a deployed release's values do not change
    standard = controller_values(default.template)
    assert sorted(standard["settings"]) == ["clusterName", "interruptionQueue"] and "logLevel" not in standard
    assert unknown_values(
        {**standard, "settings": {**standard["settings"], "featureGates": {"drift": True}}},
        ops.config.karpenter_version,
    ) == ["settings.featureGates.drift: not a value of the karpenter chart 1.14.1 (its values.yaml)"]


def test_interruption_queue_alarms_watch_the_karpenter_queue_and_notify_the_topic(ops):
    alarms = {
        r["Properties"]["MetricName"]: r["Properties"]
        for r in resources(ops.template, "AWS::CloudWatch::Alarm").values()
    }
    assert sorted(alarms) == ["ApproximateAgeOfOldestMessage", "ApproximateNumberOfMessagesVisible"]
    stack_id = ops.stack.resolve(ops.stack.karpenter.infra.nested_stack_resource.logical_id)
    for props in alarms.values():
        assert props["Namespace"] == "AWS/SQS"
        (dimension,) = props["Dimensions"]
        assert dimension["Name"] == "QueueName"
        output = render(dimension["Value"]).removeprefix(f"${{GetAtt:{stack_id}.Outputs.").removesuffix("}")
        assert ops.karpenter_json["Outputs"][output]["Value"] == {
            "Fn::GetAtt": ["KarpenterInterruptionQueue", "QueueName"]
        }
        assert props["AlarmActions"] == [TOPIC] and props["OKActions"] == [TOPIC]
        assert props["TreatMissingData"] == "notBreaching"
    assert alarms["ApproximateNumberOfMessagesVisible"]["Threshold"] == 10
    assert alarms["ApproximateAgeOfOldestMessage"]["Threshold"] == 60


def test_alarm_topic_needs_the_alarms():
    from karpenter_stack.config import ConfigError, load_config

    with pytest.raises(ConfigError) as info:
        load_config({"alarmTopicArn": TOPIC})
    assert str(info.value) == (
        "alarmTopicArn is set but interruptionQueueAlarms is false; set interruptionQueueAlarms=true (from cdk.json)"
    )
    with pytest.raises(ConfigError) as info:
        load_config({"interruptionQueueAlarms": True, "alarmTopicArn": "karpenter-alerts"})
    assert str(info.value) == (
        'alarmTopicArn = "karpenter-alerts": must be an SNS topic ARN like arn:aws:sns:<region>:<account>:<topic> (from cdk.json)'
    )
