"""Issue 43, point 4: the nodes' EBS volumes encrypted with a customer-managed KMS key -- a key the app creates
(``volumeKmsKey: create``) or one someone else keeps (a key ARN, typed or a class file's ``ebs.kmsKeyID``): the
EC2NodeClass names it, the key policy or the controller's IAM policy grants what launching needs, a key the app does
not create is a synth warning naming the statements its owner adds, and the production profile's encryption rule is
satisfied by it (constructs_lib/karpenter/volume_key.py, specs/volume_key.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.karpenter.specs.node_class import NodeClassSpec
from constructs_lib.karpenter.volume_key import owner_statements
from karpenter_stack.application import build, new_app
from karpenter_stack.config import ConfigError, load_config
from tests.cfn import kubernetes_objects, only, render, resources
from tests.conftest import ROOT, TODAY, synth
from tooling.configurations import ADMINISTRATOR, PRODUCT_CONTEXT

KEY = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
OTHER_KEY = "arn:aws:kms:eu-west-1:111122223333:key/mrk-0123456789abcdef0123456789abcdef"
ENVIRONMENT = {"account": "111122223333", "region": "eu-west-1"}
VIA_EC2 = {"kms:ViaService": "ec2.${Ref:AWS::Region}.amazonaws.com", "kms:CallerAccount": "${Ref:AWS::AccountId}"}
SERVICE_ROLES = [
    "arn:${Ref:AWS::Partition}:iam::${Ref:AWS::AccountId}:role/aws-service-role/autoscaling.amazonaws.com/"
    "AWSServiceRoleForAutoScaling",
    "arn:${Ref:AWS::Partition}:iam::${Ref:AWS::AccountId}:role/aws-service-role/spot.amazonaws.com/"
    "AWSServiceRoleForEC2Spot",
]
CONTROLLER = "${GetAtt:ControllerRole4FED04D7.Arn}"
LAUNCH = [
    "kms:Decrypt",
    "kms:DescribeKey",
    "kms:GenerateDataKeyWithoutPlaintext",
    "kms:ReEncryptFrom",
    "kms:ReEncryptTo",
]


def _rendered(value: Any) -> Any:
    """A policy document with its intrinsics rendered as readable placeholders (tests.cfn.render)."""
    if isinstance(value, dict) and not (len(value) == 1 and next(iter(value)).startswith(("Fn::", "Ref"))):
        return {k: _rendered(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rendered(v) for v in value]
    return render(value) if isinstance(value, dict) else value


def _volumes(obj: dict) -> list[dict]:
    return obj["spec"]["blockDeviceMappings"]


# --- the typed setting ----------------------------------------------------------------------------------------


def test_every_volume_of_a_typed_class_names_the_key():
    bottlerocket = NodeClassSpec(
        ami_alias="bottlerocket@latest",
        volume_kms_key="create",
        data_volumes=[{"deviceName": "/dev/xvdf", "sizeGib": 100}],
    )
    mappings = bottlerocket.manifest(cluster_name="c", node_role_name="r", volume_key_arn="KEY-ARN")
    # Bottlerocket's OS volume, its data volume for images and pods, the extra data volume
    assert [(m["deviceName"], m["ebs"]["encrypted"], m["ebs"]["kmsKeyID"]) for m in _volumes(mappings)] == [
        ("/dev/xvda", True, "KEY-ARN"),
        ("/dev/xvdb", True, "KEY-ARN"),
        ("/dev/xvdf", True, "KEY-ARN"),
    ]
    kept = NodeClassSpec(volume_kms_key=KEY)
    assert _volumes(kept.manifest(cluster_name="c", node_role_name="r")) == [
        {
            "deviceName": "/dev/xvda",
            "ebs": {
                "volumeSize": "50Gi",
                "volumeType": "gp3",
                "encrypted": True,
                "deleteOnTermination": True,
                "kmsKeyID": KEY,
            },
        }
    ]
    assert (kept.volume_key_arns, kept.creates_volume_key) == ([KEY], False)
    assert (bottlerocket.volume_key_arns, bottlerocket.creates_volume_key) == ([], True)
    # unset: the account's default EBS key, as before
    assert "kmsKeyID" not in _volumes(NodeClassSpec().manifest(cluster_name="c", node_role_name="r"))[0]["ebs"]


BAD_KEYS = {
    "alias": (
        "alias/nodes",
        'nodeClasses[0].volumeKmsKey = "alias/nodes": an alias: write the key\'s ARN, '
        "arn:<partition>:kms:<region>:<account>:key/<key id> or create (a key of the app, rotated yearly): a grant "
        "names a key by its key ARN, and a policy naming an alias applies to the alias, not its key (aws kms "
        "describe-key --key-id alias/nodes --query KeyMetadata.Arn prints the ARN) (from -c)",
    ),
    "alias ARN": (
        "arn:aws:kms:eu-west-1:111122223333:alias/nodes",
        'nodeClasses[0].volumeKmsKey = "arn:aws:kms:eu-west-1:111122223333:alias/nodes": an alias: write the key\'s '
        "ARN, arn:<partition>:kms:<region>:<account>:key/<key id> or create (a key of the app, rotated yearly): a "
        "grant names a key by its key ARN, and a policy naming an alias applies to the alias, not its key (aws kms "
        "describe-key --key-id arn:aws:kms:eu-west-1:111122223333:alias/nodes --query KeyMetadata.Arn prints the "
        "ARN) (from -c)",
    ),
    "key id without its ARN": (
        "1234abcd-12ab-34cd-56ef-1234567890ab",
        'nodeClasses[0].volumeKmsKey = "1234abcd-12ab-34cd-56ef-1234567890ab": a key id without its ARN: write '
        "arn:<partition>:kms:<region>:<account>:key/<key id> or create (a key of the app, rotated yearly), so that "
        "the grants name the key (aws kms describe-key --key-id 1234abcd-12ab-34cd-56ef-1234567890ab --query "
        "KeyMetadata.Arn) (from -c)",
    ),
    "anything else": (
        "yes",
        'nodeClasses[0].volumeKmsKey = "yes": must be arn:<partition>:kms:<region>:<account>:key/<key id> or create '
        "(a key of the app, rotated yearly) (from -c)",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_KEYS))
def test_a_key_the_grants_cannot_name_is_one_line_and_builds_nothing(case, tmp_path: Path):
    value, message = BAD_KEYS[case]
    app = new_app(
        context={**PRODUCT_CONTEXT, "nodeClasses": [{"name": "default", "volumeKmsKey": value}]}, outdir=str(tmp_path)
    )
    with pytest.raises(ConfigError) as info:
        build(app, today=TODAY)
    assert str(info.value) == message
    assert app.node.children == []
    assert list(tmp_path.iterdir()) == []


def test_a_key_of_another_region_or_partition_is_refused():
    elsewhere = KEY.replace("eu-west-1", "us-east-1")
    with pytest.raises(ConfigError) as info:
        load_config({**PRODUCT_CONTEXT, **ENVIRONMENT, "nodeClasses": [{"volumeKmsKey": elsewhere}]}, today=TODAY)
    assert str(info.value) == (
        f"nodeClasses[0].volumeKmsKey '{elsewhere}': a key of region us-east-1, but region is 'eu-west-1'; the nodes' "
        "volumes take a key of their own region (from cdk.json)"
    )
    china = KEY.replace("arn:aws:", "arn:aws-cn:")
    with pytest.raises(ConfigError) as info:
        load_config({**PRODUCT_CONTEXT, **ENVIRONMENT, "nodeClasses": [{"volumeKmsKey": china}]}, today=TODAY)
    assert str(info.value) == (
        f"nodeClasses[0].volumeKmsKey '{china}' is in partition aws-cn, but region 'eu-west-1' is in partition aws "
        "(ARNs there start arn:aws:) (from cdk.json)"
    )


# --- a key the app creates ------------------------------------------------------------------------------------


def test_the_created_key_is_rotated_and_its_policy_lets_the_controller_and_ec2s_launching_roles_use_it(
    example_golden_image,
):
    template = example_golden_image.template
    logical_id, key = only({k: v for k, v in resources(template, "AWS::KMS::Key").items() if "VolumeKeys" in k})
    assert logical_id == "VolumeKeysKeyEB4F4D4C"  # one key for every class with create
    properties = key["Properties"]
    assert properties["EnableKeyRotation"] is True
    assert properties["Description"] == "EBS volumes of the nodes Karpenter launches in EKS cluster eks-karpenter"
    statements = _rendered(properties["KeyPolicy"]["Statement"])
    assert statements[0] == {
        "Action": "kms:*",
        "Effect": "Allow",
        "Principal": {"AWS": "arn:${Ref:AWS::Partition}:iam::${Ref:AWS::AccountId}:root"},
        "Resource": "*",
    }
    assert statements[1:] == [
        {
            "Sid": "KarpenterControllerLaunchesThroughEc2",
            "Action": LAUNCH,
            "Condition": {"StringEquals": VIA_EC2},
            "Effect": "Allow",
            "Principal": {"AWS": CONTROLLER},
            "Resource": "*",
        },
        {
            "Sid": "KarpenterControllerGrantsForVolumes",
            "Action": "kms:CreateGrant",
            "Condition": {"StringEquals": VIA_EC2, "Bool": {"kms:GrantIsForAWSResource": "true"}},
            "Effect": "Allow",
            "Principal": {"AWS": CONTROLLER},
            "Resource": "*",
        },
        {
            # the Auto Scaling User Guide's first statement ("Required AWS KMS key policy for use with encrypted
            # volumes"), for the roles by aws:PrincipalArn: KMS refuses a policy naming a role that does not exist yet
            "Sid": "Ec2LaunchServiceRolesUseTheKey",
            "Action": ["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*"],
            "Condition": {"ArnEquals": {"aws:PrincipalArn": SERVICE_ROLES}},
            "Effect": "Allow",
            "Principal": {"AWS": "*"},
            "Resource": "*",
        },
        {
            "Sid": "Ec2LaunchServiceRolesGrantForVolumes",
            "Action": "kms:CreateGrant",
            "Condition": {
                "ArnEquals": {"aws:PrincipalArn": SERVICE_ROLES},
                "Bool": {"kms:GrantIsForAWSResource": "true"},
            },
            "Effect": "Allow",
            "Principal": {"AWS": "*"},
            "Resource": "*",
        },
        {
            # as on the app's other keys (constructs_lib/key_policies.py)
            "Sid": "DenyGrantsNotForAnAwsResource",
            "Action": "kms:CreateGrant",
            "Condition": {"Bool": {"kms:GrantIsForAWSResource": "false"}},
            "Effect": "Deny",
            "Principal": {"AWS": "*"},
            "Resource": "*",
        },
    ]
    # what a standard stack's destroy does with keys (constructs_lib/destroy_policy.py): deleted after 7 days
    assert (key["DeletionPolicy"], key["UpdateReplacePolicy"], properties["PendingWindowInDays"]) == (
        "Delete",
        "Retain",
        7,
    )
    assert (
        render(example_golden_image.json["Outputs"]["VolumeKeyArn"]["Value"]) == "${GetAtt:VolumeKeysKeyEB4F4D4C.Arn}"
    )


def test_the_classes_with_create_name_the_created_key_and_wait_for_it(example_golden_image):
    objects = kubernetes_objects(example_golden_image.template)
    golden, default = objects["EC2NodeClass/golden"], objects["EC2NodeClass/default"]
    assert [m["ebs"]["kmsKeyID"] for m in _volumes(golden)] == ["${GetAtt:VolumeKeysKeyEB4F4D4C.Arn}"]
    assert "kmsKeyID" not in _volumes(default)[0]["ebs"]  # a class without the setting keeps the account's key
    manifest = example_golden_image.json["Resources"][golden["_logicalId"]]
    assert "VolumeKeysKeyEB4F4D4C" in manifest["DependsOn"]
    # no IAM policy for others' keys: the key policy grants the controller
    assert not [k for k in resources(example_golden_image.template, "AWS::IAM::ManagedPolicy") if "VolumeKeys" in k]


# --- a key someone else keeps ---------------------------------------------------------------------------------


def test_a_kept_key_gets_the_controllers_grants_scoped_to_it_and_a_warning_naming_the_owners_statements():
    synthesized = synth(**ENVIRONMENT, nodeClasses=[{"name": "default", "volumeKmsKey": KEY}])
    assert [k for k in resources(synthesized.template, "AWS::KMS::Key") if "VolumeKeys" in k] == []
    logical_id, policy = only(
        {k: v for k, v in resources(synthesized.template, "AWS::IAM::ManagedPolicy").items() if "VolumeKeys" in k}
    )
    assert logical_id.startswith("VolumeKeysExistingKeysUse")
    assert _rendered(policy["Properties"]["Roles"]) == ["${Ref:ControllerRole4FED04D7}"]
    assert _rendered(policy["Properties"]["PolicyDocument"]["Statement"]) == [
        {
            "Sid": "KarpenterControllerLaunchesThroughEc2",
            "Action": LAUNCH,
            "Condition": {"StringEquals": VIA_EC2},
            "Effect": "Allow",
            "Resource": KEY,
        },
        {
            "Sid": "KarpenterControllerGrantsForVolumes",
            "Action": "kms:CreateGrant",
            "Condition": {"StringEquals": VIA_EC2, "Bool": {"kms:GrantIsForAWSResource": "true"}},
            "Effect": "Allow",
            "Resource": KEY,
        },
    ]
    (node_class,) = [o for k, o in kubernetes_objects(synthesized.template).items() if k.startswith("EC2NodeClass/")]
    assert [m["ebs"]["kmsKeyID"] for m in _volumes(node_class)] == [KEY]
    assert logical_id in synthesized.json["Resources"][node_class["_logicalId"]]["DependsOn"]
    assert [w for w in synthesized.config.warnings if "volumeKmsKey" in w] == [
        f"nodeClasses[0].volumeKmsKey '{KEY}': a key the app does not create: the stack lets the controller role "
        "(output ControllerRoleArn) use it through EC2, and its key policy must let EC2's launching service-linked "
        "roles AWSServiceRoleForAutoScaling and AWSServiceRoleForEC2Spot use it (statements "
        "Ec2LaunchServiceRolesUseTheKey and Ec2LaunchServiceRolesGrantForVolumes; also "
        "KarpenterControllerLaunchesThroughEc2 and KarpenterControllerGrantsForVolumes for the controller role where "
        "the key policy does not delegate to IAM), or nodes terminate as they launch: "
        "docs/security.md#customer-managed-keys-for-node-volumes prints them"
    ]


def test_the_security_doc_prints_the_statements_a_key_owner_adds():
    """docs/security.md's JSON is owner_statements(), with the placeholders the doc names."""
    text = (ROOT / "docs" / "security.md").read_text()
    section = text.split("## Customer-managed keys for node volumes", 1)[1]
    printed = json.loads(re.search(r"```json\n(.*?)\n```", section, re.DOTALL).group(1))
    assert printed == owner_statements(
        "<the stack output ControllerRoleArn>", partition="aws", region="eu-west-1", account="111122223333"
    )


