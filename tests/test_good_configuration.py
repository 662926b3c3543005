"""The checks refuse nothing valid: configurations a platform engineer would write load, and every object
they emit passes the mirrored schemas and every CEL rule."""

from __future__ import annotations

import json

import pytest

from constructs_lib.karpenter.specs.node_class import NodeClassSpec
from karpenter_stack.config import load_config, load_environments
from tests.cfn import each
from tests.conftest import ROOT, TODAY
from tooling.cel_rules import evaluate
from tooling.configurations import ADMINISTRATOR
from tooling.kubernetes_schemas import config_objects, object_violations

POOL_SHAPES = [
    {"name": "on-demand", "capacityTypes": ["on-demand"], "weight": 100, "limits": {"cpu": "64", "nodes": "10"}},
    {
        "name": "spot",
        "capacityTypes": ["spot"],
        "weight": 10,
        "instanceCategories": ["c", "m", "r", "inf", "trn"],
        "requirements": [
            {
                "key": "karpenter.k8s.aws/instance-family",
                "operator": "In",
                "values": ["m7g", "c7g", "r7g", "m7i"],
                "minValues": 2,
            }
        ],
    },
    {
        "name": "gpu",
        "capacityTypes": ["on-demand"],
        "instanceCategories": ["g", "p"],
        "architectures": ["amd64"],
        "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
        "startupTaints": [{"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}],
        "labels": {"accelerator": "nvidia"},
        "terminationGracePeriod": None,  # unset: drains wait for every budget (upstream's default)
        "requirements": [
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gte", "values": ["1"]},
            {
                "key": "node.kubernetes.io/instance-type",
                "operator": "NotIn",
                "values": ["p4d.24xlarge", "u-6tb1.metal"],
            },
        ],
    },
    {
        "name": "batch",
        "expireAfter": "Never",
        "terminationGracePeriod": "72h30m",
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "30s",
        "budgets": [
            {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h", "reasons": ["Underutilized", "Drifted"]},
            {"nodes": "20%"},
        ],
        "labels": {"karpenter.sh/capacity-type": "spot", "example.com/team": "data"},
    },
]
GOOD = {
    "al2023 latest, both capacity types": {"nodeClasses": [{"amiAlias": "al2023@latest"}]},
    "own images by name and owner or by tags, NodeConfig user data, object metadata": {
        "nodeClasses": [
            {
                "name": "default",
                "amiSelectorTerms": [
                    {"name": "golden-al2023-*", "owner": "123456789012"},
                    {"tags": {"golden": "true"}, "owner": "self"},
                ],
                "amiFamily": "AL2023",
                "userData": "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n"
                "      serializeImagePulls: false\n",
                "objectLabels": {"app.kubernetes.io/part-of": "platform"},
                "objectAnnotations": {"kubernetes.io/description": "Nodes of our hardened image"},
            }
        ]
    },
    "own images by SSM parameter, Bottlerocket settings": {
        "nodeClasses": [
            {
                "name": "default",
                "amiSelectorTerms": [{"ssmParameter": "/golden/bottlerocket/x86_64/latest"}],
                "amiFamily": "Bottlerocket",
                "userData": "[settings.kubernetes]\nkube-api-qps = 30\n",
            }
        ]
    },
    "custom family on an alias, with its own bootstrap": {
        "nodeClasses": [
            {
                "name": "default",
                "amiAlias": "al2023@latest",
                "amiFamily": "Custom",
                "rootVolumeDeviceName": "/dev/xvda",
                "userData": "#!/bin/bash\nnodeadm init --config-source file:///etc/eks/nodeconfig.yaml\n",
            }
        ]
    },
    "al2023 pinned": {"nodeClasses": [{"amiAlias": "al2023@v20260801"}]},
    "bottlerocket latest": {"nodeClasses": [{"amiAlias": "bottlerocket@latest", "rootVolumeSizeGib": 20}]},
    "bottlerocket pinned": {"nodeClasses": [{"amiAlias": "bottlerocket@v1.50.0"}]},
    "provisioned volumes and instance options": {
        "nodeClasses": [
            {
                "name": "default",
                "rootVolumeIops": 16000,
                "rootVolumeThroughput": 1000,
                "detailedMonitoring": True,
                "associatePublicIPAddress": False,
                "instanceStorePolicy": "RAID0",
            },
            {"name": "io2", "rootVolumeType": "io2", "rootVolumeSizeGib": 100, "rootVolumeIops": 64000},
        ]
    },
    "several pools over several classes": {
        "nodeClasses": [
            {
                "name": "default",
                "tags": {"team": "platform", "cost-center": "1234"},
                "kubelet": {
                    "maxPods": 110,
                    "podsPerCore": 10,
                    "systemReserved": {"cpu": "100m", "memory": "100Mi"},
                    "kubeReserved": {"cpu": "200m", "ephemeral-storage": "3Gi"},
                    "evictionHard": {"memory.available": "5%", "nodefs.available": "10%"},
                    "evictionSoft": {"memory.available": "500Mi"},
                    "evictionSoftGracePeriod": {"memory.available": "1m30s"},
                    "evictionMaxPodGracePeriod": 60,
                    "imageGCHighThresholdPercent": 85,
                    "imageGCLowThresholdPercent": 80,
                    "clusterDNS": ["10.100.0.10"],
                    "cpuCFSQuota": True,
                },
            },
            {
                "name": "big-disk",
                "amiAlias": "bottlerocket@latest",
                "rootVolumeSizeGib": 500,
                "rootVolumeType": "gp2",
                "metadataHopLimit": 2,
            },
        ],
        "nodePools": [*POOL_SHAPES[:3], {**POOL_SHAPES[3], "nodeClass": "big-disk"}],
    },
    "static capacity next to a dynamic pool": {
        "controller": {"featureGates": {"staticCapacity": True}},
        "nodePools": [
            {"name": "fixed", "replicas": 3, "capacityTypes": ["on-demand"], "limits": {"nodes": "5"}},
            {"name": "fixed-small", "replicas": 0},
            {"name": "default"},
        ],
    },
    "extra data volumes, subnets and security groups": {
        "nodeClasses": [
            {
                "name": "default",
                "dataVolumes": [
                    {"deviceName": "/dev/xvdf", "sizeGib": 500, "volumeType": "st1"},
                    {"deviceName": "/dev/sdg", "sizeGib": 100, "iops": 6000, "throughput": 500},
                    {"deviceName": "/dev/xvdh", "snapshotID": "snap-0123456789abcdef0"},
                ],
                "extraSubnetSelectorTerms": [
                    {"tags": {"example.com/tier": "private", "example.com/zone": "*"}},
                    {"id": "subnet-0123456789abcdef0"},
                ],
                "extraSecurityGroupSelectorTerms": [
                    {"id": "sg-0123456789abcdef0"},
                    {"name": "monitoring"},
                    {"tags": {"example.com/role": "nodes"}},
                ],
            },
            {
                "name": "bottlerocket",
                "amiAlias": "bottlerocket@latest",
                "dataVolumes": [{"deviceName": "/dev/xvdc", "sizeGib": 50, "volumeType": "io2", "iops": 5000}],
            },
        ]
    },
    "capacity reservations, by id and by tags, reserved first then on-demand": {
        "nodeClasses": [
            {
                "capacityReservationSelectorTerms": [
                    {"id": "cr-0123456789abcdef0"},
                    {"tags": {"team": "ml"}, "ownerID": "111122223333", "instanceMatchCriteria": "open"},
                ]
            }
        ],
        "nodePools": [{"capacityTypes": ["reserved", "on-demand"]}],
    },
    "Windows 2019, 2022 and 2025 next to Linux": {
        "nodeClasses": [
            {"name": "default"},
            {"name": "w2019", "amiAlias": "windows2019@latest"},
            {"name": "w2022", "amiAlias": "windows2022@latest", "rootVolumeSizeGib": 80},
            {"name": "w2025", "amiAlias": "windows2025@latest"},
        ],
        "nodePools": [
            {"name": "default"},
            *(
                {"name": n, "nodeClass": n, "taints": [{"key": "os", "value": "windows", "effect": "NoSchedule"}]}
                for n in ("w2019", "w2022", "w2025")
            ),
        ],
    },
    "production, pinned": {
        "profile": "production",
        "nodeClasses": [{"amiAlias": "al2023@v20260801"}],
        "administrators": [ADMINISTRATOR],
    },
    # Issue 21, point 5: valid configurations the model refused before.
    "limits and overlay capacity as JSON integers (x-kubernetes-int-or-string)": {
        "controller": {"featureGates": {"nodeOverlay": True}},
        "nodePools": [{"limits": {"cpu": 1000, "memory": "1000Gi", "nodes": 10}}],
        "nodeOverlays": [{"name": "fuse", "capacity": {"smarter-devices/fuse": 1}}],
    },
    "io2 Block Express and gp3 above io1's 16 TiB": {
        "nodeClasses": [
            {
                "rootVolumeType": "io2",
                "rootVolumeSizeGib": 20000,
                "rootVolumeIops": 64000,
                "dataVolumes": [{"deviceName": "/dev/xvdf", "sizeGib": 59000, "volumeType": "gp3"}],
            }
        ]
    },
    "gp3 throughput on a volume sized by its snapshot": {
        "nodeClasses": [
            {"dataVolumes": [{"deviceName": "/dev/xvdf", "snapshotID": "snap-0123456789abcdef0", "throughput": 500}]}
        ]
    },
    # Karpenter's own examples (karpenter.sh/docs/concepts/nodepools, /nodeclasses, /nodeoverlays, v1.14).
    "Karpenter docs: NodePool": {
        "nodePools": [
            {
                "weight": 10,
                "expireAfter": "720h",
                "limits": {"cpu": "1000", "memory": "1000Gi"},
                "requirements": [
                    {"key": "karpenter.k8s.aws/instance-cpu", "operator": "In", "values": ["4", "8", "16", "32"]},
                    {"key": "karpenter.k8s.aws/instance-hypervisor", "operator": "In", "values": ["nitro"]},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a", "us-west-2b"]},
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large", "m5.xlarge"]},
                ],
                "budgets": [
                    {"nodes": "20%", "reasons": ["Empty", "Drifted"]},
                    {"nodes": "5"},
                    {"nodes": "0", "schedule": "@daily", "duration": "10m", "reasons": ["Underutilized"]},
                ],
            }
        ]
    },
    "Karpenter docs: EC2NodeClass kubelet": {
        "nodeClasses": [
            {
                "kubelet": {
                    "podsPerCore": 2,
                    "maxPods": 20,
                    "systemReserved": {"cpu": "100m", "memory": "100Mi", "ephemeral-storage": "1Gi"},
                    "kubeReserved": {"cpu": "200m", "memory": "100Mi", "ephemeral-storage": "3Gi"},
                    "evictionHard": {"memory.available": "5%", "nodefs.available": "10%", "nodefs.inodesFree": "10%"},
                    "evictionSoft": {
                        "memory.available": "500Mi",
                        "nodefs.available": "15%",
                        "nodefs.inodesFree": "15%",
                    },
                    "evictionSoftGracePeriod": {
                        "memory.available": "1m",
                        "nodefs.available": "1m30s",
                        "nodefs.inodesFree": "2m",
                    },
                    "evictionMaxPodGracePeriod": 60,
                    "imageGCHighThresholdPercent": 85,
                    "imageGCLowThresholdPercent": 80,
                    "cpuCFSQuota": True,
                    "clusterDNS": ["10.0.1.100"],
                },
                "rootVolumeSizeGib": 100,
                "rootVolumeIops": 10000,
                "rootVolumeThroughput": 125,
            }
        ]
    },
    "Karpenter docs: NodeOverlays": {
        "controller": {"featureGates": {"nodeOverlay": True}},
        "nodeOverlays": [
            {
                "name": "discount",
                "weight": 10,
                "priceAdjustment": "-10%",
                "requirements": [
                    {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5", "c5"]}
                ],
            },
            {"name": "fixed-price", "price": "5.00"},
            {"name": "fuse", "capacity": {"smarter-devices/fuse": "1"}},
        ],
    },
    "Kubernetes 1.35 with its own AMI dates": {
        "kubernetesVersion": "1.35",
        "nodeClasses": [{"amiAlias": "al2023@v20260128"}],
    },
    # EKS User Guide, "Manage CoreDNS" / "Manage VPC CNI": a newer build of a minor's CoreDNS line, and vpc-cni
    # and eks-pod-identity-agent versions, which are not bound to a Kubernetes minor.
    "Pinned add-ons": {
        "kubernetesVersion": "1.34",
        "addonVersions": {
            "coredns": "v1.13.3-eksbuild.1",
            "kube-proxy": "v1.34.7-eksbuild.1",
            "vpc-cni": "v1.21.0-eksbuild.1",
            "eks-pod-identity-agent": "v1.3.10-eksbuild.1",
        },
        "controllerHosting": "nodegroup",
        "controllerCredentials": "pod-identity",
    },
    # IAM role paths are allowed in access entries (EKS User Guide, "Create access entries").
    "Administrators with a role path, through access entries": {
        "authenticationMode": "API_AND_CONFIG_MAP",
        "administrators": ["arn:aws:iam::111122223333:role/platform/admin"],
    },
}


_objects = config_objects


@pytest.mark.parametrize("name", sorted(GOOD))
def test_valid_configurations_load_and_emit_valid_objects(name):
    config = load_config(GOOD[name], today=TODAY)
    objects = _objects(config)
    assert len(objects) == len(config.node_classes) + len(config.node_pools) + len(config.node_overlays) >= 2
    for obj in objects:
        if obj["kind"] == "EC2NodeClass" and name == "provisioned volumes and instance options":
            spec = obj["spec"]
            if obj["metadata"]["name"] == "default":
                assert (spec["detailedMonitoring"], spec["associatePublicIPAddress"], spec["instanceStorePolicy"]) == (
                    True,
                    False,
                    "RAID0",
                )
                assert spec["blockDeviceMappings"][0]["ebs"] | {} == {
                    "volumeSize": "50Gi",
                    "volumeType": "gp3",
                    "encrypted": True,
                    "deleteOnTermination": True,
                    "iops": 16000,
                    "throughput": 1000,
                }
        if obj["kind"] == "EC2NodeClass":  # the kubelet settings reach the object under Karpenter's own keys
            assert set(obj["spec"].get("kubelet", {})) == set(
                GOOD[name]
                .get("nodeClasses", [{}])[[c.name for c in config.node_classes].index(obj["metadata"]["name"])]
                .get("kubelet", {})
            )
        assert object_violations(obj, config.karpenter_version, config.kubernetes_version) == []
        assert evaluate(obj, config.karpenter_version).violations == []


@pytest.mark.parametrize("alias", ["al2@latest", "al2@v20251001"])
def test_amazon_linux_2_node_classes_are_valid_specs(alias):
    """Amazon Linux 2 is valid up to Kubernetes 1.32 (checked against the version at load time); the
    suite has no 1.32 kubectl layer installed, so the spec and its object are checked here."""
    obj = NodeClassSpec(ami_alias=alias).manifest(cluster_name="c", node_role_name="r")
    assert object_violations(obj, "1.14.1", "1.32") == []
    assert evaluate(obj, "1.14.1").violations == []


def test_a_running_pool_cannot_switch_between_static_and_dynamic_in_place():
    """The CRD's transition rule refuses it on update (the API server would roll the deploy back): the
    replicas setting says to rename the pool to switch. Proven by evaluating the upstream rule."""
    from tooling.cel_rules import transition_violations

    gated = {"controller": {"featureGates": {"staticCapacity": True}}}
    dynamic = load_config({**gated, "nodePools": [{"name": "p"}]}, today=TODAY).node_pools[0].manifest()
    static = load_config({**gated, "nodePools": [{"name": "p", "replicas": 2}]}, today=TODAY).node_pools[0].manifest()
    assert static["spec"]["replicas"] == 2 and "limits" not in static["spec"]
    assert transition_violations(dynamic, static, "1.14.1") == [
        "spec: Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes"
    ]
    assert transition_violations(static, {**static, "spec": {**static["spec"], "replicas": 5}}, "1.14.1") == []


EXAMPLES = sorted((ROOT / "examples").glob("*.json"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_loads_and_emits_valid_objects(path):
    """Each file of examples/ is a configuration `make synth CONTEXT_FILE=examples/<file>` accepts (every
    environment of it)."""
    for config in each(load_environments(json.loads(path.read_text()), today=TODAY).values()):
        for obj in _objects(config):
            assert object_violations(obj, config.karpenter_version, config.kubernetes_version) == []
            assert evaluate(obj, config.karpenter_version).violations == []


def test_the_baseline_and_burst_example_prefers_on_demand_up_to_its_limits_then_spot():
    config = load_config(json.loads((ROOT / "examples" / "baseline-and-burst.json").read_text()), today=TODAY)
    baseline, burst = config.node_pools
    assert (baseline.weight, baseline.capacity_types, dict(baseline.limits)) == (
        100,
        ["on-demand"],
        {"cpu": "64", "memory": "256Gi"},
    )
    assert (burst.weight, burst.capacity_types) == (10, ["spot"]) and burst.weight < baseline.weight
    assert burst.requirements[0].min_values == 3  # spot spread over at least 3 families: fewer interruptions
    assert len(EXAMPLES) >= 2


def test_startup_taints_reach_the_pool_template_and_are_known_everywhere_the_model_is_read():
    """NodePool startupTaints (issue 23: a field added by declaring it once, on NodePoolSpec): the manifest, the
    CRD schema and CEL rules, the error messages, the review's drift verdict and the transition matrix follow."""
    from constructs_lib.karpenter.specs.node_pool import POOL_BEHAVIORAL, POOL_DYNAMIC
    from karpenter_stack.config import ConfigError
    from tooling.review.transition_moves import DEFAULT, field_transitions

    (gpu,) = [p for p in POOL_SHAPES if p["name"] == "gpu"]
    config = load_config({"nodePools": [gpu]}, today=TODAY)
    (pool,) = [o for o in _objects(config) if o["kind"] == "NodePool"]
    template = pool["spec"]["template"]["spec"]
    assert template["startupTaints"] == [
        {"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}
    ]
    assert template["taints"] == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    assert object_violations(pool, config.karpenter_version, config.kubernetes_version) == []
    assert evaluate(pool, config.karpenter_version).violations == []
    # unset: not written (the CRD's default is none)
    (plain,) = [o for o in _objects(load_config({}, today=TODAY)) if o["kind"] == "NodePool"]
    assert "startupTaints" not in plain["spec"]["template"]["spec"]
    # a bad entry is named by its path, with the taint's own rules
    with pytest.raises(ConfigError) as error:
        load_config({"nodePools": [{"startupTaints": [{"key": "a b", "effect": "NoSchedule"}]}]}, today=TODAY)
    assert str(error.value) == (
        'nodePools[0].startupTaints[0].key = "a b": must be a Kubernetes qualified name like example.com/dedicated '
        "(from cdk.json)"
    )
    # a change drifts every node of the pool (it is hashed: neither behavioral nor matched per node)
    assert "startupTaints" not in POOL_BEHAVIORAL + POOL_DYNAMIC
    moves = [(t.old, t.new) for t in field_transitions() if t.setting == "nodePools.startupTaints"]
    cilium = [{"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}]
    assert moves == [(DEFAULT, cilium), (cilium, DEFAULT)]
