"""The gate sees every IAM grant (issue 41, point 4): whatever resource type or intrinsic holds it, in the project's
Karpenter template (the synth's check and `make template-diff`) and in a synth's templates, nested stacks included
(`make check`, tests/test_your_configuration.py). Each class of grant is tried with a hostile input of its own; each
ends in one line naming the resource, whom it grants to, what, and what to do."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from constructs_lib.karpenter import yaml_load
from constructs_lib.karpenter.iam_resources import GrantError, read_grants
from constructs_lib.karpenter.iam_types import GRANTING, NO_GRANT
from constructs_lib.karpenter.template_parity import (
    load_template,
    synthesized_problems,
    template_grants,
    upstream_template,
    widening_problems,
)
from karpenter_stack import versions
from tooling.releases import template_parity

TEMPLATE = versions.karpenter_template("1.14.1")
WHERE = "templates/karpenter-1.14.1.yaml"
NODE_ROLE = {"Ref": "KarpenterNodeRole"}
NODE = "role KarpenterNodeRole-${ClusterName}"
ACK = (
    " (acknowledge each grant with a reason under widenings: in templates/changes/karpenter-1.14.1.yaml, naming its "
    "principal, policy, sid, action and resource, or remove it)"
)
WIDER = f"{WHERE} grants more than upstream's template of the release: "


def _document(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def _allow(sid: str, action: Any, resource: Any) -> dict[str, Any]:
    return {"Sid": sid, "Effect": "Allow", "Action": action, "Resource": resource}


def _fork(tmp_path: Path, resources: dict[str, Any], changes: dict[str, str] | None = None, **sections: Any) -> Path:
    """A copy of templates/ whose project template has ``resources`` added (and ``sections`` merged in), and whose
    changes file has ``changes`` added."""
    root = tmp_path / "templates"
    shutil.copytree(TEMPLATE.parent, root)
    path = root / TEMPLATE.name
    template = load_template(path)
    template["Resources"].update(resources)
    for name, section in sections.items():
        template.setdefault(name, {}).update(section)
    path.write_text(json.dumps(template))  # JSON is YAML, and writes much faster than PyYAML
    if changes:
        file = root / "changes" / path.name
        loaded = yaml_load.safe_load(file.read_text())
        loaded["changes"].update(changes)
        file.write_text(yaml.safe_dump(loaded))
    return path


SELF_ATTACH = {
    "KarpenterControllerSelfPolicy": {
        "Type": "AWS::IAM::RolePolicy",
        "Properties": {
            "RoleName": NODE_ROLE,
            "PolicyName": "self",
            "PolicyDocument": _document(
                _allow(
                    "SelfAttach",
                    ["iam:AttachRolePolicy", "iam:PutRolePolicy"],
                    {"Fn::GetAtt": ["KarpenterNodeRole", "Arn"]},
                )
            ),
        },
    }
}


def test_a_role_policy_that_lets_the_node_role_attach_policies_to_itself_is_refused_and_no_glob_explains_it(tmp_path):
    """The issue's case: an AWS::IAM::RolePolicy on the node role, named so that the old reason's glob
    (Resources.KarpenterController*Policy) matched it."""
    path = _fork(
        tmp_path,
        SELF_ATTACH,
        changes={"Resources.KarpenterController*Policy": "Logical ids named after each policy's ManagedPolicyName."},
    )
    assert widening_problems(path) == (
        WIDER + f"{NODE}: KarpenterControllerSelfPolicy statement 'SelfAttach': Allow iam:AttachRolePolicy on "
        f"${{KarpenterNodeRole.Arn}}; {NODE}: KarpenterControllerSelfPolicy statement 'SelfAttach': Allow "
        "iam:PutRolePolicy on ${KarpenterNodeRole.Arn}" + ACK,
    )
    lines, failures = template_parity.report(path)
    assert "  + KarpenterControllerSelfPolicy statement 'SelfAttach': Allow iam:AttachRolePolicy on " in "\n".join(
        lines
    )
    assert (
        "karpenter-1.14.1.yaml: Resources.KarpenterControllerSelfPolicy: added AWS::IAM::RolePolicy (upstream has no "
        "such resource): no reason in templates/changes/karpenter-1.14.1.yaml; IAM content is explained by a reason "
        "under its exact subject and its grants under widenings:, never by a pattern "
        "('Resources.KarpenterController*Policy' does not explain it)"
    ) in failures
    (glob,) = [f for f in failures if f.startswith("templates/changes/")]
    assert glob.startswith(
        "templates/changes/karpenter-1.14.1.yaml: 'Resources.KarpenterController*Policy' is a pattern over IAM content "
        "(Resources.KarpenterControllerEKSIntegrationPolicy, "
    )
    assert glob.endswith(
        "Resources.KarpenterControllerSelfPolicy), which is explained only under its exact subject; write each "
        "subject out"
    )
    # acknowledged grant by grant (principal named) and explained under its exact subject: accepted
    path = _fork(tmp_path / "acknowledged", SELF_ATTACH)
    changes = path.parent / "changes" / path.name
    loaded = yaml_load.safe_load(changes.read_text())
    why = "A fork's experiment, reviewed: the node role manages its own policies in this sandbox account."
    loaded["changes"]["Resources.KarpenterControllerSelfPolicy"] = why
    loaded["widenings"] = [
        {
            "principal": NODE,
            "policy": "KarpenterControllerSelfPolicy",
            "sid": "SelfAttach",
            "action": action,
            "resource": "${KarpenterNodeRole.Arn}",
            "why": why,
        }
        for action in ("iam:AttachRolePolicy", "iam:PutRolePolicy")
    ]
    changes.write_text(yaml.safe_dump(loaded))
    assert widening_problems(path) == ()
    assert template_parity.report(path)[1] == []


def test_the_synth_refuses_the_self_attaching_role_policy_in_one_line(tmp_path, monkeypatch):
    from karpenter_stack.application import build, new_app
    from karpenter_stack.config import ConfigError
    from tests.conftest import TODAY
    from tooling.configurations import PRODUCT_CONTEXT

    path = _fork(tmp_path, SELF_ATTACH)
    monkeypatch.setattr(versions, "TEMPLATES_DIR", path.parent)
    monkeypatch.setattr(versions.karpenter_template, "__defaults__", (path.parent,))
    monkeypatch.setattr(versions.available_karpenter_versions, "__defaults__", (path.parent,))
    app = new_app(context=dict(PRODUCT_CONTEXT), outdir=str(tmp_path / "out"))
    with pytest.raises(ConfigError) as info:
        build(app, today=TODAY)
    assert str(info.value).startswith(WIDER + f"{NODE}: KarpenterControllerSelfPolicy statement 'SelfAttach': ")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        pytest.param(
            {
                "Ops": {"Type": "AWS::IAM::User", "Properties": {}},
                "OpsPolicy": {
                    "Type": "AWS::IAM::UserPolicy",
                    "Properties": {
                        "UserName": {"Ref": "Ops"},
                        "PolicyName": "ops",
                        "PolicyDocument": _document(_allow("PassAnyRole", "iam:PassRole", "*")),
                    },
                },
            },
            "user Ops: OpsPolicy statement 'PassAnyRole': Allow iam:PassRole on *",
            id="user-policy",
        ),
        pytest.param(
            {
                "AdminsPolicy": {
                    "Type": "AWS::IAM::GroupPolicy",
                    "Properties": {
                        "GroupName": "admins",
                        "PolicyName": "admins",
                        "PolicyDocument": _document(_allow("", "*", "*")),
                    },
                }
            },
            "group admins: AdminsPolicy (a statement without Sid): Allow * on *",
            id="group-policy",
        ),
        pytest.param(
            {
                "ControllerExtra": {
                    "Type": "AWS::IAM::Policy",
                    "Properties": {
                        "PolicyName": "extra",
                        "Roles": [{"Fn::Sub": "KarpenterControllerRole-${ClusterName}"}],
                        "PolicyDocument": _document(_allow("ReadSecrets", "secretsmanager:GetSecretValue", "*")),
                    },
                }
            },
            "role KarpenterControllerRole-${ClusterName}: ControllerExtra statement 'ReadSecrets': Allow "
            "secretsmanager:GetSecretValue on *",
            id="policy-on-controller-role",
        ),
        pytest.param(
            {  # a grant the controller has anyway (not wider for it), attached to the node role too: wider for that
                "SharedDescribe": {
                    "Type": "AWS::IAM::ManagedPolicy",
                    "Properties": {
                        "Roles": [NODE_ROLE],
                        "PolicyDocument": _document(_allow("Describe", "pricing:GetProducts", "*")),
                    },
                }
            },
            f"{NODE}: SharedDescribe statement 'Describe': Allow pricing:GetProducts on *",
            id="managed-policy-with-roles",
        ),
        pytest.param(
            {
                "Escalator": {
                    "Type": "AWS::IAM::Role",
                    "Properties": {
                        "AssumeRolePolicyDocument": _document(
                            {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}
                        ),
                        "Policies": [{"PolicyName": "all", "PolicyDocument": _document(_allow("All", "*", "*"))}],
                    },
                }
            },
            "role Escalator: Escalator/all statement 'All': Allow * on *; role Escalator: Escalator (a statement "
            "without Sid): Allow sts:AssumeRole on principal AWS:*",
            id="inline-policies-on-a-new-role",
        ),
        pytest.param(
            {
                "Hidden": {
                    "Type": "AWS::IAM::RolePolicy",
                    "Properties": {
                        "RoleName": NODE_ROLE,
                        "PolicyName": "hidden",
                        "PolicyDocument": {"Fn::Sub": json.dumps(_document(_allow("Iam", "iam:*", "*")))},
                    },
                }
            },
            f"{NODE}: Hidden statement 'Iam': Allow iam:* on *",
            id="document-in-a-sub-json-string",
        ),
        pytest.param(
            {
                "Hidden": {
                    "Type": "AWS::IAM::RolePolicy",
                    "Properties": {
                        "RoleName": NODE_ROLE,
                        "PolicyName": "hidden",
                        "PolicyDocument": {
                            "Fn::If": [
                                "Never",
                                _document(_allow("S3", "s3:*", "*")),
                                _document(_allow("Logs", "logs:*", "*")),
                            ]
                        },
                    },
                }
            },
            f"{NODE}: Hidden statement 'S3': Allow s3:* on *; {NODE}: Hidden statement 'Logs': Allow logs:* on *",
            id="document-in-both-branches-of-an-if",
        ),
        pytest.param(
            {
                "Federation": {
                    "Type": "AWS::IAM::OIDCProvider",
                    "Properties": {
                        "Url": "https://token.actions.githubusercontent.com",
                        "ClientIdList": ["sts.amazonaws.com"],
                    },
                }
            },
            "AWS::IAM::OIDCProvider Federation: Federation statement 'ClientIdList': Allow federate on "
            "https://token.actions.githubusercontent.com client sts.amazonaws.com",
            id="identity-provider",
        ),
        pytest.param(
            {
                "Bucket": {"Type": "AWS::S3::Bucket", "Properties": {}},
                "BucketPolicy": {
                    "Type": "AWS::S3::BucketPolicy",
                    "Properties": {
                        "Bucket": {"Ref": "Bucket"},
                        "PolicyDocument": _document(
                            {"Sid": "Public", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject"}
                        ),
                    },
                },
            },
            "AWS::S3::BucketPolicy BucketPolicy: BucketPolicy statement 'Public': Allow s3:GetObject on principal *",
            id="resource-policy",
        ),
    ],
)
def test_every_kind_of_grant_holder_is_read_and_held_to_upstream(tmp_path, resources, expected):
    path = _fork(tmp_path, resources, Conditions={"Never": {"Fn::Equals": ["a", "b"]}})
    assert widening_problems(path) == (WIDER + expected + ACK,)
    _, failures = template_parity.report(path)
    assert any("wider than upstream's, not acknowledged" in f for f in failures)
    for logical_id in resources:  # each added IAM resource needs a reason under its exact subject
        if resources[logical_id]["Type"] != "AWS::S3::Bucket":
            assert any(f.startswith(f"karpenter-1.14.1.yaml: Resources.{logical_id}: added ") for f in failures)


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        pytest.param(
            {"Hidden": {"Type": "AWS::IAM::RolePolicy", "Properties": {"RoleName": NODE_ROLE, "PolicyName": "h"}}},
            "Resources.Hidden (AWS::IAM::RolePolicy): PolicyDocument is null, not a policy document",
            id="no-document",
        ),
        pytest.param(
            {
                "Hidden": {
                    "Type": "AWS::IAM::RolePolicy",
                    "Properties": {"RoleName": NODE_ROLE, "PolicyName": "h", "PolicyDocument": {"Ref": "Document"}},
                }
            },
            'Resources.Hidden (AWS::IAM::RolePolicy): PolicyDocument is given through {"Ref": "Document"}: a policy '
            "document the gate cannot read statically; write the document out (a JSON object, or a !Sub string of one)",
            id="document-from-a-parameter",
        ),
        pytest.param(
            {
                "Hidden": {
                    "Type": "AWS::IAM::RolePolicy",
                    "Properties": {
                        "RoleName": NODE_ROLE,
                        "PolicyName": "h",
                        "PolicyDocument": {"Fn::Sub": '{"Statement": ${Statements}}'},
                    },
                }
            },
            "Resources.Hidden (AWS::IAM::RolePolicy): PolicyDocument is not a JSON policy document (Expecting value "
            "at line 1, column 15); the gate cannot read its grants",
            id="statements-substituted-into-a-sub",
        ),
        pytest.param(
            {
                "Hidden": {
                    "Type": "AWS::IAM::RolePolicy",
                    "Properties": {
                        "RoleName": NODE_ROLE,
                        "PolicyName": "h",
                        "PolicyDocument": {"statement": [_allow("Iam", "iam:*", "*")]},
                    },
                }
            },
            "Resources.Hidden (AWS::IAM::RolePolicy): PolicyDocument has ['statement']: a policy document has only "
            "['Id', 'Statement', 'Version']",
            id="statement-under-another-key",
        ),
        pytest.param(
            {
                "Hidden": {
                    "Type": "AWS::IAM::RolePolicy",
                    "Properties": {
                        "RoleName": NODE_ROLE,
                        "PolicyName": "h",
                        "PolicyDocument": _document({"Action": "iam:*", "Resource": "*"}),
                    },
                }
            },
            "Resources.Hidden (AWS::IAM::RolePolicy): PolicyDocument.Statement[0]: Effect is null, not Allow or Deny",
            id="statement-without-effect",
        ),
        pytest.param(
            {
                "KarpenterNodeRole": {
                    **load_template(TEMPLATE)["Resources"]["KarpenterNodeRole"],
                }
                | {
                    "Properties": {
                        **load_template(TEMPLATE)["Resources"]["KarpenterNodeRole"]["Properties"],
                        "ManagedPolicyArns": {"Ref": "MorePolicies"},
                    }
                }
            },
            'Resources.KarpenterNodeRole (AWS::IAM::Role): ManagedPolicyArns is {"Ref": "MorePolicies"}, a list the '
            "gate cannot read statically; write the list out",
            id="managed-policies-from-a-list-parameter",
        ),
        pytest.param(
            {"Anywhere": {"Type": "AWS::IAM::RolesAnywhereProfile", "Properties": {}}},
            "Resources.Anywhere (AWS::IAM::RolesAnywhereProfile): an IAM type the gate does not know, so it cannot "
            "tell what it grants; add the type to constructs_lib/karpenter/iam_types.py (GRANTING or NO_GRANT) or remove "
            "the resource",
            id="unknown-iam-type",
        ),
        pytest.param(
            {
                "BusPolicy": {
                    "Type": "AWS::Events::EventBusPolicy",
                    "Properties": {"StatementId": "all", "Statement": _allow("Put", "events:PutEvents", "*")},
                }
            },
            "Resources.BusPolicy (AWS::Events::EventBusPolicy): Properties holds a policy document and the gate does "
            "not read this type's grants; add the type to constructs_lib/karpenter/iam_types.py (GRANTING) or remove the "
            "document",
            id="policy-in-a-type-the-gate-does-not-read",
        ),
        pytest.param(
            {"More": {"Type": "AWS::CloudFormation::Stack", "Properties": {"TemplateURL": "https://example.com/t"}}},
            "Resources.More (AWS::CloudFormation::Stack): a nested stack's template is not part of this file "
            "(TemplateURL points elsewhere), so its grants cannot be read; put its resources in this template",
            id="nested-stack",
        ),
    ],
)
def test_a_grant_the_gate_cannot_read_statically_is_refused_not_skipped(tmp_path, resources, expected):
    path = _fork(
        tmp_path,
        resources,
        Parameters={"Document": {"Type": "String"}, "MorePolicies": {"Type": "CommaDelimitedList"}},
    )
    assert widening_problems(path) == (f"{WHERE}: {expected}",)
    lines, failures = template_parity.report(path)
    assert "Grants: not read (the gate reads every grant or refuses the template)" in lines
    assert f"{WHERE}: {expected}" in failures


def test_the_table_knows_every_iam_type_cloudformation_has():
    iam_types = {
        "AccessKey", "Group", "GroupPolicy", "InstanceProfile", "ManagedPolicy", "OIDCProvider", "Policy", "Role",
        "RolePolicy", "SAMLProvider", "ServerCertificate", "ServiceLinkedRole", "User", "UserPolicy",
        "UserToGroupAddition", "VirtualMFADevice",
    }  # fmt: skip
    known = {t.removeprefix("AWS::IAM::") for t in (*GRANTING, *NO_GRANT) if t.startswith("AWS::IAM::")}
    assert known == iam_types


def test_the_shipped_and_upstream_templates_are_read_whole():
    for version in versions.available_karpenter_versions():
        template = versions.karpenter_template(version)
        for path in (template, upstream_template(template)):
            assert sum(len(g) for g in template_grants(load_template(path)).values()) == 77, path


# --- the synth (cdk.out/): every stack's grants, nested stacks included ---------------------------------------------


def _synth(tmp_path: Path, karpenter_extra: dict[str, Any], *, inner: dict[str, Any] | None = None) -> Path:
    """A synth folder like the CLI's: a stack whose nested stack holds the Karpenter template (with
    ``karpenter_extra`` resources), itself holding a nested stack of ``inner`` resources when given."""
    out = tmp_path / "cdk.out"
    out.mkdir(parents=True)
    karpenter = load_template(TEMPLATE)
    karpenter["Resources"].update(karpenter_extra)
    if inner is not None:
        (out / "inner.nested.template.json").write_text(json.dumps({"Resources": inner}))
        karpenter["Resources"]["Inner"] = _nested_stack("inner.nested.template.json")
    (out / "karpenter.nested.template.json").write_text(json.dumps(karpenter))
    main = {"Resources": {"Karpenter": _nested_stack("karpenter.nested.template.json")}}
    (out / "eks-karpenter.template.json").write_text(json.dumps(main))
    return out


def _nested_stack(path: str) -> dict[str, Any]:
    return {
        "Type": "AWS::CloudFormation::Stack",
        "Properties": {"TemplateURL": {"Fn::Join": ["", ["https://s3/", path]]}},
        "Metadata": {"aws:asset:path": path},
    }


KARPENTER = {"eks-karpenter.template.json": (TEMPLATE, "eks-karpenter")}


def test_the_synths_karpenter_stack_matches_its_template_and_a_grant_added_after_the_check_fails_the_gate(tmp_path):
    assert synthesized_problems(_synth(tmp_path / "same", {}), KARPENTER) == []
    out = _synth(tmp_path / "added", SELF_ATTACH)
    assert synthesized_problems(out, KARPENTER) == [
        f"cdk.out/karpenter.nested.template.json: the synthesized Karpenter stack grants more than {WHERE}: "
        f"KarpenterControllerSelfPolicy statement 'SelfAttach': Allow {action} on ${{KarpenterNodeRole.Arn}} (to "
        f"{NODE}); the template is what is held to upstream's: put the grant there (and acknowledge it) or remove "
        "what adds it"
        for action in ("iam:AttachRolePolicy", "iam:PutRolePolicy")
    ]


def test_a_grant_in_a_stack_nested_in_the_karpenter_stack_fails_the_gate(tmp_path):
    inner = {
        "Escalate": {
            "Type": "AWS::IAM::Policy",
            "Properties": {
                "PolicyName": "x",
                "Roles": ["KarpenterNodeRole-eks-karpenter"],
                "PolicyDocument": _document(_allow("Everything", "*", "*")),
            },
        }
    }
    (problem,) = synthesized_problems(_synth(tmp_path, {}, inner=inner), KARPENTER)
    assert problem == (
        f"cdk.out/karpenter.nested.template.json: the synthesized Karpenter stack grants more than {WHERE}: "
        "Escalate statement 'Everything': Allow * on * (to role KarpenterNodeRole-eks-karpenter); the template is what "
        "is held to upstream's: put the grant there (and acknowledge it) or remove what adds it"
    )


def test_a_nested_stack_whose_template_the_gate_cannot_find_or_read_fails_the_gate(tmp_path):
    out = _synth(tmp_path, {})
    main = json.loads((out / "eks-karpenter.template.json").read_text())
    main["Resources"]["Lost"] = _nested_stack("gone.nested.template.json")
    main["Resources"]["Bare"] = {"Type": "AWS::CloudFormation::Stack", "Properties": {"TemplateURL": "https://x"}}
    (out / "eks-karpenter.template.json").write_text(json.dumps(main))
    assert synthesized_problems(out, KARPENTER) == [
        "cdk.out/eks-karpenter.template.json: Resources.Lost (AWS::CloudFormation::Stack): its template "
        "gone.nested.template.json is not a file of cdk.out/, so its grants cannot be read",
        "cdk.out/eks-karpenter.template.json: Resources.Bare (AWS::CloudFormation::Stack): a nested stack without "
        "aws:asset:path metadata: its template is not found in the synth, so its grants cannot be read; synthesize "
        "with asset metadata (the CDK's default)",
    ]


def test_an_unknown_iam_type_in_any_stack_of_the_synth_fails_the_gate(tmp_path):
    out = _synth(tmp_path, {}, inner={"Odd": {"Type": "AWS::IAM::Whatever", "Properties": {}}})
    assert synthesized_problems(out, KARPENTER) == [
        "cdk.out/inner.nested.template.json: Resources.Odd (AWS::IAM::Whatever): an IAM type the gate does not know, "
        "so it cannot tell what it grants; add the type to constructs_lib/karpenter/iam_types.py (GRANTING or NO_GRANT) or "
        "remove the resource"
    ]


def test_a_permissions_boundary_dropped_is_a_widening():
    trust = _document({"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"})
    props = {"RoleName": "r", "AssumeRolePolicyDocument": trust}
    role = {"Type": "AWS::IAM::Role", "Properties": {**props, "PermissionsBoundary": "arn:aws:iam::1:policy/b"}}
    bounded = read_grants({"Resources": {"R": role}}, "t")
    unbounded = read_grants({"Resources": {"R": {**role, "Properties": props}}}, "t")
    from constructs_lib.karpenter.iam_grants import uncovered

    assert [g.action for g in uncovered(unbounded.get("role r", []), bounded["role r"])] == ["beyond the boundary"]
    assert uncovered(bounded["role r"], unbounded["role r"]) == []  # a boundary added narrows
    with pytest.raises(GrantError) as info:
        read_grants({"Transform": "AWS::Serverless-2016-10-31", "Resources": {}}, "t")
    assert info.value.lines == [
        "t: Transform AWS::Serverless-2016-10-31: a transform writes resources the gate cannot see before it runs; "
        "write the template as it is deployed"
    ]