# --- a class file's kmsKeyID ----------------------------------------------------------------------------------

CLASS = """apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  amiSelectorTerms:
    - alias: al2023@v20260801
  blockDeviceMappings:
    - deviceName: /dev/xvda
      ebs:
        volumeSize: 100Gi
        encrypted: true
        kmsKeyID: {key}
    - deviceName: /dev/xvdb
      ebs:
        volumeSize: 200Gi
        encrypted: true
        kmsKeyID: {other}
"""


def _files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, **settings):
    (tmp_path / "class.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    return load_config({**PRODUCT_CONTEXT, **ENVIRONMENT, "nodeManifests": ["class.yaml"], **settings}, today=TODAY)


def test_a_class_files_key_arns_are_kept_granted_and_warned_of_each_once(tmp_path, monkeypatch):
    config = _files(tmp_path, monkeypatch, CLASS.format(key=KEY, other=OTHER_KEY))
    node_class = config.node_classes[-1]
    assert node_class.volume_key_arns == [KEY, OTHER_KEY]
    assert [m["ebs"]["kmsKeyID"] for m in _volumes(node_class.manifest(cluster_name="c", node_role_name="r"))] == [
        KEY,
        OTHER_KEY,
    ]
    assert [w.split(": a key the app")[0] for w in config.warnings if "a key the app does not create" in w] == [
        f"class.yaml: EC2NodeClass/default: spec.blockDeviceMappings[0].ebs.kmsKeyID '{KEY}'",
        f"class.yaml: EC2NodeClass/default: spec.blockDeviceMappings[1].ebs.kmsKeyID '{OTHER_KEY}'",
    ]


def test_the_production_profile_takes_volumes_encrypted_with_a_customer_key_and_still_refuses_unencrypted_ones(
    tmp_path, monkeypatch
):
    production = {"profile": "production", "administrators": [ADMINISTRATOR]}
    config = _files(tmp_path, monkeypatch, CLASS.format(key=KEY, other=KEY), **production)
    assert config.node_classes[-1].volume_key_arns == [KEY]
    typed = load_config(
        {
            **PRODUCT_CONTEXT,
            **ENVIRONMENT,
            **production,
            "nodeClasses": [{"amiAlias": "al2023@v20260801", "volumeKmsKey": "create"}],
        },
        today=TODAY,
    )
    assert typed.node_classes[0].creates_volume_key
    unencrypted = CLASS.format(key=KEY, other=KEY).replace(
        "        volumeSize: 200Gi\n        encrypted: true\n        kmsKeyID: " + KEY + "\n",
        "        volumeSize: 200Gi\n        encrypted: false\n",
    )
    with pytest.raises(ConfigError) as info:
        _files(tmp_path, monkeypatch, unencrypted, **production)
    assert str(info.value) == (
        "class.yaml: EC2NodeClass/default: spec.blockDeviceMappings[1].ebs.encrypted: false: the volume is not "
        "encrypted; the app's volumes are (true); the production profile requires it (from cdk.json)"
    )


def test_bottlerocket_os_volume_of_a_file_may_name_a_key_and_nothing_else_of_its_own(tmp_path, monkeypatch):
    os_volume = (
        "  blockDeviceMappings:\n    - deviceName: /dev/xvda\n      ebs:\n        volumeSize: 4Gi\n        volumeType: gp3\n"
        f"        encrypted: true\n        deleteOnTermination: true\n        kmsKeyID: {KEY}\n"
    )
    bottlerocket = CLASS.split("  blockDeviceMappings:")[0].replace("al2023@v20260801", "bottlerocket@v1.30.0")
    config = _files(tmp_path, monkeypatch, bottlerocket + os_volume)
    assert config.node_classes[-1].volume_key_arns == [KEY]
    with pytest.raises(ConfigError) as info:
        _files(tmp_path, monkeypatch, bottlerocket + os_volume.replace("4Gi", "8Gi"))
    assert str(info.value) == (
        "class.yaml: EC2NodeClass/default: spec.blockDeviceMappings[0].ebs.volumeSize '8Gi': Bottlerocket's OS volume "
        "(/dev/xvda) is Karpenter's default, which the app writes: 4Gi gp3, encrypted (with a kmsKeyID of yours, if "
        "you like); leave it out or write that (from cdk.json)"
    )
