"""Service trusts narrowed to this account and cluster where the service supports it (issue 33, point 4): the
confused-deputy guards AWS documents for the VPC flow log delivery role and the Fargate pod execution role."""

from __future__ import annotations

import json

from tests.conftest import synth

PARTITION_REGION_ACCOUNT = [
    "arn:",
    {"Ref": "AWS::Partition"},
    ":{service}:",
    {"Ref": "AWS::Region"},
    ":",
    {"Ref": "AWS::AccountId"},
]


def _trust(synthesized, logical_id: str) -> dict:
    (statement,) = synthesized.template.to_json()["Resources"][logical_id]["Properties"]["AssumeRolePolicyDocument"][
        "Statement"
    ]
    return statement


def _arn(service: str, *rest) -> dict:
    head = [p.format(service=service) if isinstance(p, str) else p for p in PARTITION_REGION_ACCOUNT]
    return {"Fn::Join": ["", [*head, *rest]]}


def test_the_flow_log_role_trusts_only_this_accounts_flow_logs(default):
    assert _trust(default, "NetworkVpcFlowLogIAMRole654CF7A1") == {
        "Action": "sts:AssumeRole",
        "Effect": "Allow",
        "Principal": {"Service": "vpc-flow-logs.amazonaws.com"},
        "Condition": {
            "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
            "ArnLike": {"aws:SourceArn": _arn("ec2", ":vpc-flow-log/*")},
        },
    }


def test_the_pod_execution_role_trusts_only_this_clusters_fargate_profiles_in_both_hostings(default):
    for synthesized in (default, synth(controllerHosting="nodegroup")):
        assert _trust(synthesized, "ClusterfargateprofileKarpenterAndCoreDnsPodExecutionRole61D3A264") == {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"Service": "eks-fargate-pods.amazonaws.com"},
            "Condition": {"ArnLike": {"aws:SourceArn": _arn("eks", ":fargateprofile/eks-karpenter/*")}},
        }


def test_the_acknowledged_node_policies_say_which_eks_requires_and_which_is_the_projects_choice():
    """Issue 33, point 4: the SSM core policy was acknowledged as one EKS requires (the EKS User Guide's node IAM
    role lists WorkerNode, CNI and ECR pull only); it is the project's choice, and its reason says what it costs."""
    from tooling.generate_docs import documented_acknowledgments

    rows = [line for line in documented_acknowledgments().splitlines() if "iam::aws:policy/" in line]
    ssm = [r for r in rows if "AmazonSSMManagedInstanceCore" in r]
    node_roles = ("KarpenterNodeRole`", "WindowsNodeRole`", "ControllerHosting/NodeRole`")
    required = [
        r
        for r in rows
        if any(p in r for p in ("WorkerNodePolicy", "EKS_CNI_Policy", "RegistryPullOnly"))
        and any(n in r for n in node_roles)
    ]
    assert len(ssm) == 3 and len(required) == 9  # Karpenter's, Windows' and the system node group's roles
    assert all("The project's choice, not EKS's requirement" in r and "ssm:StartSession" in r for r in ssm)
    assert all("EKS requires of worker nodes (WorkerNode, CNI, ECR pull-only)" in r for r in required)
    assert not [r for r in rows if "SSM core" in r]  # no reason claims EKS requires it


def test_the_creation_roles_wildcard_acknowledgment_names_exactly_what_the_statement_holds(default):
    """Issue 33, point 4: the reason said every call on '*' has no resource-level permissions and that
    eks:CreateCluster is among them; neither was true. It now names the statement's actions as they are."""
    from karpenter_stack.acknowledgments import (
        CREATION_ROLE_WILDCARD,
        CREATION_ROLE_WILDCARD_EC2,
        CREATION_ROLE_WILDCARD_IAM,
    )

    statements = default.template.to_json()["Resources"]["ClusterCreationRoleDefaultPolicyE8BDFC7B"]["Properties"][
        "PolicyDocument"
    ]["Statement"]
    (wildcard,) = [s for s in statements if s["Resource"] == "*"]
    assert wildcard["Action"] == [*CREATION_ROLE_WILDCARD_EC2, *CREATION_ROLE_WILDCARD_IAM]
    assert all(a.startswith("ec2:Describe") for a in CREATION_ROLE_WILDCARD_EC2)
    assert "eks:" not in json.dumps(wildcard) and "eks:CreateCluster" not in CREATION_ROLE_WILDCARD
    for action in wildcard["Action"]:
        assert action in CREATION_ROLE_WILDCARD
