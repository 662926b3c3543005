"""The examples of examples/ as a platform team applies them: what each emits, and what deploying it over
a running default cluster does (added, removed, changed in place -- never a replacement). Their
snapshots, schemas and CEL rules are checked with every other configuration (test_snapshots,
test_kubernetes_schemas, test_cel_rules)."""

from __future__ import annotations

import json

import pytest

from constructs_lib.karpenter.names import NODE_GROUPS, WINDOWS_NODE_GROUP
from tests.cfn import (
    controller_values,
    create_only_properties,
    depends_on,
    kubernetes_objects,
    only,
    render,
    resources,
    template_change,
)
from tests.conftest import EXAMPLE_FIXTURES, ROOT


def _objects(synthesized) -> dict[str, dict]:
    return {
        k: {f: v for f, v in o.items() if f != "_logicalId"}
        for k, o in kubernetes_objects(synthesized.template).items()
    }


def _requirement(pool: dict, key: str) -> dict:
    (requirement,) = [r for r in pool["spec"]["template"]["spec"]["requirements"] if r["key"] == key]
    return requirement


def test_every_example_is_a_fixture_of_the_suite():
    assert sorted(EXAMPLE_FIXTURES) == [
        "example_baseline_and_burst",
        "example_capacity_reservation",
        "example_gitops",
        "example_golden_image",
        "example_gpu",
        "example_own_manifests",
        "example_windows",
    ]


def test_windows_example_launches_windows_nodes_that_can_join_and_get_pod_ips(example_windows, default):
    objects = _objects(example_windows)
    node_class = objects["EC2NodeClass/windows"]["spec"]
    assert node_class["amiSelectorTerms"] == [{"alias": "windows2022@latest"}]
    assert node_class["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/sda1",
            "ebs": {"volumeSize": "100Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True},
        }
    ]
    pool = objects["NodePool/windows"]
    assert _requirement(pool, "kubernetes.io/os")["values"] == ["windows"]
    assert _requirement(pool, "kubernetes.io/arch")["values"] == ["amd64"]
    assert pool["spec"]["template"]["spec"]["taints"] == [{"key": "os", "value": "windows", "effect": "NoSchedule"}]
    assert _requirement(objects["NodePool/default"], "kubernetes.io/os")["values"] == ["linux"]
    # Windows nodes launch with a role of their own, mapped with the Windows group (kube-proxy on Windows
    # runs with the node's identity); the Linux node role's mapping is unchanged
    assert node_class["role"] == "${Ref:WindowsNodeRoleE0704BCF}"
    roles = {
        r["rolearn"]: r["groups"]
        for r in json.loads(objects["ConfigMap/aws-auth"]["data"]["mapRoles"])
        if r["username"] == "system:node:{{EC2PrivateDNSName}}"
    }
    assert roles == {
        "${GetAtt:WindowsNodeRoleE0704BCF.Arn}": [*NODE_GROUPS, WINDOWS_NODE_GROUP],
        # the system node group's role, kept mapped for a hosting switch (constructs_lib/controller_hosting.py)
        "${GetAtt:ControllerHostingNodeRole8E936FA0.Arn}": list(NODE_GROUPS),
        "${GetAtt:KarpenterNestedStackKarpenterNestedStackResourceE556CF50."
        "Outputs.ekskarpenterKarpenterTemplateKarpenterNodeRole941D9270Arn}": list(NODE_GROUPS),
    }
    # Windows IPAM: the vpc-cni add-on's own switch; the cluster role may assign Windows pod IPs
    addons = {
        r["Properties"]["AddonName"]: r["Properties"]
        for r in resources(example_windows.template, "AWS::EKS::Addon").values()
    }
    assert addons["vpc-cni"]["ConfigurationValues"] == '{"enableWindowsIpam": "true"}'
    assert (
        "ConfigurationValues"
        not in only(
            {
                k: v
                for k, v in resources(default.template, "AWS::EKS::Addon").items()
                if v["Properties"]["AddonName"] == "vpc-cni"
            }
        )[1]["Properties"]
    )
    cluster_role = example_windows.json["Resources"]["ClusterRoleFA261979"]["Properties"]
    assert [render(a) for a in cluster_role["ManagedPolicyArns"]] == [
        "arn:${Ref:AWS::Partition}:iam::aws:policy/AmazonEKSClusterPolicy",
        "arn:${Ref:AWS::Partition}:iam::aws:policy/AmazonEKSVPCResourceController",
    ]


