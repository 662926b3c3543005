"""Changes to a running stack (issue 22): each setting moved from one value to another, deployed over a stack
that exists -- and CloudFormation's rollback of that deploy, which re-sends every custom resource an Update
with old and new properties swapped. Mirrored behaviour is aws-cdk-lib 2.275's handlers (the cluster
handler's onUpdate / analyzeUpdate), EKS's rules and the Karpenter 1.14.1 chart."""

from __future__ import annotations

import copy
import itertools
import json
from collections import Counter
from pathlib import Path

import pytest

from karpenter_stack.config import load_config, stack_name_for
from tests import commands
from tests.cfn import only, render, resources, teardown
from tooling import review as rv
from tooling import workspace
from tooling.review import transition_moves as moves


def _cluster_config(synthesized) -> dict:
    return only(resources(synthesized.template, "Custom::AWSCDK-EKS-Cluster"))[1]["Properties"]["Config"]


# --- deletion protection --------------------------------------------------------------------------------


def test_deletion_protection_false_is_written_so_that_turning_it_off_reaches_eks(alternative, default):
    """The handler's analyzeUpdate compares old and new deletionProtection and sends the new value: an absent
    property is sent as undefined, an UpdateClusterConfig with nothing in it (tests/test_cluster_handler.py), which
    the review calls a failure. false must be in the template."""
    assert _cluster_config(alternative)["deletionProtection"] is False
    assert "deletionProtection" not in _cluster_config(default)  # unset: nothing sent on create
    protected = {"Config": {"name": "a", "version": "1.36", "deletionProtection": True}}
    off = {"Config": {"name": "a", "version": "1.36", "deletionProtection": False}}
    unset = {"Config": {"name": "a", "version": "1.36"}}
    assert rv._cluster_change(protected, off, set(), False) == ("updated", "in place: updateDeletionProtection")
    # its rollback sends true again: the same kind of update, allowed
    assert rv._cluster_change(off, protected, set(), False) == ("updated", "in place: updateDeletionProtection")
    assert rv._cluster_change(protected, unset, set(), False) == (
        "fails",
        "deletionProtection true → unset: aws-cdk's handler sends an UpdateClusterConfig with no setting in it, an "
        "empty update EKS refuses (write false to turn it off)",
    )
    from tooling.review.cluster import cluster_update

    assert cluster_update("C", protected, unset, set(), {"Resources": {}}, None).why.endswith(
        "(deletionProtection true → unset)"
    )


# --- the system node group follows the Kubernetes version -----------------------------------------------


def test_the_system_node_group_follows_the_kubernetes_version_after_the_control_plane(alternative):
    """aws-cdk writes a node group's Version only when given; without it the first bump leaves the nodes behind
    and EKS refuses the second (nodes at most the control plane's minor)."""
    cluster_id, cluster = only(resources(alternative.template, "Custom::AWSCDK-EKS-Cluster"))
    _, nodegroup = only(resources(alternative.template, "AWS::EKS::Nodegroup"))
    assert nodegroup["Properties"]["Version"] == cluster["Properties"]["Config"]["version"] == "1.36"
    # it references the cluster: CloudFormation updates the control plane first, then the node group
    assert nodegroup["Properties"]["ClusterName"] == {"Ref": cluster_id}
    # and the review names what a bump does to its nodes
    assert rv._rolling_effects("AWS::EKS::Nodegroup", {"Version": "1.35"}, {"Version": "1.36"}, "updated") == [
        "the node group's nodes are replaced one at a time (Version): EKS drains each, its pods are evicted and "
        "rescheduled"
    ]


# --- the safety net on a cluster this stack did not create -------------------------------------------


def test_on_an_existing_cluster_the_safety_net_is_scoped_to_this_stacks_pools_and_classes(existing, default):
    """Other teams' Karpenter nodes carry the same cluster tag: the safety net's properties and permissions
    name this stack's pools and classes (the handler against moto: tests/test_teardown_moto.py)."""
    ((_, resource), (_, bound)), ((_, ours), _) = (teardown(s.template) for s in (existing, default))
    for scoped in (resource, bound):  # the safety net and its drain bound
        assert (scoped["Properties"]["NodePools"], scoped["Properties"]["NodeClasses"]) == (["default"], ["default"])
    assert "NodePools" not in ours["Properties"]  # a cluster of ours: every pool on it is this stack's
    (_, policy), *_ = (
        (k, v) for k, v in resources(existing.template, "AWS::IAM::ManagedPolicy").items() if "TeardownSafetyNet" in k
    )
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    owned = {"aws:ResourceTag/kubernetes.io/cluster/shared-prod": "owned"}
    assert statements["TerminateThisClustersKarpenterInstances"]["Condition"] == {
        "StringEquals": {**owned, "aws:ResourceTag/karpenter.sh/nodepool": ["default"]}
    }
    assert statements["DeleteThisClustersLaunchTemplates"]["Condition"] == {
        "StringEquals": {**owned, "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": ["default"]}
    }
    assert statements["DeleteThisClustersInstanceProfiles"]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": ["default"]}
    }
    assert statements["ReadWhichClassMadeAnInstanceProfile"]["Action"] == "iam:GetInstanceProfile"


# --- what the review says about the controller's pods ---------------------------------------------------


