"""The customer-managed KMS keys of the nodes' EBS volumes (``volumeKmsKey``, a class file's ``ebs.kmsKeyID``): the
key the construct creates, with the key policy that lets its users launch with it, and the controller's use of
keys others keep.

Who uses the key when Karpenter launches a node, and what for:

* the controller's role calls ``CreateFleet``/``RunInstances``; EC2 then creates each volume with the caller's
  permissions: ``kms:CreateGrant``, ``kms:Decrypt``, ``kms:DescribeKey``, ``kms:GenerateDataKeyWithoutPlaintext``
  and ``kms:ReEncrypt*`` ("Permissions for users", Amazon EBS User Guide, "Requirements for Amazon EBS encryption",
  https://docs.aws.amazon.com/ebs/latest/userguide/ebs-encryption-requirements.html), grants only "when the grant
  is created on the user's behalf by an AWS service" (the same page's tip: ``kms:GrantIsForAWSResource``); the
  calls come through EC2, ``kms:ViaService`` ``ec2.<region>.amazonaws.com`` (AWS KMS Developer Guide, condition
  keys, kms:ViaService). Without them "the node terminat[es] almost immediately upon creation" (Karpenter 1.14 docs,
  Troubleshooting, "Node terminates before ready on failed encrypted EBS volume", whose example allows every
  principal of the account through EC2; the grants here name the controller's role instead);
* EC2's launching service-linked roles: EC2 Auto Scaling's ``AWSServiceRoleForAutoScaling`` needs "at minimum" two
  statements in the key policy, ``kms:Encrypt``, ``kms:Decrypt``, ``kms:ReEncrypt*``, ``kms:GenerateDataKey*``,
  ``kms:DescribeKey``, and ``kms:CreateGrant`` with ``kms:GrantIsForAWSResource`` true (Amazon EC2 Auto Scaling User
  Guide, "Required AWS KMS key policy for use with encrypted volumes",
  https://docs.aws.amazon.com/autoscaling/ec2/userguide/key-policy-requirements-EBS-encryption.html); EC2's
  ``AWSServiceRoleForEC2Spot`` needs the same use of the key for Spot Instances with encrypted snapshots (Amazon EC2
  User Guide, "Service-linked role for Spot Instances", "Grant access to customer managed keys for use with
  encrypted AMIs and EBS snapshots"). They are named by ``aws:PrincipalArn``, not as the statement's principal: KMS
  refuses a key policy naming a role that does not exist ("Policy contains a statement with one or more invalid
  principals": the IAM entity must exist, AWS Knowledge Center, kms-policy-error-invalid-principals,
  https://repost.aws/knowledge-center/kms-policy-error-invalid-principals), and neither role exists before the
  account first uses Auto Scaling or Spot (the cost: checkov's CKV_AWS_33 reads the wildcard principal, not the
  condition, and is skipped with that reason in karpenter_stack/checkov_skips.yaml).

The key's first statement stays aws-cdk's (the account's IAM policies decide, so the key can never be locked out).
A key someone else keeps gets the controller's two statements as an IAM policy scoped to its ARN (which works where
that key's policy delegates to IAM, as KMS's default key policy does); the statements its key policy needs besides
are :func:`owner_statements`, which the app names in a synth warning and docs/security.md prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

# What EC2 does with the key on the launching principal's behalf (EBS User Guide's list; ReEncrypt* spelled out).
LAUNCH_ACTIONS = (
    "kms:Decrypt",
    "kms:DescribeKey",
    "kms:GenerateDataKeyWithoutPlaintext",
    "kms:ReEncryptFrom",
    "kms:ReEncryptTo",
)
# The Auto Scaling User Guide's first statement, as it writes it.
SERVICE_ROLE_ACTIONS = ("kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey")
# EC2's launching service-linked roles, by path and name.
SERVICE_LINKED_ROLES = (
    "aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling",
    "aws-service-role/spot.amazonaws.com/AWSServiceRoleForEC2Spot",
)
SIDS = {
    "launch": "KarpenterControllerLaunchesThroughEc2",
    "grant": "KarpenterControllerGrantsForVolumes",
    "service": "Ec2LaunchServiceRolesUseTheKey",
    "service_grant": "Ec2LaunchServiceRolesGrantForVolumes",
}
GRANT_FOR_AWS_RESOURCE = {"Bool": {"kms:GrantIsForAWSResource": "true"}}


def via_ec2(region: str, account: str) -> dict[str, dict[str, str]]:
    """The calls EC2 makes on a principal's behalf in ``region``, for principals of ``account``."""
    return {"StringEquals": {"kms:ViaService": f"ec2.{region}.amazonaws.com", "kms:CallerAccount": account}}