def test_gpu_example_keeps_gpu_nodes_for_gpu_pods(example_gpu):
    objects = _objects(example_gpu)
    node_class = objects["EC2NodeClass/gpu"]["spec"]
    # Bottlerocket: its NVIDIA variant (chosen by the alias for GPU instances) ships the device plugin;
    # images live on the data volume /dev/xvdb, sized and sped up for large images
    assert node_class["amiSelectorTerms"] == [{"alias": "bottlerocket@latest"}]
    assert node_class["blockDeviceMappings"][1] == {
        "deviceName": "/dev/xvdb",
        "ebs": {
            "volumeSize": "200Gi",
            "volumeType": "gp3",
            "encrypted": True,
            "deleteOnTermination": True,
            "throughput": 500,
        },
    }
    pool = objects["NodePool/gpu"]["spec"]
    assert _requirement(objects["NodePool/gpu"], "karpenter.k8s.aws/instance-gpu-manufacturer")["values"] == ["nvidia"]
    assert _requirement(objects["NodePool/gpu"], "karpenter.k8s.aws/instance-category")["values"] == ["g"]
    assert pool["template"]["spec"]["taints"] == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    assert pool["limits"] == {"cpu": "384", "memory": "1536Gi", "nvidia.com/gpu": "16"}
    assert pool["disruption"] == {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "10m",
        "budgets": [{"nodes": "1"}],
    }


def test_golden_image_example_launches_your_own_images_with_your_user_data(example_golden_image):
    objects = _objects(example_golden_image)
    node_class = objects["EC2NodeClass/golden"]["spec"]
    # two pinned images (Karpenter takes the newest that fits the instance's architecture), AL2023's user data
    assert node_class["amiSelectorTerms"] == [{"id": "ami-0123456789abcdef0"}, {"id": "ami-0fedcba9876543210"}]
    assert node_class["amiFamily"] == "AL2023"
    assert node_class["userData"] == (ROOT / "examples/user-data/al2023-nodeconfig.yaml").read_text()
    assert node_class["userData"].startswith('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"')
    # encrypted with a key of the app's (volumeKmsKey create): tests/test_volume_kms_key.py
    assert node_class["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "ebs": {
                "volumeSize": "80Gi",
                "volumeType": "gp3",
                "encrypted": True,
                "deleteOnTermination": True,
                "kmsKeyID": "${GetAtt:VolumeKeysKeyEB4F4D4C.Arn}",
            },
        }
    ]
    pool = objects["NodePool/golden"]
    assert pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "golden"
    assert _requirement(pool, "kubernetes.io/os")["values"] == ["linux"]
    # the default class keeps its alias
    assert objects["EC2NodeClass/default"]["spec"]["amiSelectorTerms"] == [{"alias": "al2023@latest"}]


def test_baseline_and_burst_example_prefers_graviton_through_a_node_overlay(example_baseline_and_burst):
    overlay = _objects(example_baseline_and_burst)["NodeOverlay/prefer-graviton"]
    assert overlay == {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "prefer-graviton"},
        "spec": {
            "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}],
            "priceAdjustment": "-10%",
        },
    }
    chart_values = controller_values(example_baseline_and_burst.template)
    assert chart_values["settings"]["featureGates"] == {"nodeOverlay": True}
    # applied after the charts (its CRD), like every Karpenter object
    overlay_id = kubernetes_objects(example_baseline_and_burst.template)["NodeOverlay/prefer-graviton"]["_logicalId"]
    assert {"KarpenterReleaseCrdChart14B91BFB", "KarpenterReleaseControllerChartB127D32C"} <= set(
        depends_on(example_baseline_and_burst.json, overlay_id)
    )


def test_capacity_reservation_example_launches_into_the_reservations_first(example_capacity_reservation):
    objects = _objects(example_capacity_reservation)
    assert objects["EC2NodeClass/reserved"]["spec"]["capacityReservationSelectorTerms"] == [
        {"tags": {"example.com/reserved-for": "eks-karpenter"}, "instanceMatchCriteria": "targeted"}
    ]
    assert "capacityReservationSelectorTerms" not in objects["EC2NodeClass/default"]["spec"]
    pool = objects["NodePool/reserved"]
    assert _requirement(pool, "karpenter.sh/capacity-type")["values"] == ["reserved"]
    # preferred over the default pool (weight 0), which takes over when the reservations are full
    assert pool["spec"]["weight"] == 100 and "weight" not in objects["NodePool/default"]["spec"]
    # what Karpenter needs for reservations is in the template: finding them, launching into them, and
    # the interruption warning of interruptible ones reaching its queue
    statements = [
        statement
        for r in example_capacity_reservation.karpenter_json["Resources"].values()
        if r["Type"] == "AWS::IAM::ManagedPolicy"
        for statement in r["Properties"]["PolicyDocument"]["Statement"]  # structured by the importer
    ]
    assert any("ec2:DescribeCapacityReservations" in s["Action"] for s in statements)
    assert any(
        "ec2:RunInstances" in s["Action"]
        and {"Fn::Sub": "arn:${AWS::Partition}:ec2:${AWS::Region}:*:capacity-reservation/*"} in s["Resource"]
        for s in statements
    )
    (rule,) = [
        r
        for r in example_capacity_reservation.karpenter_json["Resources"].values()
        if r["Type"] == "AWS::Events::Rule"
        and r["Properties"]["EventPattern"].get("detail-type")
        == ["EC2 Capacity Reservation Instance Interruption Warning"]
    ]
    assert rule["Properties"]["EventPattern"]["source"] == ["aws.ec2"]