def test_the_review_says_pods_restart_only_when_the_pod_template_changes():
    """Karpenter 1.14.1's chart: the service account's annotations, the PodDisruptionBudget, the ServiceMonitor
    and the replica count render outside the Deployment's pod template."""
    chart = {"Release": "karpenter", "Version": "1.14.1"}

    def effects(old_values, new_values):
        old, new = ({**chart, "Values": json.dumps(v)} for v in (old_values, new_values))
        return rv._helm_effects(old, new, set())[2]

    annotation_only = effects(
        {"serviceAccount": {"name": "k", "annotations": {"eks.amazonaws.com/role-arn": "a"}}},
        {"serviceAccount": {"name": "k"}},
    )
    assert annotation_only[-1].startswith("the controller's pod template is unchanged: its pods keep running")
    switch = effects(
        {"serviceAccount": {"name": "k", "annotations": {"x": "a"}}, "podAnnotations": {"c": "irsa"}},
        {"serviceAccount": {"name": "k"}, "podAnnotations": {"c": "pod-identity"}},
    )
    assert switch[-1].startswith("the Karpenter controller pods restart one at a time")
    assert rv._pod_template_changes(
        {"Values": json.dumps({"replicas": 2, "settings": {"batchMaxDuration": "10s"}})},
        {"Values": json.dumps({"replicas": 3, "settings": {"batchMaxDuration": "20s"}})},
    ) == ["settings.batchMaxDuration"]


# --- stacks renamed or left out ---------------------------------------------------------------------------


def test_renaming_a_cluster_with_environments_is_blocked_for_each_environment(default):
    """Each environment's stack is `<cluster>-<env>`: a new clusterName creates new stacks and leaves the old
    ones running. With one stack the review already said so; with environments it passed (exit 0)."""
    template = default.json
    old = {"payments-dev.template": template, "payments-prod.template": template}
    renamed = {"shop-dev.template": template, "shop-prod.template": template}
    reports = rv.review(old, renamed)
    assert [r.name for r in reports] == ["shop-dev (replaces payments-dev)", "shop-prod (replaces payments-prod)"]
    text, blocking, failing = rv.render(reports, {})
    assert (blocking, failing) == (["payments-dev/*", "payments-prod/*"], [])
    # a stack that leaves the app (an environment removed) keeps running: blocked until acknowledged too
    reports = rv.review(old, {"payments-dev.template": template})
    (gone,) = [r for r in reports if r.name == "payments-prod"]
    assert [(c.action, c.why) for c in gone.changes] == [
        ("removed", "stack no longer in the app: `cdk deploy` leaves it running (nothing is deleted)")
    ]
    text, blocking, _ = rv.render(reports, {})
    assert blocking == ["payments-prod/*"]
    assert "`cdk destroy payments-prod` (with the app that still has it) removes it" in text


# --- authentication mode: refused changes, and changes whose rollback is refused --------------------------


def _config(mode=None, **more):
    config = {"name": "a", "version": "1.36", **more}
    if mode is not None:
        config["accessConfig"] = {"authenticationMode": mode}
    return {"Config": config}


def test_refused_authentication_mode_changes_fail_the_review_with_the_safe_sequence():
    """aws-cdk 2.275's onUpdate: unset -> API, back to a weaker mode, defined -> unset are refused -- and so is
    the rollback of any allowed step, which re-sends the old mode."""
    assert rv._cluster_change(_config(), _config("API"), set(), False) == (
        "fails",
        "authenticationMode unset → API: aws-cdk's handler refuses (Cannot update from undefined(CONFIG_MAP) to "
        "API); first deploy API_AND_CONFIG_MAP (with nothing else you can leave out), then API",
    )
    assert rv._cluster_change(_config("API"), _config("API_AND_CONFIG_MAP"), set(), False)[0] == "fails"
    assert rv._cluster_change(_config("API_AND_CONFIG_MAP"), _config(), set(), False)[1].startswith(
        "authenticationMode API_AND_CONFIG_MAP → unset: aws-cdk's handler refuses (Cannot fallback "
        "authenticationMode from defined to undefined); EKS never moves a cluster back"
    )
    step = rv._cluster_change(_config(), _config("API_AND_CONFIG_MAP"), set(), False)
    assert step == ("updated", f"in place: updateAuthMode unset → API_AND_CONFIG_MAP ({rv.ONE_WAY})")
    # every allowed step's rollback (old and new swapped) is one the handler refuses
    for old, new in ((None, "API_AND_CONFIG_MAP"), ("CONFIG_MAP", "API_AND_CONFIG_MAP"), ("API_AND_CONFIG_MAP", "API")):
        assert rv.auth_mode_refusal(old, new) is None and rv.auth_mode_refusal(new, old) is not None


def test_a_mode_step_deployed_with_other_changes_blocks_until_acknowledged(default, access_entries):
    """The app's own API_AND_CONFIG_MAP adds access entries in the same deploy: if one fails, the rollback
    re-sends the old mode and the stack is left in UPDATE_ROLLBACK_FAILED."""
    reports = rv.review(
        rv.synthesized_templates(Path(default.app.outdir)), rv.synthesized_templates(Path(access_entries.app.outdir))
    )
    text, blocking, failing = rv.render(reports, {})
    (cluster,) = [c for r in reports for c in r.changes if c.type == "Custom::AWSCDK-EKS-Cluster"]
    assert cluster.one_way and cluster.action == "updated"
    assert "eks-karpenter/Cluster9EE0221C" in blocking and failing == []
    assert (
        "its rollback cannot undo it: with 5 other change(s) in this deploy, a failure of any of them rolls it back, "
        "and CloudFormation's rollback re-sends the old mode, which aws-cdk's handler refuses" in text
    )
    assert "the rollback is refused at the update of the EKS cluster in the rollback" in text  # (the replay)
    assert "UPDATE_ROLLBACK_FAILED" in text
    _, blocking, _ = rv.render(reports, {"eks-karpenter/Cluster9EE0221C": "entries first tested in staging"})
    assert "eks-karpenter/Cluster9EE0221C" not in blocking


def test_in_place_updates_show_old_and_new_values():
    action, why = rv._aws_change(
        "AWS::EKS::Nodegroup",
        {"ScalingConfig": {"MinSize": 2, "MaxSize": 2}, "Labels": {"a": "b"}},
        {"ScalingConfig": {"MinSize": 2, "MaxSize": 3}, "Labels": {"a": "c"}},
        set(),
    )
    assert (action, why) == ("updated", "in place: Labels.a: b → c, ScalingConfig.MaxSize: 2 → 3")


