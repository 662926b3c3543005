"""The Karpenter CloudFormation template (templates/) and the nested stack that imports it."""

from __future__ import annotations

import json
import re

import pytest

from constructs_lib.karpenter import template_parity
from constructs_lib.karpenter.infra import CONTROLLER_POLICIES, INTERRUPTION_QUEUE, NODE_ROLE
from karpenter_stack import versions
from tests.cfn import each


def load_template(version: str) -> dict:
    return template_parity.load_template(versions.karpenter_template(version))


def policy_document(template: dict, logical_id: str) -> dict:
    """The JSON policy of a managed policy written as !Sub over a JSON string, with the
    substitutions left as ${...} markers."""
    doc = template["Resources"][logical_id]["Properties"]["PolicyDocument"]["Fn::Sub"]
    return json.loads(doc)


@pytest.fixture(scope="module")
def tmpl() -> dict:
    return load_template("1.14.1")


def test_available_versions_are_the_templates_on_disk():
    # imported: tooling/releases/karpenter_import.py
    assert versions.available_karpenter_versions() == ["1.13.1", "1.14.1"]


@pytest.mark.parametrize("version", versions.available_karpenter_versions())
def test_every_template_has_the_resources_the_app_reads(version):
    template = load_template(version)
    assert set(template["Parameters"]) == {"ClusterName"}
    for logical_id in (NODE_ROLE, INTERRUPTION_QUEUE, *CONTROLLER_POLICIES):
        assert logical_id in template["Resources"], f"{logical_id} missing from karpenter-{version}.yaml"


def test_template_resource_inventory(tmpl):
    by_type: dict[str, list[str]] = {}
    for logical_id, res in each(tmpl["Resources"].items()):
        by_type.setdefault(res["Type"], []).append(logical_id)
    assert {t: len(ids) for t, ids in by_type.items()} == {
        "AWS::IAM::Role": 1,
        "AWS::IAM::ManagedPolicy": 6,
        "AWS::SQS::Queue": 1,
        "AWS::SQS::QueuePolicy": 1,
        "AWS::Events::Rule": 5,
    }
    assert sorted(by_type["AWS::IAM::ManagedPolicy"]) == sorted(CONTROLLER_POLICIES)


def test_node_role_is_trusted_by_ec2_only_with_four_managed_policies(tmpl):
    props = tmpl["Resources"][NODE_ROLE]["Properties"]
    assert props["RoleName"] == {"Fn::Sub": "KarpenterNodeRole-${ClusterName}"}
    assert props["AssumeRolePolicyDocument"]["Statement"] == [
        {"Effect": "Allow", "Principal": {"Service": {"Fn::Sub": "ec2.${AWS::URLSuffix}"}}, "Action": "sts:AssumeRole"}
    ]
    assert [p["Fn::Sub"] for p in props["ManagedPolicyArns"]] == [
        "arn:${AWS::Partition}:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:${AWS::Partition}:iam::aws:policy/AmazonEKS_CNI_Policy",
        "arn:${AWS::Partition}:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
        "arn:${AWS::Partition}:iam::aws:policy/AmazonSSMManagedInstanceCore",
    ]


def test_managed_policy_names_carry_the_cluster_name(tmpl):
    for logical_id in CONTROLLER_POLICIES:
        name = tmpl["Resources"][logical_id]["Properties"]["ManagedPolicyName"]
        assert name == {"Fn::Sub": f"{logical_id}-${{ClusterName}}"}


def test_no_hard_coded_partition_region_or_account(tmpl):
    text = versions.karpenter_template("1.14.1").read_text()
    assert "arn:aws:" not in text
    assert not re.search(r"\b\d{12}\b", text)
    assert not re.search(r"\b(us|eu|ap|sa|ca|me|af)-(east|west|north|south|central|northeast|southeast)-\d\b", text)


def test_pass_role_only_for_the_node_role_and_only_to_ec2(tmpl):
    statements = policy_document(tmpl, "KarpenterControllerIAMIntegrationPolicy")["Statement"]
    pass_role = [s for s in statements if "iam:PassRole" in json.dumps(s["Action"])]
    assert pass_role == [
        {
            "Sid": "PassNodeRoleToEC2Only",
            "Effect": "Allow",
            "Action": "iam:PassRole",
            "Resource": "${KarpenterNodeRole.Arn}",
            "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
        }
    ]


