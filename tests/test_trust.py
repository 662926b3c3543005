"""Service trusts narrowed to this account and cluster where the service supports it (issue 33, point 4): the
confused-deputy guards AWS documents for the VPC flow log delivery role and the Fargate pod execution role."""

from __future__ import annotations

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