def test_switching_controller_hosting_pairs_nothing_unrelated_and_names_the_evicted_pods(default, alternative):
    """Fargate -> node group: the Fargate pod execution role and the node group's role are different things
    (the review paired them as one role under a new logical id), and the deleted Fargate profile's pods --
    the controller and CoreDNS -- are deleted with it."""
    old = {"t": default.json}
    new = {"t": {**default.json, "Resources": {**default.json["Resources"]}}}
    resources_new = new["t"]["Resources"]
    profile = "ClusterfargateprofileKarpenterAndCoreDns2C79EDD5"
    fargate_role = "ClusterfargateprofileKarpenterAndCoreDnsPodExecutionRole61D3A264"
    del resources_new[profile], resources_new[fargate_role]
    node_role = "ControllerHostingNodeRoleB1C2D3E4"
    resources_new[node_role] = alternative.json["Resources"][
        only({k: v for k, v in alternative.json["Resources"].items() if k.startswith("ControllerHostingNodeRole")})[0]
    ]
    changes = {c.logical_id: c for c in rv.compare_template(old["t"], new["t"])}
    assert (changes[fargate_role].action, changes[node_role].action) == ("removed", "added")
    assert changes[profile].effects == [
        "the pods this Fargate profile runs (namespaces kube-system) are deleted with it: they restart only where "
        "other capacity matches them"
    ]
    assert changes[profile].interrupts
    # the same construct under a new path hash is still one resource replaced
    renamed = {"t": {**default.json, "Resources": {**default.json["Resources"]}}}
    renamed["t"]["Resources"]["ClusterfargateprofileKarpenterAndCoreDnsPodExecutionRole0000AAAA"] = renamed["t"][
        "Resources"
    ].pop(fargate_role)
    (change,) = [c for c in rv.compare_template(old["t"], renamed["t"]) if c.logical_id == fargate_role]
    assert change.action == "replaced"


# --- termination protection, however the stack is deployed ---------------------------------------------


def test_production_stacks_protect_themselves_also_when_the_pipeline_deploys_them(production, default, delivery):
    """CDK Pipelines' CloudFormation actions ignore a stack's termination_protection (the CLI applies it): the
    stack turns it on itself, and off when protection leaves the configuration."""
    (_, protection), *_ = [
        (k, v) for k, v in production.json["Resources"].items() if k.startswith("TerminationProtection")
    ] or [(None, None)]
    assert protection is not None and protection["Type"] == "Custom::AWS"
    create, delete = (json.loads(render(protection["Properties"][k])) for k in ("Create", "Delete"))
    assert (create["service"], create["action"]) == ("CloudFormation", "updateTerminationProtection")
    assert create["parameters"] == {"StackName": "${Ref:AWS::StackId}", "EnableTerminationProtection": True}
    assert delete["parameters"]["EnableTerminationProtection"] is False
    policy = only(
        {
            k: v
            for k, v in production.json["Resources"].items()
            if k.startswith("TerminationProtectionCustomResourcePolicy")
        }
    )[1]["Properties"]["PolicyDocument"]["Statement"]
    assert policy == [
        {"Action": "cloudformation:UpdateTerminationProtection", "Effect": "Allow", "Resource": {"Ref": "AWS::StackId"}}
    ]
    assert not [k for k in default.json["Resources"] if k.startswith("TerminationProtection")]
    # the pipeline's prod stage (the production profile) carries it; its dev stage does not
    stages = {
        name: json.loads(path.read_text())
        for name, path in delivery.templates().items()
        if name.startswith(("devekskarpenterdev", "prodekskarpenterprod")) and ".nested." not in name
    }
    protected = {
        name for name, t in stages.items() if any(k.startswith("TerminationProtection") for k in t["Resources"])
    }
    assert protected == {n for n in stages if "prod" in n} and len(stages) == 2


# --- refused at synth against your deployed baseline ---------------------------------------------------------


def _accepted(root, resources: dict, stack: str = "eks-karpenter") -> None:
    """A baseline with these resources, as `make accept` writes it into ``root``."""
    folder = root / "baseline"
    folder.mkdir(exist_ok=True)
    (folder / f"{stack}.template.json").write_text(json.dumps({"Resources": resources}))


def _merged(base: dict, changes: dict) -> dict:
    return {
        k: _merged(base[k], v) if isinstance(v, dict) and v and isinstance(base.get(k), dict) else v
        for k, v in {**base, **changes}.items()
    }


def _deployed(root, config: dict, stack: str = "eks-karpenter") -> None:
    """A baseline whose cluster resource has the default configuration's synthesized ``Config`` with these
    values."""
    from karpenter_stack import baseline

    full = _merged(baseline.synthesized_cluster_config(load_config({})), config)
    _accepted(root, {"Cluster9EE0221C": {"Type": "Custom::AWSCDK-EKS-Cluster", "Properties": {"Config": full}}}, stack)


DEPLOYED = {"name": "eks-karpenter", "version": "1.36", "resourcesVpcConfig": {"endpointPublicAccess": False}}


