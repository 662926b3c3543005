"""What the app's KMS keys allow beyond their account's IAM policies (issue 33, point 4).

Every key keeps aws-cdk's first statement (the account's IAM policies decide, so the key can never be locked out)
and adds the narrowest statements its service supports: the service principal only with the encryption context
the service sends (the flow log key, constructs_lib/network.py), and no grant that is not for an AWS resource.
"""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms

# A grant is a way around the key policy: it gives its grantee the key's use until it is retired. KMS's
# kms:GrantIsForAWSResource is true only when an AWS service integrated with KMS creates the grant on the
# caller's behalf (AWS KMS Developer Guide, "AWS KMS condition keys", kms:GrantIsForAWSResource,
# https://docs.aws.amazon.com/kms/latest/developerguide/conditions-kms.html#conditions-kms-grant-is-for-aws-resource;
# the console's default key policy allows key users grants only so, "Allow attachment of persistent resources").
# EKS creates the grant of its secrets encryption so, on CreateCluster (what aws-cdk's cluster-creation role is
# given kms:CreateGrant for); nobody else needs one on these keys.
NO_DIRECT_GRANTS_SID = "DenyGrantsNotForAnAwsResource"


def deny_direct_grants(key: kms.Key) -> None:
    """Refuse every CreateGrant on ``key`` that an AWS service does not make for one of its resources."""
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid=NO_DIRECT_GRANTS_SID,
            effect=iam.Effect.DENY,
            principals=[iam.AnyPrincipal()],
            actions=["kms:CreateGrant"],
            resources=["*"],
            conditions={"Bool": {"kms:GrantIsForAWSResource": "false"}},
        )
    )