def service_linked_role_arns(partition: str, account: str) -> list[str]:
    return [f"arn:{partition}:iam::{account}:role/{path}" for path in SERVICE_LINKED_ROLES]


def controller_statements(
    principals: Sequence[iam.IPrincipal], resources: Sequence[str], region: str, account: str
) -> list[iam.PolicyStatement]:
    """The controller's use of the key through EC2, and its grants for the volumes EC2 creates."""
    return [
        iam.PolicyStatement(
            sid=SIDS["launch"],
            principals=list(principals),
            actions=list(LAUNCH_ACTIONS),
            resources=list(resources),
            conditions=via_ec2(region, account),
        ),
        iam.PolicyStatement(
            sid=SIDS["grant"],
            principals=list(principals),
            actions=["kms:CreateGrant"],
            resources=list(resources),
            conditions={**via_ec2(region, account), **GRANT_FOR_AWS_RESOURCE},
        ),
    ]


def service_role_statements(partition: str, account: str) -> list[iam.PolicyStatement]:
    """The Auto Scaling User Guide's two statements, for EC2's launching service-linked roles by aws:PrincipalArn."""
    roles = {"ArnEquals": {"aws:PrincipalArn": service_linked_role_arns(partition, account)}}
    return [
        iam.PolicyStatement(
            sid=SIDS["service"],
            principals=[iam.AnyPrincipal()],
            actions=list(SERVICE_ROLE_ACTIONS),
            resources=["*"],
            conditions=roles,
        ),
        iam.PolicyStatement(
            sid=SIDS["service_grant"],
            principals=[iam.AnyPrincipal()],
            actions=["kms:CreateGrant"],
            resources=["*"],
            conditions={**roles, **GRANT_FOR_AWS_RESOURCE},
        ),
    ]


def owner_statements(controller_role_arn: str, *, partition: str, region: str, account: str) -> list[dict[str, Any]]:
    """The statements the key policy of a key someone else keeps needs (its own key policy, in its account): the
    controller's two, where that policy does not delegate to the account's IAM policies, and the service-linked
    roles' two; as JSON."""
    role = iam.ArnPrincipal(controller_role_arn)
    statements = [
        *controller_statements([role], ["*"], region, account),
        *service_role_statements(partition, account),
    ]
    return [s.to_json() for s in statements]


class VolumeKeys(Construct):
    """The key of classes with ``volumeKmsKey`` create (``key``, or None) and the controller's IAM policy for the
    keys of others the classes name (``grants``, or None)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster_name: str,
        controller_role: iam.IRole,
        create: bool,
        key_arns: Sequence[str],
    ) -> None:
        super().__init__(scope, id)
        self.key: kms.Key | None = None
        self.grants: iam.ManagedPolicy | None = None
        if create:
            self.key = kms.Key(
                self,
                "Key",
                description=f"EBS volumes of the nodes Karpenter launches in EKS cluster {cluster_name}",
                enable_key_rotation=True,
            )
            for statement in [
                *controller_statements([controller_role], ["*"], Aws.REGION, Aws.ACCOUNT_ID),
                *service_role_statements(Aws.PARTITION, Aws.ACCOUNT_ID),
            ]:
                self.key.add_to_resource_policy(statement)
        if key_arns:
            self.grants = iam.ManagedPolicy(
                self,
                "ExistingKeysUse",
                roles=[controller_role],
                description="Karpenter controller: encrypt node volumes with the given customer-managed keys",
                statements=controller_statements([], key_arns, Aws.REGION, Aws.ACCOUNT_ID),
            )