@pytest.mark.parametrize(
    ("deployed", "settings", "refused"),
    [
        (
            {},
            {"authenticationMode": "API"},
            'authenticationMode "API": the deployed cluster (baseline/eks-karpenter.template.json) is unset (CONFIG_MAP), '
            "and aws-cdk's handler refuses unset (CONFIG_MAP) → API (Cannot update from undefined(CONFIG_MAP) to API), on "
            "the deploy and again on its rollback; first deploy API_AND_CONFIG_MAP (with nothing else you can leave out), then API",
        ),
        (
            {"accessConfig": {"authenticationMode": "API"}},
            {"authenticationMode": "API_AND_CONFIG_MAP"},
            'authenticationMode "API_AND_CONFIG_MAP": the deployed cluster (baseline/eks-karpenter.template.json) is API, '
            "and aws-cdk's handler refuses API → API_AND_CONFIG_MAP (Cannot fallback authenticationMode from API to "
            "API_AND_CONFIG_MAP), on the deploy and again on its rollback; EKS never moves a cluster back: keep the "
            "current mode",
        ),
        (
            {"version": "1.34"},
            {},
            'kubernetesVersion "1.36": the deployed cluster (baseline/eks-karpenter.template.json) runs version 1.34 → '
            "1.36: EKS upgrades one minor version at a time (1.34 → 1.35 first)",
        ),
        (
            {"version": "1.35"},
            {"endpointAccess": "public-and-private", "publicAccessCidrs": ["203.0.113.0/24"]},
            'kubernetesVersion "1.35" → "1.36" and endpointAccess "private" → "public-and-private" and publicAccessCidrs '
            'unset → ["203.0.113.0/24"] change together against the deployed cluster '
            "(baseline/eks-karpenter.template.json): aws-cdk's handler allows one kind of cluster update per deploy, "
            'and refuses the rollback\'s too; deploy one at a time: first kubernetesVersion "1.36"; then endpointAccess '
            '"public-and-private" with publicAccessCidrs ["203.0.113.0/24"]',
        ),
    ],
    ids=["unset to API", "API back", "two minors", "two kinds"],
)
def test_what_the_deployed_cluster_cannot_take_is_refused_at_synth_with_the_safe_sequence(
    tmp_path, deployed, settings, refused
):
    from karpenter_stack import baseline

    _deployed(tmp_path, {**DEPLOYED, **deployed})
    assert baseline.refusals(load_config(settings), "eks-karpenter", tmp_path) == [refused]


@pytest.mark.parametrize(
    ("deployed", "settings"),
    [
        ({}, {"authenticationMode": "API_AND_CONFIG_MAP"}),  # one step along the one-way path
        ({"accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP"}}, {"authenticationMode": "API"}),
        ({"version": "1.35"}, {}),  # one minor up
        ({"deletionProtection": True}, {"deletionProtection": False}),  # written out: reaches EKS
        ({}, {"clusterName": "other"}),  # another stack: no baseline of its own (the review blocks the rename)
    ],
)
def test_what_the_deployed_cluster_can_take_passes(tmp_path, deployed, settings):
    from karpenter_stack import baseline

    _deployed(tmp_path, {**DEPLOYED, **deployed})
    config = load_config(settings)
    assert baseline.refusals(config, stack_name_for(config.cluster_name), tmp_path) == []


def _deployed_with_api(dest) -> None:
    from tooling import workspace

    cdk_json = json.loads((workspace.PRODUCT / "cdk.json").read_text())
    cdk_json["context"]["authenticationMode"] = "API"
    workspace.copied(dest, cdk_json)
    _deployed(dest, DEPLOYED)


AGAINST_BASELINE = commands.command(
    "test-against-baseline",
    ["make", "--no-print-directory", "test"],
    env=workspace.clean_env(),
    prepare=_deployed_with_api,
)


@pytest.mark.cli
def test_the_test_command_refuses_a_configuration_the_deployed_cluster_cannot_take():
    """Through the README's command, in a copy whose accepted baseline is an unset-mode cluster: cdk.json asks
    for API. The preflight stops it at once (the same check runs in every synth)."""
    result = commands.result(AGAINST_BASELINE)
    assert result.returncode == 2
    assert result.stderr.splitlines()[:2] == [
        "Configuration error:",
        'authenticationMode "API": the deployed cluster (baseline/eks-karpenter.template.json) is unset (CONFIG_MAP), '
        "and aws-cdk's handler refuses unset (CONFIG_MAP) → API (Cannot update from undefined(CONFIG_MAP) to API), on "
        "the deploy and again on its rollback; first deploy API_AND_CONFIG_MAP (with nothing else you can leave out), then API",
    ]
    assert "nothing was tested" in result.stderr and "passed" not in result.stdout


# --- the transition matrix (tooling/review/transitions.py; `make transitions` runs all of it) ------------------------


def test_the_matrix_is_generated_from_the_configuration_model():
    """Every top-level setting gives transitions by its type (modes: every ordered pair) or a sample, or its
    declaration says why it is not a transition of one stack (another stack, moved field by field, or a reason of
    its own); a setting without a declaration or a value stops the generation, naming it."""
    from karpenter_stack.config import AppConfig
    from tooling.review import transitions as tr

    found, not_one = moves.transitions()
    settings = {t.setting for t in found}
    assert settings | set(not_one) == {f.alias for f in AppConfig.model_fields.values()}
    assert not settings & set(not_one)
    assert {k: why.split(":")[0].split(" (")[0] for k, why in not_one.items()} == {
        "account": "names the account the stack is deployed to",
        "region": "names the region the stack is deployed to",
        "controller": "moved field by field",
        "existingCluster": "moved field by field",
        "existingNodeRoles": "moved with the files",
        "nodeClasses": "moved field by field",
        "nodeManifestRoles": "moved with the files",
        "nodeManifestVariables": "moved with the files",
        "nodePools": "moved field by field",
        "nodeOverlays": "moved field by field",
        "vpcId": "an existing VPC needs its lookups in cdk.context.json",
    }
    # what a value needs besides: from the declaration (every value, or one value by its JSON)
    (public,) = [
        t
        for t in found
        if t.setting == "endpointAccess" and t.new == "public-and-private" and t.base == {} and t.old != moves.DEFAULT
    ]
    assert public.overrides("new") == {"endpointAccess": "public-and-private", "publicAccessCidrs": ["203.0.113.0/24"]}
    assert public.overrides("old") == {"endpointAccess": "private"}
    pairs = {s: sum(t.setting == s for t in found) for s in ("authenticationMode", "deletionProtection", "profile")}
    # 4 and 3 modes, 2 values; and a value with needs from every default in one deploy, and back (_with_needs)
    assert pairs == {"authenticationMode": 12, "deletionProtection": 6, "profile": 4}
    with_needs = sorted(
        (t.setting, t.new) for t in found if t.base == {} and t.old is moves.DEFAULT and t.declared.companions(t.new)
    )
    assert with_needs == [
        ("controllerCredentials", "pod-identity"),
        ("endpointAccess", "public-and-private"),
        ("profile", "production"),
    ]
    assert (
        len(found) == 78
    )  # 66 before the moves with needs; widePublicAccessReason's two (issue 33); karpenterVersion's two (1.14.1 <-> 1.13.1, issue 34); nodeObjects' two (issue 43)
    fields = dict(AppConfig.model_fields)
    fields["node_magic"] = copy.copy(fields["cluster_name"])
    fields["node_magic"].alias = "nodeMagic"
    fields["node_magic"].examples = None
    with pytest.raises(
        KeyError, match=r"nodeMagic: no example value \(Field examples=\[...\]\) and no reason it is not a"
    ):
        tr.transitions(fields)
    fields["node_magic"] = copy.copy(fields["vpc_cidr"])
    fields["node_magic"].alias = "nodeMagic"
    fields["node_magic"].json_schema_extra = None
    with pytest.raises(KeyError, match=r"nodeMagic: no declaration of what changing it does"):
        tr.transitions(fields)


