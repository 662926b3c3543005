"""Every class of bad input stops the synth with one exact message and builds nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from constructs_lib.karpenter.specs.controller import FEATURE_GATE_DEFAULTS
from karpenter_stack.application import build, new_app
from karpenter_stack.config import ConfigError
from tests.conftest import TODAY
from tooling.configurations import EXISTING, PRODUCT_CONTEXT

POOL = {"name": "p"}

CASES = {
    "typo": (
        {"kubernetesVerison": "1.35"},
        "kubernetesVerison: unknown setting; did you mean 'kubernetesVersion'? (from -c)",
    ),
    "cluster name rules": (
        {"clusterName": "-x"},
        'clusterName = "-x": must start with a letter or digit and contain only letters, digits, '
        "'-' and '_' (from -c)",
    ),
    "derived name too long": (
        {"clusterName": "c" * 47},
        f'clusterName = "{"c" * 47}": must be at most 46 characters so that '
        "KarpenterNodeRole-<cluster> fits IAM's 64-character limit (got 47) (from -c)",
    ),
    "unknown kubernetes version": (
        {"kubernetesVersion": "2.0"},
        'kubernetesVersion = "2.0": must be a Kubernetes minor version of the form 1.NN, like 1.36 (from -c)',
    ),
    "past extended support": (
        {"kubernetesVersion": "1.30"},
        "kubernetesVersion '1.30' is past the end of EKS extended support (2026-07-23) and can "
        "no longer be created; use 1.31 or newer (from -c)",
    ),
    "karpenter release not imported": (
        {"karpenterVersion": "1.15.0"},
        "karpenterVersion = '1.15.0': not imported (imported: 1.13.1, 1.14.1); import it with "
        "make karpenter-import VERSION=1.15.0 (from -c)",
    ),
    "a consolidation policy the chosen release does not have": (
        {"karpenterVersion": "1.13.1", "nodePools": [{"name": "default", "consolidationPolicy": "Balanced"}]},
        "nodePools[0].consolidationPolicy = 'Balanced': Karpenter 1.13.1 (karpenterVersion) does not allow it "
        "(allowed: WhenEmpty, WhenEmptyOrUnderutilized); 1.14.1 allows it; use one of those, or another "
        "karpenterVersion (from -c)",
    ),
    "a feature gate the chosen release does not have": (
        {"karpenterVersion": "1.13.1", "controller": {"featureGates": {"capacityBuffer": False}}},
        "controller.featureGates.capacityBuffer: Karpenter 1.13.1 (karpenterVersion) has no such feature gate (its "
        "gates: nodeRepair, nodeOverlay, reservedCapacity, spotToSpotConsolidation, staticCapacity); 1.14.1 has it "
        "(from -c)",
    ),
    "drain bound that is not a duration": (
        {"nodePools": [{"terminationGracePeriod": "Never"}]},
        'nodePools[0].terminationGracePeriod = "Never": must be a duration like 30s, 5m or 1h30m '
        "(the CRD's pattern; no 'Never': null leaves it unset) (from -c)",
    ),
    "drain bound in days (the CRD allows s, m and h)": (
        {"nodePools": [{"terminationGracePeriod": "2d"}]},
        'nodePools[0].terminationGracePeriod = "2d": must be a duration like 30s, 5m or 1h30m '
        "(the CRD's pattern; no 'Never': null leaves it unset) (from -c)",
    ),
    "pinned AMI older than the Kubernetes version": (
        {"nodeClasses": [{"amiAlias": "al2023@v20260301"}]},
        "nodeClasses[0].amiAlias 'al2023@v20260301' has no AMI for Kubernetes 1.36: EKS-optimized AMIs for 1.36 "
        "start with its EKS release (2026-04-22 at the earliest); pin al2023@v20260422 or later, or al2023@latest (from -c)",
    ),
    "pinned AMI older than an upgrade's target": (
        {"kubernetesVersion": "1.35", "nodeClasses": [{}, {"name": "b", "amiAlias": "al2023@v20251231"}]},
        "nodeClasses[1].amiAlias 'al2023@v20251231' has no AMI for Kubernetes 1.35: EKS-optimized AMIs for 1.35 "
        "start with its EKS release (2026-01-28); pin al2023@v20260128 or later, or al2023@latest (from -c)",
    ),
    "AMI alias that is no date": (
        {"nodeClasses": [{"amiAlias": "al2023@v20261399"}]},
        "nodeClasses[0].amiAlias 'al2023@v20261399': v20261399 is not a date (vYYYYMMDD) (from -c)",
    ),
    "Amazon Linux 2 past its last Kubernetes version": (
        {"nodeClasses": [{"amiAlias": "al2@latest"}]},
        "nodeClasses[0].amiAlias 'al2@latest': EKS publishes no Amazon Linux 2 AMIs for Kubernetes 1.36 (the last "
        "is 1.32); use al2023 or bottlerocket (from -c)",
    ),
    "duplicate pools": ({"nodePools": [POOL, POOL]}, "nodePools has duplicate names: p (from -c)"),
    "unknown node class": (
        {"nodePools": [{"name": "p", "nodeClass": "gpu"}]},
        "nodePools 'p' refers to nodeClass 'gpu', which is not in nodeClasses (default) (from -c)",
    ),
    "operator": (
        {"nodePools": [{"requirements": [{"key": "a", "operator": "Has"}]}]},
        "nodePools[0].requirements[0].operator = \"Has\": Input should be 'In', 'NotIn', 'Exists', "
        "'DoesNotExist', 'Gt', 'Lt', 'Gte' or 'Lte' (from -c)",
    ),
    "restricted label": (
        {"nodePools": [{"labels": {"kubernetes.io/hostname": "a"}}]},
        "nodePools[0].labels: 'kubernetes.io/hostname' is a label key Karpenter sets itself; it "
        "cannot be set or required here (from -c)",
    ),
    "duration": (
        {"nodePools": [{"consolidateAfter": "soon"}]},
        'nodePools[0].consolidateAfter = "soon": must be a duration like 30s, 15m, 720h, 1h30m, or Never (from -c)',
    ),
    "budget": (
        {"nodePools": [{"budgets": [{"nodes": "ten"}]}]},
        'nodePools[0].budgets[0].nodes = "ten": must be a whole number or a percentage 0%-100% (from -c)',
    ),
    "weight": (
        {"nodePools": [{"weight": 101}]},
        "nodePools[0].weight = 101: Input should be less than or equal to 100 (from -c)",
    ),
    "quantity": (
        {"nodePools": [{"limits": {"memory": "1TB"}}]},
        "nodePools[0].limits: limit memory '1TB' must be a Kubernetes quantity such as 100, 500m, 64Gi or 1.5 (from -c)",
    ),
    "ami alias family": (
        {"nodeClasses": [{"amiAlias": "ubuntu@latest"}]},
        'nodeClasses[0].amiAlias = "ubuntu@latest": must be family@version with family al2, '
        "al2023, bottlerocket, windows2019, windows2022 or windows2025 and version 'latest' or a "
        "pinned vYYYYMMDD (from -c)",
    ),
    "hop limit": (
        {"nodeClasses": [{"metadataHopLimit": 65}]},
        "nodeClasses[0].metadataHopLimit = 65: Input should be less than or equal to 64 (from -c)",
    ),
    "volume size": (
        {"nodeClasses": [{"rootVolumeSizeGib": 60000}]},
        "nodeClasses[0].rootVolumeSizeGib = 60000: Input should be less than or equal to 59000 (from -c)",
    ),
    "cidr": (
        {"vpcCidr": "10.0.0.0/33"},
        "vpcCidr = \"10.0.0.0/33\": '10.0.0.0/33' is not an IPv4 CIDR like 10.0.0.0/16 (host bits must be zero) (from -c)",
    ),
    "nat gateways": ({"natGateways": 3}, "natGateways (3) cannot exceed maxAzs (2) (from -c)"),
    "vpc id": (
        {"vpcId": "vpc-xyz", "account": "1" * 12, "region": "eu-west-1"},
        'vpcId = "vpc-xyz": must look like vpc-0123456789abcdef0 (from -c)',
    ),
    "namespace": (
        {"karpenterNamespace": "Karpenter"},
        "karpenterNamespace = \"Karpenter\": must be a Kubernetes name: lowercase a-z, 0-9 and '-', at "
        "most 63 characters (from -c)",
    ),
    "service account": (
        {"karpenterServiceAccount": "karpenter_sa"},
        'karpenterServiceAccount = "karpenter_sa": must be a Kubernetes name: lowercase a-z, 0-9 '
        "and '-', at most 63 characters (from -c)",
    ),
    # strings that reach a CDK or CloudFormation parser (before: a jsii traceback, or a deploy failure)
    "account id": (
        {"account": "12", "region": "eu-west-1"},
        'account = "12": must be a 12-digit AWS account id (from -c)',
    ),
    "region name": (
        {"region": "Europe"},
        'region = "Europe": must be an AWS region name like eu-west-1 or us-gov-west-1 (from -c)',
    ),
    "system node instance type": (
        {"controllerHosting": "nodegroup", "systemNodeInstanceType": "t3"},
        'systemNodeInstanceType = "t3": must be an EC2 instance type like t3.medium or m7g.large (from -c)',
    ),
    # what EC2 or the API server would refuse later
    "volume type that needs IOPS": (
        {"nodeClasses": [{"rootVolumeType": "io2"}]},
        "nodeClasses[0]: rootVolumeType io2 needs rootVolumeIops: EC2 requires provisioned IOPS for it (from -c)",
    ),
    "gp3 IOPS above the limit": (
        {"nodeClasses": [{"rootVolumeIops": 20000}]},
        "nodeClasses[0]: rootVolumeIops 20000 is outside what EC2 allows for a 50 GiB gp3 volume: 3000-16000 (500 per "
        "GiB, at most 16000) (from -c)",
    ),
    "io1 IOPS above 50 per GiB": (
        {"nodeClasses": [{"rootVolumeType": "io1", "rootVolumeIops": 5000}]},
        "nodeClasses[0]: rootVolumeIops 5000 is outside what EC2 allows for a 50 GiB io1 volume: 100-2500 (50 per GiB, "
        "at most 64000) (from -c)",
    ),
    "gp3 throughput above IOPS/4": (
        {"nodeClasses": [{"rootVolumeThroughput": 1000}]},
        "nodeClasses[0]: rootVolumeThroughput 1000 MiB/s is outside what EC2 allows with 3000 IOPS: 125-750 (at most "
        "IOPS/4) (from -c)",
    ),
    "throughput on io2": (
        {"nodeClasses": [{"rootVolumeType": "io2", "rootVolumeIops": 3000, "rootVolumeThroughput": 500}]},
        "nodeClasses[0]: rootVolumeThroughput applies to gp3 only, not io2 (from -c)",
    ),
    "IOPS on gp2": (
        {"nodeClasses": [{"rootVolumeType": "gp2", "rootVolumeIops": 3000}]},
        "nodeClasses[0]: rootVolumeIops applies to gp3, io1 and io2, not gp2 (gp2's IOPS follow its size; use gp3) "
        "(from -c)",
    ),
    "instance store policy": (
        {"nodeClasses": [{"instanceStorePolicy": "RAID1"}]},
        "nodeClasses[0].instanceStorePolicy = \"RAID1\": Input should be 'RAID0' (from -c)",
    ),
    "tag Karpenter sets itself": (
        {"nodeClasses": [{"tags": {"karpenter.sh/nodepool": "x"}}]},
        "nodeClasses[0].tags: tag 'karpenter.sh/nodepool' is one Karpenter sets itself (restricted: "
        "eks:eks-cluster-name, karpenter.sh/nodepool, karpenter.sh/nodeclaim, karpenter.k8s.aws/ec2nodeclass, "
        "kubernetes.io/cluster*) or empty (from -c)",
    ),
    "minValues above the values": (
        {
            "nodePools": [
                {
                    "requirements": [
                        {
                            "key": "karpenter.k8s.aws/instance-family",
                            "operator": "In",
                            "values": ["m7g"],
                            "minValues": 2,
                        }
                    ]
                }
            ]
        },
        "nodePools[0].requirements[0]: requirement 'karpenter.k8s.aws/instance-family' has minValues 2 but only 1 "
        "value(s); Karpenter needs at least as many values as minValues (from -c)",
    ),
    "restricted label domain": (
        {"nodePools": [{"labels": {"example.karpenter.k8s.aws/team": "a"}}]},
        "nodePools[0].labels: 'example.karpenter.k8s.aws/team': label domain \"karpenter.k8s.aws\" is restricted to "
        "Karpenter's well-known labels (karpenter.k8s.aws/instance-family, -category, -generation, -size, -cpu, "
        "-memory, ...) (from -c)",
    ),
    "volume smaller than the AMI's snapshot": (
        {"nodeClasses": [{"rootVolumeSizeGib": 8}]},
        "nodeClasses[0]: rootVolumeSizeGib 8 is smaller than the al2023 AMI's 20 GiB snapshot for /dev/xvda; EC2 "
        "refuses a volume smaller than its snapshot (from -c)",
    ),
    "Bottlerocket data volume smaller than its snapshot": (
        {"nodeClasses": [{"amiAlias": "bottlerocket@latest", "rootVolumeSizeGib": 10}]},
        "nodeClasses[0]: rootVolumeSizeGib 10 is smaller than the bottlerocket AMI's 20 GiB snapshot for /dev/xvdb; "
        "EC2 refuses a volume smaller than its snapshot (from -c)",
    ),
    "reserved capacity without reservations": (
        {"nodePools": [{"capacityTypes": ["reserved", "on-demand"]}]},
        "nodePools 'default' allows the reserved capacity type, but its nodeClass 'default' has no "
        "capacityReservationSelectorTerms: it would launch nothing reserved (from -c)",
    ),
    "reserved capacity with its gate off": (
        {
            "controller": {"featureGates": {"reservedCapacity": False}},
            "nodeClasses": [{"capacityReservationSelectorTerms": [{"id": "cr-0123456789abcdef0"}]}],
            "nodePools": [{"capacityTypes": ["reserved"]}],
        },
        "nodePools 'default' allows the reserved capacity type, which Karpenter ignores while "
        "controller.featureGates.reservedCapacity is false (from -c)",
    ),
    "capacity reservation id with tags": (
        {"nodeClasses": [{"capacityReservationSelectorTerms": [{"id": "cr-0123456789abcdef0", "tags": {"a": "b"}}]}]},
        "nodeClasses[0].capacityReservationSelectorTerms[0]: a capacity reservation selector term with an id takes no "
        "tags, ownerID or instanceMatchCriteria (from -c)",
    ),
    "capacity reservation owner alone": (
        {"nodeClasses": [{"capacityReservationSelectorTerms": [{"ownerID": "111122223333"}]}]},
        "nodeClasses[0].capacityReservationSelectorTerms[0]: a capacity reservation selector term needs an id, tags or "
        "instanceMatchCriteria (from -c)",
    ),
    "capacity reservation id format": (
        {"nodeClasses": [{"capacityReservationSelectorTerms": [{"id": "cr-12"}]}]},
        'nodeClasses[0].capacityReservationSelectorTerms[0].id = "cr-12": must look like cr-0123456789abcdef0 '
        "(from -c)",
    ),
    "capacity reservation match criteria": (
        {"nodeClasses": [{"capacityReservationSelectorTerms": [{"instanceMatchCriteria": "any"}]}]},
        "nodeClasses[0].capacityReservationSelectorTerms[0].instanceMatchCriteria = \"any\": Input should be 'open' "
        "or 'targeted' (from -c)",
    ),
    # Windows
    "Windows pool that allows only arm64": (
        {
            "nodeClasses": [{"name": "default"}, {"name": "win", "amiAlias": "windows2022@latest"}],
            "nodePools": [{"name": "default"}, {"name": "win", "nodeClass": "win", "architectures": ["arm64"]}],
        },
        "nodePools 'win' uses the Windows nodeClass 'win' but allows only arm64: EKS's Windows AMIs are amd64 only, "
        "so it would launch nothing (from -c)",
    ),
    "Windows root volume below its 50 GiB snapshot": (
        {"nodeClasses": [{"amiAlias": "windows2019@latest", "rootVolumeSizeGib": 30}]},
        "nodeClasses[0]: rootVolumeSizeGib 30 is smaller than the windows2019 AMI's 50 GiB snapshot for /dev/sda1; "
        "EC2 refuses a volume smaller than its snapshot (from -c)",
    ),
    # node overlays
    "node overlays with their gate off": (
        {"nodeOverlays": [{"name": "cheaper-arm", "priceAdjustment": "-10%"}]},
        "nodeOverlays 'cheaper-arm': Karpenter ignores node overlays unless controller.featureGates.nodeOverlay is "
        "true (from -c)",
    ),
    "node overlay with price and priceAdjustment": (
        {
            "controller": {"featureGates": {"nodeOverlay": True}},
            "nodeOverlays": [{"name": "o", "price": "0.5", "priceAdjustment": "+0.1"}],
        },
        "nodeOverlays[0]: a node overlay sets price or priceAdjustment, not both (from -c)",
    ),
    "node overlay that changes nothing": (
        {"controller": {"featureGates": {"nodeOverlay": True}}, "nodeOverlays": [{"name": "o"}]},
        "nodeOverlays[0]: a node overlay needs price, priceAdjustment or capacity (it would change nothing) (from -c)",
    ),
    "node overlay capacity of memory": (
        {
            "controller": {"featureGates": {"nodeOverlay": True}},
            "nodeOverlays": [{"name": "o", "capacity": {"memory": "1Gi"}}],
        },
        "nodeOverlays[0].capacity: memory: Karpenter computes cpu, memory, ephemeral-storage, pods itself; an overlay "
        "adds capacity of extended resources only (from -c)",
    ),
    "node overlay price adjustment below -100%": (
        {
            "controller": {"featureGates": {"nodeOverlay": True}},
            "nodeOverlays": [{"name": "o", "priceAdjustment": "-150%"}],
        },
        'nodeOverlays[0].priceAdjustment = "-150%": must be a signed amount like +0.1 or -0.05, or a percentage '
        "like +10% or -10% (at most -100%) (from -c)",
    ),
    "node overlay on a placement-group key": (
        {
            "controller": {"featureGates": {"nodeOverlay": True}},
            "nodeOverlays": [
                {
                    "name": "o",
                    "price": "1",
                    "requirements": [{"key": "karpenter.k8s.aws/capacity-reservation-id", "operator": "Exists"}],
                }
            ],
        },
        'nodeOverlays[0].requirements[0].key = "karpenter.k8s.aws/capacity-reservation-id": '
        "'karpenter.k8s.aws/capacity-reservation-id': label domain \"karpenter.k8s.aws\" is restricted to Karpenter's "
        "well-known labels (karpenter.k8s.aws/instance-family, -category, -generation, -size, -cpu, -memory, ...; for "
        "node overlays not tenancy, capacity-reservation or placement-group keys) (from -c)",
    ),
    "node overlay requirement with minValues": (
        {
            "controller": {"featureGates": {"nodeOverlay": True}},
            "nodeOverlays": [
                {
                    "name": "o",
                    "price": "1",
                    "requirements": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"], "minValues": 1}
                    ],
                }
            ],
        },
        "nodeOverlays[0].requirements[0].minValues: unknown setting; did you mean 'values'? (from -c)",
    ),
    "two node overlays of one name": (
        {
            "controller": {"featureGates": {"nodeOverlay": True}},
            "nodeOverlays": [{"name": "o", "price": "1"}, {"name": "o", "price": "2"}],
        },
        "nodeOverlays has duplicate names: o (from -c)",
    ),
    # extra selector terms and data volumes
    "subnet term by id and tags": (
        {"nodeClasses": [{"extraSubnetSelectorTerms": [{"id": "subnet-0123456789abcdef0", "tags": {"tier": "x"}}]}]},
        "nodeClasses[0].extraSubnetSelectorTerms[0]: a subnet selector term selects by exactly one of id, tags (has "
        "id, tags) (from -c)",
    ),
    "security group term with nothing": (
        {"nodeClasses": [{"extraSecurityGroupSelectorTerms": [{}]}]},
        "nodeClasses[0].extraSecurityGroupSelectorTerms[0]: a security group selector term selects by exactly one of "
        "id, name, tags (has none) (from -c)",
    ),
    "security group term with an empty tag value": (
        {"nodeClasses": [{"extraSecurityGroupSelectorTerms": [{"tags": {"team": ""}}]}]},
        "nodeClasses[0].extraSecurityGroupSelectorTerms[0].tags: tag 'team': empty keys and values "
        "select nothing (use '*' for any value) (from -c)",
    ),
    "security group id format": (
        {"nodeClasses": [{"extraSecurityGroupSelectorTerms": [{"id": "sg-xyz"}]}]},
        'nodeClasses[0].extraSecurityGroupSelectorTerms[0].id = "sg-xyz": must look like sg-0123456789abcdef0 '
        "(from -c)",
    ),
    "data volume on the storage device": (
        {
            "nodeClasses": [
                {"amiAlias": "bottlerocket@latest", "dataVolumes": [{"deviceName": "/dev/sdb", "sizeGib": 100}]}
            ]
        },
        "nodeClasses[0]: dataVolumes /dev/sdb is the same device as /dev/xvdb (/dev/sdX and /dev/xvdX name one "
        "device); use another letter (from -c)",
    ),
    "two data volumes on one device": (
        {
            "nodeClasses": [
                {"dataVolumes": [{"deviceName": "/dev/sdf", "sizeGib": 10}, {"deviceName": "/dev/xvdf", "sizeGib": 10}]}
            ]
        },
        "nodeClasses[0]: dataVolumes /dev/xvdf is the same device as /dev/sdf (/dev/sdX and /dev/xvdX name one "
        "device); use another letter (from -c)",
    ),
    "data volume device name": (
        {"nodeClasses": [{"dataVolumes": [{"deviceName": "/dev/nvme1n1", "sizeGib": 10}]}]},
        'nodeClasses[0].dataVolumes[0].deviceName = "/dev/nvme1n1": must be /dev/xvdb to /dev/xvdz or /dev/sdb to '
        "/dev/sdz (from -c)",
    ),
    "data volume without a size": (
        {"nodeClasses": [{"dataVolumes": [{"deviceName": "/dev/sdf"}]}]},
        "nodeClasses[0].dataVolumes[0]: a data volume needs sizeGib or snapshotID (from -c)",
    ),
    "st1 data volume below its minimum size": (
        {"nodeClasses": [{"dataVolumes": [{"deviceName": "/dev/sdf", "sizeGib": 100, "volumeType": "st1"}]}]},
        "nodeClasses[0].dataVolumes[0]: sizeGib 100 is below the 125 GiB EC2 needs for st1 (from -c)",
    ),
    "data volume IOPS above 500 per GiB": (
        {"nodeClasses": [{"dataVolumes": [{"deviceName": "/dev/sdf", "sizeGib": 10, "iops": 6000}]}]},
        "nodeClasses[0].dataVolumes[0]: iops 6000 is outside what EC2 allows for a 10 GiB gp3 volume: 3000-5000 (500 "
        "per GiB, at most 16000) (from -c)",
    ),
    "data volume IOPS on a snapshot of unknown size": (
        {
            "nodeClasses": [
                {"dataVolumes": [{"deviceName": "/dev/sdf", "snapshotID": "snap-0123456789abcdef0", "iops": 4000}]}
            ]
        },
        "nodeClasses[0].dataVolumes[0]: iops needs sizeGib (EC2 checks IOPS against the volume's size) (from -c)",
    ),
    "instance category that does not exist": (
        {"nodePools": [{"instanceCategories": ["c", "zz"]}]},
        'nodePools[0].instanceCategories = ["c", "zz"]: \'zz\' is no EC2 instance category (known: a, c, d, dl, '
        "f, g, gr, h, hpc, i, im, inf, is, m, mac, p, r, t, trn, u, vt, x, z); a pool of unknown categories launches "
        "nothing (from -c)",
    ),
    "instance type name": (
        {
            "nodePools": [
                {
                    "requirements": [
                        {
                            "key": "node.kubernetes.io/instance-type",
                            "operator": "In",
                            "values": ["m7g.large", "m7g-large"],
                        }
                    ]
                }
            ]
        },
        "nodePools[0].requirements[0]: requirement 'node.kubernetes.io/instance-type': 'm7g-large' is no EC2 "
        "instance type like m7g.large (from -c)",
    ),
    "instance family name": (
        {
            "nodePools": [
                {"requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "NotIn", "values": ["M7G"]}]}
            ]
        },
        "nodePools[0].requirements[0]: requirement 'karpenter.k8s.aws/instance-family': 'M7G' is no EC2 instance "
        "family like m7g (from -c)",
    ),
    # kubelet settings of a node class
    "eviction soft without its grace period": (
        {"nodeClasses": [{"kubelet": {"evictionSoft": {"memory.available": "500Mi"}}}]},
        "nodeClasses[0].kubelet: evictionSoft and evictionSoftGracePeriod must name the same signals (soft: "
        "memory.available; grace periods: none) (from -c)",
    ),
    "image GC thresholds the wrong way round": (
        {"nodeClasses": [{"kubelet": {"imageGCHighThresholdPercent": 80, "imageGCLowThresholdPercent": 85}}]},
        "nodeClasses[0].kubelet: imageGCHighThresholdPercent (80) must be greater than imageGCLowThresholdPercent "
        "(85), or the kubelet does not start (from -c)",
    ),
    "eviction threshold of the wrong form": (
        {"nodeClasses": [{"kubelet": {"evictionHard": {"memory.available": "10 percent"}}}]},
        "nodeClasses[0].kubelet.evictionHard: memory.available '10 percent' must be a percentage like 10% or a "
        "quantity like 500Mi (from -c)",
    ),
    "negative reservation": (
        {"nodeClasses": [{"kubelet": {"kubeReserved": {"cpu": "-100m"}}}]},
        "nodeClasses[0].kubelet.kubeReserved: cpu '-100m' must not be negative (from -c)",
    ),
    "eviction signal that does not exist": (
        {"nodeClasses": [{"kubelet": {"evictionHard": {"memory.free": "1%"}}}]},
        "nodeClasses[0].kubelet.evictionHard: key \"memory.free\": Input should be 'memory.available', "
        "'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree' or 'pid.available' "
        "(from -c)",
    ),
    "cluster DNS that is no address": (
        {"nodeClasses": [{"kubelet": {"clusterDNS": ["kube-dns"]}}]},
        "nodeClasses[0].kubelet.clusterDNS = [\"kube-dns\"]: 'kube-dns' is not an IPv4 address (from -c)",
    ),
    "no pods per node": (
        {"nodeClasses": [{"kubelet": {"maxPods": 0}}]},
        "nodeClasses[0].kubelet.maxPods = 0: Input should be greater than or equal to 1 (from -c)",
    ),
    "pods per core on Bottlerocket": (
        {"nodeClasses": [{"amiAlias": "bottlerocket@latest", "kubelet": {"podsPerCore": 2}}]},
        "nodeClasses[0]: kubelet.podsPerCore is not supported by Bottlerocket (Karpenter ignores it there); use "
        "kubelet.maxPods (from -c)",
    ),
    "kubelet typo": (
        {"nodeClasses": [{"kubelet": {"maxPod": 110}}]},
        "nodeClasses[0].kubelet.maxPod: unknown setting; did you mean 'maxPods'? (from -c)",
    ),
    # static capacity
    "static pool with a weight": (
        {"controller": {"featureGates": {"staticCapacity": True}}, "nodePools": [{"replicas": 3, "weight": 10}]},
        "nodePools[0]: a pool with replicas (static capacity) takes no weight (from -c)",
    ),
    "static pool with a cpu limit": (
        {
            "controller": {"featureGates": {"staticCapacity": True}},
            "nodePools": [{"replicas": 3, "limits": {"cpu": "64", "nodes": "5"}}],
        },
        "nodePools[0]: a pool with replicas (static capacity) takes only limits.nodes, not cpu (from -c)",
    ),
    "static pool without the feature gate": (
        {"nodePools": [{"name": "fixed", "replicas": 3}]},
        "nodePools 'fixed' set replicas (static capacity), which Karpenter ignores unless "
        "controller.featureGates.staticCapacity is true (from -c)",
    ),
    # cluster access
    "administrator that is no role": (
        {"administrators": ["arn:aws:iam::111122223333:user/alice"]},
        "administrators[0] 'arn:aws:iam::111122223333:user/alice' must be an IAM role ARN "
        "like arn:aws:iam::<account>:role/<name> (from -c)",
    ),
    "authentication mode of an existing cluster at the top": (
        {**EXISTING, "authenticationMode": "API"},
        "authenticationMode: applies only to a cluster this app creates; remove it when existingCluster is set "
        "(from -c)",
    ),
    "pod identity on Fargate": (
        {"controllerCredentials": "pod-identity"},
        "controllerCredentials 'pod-identity' needs controllerHosting=nodegroup: EKS Pod Identity does not work for "
        "pods on Fargate (allowed with fargate: irsa) (from -c)",
    ),
    "pod identity on an existing cluster": (
        {**EXISTING, "controllerCredentials": "pod-identity"},
        "controllerCredentials: applies only to a cluster this app creates; remove it when existingCluster is set "
        "(from -c)",
    ),
    "unknown controller credentials": (
        {"controllerCredentials": "keys"},
        "controllerCredentials = \"keys\": Input should be 'irsa' or 'pod-identity' (from -c)",
    ),
    "unknown authentication mode": (
        {"authenticationMode": "IAM"},
        "authenticationMode = \"IAM\": Input should be 'API', 'API_AND_CONFIG_MAP' or 'CONFIG_MAP' (from -c)",
    ),
    # the controller
    "unknown feature gate": (
        {"controller": {"featureGates": {"drift": True}}},
        "controller.featureGates: key \"drift\": Input should be 'spotToSpotConsolidation', "
        "'nodeRepair', 'nodeOverlay', 'staticCapacity', 'capacityBuffer' or 'reservedCapacity' "
        "(from -c)",
    ),
    "batch window that is no duration": (
        {"controller": {"batchMaxDuration": "10"}},
        'controller.batchMaxDuration = "10": must be a duration like 10s, 1m30s or 500ms (from -c)',
    ),
    "log level warn": (
        {"controller": {"logLevel": "warn"}},
        "controller.logLevel = \"warn\": Input should be 'debug', 'info' or 'error' (from -c)",
    ),
    "controller too small": (
        {"controller": {"memory": "64Mi"}},
        "controller: cpu 1 / memory 64Mi is too little for the controller (at least 100m and "
        "256Mi; upstream recommends 1 and 1Gi) (from -c)",
    ),
    "controller too big for Fargate": (
        {"controller": {"cpu": "32", "memory": "64Gi"}},
        "controller cpu 32 / memory 64Gi does not fit a Fargate pod (at most 16 vCPU "
        "and 120 GiB); use controllerHosting=nodegroup (from -c)",
    ),
    # Karpenter on an existing cluster
    "created-cluster settings with an existing cluster": (
        {**EXISTING, "controllerHosting": "nodegroup", "natGateways": 2},
        "controllerHosting: applies only to a cluster this app creates; remove it when existingCluster is set "
        "(from -c)\nnatGateways: applies only to a cluster this app creates; remove it when existingCluster is set "
        "(from -c)",
    ),
    "existing cluster without access entries": (
        {**EXISTING, "existingCluster": {**EXISTING["existingCluster"], "authenticationMode": "CONFIG_MAP"}},
        'existingCluster.authenticationMode = "CONFIG_MAP": Karpenter\'s nodes join through an EKS access entry, '
        "which a CONFIG_MAP cluster ignores (and this app does not edit the aws-auth ConfigMap of a cluster it does "
        "not own); switch the cluster to API_AND_CONFIG_MAP first (aws eks update-cluster-config --access-config "
        "authenticationMode=API_AND_CONFIG_MAP; it cannot be switched back) (from -c)",
    ),
    "existing cluster's kubectl role is no role ARN": (
        {**EXISTING, "existingCluster": {**EXISTING["existingCluster"], "kubectlRoleArn": "eks-cluster-admin"}},
        'existingCluster.kubectlRoleArn = "eks-cluster-admin": must be an IAM role ARN like '
        "arn:aws:iam::<account>:role/<name> (from -c)",
    ),
    "existing cluster's OIDC provider is no EKS provider": (
        {
            **EXISTING,
            "existingCluster": {
                **EXISTING["existingCluster"],
                "openIdConnectProviderArn": "arn:aws:iam::111122223333:oidc-provider/x",
            },
        },
        'existingCluster.openIdConnectProviderArn = "arn:aws:iam::111122223333:oidc-provider/x": must be an EKS '
        "OIDC provider ARN like arn:aws:iam::<account>:oidc-provider/oidc.eks.<region>.amazonaws.com/id/<ID> "
        "(from -c)",
    ),
    "existing cluster with one subnet": (
        {**EXISTING, "existingCluster": {**EXISTING["existingCluster"], "subnetIds": ["subnet-0123456789abcdef0"]}},
        'existingCluster.subnetIds = ["subnet-0123456789abcdef0"]: List should have at least 2 items after '
        "validation, not 1 (from -c)",
    ),
    "existing cluster missing its security group": (
        {
            **EXISTING,
            "existingCluster": {k: v for k, v in EXISTING["existingCluster"].items() if k != "clusterSecurityGroupId"},
        },
        "existingCluster.clusterSecurityGroupId: required, and not set (from -c)",
    ),
}


def _existing(patch: dict) -> dict:
    """The worked existing-cluster example with some of its existingCluster keys changed."""
    return {**EXISTING, "existingCluster": {**EXISTING["existingCluster"], **patch}}


# More classes of bad input, one per setting rule (issue 12: at least 100 cases in all).
MORE_CASES = {
    "empty cluster name": (
        {"clusterName": ""},
        "clusterName = \"\": must start with a letter or digit and contain only letters, digits, '-' and '_' (from -c)",
    ),
    "cluster name with a space": (
        {"clusterName": "my cluster"},
        "clusterName = \"my cluster\": must start with a letter or digit and contain only letters, digits, '-' and '_' (from -c)",
    ),
    "kubernetes version without minor": (
        {"kubernetesVersion": "1.3"},
        "kubernetesVersion '1.3' is not known to aws-cdk-lib's aws_eks module (it knows up to 1.36) (from -c)",
    ),
    "kubernetes version with v": (
        {"kubernetesVersion": "v1.35"},
        'kubernetesVersion = "v1.35": must be a Kubernetes minor version of the form 1.NN, like 1.36 (from -c)',
    ),
    "kubernetes version 1.29": (
        {"kubernetesVersion": "1.29"},
        "kubernetesVersion '1.29' is past the end of EKS extended support (ended before 2026-07-23) and can no longer be created; use 1.31 or newer (from -c)",
    ),
    "karpenter version latest": (
        {"karpenterVersion": "latest"},
        'karpenterVersion = "latest": must be a Karpenter release like 1.14.1 (from -c)',
    ),
    "namespace too long": (
        {"karpenterNamespace": "a" * 64},
        "karpenterNamespace = \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": must be a Kubernetes name: lowercase a-z, 0-9 and '-', at most 63 characters (from -c)",
    ),
    "namespace starting with a dash": (
        {"karpenterNamespace": "-karpenter"},
        "karpenterNamespace = \"-karpenter\": must be a Kubernetes name: lowercase a-z, 0-9 and '-', at most 63 characters (from -c)",
    ),
    "account of 13 digits": (
        {"account": "1234567890123", "region": "eu-west-1"},
        'account = "1234567890123": must be a 12-digit AWS account id (from -c)',
    ),
    "account of letters": (
        {"account": "abcdefghijkl", "region": "eu-west-1"},
        'account = "abcdefghijkl": must be a 12-digit AWS account id (from -c)',
    ),
    "region in capitals": (
        {"region": "EU-WEST-1"},
        'region = "EU-WEST-1": must be an AWS region name like eu-west-1 or us-gov-west-1 (from -c)',
    ),
    "availability zone as region": (
        {"region": "us-east-1a"},
        'region = "us-east-1a": must be an AWS region name like eu-west-1 or us-gov-west-1 (from -c)',
    ),
    "vpc cidr too large": (
        {"vpcCidr": "10.0.0.0/8"},
        'vpcCidr = "10.0.0.0/8": must be an IPv4 CIDR with a prefix length from /16 to /24 (from -c)',
    ),
    "vpc cidr with host bits": (
        {"vpcCidr": "10.0.0.1/16"},
        "vpcCidr = \"10.0.0.1/16\": '10.0.0.1/16' is not an IPv4 CIDR like 10.0.0.0/16 (host bits must be zero) (from -c)",
    ),
    "vpc cidr ipv6": (
        {"vpcCidr": "2001:db8::/32"},
        "vpcCidr = \"2001:db8::/32\": '2001:db8::/32' is not an IPv4 CIDR like 10.0.0.0/16 (host bits must be zero) (from -c)",
    ),
    "one availability zone": ({"maxAzs": 1}, "maxAzs = 1: Input should be greater than or equal to 2 (from -c)"),
    "seven availability zones": ({"maxAzs": 7}, "maxAzs = 7: Input should be less than or equal to 6 (from -c)"),
    "three zones without an environment": (
        {"maxAzs": 3},
        "maxAzs (3) needs account and region: an environment-agnostic stack only knows 2 availability zones (allowed without them: 2) (from -c)",
    ),
    "no nat gateway": ({"natGateways": 0}, "natGateways = 0: Input should be greater than or equal to 1 (from -c)"),
    "public endpoint value": (
        {"endpointAccess": "public"},
        "endpointAccess = \"public\": Input should be 'private' or 'public-and-private' (from -c)",
    ),
    "public endpoint without cidrs": (
        {"endpointAccess": "public-and-private"},
        "endpointAccess 'public-and-private' needs publicAccessCidrs (the networks allowed in) (from -c)",
    ),
    "cidrs with a private endpoint": (
        {"publicAccessCidrs": ["203.0.113.0/24"]},
        "publicAccessCidrs is set but endpointAccess is 'private'; set endpointAccess=public-and-private (from -c)",
    ),
    "endpoint open to the internet": (
        {"endpointAccess": "public-and-private", "publicAccessCidrs": ["0.0.0.0/0"]},
        "publicAccessCidrs = [\"0.0.0.0/0\"]: '0.0.0.0/0' opens the API endpoint to the whole internet; list your networks instead (from -c)",
    ),
    "endpoint cidr malformed": (
        {"endpointAccess": "public-and-private", "publicAccessCidrs": ["203.0.113.0/33"]},
        "publicAccessCidrs = [\"203.0.113.0/33\"]: '203.0.113.0/33' is not an IPv4 CIDR like 10.0.0.0/16 (host bits must be zero) (from -c)",
    ),
    "unknown nag pack": (
        {"additionalNagPacks": ["PCI"]},
        "additionalNagPacks[0] = \"PCI\": Input should be 'NIST80053R5', 'NIST80053R4', 'HIPAASecurity', 'PCIDSS321' or 'Serverless' (from -c)",
    ),
    "controller hosting ec2": (
        {"controllerHosting": "ec2"},
        "controllerHosting = \"ec2\": Input should be 'fargate' or 'nodegroup' (from -c)",
    ),
    "instance type in capitals": (
        {"systemNodeInstanceType": "T3.MEDIUM"},
        'systemNodeInstanceType = "T3.MEDIUM": must be an EC2 instance type like t3.medium or m7g.large (from -c)',
    ),
    "instance type without size": (
        {"systemNodeInstanceType": "t3medium"},
        'systemNodeInstanceType = "t3medium": must be an EC2 instance type like t3.medium or m7g.large (from -c)',
    ),
    "alarm topic without alarms": (
        {"alarmTopicArn": "arn:aws:sns:eu-west-1:111122223333:alerts"},
        "alarmTopicArn is set but interruptionQueueAlarms is false; set interruptionQueueAlarms=true (from -c)",
    ),
    "alarm topic malformed": (
        {"interruptionQueueAlarms": True, "alarmTopicArn": "alerts"},
        'alarmTopicArn = "alerts": must be an SNS topic ARN like arn:aws:sns:<region>:<account>:<topic> (from -c)',
    ),
    "addon version malformed": (
        {"addonVersions": {"vpc-cni": "1.20.1"}},
        "addonVersions: vpc-cni '1.20.1' is not an EKS add-on version like v1.20.1-eksbuild.3 (from -c)",
    ),
    "unknown addon": (
        {"addonVersions": {"aws-ebs-csi-driver": "v1.40.0-eksbuild.1"}},
        "addonVersions: key \"aws-ebs-csi-driver\": Input should be 'vpc-cni', 'kube-proxy', 'coredns' or "
        "'eks-pod-identity-agent' (from -c)",
    ),
    "kube-proxy of another minor": (
        {"addonVersions": {"kube-proxy": "v1.35.0-eksbuild.2"}},
        "addonVersions.kube-proxy 'v1.35.0-eksbuild.2' is not for Kubernetes 1.36 (kube-proxy's version follows the cluster's minor: v1.36.x-eksbuild.N) (from -c)",
    ),
    "service-linked role as administrator": (
        {
            "authenticationMode": "API_AND_CONFIG_MAP",
            "administrators": [
                "arn:aws:iam::111122223333:role/aws-service-role/eks.amazonaws.com/AWSServiceRoleForAmazonEKS"
            ],
        },
        "administrators[0] 'arn:aws:iam::111122223333:role/aws-service-role/eks.amazonaws.com/"
        "AWSServiceRoleForAmazonEKS' is a service-linked role (path /aws-service-role/): only its AWS service can "
        "assume it, so nobody could use it to administer the cluster; name a role people assume (from -c)",
    ),
    "STS session as administrator": (
        {"administrators": ["arn:aws:sts::111122223333:assumed-role/admin/alice"]},
        "administrators[0] 'arn:aws:sts::111122223333:assumed-role/admin/alice' must be an IAM role ARN like "
        "arn:aws:iam::<account>:role/<name> (from -c)",
    ),
    "coredns of a later Kubernetes minor": (
        {"kubernetesVersion": "1.34", "addonVersions": {"coredns": "v1.14.3-eksbuild.3"}},
        "addonVersions.coredns 'v1.14.3-eksbuild.3' is CoreDNS 1.14, which EKS lists first for Kubernetes 1.35; "
        "for 1.34 EKS lists up to v1.13.2-eksbuild.11 (check: aws eks describe-addon-versions --addon-name coredns "
        "--kubernetes-version 1.34) (from -c)",
    ),
    "unknown profile": (
        {"profile": "prod"},
        "profile = \"prod\": Input should be 'standard' or 'production' (from -c)",
    ),
    "duplicate node classes": (
        {"nodeClasses": [{"name": "a"}, {"name": "a"}], "nodePools": [{"nodeClass": "a"}]},
        "nodeClasses has duplicate names: a (from -c)",
    ),
    "node class name in capitals": (
        {"nodeClasses": [{"name": "Default"}]},
        "nodeClasses[0].name = \"Default\": must be a lowercase DNS subdomain (a-z, 0-9, '-', '.') (from -c)",
    ),
    "alias without version": (
        {"nodeClasses": [{"amiAlias": "al2023"}]},
        "nodeClasses[0].amiAlias = \"al2023\": must be family@version with family al2, al2023, bottlerocket, windows2019, windows2022 or windows2025 and version 'latest' or a pinned vYYYYMMDD (from -c)",
    ),
    "alias with a short date": (
        {"nodeClasses": [{"amiAlias": "al2023@v2026"}]},
        'nodeClasses[0].amiAlias = "al2023@v2026": al2023 AMIs are pinned by their build date: al2023@vYYYYMMDD (e.g. al2023@v20260801), or al2023@latest (from -c)',
    ),
    "hop limit zero": (
        {"nodeClasses": [{"metadataHopLimit": 0}]},
        "nodeClasses[0].metadataHopLimit = 0: Input should be greater than or equal to 1 (from -c)",
    ),
    "volume type st1": (
        {"nodeClasses": [{"rootVolumeType": "st1"}]},
        "nodeClasses[0].rootVolumeType = \"st1\": Input should be 'gp3', 'gp2', 'io1' or 'io2' (from -c)",
    ),
    "tag value too long": (
        {"nodeClasses": [{"tags": {"team": "x" * 257}}]},
        "nodeClasses[0].tags: tag 'team': EC2 allows keys of at most 128 and values of at most 256 characters (from -c)",
    ),
    "tag with aws prefix": (
        {"nodeClasses": [{"tags": {"aws:cost": "a"}}]},
        "nodeClasses[0].tags: tag 'aws:cost': the aws: prefix is reserved for AWS (from -c)",
    ),
    "node class typo": (
        {"nodeClasses": [{"rootVolumeSize": 40}]},
        "nodeClasses[0].rootVolumeSize: unknown setting; did you mean 'rootVolumeSizeGib'? (from -c)",
    ),
    "no node pools": (
        {"nodePools": []},
        'nodePools []: no NodePool, and the stack applies the node objects (nodeObjects "stack"), so Karpenter would '
        'launch nothing; give at least one, or set nodeObjects "gitops" (a GitOps tool applies them) (from -c)',
    ),
    "no node classes": (
        {"nodeClasses": []},
        'nodeClasses []: no EC2NodeClass, and the stack applies the node objects (nodeObjects "stack"), so Karpenter '
        'would launch nothing; give at least one, or set nodeObjects "gitops" (a GitOps tool applies them) (from -c)',
    ),
    "pool name in capitals": (
        {"nodePools": [{"name": "Spot"}]},
        "nodePools[0].name = \"Spot\": must be a lowercase DNS subdomain (a-z, 0-9, '-', '.') (from -c)",
    ),
    "no capacity type": (
        {"nodePools": [{"capacityTypes": []}]},
        "nodePools[0].capacityTypes = []: List should have at least 1 item after validation, not 0 (from -c)",
    ),
    "architecture x86_64": (
        {"nodePools": [{"architectures": ["x86_64"]}]},
        "nodePools[0].architectures[0] = \"x86_64\": Input should be 'amd64' or 'arm64' (from -c)",
    ),
    "negative generation": (
        {"nodePools": [{"minInstanceGeneration": -1}]},
        "nodePools[0].minInstanceGeneration = -1: Input should be greater than or equal to 0 (from -c)",
    ),
    "weight zero": (
        {"nodePools": [{"weight": 0}]},
        "nodePools[0].weight = 0: Input should be greater than or equal to 1 (from -c)",
    ),
    "expiry forever": (
        {"nodePools": [{"expireAfter": "forever"}]},
        'nodePools[0].expireAfter = "forever": must be a duration like 30s, 15m, 720h, 1h30m, or Never (from -c)',
    ),
    "consolidation always": (
        {"nodePools": [{"consolidationPolicy": "Always"}]},
        "nodePools[0].consolidationPolicy = \"Always\": Input should be 'WhenEmpty', 'WhenEmptyOrUnderutilized' or 'Balanced' (from -c)",
    ),
    "negative consolidation delay": (
        {"nodePools": [{"consolidateAfter": "-1m"}]},
        'nodePools[0].consolidateAfter = "-1m": must be a duration like 30s, 15m, 720h, 1h30m, or Never (from -c)',
    ),
    "budget over 100%": (
        {"nodePools": [{"budgets": [{"nodes": "101%"}]}]},
        'nodePools[0].budgets[0].nodes = "101%": must be a whole number or a percentage 0%-100% (from -c)',
    ),
    "budget reason expired": (
        {"nodePools": [{"budgets": [{"nodes": "1", "reasons": ["Expired"]}]}]},
        "nodePools[0].budgets[0].reasons[0] = \"Expired\": Input should be 'Underutilized', 'Empty' or 'Drifted' (from -c)",
    ),
    "budget schedule without duration": (
        {"nodePools": [{"budgets": [{"nodes": "0", "schedule": "@daily"}]}]},
        "nodePools[0].budgets[0]: a disruption budget needs schedule and duration together, or neither (from -c)",
    ),
    "budget schedule malformed": (
        {"nodePools": [{"budgets": [{"nodes": "0", "schedule": "daily", "duration": "1h"}]}]},
        "nodePools[0].budgets[0].schedule = \"daily\": must be a cron expression of 5 fields (e.g. '0 9 * * mon-fri') or @hourly, @daily, @weekly, @monthly, @yearly (from -c)",
    ),
    "budget schedule apart by a vertical tab (Python's \\s, not RE2's)": (
        {"nodePools": [{"budgets": [{"nodes": "0", "schedule": "0\v9 * * mon-fri", "duration": "1h"}]}]},
        "nodePools[0].budgets[0].schedule = \"0\\u000b9 * * mon-fri\": must be a cron expression of 5 fields (e.g. '0 9 * * mon-fri') or @hourly, @daily, @weekly, @monthly, @yearly (from -c)",
    ),
    "taint value with a slash (the CRD takes it, the node does not)": (
        {"nodePools": [{"taints": [{"key": "dedicated", "value": "team/data", "effect": "NoSchedule"}]}]},
        "nodePools[0].taints[0].value = \"team/data\": must be 1 to 63 characters of a-z, A-Z, 0-9, '-', '_', '.', beginning and ending with a letter or digit (leave value out for none) (from -c)",
    ),
    "empty taint value": (
        {"nodePools": [{"startupTaints": [{"key": "agent", "value": "", "effect": "NoExecute"}]}]},
        "nodePools[0].startupTaints[0].value = \"\": must be 1 to 63 characters of a-z, A-Z, 0-9, '-', '_', '.', beginning and ending with a letter or digit (leave value out for none) (from -c)",
    ),
    "requirement value with a space": (
        {"nodePools": [{"requirements": [{"key": "example.com/team", "operator": "In", "values": ["data team"]}]}]},
        "nodePools[0].requirements[0]: requirement 'example.com/team': value 'data team' is not a label value (at most 63 characters of a-z, A-Z, 0-9, '-', '_', '.', beginning and ending with a letter or digit) (from -c)",
    ),
    "budget duration in days": (
        {"nodePools": [{"budgets": [{"nodes": "0", "schedule": "@daily", "duration": "1d"}]}]},
        'nodePools[0].budgets[0].duration = "1d": must be hours and/or minutes like 8h, 30m or 1h30m (from -c)',
    ),
    "too many budgets": (
        {"nodePools": [{"budgets": [{"nodes": "1"}] * 51}]},
        "nodePools[0].budgets = [51 items]: List should have at most 50 items after validation, not 51 (from -c)",
    ),
    "negative limit": (
        {"nodePools": [{"limits": {"cpu": "-1"}}]},
        "nodePools[0].limits: limit cpu '-1' must not be negative (from -c)",
    ),
    "taint effect": (
        {"nodePools": [{"taints": [{"key": "a", "effect": "Sometimes"}]}]},
        "nodePools[0].taints[0].effect = \"Sometimes\": Input should be 'NoSchedule', 'PreferNoSchedule' or 'NoExecute' (from -c)",
    ),
    "taint key": (
        {"nodePools": [{"taints": [{"key": "a b", "effect": "NoSchedule"}]}]},
        'nodePools[0].taints[0].key = "a b": must be a Kubernetes qualified name like example.com/dedicated (from -c)',
    ),
    "label value too long": (
        {"nodePools": [{"labels": {"team": "x" * 64}}]},
        "nodePools[0].labels: label value 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' must be at most 63 characters of a-z, A-Z, 0-9, '-', '_', '.' (from -c)",
    ),
    "In without values": (
        {"nodePools": [{"requirements": [{"key": "example.com/a", "operator": "In"}]}]},
        "nodePools[0].requirements[0]: requirement 'example.com/a' with operator In needs at least one value (from -c)",
    ),
    "Exists with values": (
        {"nodePools": [{"requirements": [{"key": "example.com/a", "operator": "Exists", "values": ["x"]}]}]},
        "nodePools[0].requirements[0]: requirement 'example.com/a' with operator Exists takes no values (from -c)",
    ),
    "Gt with a negative number": (
        {
            "nodePools": [
                {"requirements": [{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["-1"]}]}
            ]
        },
        "nodePools[0].requirements[0]: requirement 'karpenter.k8s.aws/instance-cpu' with operator Gt needs exactly one whole number (from -c)",
    ),
    "requirement on a shortcut's key with the shortcut set too": (
        {
            "nodePools": [
                {
                    "capacityTypes": ["spot"],
                    "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
                }
            ]
        },
        "nodePools[0]: requirement 'karpenter.sh/capacity-type' takes the place of capacityTypes ([\"spot\"]); set one "
        "of them: the requirement (e.g. for minValues) and leave capacityTypes out, or capacityTypes alone (from -c)",
    ),
    "requirement on the OS the node class decides": (
        {"nodePools": [{"requirements": [{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]}]},
        "nodePools[0]: requirement 'kubernetes.io/os' is written from the node class's AMI family (linux, or windows "
        "for windows20XX), so that a pool's nodes run their image's OS; it cannot be required here (from -c)",
    ),
    "empty shortcut (null leaves it out)": (
        {"nodePools": [{"instanceCategories": []}]},
        "nodePools[0].instanceCategories = []: List should have at least 1 item after validation, not 0 (from -c)",
    ),
    # labels and annotations on the objects themselves, and on a pool's nodes
    "NodePool label in Karpenter's domain": (
        {"nodePools": [{"objectLabels": {"karpenter.sh/team": "data"}}]},
        "nodePools[0].objectLabels: label 'karpenter.sh/team': the domain karpenter.sh is Karpenter's own (it writes "
        "karpenter.sh/nodepool-hash there) (allowed there: app.kubernetes.io/*); use a domain of your own, e.g. "
        "example.com/team (from -c)",
    ),
    "NodePool annotation Karpenter writes": (
        {"nodePools": [{"objectAnnotations": {"karpenter.sh/nodepool-hash-version": "v3"}}]},
        "nodePools[0].objectAnnotations: annotation 'karpenter.sh/nodepool-hash-version': Karpenter writes it on every "
        "NodePool (its drift hash's version); it cannot be set here (from -c)",
    ),
    "NodePool annotation kubectl writes": (
        {"nodePools": [{"objectAnnotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}}]},
        "nodePools[0].objectAnnotations: annotation 'kubectl.kubernetes.io/last-applied-configuration': kubectl apply "
        "writes it (the object as last applied); it cannot be set here (from -c)",
    ),
    "NodePool annotation in the Kubernetes domain": (
        {"nodePools": [{"objectAnnotations": {"node.kubernetes.io/exclude": "true"}}]},
        "nodePools[0].objectAnnotations: annotation 'node.kubernetes.io/exclude': the domain kubernetes.io is reserved "
        "for Kubernetes core components (allowed there: app.kubernetes.io/*, kubernetes.io/description); use a domain "
        "of your own, e.g. example.com/team (from -c)",
    ),
    "NodePool label in aws-cdk-lib's prune domain": (
        {"nodePools": [{"objectLabels": {"aws.cdk.eks/prune-c8aaaa": ""}}]},
        "nodePools[0].objectLabels: label 'aws.cdk.eks/prune-c8aaaa': the domain aws.cdk.eks is aws-cdk-lib's: it "
        "labels each manifest aws.cdk.eks/prune-<id> and deletes by that label (allowed there: app.kubernetes.io/*); "
        "use a domain of your own, e.g. example.com/team (from -c)",
    ),
    "NodePool label key that is no qualified name": (
        {"nodePools": [{"objectLabels": {"team name": "data"}}]},
        "nodePools[0].objectLabels: label 'team name' is not a Kubernetes qualified name (an optional DNS prefix of at "
        "most 253 characters and '/', then a name of at most 63 characters of a-z, A-Z, 0-9, '-', '_', '.') (from -c)",
    ),
    "NodePool label value too long": (
        {"nodePools": [{"objectLabels": {"team": "d" * 64}}]},
        f"nodePools[0].objectLabels: label value {'d' * 64!r} must be at most 63 characters of a-z, A-Z, 0-9, '-', "
        "'_', '.' (from -c)",
    ),
    "NodePool annotations past 256 KiB with kubectl's copy": (
        {"nodePools": [{"objectAnnotations": {"example.com/notes": "n" * 131000}}]},
        "nodePools[0]: objectAnnotations of 262988 bytes with kubectl's copy of the object exceed the 262144 bytes "
        "(256 KiB) the API server allows on one object (from -c)",
    ),
    "node annotation Karpenter writes on the pool's nodes": (
        {"nodePools": [{"annotations": {"karpenter.k8s.aws/ec2nodeclass-hash": "1"}}]},
        "nodePools[0].annotations: annotation 'karpenter.k8s.aws/ec2nodeclass-hash': Karpenter writes it on every "
        "EC2NodeClass (its drift hash); it cannot be set here (from -c)",
    ),
    "NodeOverlay label in the k8s.io domain": (
        {
            "controller": {"featureGates": {"nodeOverlay": True}},
            "nodeOverlays": [{"name": "o", "price": "1", "objectLabels": {"kops.k8s.io/x": "y"}}],
        },
        "nodeOverlays[0].objectLabels: label 'kops.k8s.io/x': the domain k8s.io is reserved for Kubernetes core "
        "components (allowed there: app.kubernetes.io/*); use a domain of your own, e.g. example.com/team (from -c)",
    ),
    "requirement on the node pool label": (
        {"nodePools": [{"requirements": [{"key": "karpenter.sh/nodepool", "operator": "Exists"}]}]},
        "nodePools[0].requirements[0].key = \"karpenter.sh/nodepool\": 'karpenter.sh/nodepool' is a label key Karpenter sets itself; it cannot be set or required here (from -c)",
    ),
    "pool typo": (
        {"nodePools": [{"capacityType": ["spot"]}]},
        "nodePools[0].capacityType: unknown setting; did you mean 'capacityTypes'? (from -c)",
    ),
    "node pools not JSON": (
        {"nodePools": "[{"},
        'nodePools: "[{" is not valid JSON (Expecting property name enclosed in double quotes); expected a JSON list (from -c)',
    ),
    "addon versions not JSON": (
        {"addonVersions": "{"},
        'addonVersions: "{" is not valid JSON (Expecting property name enclosed in double quotes); expected a JSON object (from -c)',
    ),
    "environment name": (
        {"environments": {"Prod": {}}},
        "environments: 'Prod' is not a valid environment name (lowercase letters, digits and '-', starting with a letter, at most 20 characters)",
    ),
    "environments share a cluster name": (
        {"environments": {"a": {"clusterName": "x"}, "b": {"clusterName": "x"}}},
        "environments: cluster names must differ, got x, x",
    ),
    "existing cluster with a vpc id of the wrong form": (
        {**_existing({"vpcId": "vpc-1"})},
        'existingCluster.vpcId = "vpc-1": must look like vpc-0123456789abcdef0 (from -c)',
    ),
    "existing cluster subnet of the wrong form": (
        {**_existing({"subnetIds": ["subnet-0123456789abcdef0", "sub-1"]})},
        'existingCluster.subnetIds = ["subnet-0123456789abcdef0", "sub-1"]: \'sub-1\' must look like subnet-0123456789abcdef0 (from -c)',
    ),
    "existing cluster duplicate subnets": (
        {**_existing({"subnetIds": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef0"]})},
        'existingCluster.subnetIds = ["subnet-0123456789abcdef0", "subnet-0123456789abcdef0"]: subnetIds has duplicate ids: subnet-0123456789abcdef0 (from -c)',
    ),
    "existing cluster security group of the wrong form": (
        {**_existing({"clusterSecurityGroupId": "sg-xyz"})},
        'existingCluster.clusterSecurityGroupId = "sg-xyz": must look like sg-0123456789abcdef0 (from -c)',
    ),
    "existing cluster and a vpc to create": (
        {**_existing({}), "vpcCidr": "10.1.0.0/16"},
        "vpcCidr: applies only to a cluster this app creates; remove it when existingCluster is set (from -c)",
    ),
    "existing cluster typo": (
        {**_existing({"kubectlRole": "x"})},
        "existingCluster.kubectlRole: unknown setting; did you mean 'kubectlRoleArn'? (from -c)",
    ),
}
assert not set(MORE_CASES) & set(CASES)
CASES.update(MORE_CASES)

_TYPES = "EC2 instance types botocore 1.44.5's EC2 model lists"
_EXISTING_OIDC = (
    "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF"
)
# Issue 21, point 5: what the real system refuses, refused here (one line, setting, value, what is allowed).
REAL_SYSTEM_CASES = {
    "system instance type EC2 does not have": (
        {"systemNodeInstanceType": "m5.huge"},
        f'systemNodeInstanceType = "m5.huge": is not one of the 1437 {_TYPES}; did you mean '
        "'m5.large' or 'm5n.large' or 'm5d.large'? (from -c)",
    ),
    "required instance type EC2 does not have": (
        {
            "nodePools": [
                {
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c7g.larg"]}
                    ]
                }
            ]
        },
        "nodePools[0].requirements[0]: requirement 'node.kubernetes.io/instance-type': 'c7g.larg' is not one of the "
        f"1437 {_TYPES}; did you mean 'c7g.large' or 'c7gn.large' or 'c7gd.large'? (from -c)",
    ),
    "excluded instance type EC2 does not have": (
        {
            "nodePools": [
                {
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "NotIn", "values": ["p4.24xlarge"]}
                    ]
                }
            ]
        },
        "nodePools[0].requirements[0]: requirement 'node.kubernetes.io/instance-type': 'p4.24xlarge' is not one of "
        f"the 1437 {_TYPES}; did you mean 'p4d.24xlarge' or 'p4de.24xlarge' or 'i4i.24xlarge'? (from -c)",
    ),
    "instance family EC2 does not have": (
        {
            "nodePools": [
                {"requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m7q"]}]}
            ]
        },
        "nodePools[0].requirements[0]: requirement 'karpenter.k8s.aws/instance-family': 'm7q' is not one of the 210 "
        "EC2 instance families botocore 1.44.5's EC2 model lists; did you mean 'm7i' or 'm7g' or 'm7a'? (from -c)",
    ),
    "overlay instance type EC2 does not have": (
        {
            "controller": {"featureGates": {"nodeOverlay": True}},
            "nodeOverlays": [
                {
                    "name": "o",
                    "price": "1",
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.huge"]}
                    ],
                }
            ],
        },
        "nodeOverlays[0].requirements[0]: requirement 'node.kubernetes.io/instance-type': 'm5.huge' is not one of the "
        f"1437 {_TYPES}; did you mean 'm5.large' or 'm5n.large' or 'm5d.large'? (from -c)",
    ),
    "kubernetes version as a JSON number": (
        {"kubernetesVersion": 1.35},
        'kubernetesVersion = 1.35: must be a string; write it in quotes: "1.35" (from -c)',
    ),
    "kubernetes version 1.30 as a JSON number": (
        {"kubernetesVersion": 1.30},
        'kubernetesVersion = 1.3: must be a string; write it in quotes: "1.3" (JSON reads 1.30 as the number 1.3: '
        'if you meant 1.30, write "1.30") (from -c)',
    ),
    "karpenter version as a JSON number": (
        {"karpenterVersion": 1.14},
        'karpenterVersion = 1.14: must be a string; write it in quotes: "1.14" (from -c)',
    ),
    "account as a JSON number": (
        {"account": 111122223333, "region": "eu-west-1"},
        'account = 111122223333: must be a string; write it in quotes: "111122223333" (from -c)',
    ),
    "cluster name as a JSON boolean": (
        {"clusterName": True},
        'clusterName = true: must be a string; write it in quotes: "true" (from -c)',
    ),
    "label value as a JSON number": (
        {"nodePools": [{"labels": {"team": 7}}]},
        'nodePools[0].labels.team = 7: must be a string; write it in quotes: "7" (from -c)',
    ),
    "limit as a fractional JSON number": (
        {"nodePools": [{"limits": {"cpu": 1.5}}]},
        'nodePools[0].limits.cpu = 1.5: must be a string; write it in quotes: "1.5" (from -c)',
    ),
    "label value with a newline": (
        {"nodePools": [{"labels": {"team": "a\nb"}}]},
        "nodePools[0].labels: label value 'a\\nb' must be at most 63 characters of a-z, A-Z, 0-9, '-', '_', '.' (from -c)",
    ),
    "unknown setting with a stray space": (
        {"clusterName ": "x"},
        "'clusterName ': unknown setting; did you mean 'clusterName' (without the surrounding whitespace)? (from -c)",
    ),
    "nested unknown setting with a newline": (
        {"nodeClasses": [{"amiAlias\n": "al2023@latest"}]},
        "nodeClasses[0].'amiAlias\\n': unknown setting; did you mean 'amiAlias' (without the surrounding whitespace)? "
        "(from -c)",
    ),
    "fullwidth digits in a duration": (
        {"nodePools": [{"consolidateAfter": "\uff11\uff10m"}]},
        'nodePools[0].consolidateAfter = "\\uff11\\uff10m": must be a duration like 30s, 15m, 720h, 1h30m, or Never '
        "(from -c)",
    ),
    "Arabic-Indic digits in a Gt requirement": (
        {
            "nodePools": [
                {"requirements": [{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["\u0663"]}]}
            ]
        },
        "nodePools[0].requirements[0]: requirement 'karpenter.k8s.aws/instance-cpu' with operator Gt needs exactly one "
        "whole number (from -c)",
    ),
    "fullwidth digits in an eviction threshold": (
        {"nodeClasses": [{"kubelet": {"evictionHard": {"memory.available": "\uff11\uff10%"}}}]},
        "nodeClasses[0].kubelet.evictionHard: memory.available '\uff11\uff10%' must be a percentage like 10% or a "
        "quantity like 500Mi (from -c)",
    ),
    "fullwidth digits in a kubernetes version": (
        {"kubernetesVersion": "1.\uff13\uff15"},
        'kubernetesVersion = "1.\\uff13\\uff15": must be a Kubernetes minor version of the form 1.NN, like 1.36 '
        "(from -c)",
    ),
    "administrator ARN of another partition than the region": (
        {
            "administrators": ["arn:aws-cn:iam::111122223333:role/admin"],
            "account": "111122223333",
            "region": "eu-west-1",
        },
        "administrators[0] 'arn:aws-cn:iam::111122223333:role/admin' is in partition aws-cn, but region 'eu-west-1' "
        "is in partition aws (ARNs there start arn:aws:) (from -c)",
    ),
    "alarm topic of another partition than the region": (
        {
            "interruptionQueueAlarms": True,
            "alarmTopicArn": "arn:aws:sns:us-gov-west-1:111122223333:alerts",
            "account": "111122223333",
            "region": "us-gov-west-1",
        },
        "alarmTopicArn 'arn:aws:sns:us-gov-west-1:111122223333:alerts' is in partition aws, but region "
        "'us-gov-west-1' is in partition aws-us-gov (ARNs there start arn:aws-us-gov:) (from -c)",
    ),
    "existing cluster role of another partition than the region": (
        {**_existing({"kubectlRoleArn": "arn:aws-us-gov:iam::111122223333:role/admin"}), "region": "eu-west-1"},
        "existingCluster.kubectlRoleArn 'arn:aws-us-gov:iam::111122223333:role/admin' is in partition aws-us-gov, "
        "but region 'eu-west-1' is in partition aws (ARNs there start arn:aws:) (from -c)",
    ),
    "existing cluster OIDC issuer in another region": (
        {**_existing({}), "region": "eu-central-1"},
        f"existingCluster.openIdConnectProviderArn '{_EXISTING_OIDC}': the cluster's OIDC issuer is in eu-west-1, "
        "but region is 'eu-central-1'; an existing cluster is in the stack's region (from -c)",
    ),
    "China OIDC issuer without .cn": (
        {**_existing({"openIdConnectProviderArn": _EXISTING_OIDC.replace("eu-west-1", "cn-north-1")})},
        "existingCluster.openIdConnectProviderArn '"
        + _EXISTING_OIDC.replace("eu-west-1", "cn-north-1")
        + "': an issuer in cn-north-1 ends in .amazonaws.com.cn (from -c)",
    ),
    "aws-auth administrator with a path": (
        {"administrators": ["arn:aws:iam::111122223333:role/platform/admin"]},
        "administrators[0] 'arn:aws:iam::111122223333:role/platform/admin': aws-auth (authenticationMode unset: "
        "CONFIG_MAP) matches a role by its ARN without the path; write 'arn:aws:iam::111122223333:role/admin', or "
        "use authenticationMode API_AND_CONFIG_MAP (access entries take the path) (from -c)",
    ),
    "image GC low threshold above the kubelet's default high one": (
        {"nodeClasses": [{"kubelet": {"imageGCLowThresholdPercent": 90}}]},
        "nodeClasses[0].kubelet: imageGCHighThresholdPercent (85: unset, the kubelet's default) must be greater than "
        "imageGCLowThresholdPercent (90), or the kubelet does not start (from -c)",
    ),
    "image GC high threshold below the kubelet's default low one": (
        {"nodeClasses": [{"kubelet": {"imageGCHighThresholdPercent": 75}}]},
        "nodeClasses[0].kubelet: imageGCHighThresholdPercent (75) must be greater than imageGCLowThresholdPercent "
        "(80: unset, the kubelet's default), or the kubelet does not start (from -c)",
    ),
    "selector tag key longer than EC2 allows": (
        {"nodeClasses": [{"extraSecurityGroupSelectorTerms": [{"tags": {"k" * 129: "*"}}]}]},
        f"nodeClasses[0].extraSecurityGroupSelectorTerms[0].tags: tag '{'k' * 129}': EC2 allows keys of at most 128 "
        "and values of at most 256 characters, so it would select nothing (from -c)",
    ),
    "selector tag value longer than EC2 allows": (
        {"nodeClasses": [{"capacityReservationSelectorTerms": [{"tags": {"team": "v" * 257}}]}]},
        "nodeClasses[0].capacityReservationSelectorTerms[0].tags: tag 'team': EC2 allows keys of at most 128 and "
        "values of at most 256 characters, so it would select nothing (from -c)",
    ),
    "io1 volume above its 16 TiB": (
        {"nodeClasses": [{"rootVolumeType": "io1", "rootVolumeSizeGib": 20000, "rootVolumeIops": 64000}]},
        "nodeClasses[0]: rootVolumeSizeGib 20000 is above the 16384 GiB EC2 allows for io1 (gp3 and io2: up to "
        "59000) (from -c)",
    ),
    "gp3 throughput above what the included IOPS allow on a snapshot-sized volume": (
        {
            "nodeClasses": [
                {
                    "dataVolumes": [
                        {"deviceName": "/dev/xvdf", "snapshotID": "snap-0123456789abcdef0", "throughput": 1000}
                    ]
                }
            ]
        },
        "nodeClasses[0].dataVolumes[0]: throughput 1000 MiB/s is outside what EC2 allows with 3000 IOPS: 125-750 "
        "(at most IOPS/4) (from -c)",
    ),
}
assert not set(REAL_SYSTEM_CASES) & set(CASES)
CASES.update(REAL_SYSTEM_CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_configuration_fails_fast_with_its_message_and_builds_nothing(case, tmp_path: Path):
    overrides, message = CASES[case]
    app = new_app(context={**PRODUCT_CONTEXT, **overrides}, outdir=str(tmp_path))
    with pytest.raises(ConfigError) as info:
        build(app, today=TODAY)
    assert str(info.value) == message
    assert app.node.children == []
    assert list(tmp_path.iterdir()) == []


# Every string setting that reaches a CDK or CloudFormation parser, with hostile values: each must stop
# at the model with a ConfigError naming it -- never a jsii/CDK traceback, never a half-built app.
STRING_SETTINGS = [
    "clusterName",
    "kubernetesVersion",
    "karpenterVersion",
    "karpenterNamespace",
    "karpenterServiceAccount",
    "account",
    "region",
    "vpcId",
    "vpcCidr",
    "systemNodeInstanceType",
    "alarmTopicArn",
    "profile",
    "endpointAccess",
    "controllerHosting",
]
HOSTILE = [
    "",
    " ",
    "-",
    "a b",
    "Ünïcödé",
    "x" * 300,
    "${AWS::Region}",
    "arn:aws:iam::*",
    "1.2.3.4",
    '{"a": 1}',
    "$(rm -rf /)",
    "null\n",
]


# An empty value unsets an optional setting (`-c account=` goes back to environment-agnostic).
OPTIONAL = {"account", "region", "vpcId", "alarmTopicArn"}


@pytest.mark.parametrize("setting", STRING_SETTINGS)
def test_hostile_strings_stop_at_the_model(setting):
    for value in (v for v in HOSTILE if not (v == "" and setting in OPTIONAL)):
        extra = {"interruptionQueueAlarms": True} if setting == "alarmTopicArn" else {}
        extra |= {"account": "111122223333", "region": "eu-west-1"} if setting == "vpcId" else {}
        app = new_app(context={**PRODUCT_CONTEXT, **extra, setting: value})
        with pytest.raises(ConfigError) as info:
            build(app, today=TODAY)
        first = str(info.value).split("\n")[0]
        assert first.startswith(setting), (setting, value, str(info.value))
        assert app.node.children == [], (setting, value)


def test_a_trailing_newline_is_no_loophole():
    """Python's `$` matches before a final newline: every pattern is matched in full instead."""
    with pytest.raises(ConfigError) as info:
        build(new_app(context={**PRODUCT_CONTEXT, "clusterName": "prod\n"}), today=TODAY)
    assert str(info.value) == (
        'clusterName = "prod\\n": must start with a letter or digit and contain only '
        "letters, digits, '-' and '_' (from -c)"
    )


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(sorted(FEATURE_GATE_DEFAULTS)),
    st.one_of(st.text(max_size=6), st.integers(), st.floats(allow_nan=False), st.none(), st.lists(st.booleans())),
)
def test_feature_gates_take_json_booleans_only(gate, value):
    """Issue 33, point 3: "yes", 1 or "false" were taken as booleans (pydantic's lax mode)."""
    from karpenter_stack.config import load_config

    with pytest.raises(ConfigError) as refused:
        load_config({"controller": {"featureGates": {gate: value}}})
    message = str(refused.value)
    assert message.startswith(f"controller.featureGates.{gate} = ") and message.endswith(
        ": must be true or false (JSON booleans, not a string or a number) (from cdk.json)"
    )
    assert message.count("\n") == 0
    assert load_config({"controller": {"featureGates": {gate: False}}}).controller.feature_gates == {gate: False}
