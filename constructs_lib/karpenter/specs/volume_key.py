"""The customer-managed KMS key of a node class's EBS volumes (``volumeKmsKey``, and ``ebs.kmsKeyID`` of a class
file): its forms and the one-line refusal of any other.

Two forms, both grantable by key ARN:

* ``create``: one key of the construct's own, with yearly rotation, whose key policy lets the controller and EC2's
  launching service-linked roles use it (``constructs_lib/karpenter/volume_key.py``);
* a key ARN, ``arn:<partition>:kms:<region>:<account>:key/<key id>``: a key someone else keeps; the construct lets
  the controller role use it (an IAM policy scoped to that ARN) and the synth names the key-policy statements the
  key's owner adds.

An alias (``alias/nodes``, its ARN) or a bare key id is refused, though EC2 takes them: a grant names a key by its key
ARN, and "when an alias is the value of a resource element, the policy applies to the alias resource, not to any KMS
key that might be associated with it" (AWS KMS Developer Guide, "Use aliases to control access to KMS keys",
https://docs.aws.amazon.com/kms/latest/developerguide/alias-authorization.html); a bare id names no region or account
to scope a grant to. Resolving an alias at synth would need credentials (the synth needs none) and would pin the key
the alias named then, silently.

EC2 takes the key only for an encrypted volume: "If KmsKeyId is specified, the encrypted state must be true" (EC2
API Reference, EbsBlockDevice / CreateVolume ``KmsKeyId``); the volumes the app writes are encrypted, and a file's
mapping with ``kmsKeyID`` must say ``encrypted: true``. EBS takes symmetric keys only (EBS User Guide, "Amazon EBS
encryption"), which the synth cannot see of a key ARN.
"""

from __future__ import annotations

import re

CREATE = "create"
# A KMS key ARN: partition, region, account, and a key id (a UUID, or mrk-<32 hex> for a multi-Region key).
KEY_ARN = re.compile(
    r"arn:(aws[a-z-]*):kms:([a-z]{2}(?:-[a-z]+)+-[0-9]):([0-9]{12}):key/"
    r"(?:mrk-[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})",
    re.ASCII,
)
KEY_ARN_FORM = "arn:<partition>:kms:<region>:<account>:key/<key id>"
# Where the construct's own key is not built yet (the size checks of an object, the offline schema checks): the
# longest key ARN of the form, standing in for the ARN the deploy writes.
STAND_IN_ARN = "arn:aws-iso-b:kms:us-isob-east-1:000000000000:key/mrk-" + "0" * 32


def key_problem(value: str, *, create: bool = True) -> str | None:
    """None when ``value`` is a key ARN (or, with ``create``, ``create``); else what is allowed, for a message that has
    named the setting and the value."""
    if (create and value == CREATE) or KEY_ARN.fullmatch(value):
        return None
    allowed = f"{KEY_ARN_FORM}{' or create (a key of the app, rotated yearly)' if create else ''}"
    if value.startswith("alias/") or ":alias/" in value:
        return (
            f"an alias: write the key's ARN, {allowed}: a grant names a key by its key ARN, and a policy naming an alias "
            f"applies to the alias, not its key ({_lookup(value)} prints the ARN)"
        )
    if KEY_ARN.fullmatch(f"arn:aws:kms:us-east-1:000000000000:key/{value}"):
        return f"a key id without its ARN: write {allowed}, so that the grants name the key ({_lookup(value)})"
    return f"must be {allowed}"


def key_region(arn: str) -> str:
    """The region of a key ARN (KEY_ARN's)."""
    match = KEY_ARN.fullmatch(arn)
    assert match is not None
    return match.group(2)


def _lookup(value: str) -> str:
    return f"aws kms describe-key --key-id {value} --query KeyMetadata.Arn"
