"""The review (`make review`) on real changes of this app: what deploying each over a baseline (here the
product's committed snapshots of the default configuration) would add, replace, delete, fail or do in the
cluster; and the command a user runs against the baseline they accepted (`make accept`)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from tests.cfn import assemblies_in_tmp, snapshot_templates
from tests.conftest import synth
from tooling import review as rv

NO_CHANGE = (
    "# Review\n\nNo change: every stack deploys as its baseline (nothing added, removed, replaced or updated).\n"
)


def _review(synthesized, baseline=None, acknowledged=None):
    """Reports, text, blocking and failing keys of deploying ``synthesized`` over the default snapshots."""
    old = baseline if baseline is not None else snapshot_templates("default", Path(synthesized.app.outdir))
    reports = rv.review(old, rv.synthesized_templates(Path(synthesized.app.outdir)))
    text, blocking, failing = rv.render(reports, acknowledged or {})
    return {r.name: r for r in reports}, text, blocking, failing


def _by_action(report) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for change in report.changes:
        out.setdefault(change.action, set()).add(change.type)
    return out


def test_the_snapshots_read_from_git_are_the_committed_ones(default):
    """This app's templates from the commit, aws-cdk's provider templates from the synth (not snapshotted)."""
    committed = snapshot_templates("default", Path(default.app.outdir), base="HEAD")
    assert sorted(committed) == [
        "eks-karpenter.template",
        "ekskarpenterKarpenterBE946E71.nested.template",
        "ekskarpenterawscdkawseksClusterResourceProvider6428563B.nested.template",
        "ekskarpenterawscdkawseksKubectlProviderA67CD2D9.nested.template",
    ]
    assert rv.stack_names(committed) == {
        "eks-karpenter.template": "eks-karpenter",
        "ekskarpenterKarpenterBE946E71.nested.template": "eks-karpenter > nested Karpenter",
        "ekskarpenterawscdkawseksClusterResourceProvider6428563B.nested.template": (
            "eks-karpenter > nested awscdkawseksClusterResourceProvider"
        ),
        "ekskarpenterawscdkawseksKubectlProviderA67CD2D9.nested.template": (
            "eks-karpenter > nested awscdkawseksKubectlProvider"
        ),
    }
    with pytest.raises(RuntimeError, match="git ls-tree"):
        snapshot_templates("default", Path(default.app.outdir), base="no-such-revision")


def test_a_refactor_that_keeps_every_id_reports_no_change(default):
    """Today's code against the committed snapshots of the same configuration: every construct moved by
    earlier refactors kept its id, so nothing is reported and the review passes."""
    reports, text, blocking, failing = _review(default)
    assert text == NO_CHANGE and (blocking, failing) == ([], [])
    assert all(not r.changes and not r.note for r in reports.values())


def test_renaming_the_cluster_replaces_it_with_a_new_stack_and_is_blocked_until_acknowledged():
    reports, text, blocking, failing = _review(synth(clusterName="renamed"))
    (report,) = reports.values()
    assert report.name == "renamed (replaces eks-karpenter)"
    (change,) = report.changes
    assert (change.action, change.type) == ("replaced", "AWS::CloudFormation::Stack")
    assert change.stateful == (
        "a second cluster with everything it needs, all created anew "
        "(EKS cluster, KMS key, VPC, interruption queue, log group, node role, subnet)"
    )
    assert "leaves `eks-karpenter` running until it is destroyed" in change.why
    assert (blocking, failing) == (["eks-karpenter/*"], [])
    assert (
        "**Blocked**: stateful or slow resources replaced, deleted or changed one way without acknowledgment: eks-karpenter/*."
        in text
    )
    _, text, blocking, _ = _review(synth(clusterName="renamed"), acknowledged={"eks-karpenter/*": "moving"})
    assert blocking == [] and "| acknowledged | `*` |" in text


def test_a_new_vpc_cidr_replaces_the_vpc_and_everything_in_it_and_the_cluster_update_would_fail(default):
    reports, text, blocking, failing = _review(synth(vpcCidr="10.1.0.0/16"))
    main = reports["eks-karpenter"]
    actions = _by_action(main)
    assert actions["replaced"] == {
        "AWS::EC2::VPC",
        "AWS::EC2::Subnet",
        "AWS::EC2::RouteTable",
        "AWS::EC2::SubnetRouteTableAssociation",
        "AWS::EC2::Route",
        "AWS::EC2::NatGateway",
        "AWS::EC2::VPCGatewayAttachment",
        "AWS::EC2::FlowLog",
        "AWS::EC2::SecurityGroup",  # the control plane's: its VpcId changes
        "Custom::AWSCDK-EKS-FargateProfile",  # its subnets change: a new profile
    }
    replaced_ids = {c.logical_id for c in main.changes if c.action == "replaced"}
    subnets = {k for k, r in default.json["Resources"].items() if r["Type"] == "AWS::EC2::Subnet"}
    assert len(subnets) == 4 and subnets <= replaced_ids  # every subnet, public and private
    (cluster,) = [c for c in main.changes if c.type == "Custom::AWSCDK-EKS-Cluster"]
    assert cluster.action == "fails"
    assert "EKS keeps a cluster in the VPC it was created in; a new VPC needs a new cluster" in cluster.why
    assert failing == [f"eks-karpenter/{cluster.logical_id}"]
    # the replay agrees: aws-cdk's real handler sends the new subnets, and EKS keeps a cluster in its VPC
    assert (
        "- ✗ the deploy fails at the update of the EKS cluster: EKS refuses subnets of another VPC: a cluster stays in "
        "the VPC it was created in (EKS User Guide, networking requirements)" in text
    )
    vpc = next(k for k, r in default.json["Resources"].items() if r["Type"] == "AWS::EC2::VPC")
    assert sorted(blocking) == sorted(f"eks-karpenter/{k}" for k in {vpc, *subnets})
    assert "- `NetworkVpc7FB7348F` (replaced): the VPC: every subnet, node and load balancer in it" in text
    assert "(the Karpenter controller, CoreDNS) are deleted with it and start again on Fargate" in text
    assert "**The deploy would fail** at: eks-karpenter/Cluster9EE0221C." in text
    # the kubectl provider's handlers get the new subnets through their nested stack's parameters
    kubectl = reports["eks-karpenter > nested awscdkawseksKubectlProvider"]
    assert {(c.type, c.action, c.why) for c in kubectl.changes} == {
        ("AWS::Lambda::Function", "updated", "in place: VpcConfig")
    }


def test_a_karpenter_upgrade_updates_the_charts_and_the_nested_template_in_place_and_keeps_the_node_role(
    karpenter_1_13, default
):
    """A cluster deployed on 1.13.1 moves to 1.14.1 (the two imported releases)."""
    baseline = rv.synthesized_templates(Path(karpenter_1_13.app.outdir))
    reports, text, blocking, failing = _review(default, baseline=baseline)
    main = reports["eks-karpenter"]
    assert _by_action(main) == {"updated": {"Custom::AWSCDK-EKS-HelmChart", "AWS::CloudFormation::Stack", "template"}}
    assert [c.why for c in main.changes if c.type == "template"] == ["Description change"]  # names the release
    (nested_stack,) = [c for c in main.changes if c.type == "AWS::CloudFormation::Stack"]
    # old -> new, each shortened to its end (where a template's asset hash differs)
    assert re.fullmatch(r"in place: TemplateURL: …[0-9a-f]{42}\.json → …[0-9a-f]{42}\.json", nested_stack.why)
    effects = [e for c in main.changes for e in c.effects]
    assert "Helm release `karpenter` is upgraded 1.13.1 → 1.14.1 (helm upgrade)" in effects
    assert "Helm release `karpenter-crd` is upgraded 1.13.1 → 1.14.1 (helm upgrade)" in effects
    assert any(e.startswith("the Karpenter controller pods restart one at a time") for e in effects)
    nested = reports["eks-karpenter > nested Karpenter"]
    assert [(c.logical_id, c.action, c.why) for c in nested.changes] == [
        ("(template)", "updated", "Description change")
    ]
    assert "KarpenterNodeRole" not in text  # kept: neither replaced nor updated
    assert (blocking, failing) == ([], [])


def test_a_new_ami_alias_replaces_nothing_in_cloudformation_and_nodes_drift():
    reports, text, blocking, failing = _review(synth(nodeClasses=[{"name": "default", "amiAlias": "al2023@v20260801"}]))
    main = reports["eks-karpenter"]
    (change,) = main.changes
    assert (change.type, change.action, change.why) == (
        "Custom::AWSCDK-EKS-KubernetesResource",
        "updated",
        "in place (kubectl apply): Manifest",
    )
    assert change.effects == [
        "EC2NodeClass `default` (amiSelectorTerms: alias al2023@latest → al2023@v20260801): nodes of pool `default` "
        "not running the AMI al2023@v20260801 resolves to (all, unless it is theirs) will be replaced by drift, "
        "starting right after the deploy, at most 10% of its nodes (rounded up) at a time (its disruption budgets for Drifted)"
    ]
    assert (blocking, failing) == ([], [])
    assert change.interrupts and "| ~ updated, **interrupts** |" in text


POOLS = [{"name": "default"}, {"name": "batch", "capacityTypes": ["spot"], "weight": 10}]


def test_adding_a_pool_only_adds_and_removing_it_deletes_its_nodes():
    added = synth(nodePools=POOLS)
    reports, _, blocking, failing = _review(added)
    (change,) = reports["eks-karpenter"].changes
    assert (change.action, change.type, change.effects) == (
        "added",
        "Custom::AWSCDK-EKS-KubernetesResource",
        ["NodePool `batch` is created"],
    )
    assert not change.interrupts
    assert (blocking, failing) == ([], [])
    # the reverse: deploying the snapshot over a stack that has the pool
    old = rv.synthesized_templates(Path(added.app.outdir))
    reports = rv.review(old, snapshot_templates("default", Path(added.app.outdir)))
    (change,) = {r.name: r for r in reports}["eks-karpenter"].changes
    assert change.action == "removed" and change.effects == [
        "NodePool `batch` is deleted: Karpenter drains and terminates all its nodes at once (a deleted pool's nodes "
        "are deleted with it; its disruption budgets do not apply), each drain bounded by its terminationGracePeriod 24h"
    ]


def test_pool_changes_say_which_nodes_drift(default):
    base = snapshot_templates("default", Path(default.app.outdir))["eks-karpenter.template"]
    (manifest_id,) = [
        k
        for k, r in base["Resources"].items()
        if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource" and "NodePooldefault" in k
    ]
    import json

    old_manifest = base["Resources"][manifest_id]["Properties"]["Manifest"]
    (pool,) = json.loads(old_manifest)

    def effects(edit) -> list[str]:
        changed = json.loads(json.dumps(pool))
        edit(changed["spec"])
        return rv.kubernetes_effects(old_manifest, json.dumps([changed]), base)

    assert effects(lambda s: s.update(weight=7)) == [
        "NodePool `default` (weight 0 → 7): new nodes come from pools in weight order; no running node is removed "
        "for it"
    ]
    assert effects(lambda s: s["template"]["spec"].update(taints=[{"key": "a", "effect": "NoSchedule"}])) == [
        "NodePool `default` (template.spec.taints): all nodes of pool `default` will be replaced by drift, "
        "starting right after the deploy, at most 10% of its nodes (rounded up) at a time (its disruption budgets for Drifted)"
    ]
    # NodePool startupTaints (hashed with the template): a deploy that adds them drifts every node of the pool, and
    # CloudFormation's rollback of it (the old manifest applied again) drifts them all once more
    startup = [{"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}]
    drifted = [
        "NodePool `default` (template.spec.startupTaints): all nodes of pool `default` will be replaced by drift, "
        "starting right after the deploy, at most 10% of its nodes (rounded up) at a time (its disruption budgets for Drifted)"
    ]
    assert effects(lambda s: s["template"]["spec"].update(startupTaints=startup)) == drifted
    with_startup = json.loads(json.dumps(pool))
    with_startup["spec"]["template"]["spec"]["startupTaints"] = startup
    assert rv.kubernetes_effects(json.dumps([with_startup]), old_manifest, base) == drifted
    # requirements: the nodes whose labels the new ones refuse drift (found by a newcomer trial: "nodes that no longer
    # meet its requirements" did not say that spot -> on-demand drifts every spot node), none when they only widen
    widened = [
        "NodePool `default` (template.spec.requirements): the requirements only widen, so no running node drifts "
        "(Karpenter drifts a node whose labels its pool's requirements no longer allow)"
    ]
    assert effects(lambda s: s["template"]["spec"]["requirements"].pop()) == widened

    def requirement(key: str, **fields: object):
        def edit(spec):
            (found,) = [r for r in spec["template"]["spec"]["requirements"] if r["key"] == key]
            found.update(fields)

        return edit

    capacity, arch = "karpenter.sh/capacity-type", "kubernetes.io/arch"
    assert effects(requirement(capacity, values=["on-demand"])) == [
        f"NodePool `default` (template.spec.requirements): nodes of pool `default` labelled {capacity}=spot will be "
        "replaced by drift, starting right after the deploy, at most 10% of its nodes (rounded up) at a time (its "
        "disruption budgets for Drifted)"
    ]
    assert effects(requirement(arch, operator="NotIn", values=["arm64", "amd64"])) == [
        "NodePool `default` (template.spec.requirements): nodes of pool `default` that no longer meet its requirements "
        "will be replaced by drift, starting right after the deploy, at most 10% of its nodes (rounded up) at a time "
        "(its disruption budgets for Drifted)"
    ]  # (another operator: told by the nodes' labels)
    assert effects(requirement(arch, values=["amd64", "arm64", "s390x"])) == widened
    assert not rv.Change("Pool", rv.MANIFEST, "updated", effects=widened).interrupts

    def new_key(spec):
        spec["template"]["spec"]["requirements"].append(
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
        )

    assert effects(new_key)[0].startswith(
        "NodePool `default` (template.spec.requirements): nodes of pool `default` that no longer meet its requirements "
    )


def test_a_kubernetes_downgrade_would_fail_at_the_cluster_and_names_the_add_ons_that_roll():
    _, text, _, failing = _review(synth(kubernetesVersion="1.35"))
    assert failing == ["eks-karpenter/Cluster9EE0221C"]
    assert "version 1.36 → 1.35: a downgrade is EKS's version rollback" in text
    assert "- add-on `kube-proxy` is updated (AddonVersion): its pods roll" in text


def test_rolling_updates_of_node_groups_and_add_ons_are_named():
    assert rv._rolling_effects("AWS::EKS::Nodegroup", {"ReleaseVersion": "a"}, {"ReleaseVersion": "b"}, "updated") == [
        "the node group's nodes are replaced one at a time (ReleaseVersion): EKS drains each, its pods are evicted "
        "and rescheduled"
    ]
    assert rv._rolling_effects("AWS::EKS::Nodegroup", {"ScalingConfig": 1}, {"ScalingConfig": 2}, "updated") == []


def test_cluster_handler_rules_mirror_aws_cdks():
    """aws-cdk-lib 2.275's cluster handler: a new name replaces, encryption fails, two kinds of update fail."""
    config = {"Config": {"name": "a", "version": "1.35", "logging": {}, "resourcesVpcConfig": {"subnetIds": ["s"]}}}
    renamed = {"Config": {**config["Config"], "name": "b"}}
    assert rv._cluster_change(config, renamed, set(), False)[0] == "replaced"
    encrypted = {"Config": {**config["Config"], "encryptionConfig": [{"resources": ["secrets"]}]}}
    assert rv._cluster_change(config, encrypted, set(), False)[0] == "fails"
    both = {"Config": {**config["Config"], "version": "1.36", "logging": {"clusterLogging": []}}}
    assert rv._cluster_change(config, both, set(), False) == (
        "fails",
        "updateLogging, updateVersion (a Kubernetes upgrade, ~10 min; add-ons follow) in one deploy: aws-cdk's "
        "handler allows one kind of update per deploy",
    )
    skip = {"Config": {**config["Config"], "version": "1.37"}}
    assert rv._cluster_change(config, skip, set(), False)[1].startswith("version 1.35 → 1.37: EKS upgrades one minor")


