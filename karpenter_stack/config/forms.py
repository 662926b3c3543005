"""The forms the settings' values take (what a CDK or CloudFormation parser, or AWS, expects): the patterns, the
tables of the settings with one form and the messages naming it, and the checks the configuration's models share
(``formatted``, ``_ipv4_network``, ``_unique``)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import overload

from pydantic import ValidationInfo

from constructs_lib.karpenter.specs.base import optional_match, quoted
from constructs_lib.karpenter.specs.ec2 import EC2_ID, INSTANCE_TYPE
from constructs_lib.karpenter.specs.rules import duplicates

_CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]*$")
_ROLE_NAME = re.compile(r"[A-Za-z0-9+=,.@_-]{1,64}", re.ASCII)
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SNS_TOPIC_ARN = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$")
_ADDON_VERSION = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$")
_VPC_ID = EC2_ID["vpc"]
_ACCOUNT = re.compile(r"^[0-9]{12}$")
_RELEASE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")
# AWS region names: <area>[-gov|-iso*]-<direction>-<n> (us-east-1, eu-central-2, us-gov-west-1, ap-southeast-7).
_REGION = re.compile(
    r"^[a-z]{2}(-gov|-iso[a-z]?)?-(north|south|east|west|central|northeast|northwest|southeast|"
    r"southwest)-[0-9]{1,2}$"
)
_SUBNET_ID, _SECURITY_GROUP_ID = EC2_ID["subnet"], EC2_ID["sg"]
ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/([\w+=,.@-]+/)*[\w+=,.@-]{1,64}$", re.ASCII)
_KUBERNETES_VERSION = re.compile(r"^1\.[0-9]+$")
_OIDC_PROVIDER_ARN = re.compile(
    r"^arn:aws[a-z-]*:iam::[0-9]{12}:oidc-provider/oidc\.eks\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/id/[A-Za-z0-9]+$"
)
# existingCluster field -> the form AWS gives it, and the message naming that form.
_ID_FORMATS = {
    "kubectl_role_arn": (ROLE_ARN, "must be an IAM role ARN like arn:aws:iam::<account>:role/<name>"),
    "open_id_connect_provider_arn": (
        _OIDC_PROVIDER_ARN,
        "must be an EKS OIDC provider ARN like arn:aws:iam::"
        "<account>:oidc-provider/oidc.eks.<region>.amazonaws.com/id/<ID>",
    ),
    "cluster_security_group_id": (_SECURITY_GROUP_ID, "must look like sg-0123456789abcdef0"),
    "vpc_id": (_VPC_ID, "must look like vpc-0123456789abcdef0"),
}
# Settings whose value has one form (what a CDK or CloudFormation parser, or AWS, expects) -> that form
# and the message naming it.
_FORMATS = {
    "kubernetes_version": (_KUBERNETES_VERSION, "must be a Kubernetes minor version of the form 1.NN, like 1.36"),
    "karpenter_version": (_RELEASE, "must be a Karpenter release like 1.14.1"),
    "account": (_ACCOUNT, "must be a 12-digit AWS account id"),
    "region": (_REGION, "must be an AWS region name like eu-west-1 or us-gov-west-1"),
    "system_node_instance_type": (INSTANCE_TYPE, "must be an EC2 instance type like t3.medium or m7g.large"),
    "alarm_topic_arn": (_SNS_TOPIC_ARN, "must be an SNS topic ARN like arn:aws:sns:<region>:<account>:<topic>"),
    "vpc_id": (_VPC_ID, "must look like vpc-0123456789abcdef0"),
}


@overload
def formatted(table: Mapping[str, tuple[re.Pattern[str], str]], value: str, info: ValidationInfo) -> str: ...
@overload
def formatted(
    table: Mapping[str, tuple[re.Pattern[str], str]], value: str | None, info: ValidationInfo
) -> str | None: ...
def formatted(table: Mapping[str, tuple[re.Pattern[str], str]], value: str | None, info: ValidationInfo) -> str | None:
    """A field validator's body for settings with one form: ``table`` maps the field to its pattern and
    the message naming that form."""
    pattern, message = table[info.field_name or ""]
    return optional_match(value, pattern, message)


def _ipv4_network(cidr: str) -> ipaddress.IPv4Network:
    try:
        return ipaddress.IPv4Network(cidr, strict=True)
    except ValueError:
        raise ValueError(f"{quoted(cidr)} is not an IPv4 CIDR like 10.0.0.0/16 (host bits must be zero)") from None


def _unique(setting: str, names: list[str], what: str = "names") -> None:
    problem = duplicates(setting, names, what)
    if problem:
        raise ValueError(problem)
