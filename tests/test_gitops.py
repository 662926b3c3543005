"""Node objects from the stack or from a GitOps tool (``nodeObjects``): what each mode deploys, what the app renders
for the tool (``make manifests``, ``gitops/<stack>/``), and moving a running cluster between the modes without
deleting a pool (the synth's refusal against the baseline, the review's verdicts)."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest

from karpenter_stack import baseline, context_sources, gitops
from karpenter_stack.config import ConfigError, load_config
from tests.cfn import kubernetes_objects, snapshot_templates
from tests.conftest import synth
from tooling import manifests
from tooling import review as rv
from tooling.review import gitops as review_gitops

NODE_IDS = {"ClustermanifestEC2NodeClassdefault1FA7291F", "ClustermanifestNodePooldefault04636ED7"}
STACK = "eks-karpenter"


@pytest.fixture(scope="module")
def gitops_mode():
    return synth(nodeObjects="gitops")


@pytest.fixture(scope="module")
def handover():
    return synth(nodeObjects="handover")


def test_gitops_mode_deploys_everything_but_the_node_objects(default, gitops_mode):
    assert set(default.json["Resources"]) - set(gitops_mode.json["Resources"]) == NODE_IDS
    assert set(gitops_mode.json["Resources"]) <= set(default.json["Resources"])
    differ = {
        "KarpenterNestedStackKarpenterNestedStackResourceE556CF50": ["TemplateURL"],  # one output less
        "TeardownSafetyNetDrainBound55A1049A": ["DependsOn"],  # (it waits between the pools and the classes)
    }
    for logical_id, resource in gitops_mode.json["Resources"].items():
        was = default.json["Resources"][logical_id]
        changed = sorted(k for k in resource.keys() | was.keys() if resource.get(k) != was.get(k))
        changed += sorted(
            k for k in resource.get("Properties", {}) if resource["Properties"][k] != was["Properties"][k]
        )
        assert [k for k in changed if k != "Properties"] == differ.get(logical_id, []), logical_id
    assert "DependsOn" not in gitops_mode.json["Resources"]["TeardownSafetyNetDrainBound55A1049A"]
    assert default.stack.karpenter.gitops_objects == []


def test_the_objects_for_git_are_the_stacks_with_the_node_role_named(default, gitops_mode):
    """What the stack would apply, the node role's name (a reference to the nested stack) written as the template
    names the role."""
    applied = {
        k: {f: v for f, v in o.items() if f != "_logicalId"} for k, o in kubernetes_objects(default.template).items()
    }
    rendered = {f"{o['kind']}/{o['metadata']['name']}": o for o in gitops_mode.stack.karpenter.gitops_objects}
    assert list(rendered) == ["EC2NodeClass/default", "NodePool/default"]  # classes, then pools: apply order
    assert rendered["EC2NodeClass/default"]["spec"]["role"] == "KarpenterNodeRole-eks-karpenter"
    assert applied["EC2NodeClass/default"]["spec"]["role"] != "KarpenterNodeRole-eks-karpenter"  # (a reference)
    assert {**rendered["EC2NodeClass/default"]["spec"], "role": None} == {
        **applied["EC2NodeClass/default"]["spec"],
        "role": None,
    }
    assert rendered["NodePool/default"] == applied["NodePool/default"]


def test_the_node_role_name_is_the_templates():
    """The literal name is the one the template gives the role (upstream's name): names.node_role_name."""
    from constructs_lib.karpenter.names import node_role_name
    from karpenter_stack import versions
    from tooling.releases.template_parity import load_template

    for version in versions.available_karpenter_versions():
        role = load_template(versions.karpenter_template(version))["Resources"]["KarpenterNodeRole"]
        assert role["Properties"]["RoleName"] == {"Fn::Sub": "KarpenterNodeRole-${ClusterName}"}
    assert node_role_name("payments") == "KarpenterNodeRole-payments"


def test_handover_retains_every_node_object_and_changes_nothing_else(default, handover, gitops_mode):
    """Each node object's resource is retained, with a property its handler ignores, so that the deploy updates it
    and CloudFormation stores the policy (a policy change alone has been no change: cloudformation-coverage-roadmap
    #1543); the objects for the GitOps tool to take over are rendered as gitops mode renders them."""
    assert set(handover.json["Resources"]) == set(default.json["Resources"])
    for logical_id, resource in handover.json["Resources"].items():
        if logical_id in NODE_IDS:
            assert resource["DeletionPolicy"] == resource["UpdateReplacePolicy"] == "Retain"
            assert default.json["Resources"][logical_id]["DeletionPolicy"] == "Delete"
            assert resource["Properties"].pop("RetainedForHandover") is True
            resource = {**resource, "DeletionPolicy": "Delete", "UpdateReplacePolicy": "Delete"}
        assert resource == default.json["Resources"][logical_id], logical_id
    assert handover.stack.karpenter.gitops_objects == gitops_mode.stack.karpenter.gitops_objects
    assert gitops.recorded(Path(handover.app.outdir)) == {
        STACK: {
            "folder": "gitops/eks-karpenter",
            "mode": "handover",
            "objects": gitops_mode.stack.karpenter.gitops_objects,
        }
    }


def test_empty_node_lists_are_for_gitops_mode_only():
    config = load_config({"clusterName": "x", "nodeObjects": "gitops", "nodeClasses": [], "nodePools": []})
    assert (config.node_classes, config.node_pools) == ([], [])
    for mode in ("stack", "handover"):
        with pytest.raises(ConfigError) as err:
            load_config({"clusterName": "x", "nodeObjects": mode, "nodePools": []})
        assert str(err.value) == (
            f'nodePools []: no NodePool, and the stack applies the node objects (nodeObjects "{mode}"), so Karpenter '
            'would launch nothing; give at least one, or set nodeObjects "gitops" (a GitOps tool applies them) '
            "(from cdk.json)"
        )
    with pytest.raises(ConfigError) as err:
        load_config({"clusterName": "x", "nodeObjects": "git"})
    assert str(err.value) == "nodeObjects = \"git\": Input should be 'stack', 'handover' or 'gitops' (from cdk.json)"


def test_an_empty_gitops_environment_applies_no_node_object():
    empty = synth(nodeObjects="gitops", nodeClasses=[], nodePools=[])
    assert empty.stack.karpenter.gitops_objects == []
    assert [o["kind"] for o in kubernetes_objects(empty.template).values()] == ["ConfigMap"]


def test_a_class_only_a_deploy_can_name_cannot_be_written_for_git():
    """One line at synth (the construct's rule, specs.rules.delivery_problems, run by the configuration first)."""
    windows = {"name": "win", "amiAlias": "windows2022@latest"}
    with pytest.raises(ConfigError) as err:
        load_config({"clusterName": "x", "nodeObjects": "gitops", "nodeClasses": [windows], "nodePools": []})
    assert str(err.value) == (
        "nodeClasses[0] 'win' is a Windows class, whose node role CloudFormation names at deploy, which files in git "
        'cannot name (nodeObjects "gitops"): apply Windows classes with the stack (nodeObjects "stack") (from cdk.json)'
    )
    with pytest.raises(ConfigError) as err:
        load_config({"clusterName": "x", "nodeObjects": "gitops", "nodeClasses": [{"volumeKmsKey": "create"}]})
    assert str(err.value) == (
        'nodeClasses[0].volumeKmsKey "create": the key\'s ARN is known only once the stack is deployed, which files in '
        'git cannot name (nodeObjects "gitops"): give the ARN of a key you keep (from cdk.json)'
    )
    with pytest.raises(ConfigError) as err:  # (the handover writes them for the tool too)
        load_config(
            {
                "clusterName": "x",
                "nodeObjects": "handover",
                "nodeClasses": [windows],
                "nodePools": [{"nodeClass": "win"}],
            }
        )
    assert '(nodeObjects "handover"): apply Windows classes with the stack' in str(err.value)


def test_the_folder_is_one_file_per_object_in_apply_order(gitops_mode, tmp_path):
    objects = gitops_mode.stack.karpenter.gitops_objects
    wanted = gitops.files(STACK, objects)
    assert list(wanted) == ["10-ec2nodeclass-default.yaml", "30-nodepool-default.yaml"]
    assert wanted["30-nodepool-default.yaml"].startswith(
        "# Written by `make manifests ARGS=--write` from this project's configuration (stack eks-karpenter): change "
        "the\n# configuration (cdk.json, nodeManifests files) and write again; an edit here is overwritten.\n"
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: default\nspec:\n"
    )
    assert gitops.objects_of(wanted) == objects
    folder = gitops.folder_of(STACK)
    (tmp_path / folder).mkdir(parents=True)
    (tmp_path / folder / "kustomization.yaml").write_text("resources: []\n")  # yours: left alone
    (tmp_path / folder / "30-nodepool-gone.yaml").write_text("kind: NodePool\n")  # written before: removed
    assert gitops.write(tmp_path, folder, wanted) == (list(wanted), ["30-nodepool-gone.yaml"])
    assert gitops.write(tmp_path, folder, wanted) == ([], [])
    assert sorted(p.name for p in (tmp_path / folder).iterdir()) == [*wanted, "kustomization.yaml"]
    assert gitops.committed(tmp_path, folder) == wanted


def test_the_assembly_carries_the_objects_for_git(gitops_mode, default):
    recorded = gitops.recorded(Path(gitops_mode.app.outdir))
    assert recorded == {
        STACK: {
            "folder": "gitops/eks-karpenter",
            "mode": "gitops",
            "objects": gitops_mode.stack.karpenter.gitops_objects,
        }
    }
    assert gitops.recorded(Path(default.app.outdir)) == {}


def test_make_manifests_lists_what_each_mode_applies_in_creation_order(gitops_mode, default):
    def headers(synthesized) -> list[str]:
        (template,) = [t for n, t in manifests.top_level_templates(Path(synthesized.app.outdir)).items() if n == STACK]
        recorded = gitops.recorded(Path(synthesized.app.outdir))
        return [h for h, _ in manifests._documents(STACK, template, recorded)]

    stack_applied = [
        "ConfigMap/aws-auth: applied by the stack (ClusterAwsAuthmanifestFE51F8AE)",
        "patch of kube-system/deployment/coredns (strategic): applied by the stack "
        "(ClusterCoreDnsComputeTypePatch37F4F125)",
        "Helm release karpenter-crd (chart karpenter-crd 1.14.1 from oci://public.ecr.aws/karpenter/karpenter-crd, "
        "namespace kube-system): its values, installed by the stack (KarpenterReleaseCrdChart14B91BFB)",
        "Helm release karpenter (chart karpenter 1.14.1 from oci://public.ecr.aws/karpenter/karpenter, namespace "
        "kube-system): its values, installed by the stack (KarpenterReleaseControllerChartB127D32C)",
    ]
    assert headers(default) == [
        *stack_applied,
        "EC2NodeClass/default: applied by the stack (ClustermanifestEC2NodeClassdefault1FA7291F)",
        "NodePool/default: applied by the stack (ClustermanifestNodePooldefault04636ED7)",
    ]
    assert headers(gitops_mode) == [
        *stack_applied,
        "EC2NodeClass/default: applied by your GitOps tool (gitops/eks-karpenter/10-ec2nodeclass-default.yaml)",
        "NodePool/default: applied by your GitOps tool (gitops/eks-karpenter/30-nodepool-default.yaml)",
    ]


def test_values_known_at_deploy_are_shown_as_placeholders():
    assert manifests.text(
        {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":x/", {"Fn::GetAtt": ["R", "Arn"]}]]}
    ) == ("arn:${AWS::Partition}:x/${R.Arn}")
    resources = {
        "B": {"Type": "T", "DependsOn": "A"},
        "A": {"Type": "T", "Properties": {"X": {"Ref": "C"}}},
        "C": {"Type": "T"},
    }
    assert manifests.creation_order(resources) == ["C", "A", "B"]


