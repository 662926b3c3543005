"""Cluster access: the authentication mode, access entries for Karpenter's nodes and administrators, and
what a change of mode does to a cluster that is already running (checked against aws-cdk's handler)."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karpenter_stack.cluster_stack import administrator_entries, principal_key
from karpenter_stack.cluster_updates import ONE_KIND, UpdateRefused, update
from karpenter_stack.config import load_config
from tests.cfn import depends_on, kubernetes_objects, only, render, resources, template_change
from tests.conftest import TODAY, synth
from tooling.configurations import ACCESS_ENTRIES, ADMINISTRATOR

ADMIN = ADMINISTRATOR
BOTH = ACCESS_ENTRIES
# the endpoint configuration tests/test_security_gate.py synthesizes
PUBLIC = {"endpointAccess": "public-and-private", "publicAccessCidrs": ["203.0.113.0/24", "198.51.100.7/32"]}
API = {"authenticationMode": "API", "administrators": [ADMIN]}


def _cluster_config(synthesized) -> dict:
    return only(resources(synthesized.template, "Custom::AWSCDK-EKS-Cluster"))[1]["Properties"]["Config"]


def _entries(synthesized) -> dict[str, dict]:
    """Access entries by what they grant: 'node', 'admin:<principal>'."""
    out = {}
    for logical_id, entry in resources(synthesized.template, "AWS::EKS::AccessEntry").items():
        props = entry["Properties"]
        if props.get("Type") == "EC2_LINUX":
            out["node"] = {**props, "_id": logical_id}
        else:
            (policy,) = props["AccessPolicies"]
            assert render(policy["PolicyArn"]).endswith(":eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy")
            assert policy["AccessScope"] == {"Type": "cluster"}
            out[f"admin:{render(props['PrincipalArn'])}"] = {**props, "_id": logical_id}
    return out


def test_by_default_nothing_changes_for_a_running_cluster(default):
    assert _cluster_config(default)["accessConfig"] == {}  # EKS's CONFIG_MAP; no update of a deployed cluster
    assert _entries(default) == {}
    assert "ConfigMap/aws-auth" in kubernetes_objects(default.template)


def test_api_and_config_map_adds_access_entries_and_keeps_aws_auth():
    both = synth(**BOTH)
    assert _cluster_config(both)["accessConfig"] == {"authenticationMode": "API_AND_CONFIG_MAP"}
    entries = _entries(both)
    assert sorted(entries) == ["admin:" + ADMIN, "node"]  # the administrators replace the account-wide role
    objects = kubernetes_objects(both.template)
    mappings = json.loads(render(objects["ConfigMap/aws-auth"]["data"]["mapRoles"]))
    # (the other EC2 mapping is the system node group's role, kept for a hosting switch: test_cluster_stack)
    (node,) = [m for m in mappings if m["rolearn"] == render(entries["node"]["PrincipalArn"])]
    assert node["username"] == "system:node:{{EC2PrivateDNSName}}"
    assert node["groups"] == ["system:bootstrappers", "system:nodes"]  # nodes join whichever EKS reads
    # Karpenter's objects are deleted before both, while their nodes drain
    for key in ("NodePool/default", "EC2NodeClass/default"):
        assert {entries["node"]["_id"], objects["ConfigMap/aws-auth"]["_logicalId"]} <= set(
            depends_on(both.json, objects[key]["_logicalId"])
        )


def test_api_uses_access_entries_only():
    api = synth(**API)
    assert _cluster_config(api)["accessConfig"] == {"authenticationMode": "API"}
    assert "ConfigMap/aws-auth" not in kubernetes_objects(api.template)
    assert {"node", f"admin:{ADMIN}"} <= set(_entries(api))


def test_with_config_map_administrators_are_system_masters_in_aws_auth(alternative):
    assert alternative.config.administrators == [ADMIN] and alternative.config.authentication_mode is None
    assert _entries(alternative) == {}
    roles = json.loads(render(kubernetes_objects(alternative.template)["ConfigMap/aws-auth"]["data"]["mapRoles"]))
    assert {"rolearn": ADMIN, "username": ADMIN, "groups": ["system:masters"]} in roles


# --- day 2: a change of mode, as aws-cdk's cluster handler applies it -------------------------------


def test_moving_a_running_cluster_to_api_and_config_map_is_an_in_place_update(default):
    assert update(_cluster_config(default), _cluster_config(synth(**BOTH))) == ["updateAuthMode"]
    assert update(_cluster_config(synth(**BOTH)), _cluster_config(synth(**API))) == ["updateAuthMode"]


@pytest.mark.parametrize(
    "before,after,reason",
    [
        ({}, API, "Cannot update from undefined(CONFIG_MAP) to API"),
        (API, BOTH, "Cannot fallback authenticationMode from API to API_AND_CONFIG_MAP"),
        (BOTH, {}, "Cannot fallback authenticationMode from defined to undefined"),
        (
            PUBLIC,
            BOTH,  # a private endpoint and a new mode in one deploy
            ONE_KIND,
        ),
    ],
)
def test_changes_the_handler_refuses(before, after, reason):
    """Each would fail the deploy and roll the stack back: the README says to move one step per deploy."""
    with pytest.raises(UpdateRefused, match=reason.replace("(", r"\(").replace(")", r"\)")):
        update(_cluster_config(synth(**before)), _cluster_config(synth(**after)))


def test_no_configuration_asks_the_handler_to_replace_the_named_cluster(default, alternative, production):
    """bootstrapClusterCreatorAdminPermissions, the name and the role would make the handler replace the
    cluster, which a named cluster refuses; none of them ever changes between configurations."""
    configs = [_cluster_config(s) for s in (default, alternative, production, synth(**BOTH), synth(**API))]
    assert all("bootstrapClusterCreatorAdminPermissions" not in (c["accessConfig"] or {}) for c in configs)
    # a new production cluster starts on access entries (over a running one, the profile keeps its mode:
    # tests/test_access_entries_default.py)
    assert update(configs[3], configs[2]) == ["updateDeletionProtection"]


def test_windows_nodes_join_through_an_ec2_windows_entry_of_their_own_role():
    """Access entries only (API): Linux nodes join with the node role's EC2_LINUX entry, Windows nodes
    with the Windows node role's EC2_WINDOWS entry (one entry per role, one type per entry)."""
    from tests.conftest import ROOT

    windows = json.loads((ROOT / "examples" / "windows.json").read_text())
    synthesized = synth(**API, **windows)
    entries = {
        r["Properties"]["Type"]: (render(r["Properties"]["PrincipalArn"]), r["Properties"]["AccessPolicies"])
        for r in resources(synthesized.template, "AWS::EKS::AccessEntry").values()
        if r["Properties"].get("Type", "STANDARD") != "STANDARD"
    }
    assert entries == {
        "EC2_LINUX": (
            "${GetAtt:KarpenterNestedStackKarpenterNestedStackResourceE556CF50."
            "Outputs.ekskarpenterKarpenterTemplateKarpenterNodeRole941D9270Arn}",
            [],
        ),
        "EC2_WINDOWS": ("${GetAtt:WindowsNodeRoleE0704BCF.Arn}", []),
    }
    assert "ConfigMap/aws-auth" not in kubernetes_objects(synthesized.template)


