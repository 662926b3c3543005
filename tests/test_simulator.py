"""The deploy simulator (tooling/review/simulator): a deploy of this app's real templates replayed step by step in
CloudFormation's order, with aws-cdk's real cluster handler and what EKS and the nodes do, the running cluster's
invariants checked after every step, and the rollback replayed for a failure at every step. Each case below broke a
running cluster while the review passed it before the simulator (issue 32)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from karpenter_stack import baseline
from karpenter_stack.config import load_config
from tests.cfn import kubernetes_objects, render
from tests.conftest import synth
from tooling import review as rv
from tooling.review.simulator import simulate

FARGATE_PROFILE = "ClusterfargateprofileKarpenterAndCoreDns2C79EDD5"
AWS_AUTH = "ClusterAwsAuthmanifestFE51F8AE"
TEMPLATE = "eks-karpenter.template"


def _templates(synthesized) -> dict:
    return rv.synthesized_templates(Path(synthesized.app.outdir))


def _findings(old, new) -> list[str]:
    return [f.text for f in simulate(old, new)["eks-karpenter"].findings()]


def _mappings(synthesized) -> dict[str, tuple[str, list[str]]]:
    roles = json.loads(render(kubernetes_objects(synthesized.template)["ConfigMap/aws-auth"]["data"]["mapRoles"]))
    return {r["rolearn"]: (r["username"], r["groups"]) for r in roles}


FARGATE_MAPPING = ("system:node:{{SessionName}}", ["system:bootstrappers", "system:nodes", "system:node-proxier"])
EC2_MAPPING = ("system:node:{{EC2PrivateDNSName}}", ["system:bootstrappers", "system:nodes"])
FARGATE_ROLE = "${GetAtt:ClusterfargateprofileKarpenterAndCoreDnsPodExecutionRole61D3A264.Arn}"
SYSTEM_NODE_ROLE = "${GetAtt:ControllerHostingNodeRole8E936FA0.Arn}"


def test_both_hostings_roles_are_mapped_whichever_runs_under_the_same_logical_ids(default):
    nodegroup = synth(controllerHosting="nodegroup")
    for synthesized in (default, nodegroup):
        mapped = _mappings(synthesized)
        assert mapped[FARGATE_ROLE] == FARGATE_MAPPING and mapped[SYSTEM_NODE_ROLE] == EC2_MAPPING
    fargate_role = default.template.to_json()["Resources"][
        "ClusterfargateprofileKarpenterAndCoreDnsPodExecutionRole61D3A264"
    ]
    kept = nodegroup.template.to_json()["Resources"]["ClusterfargateprofileKarpenterAndCoreDnsPodExecutionRole61D3A264"]
    assert kept["Properties"] == fargate_role["Properties"]  # the switch updates nothing of the role
    node_role = nodegroup.template.to_json()["Resources"]["ControllerHostingNodeRole8E936FA0"]["Properties"]
    assert default.template.to_json()["Resources"]["ControllerHostingNodeRole8E936FA0"]["Properties"] == node_role


def test_a_hosting_switch_keeps_the_old_hosting_authorized_until_the_cleanup_deletes_it(default):
    nodegroup = synth(controllerHosting="nodegroup")
    fargate, system = _templates(default), _templates(nodegroup)
    # no node is deauthorized either way; what remains is EKS deleting every pod of the old Fargate profile at once
    # (fargate -> nodegroup, in the cleanup; nodegroup -> fargate only if the Helm upgrade fails and the rollback
    # deletes the new profile): an interruption the review blocks until it is acknowledged
    outage = (
        "at the deletion of the Fargate profile {profile} in the {phase}, {who} loses every replica at once: EKS "
        "deletes the pods of the Fargate profile {profile} together, and they start again on the node group "
        "ClusterNodegroupSystemNodesV27445704A (every replica)"
    )
    assert _findings(fargate, system) == [
        outage.format(profile=FARGATE_PROFILE, phase="cleanup", who=who)
        for who in ("CoreDNS", "the Karpenter controller")
    ]
    assert _findings(system, fargate) == [
        "if the update of the Helm release karpenter fails, "
        + outage.format(profile=FARGATE_PROFILE, phase="rollback cleanup", who="the Karpenter controller")
    ]
    # aws-auth maps both roles in both: it is not touched; the Helm release (waiting) goes last in the update
    # phase, and the Fargate profile only in the cleanup (its pods move to the node group there)
    assert [s.describe() for s in simulate(fargate, system)["eks-karpenter"].deploy.steps] == [
        "the creation of ControllerHostingLaunchTemplateB4A0B290 (AWS::EC2::LaunchTemplate)",
        "the update of ClusterCreationRoleDefaultPolicyE8BDFC7B (AWS::IAM::Policy)",
        "the creation of the node group ClusterNodegroupSystemNodesV27445704A",
        "the update of the coredns add-on",
        "the update of the Helm release karpenter",
        "the deletion of ClusterCoreDnsComputeTypePatch37F4F125 (Custom::AWSCDK-EKS-KubernetesPatch) in the cleanup",
        f"the deletion of the Fargate profile {FARGATE_PROFILE} in the cleanup",
    ]
    reports = rv.review(fargate, system)
    _, blocking, failing = rv.render(reports, {})
    assert failing == [] and f"eks-karpenter/{FARGATE_PROFILE}" in blocking
    _, blocking, _ = rv.render(reports, {f"eks-karpenter/{FARGATE_PROFILE}": "DNS blip accepted in a window"})
    assert f"eks-karpenter/{FARGATE_PROFILE}" not in blocking
    # a change the replay finds nothing wrong with says so (here: a role's description)
    described = copy.deepcopy(fargate)
    described[TEMPLATE]["Resources"]["ClusterAdminRole047D4FCA"]["Properties"]["Description"] = "the admins"
    clean, _, _ = rv.render(rv.review(fargate, described), {})
    assert (
        "Replayed step by step: 1 steps of the deploy, and CloudFormation's rollback from a failure at each: the "
        "running cluster keeps every invariant" in clean
    )


def test_the_switch_as_the_app_wrote_it_before_deauthorizes_fargate_and_times_the_helm_upgrade_out(default):
    """Today's templates with aws-auth as the app wrote it before (only the running hosting's role): the simulator
    finds what the issue reported from a real cluster."""
    fargate, system = _templates(default), copy.deepcopy(_templates(synth(controllerHosting="nodegroup")))
    manifest = system[TEMPLATE]["Resources"][AWS_AUTH]["Properties"]["Manifest"]["Fn::Join"][1]
    start = next(i for i, p in enumerate(manifest) if isinstance(p, dict) and "fargateprofile" in json.dumps(p))
    # drop the kept Fargate mapping: the text part before the role's reference to the one before the next entry
    manifest[start - 1] = manifest[start - 1].rsplit('{\\"rolearn\\":\\"', 1)[0]
    manifest[start + 1] = '{\\"rolearn\\":\\"' + manifest[start + 1].split('{\\"rolearn\\":\\"', 1)[1]
    del manifest[start]
    assert FARGATE_ROLE not in json.dumps(manifest)
    assert _findings(fargate, system) == [
        "from the update of the aws-auth ConfigMap until the update of the aws-auth ConfigMap in the rollback (at worst "
        "36 min), the "
        f"Fargate profile {FARGATE_PROFILE}'s role is neither in aws-auth nor in an access entry: its nodes cannot "
        "authenticate and CoreDNS and the Karpenter controller go NotReady (authorized)",
        "the deploy fails at the update of the Helm release karpenter: helm upgrade --wait times out after 720s: the "
        f"controller's new pods land on the Fargate profile {FARGATE_PROFILE}, whose nodes cannot authenticate "
        "(NotReady)",
    ]


def test_a_hosting_and_credentials_switch_in_one_deploy_leaves_the_controller_without_credentials(default, tmp_path):
    old, new = (
        _templates(default),
        _templates(synth(controllerHosting="nodegroup", controllerCredentials="pod-identity")),
    )
    assert _findings(old, new) == [
        "from the update of the Helm release karpenter until the deletion of the Fargate profile "
        f"{FARGATE_PROFILE} in the cleanup (at worst 62 min), the Karpenter controller's pods have no AWS credentials "
        "(IRSA needs its "
        "role and the OIDC provider; Pod Identity its association and agent, and never works on Fargate) "
        "(credentials)",
        *(
            f"at the deletion of the Fargate profile {FARGATE_PROFILE} in the cleanup, {who} loses every replica at "
            f"once: EKS deletes the pods of the Fargate profile {FARGATE_PROFILE} together, and they start again on "
            "the node group ClusterNodegroupSystemNodesV27445704A (every replica)"
            for who in ("CoreDNS", "the Karpenter controller")
        ),
    ]
    # the review fails it, and the synth refuses it against the deployed baseline with the two deploys to make
    _, _, failing = rv.render(rv.review(old, new), {})
    assert failing == ["eks-karpenter/replay"]
    (tmp_path / baseline.BASELINE_DIR).mkdir()
    (tmp_path / baseline.BASELINE_DIR / "eks-karpenter.template.json").write_text(json.dumps(old[TEMPLATE]))
    config = load_config({"controllerHosting": "nodegroup", "controllerCredentials": "pod-identity"})
    assert baseline.refusals(config, "eks-karpenter", tmp_path) == [
        'controllerHosting "nodegroup" and controllerCredentials "pod-identity" change together against the deployed '
        "cluster (baseline/eks-karpenter.template.json: fargate, irsa): the controller's new pods start on the old "
        "hosting, which CloudFormation deletes only in its cleanup, and run without AWS credentials until then; "
        'deploy one at a time: first controllerHosting "nodegroup" (keeping controllerCredentials "irsa"), then '
        'controllerCredentials "pod-identity"'
    ]
    # one at a time: the controller keeps its credentials (the hosting switch's own interruption stays, see above)
    hosting_only = _templates(synth(controllerHosting="nodegroup"))
    assert not [f for f in _findings(old, hosting_only) if "credentials" in f] and _findings(hosting_only, new) == []


def test_an_upgrades_rollback_is_eks_version_rollback_with_karpenters_nodes_on_the_newer_kubelet(default):
    old, new = _templates(synth(kubernetesVersion="1.35")), _templates(default)
    simulation = simulate(old, new)["eks-karpenter"]
    assert not simulation.deploy.violations and simulation.deploy.failed is None
    # the real handler's calls: the upgrade, and CloudFormation's rollback of it (a real control-plane downgrade)
    assert [(s.phase, calls) for s, calls in simulation.deploy.calls] == [
        ("update", ["DescribeCluster", "UpdateClusterVersion"])
    ]
    back = next(iter(simulation.rollbacks.values()))
    assert [(s.phase, calls) for s, calls in back.calls][-1] == (
        "rollback",
        ["DescribeCluster", "UpdateClusterVersion"],
    )
    (finding,) = simulation.findings()
    assert finding.severity == "one way" and finding.subject == "eks-karpenter/Cluster9EE0221C"
    assert finding.text.endswith(
        "from the update of the EKS cluster in the rollback to the end of the deploy and after it, Karpenter's nodes "
        "may already run kubelet 1.36 (they follow the control plane by drift), newer than the control plane 1.35 "
        "(skew)"
    )
    # the review blocks it until the upgrade's one-way risk is acknowledged, by the cluster's key
    reports = rv.review(old, new)
    _, blocking, failing = rv.render(reports, {})
    assert failing == [] and blocking == ["eks-karpenter/Cluster9EE0221C"]
    assert rv.render(reports, {"eks-karpenter/Cluster9EE0221C": "upgrade window"})[1:] == ([], [])


def test_two_kinds_of_cluster_update_fail_the_deploy_and_its_rollback_in_the_real_handler():
    # (the configurations other tests synthesize: an upgrade with a new endpoint access and public CIDRs)
    old = _templates(synth(kubernetesVersion="1.35"))
    new = _templates(
        synth(endpointAccess="public-and-private", publicAccessCidrs=["203.0.113.0/24", "198.51.100.7/32"])
    )
    simulation = simulate(old, new)["eks-karpenter"]
    step, why = simulation.deploy.failed
    assert step.describe() == "the update of the EKS cluster" and why.startswith(
        "aws-cdk's cluster handler refuses (Only one type of update - "
    )
    step, why = simulation.deploy.wedged
    assert step.describe() == "the update of the EKS cluster in the rollback" and "Only one type of update" in why
    assert [calls for _, calls in simulation.deploy.calls] == [
        ["throws: " + why.removeprefix("aws-cdk's cluster handler refuses (").removesuffix(")")]
    ] * 2


def test_the_simulators_fargate_profile_rule_is_the_real_handlers(default):
    """plan.REPLACED_ON_ANY_CHANGE mirrors aws-cdk's Fargate profile handler: any Update creates a new profile (a
    new physical id), so CloudFormation deletes the old one in the cleanup."""
    from tooling.review.simulator import handlers, plan

    profile = default.template.to_json()["Resources"][FARGATE_PROFILE]["Properties"]["Config"]
    moved = {**profile, "selectors": [{"namespace": "karpenter"}]}
    outcome = handlers.fargate_profile_update(profile, moved, physical_id="old-profile", logical_id=FARGATE_PROFILE)
    assert outcome.error is None and outcome.operations == ["CreateFargateProfile"]
    assert outcome.result["PhysicalResourceId"] != "old-profile"
    assert "Custom::AWSCDK-EKS-FargateProfile" in plan.REPLACED_ON_ANY_CHANGE


def test_subnets_in_a_zone_the_cluster_was_not_created_in_are_refused_by_eks(default):
    """The real handler sends the new subnets (UpdateClusterConfig); EKS keeps a cluster in its creation zones
    (what a maxAzs change does on a running cluster, refused at synth: tests/test_transitions.py)."""
    old = _templates(default)
    new = copy.deepcopy(old)
    resources = new[TEMPLATE]["Resources"]
    third = copy.deepcopy(resources["NetworkVpcPrivateSubnet2Subnet1BDBE877"])
    third["Properties"]["AvailabilityZone"] = {"Fn::Select": [2, {"Fn::GetAZs": ""}]}
    resources["NetworkVpcPrivateSubnet3SubnetF258B56E"] = third
    resources["Cluster9EE0221C"]["Properties"]["Config"]["resourcesVpcConfig"]["subnetIds"].append(
        {"Ref": "NetworkVpcPrivateSubnet3SubnetF258B56E"}
    )
    simulation = simulate(old, new)["eks-karpenter"]
    assert [calls for _, calls in simulation.deploy.calls][0] == ["UpdateClusterConfig"]
    step, why = simulation.deploy.failed
    assert step.describe() == "the update of the EKS cluster" and why == (
        'EKS refuses subnets in availability zones the cluster was not created in ({"Fn::Select": [2, {"Fn::GetAZs": '
        '""}]}): a cluster\'s subnets stay in its creation zones'
    )


# The node-group hosting's root template as the code before the system node group's launch template wrote it
# (synthesized from main at 34d3851 with path metadata, as the tests synthesize): a baseline that has the old group.
# That commit's nested templates are today's, byte for byte (checked when the fixture was made), so the old root
# with today's nested templates is that commit's whole synth.
BEFORE_LAUNCH_TEMPLATE = Path(__file__).parent / "fixtures" / "nodegroup-hosting-before-launch-template.template.json"
OLD_NODEGROUP, NEW_NODEGROUP = "ClusterNodegroupSystemNodes9C3907F1", "ClusterNodegroupSystemNodesV27445704A"


def test_the_launch_template_replaces_the_system_node_group_ready_and_mapped_before_the_old_one_goes():
    """EKS adds no launch template to a node group created without one, so the group with one is a new resource:
    CloudFormation creates it in the update phase and deletes the old one in the cleanup. The replay keeps every
    invariant (the new group's role is the old one's, mapped in aws-auth throughout; CoreDNS and the controller move
    when the old group is drained), and the review shows the replacement and blocks it until acknowledged."""
    new = _templates(synth(controllerHosting="nodegroup"))
    old = {**new, TEMPLATE: json.loads(BEFORE_LAUNCH_TEMPLATE.read_text())}
    assert "LaunchTemplate" not in old[TEMPLATE]["Resources"][OLD_NODEGROUP]["Properties"]
    assert OLD_NODEGROUP not in new[TEMPLATE]["Resources"] and NEW_NODEGROUP not in old[TEMPLATE]["Resources"]
    same_role = {"Fn::GetAtt": ["ControllerHostingNodeRole8E936FA0", "Arn"]}
    assert old[TEMPLATE]["Resources"][OLD_NODEGROUP]["Properties"]["NodeRole"] == same_role
    assert new[TEMPLATE]["Resources"][NEW_NODEGROUP]["Properties"]["NodeRole"] == same_role
    simulation = simulate(old, new)["eks-karpenter"]
    steps = [s.describe() for s in simulation.deploy.steps]
    created, deleted = (
        steps.index(f"the creation of the node group {NEW_NODEGROUP}"),
        steps.index(f"the deletion of the node group {OLD_NODEGROUP} in the cleanup"),
    )
    assert steps.index("the creation of ControllerHostingLaunchTemplateB4A0B290 (AWS::EC2::LaunchTemplate)") < created
    # the new group in the update phase (CloudFormation waits for it to be ACTIVE), the old one only in the cleanup
    assert created < deleted and not [s for s in steps[: created + 1] if "in the cleanup" in s]
    assert simulation.findings() == []
    reports = rv.review(old, new)
    text, blocking, failing = rv.render(reports, {})
    assert failing == [] and f"eks-karpenter/{OLD_NODEGROUP}" in blocking
    assert f"| ‼ STATEFUL | `{OLD_NODEGROUP}` | AWS::EKS::Nodegroup | - **removed** | deleted |" in text
    assert f"|  | `{NEW_NODEGROUP}` | AWS::EKS::Nodegroup | + added | created |" in text
    assert "the running cluster keeps every invariant" in text
    # only the node group blocks (the flow log key's policy is an in-place update; its group stays)
    assert blocking == [f"eks-karpenter/{OLD_NODEGROUP}"]
    _, blocking, _ = rv.render(reports, {f"eks-karpenter/{OLD_NODEGROUP}": "system nodes with their launch template"})
    assert blocking == []


def test_removing_the_windows_class_with_its_pool_deauthorizes_the_windows_nodes_before_their_drain(
    default, example_windows, tmp_path
):
    """Issue 40: the Windows node role's mapping goes in the update phase, the Windows pool (and its drain) only in the
    cleanup: every role a pool's nodes run with is watched, not only Karpenter's, and the synth refuses the deploy
    against a baseline with the Windows pool, naming the two deploys."""
    findings = _findings(_templates(example_windows), _templates(default))
    assert [f for f in findings if "(authorized)" in f] == [
        "from the update of the aws-auth ConfigMap until the deletion of NodePool `windows` in the cleanup (at worst 2 "
        "min), the node role of NodePool `windows` (EC2NodeClass `windows`) is neither in aws-auth nor in an access entry: its "
        "nodes cannot authenticate and go NotReady, their pods die without a drain (authorized)"
    ]
    (tmp_path / baseline.BASELINE_DIR).mkdir()
    (tmp_path / baseline.BASELINE_DIR / "eks-karpenter.template.json").write_text(
        json.dumps(_templates(example_windows)[TEMPLATE])
    )
    without = load_config(without_context())
    assert baseline.refusals(without, "eks-karpenter", tmp_path) == [
        'nodeClasses: the deployed Windows pools "windows" (baseline/eks-karpenter.template.json) run with the Windows '
        "node role, which this deploy removes with the last Windows class before CloudFormation's cleanup deletes the "
        "pools: their nodes would go NotReady and their pods die without a drain; deploy twice: first without the "
        "Windows pools (Karpenter drains their nodes), then without the Windows classes"
    ]
    # step one, the pools only (the class stays, and with it the role): accepted
    windows = json.loads((Path(__file__).parent.parent / "examples" / "windows.json").read_text())
    pools_gone = load_config({**without_context(), "nodeClasses": windows["nodeClasses"]})
    assert baseline.refusals(pools_gone, "eks-karpenter", tmp_path) == []


def without_context() -> dict:
    from tooling.configurations import PRODUCT_CONTEXT

    return dict(PRODUCT_CONTEXT)