def test_a_wrong_verdict_is_caught_by_the_mirrored_rules():
    """A create-only change the review called an update, and a cluster update whose rollback the handler refuses
    that the review did not call one way: both are reported."""
    from tooling.review import transitions as tr

    group = {"Type": "AWS::EKS::Nodegroup", "Properties": {"InstanceTypes": ["t3.medium"], "Version": "1.36"}}
    cluster = {"Type": rv.CLUSTER, "Properties": {"Config": {"name": "c", "version": "1.36", "accessConfig": {}}}}
    old = {"s.template": {"Resources": {"Group": group, "Cluster": cluster}}}
    moved = {
        "Group": {**group, "Properties": {**group["Properties"], "InstanceTypes": ["t3.large"]}},
        "Cluster": {
            "Type": rv.CLUSTER,
            "Properties": {
                "Config": {"name": "c", "version": "1.36", "accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP"}}
            },
        },
    }
    new = {"s.template": {"Resources": moved}}
    careless = [
        rv.StackReport(
            "s", [rv.Change("Group", group["Type"], "updated"), rv.Change("Cluster", rv.CLUSTER, "updated", "in place")]
        )
    ]
    assert tr.mirrored_problems(old, new, careless) == [
        "s/Cluster: its rollback is refused (Cannot fallback authenticationMode from defined to undefined), review "
        "does not say one way",
        "s/Group: create-only InstanceTypes changes, review says updated",
    ]
    assert tr.mirrored_problems(old, new, rv.review(old, new)) == []


def _node_objects(alias: str) -> dict[str, dict]:
    """One template of an EC2NodeClass selecting ``alias`` and a NodePool of that class, as manifests."""
    node_class = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"}}
    node_class["spec"] = {"role": "r", "amiSelectorTerms": [{"alias": alias}]}
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "general"}}
    pool["spec"] = {"template": {"spec": {"nodeClassRef": {"name": "default"}, "requirements": []}}}
    manifest = {"Type": rv.MANIFEST, "Properties": {"Manifest": json.dumps([node_class, pool])}}
    return {"s.template": {"Resources": {"Nodes": manifest}}}


@pytest.mark.parametrize(
    ("old", "new", "drifts"),
    [
        ("al2023@latest", "bottlerocket@latest", "all nodes of pool `general` will be replaced by drift"),
        ("al2023@latest", "al2023@v20260801", "nodes of pool `general` not running the AMI al2023@v20260801"),
    ],
)
def test_an_alias_of_another_family_drifts_every_node_as_karpenters_hash_says(old, new, drifts):
    """Karpenter 1.14.1 EC2NodeClass.Hash() takes AMIFamily() (source/provider/pkg/apis/v1/ec2nodeclass.go): an alias
    of another family changes the hash, so every node drifts, whatever AMI it runs; an alias of the same family
    drifts only the nodes not on its AMI. The matrix's mirrored rule holds the review to it."""
    from tooling.review import transitions as tr

    before, after = _node_objects(old), _node_objects(new)
    reports = rv.review(before, after)
    (change,) = [c for r in reports for c in r.changes]
    assert any(e.startswith("EC2NodeClass `default` (") and drifts in e for e in change.effects), change.effects
    assert tr.mirrored_problems(before, after, reports) == []
    careless = [rv.StackReport("s", [rv.Change("Nodes", rv.MANIFEST, "updated")])]
    hashed = old.split("@")[0] != new.split("@")[0]
    assert tr.mirrored_problems(before, after, careless) == (
        ["s/Nodes: EC2NodeClass `default` changes its drift hash, review says no drift"] if hashed else []
    )


def _templates_of(overrides):
    from tests.conftest import synth

    return rv.synthesized_templates(Path(synth(**overrides).app.outdir))


def test_a_kubernetes_upgrade_is_one_way_and_blocks_until_acknowledged():
    """From the matrix, on the suite's own synths: 1.35 → 1.36 is allowed, but its rollback would ask EKS for a
    downgrade (aws-cdk's handler calls UpdateClusterVersion unless the cluster already runs that version), and the
    add-ons and patches that follow in the same deploy can fail: the review blocks until acknowledged."""
    from tooling.review import transitions as tr

    outcome = tr.assess(moves.Transition("kubernetesVersion", {}, "1.35", moves.DEFAULT), _templates_of)
    assert (outcome.category, outcome.rollback, outcome.problems) == ("blocked", "refused", [])
    reports = rv.review(_templates_of({"kubernetesVersion": "1.35"}), _templates_of({}))
    (cluster,) = [c for r in reports for c in r.changes if c.type == rv.CLUSTER]
    assert (
        cluster.one_way
        and cluster.why
        == f"in place: updateVersion (a Kubernetes upgrade, ~10 min; add-ons follow) ({rv.ONE_WAY_VERSION})"
        ' (version "1.35" → "1.36")'
    )
    assert "may now START a real control-plane downgrade" in rv.ONE_WAY_VERSION


