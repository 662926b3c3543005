"""Karpenter's Helm charts and the EC2NodeClass/NodePool manifests, and the names that must agree
across AWS, Helm and Kubernetes."""

from __future__ import annotations

from constructs_lib.karpenter.names import DISCOVERY_TAG_KEY
from tests.cfn import controller_values, depends_on, each, kubernetes_objects, render_json, resources


def _charts(synth) -> dict[str, tuple[str, dict]]:
    """Release name -> (logical id, properties)."""
    return {
        res["Properties"]["Release"]: (lid, res["Properties"])
        for lid, res in resources(synth.template, "Custom::AWSCDK-EKS-HelmChart").items()
    }


def _nested_source(synth, placeholder: str):
    """The nested-template expression behind ${GetAtt:<nested stack>.Outputs.X}."""
    stack_id = synth.stack.resolve(synth.stack.karpenter.infra.nested_stack_resource.logical_id)
    prefix = f"${{GetAtt:{stack_id}.Outputs."
    assert placeholder.startswith(prefix), f"{placeholder} is not an output of the Karpenter nested stack"
    return synth.karpenter_json["Outputs"][placeholder[len(prefix) : -1]]["Value"]


# --- Helm --------------------------------------------------------------------------------------


def test_crd_chart_then_controller_chart_from_ecr_public_pinned(default):
    charts = _charts(default)
    assert set(charts) == {"karpenter-crd", "karpenter"}
    crd_id, crd = charts["karpenter-crd"]
    controller_id, controller = charts["karpenter"]
    assert (crd["Repository"], crd["Version"], crd["Namespace"]) == (
        "oci://public.ecr.aws/karpenter/karpenter-crd",
        "1.14.1",
        "kube-system",
    )
    assert (controller["Repository"], controller["Version"], controller["Namespace"]) == (
        "oci://public.ecr.aws/karpenter/karpenter",
        "1.14.1",
        "kube-system",
    )
    assert controller["SkipCrds"] is True
    assert crd_id in depends_on(default.json, controller_id)


def test_the_controller_chart_waits_and_helm_times_out_before_the_handler_lambda(default):
    charts = _charts(default)
    assert charts["karpenter"][1]["Wait"] is True
    assert "Wait" not in charts["karpenter-crd"][1]  # no pods to wait for
    for _, props in charts.values():
        assert props["Timeout"] == "720s"  # 12 min < the kubectl handler's 15 min


def test_kube_system_is_not_created_but_a_custom_namespace_is(default, alternative):
    assert all("CreateNamespace" not in props for _, props in _charts(default).values())
    assert _charts(alternative)["karpenter-crd"][1]["CreateNamespace"] is True
    assert _charts(alternative)["karpenter"][1]["Namespace"] == "karpenter"


def test_controller_values(default):
    controller_role = next(k for k in resources(default.template, "AWS::IAM::Role") if k.startswith("ControllerRole"))
    values = controller_values(default.template)
    queue = values["settings"].pop("interruptionQueue")
    assert values == {
        "serviceAccount": {
            "create": True,
            "name": "karpenter",
            "annotations": {"eks.amazonaws.com/role-arn": f"${{GetAtt:{controller_role}.Arn}}"},
        },
        "settings": {"clusterName": "eks-karpenter"},
        "podAnnotations": {
            "karpenter-stack.cdk/controller-credentials": "irsa",  # a switch rolls the pods
            "karpenter-stack.cdk/kubernetes-version": "1.36",  # on Fargate, an upgrade rolls them
        },
        "replicas": 2,
        "podDisruptionBudget": {"name": "karpenter", "maxUnavailable": 1},
        "priorityClassName": "system-cluster-critical",
        "dnsPolicy": "Default",  # the VPC's resolver: the controller never waits for CoreDNS
        "controller": {
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
            "env": [{"name": "AWS_REGION", "value": "${Ref:AWS::Region}"}],
        },
    }
    assert queue.startswith("${GetAtt:")


def test_nodegroup_hosting_tolerates_the_system_taint(alternative):
    _, nodegroup = next(iter(resources(alternative.template, "AWS::EKS::Nodegroup").items()))
    taint_keys = {t["Key"] for t in nodegroup["Properties"]["Taints"]}
    assert controller_values(alternative.template)["tolerations"] == [
        {"key": "CriticalAddonsOnly", "operator": "Exists"}
    ]
    assert taint_keys == {"CriticalAddonsOnly"}
    assert controller_values(alternative.template)["dnsPolicy"] == "Default"


# --- manifests ---------------------------------------------------------------------------------