def test_types_without_a_schema_are_named_as_undecided():
    assert rv.create_only_paths("AWS::EC2::VPC") is not None
    assert rv.create_only_paths("AWS::No::SuchType") is None
    action, why = rv._aws_change("AWS::No::SuchType", {"A": 1}, {"A": 2}, set())
    assert (action, why) == ("updated", "no resource schema for this type: in place assumed (not decided)")


def test_acknowledgments_file(tmp_path):
    path = tmp_path / "acknowledged-replacements.yaml"
    assert rv.acknowledgments(path) == {}
    path.write_text("- resource: eks-karpenter/NetworkVpc7FB7348F\n  reason: a bigger VPC, cluster moved first\n")
    assert rv.acknowledgments(path) == {"eks-karpenter/NetworkVpc7FB7348F": "a bigger VPC, cluster moved first"}
    path.write_text("- resource: eks-karpenter/NetworkVpc7FB7348F\n")
    with pytest.raises(rv.ReviewError, match="each entry needs `resource: <stack>/<logical id>` and a `reason`"):
        rv.acknowledgments(path)
    # an acknowledgment that matches nothing is listed, not silently kept
    _, text, _, _ = _review(synth(), acknowledged={"eks-karpenter/Gone": "old"})
    assert "Acknowledgments that match nothing in this change (remove them): eks-karpenter/Gone" in text