def test_the_fields_of_objects_and_entries_are_in_the_matrix_with_every_mode_pair():
    """The settings declared 'by field' (node pools, node classes, node overlays, the controller, an existing
    cluster) are moved field by field, in the one entry or object of their setting: modes (declared, or named by
    the type) give every ordered pair; every other field goes from its holder's value to its example and back."""
    from karpenter_stack.config import AppConfig, tree

    found = moves.field_transitions()
    settings = {t.setting for t in found}
    by_field = ("nodePools", "nodeClasses", "nodeOverlays", "controller", "existingCluster")
    assert settings == {
        f"{key}.{f.alias or n}" for key in by_field for n, f in tree.child(AppConfig, key).model_fields.items()
    }
    capacity = {(_first(t.old), _first(t.new)) for t in found if t.setting == "nodePools.capacityTypes"}
    assert capacity == set(itertools.permutations(["spot", "on-demand", "reserved", None], 2))  # null: not written
    # what a value needs besides comes from the field's declaration, and from its setting's
    (reserved,) = [t for t in found if t.setting == "nodePools.capacityTypes" and t.new == ["reserved"]][:1]
    assert reserved.overrides("new")["nodeClasses"] == [
        {"name": "default", "capacityReservationSelectorTerms": [{"id": "cr-0123456789abcdef0"}]}
    ]
    (weight, _) = [t for t in found if t.setting == "nodeOverlays.weight"]
    assert weight.overrides("new") == {
        "controller": {"featureGates": {"nodeOverlay": True}},
        "nodeOverlays": [
            {
                "name": "gpu-slices",
                "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g6"]}],
                "capacity": {"nvidia.com/gpu-slice": "4"},
                "weight": 10,
            }
        ],
    }
    (role, _) = [t for t in found if t.setting == "existingCluster.kubectlRoleArn"]
    assert role.overrides("old")["existingCluster"] == AppConfig.model_fields["existing_cluster"].examples[0]
    assert role.overrides("new")["existingCluster"]["kubectlRoleArn"] == (
        "arn:aws:iam::111122223333:role/platform-kubectl"
    )
    per_field = Counter(t.setting for t in found)
    assert {s: n for s, n in per_field.items() if n != 2} == {
        "nodePools.capacityTypes": 12,  # declared modes, with null (no requirement written)
        "nodePools.architectures": 6,
        "nodePools.instanceCategories": 6,
        "nodePools.minInstanceGeneration": 6,
        "nodePools.terminationGracePeriod": 6,  # declared modes, with null
        "nodePools.consolidationPolicy": 6,
        "nodeClasses.amiAlias": 12,  # declared modes: four families and pins
        "nodeClasses.rootVolumeType": 12,
        "nodeClasses.detailedMonitoring": 6,
        "nodeClasses.associatePublicIPAddress": 6,
        "controller.zonalShift": 6,
        "controller.logLevel": 12,
        "existingCluster.authenticationMode": 12,
    }
    assert len(found) == 218  # (volumeKmsKey and controller.chartValues: each its example and back)
    # what a value needs in its own entry is set in that entry (own images need their family beside them)
    (terms, _) = [t for t in found if t.setting == "nodeClasses.amiSelectorTerms"]
    assert terms.overrides("new")["nodeClasses"] == [
        {"name": "default", "amiFamily": "AL2023", "amiSelectorTerms": [{"id": "ami-0123456789abcdef0"}]}
    ]
    assert terms.overrides("old")["nodeClasses"] == [{"name": "default"}]


def _first(value):
    return None if value is None else value[0]


def test_a_switch_between_static_and_dynamic_capacity_fails_the_deploy_and_the_review_says_so():
    """Found by the matrix: the review called it in place, but the NodePool CRD's transition rule refuses the
    apply (a pool cannot switch between replicas and none), so the deploy fails and rolls back."""
    from constructs_lib.karpenter import manifests
    from constructs_lib.karpenter.specs.node_class import NodeClassSpec
    from constructs_lib.karpenter.specs.node_pool import NodePoolSpec

    def manifest(**pool):
        _, pools, _ = manifests.node_objects(
            [NodeClassSpec()],
            [NodePoolSpec(**pool)],
            node_overlays=[],
            cluster_name="c",
            node_role_name="r",
        )
        return json.dumps(list(pools.values()))

    (refused,) = rv.crd_refusals(manifest(), manifest(replicas=2), {})
    assert refused.startswith("NodePool/default: ") and refused.endswith("(Karpenter 1.14.1 CRD rule)")
    assert rv.crd_refusals(manifest(replicas=2), manifest(replicas=3), {}) == []


