"""The one table of what grants IAM access in a CloudFormation template (constructs_lib/karpenter/iam_resources.py reads it).

:data:`GRANTING`: each resource type that holds, directs or attaches a policy, with the properties that do it;
:data:`NO_GRANT`: the IAM types that grant nothing by themselves. An ``AWS::IAM::*`` type in neither is refused by
the gate, so a type CloudFormation adds is a decision here, not a silent pass."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    """A resource type that grants: the properties that hold, direct or attach its grants."""

    properties: tuple[str, ...]
    documents: tuple[str, ...] = ()  # properties that hold one policy document
    identity: str = ""  # "role", "user", "group": the resource is a principal, named by name_property
    name_property: str = ""
    attaches: tuple[tuple[str, str], ...] = ()  # (property, kind) of the principals a policy is attached to
    to_one: tuple[str, str] = ("", "")  # (property, kind) of the one principal an inline policy belongs to


_ATTACH = (("Roles", "role"), ("Users", "user"), ("Groups", "group"))
_RESOURCE_POLICY_DOC = ("PolicyDocument",)

GRANTING: dict[str, Kind] = {
    "AWS::IAM::Role": Kind(
        ("RoleName", "Policies", "ManagedPolicyArns", "AssumeRolePolicyDocument", "PermissionsBoundary"),
        documents=("AssumeRolePolicyDocument",),
        identity="role",
        name_property="RoleName",
    ),
    "AWS::IAM::User": Kind(
        ("UserName", "Policies", "ManagedPolicyArns", "Groups", "PermissionsBoundary"),
        identity="user",
        name_property="UserName",
    ),
    "AWS::IAM::Group": Kind(
        ("GroupName", "Policies", "ManagedPolicyArns"), identity="group", name_property="GroupName"
    ),
    "AWS::IAM::Policy": Kind(("PolicyDocument", "Roles", "Users", "Groups"), ("PolicyDocument",), attaches=_ATTACH),
    "AWS::IAM::ManagedPolicy": Kind(
        ("PolicyDocument", "Roles", "Users", "Groups"), ("PolicyDocument",), attaches=_ATTACH
    ),
    "AWS::IAM::RolePolicy": Kind(("PolicyDocument", "RoleName"), ("PolicyDocument",), to_one=("RoleName", "role")),
    "AWS::IAM::UserPolicy": Kind(("PolicyDocument", "UserName"), ("PolicyDocument",), to_one=("UserName", "user")),
    "AWS::IAM::GroupPolicy": Kind(("PolicyDocument", "GroupName"), ("PolicyDocument",), to_one=("GroupName", "group")),
    "AWS::IAM::InstanceProfile": Kind(("Roles",)),
    "AWS::IAM::UserToGroupAddition": Kind(("GroupName", "Users")),
    "AWS::IAM::AccessKey": Kind(("UserName", "Status")),
    "AWS::IAM::ServiceLinkedRole": Kind(("AWSServiceName",)),
    # an identity provider lets identities from outside the account assume the roles that trust it
    "AWS::IAM::OIDCProvider": Kind(("Url", "ClientIdList")),
    "AWS::IAM::SAMLProvider": Kind(("SamlMetadataDocument",)),
    "AWS::CloudFormation::Stack": Kind(("TemplateURL", "Parameters")),
    # resource policies
    "AWS::SQS::QueuePolicy": Kind(("PolicyDocument",), _RESOURCE_POLICY_DOC),
    "AWS::SQS::QueueInlinePolicy": Kind(("PolicyDocument",), _RESOURCE_POLICY_DOC),
    "AWS::SNS::TopicPolicy": Kind(("PolicyDocument",), _RESOURCE_POLICY_DOC),
    "AWS::SNS::TopicInlinePolicy": Kind(("PolicyDocument",), _RESOURCE_POLICY_DOC),
    "AWS::S3::BucketPolicy": Kind(("PolicyDocument",), _RESOURCE_POLICY_DOC),
    "AWS::KMS::Key": Kind(("KeyPolicy",), ("KeyPolicy",)),
    "AWS::SecretsManager::ResourcePolicy": Kind(("ResourcePolicy",), ("ResourcePolicy",)),
    "AWS::ECR::Repository": Kind(("RepositoryPolicyText",), ("RepositoryPolicyText",)),
    "AWS::Logs::ResourcePolicy": Kind(("PolicyDocument",), _RESOURCE_POLICY_DOC),
    "AWS::Lambda::Permission": Kind(("Action", "Principal", "FunctionName", "SourceArn", "SourceAccount")),
}

# IAM types that grant nothing by themselves (what they hold is not access).
NO_GRANT = {
    "AWS::IAM::ServerCertificate": "a TLS certificate for a load balancer or CloudFront",
    "AWS::IAM::VirtualMFADevice": "an MFA device of users: it narrows their access",
}


def is_iam_type(kind: str) -> bool:
    """Whether a resource type is one the gate must know: IAM's own, or one of the table."""
    return kind.startswith("AWS::IAM::") or kind in GRANTING


def grant_properties(kind: str) -> tuple[str, ...]:
    """The properties of a resource type that hold, direct or attach grants (none for a type that grants nothing)."""
    return GRANTING[kind].properties if kind in GRANTING else ()