def test_administrators_replace_the_role_anyone_in_the_account_may_assume():
    """Unset, the stack's ClusterAdminRole (trusted by the account root) is the cluster admin; set, only
    the listed roles are, and on a running cluster that role and its access entry (under CONFIG_MAP: its
    aws-auth mapping) go -- nothing else changes."""
    without = synth(authenticationMode="API_AND_CONFIG_MAP")
    with_admins = synth(**BOTH)
    trusts = [
        r["Properties"]["AssumeRolePolicyDocument"] for r in resources(with_admins.template, "AWS::IAM::Role").values()
    ]
    assert not [t for t in trusts if "AWS" in str(t) and ":root" in str(t)]
    added, removed, changed = template_change(without.json, with_admins.json)
    assert {k[:-8] for k in added} == {f"AdministratorAccess{principal_key(ADMIN)}"}  # keyed by its principal
    assert {k[:-8] for k in removed} == {"ClusterAdminRole", "ClustermastersRoleAccess"}
    assert changed == {}  # under API_AND_CONFIG_MAP the role was an access entry, not an aws-auth mapping
    outputs = with_admins.json["Outputs"]["UpdateKubeconfigCommand"]
    assert render(outputs["Value"]).endswith(f"--role-arn {ADMIN}")


def test_administrators_that_drop_the_deployed_default_admin_role_say_so(tmp_path):
    """Over a baseline whose stack has the default ClusterAdminRole, setting administrators deletes it: the synth
    says so in a warning (a wrong ARN would lock everyone out); without a baseline, or without administrators,
    nothing is said."""
    import inspect
    import shutil

    from karpenter_stack import application, baseline
    from karpenter_stack.config import load_config
    from tests.conftest import TODAY
    from tooling.configurations import ADMINISTRATOR, PRODUCT_CONTEXT

    snapshots = Path(__file__).parent / "__snapshots__" / "test_snapshots"
    (tmp_path / "baseline").mkdir()
    shutil.copyfile(
        snapshots / "test_templates_match_their_snapshots[default][eks-karpenter.template].json",
        tmp_path / "baseline" / "eks-karpenter.template.json",
    )
    with_admins = load_config({**PRODUCT_CONTEXT, "administrators": [ADMINISTRATOR]}, today=TODAY)
    said = baseline.dropped_admin(with_admins, "eks-karpenter", tmp_path)
    assert (
        said is not None
        and said.startswith("administrators replaces the deployed stack's ClusterAdminRole")
        and said.endswith(
            "(baseline/eks-karpenter.template.json): the deploy deletes it and its system:masters mapping, and then only "
            "the 1 role listed can use kubectl; a wrong ARN locks everyone out, so check each (aws iam get-role) before "
            "deploying"
        )
    )
    assert baseline.dropped_admin(load_config(dict(PRODUCT_CONTEXT), today=TODAY), "eks-karpenter", tmp_path) is None
    assert baseline.dropped_admin(with_admins, "eks-karpenter", tmp_path / "nowhere") is None
    # on the stack the app builds (karpenter_stack.application.build_deferred calls it for each stack)
    import aws_cdk as cdk

    stack = cdk.Stack(cdk.App(), "eks-karpenter")
    stack.config = with_admins  # type: ignore[attr-defined]
    baseline.say_dropped_admin(stack, tmp_path)
    (warning,) = [m.data for m in stack.node.metadata if m.type == "aws:cdk:warning"]
    assert str(warning).startswith("administrators replaces the deployed stack's ClusterAdminRole")
    assert "baseline.say_dropped_admin(stack)" in inspect.getsource(application.build_deferred)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True), min_size=1, max_size=5, unique=True))