def test_the_command_against_the_baseline_the_user_accepted(tmp_path, capsys, monkeypatch, default):
    """`make review` / `make accept` end to end in a project of the user's: before a baseline is accepted the
    review lists what a first deploy creates and passes; against the accepted (and committed) baseline a
    rename is blocked until acknowledged; its cloud assembly is removed, not left in /tmp."""
    import subprocess

    from karpenter_stack import context_sources
    from tooling import workspace

    project = tmp_path / "project"
    project.mkdir()
    for name in ("cdk.json", "cdk.context.json"):
        (project / name).write_text((workspace.PRODUCT / name).read_text())
    monkeypatch.setattr(context_sources, "project_dir", lambda: project)
    before = assemblies_in_tmp()

    assert rv.main([]) == 0
    first = capsys.readouterr().out
    assert first.startswith(
        "# Review\n\nNo accepted baseline yet (baseline/): this compares nothing, and deploying creates everything "
        "below.\nAfter reviewing it, accept it with `make accept` and commit the baseline with your configuration.\n"
    )
    assert first.endswith(
        "| stack | resources created |\n|---|---|\n| eks-karpenter | 72 |\n| eks-karpenter > nested Karpenter | 14 |\n"
        "| eks-karpenter > nested awscdkawseksClusterResourceProvider | 22 |\n"
        "| eks-karpenter > nested awscdkawseksKubectlProvider | 7 |\n\n"
    )

    written = rv.accept(Path(default.app.outdir), project / rv.BASELINE)
    assert written == sorted(p.name for p in Path(default.app.outdir).glob("*.template.json")) and len(written) == 4
    git = ["git", "-c", "user.name=u", "-c", "user.email=u@example.com"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "accepted"]):
        subprocess.run([*git, *args], cwd=project, check=True, capture_output=True)
    (project / "baseline" / written[0]).unlink()  # the working tree's baseline is not the one --base reads

    out = tmp_path / "review.md"
    assert rv.main(["--base", "HEAD", "-c", "clusterName=renamed", "--output", str(out)]) == 1
    assert out.read_text() == capsys.readouterr().out.removesuffix("\n")
    assert "## renamed (replaces eks-karpenter)" in out.read_text()
    assert (
        "**Blocked**: stateful or slow resources replaced, deleted or changed one way without acknowledgment"
        in out.read_text()
    )
    assert assemblies_in_tmp() == before

    assert rv.main(["-c", "clusterName=bad name"]) == 2
    assert capsys.readouterr().err.startswith('Configuration error:\nclusterName = "bad name": must start with')
    assert rv.main(["--context-file", "examples/no-such.json"]) == 2
    assert capsys.readouterr().err == 'CONTEXT_FILE="examples/no-such.json": no such file\n'