# example -> (manifests added, removed, properties changed in place) when deployed over the default
# configuration: what a platform team adopting it does to a running cluster.
OVER_DEFAULT = {
    # the nodeOverlay gate changes the controller chart's values: a helm upgrade, the controller rolls
    "example_baseline_and_burst": (
        {
            "ClustermanifestNodePoolbaseline0D558DD6",
            "ClustermanifestNodePoolburst995D3138",
            "ClustermanifestNodeOverlayprefergraviton9F51F0D1",
        },
        {"ClustermanifestNodePooldefault04636ED7"},
        {"KarpenterReleaseControllerChartB127D32C": ["Values"]},
    ),
    "example_capacity_reservation": (
        {"ClustermanifestEC2NodeClassreserved7571C077", "ClustermanifestNodePoolreservedD92E43F9"},
        set(),
        {},
    ),
    "example_golden_image": (
        {"ClustermanifestEC2NodeClassgoldenFAD90CD0", "ClustermanifestNodePoolgolden244BA1B1", "VolumeKeysKeyEB4F4D4C"},
        set(),
        {},
    ),
    "example_gpu": ({"ClustermanifestEC2NodeClassgpuA84CB595", "ClustermanifestNodePoolgpu11DF1E5E"}, set(), {}),
    # the node objects go to a GitOps tool: the stack's two are removed (a running stack moves through handover,
    # which retains them: tests/test_gitops.py); the class named the node role by the nested stack's output, which
    # nothing reads now: the nested template loses that output (no resource of it changes)
    "example_gitops": (
        set(),
        {"ClustermanifestEC2NodeClassdefault1FA7291F", "ClustermanifestNodePooldefault04636ED7"},
        {"KarpenterNestedStackKarpenterNestedStackResourceE556CF50": ["TemplateURL"]},
    ),
    # Karpenter YAML files: the class and pool named default are the typed defaults' objects (same logical ids),
    # updated in place; the typed gpu class and the files' gpu and batch pools are added
    "example_own_manifests": (
        {
            "ClustermanifestEC2NodeClassgpuA84CB595",
            "ClustermanifestNodePoolgpu11DF1E5E",
            "ClustermanifestNodePoolbatch87B5E672",
        },
        set(),
        {
            "ClustermanifestEC2NodeClassdefault1FA7291F": ["Manifest"],
            "ClustermanifestNodePooldefault04636ED7": ["Manifest"],
        },
    ),
    "example_windows": (
        {
            "ClustermanifestEC2NodeClasswindows71D10F77",
            "ClustermanifestNodePoolwindowsFFD572AE",
            "WindowsNodeRoleE0704BCF",
            "WindowsNodeRolePassRoleE7880C84",
        },
        set(),
        {
            "Addonsvpccni1C4D5563": ["ConfigurationValues"],
            "ClusterAwsAuthmanifestFE51F8AE": ["Manifest"],
            "ClusterRoleFA261979": ["ManagedPolicyArns"],
        },
    ),
}


@pytest.mark.parametrize("example", sorted(OVER_DEFAULT))
def test_adopting_an_example_on_a_running_cluster_replaces_nothing(example, default, request):
    after = request.getfixturevalue(example)
    added, removed, changed = template_change(default.json, after.json)
    assert (added, removed, changed) == OVER_DEFAULT[example]
    for logical_id, properties in changed.items():
        resource_type = after.json["Resources"][logical_id]["Type"]
        if not resource_type.startswith("Custom::"):  # custom resources: their handler applies the change
            assert not create_only_properties(resource_type) & set(properties), logical_id
    # the nested Karpenter stack (node role, queue) is the same template (gitops: less one output, above)
    gone = {"ekskarpenterKarpenterTemplateKarpenterNodeRole941D9270Ref"} if example == "example_gitops" else set()
    assert {**after.karpenter_json, "Outputs": None} == {**default.karpenter_json, "Outputs": None}
    assert set(default.karpenter_json["Outputs"]) - set(after.karpenter_json["Outputs"]) == gone
    assert set(after.karpenter_json["Outputs"]) <= set(default.karpenter_json["Outputs"])


def test_create_only_properties_come_from_the_resource_schemas():
    assert create_only_properties("AWS::EKS::Addon") == {"ClusterName", "AddonName", "NamespaceConfig"}
    assert create_only_properties("AWS::IAM::Role") == {"Path", "RoleName"}