def test_default_ec2_node_class(default):
    node_class = kubernetes_objects(default.template)["EC2NodeClass/default"]
    role = node_class["spec"].pop("role")
    assert node_class["apiVersion"] == "karpenter.k8s.aws/v1"
    assert node_class["spec"] == {
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {DISCOVERY_TAG_KEY: "eks-karpenter"}}],
        "securityGroupSelectorTerms": [{"tags": {DISCOVERY_TAG_KEY: "eks-karpenter"}}],
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "required",
        },
        "blockDeviceMappings": [
            {
                "deviceName": "/dev/xvda",
                "ebs": {"volumeSize": "50Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True},
            }
        ],
    }
    assert _nested_source(default, role) == {"Ref": "KarpenterNodeRole"}


def test_default_node_pool(default):
    pool = kubernetes_objects(default.template)["NodePool/default"]
    del pool["_logicalId"]
    assert pool == {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
                        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
                        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]},
                    ],
                    "expireAfter": "720h",
                    "terminationGracePeriod": "24h",
                }
            },
            "limits": {"cpu": "1000", "memory": "1000Gi"},
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": "1m",
                "budgets": [{"nodes": "10%"}],
            },
        },
    }


def test_several_pools_and_classes(alternative):
    objects = kubernetes_objects(alternative.template)
    assert sorted(k for k in objects if k.split("/")[0] in ("NodePool", "EC2NodeClass")) == [
        "EC2NodeClass/default",
        "EC2NodeClass/large-disk",
        "NodePool/on-demand",
        "NodePool/spot",
    ]
    on_demand = objects["NodePool/on-demand"]["spec"]
    spot = objects["NodePool/spot"]["spec"]
    assert "weight" not in on_demand and spot["weight"] == 50
    assert on_demand["template"]["spec"]["requirements"][0]["values"] == ["on-demand"]
    assert on_demand["template"]["spec"]["expireAfter"] == "168h"
    assert on_demand["disruption"] == {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "5m",
        "budgets": [{"nodes": "10%"}],
    }
    assert on_demand["limits"] == {"cpu": "64", "memory": "256Gi"}
    assert spot["template"]["spec"]["nodeClassRef"]["name"] == "large-disk"
    assert spot["template"]["spec"]["requirements"][3:] == [
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"]},
        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["5"]},
    ]
    assert spot["disruption"]["budgets"] == [{"nodes": "20%"}, {"nodes": "0"}]
    assert objects["EC2NodeClass/default"]["spec"]["amiSelectorTerms"] == [{"alias": "al2023@v20260801"}]
    large = objects["EC2NodeClass/large-disk"]["spec"]["blockDeviceMappings"][0]["ebs"]
    assert large["volumeSize"] == "200Gi" and large["encrypted"] is True


def test_every_karpenter_object_depends_on_both_charts(default, alternative):
    for synth in (default, alternative):
        chart_ids = {lid for lid, _ in _charts(synth).values()}
        for key, obj in each(kubernetes_objects(synth.template).items()):
            if obj["apiVersion"].startswith("karpenter"):
                assert chart_ids <= set(depends_on(synth.json, obj["_logicalId"])), key


def test_every_node_pool_depends_on_its_node_class(alternative):
    objects = kubernetes_objects(alternative.template)
    for key, obj in each(objects.items()):
        if obj["kind"] == "NodePool":
            node_class = objects[f"EC2NodeClass/{obj['spec']['template']['spec']['nodeClassRef']['name']}"]
            assert node_class["_logicalId"] in depends_on(alternative.json, obj["_logicalId"]), key


# --- names that cross boundaries ---------------------------------------------------------------


def test_queue_in_helm_values_is_the_nested_templates_queue(default):
    source = _nested_source(default, controller_values(default.template)["settings"]["interruptionQueue"])
    assert source == {"Fn::GetAtt": ["KarpenterInterruptionQueue", "QueueName"]}
    assert default.karpenter_json["Resources"]["KarpenterInterruptionQueue"]["Properties"]["QueueName"] == {
        "Ref": "ClusterName"
    }


def test_service_account_in_helm_values_is_the_irsa_subject(default, alternative):
    for synth in (default, alternative):
        values = controller_values(synth.template)
        namespace = _charts(synth)["karpenter"][1]["Namespace"]
        _, cfn_json = next(iter(resources(synth.template, "Custom::AWSCDKCfnJson").items()))
        conditions = render_json(cfn_json["Properties"]["Value"])
        (sub,) = [v for k, v in conditions.items() if k.endswith(":sub")]
        assert sub == f"system:serviceaccount:{namespace}:{values['serviceAccount']['name']}"