def test_the_command_prints_and_writes(tmp_path, capsys, monkeypatch):
    """`make manifests` as a user runs it (its arguments, exit status), in a project of the user's."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "cdk.json").write_text(json.dumps({"app": "python3 app.py", "context": {"clusterName": "team-a"}}))
    monkeypatch.setattr(context_sources, "project_dir", lambda: project)
    assert manifests.main(["-c", "nodeObjects=gitops", "--write"]) == 0
    assert capsys.readouterr().out == "gitops/team-a/: 2 node objects, 2 file(s) written, 0 removed\n"
    assert sorted(p.name for p in (project / "gitops" / "team-a").iterdir()) == [
        "10-ec2nodeclass-default.yaml",
        "30-nodepool-default.yaml",
    ]
    assert manifests._write(["team-a"], {}, project) == 0  # (a configuration without nodeObjects "gitops")
    assert capsys.readouterr().out == (
        'No stack\'s node objects are applied by a GitOps tool (nodeObjects "gitops"): nothing written.\n'
    )
    assert manifests.main(["-c", "nodeObjects=gitops", "--stack", "other"]) == 2  # (the synth above, kept)
    assert capsys.readouterr().err == "--stack other: no such stack (the configuration's: team-a)\n"
    assert manifests.main(["-c", "nodeObjects=stack", "-c", "nodePools=[]"]) == 2
    assert capsys.readouterr().err.startswith("Configuration error:\nnodePools []: no NodePool, and the stack")


def _baseline_of(synthesized, root: Path) -> None:
    (root / "baseline").mkdir(parents=True, exist_ok=True)
    template = json.loads((Path(synthesized.app.outdir) / f"{STACK}.template.json").read_text())
    (root / "baseline" / f"{STACK}.template.json").write_text(json.dumps(template))


def test_moving_a_running_cluster_to_gitops_goes_through_handover(default, handover, tmp_path):
    """stack -> gitops would delete every pool (Karpenter drains their nodes): refused against the baseline, with
    the steps; from handover (the objects retained) the move is allowed."""
    config = load_config({"nodeObjects": "gitops"})
    _baseline_of(default, tmp_path)
    assert baseline.refusals(config, STACK, tmp_path) == [
        'nodeObjects "gitops": the stack your baseline records (baseline/eks-karpenter.template.json) applies '
        "EC2NodeClass/default, NodePool/default and would delete them (Karpenter drains every node of a deleted "
        'NodePool); hand them over in steps: nodeObjects "handover" (the stack keeps them, and leaves them running '
        "when they leave it), deploy, make accept, make manifests ARGS=--write and let your GitOps tool apply the "
        'files, then "gitops" (a stack never deployed: remove its templates from baseline/)'
    ]
    assert baseline.refusals(load_config({"nodeObjects": "handover"}), STACK, tmp_path) == []
    _baseline_of(handover, tmp_path)
    assert baseline.refusals(config, STACK, tmp_path) == []


def test_the_review_of_each_step(default, handover, gitops_mode):
    """stack -> handover changes no object; handover -> gitops leaves them running (CloudFormation retains them) and,
    the folder not written yet, Karpenter sees the same objects; stack -> gitops says every pool is deleted."""
    old = {f"{STACK}.template": json.loads((Path(default.app.outdir) / f"{STACK}.template.json").read_text())}

    def changes(before, after) -> dict[str, tuple[str, str, list[str]]]:
        templates = rv.synthesized_templates(Path(before.app.outdir))
        (report,) = [
            r for r in rv.review(templates, rv.synthesized_templates(Path(after.app.outdir))) if r.name == STACK
        ]
        return {c.logical_id: (c.action, c.why, c.effects) for c in report.changes if c.logical_id in NODE_IDS}

    # each node object's resource is updated (the property), re-applying the same objects: nothing for Karpenter
    assert changes(default, handover) == {
        logical_id: ("updated", "in place (kubectl apply): RetainedForHandover", []) for logical_id in NODE_IDS
    }
    handover_lines, _, blocked = review_gitops.review(gitops.recorded(Path(handover.app.outdir)), old, Path("/x"), None)
    assert blocked == []
    assert handover_lines[1] == (
        "## eks-karpenter: node objects your GitOps tool takes over (handover) (gitops/eks-karpenter/)"
    )
    assert handover_lines[4:6] == [
        "- nothing changes for Karpenter",
        "- the stack keeps applying these objects and retains them from this deploy on (DeletionPolicy Retain; each "
        "resource is updated, re-applying the same objects, so that CloudFormation stores it): once your GitOps tool "
        'applies gitops/eks-karpenter/, set nodeObjects "gitops" and deploy: the objects keep running',
    ]
    # once the handover is the baseline, the review says it as it is
    accepted = {f"{STACK}.template": json.loads((Path(handover.app.outdir) / f"{STACK}.template.json").read_text())}
    kept, _, _ = review_gitops.review(gitops.recorded(Path(handover.app.outdir)), accepted, Path("/x"), None)
    assert kept[5] == (
        "- the stack keeps applying these objects and retains them (DeletionPolicy Retain, as your baseline records): "
        'once your GitOps tool applies gitops/eks-karpenter/, set nodeObjects "gitops" and deploy: the objects keep '
        "running"
    )
    assert changes(handover, gitops_mode) == {
        "ClustermanifestEC2NodeClassdefault1FA7291F": (
            "removed",
            "retained: CloudFormation deletes nothing",
            ["EC2NodeClass `default` keeps running: left in the cluster, no longer the stack's"],
        ),
        "ClustermanifestNodePooldefault04636ED7": (
            "removed",
            "retained: CloudFormation deletes nothing",
            ["NodePool `default` keeps running: left in the cluster, no longer the stack's"],
        ),
    }
    direct = changes(default, gitops_mode)
    assert direct["ClustermanifestNodePooldefault04636ED7"][:2] == ("removed", "deleted")
    assert "drains" in direct["ClustermanifestNodePooldefault04636ED7"][2][0]

    handed_over = {f"{STACK}.template": json.loads((Path(handover.app.outdir) / f"{STACK}.template.json").read_text())}
    recorded = gitops.recorded(Path(gitops_mode.app.outdir))
    lines, stale, blocked = review_gitops.review(recorded, handed_over, Path("/nonexistent"), None)
    assert blocked == []
    assert lines == [
        "",
        "## eks-karpenter: node objects your GitOps tool applies (gitops/eks-karpenter/)",
        "",
        "Before: 2 object(s) from the stack (baseline); after: 2 rendered by this configuration.",
        "- nothing changes for Karpenter",
        "- gitops/eks-karpenter/ is not what the configuration renders: make manifests ARGS=--write, then commit it "
        "(your GitOps tool applies what is committed)",
    ]
    assert stale == ["gitops/eks-karpenter"]
    lines, _, blocked = review_gitops.review(recorded, old, Path("/nonexistent"), None)
    assert blocked == [STACK]
    assert lines[5] == (
        "- **Blocked**: the baseline's stack applies EC2NodeClass/default, NodePool/default and does not retain them: "
        "this deploy deletes them (Karpenter drains every node of a deleted NodePool). Move in steps: nodeObjects "
        '"handover" (deploy, make accept), make manifests ARGS=--write and commit for your GitOps tool, then "gitops"'
    )


def test_a_change_of_the_files_is_reviewed_as_karpenter_acts_on_it(gitops_mode, tmp_path):
    """The committed folder against what the configuration renders now: a pool's requirements narrowed drift
    the nodes that no longer meet them; at a git revision (BASE) the folder is read from git."""
    folder = gitops.folder_of(STACK)
    objects = gitops_mode.stack.karpenter.gitops_objects
    gitops.write(tmp_path, folder, gitops.files(STACK, objects))
    git = ["git", "-c", "user.name=u", "-c", "user.email=u@example.com"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "written"]):
        subprocess.run([*git, *args], cwd=tmp_path, check=True, capture_output=True)
    narrowed = copy.deepcopy(objects)  # what the configuration renders with the pool's architectures narrowed
    (arch,) = [r for r in narrowed[1]["spec"]["template"]["spec"]["requirements"] if r["key"] == "kubernetes.io/arch"]
    arch["values"] = ["arm64"]
    lines, stale, _ = review_gitops.review({STACK: {"folder": folder, "objects": narrowed}}, {}, tmp_path, "HEAD")
    assert (
        lines[3] == "Before: 2 object(s) from gitops/eks-karpenter/ at HEAD; after: 2 rendered by this configuration."
    )
    assert lines[4].startswith(
        "- NodePool `default` (template.spec.requirements): nodes of pool `default` labelled kubernetes.io/arch=amd64 "
        "will be replaced by drift"
    )
    assert stale == []  # at a revision: what is committed there is the baseline, not a folder to write
    lines, stale, _ = review_gitops.review(gitops.recorded(Path(gitops_mode.app.outdir)), {}, tmp_path, None)
    assert lines[4:] == ["- nothing changes for Karpenter"] and stale == []
    # back to the stack: the folder's objects are applied over by the stack, once the tool lets go of them
    lines, _, blocked = review_gitops.review({}, {}, tmp_path, None, [STACK])
    assert blocked == []
    assert lines == [
        "",
        "## eks-karpenter: node objects move from your GitOps tool (gitops/eks-karpenter/) to the stack",
        "",
        "The stack applies its node objects over the 2 your GitOps tool applied (kubectl apply: nothing is deleted, "
        "Karpenter sees the changes above) and owns them from then on. Before deploying, take them out of the tool "
        "without deleting them (Argo CD: remove them from the Application with pruning off; Flux: prune: false), or it "
        "keeps applying its own; then remove gitops/eks-karpenter/.",
    ]


def test_the_snapshots_of_the_default_configuration_hold_the_node_objects(default):
    """(the review above compares with these)"""
    templates = snapshot_templates("default", Path(default.app.outdir))
    assert NODE_IDS <= set(templates[f"{STACK}.template"]["Resources"])
