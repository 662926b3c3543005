"""Access entries from day one (issue 43, point 5): the production profile starts a new cluster on
API_AND_CONFIG_MAP, its administrators as EKS access entries and Karpenter's node role both in aws-auth and as an
EC2_LINUX entry; a deployed cluster (the accepted baseline) keeps its mode, and the synth and the review say how to
move it; the default configuration is left as it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from karpenter_stack.baseline import synthesized_cluster_config
from karpenter_stack.cluster_stack import principal_key
from karpenter_stack.cluster_updates import update
from karpenter_stack.config import load_config, load_environments
from karpenter_stack.deployed import deployed_authentication_mode
from tests.cfn import depends_on, kubernetes_objects, only, render, resources
from tests.conftest import TODAY
from tooling.configurations import ADMINISTRATOR, PRODUCT_CONTEXT, PRODUCTION
from tooling.review.cluster import access_moves

BASELINE = "baseline/eks-karpenter.template.json"
NODE_ROLE = (
    "${GetAtt:KarpenterNestedStackKarpenterNestedStackResourceE556CF50."
    "Outputs.ekskarpenterKarpenterTemplateKarpenterNodeRole941D9270Arn}"
)
ADMIN_POLICY = ":eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
NODE_GROUPS = ["system:bootstrappers", "system:nodes"]


def _config(template) -> dict:
    return only(resources(template, "Custom::AWSCDK-EKS-Cluster"))[1]["Properties"]["Config"]


def _baseline(root: Path, template: dict) -> Path:
    (root / "baseline").mkdir()
    (root / BASELINE).write_text(json.dumps(template))
    return root


def _production(root: Path | None = None, **overrides):
    """The production fixture, with the cluster deployed as ``root``'s baseline records it (None: a new one)."""
    return load_config(
        {**PRODUCTION, **overrides},
        today=TODAY,
        deployed=lambda stack: deployed_authentication_mode(stack, root) if root else None,
    )


def test_a_new_production_cluster_starts_on_access_entries(production):
    assert production.config.authentication_mode == "API_AND_CONFIG_MAP"
    assert _config(production.template)["accessConfig"] == {"authenticationMode": "API_AND_CONFIG_MAP"}
    entries = resources(production.template, "AWS::EKS::AccessEntry")
    by_principal = {render(e["Properties"]["PrincipalArn"]): (k, e["Properties"]) for k, e in entries.items()}
    assert sorted(by_principal) == sorted([ADMINISTRATOR, NODE_ROLE])
    admin_id, admin = by_principal[ADMINISTRATOR]
    assert admin_id.startswith(f"AdministratorAccess{principal_key(ADMINISTRATOR)}")
    assert admin == {
        "AccessPolicies": [
            {
                "AccessScope": {"Type": "cluster"},
                "PolicyArn": {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ADMIN_POLICY]]},
            }
        ],
        "ClusterName": {"Ref": "Cluster9EE0221C"},
        "PrincipalArn": ADMINISTRATOR,  # (no Type: EKS's STANDARD)
    }
    _, node = by_principal[NODE_ROLE]
    assert (node["Type"], node["AccessPolicies"]) == ("EC2_LINUX", [])
    # aws-auth: the node role's mapping stays (the design), no system:masters at all, the administrator not in it
    objects = kubernetes_objects(production.template)
    roles = json.loads(render(objects["ConfigMap/aws-auth"]["data"]["mapRoles"]))
    assert {"rolearn": NODE_ROLE, "username": "system:node:{{EC2PrivateDNSName}}", "groups": NODE_GROUPS} in roles
    assert [m for m in roles if "system:masters" in m["groups"]] == []
    assert ADMINISTRATOR not in {m["rolearn"] for m in roles}
    # the administrators' entries exist before aws-auth is rewritten without their mappings (the move's deploy)
    assert admin_id in depends_on(production.json, objects["ConfigMap/aws-auth"]["_logicalId"])
    assert not [k for k in production.json["Resources"] if k.startswith("ClusterAdminRole")]
    assert production.config.warnings == () and production.config.access_steps == ()


def test_the_default_configuration_stays_on_aws_auth(default):
    """Outside the production profile nothing changes: a deployed cluster of the shipped cdk.json (deployed without
    a baseline, as the quickstart does) is never moved; the quickstart writes the mode into cdk.json instead."""
    assert default.config.authentication_mode is None
    assert _config(default.template)["accessConfig"] == {}
    assert resources(default.template, "AWS::EKS::AccessEntry") == {}