def test_every_administrators_list_over_the_default_admin_role_says_how_many_roles_remain(names):
    from karpenter_stack import baseline

    old = {"ClusterAdminRole047D4FCA": {"Type": "AWS::IAM::Role"}, "Other": {"Type": "AWS::SQS::Queue"}}
    root = Path(tempfile.mkdtemp(prefix="dropped-admin-"))
    (root / "baseline").mkdir()
    (root / "baseline" / "eks-karpenter.template.json").write_text(json.dumps({"Resources": old}))
    arns = [f"arn:aws:iam::111122223333:role/{n}" for n in names]
    config = load_config({"administrators": arns}, today=TODAY)
    said = baseline.dropped_admin(config, "eks-karpenter", root)
    roles = "1 role" if len(names) == 1 else f"{len(names)} roles"
    assert said is not None and f"then only the {roles} listed can use kubectl" in said
    del old["ClusterAdminRole047D4FCA"]  # a baseline without the default role: nothing is dropped
    (root / "baseline" / "eks-karpenter.template.json").write_text(json.dumps({"Resources": old}))
    assert baseline.dropped_admin(config, "eks-karpenter", root) is None
    shutil.rmtree(root)


# --- identity: an administrator's entry is keyed by its principal, never by its place in the list ----------------

ADMINS = [f"arn:aws:iam::111122223333:role/{name}" for name in ("platform-admins", "sre", "team/sre", "oncall")]


def _entry_ids(administrators: list[str], deployed: dict[str, str] | None = None) -> dict[str, str]:
    """principal -> logical id of its access entry, on a bare stack with an imported cluster (resolved from the
    construct tree: no synth, no cloud assembly with the kubectl layer written)."""
    from tests.bare import bare_stack, imported_cluster

    stack = bare_stack()
    entries = administrator_entries(stack, imported_cluster(stack), administrators, deployed or {})
    return {arn: stack.resolve(entry.node.default_child.logical_id) for arn, entry in entries.items()}


def test_reordering_inserting_or_removing_an_administrator_keeps_every_other_entrys_logical_id():
    first = _entry_ids(ADMINS[:3])
    assert len(set(first.values())) == 3
    assert all(i.startswith("AdministratorAccess") for i in first.values())
    # two roles named sre (one under a path) stay apart
    assert first[ADMINS[1]] != first[ADMINS[2]]
    for changed in ([ADMINS[2], ADMINS[0], ADMINS[1]], [ADMINS[3], *ADMINS[:3]], [ADMINS[0], ADMINS[2]]):
        found = _entry_ids(changed)
        assert {arn: found[arn] for arn in changed if arn in first} == {
            arn: first[arn] for arn in changed if arn in first
        }


