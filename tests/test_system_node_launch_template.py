"""The system node group (controllerHosting nodegroup) launches from a launch template of its own (issue 33, point 4):
IMDSv2 only with one hop and an encrypted gp3 root volume, as Karpenter's node classes; nothing in it that EKS
refuses in a managed node group's launch template."""

from __future__ import annotations

import pytest
from aws_cdk import aws_eks as eks

from constructs_lib.controller_hosting import system_ami_type
from tests.conftest import synth

NODEGROUP = "ClusterNodegroupSystemNodesV27445704A"
LAUNCH_TEMPLATE = "ControllerHostingLaunchTemplateB4A0B290"
NAME_TAG = [{"Key": "Name", "Value": "eks-karpenter-system-node"}]


def _nodegroup_hosting() -> dict:
    return synth(controllerHosting="nodegroup").template.to_json()["Resources"]  # shared with tests/test_simulator.py


def test_the_launch_template_requires_imdsv2_with_one_hop_and_an_encrypted_root_volume():
    resources = _nodegroup_hosting()
    assert resources[LAUNCH_TEMPLATE]["Properties"] == {
        "LaunchTemplateData": {
            "BlockDeviceMappings": [
                {
                    "DeviceName": "/dev/xvda",
                    "Ebs": {"DeleteOnTermination": True, "Encrypted": True, "VolumeSize": 20, "VolumeType": "gp3"},
                }
            ],
            "MetadataOptions": {"HttpEndpoint": "enabled", "HttpPutResponseHopLimit": 1, "HttpTokens": "required"},
            "TagSpecifications": [
                {"ResourceType": "instance", "Tags": NAME_TAG},
                {"ResourceType": "volume", "Tags": NAME_TAG},
            ],
        },
        "TagSpecifications": [{"ResourceType": "launch-template", "Tags": NAME_TAG}],
    }
    data = resources[LAUNCH_TEMPLATE]["Properties"]["LaunchTemplateData"]
    # what EKS refuses or takes from the node group (CloudFormation reference, AWS::EKS::Nodegroup
    # LaunchTemplateSpecification; EKS User Guide, launch templates of managed node groups)
    for refused in ("IamInstanceProfile", "NetworkInterfaces", "InstanceMarketOptions", "HibernationOptions"):
        assert refused not in data
    for node_groups_own in ("InstanceType", "ImageId", "UserData", "SecurityGroupIds", "KeyName"):
        assert node_groups_own not in data


def test_the_node_group_uses_the_templates_latest_version_and_keeps_its_instance_type_and_image(default):
    resources = _nodegroup_hosting()
    (group,) = [lid for lid, r in resources.items() if r["Type"] == "AWS::EKS::Nodegroup"]
    assert group == NODEGROUP
    props = resources[NODEGROUP]["Properties"]
    assert props["LaunchTemplate"] == {
        "Id": {"Ref": LAUNCH_TEMPLATE},
        "Version": {"Fn::GetAtt": [LAUNCH_TEMPLATE, "LatestVersionNumber"]},
    }
    assert (props["InstanceTypes"], props["AmiType"]) == (["t3.medium"], "AL2023_x86_64_STANDARD")
    assert "DiskSize" not in props and "RemoteAccess" not in props
    # the Fargate hosting has neither
    assert not [r for r in default.template.to_json()["Resources"].values() if r["Type"] == "AWS::EC2::LaunchTemplate"]


@pytest.mark.parametrize(
    ("instance_type", "ami_type"),
    [
        ("t3.medium", eks.NodegroupAmiType.AL2023_X86_64_STANDARD),
        ("m7g.large", eks.NodegroupAmiType.AL2023_ARM_64_STANDARD),
        ("c6i.xlarge", eks.NodegroupAmiType.AL2023_X86_64_STANDARD),
    ],
)
def test_the_image_is_the_one_aws_cdk_picked_without_a_launch_template(instance_type, ami_type):
    """aws-cdk's choice for these instance types without a launch template (the old node group's AmiType: the
    fixture of tests/test_simulator.py has AL2023_x86_64_STANDARD for t3.medium)."""
    assert system_ami_type(instance_type) == ami_type