@pytest.mark.parametrize("deployed", [None, "CONFIG_MAP"])
def test_production_over_a_baseline_on_aws_auth_keeps_it_and_says_how_to_move(tmp_path, default, deployed):
    template = json.loads(json.dumps(default.json))
    cluster_id, _ = only(resources(default.template, "Custom::AWSCDK-EKS-Cluster"))
    if deployed:
        template["Resources"][cluster_id]["Properties"]["Config"]["accessConfig"] = {"authenticationMode": deployed}
    config = _production(_baseline(tmp_path, template))
    assert config.authentication_mode == deployed
    shown = json.dumps(deployed) if deployed else "unset (CONFIG_MAP)"
    assert config.warnings == (
        f"authenticationMode {shown} (from profile production, as deployed ({BASELINE})): the production profile "
        "starts new clusters on API_AND_CONFIG_MAP (administrators as EKS access entries) and keeps a deployed "
        'cluster\'s mode, because the move is one way; to move, write authenticationMode "API_AND_CONFIG_MAP" and '
        "deploy it with no other change to the cluster; `make review` prints every step, and "
        "docs/operations.md#move-a-cluster-to-access-entries explains them",
    )
    # standard -> production over the running cluster: deletion protection on, and nothing else of the cluster
    new = synthesized_cluster_config(config)
    assert new is not None and new.get("accessConfig", {}) == template["Resources"][cluster_id]["Properties"][
        "Config"
    ].get("accessConfig", {})
    assert update(template["Resources"][cluster_id]["Properties"]["Config"], new) == ["updateDeletionProtection"]
    report = "\n".join(access_moves({"": config}))
    assert report.startswith(
        "\n## Move cluster eks-karpenter to access entries\n\nThe production profile starts new clusters on "
        "API_AND_CONFIG_MAP and keeps this deployed cluster's authenticationMode "
        f"({deployed or 'unset: CONFIG_MAP'}): nothing above changes it. To move it:\n\n"
        '1. Write `"authenticationMode": "API_AND_CONFIG_MAP"` where this environment\'s settings are, and change '
        "nothing else of the cluster in that deploy"
    )
    assert (
        "2. Deploy it. The cluster moves first (updateAuthMode "
        f"{shown} → API_AND_CONFIG_MAP: EKS reads access entries beside aws-auth); then CloudFormation creates an "
        f"access entry for each of administrators ({ADMINISTRATOR}) with AmazonEKSClusterAdminPolicy (cluster scope) "
        "and an EC2_LINUX access entry for Karpenter's node role; once the administrators' entries exist, aws-auth "
        "is rewritten without their system:masters mappings." in report
    )
    assert "\n3. `make accept` and commit the baseline" in report
    assert "aws eks list-access-entries --cluster-name eks-karpenter" in report
    assert "\n4. It cannot be undone: EKS and aws-cdk's handler refuse API_AND_CONFIG_MAP → CONFIG_MAP" in report


def test_following_the_steps_moves_the_cluster_in_one_allowed_update(tmp_path, default, production):
    """Step 1 (the mode written, nothing else): the handler's one update of the mode, no warning any more; then
    step 3 (make accept: the baseline on API_AND_CONFIG_MAP) the profile keeps it without the setting."""
    config = _production(_baseline(tmp_path, default.json), authenticationMode="API_AND_CONFIG_MAP")
    assert (config.authentication_mode, config.warnings, config.access_steps) == ("API_AND_CONFIG_MAP", (), ())
    kept = _production(tmp_path)  # (the production fixture's cluster: protection on, as deployed before)
    protected = synthesized_cluster_config(kept)
    assert protected is not None
    assert update(protected, _config(production.template)) == ["updateAuthMode"]
    accepted = tmp_path / "accepted"
    accepted.mkdir()
    _baseline(accepted, production.json)
    assert _production(accepted).authentication_mode == "API_AND_CONFIG_MAP"
    assert _production(accepted).warnings == ()


@pytest.mark.parametrize("deployed", ["API_AND_CONFIG_MAP", "API"])
def test_production_keeps_a_deployed_cluster_on_access_entries(tmp_path, production, deployed):
    template = json.loads(json.dumps(production.json))
    cluster_id, _ = only(resources(production.template, "Custom::AWSCDK-EKS-Cluster"))
    template["Resources"][cluster_id]["Properties"]["Config"]["accessConfig"] = {"authenticationMode": deployed}
    config = _production(_baseline(tmp_path, template))
    assert (config.authentication_mode, config.warnings, config.access_steps) == (deployed, (), ())