def test_launch_and_delete_are_scoped_to_cluster_owned_resources(tmpl):
    statements = {s["Sid"]: s for s in policy_document(tmpl, "KarpenterControllerNodeLifecyclePolicy")["Statement"]}
    owned = "aws:ResourceTag/kubernetes.io/cluster/${ClusterName}"
    assert statements["DeleteClusterInstancesAndLaunchTemplates"]["Action"] == [
        "ec2:TerminateInstances",
        "ec2:DeleteLaunchTemplate",
    ]
    assert statements["DeleteClusterInstancesAndLaunchTemplates"]["Condition"] == {
        "StringEquals": {owned: "owned"},
        "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
    }
    create = statements["CreateClusterTaggedResources"]["Condition"]
    assert create["StringEquals"] == {
        "aws:RequestTag/kubernetes.io/cluster/${ClusterName}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": "${ClusterName}",
    }
    tag_on_create = statements["TagOnCreate"]["Condition"]["StringEquals"]["ec2:CreateAction"]
    assert tag_on_create == ["RunInstances", "CreateFleet", "CreateLaunchTemplate"]
    retag = statements["TagClusterInstances"]["Condition"]["ForAllValues:StringEquals"]["aws:TagKeys"]
    assert retag == ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]


def test_only_describe_pricing_and_list_actions_are_unscoped(tmpl):
    """Resource '*' is allowed only where AWS has no resource-level permissions."""
    unscoped = set()
    for logical_id in CONTROLLER_POLICIES:
        for statement in each(policy_document(tmpl, logical_id)["Statement"]):
            if statement["Resource"] == "*":
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                unscoped.update(actions)
    assert unscoped == {
        "arc-zonal-shift:GetManagedResource",
        "ec2:DescribeCapacityReservations",
        "ec2:DescribeImages",
        "ec2:DescribeInstances",
        "ec2:DescribeInstanceStatus",
        "ec2:DescribeInstanceTypeOfferings",
        "ec2:DescribeInstanceTypes",
        "ec2:DescribeLaunchTemplates",
        "ec2:DescribePlacementGroups",
        "ec2:DescribeSecurityGroups",
        "ec2:DescribeSpotPriceHistory",
        "ec2:DescribeSubnets",
        "pricing:GetProducts",
        "iam:ListInstanceProfiles",
    }


def test_eks_interruption_and_zonal_shift_policies_name_this_cluster_and_queue(tmpl):
    eks_doc = policy_document(tmpl, "KarpenterControllerEKSIntegrationPolicy")["Statement"]
    assert [(s["Action"], s["Resource"]) for s in eks_doc] == [
        ("eks:DescribeCluster", "arn:${AWS::Partition}:eks:${AWS::Region}:${AWS::AccountId}:cluster/${ClusterName}")
    ]
    sqs_doc = policy_document(tmpl, "KarpenterControllerInterruptionPolicy")["Statement"]
    assert [(s["Action"], s["Resource"]) for s in sqs_doc] == [
        (["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"], "${KarpenterInterruptionQueue.Arn}")
    ]
    zonal = policy_document(tmpl, "KarpenterControllerZonalShiftPolicy")["Statement"][0]
    assert zonal["Condition"] == {
        "StringEquals": {
            "arc-zonal-shift:ResourceIdentifier": "arn:${AWS::Partition}:eks:${AWS::Region}:${AWS::AccountId}:cluster/${ClusterName}"
        }
    }


def test_interruption_queue_is_named_after_the_cluster_encrypted_and_tls_only(tmpl):
    queue = tmpl["Resources"][INTERRUPTION_QUEUE]["Properties"]
    assert queue == {"QueueName": {"Ref": "ClusterName"}, "MessageRetentionPeriod": 300, "SqsManagedSseEnabled": True}
    statements = tmpl["Resources"]["KarpenterInterruptionQueuePolicy"]["Properties"]["PolicyDocument"]["Statement"]
    allow, deny = statements
    assert allow["Principal"] == {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]}
    assert allow["Action"] == "sqs:SendMessage"
    assert (deny["Effect"], deny["Principal"], deny["Action"]) == ("Deny", "*", "sqs:*")
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_five_eventbridge_rules_feed_the_queue(tmpl):
    rules = {
        (r["Properties"]["EventPattern"]["source"][0], r["Properties"]["EventPattern"]["detail-type"][0])
        for r in tmpl["Resources"].values()
        if r["Type"] == "AWS::Events::Rule"
    }
    assert rules == {
        ("aws.health", "AWS Health Event"),
        ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
        ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
        ("aws.ec2", "EC2 Instance State-change Notification"),
        ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
    }
    for res in each(tmpl["Resources"].values()):
        if res["Type"] == "AWS::Events::Rule":
            assert res["Properties"]["Targets"] == [
                {"Id": "KarpenterInterruptionQueueTarget", "Arn": {"Fn::GetAtt": [INTERRUPTION_QUEUE, "Arn"]}}
            ]


def test_nested_stack_includes_the_template_unchanged_and_receives_cluster_name(default):
    nested = default.karpenter_json
    assert nested["Parameters"]["ClusterName"]["Type"] == "String"
    source = load_template("1.14.1")
    for logical_id, res in each(source["Resources"].items()):
        assert nested["Resources"][logical_id]["Type"] == res["Type"]
    stack_id = default.stack.resolve(default.stack.karpenter.infra.nested_stack_resource.logical_id)
    assert default.json["Resources"][stack_id]["Properties"]["Parameters"] == {"ClusterName": "eks-karpenter"}