NODEGROUP_TEMPLATE = "eks-karpenter.template"
BEFORE_LAUNCH_TEMPLATE = Path(__file__).parent / "fixtures" / "nodegroup-hosting-before-launch-template.template.json"


def test_a_launch_template_added_to_a_deployed_node_group_in_place_fails_the_deploy():
    """EKS adds no launch template to a node group created without one (UpdateNodegroupVersion): the same logical
    id with a launch template is refused by EKS, which is why the app's node group with one is a new resource."""
    new = rv.synthesized_templates(Path(synth(controllerHosting="nodegroup").app.outdir))
    old = {**new, NODEGROUP_TEMPLATE: json.loads(BEFORE_LAUNCH_TEMPLATE.read_text())}
    in_place = copy.deepcopy(new)
    resources = in_place[NODEGROUP_TEMPLATE]["Resources"]
    resources["ClusterNodegroupSystemNodes9C3907F1"] = resources.pop("ClusterNodegroupSystemNodesV27445704A")
    text, _, failing = rv.render(rv.review(old, in_place), {})
    assert failing == ["eks-karpenter/ClusterNodegroupSystemNodes9C3907F1"]
    assert (
        "| ✗ FAILS | `ClusterNodegroupSystemNodes9C3907F1` | AWS::EKS::Nodegroup | ✗ **fails** | the deploy fails: "
        "LaunchTemplate is added: EKS adds no launch template to a node group created without one; a node group "
        "with a launch template must be a new node group (a new logical id) |" in text
    )
    # another launch template for a deployed group: refused as well; a new version of the same one is not
    other = copy.deepcopy(new)
    group = other[NODEGROUP_TEMPLATE]["Resources"]["ClusterNodegroupSystemNodesV27445704A"]["Properties"]
    group["LaunchTemplate"]["Id"] = "lt-0123456789abcdef0"
    _, _, failing = rv.render(rv.review(new, other), {})
    assert failing == ["eks-karpenter/ClusterNodegroupSystemNodesV27445704A"]