def test_a_mode_written_wins_over_the_profile_and_null_keeps_it_unset(tmp_path):
    assert _production(authenticationMode="CONFIG_MAP").authentication_mode == "CONFIG_MAP"
    unset = _production(authenticationMode=None)
    assert (unset.authentication_mode, unset.warnings) == (None, ())
    assert load_config({**PRODUCTION, "authenticationMode": "null"}, today=TODAY).authentication_mode is None  # -c
    # cdk.json's null, which jsii drops from the app's context whole: still unset, not the profile's
    in_file = {**PRODUCTION, "authenticationMode": None}
    (config,) = load_environments(dict(PRODUCTION), today=TODAY, file_context=in_file).values()
    assert config.authentication_mode is None


def test_an_environment_reads_its_own_stack_and_an_existing_cluster_takes_no_mode(tmp_path, default):
    template = json.loads(json.dumps(default.json))
    (tmp_path / "baseline").mkdir()
    (tmp_path / "baseline" / "eks-karpenter-prod.template.json").write_text(json.dumps(template))
    configs = load_environments(
        {"environments": {"prod": dict(PRODUCTION), "next": dict(PRODUCTION)}},
        today=TODAY,
        deployed=lambda stack: deployed_authentication_mode(stack, tmp_path),
    )
    assert {n: c.authentication_mode for n, c in configs.items()} == {"prod": None, "next": "API_AND_CONFIG_MAP"}
    (warning,) = configs["prod"].warnings
    assert warning.startswith(
        "authenticationMode unset (CONFIG_MAP) (from profile production, as deployed "
        "(baseline/eks-karpenter-prod.template.json)): "
    )
    assert warning.endswith(" explains them (environment prod)")
    assert configs["next"].warnings == ()
    existing = json.loads((Path(__file__).parent.parent / "examples" / "existing-cluster.json").read_text())
    on_existing = load_config(
        {**existing, "profile": "production", "nodeClasses": PRODUCTION["nodeClasses"]}, today=TODAY
    )
    assert on_existing.authentication_mode is None  # (the cluster's own mode is existingCluster.authenticationMode)


def test_the_quickstart_recommends_access_entries_written_into_cdk_json():
    from tests.test_readme import README, _section

    quickstart = _section(README.read_text(), "## Quickstart")
    assert '`"authenticationMode": "API_AND_CONFIG_MAP"`' in quickstart and "`cdk.json`" in quickstart
    config = load_config({**PRODUCT_CONTEXT, "authenticationMode": "API_AND_CONFIG_MAP"}, today=TODAY)
    assert config.authentication_mode == "API_AND_CONFIG_MAP" and config.warnings == ()


def test_make_review_ends_with_the_steps_over_a_baseline_on_aws_auth(tmp_path, monkeypatch, capsys, default):
    """`make review` in a project of the user's: the production profile over the accepted baseline of a cluster on
    aws-auth keeps it there, and the report ends with the steps that move it."""
    from karpenter_stack import context_sources
    from tooling import review as rv
    from tooling import workspace

    project = tmp_path / "project"
    project.mkdir()
    (project / "cdk.context.json").write_text((workspace.PRODUCT / "cdk.context.json").read_text())
    cdk_json = json.loads((workspace.PRODUCT / "cdk.json").read_text())
    cdk_json["context"].update(PRODUCTION)
    (project / "cdk.json").write_text(json.dumps(cdk_json))
    monkeypatch.setattr(context_sources, "project_dir", lambda: project)
    monkeypatch.chdir(project)
    rv.accept(Path(default.app.outdir), project / rv.BASELINE)

    rv.main([])
    report = capsys.readouterr().out
    head, _, moves = report.partition("\n## Move cluster eks-karpenter to access entries\n")
    assert "updateDeletionProtection" in head and "updateAuthMode" not in head
    assert moves.startswith(
        "\nThe production profile starts new clusters on API_AND_CONFIG_MAP and keeps this deployed cluster's "
        "authenticationMode (unset: CONFIG_MAP): nothing above changes it. To move it:\n\n1. Write "
    )
    assert [line[:3] for line in moves.strip().splitlines()[2:]] == ["1. ", "2. ", "3. ", "4. "]