def test_refused_steps_are_named_before_any_advice_to_combine_them(tmp_path):
    """Found by a newcomer trial: a mode step back and a downgrade together also got 'deploy one at a time: first
    ... then ...', advising both refused steps."""
    from karpenter_stack import baseline

    _deployed(tmp_path, {**DEPLOYED, "accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP"}})
    refused = baseline.refusals(load_config({"kubernetesVersion": "1.35"}), "eks-karpenter", tmp_path)
    assert refused == [
        "authenticationMode unset: the deployed cluster (baseline/eks-karpenter.template.json) is "
        "API_AND_CONFIG_MAP, and aws-cdk's handler refuses API_AND_CONFIG_MAP → unset (CONFIG_MAP) (Cannot fallback "
        "authenticationMode from defined to undefined), on the deploy and again on its rollback; EKS never moves a "
        "cluster back: keep the current mode",
        'kubernetesVersion "1.35": the deployed cluster (baseline/eks-karpenter.template.json) runs version 1.36 → '
        "1.35: a downgrade is EKS's version rollback, which rolls back the control plane only (one minor, within 7 "
        "days of an in-place upgrade) while nodes and add-ons stay newer; a deploy would start that rollback through "
        "CloudFormation with Karpenter's nodes on the newer kubelet (never newer than the control plane): roll back "
        "the data plane first (Karpenter's nodes: pin their image to 1.35 and let them drift; the managed node group "
        "and add-ons to 1.35), then the control plane with `aws eks update-cluster-version --kubernetes-version 1.35` "
        "within 7 days of the upgrade (EKS's version rollback, outside CloudFormation), then `make accept` so the "
        "baseline records 1.35, or keep 1.36",
    ]


def test_interrupting_effects_are_matched_as_words():
    """Found by the matrix: every effect naming the "controller" counted as a roll, so a serviceMonitor switch (a
    ServiceMonitor object, no pod touched) was reported as interrupting."""
    kept = rv.Change(
        "C", rv.HELM, "updated", effects=["the controller's pod template is unchanged: its pods keep running"]
    )
    assert not kept.interrupts
    assert rv.Change(
        "C", rv.HELM, "updated", effects=["the Karpenter controller pods restart one at a time"]
    ).interrupts
    assert rv.Change(
        "A", "AWS::EKS::Addon", "updated", effects=["add-on `coredns` is updated: its pods roll"]
    ).interrupts


def test_a_pool_switching_between_static_and_dynamic_capacity_is_refused_at_synth(tmp_path):
    """What the CRD refuses (tests above), refused before the deploy: against the accepted baseline's NodePool."""
    from karpenter_stack import baseline

    pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "batch"},
        "spec": {"template": {}},
    }
    manifest = {"Type": "Custom::AWSCDK-EKS-KubernetesResource", "Properties": {"Manifest": json.dumps([pool])}}
    _accepted(tmp_path, {"Pool": manifest})
    gates = {"controller": {"featureGates": {"staticCapacity": True}}}
    static = load_config({**gates, "nodePools": [{"name": "batch", "replicas": 3}]})
    assert baseline.refusals(static, "eks-karpenter", tmp_path) == [
        'nodePools[0].replicas 3: the deployed pool "batch" (baseline/eks-karpenter.template.json) is dynamic (no '
        "replicas), and the NodePool CRD refuses a switch between static and dynamic capacity in place; give the "
        "pool a new name to switch (the old pool's nodes drain, the new pool's launch)"
    ]
    renamed = load_config({**gates, "nodePools": [{"name": "batch-static", "replicas": 3}]})
    assert baseline.refusals(renamed, "eks-karpenter", tmp_path) == []


def test_the_matrix_checks_eks_version_skew():
    from tooling.review import transition_checks

    cluster = {"Type": rv.CLUSTER, "Properties": {"Config": {"version": "1.36"}}}
    group = {"Type": "AWS::EKS::Nodegroup", "Properties": {"Version": "1.35"}}
    proxy = {
        "Type": "AWS::EKS::Addon",
        "Properties": {"AddonName": "kube-proxy", "AddonVersion": "v1.35.3-eksbuild.13"},
    }
    assert transition_checks._skew_problems(
        {"s": {"Resources": {"Cluster": cluster, "Group": group, "Proxy": proxy}}}
    ) == [
        "s/Group: node group at 1.35, cluster at 1.36",
        "s/Proxy: kube-proxy v1.35.3-eksbuild.13, cluster at 1.36",
    ]


def test_moving_karpenters_namespace_is_refused_at_synth_and_fails_the_review(tmp_path):
    """Found by a newcomer trial: the review said the old release keeps running and advised `helm uninstall` of
    the CRD chart, which would delete every NodePool with its CRDs. Helm refuses the new release instead (the
    CRDs and ClusterRoles belong to the old one), so the deploy fails: refused at synth, failing in the review."""
    from karpenter_stack import baseline

    chart = {
        "Type": "Custom::AWSCDK-EKS-HelmChart",
        "Properties": {"Release": "karpenter-crd", "Namespace": "kube-system"},
    }
    _accepted(tmp_path, {"Crd": chart})
    assert baseline.refusals(load_config({"karpenterNamespace": "karpenter"}), "eks-karpenter", tmp_path) == [
        'karpenterNamespace "karpenter": Karpenter\'s deployed releases (baseline/eks-karpenter.template.json) are in '
        '"kube-system", and Helm refuses to install them in another namespace (their CRDs and ClusterRoles belong to '
        'the releases there); keep "kube-system"'
    ]
    moved = {**chart, "Properties": {"Release": "karpenter-crd", "Namespace": "karpenter"}}
    (change,) = rv.review({"s.template": {"Resources": {"Crd": chart}}}, {"s.template": {"Resources": {"Crd": moved}}})[
        0
    ].changes
    assert change.action == "fails" and "helm uninstall" not in change.why
    assert change.why.startswith("release `karpenter-crd` in `kube-system` → `karpenter-crd` in `karpenter`: ")