def test_a_launch_template_change_rolls_the_system_nodes():
    """The node group reads the template's LatestVersionNumber: an update of the template gives it a new version,
    and EKS replaces its nodes one at a time."""
    new = rv.synthesized_templates(Path(synth(controllerHosting="nodegroup").app.outdir))
    changed = copy.deepcopy(new)
    template = changed[NODEGROUP_TEMPLATE]["Resources"]["ControllerHostingLaunchTemplateB4A0B290"]["Properties"]
    template["LaunchTemplateData"]["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"] = 40
    reports = {r.name: r for r in rv.review(new, changed)}
    changes = {c.logical_id: c for c in reports["eks-karpenter"].changes}
    assert sorted(changes) == ["ClusterNodegroupSystemNodesV27445704A", "ControllerHostingLaunchTemplateB4A0B290"]
    group = changes["ClusterNodegroupSystemNodesV27445704A"]
    assert (group.action, group.why) == (
        "updated",
        "in place: LaunchTemplate.Version (a new version of ControllerHostingLaunchTemplateB4A0B290, which is updated)",
    )
    assert group.effects == [
        "the node group's nodes are replaced one at a time (LaunchTemplate.Version): EKS drains each, its pods are "
        "evicted and rescheduled"
    ]


def test_an_object_a_crd_rule_refuses_fails_the_deploy_whether_created_or_changed():
    """Every rule of the release the cluster runs after the deploy (its CRD chart upgraded first) is checked on each
    Karpenter object created or changed: a rule the typed settings do not mirror yet (a newer release's) fails the
    review's verdict on the apply, not only the gate."""
    import json

    from tests.cfn import node_pool
    from tooling.review.diff import compare_template

    chart = {"Type": "Custom::AWSCDK-EKS-HelmChart", "Properties": {"Release": "karpenter", "Version": "1.14.1"}}
    good = node_pool("batch", ("kubernetes.io/arch", "amd64"))
    bad = json.loads(json.dumps(good))
    bad["spec"]["template"]["spec"]["requirements"][0]["key"] = "karpenter.sh/nodepool"

    def template(*objects):
        manifest = {"Type": "Custom::AWSCDK-EKS-KubernetesResource", "Properties": {"Manifest": json.dumps(objects)}}
        return {"Resources": {"Chart": chart, **({"Pool": manifest} if objects else {})}}

    (created,) = compare_template(template(), template(bad))
    assert (created.action, created.why.split(": NodePool/batch: ")[0]) == ("fails", "the API server refuses it")
    assert "(Karpenter 1.14.1 CRD rule)" in created.why
    (changed,) = compare_template(template(good), template(bad))
    assert changed.action == "fails" and "NodePool/batch: spec.template.spec.requirements" in changed.why
    (fine,) = compare_template(template(), template(good))
    assert fine.action == "added"


# --- what Karpenter does after a deploy (tooling/review/disruption.py) -------------------------------------------


@pytest.fixture(scope="module")
def pool_case(default):
    """The default configuration's NodePool manifest (its logical id, the pool) and its template."""
    base = snapshot_templates("default", Path(default.app.outdir))["eks-karpenter.template"]
    (manifest_id,) = [
        k
        for k, r in base["Resources"].items()
        if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource" and "NodePooldefault" in k
    ]
    (pool,) = json.loads(base["Resources"][manifest_id]["Properties"]["Manifest"])
    return base, manifest_id, pool


def _pool_effects(pool_case, edit_old, edit_new) -> tuple[list[str], bool]:
    base, _, pool = pool_case
    old, new = copy.deepcopy(pool), copy.deepcopy(pool)
    edit_old(old["spec"])
    edit_new(new["spec"])
    change = rv.Change(
        "Pool", rv.MANIFEST, "updated", effects=rv.kubernetes_effects(json.dumps([old]), json.dumps([new]), base)
    )
    return change.effects, change.interrupts


def _nothing(spec):
    return None


def _disruption(**fields):
    return lambda spec: spec["disruption"].update(fields)


