"""The app's KMS keys allow their service only what it needs (issue 33, point 4): CloudWatch Logs uses the flow log
key only for log groups of this account and region (the encryption context it sends), and no grant on either key is made except by an
AWS service for one of its resources (EKS's grant of the secrets encryption)."""

from __future__ import annotations

from constructs_lib.network import flow_log_key_context

ROOT_STATEMENT = {
    "Action": "kms:*",
    "Effect": "Allow",
    "Principal": {
        "AWS": {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":iam::", {"Ref": "AWS::AccountId"}, ":root"]]}
    },
    "Resource": "*",
}
NO_DIRECT_GRANTS = {
    "Action": "kms:CreateGrant",
    "Condition": {"Bool": {"kms:GrantIsForAWSResource": "false"}},
    "Effect": "Deny",
    "Principal": {"AWS": "*"},
    "Resource": "*",
    "Sid": "DenyGrantsNotForAnAwsResource",
}


def _keys(synthesized) -> dict[str, list[dict]]:
    resources = synthesized.template.to_json()["Resources"]
    return {
        lid: r["Properties"]["KeyPolicy"]["Statement"] for lid, r in resources.items() if r["Type"] == "AWS::KMS::Key"
    }


def test_cloudwatch_logs_may_use_the_flow_log_key_only_for_this_accounts_log_groups_in_this_region(default):
    resources = default.template.to_json()["Resources"]
    group = resources["NetworkFlowLogGroup4F8CEEEF"]["Properties"]
    assert "LogGroupName" not in group  # CloudFormation's name, as deployed stacks have it (no replacement)
    assert group["KmsKeyId"] == {"Fn::GetAtt": ["NetworkFlowLogKeyF785E5F9", "Arn"]}
    context = {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":logs:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                ":log-group:*",
            ],
        ]
    }
    assert default.stack.resolve(flow_log_key_context()) == context
    assert _keys(default)["NetworkFlowLogKeyF785E5F9"] == [
        ROOT_STATEMENT,
        {
            "Action": ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*"],
            "Condition": {"ArnLike": {"kms:EncryptionContext:aws:logs:arn": context}},
            "Effect": "Allow",
            "Principal": {"Service": {"Fn::Join": ["", ["logs.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]}},
            "Resource": "*",
        },
        NO_DIRECT_GRANTS,
    ]


def test_the_secrets_key_allows_only_grants_an_aws_service_makes_for_its_resources(default, production):
    """EKS sends no documented encryption context for secrets: the key policy keeps the account's IAM policies (the
    cluster-creation role's grant) and refuses every other grant."""
    for synthesized in (default, production):
        assert _keys(synthesized)["SecretsKey317DCF94"] == [ROOT_STATEMENT, NO_DIRECT_GRANTS]
    statements = default.template.to_json()["Resources"]["ClusterCreationRoleDefaultPolicyE8BDFC7B"]["Properties"][
        "PolicyDocument"
    ]["Statement"]
    (kms,) = [s for s in statements if any(a.startswith("kms:") for a in s["Action"])]
    assert kms == {
        "Action": ["kms:CreateGrant", "kms:Decrypt", "kms:DescribeKey", "kms:Encrypt"],
        "Effect": "Allow",
        "Resource": {"Fn::GetAtt": ["SecretsKey317DCF94", "Arn"]},
    }


def test_every_key_of_the_app_has_its_narrowed_policy(default, alternative, production):
    for synthesized in (default, alternative, production):
        keys = _keys(synthesized)
        assert sorted(keys) == ["NetworkFlowLogKeyF785E5F9", "SecretsKey317DCF94"]
        assert all(
            statements[0] == ROOT_STATEMENT and statements[-1] == NO_DIRECT_GRANTS for statements in keys.values()
        )
        # no statement but the account's own allows anything without a condition
        assert [s for st in keys.values() for s in st if s["Effect"] == "Allow" and "Condition" not in s] == [
            ROOT_STATEMENT,
            ROOT_STATEMENT,
        ]