def test_a_new_vpc_cidr_is_refused_at_synth(tmp_path):
    from karpenter_stack import baseline

    vpc = {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.0.0.0/16"}}
    _accepted(tmp_path, {"Vpc": vpc})
    assert baseline.refusals(load_config({"vpcCidr": "10.1.0.0/16"}), "eks-karpenter", tmp_path) == [
        'vpcCidr "10.1.0.0/16": the deployed VPC (baseline/eks-karpenter.template.json) is 10.0.0.0/16; a new CIDR '
        "replaces the VPC and its subnets, and EKS keeps a cluster in the VPC it was created in, so the deploy fails; "
        "keep 10.0.0.0/16 (another network needs another cluster: a new clusterName, a new stack)"
    ]
    assert baseline.refusals(load_config({}), "eks-karpenter", tmp_path) == []


def test_the_matrix_asks_the_synth_to_refuse_what_would_fail():
    """`make transitions` flags a deploy the review says fails unless the synth refuses it against that baseline."""
    from tooling.review import transitions as tr

    deployed = {
        "eks-karpenter.template": {
            "Resources": {"Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.0.0.0/16"}}}
        }
    }
    assert tr._refused_against(deployed, load_config({"vpcCidr": "10.1.0.0/16"}))[0].startswith('vpcCidr "10.1.0.0/16"')
    assert tr._refused_against(deployed, load_config({})) == []


def test_the_matrix_reads_the_products_folder_not_your_accepted_baseline(tmp_path, monkeypatch):
    """Found by a newcomer trial: after `make accept`, `make transitions` stopped with a traceback, since its synth of
    kubernetesVersion 1.35 was refused against the user's baseline (a cluster at 1.36)."""
    from karpenter_stack import baseline, context_sources
    from tooling.review import transitions as tr

    (tmp_path / "baseline").mkdir()
    cluster = {"Type": rv.CLUSTER, "Properties": {"Config": {"name": "eks-karpenter", "version": "1.36"}}}
    (tmp_path / "baseline" / "eks-karpenter.template.json").write_text(json.dumps({"Resources": {"C": cluster}}))
    monkeypatch.setattr(context_sources, "project_dir", lambda: tmp_path)  # your working directory
    older = load_config({"kubernetesVersion": "1.35"})
    assert baseline.refusals(older, "eks-karpenter")[0].startswith('kubernetesVersion "1.35": the deployed cluster')
    with tr.the_products_project():
        assert baseline.refusals(older, "eks-karpenter") == []
    assert context_sources.project_dir() == tmp_path


def test_the_guard_refuses_what_aws_cdks_real_handler_refuses(tmp_path):
    """Issue 32: the synth's guard runs the synthesized cluster Config through the handler's rules (the mirror
    that agrees with the real handler, tests/test_cluster_handler.py): public CIDRs with a version bump, a zone
    count changed on a running cluster, and deletion protection written away (an empty UpdateClusterConfig)."""
    from karpenter_stack import baseline

    public = {"endpointAccess": "public-and-private"}
    _deployed(
        tmp_path,
        {
            "version": "1.35",
            "resourcesVpcConfig": {"endpointPublicAccess": True, "publicAccessCidrs": ["198.51.100.0/24"]},
        },
    )
    (cidrs,) = baseline.refusals(
        load_config({**public, "publicAccessCidrs": ["203.0.113.0/24"]}), "eks-karpenter", tmp_path
    )
    assert cidrs.startswith(
        'kubernetesVersion "1.35" → "1.36" and publicAccessCidrs ["198.51.100.0/24"] → ["203.0.113.0/24"] change '
        "together against the deployed cluster"
    ) and cidrs.endswith('first kubernetesVersion "1.36"; then publicAccessCidrs ["203.0.113.0/24"]')
    _deployed(tmp_path, {})
    (zones,) = baseline.refusals(
        load_config({"maxAzs": 3, "account": "444455556666", "region": "eu-west-1"}), "eks-karpenter", tmp_path
    )
    assert zones.startswith(
        "maxAzs 3: the deployed cluster (baseline/eks-karpenter.template.json) has its subnets in 2 zones"
    ) and zones.endswith("keep 2 (more zones need a new cluster)")
    _deployed(tmp_path, {"deletionProtection": True})
    (protection,) = baseline.refusals(load_config({}), "eks-karpenter", tmp_path)
    assert protection.startswith("deletionProtection unset: the deployed cluster") and "write false to turn it off" in (
        protection
    )


def test_the_guards_cluster_only_build_gives_the_synthesized_cluster_config(
    default, production, alternative, access_entries
):
    """The guard builds the environment's stack only up to its cluster (nothing built after it changes the cluster
    resource's Config): the same Config the whole synth writes, for configurations that differ around it."""
    from karpenter_stack import baseline

    for synthesized in (default, production, alternative, access_entries):
        (config,) = [
            r["Properties"]["Config"]
            for r in synthesized.template.to_json()["Resources"].values()
            if r["Type"] == "Custom::AWSCDK-EKS-Cluster"
        ]
        assert baseline.cluster_only_config(synthesized.config) == config
        assert baseline.synthesized_cluster_config(synthesized.config) == config  # (the whole build's, kept)


def test_a_node_pool_moves_verdict_is_checked_against_karpenters_disruption_model():
    """The review's 'interrupt' on a node pool move is what tooling/review/disruption.py predicts from the two pools,
    not what the field declares: widening consolidation disrupts nodes (declared behavioral), a review that said
    otherwise is caught, and so is one that says a weight change disrupts."""
    from tooling.review import transitions as tr

    found = moves.field_transitions()
    (widen,) = [
        t
        for t in found
        if t.setting == "nodePools.consolidationPolicy" and (t.old, t.new) == ("WhenEmpty", "WhenEmptyOrUnderutilized")
    ]
    (weight, _) = [t for t in found if t.setting == "nodePools.weight"]
    said = lambda t, interrupts: tr.Outcome(t, "in place", "in place", "1 updated", [], interrupts=interrupts)  # noqa: E731
    assert tr.declaration_problems(said(widen, True)) == []
    assert tr.declaration_problems(said(widen, False)) == [
        "Karpenter's disruption model says nodes are disrupted, the review says none is"
    ]
    assert tr.declaration_problems(said(weight, False)) == []
    assert tr.declaration_problems(said(weight, True)) == [
        "Karpenter's disruption model says no node is disrupted, the review says they are"
    ]