def test_widening_consolidation_says_karpenter_starts_draining_underutilized_nodes(pool_case):
    effects, interrupts = _pool_effects(
        pool_case,
        _disruption(consolidationPolicy="WhenEmpty"),
        _disruption(consolidationPolicy="WhenEmptyOrUnderutilized"),
    )
    assert effects == [
        "NodePool `default` (consolidationPolicy WhenEmpty → WhenEmptyOrUnderutilized): Karpenter starts consolidating "
        "its empty and underutilized nodes right after the deploy: each, 1m after its last pod change, drains and is "
        "removed or replaced by a cheaper node, at most 10% of its nodes (rounded up) at a time"
    ]
    assert interrupts
    # narrowing it removes nothing
    effects, interrupts = _pool_effects(pool_case, _nothing, _disruption(consolidationPolicy="WhenEmpty"))
    assert effects == [
        "NodePool `default` (consolidationPolicy WhenEmptyOrUnderutilized → WhenEmpty): Karpenter consolidates fewer "
        "of its nodes; none is removed for it"
    ]
    assert not interrupts
    # consolidateAfter Never -> a duration turns consolidation on
    effects, interrupts = _pool_effects(pool_case, _disruption(consolidateAfter="Never"), _nothing)
    assert interrupts and effects[0].startswith("NodePool `default` (consolidateAfter Never → 1m): Karpenter starts")


def test_lifting_a_zero_budget_for_drifted_says_the_held_nodes_are_replaced_now(pool_case):
    held = [{"nodes": "0", "reasons": ["Drifted"]}, {"nodes": "10%"}]
    effects, interrupts = _pool_effects(pool_case, _disruption(budgets=held), _nothing)
    assert effects == [
        "NodePool `default` (budgets): Drifted disruptions were blocked: its nodes that drifted meanwhile (an AMI "
        "release, a changed class) will be replaced by drift right after the deploy, at most 10% of its nodes "
        "(rounded up) at a time"
    ]
    assert interrupts
    # the other way: blocking drift disrupts nothing, and a drift under it waits
    effects, interrupts = _pool_effects(pool_case, _nothing, _disruption(budgets=held))
    assert effects == ["NodePool `default` (budgets): no Drifted disruption from now on"] and not interrupts

    def tainted(spec):
        spec["disruption"].update(budgets=held)
        spec["template"]["spec"].update(taints=[{"key": "a", "effect": "NoSchedule"}])

    effects, interrupts = _pool_effects(pool_case, _disruption(budgets=held), tainted)
    assert effects == [
        "NodePool `default` (template.spec.taints): all nodes of pool `default` drift, but its budgets allow no "
        "Drifted disruption: Karpenter keeps them until a budget does"
    ]
    assert not interrupts


def test_a_scheduled_budget_is_named_with_its_window(pool_case):
    windows = [{"nodes": "20%"}, {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}]
    effects, _ = _pool_effects(pool_case, _nothing, _disruption(budgets=windows))
    assert effects == [
        f"NodePool `default` (budgets, {reason}): at most 10% of its nodes (rounded up) at a time → 20% of its nodes "
        "(rounded up) at a time; none during '0 9 * * mon-fri' (UTC) for 8h"
        for reason in ("Drifted", "Underutilized", "Empty")
    ]


def test_lowering_expire_after_drifts_every_node_and_says_expiry_is_not_budgeted(pool_case):
    effects, interrupts = _pool_effects(
        pool_case, _nothing, lambda spec: spec["template"]["spec"].update(expireAfter="24h")
    )
    assert effects == [
        "NodePool `default` (template.spec.expireAfter): all nodes of pool `default` will be replaced by drift, starting "
        "right after the deploy, at most 10% of its nodes (rounded up) at a time (its disruption budgets for Drifted)",
        "NodePool `default` (expireAfter 720h → 24h): each node launched from now on drains when it is 24h old, "
        "whatever the budgets (expiry is forceful; nodes launched together expire together); running nodes keep their "
        "own expireAfter until they are replaced",
    ]
    assert interrupts


def test_lowering_limits_removes_nothing(pool_case):
    effects, interrupts = _pool_effects(pool_case, _nothing, lambda spec: spec.update(limits={"cpu": "10"}))
    assert effects == [
        "NodePool `default` (limits cpu 1000 → 10): Karpenter launches nothing beyond the new limits; no running node "
        "is removed for them",
        # a limit left out is no limit (found by a newcomer trial: this read as a tightening)
        "NodePool `default` (limits memory 1000Gi → none): the pool may grow beyond the old limits (memory: no limit "
        "at all now); no running node is affected",
    ]
    assert not interrupts
    effects, _ = _pool_effects(pool_case, _nothing, lambda spec: spec.update(limits={"cpu": "2k", "memory": "1Ti"}))
    assert effects == [
        "NodePool `default` (limits cpu 1000 → 2k, memory 1000Gi → 1Ti): the pool may grow beyond the old limits; no "
        "running node is affected"
    ]