def test_an_entry_the_running_stack_has_keeps_its_logical_id():
    """Releases before issue 40 keyed the entries by position (AdministratorAccess0, 1, ...): an entry the baseline
    has keeps that id, so removing the first administrator re-keys nothing."""
    deployed = {ADMINS[0]: "AdministratorAccess0AB12CD34", ADMINS[1]: "AdministratorAccess1EF56AB78"}
    assert _entry_ids([ADMINS[1], ADMINS[3]], deployed) == {
        ADMINS[1]: "AdministratorAccess1EF56AB78",
        ADMINS[3]: _entry_ids([ADMINS[3]])[ADMINS[3]],
    }


def _entry(principal: str) -> dict:
    return {"Type": "AWS::EKS::AccessEntry", "Properties": {"ClusterName": {"Ref": "C"}, "PrincipalArn": principal}}


def test_the_review_says_a_second_entry_for_a_principal_fails_the_deploy():
    """What position keys did: removing the first of two administrators moved the second onto the first's logical
    id, a replacement (PrincipalArn is create-only) that creates the second principal's entry while its own still
    exists: EKS refuses it, and the deploy rolls back. The review said 'replaced'; it says the deploy fails."""
    from tooling.review.diff import compare_template

    old = {
        "Resources": {
            "AdministratorAccess0AAAAAAAA": _entry(ADMINS[0]),
            "AdministratorAccess1BBBBBBBB": _entry(ADMINS[1]),
        }
    }
    by_position = {"Resources": {"AdministratorAccess0AAAAAAAA": _entry(ADMINS[1])}}
    changes = {c.logical_id: (c.action, c.why) for c in compare_template(old, by_position)}
    assert changes == {
        "AdministratorAccess0AAAAAAAA": (
            "fails",
            f"the deploy fails: EKS keeps one access entry per principal, and {ADMINS[1]} still has "
            "AdministratorAccess1BBBBBBBB while CloudFormation creates this one (the old entry goes only in the "
            "cleanup); keep the principal's entry where it is, or remove it in one deploy and add it in the next",
        ),
        "AdministratorAccess1BBBBBBBB": ("removed", "deleted"),
    }
    # keyed by principal, the entry stays: only the removed one goes
    by_principal = {"Resources": {"AdministratorAccess1BBBBBBBB": _entry(ADMINS[1])}}
    assert [(c.logical_id, c.action) for c in compare_template(old, by_principal)] == [
        ("AdministratorAccess0AAAAAAAA", "removed")
    ]
    # a new id for a principal that keeps an entry under its old one fails the same way
    moved = {"Resources": {"AdministratorAccesssreCCCCCCCC": _entry(ADMINS[1])}}
    assert ("AdministratorAccesssreCCCCCCCC", "fails") in [
        (c.logical_id, c.action) for c in compare_template(old, moved)
    ]


@pytest.mark.parametrize(
    ("administrators", "message"),
    [
        (
            [ADMINS[0], ADMINS[1], ADMINS[0]],
            f"administrators[2] {ADMINS[0]!r}: also administrators[0]; a principal has one access entry (EKS) and one "
            "aws-auth mapping: list it once (from cdk.json)",
        ),
        (
            ["arn:aws:iam::111122223333:role/KarpenterNodeRole-eks-karpenter"],
            "administrators[0] 'arn:aws:iam::111122223333:role/KarpenterNodeRole-eks-karpenter': that is the node role "
            "of Karpenter's nodes, which has an access entry or aws-auth mapping of its own (a principal has one); name "
            "a role people assume (from cdk.json)",
        ),
    ],
)
def test_a_principal_named_twice_is_refused(administrators, message):
    from karpenter_stack.config import ConfigError
    from tooling.configurations import PRODUCT_CONTEXT

    with pytest.raises(ConfigError) as info:
        load_config({**PRODUCT_CONTEXT, **BOTH, "administrators": administrators}, today=TODAY)
    assert str(info.value) == message


def test_the_deployed_entries_are_read_from_the_accepted_baseline(tmp_path):
    from karpenter_stack.deployed import deployed_access_entries

    assert deployed_access_entries("eks-karpenter", tmp_path) == {}  # no baseline: nothing pinned
    node = {"Type": "AWS::EKS::AccessEntry", "Properties": {"PrincipalArn": {"Fn::GetAtt": ["NodeRole", "Arn"]}}}
    template = {"Resources": {"AdministratorAccess0AB12CD34": _entry(ADMINS[0]), "NodeAccessEntry": node}}
    (tmp_path / "baseline").mkdir()
    (tmp_path / "baseline" / "eks-karpenter.template.json").write_text(json.dumps(template))
    assert deployed_access_entries("eks-karpenter", tmp_path) == {ADMINS[0]: "AdministratorAccess0AB12CD34"}