def test_node_class_role_is_the_mapped_node_role(default):
    node_class_role = kubernetes_objects(default.template)["EC2NodeClass/default"]["spec"]["role"]
    assert _nested_source(default, node_class_role) == {"Ref": "KarpenterNodeRole"}
    # Ref of the role is the name the template gives it; the aws-auth entry maps the same role's ARN.
    role = default.karpenter_json["Resources"]["KarpenterNodeRole"]["Properties"]
    assert role["RoleName"] == {"Fn::Sub": "KarpenterNodeRole-${ClusterName}"}


def test_discovery_tag_value_equals_selector_value_equals_cluster_name(default, alternative):
    for synth in (default, alternative):
        name = synth.config.cluster_name
        _, cluster = next(iter(resources(synth.template, "Custom::AWSCDK-EKS-Cluster").items()))
        assert cluster["Properties"]["Config"]["name"] == name
        subnet_tags = {
            t["Value"]
            for s in resources(synth.template, "AWS::EC2::Subnet").values()
            for t in s["Properties"]["Tags"]
            if t["Key"] == DISCOVERY_TAG_KEY
        }
        _, tagger = next(iter(resources(synth.template, "Custom::AWS").items()))
        sg_tags = {t["Value"] for t in render_json(tagger["Properties"]["Create"])["parameters"]["Tags"]}
        selectors = set()
        for obj in each(kubernetes_objects(synth.template).values()):
            if obj["kind"] == "EC2NodeClass":
                for term in each(obj["spec"]["subnetSelectorTerms"] + obj["spec"]["securityGroupSelectorTerms"]):
                    selectors.add(term["tags"][DISCOVERY_TAG_KEY])
        assert subnet_tags == sg_tags == selectors == {name}
        assert (
            synth.json["Resources"][synth.stack.resolve(synth.stack.karpenter.infra.nested_stack_resource.logical_id)][
                "Properties"
            ]["Parameters"]["ClusterName"]
            == name
        )
        assert controller_values(synth.template)["settings"]["clusterName"] == name


def test_extra_requirements_taints_and_scheduled_budgets_reach_the_node_pool():
    from tests.conftest import synth

    s = synth(
        nodePools=[
            {
                "name": "batch",
                "requirements": [
                    {"key": "karpenter.k8s.aws/instance-family", "operator": "NotIn", "values": ["t3", "t4g"]},
                    {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lte", "values": ["32"], "minValues": 2},
                ],
                "taints": [{"key": "example.com/batch", "value": "true", "effect": "NoSchedule"}],
                "budgets": [
                    {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h", "reasons": ["Underutilized"]}
                ],
            }
        ]
    )
    spec = kubernetes_objects(s.template)["NodePool/batch"]["spec"]
    assert spec["template"]["spec"]["requirements"][5:] == [
        {"key": "karpenter.k8s.aws/instance-family", "operator": "NotIn", "values": ["t3", "t4g"]},
        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lte", "values": ["32"], "minValues": 2},
    ]
    assert spec["template"]["spec"]["taints"] == [{"key": "example.com/batch", "value": "true", "effect": "NoSchedule"}]
    assert spec["disruption"]["budgets"] == [
        {"nodes": "0", "reasons": ["Underutilized"], "schedule": "0 9 * * mon-fri", "duration": "8h"}
    ]


def test_the_feature_gate_table_is_every_gate_of_the_chart():
    """One table of gates and defaults (specs.controller): its gates are the FeatureGate type's, and it equals the
    gates and defaults the import took from the 1.14.1 chart's values.yaml (constructs_lib/karpenter/releases/), which the
    generated values schema lists too and the chart itself holds; all off but reservedCapacity. 1.13.1's chart has
    all of them but capacityBuffer, which 1.14 added."""
    import typing

    from constructs_lib.karpenter import releases
    from constructs_lib.karpenter.specs.controller import FEATURE_GATE_DEFAULTS, FeatureGate
    from tooling.kubernetes_schemas import schema
    from tooling.releases.chart_render import chart_defaults

    values = schema("1.14.1", "controller-values")
    chart_gates = values["properties"]["settings"]["properties"]["featureGates"]["properties"]
    assert (
        FEATURE_GATE_DEFAULTS
        == releases.feature_gates("1.14.1")
        == chart_defaults("1.14.1")["settings"]["featureGates"]
    )
    assert set(FEATURE_GATE_DEFAULTS) == set(typing.get_args(FeatureGate)) == set(chart_gates)
    assert {gate: node["default"] for gate, node in chart_gates.items()} == FEATURE_GATE_DEFAULTS
    assert [g for g, on in FEATURE_GATE_DEFAULTS.items() if on] == ["reservedCapacity"]
    assert (
        releases.feature_gates("1.13.1")
        == chart_defaults("1.13.1")["settings"]["featureGates"]
        == {g: on for g, on in FEATURE_GATE_DEFAULTS.items() if g != "capacityBuffer"}
    )