def test_renaming_a_pool_deletes_the_old_one_and_drains_all_its_nodes_at_once(pool_case):
    """batch-jobs -> batchjobs: the same construct name (CDK drops the '-'), a new logical id. The review called it a
    replacement of the same object; it is a pool deleted and one created, and Karpenter drains the old one's nodes
    at once."""
    base, manifest_id, pool = pool_case
    old, new = copy.deepcopy(base), copy.deepcopy(base)
    resource = old["Resources"][manifest_id]
    named = lambda name: json.dumps([{**pool, "metadata": {**pool["metadata"], "name": name}}])  # noqa: E731
    old["Resources"][manifest_id] = {
        **resource,
        "Properties": {**resource["Properties"], "Manifest": named("batch-jobs")},
    }
    del new["Resources"][manifest_id]
    new["Resources"][manifest_id[:-8] + "0A1B2C3D"] = {
        **resource,
        "Properties": {**resource["Properties"], "Manifest": named("batchjobs")},
    }
    (change,) = [c for c in rv.compare_template(old, new) if c.logical_id == manifest_id]
    assert change.action == "replaced"
    assert change.effects == [
        "NodePool `batch-jobs` is deleted: Karpenter drains and terminates all its nodes at once (a deleted pool's "
        "nodes are deleted with it; its disruption budgets do not apply), each drain bounded by its "
        "terminationGracePeriod 24h",
        "NodePool `batchjobs` is created",
    ]
    assert change.interrupts


def test_the_models_defaults_are_the_crds():
    from tooling.cel_rules import mirror
    from tooling.review.disruption import DEFAULTS

    defaults = {d["path"]: d["default"] for d in mirror("1.14.1")["kinds"]["NodePool karpenter.sh/v1"]["defaults"]}
    assert DEFAULTS == {
        "consolidationPolicy": defaults["spec.disruption.consolidationPolicy"],
        "consolidateAfter": defaults["spec.disruption"]["consolidateAfter"],
        "budgets": defaults["spec.disruption.budgets"],
        "expireAfter": defaults["spec.template.spec.expireAfter"],
    }


# --- adopting a running install: what the first deploy does to the objects the cluster runs (tooling/review/adopt.py)


def _as_kubectl_lists(obj: dict, **spec_changes) -> dict:
    """An object as `kubectl get -o yaml` shows it: server metadata, Karpenter's hash annotations, status, the CRD's
    defaults filled in."""
    from tooling.cel_rules import KINDS, mirror, with_defaults

    stored = with_defaults(obj, mirror("1.14.1")["kinds"][KINDS[obj["kind"]]]["defaults"])
    stored["metadata"] = {
        **{k: v for k, v in stored["metadata"].items() if k != "labels"},
        "uid": "6b1f0c3e-0000-4000-8000-000000000000",
        "resourceVersion": "123456",
        "generation": 3,
        "creationTimestamp": "2026-10-01T08:00:00Z",
        "annotations": {"karpenter.sh/nodepool-hash": "1234567890", "karpenter.sh/nodepool-hash-version": "v3"},
        "finalizers": ["karpenter.sh/termination"],
    }
    stored["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    for path, value in spec_changes.items():
        *parents, last = path.split(".")
        target = stored["spec"]
        for key in parents:
            target = target.setdefault(key, {})
        if value is None:
            target.pop(last, None)
        else:
            target[last] = value
    return stored


@pytest.fixture(scope="module")
def running_install(default):
    """The default configuration's objects as a running install of the same cluster would hold them."""
    from tooling.review.adopt import _applied

    templates = snapshot_templates("default", Path(default.app.outdir))
    applied, _, cluster = _applied(templates)
    node_class = copy.deepcopy(applied["EC2NodeClass/default"])
    node_class["spec"]["role"] = f"KarpenterNodeRole-{cluster}"
    return templates, {"pool": applied["NodePool/default"], "class": node_class}


def _adopted(templates, tmp_path, *objects) -> list[str]:
    from tooling.review.adopt import adoption, read_running, running_json

    (tmp_path / "running.yaml").write_text(running_json({str(i): o for i, o in enumerate(objects)}))
    return adoption(read_running("running.yaml", tmp_path), templates)[4:]


def test_adopting_the_objects_the_app_writes_changes_nothing(running_install, tmp_path):
    templates, objects = running_install
    running = [_as_kubectl_lists(objects["class"]), _as_kubectl_lists(objects["pool"])]
    assert _adopted(templates, tmp_path, *running) == [
        "- EC2NodeClass `default`: adopted as it runs: nothing changes, no node drifts",
        "- NodePool `default`: adopted as it runs: nothing changes, no node drifts",
    ]


def test_adopting_a_fleet_says_which_fields_drift_every_node(running_install, tmp_path):
    """What the issue found: a running pool without terminationGracePeriod adopted by the typed settings (24h) drifts
    every node; a class of another node role too; a pool the app does not define stays; a new one is created."""
    templates, objects = running_install
    other = copy.deepcopy(objects["pool"])
    other["metadata"]["name"] = "legacy"
    running = [
        _as_kubectl_lists(objects["class"], role="eksctl-prod-NodeInstanceRole"),
        {
            **_as_kubectl_lists(objects["pool"], **{"template.spec.terminationGracePeriod": None, "limits": None}),
            "status": {"resources": {"nodes": "7", "cpu": "28"}},
        },
        _as_kubectl_lists(other),
    ]
    assert _adopted(templates, tmp_path, *running) == [
        "- EC2NodeClass `default`: role eksctl-prod-NodeInstanceRole → KarpenterNodeRole-eks-karpenter: the role is part "
        "of the class's drift hash, so all nodes of pools `default` (7 running) drift and are replaced within their "
        "budgets (to keep the running role, list its ARN in existingNodeRoles and name it in the class)",
        "- NodePool `default`: template.spec.terminationGracePeriod change: all its nodes will be replaced by drift, "
        "starting right after the deploy, at most 10% of its nodes (rounded up) at a time (its disruption budgets for "
        "Drifted); NodePool `default` (limits cpu none → 1000, memory none → 1000Gi): Karpenter launches nothing "
        "beyond the new limits; no running node is removed for them",
        "- NodePool `legacy`: not in the app; it stays as it is, and the stack does not manage it",
    ]


def test_a_volume_size_is_compared_as_karpenter_hashes_it(running_install, tmp_path):
    templates, objects = running_install
    node_class = copy.deepcopy(objects["class"])
    (mapping,) = node_class["spec"]["blockDeviceMappings"]
    bytes_ = str(int(mapping["ebs"]["volumeSize"].removesuffix("Gi")) * 1024**3)
    same = _as_kubectl_lists(
        node_class, blockDeviceMappings=[{**mapping, "ebs": {**mapping["ebs"], "volumeSize": bytes_}}]
    )
    bigger = _as_kubectl_lists(
        node_class, blockDeviceMappings=[{**mapping, "ebs": {**mapping["ebs"], "volumeSize": "100Gi"}}]
    )
    assert (
        _adopted(templates, tmp_path, same)[0]
        == "- EC2NodeClass `default`: adopted as it runs: nothing changes, no node drifts"
    )
    assert _adopted(templates, tmp_path, bigger)[0] == (
        "- EC2NodeClass `default`: blockDeviceMappings change: all nodes of pools `default` drift and are replaced "
        "within their budgets"
    )


def test_the_running_objects_are_read_live_with_kubectl(tmp_path, monkeypatch):
    """ADOPT=live runs kubectl get with the user's kubeconfig (stood in for here); bad input is one line."""
    from tooling.review.adopt import KUBECTL_GET, read_running
    from tooling.review.model import ReviewError

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    listed = {
        "kind": "List",
        "items": [{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "a"}, "spec": {}}],
    }
    kubectl = bin_dir / "kubectl"
    kubectl.write_text(
        "#!/bin/sh\n"
        f'[ "$*" = "{" ".join(KUBECTL_GET)}" ] || {{ echo "unexpected: $*" >&2; exit 9; }}\n'
        f"cat <<'EOF'\n{json.dumps(listed)}\nEOF\n"
    )
    kubectl.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert list(read_running("live", tmp_path)) == ["NodePool/a"]
    kubectl.write_text("#!/bin/sh\necho 'error: You must be logged in to the server (Unauthorized)' >&2\nexit 1\n")
    with pytest.raises(ReviewError) as info:
        read_running("live", tmp_path)
    assert str(info.value) == (
        f"ADOPT=live: kubectl {' '.join(KUBECTL_GET)} failed: error: You must be logged in to the server (Unauthorized)"
    )
    with pytest.raises(ReviewError) as missing:
        read_running("running.yaml", tmp_path)
    assert str(missing.value) == "ADOPT=running.yaml: cannot read it (No such file or directory)"


def test_the_review_command_reads_the_running_objects_before_it_synthesizes(tmp_path, monkeypatch, capsys):
    from tooling.review import cli

    monkeypatch.setenv("ADOPT", "nowhere.yaml")
    monkeypatch.setattr(cli, "synthesize", lambda *a: pytest.fail("synthesized before reading ADOPT"))
    assert cli.main([]) == 2
    assert capsys.readouterr().err == "review: ADOPT=nowhere.yaml: cannot read it (No such file or directory)\n"


def test_selector_terms_by_id_that_select_what_the_class_resolved_drift_nothing(running_install, tmp_path):
    """Found by a newcomer trial: an existing cluster's class selects subnets and security groups by id; the running
    class selected them by tag, and Karpenter's status lists the ids it resolved: the same ones, so nothing drifts."""
    templates, objects = running_install
    ours = copy.deepcopy(objects["class"])
    by_id = {
        "subnetSelectorTerms": [{"id": "subnet-0123456789abcdef0"}],
        "securityGroupSelectorTerms": [{"id": "sg-0123456789abcdef0"}],
    }
    ours["spec"].update(by_id)
    manifest = next(
        k
        for k, r in templates["eks-karpenter.template"]["Resources"].items()
        if r["Type"] == rv.MANIFEST and "EC2NodeClass" in json.dumps(r["Properties"]["Manifest"])
    )
    edited = copy.deepcopy(templates)
    edited["eks-karpenter.template"]["Resources"][manifest]["Properties"]["Manifest"] = json.dumps([ours])
    running = {
        **_as_kubectl_lists(objects["class"]),
        "status": {"subnets": [{"id": "subnet-0123456789abcdef0"}], "securityGroups": [{"id": "sg-0123456789abcdef0"}]},
    }
    assert _adopted(edited, tmp_path, running)[0] == (
        "- EC2NodeClass `default`: securityGroupSelectorTerms, subnetSelectorTerms by id select what the running class "
        "resolved (its status): no node drifts for them"
    )
    running["status"]["subnets"] = [{"id": "subnet-0fedcba9876543210"}]
    assert _adopted(edited, tmp_path, running)[0].endswith(
        "subnetSelectorTerms change: nodes of pools `default` whose subnets no longer match are replaced by drift, within "
        "their budgets"
    )
