"""Lifecycle rehearsal: CloudFormation's create, destroy and update-rollback semantics (tests/
lifecycle_model.py) over the synthesized templates of the default, node-group, production, existing-
cluster, Pod Identity, Windows and node-overlay configurations, nested stacks included."""

from __future__ import annotations

import copy

import pytest

from tests.cfn import each
from tests.test_snapshots import all_templates
from tests.test_teardown import EVENT, Context, FakeTime, Untouchable, _status_client, index
from tooling.review.lifecycle_model import Lifecycle

CONFIGURATIONS = [
    "default",
    "alternative",
    "production",
    "existing",
    "pod_identity",
    "example_windows",
    "example_baseline_and_burst",
]

# Everything that nothing depends on is deleted first, in parallel with the node pools, at the start of
# a stack deletion. Each such resource must be here, with the reason that is safe.
LEAVES = {
    (
        "Custom::AWSCDK-EKS-KubernetesResource",
        "/manifest-NodePool-",
    ): "Node pools go first on purpose: Karpenter drains and terminates their nodes while everything the "
    "nodes and the controller need is still there.",
    (
        "Custom::AWSCDK-EKS-KubernetesResource",
        "/manifest-NodeOverlay-",
    ): "Node overlays only change what the controller assumes when it chooses instance types: deleting them "
    "first changes no node.",
    (
        "Custom::AWSCDK-EKS-KubernetesPatch",
        "/Cluster/CoreDnsComputeTypePatch/",
    ): "aws-cdk's former CoreDNS patch, kept for its logical id (it annotates CoreDNS's pods with the Kubernetes "
    "minor): its delete restores nothing.",
    (
        "AWS::EKS::Addon",
        "/Addons/coredns",
    ): "CoreDNS's add-on is preserved on delete (PreserveOnDelete): deleting the resource leaves CoreDNS running, "
    "and neither the controller (dnsPolicy Default) nor a node joining or draining resolves through it.",
    (
        "Custom::AWS",
        "/TerminationProtection/",
    ): "Termination protection: a stack deletion starts only once it is off, so turning it off on the way out "
    "(and deleting the policy that allows that) changes nothing the cluster needs.",
}
# Not leaves themselves, but deleted early only because a reasoned leaf above goes first.
WITH_A_LEAF = {
    ("AWS::IAM::Policy", "/TerminationProtection/"): "the termination-protection call's policy",
}


def _lifecycle(synthesized) -> Lifecycle:
    templates = all_templates(synthesized)
    (root,) = [name for name in templates if not name.endswith(".nested.template")]
    return Lifecycle(templates, root)


@pytest.fixture(scope="module")
def lifecycles(request) -> dict[str, Lifecycle]:
    return {name: _lifecycle(request.getfixturevalue(name)) for name in CONFIGURATIONS}


def _leaf_reason(lifecycle: Lifecycle, key: str):
    node = lifecycle.nodes[key]
    return next(((t, p) for t, p in LEAVES if node.type == t and p in node.path), None)


def test_every_resource_nothing_depends_on_is_a_reasoned_leaf(lifecycles):
    unexplained = {
        name: [f"{lc.nodes[k].type} {lc.nodes[k].path or k}" for k in lc.leaves() if _leaf_reason(lc, k) is None]
        for name, lc in lifecycles.items()
    }
    assert unexplained == {name: [] for name in lifecycles}
    used = {_leaf_reason(lc, k) for lc in lifecycles.values() for k in lc.leaves()}
    assert used == set(LEAVES), "a reasoned leaf no configuration has any more: remove it"


def test_the_leaf_check_sees_a_resource_nothing_depends_on(default):
    templates = copy.deepcopy(all_templates(default))
    templates["eks-karpenter.template"]["Resources"]["Orphan"] = {"Type": "AWS::SNS::Topic", "Properties": {}}
    lifecycle = Lifecycle(templates, "eks-karpenter.template")
    assert "eks-karpenter/Orphan" in lifecycle.leaves() and _leaf_reason(lifecycle, "eks-karpenter/Orphan") is None


def _draining(lifecycle: Lifecycle) -> set[str]:
    """What a destroy deletes while Karpenter's nodes drain: its objects and the safety net."""
    karpenter = {
        k
        for k, n in lifecycle.nodes.items()
        if n.type == "Custom::AWSCDK-EKS-KubernetesResource"
        and ("/manifest-NodePool-" in n.path or "/manifest-EC2NodeClass-" in n.path)
    }
    safety_net = {
        k
        for k in lifecycle.find("Custom::KarpenterTeardown")
        # (its load-balancer cleanup goes after the cluster, when every node is long gone)
        if lifecycle.nodes[k].resource["Properties"].get("Phase") != "LoadBalancers"
    }
    return karpenter | safety_net


@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_nothing_the_running_cluster_needs_is_deleted_while_nodes_drain(configuration, lifecycles):
    lifecycle = lifecycles[configuration]
    destroy = lifecycle.schedule("delete")
    draining = _draining(lifecycle)
    drained_at = max(destroy.end[k] for k in draining)
    early = sorted(
        f"{lifecycle.nodes[k].path or k} at {destroy.start[k] // 60} min"
        for k in lifecycle.nodes
        if k not in draining
        and _leaf_reason(lifecycle, k) is None
        and not any(lifecycle.nodes[k].type == t and p in lifecycle.nodes[k].path for t, p in WITH_A_LEAF)
        and not lifecycle.nodes[k].retained
        and destroy.start[k] < drained_at
    )
    assert early == []
    # ... and among what waits are the things the issue named, with their delete starts
    needed = {
        "controller chart": lifecycle.find("Custom::AWSCDK-EKS-HelmChart", path="/ControllerChart/"),
        "Karpenter nested stack (node role, queue)": lifecycle.find("AWS::CloudFormation::Stack", path="/Karpenter."),
    }
    if configuration == "existing":  # the cluster's own add-ons, network and security group are not ours
        needed["access entry of the node role"] = lifecycle.find("AWS::EKS::AccessEntry")
    else:
        needed.update(
            {
                "vpc-cni add-on": lifecycle.find("AWS::EKS::Addon", path="/Addons/vpc-cni"),
                "security-group discovery tag": lifecycle.find(
                    "Custom::AWS", path="/ClusterSecurityGroupDiscoveryTag/"
                ),
                "aws-auth": lifecycle.find("Custom::AWSCDK-EKS-KubernetesResource", path="/AwsAuth/"),
                "cluster": lifecycle.find("Custom::AWSCDK-EKS-Cluster"),
                "VPC": lifecycle.find("AWS::EC2::VPC"),
            }
        )
    if configuration == "pod_identity":  # the controller drains nodes with Pod Identity credentials
        needed["pod identity association"] = lifecycle.find("AWS::EKS::PodIdentityAssociation")
        needed["pod identity agent add-on"] = lifecycle.find("AWS::EKS::Addon", path="/Addons/eks-pod-identity-agent")
    if configuration == "example_windows":  # Windows nodes stay authorized and launchable while they drain
        needed["Windows node role"] = lifecycle.find("AWS::IAM::Role", path="/WindowsNodeRole/")
        needed["controller's pass-role policy"] = lifecycle.find(
            "AWS::IAM::ManagedPolicy", path="/WindowsNodeRolePassRole/"
        )
    assert all(len(keys) == 1 for keys in needed.values()), needed
    assert all(destroy.start[keys[0]] >= drained_at for keys in needed.values())


def _rollback_events(lifecycle: Lifecycle, before: Lifecycle) -> list[str]:
    """The resources an update rollback deletes, in the order it deletes them."""
    rollback = lifecycle.schedule("delete", only=lifecycle.rollback_deletes(before))
    return sorted(rollback.start, key=lambda k: (rollback.start[k], k))


def _without(lifecycle_templates: dict, *path_fragments: str) -> dict:
    templates = copy.deepcopy(lifecycle_templates)
    resources = templates["eks-karpenter.template"]["Resources"]
    for logical_id in [
        k
        for k, r in resources.items()
        if any(f in r.get("Metadata", {}).get("aws:cdk:path", "") for f in path_fragments)
    ]:
        del resources[logical_id]
    return templates


def test_an_update_rollback_deletes_what_the_update_created_and_the_safety_net_does_not_act(default, monkeypatch):
    """An update that introduces the safety net and a node pool fails and rolls back: CloudFormation
    deletes exactly those, the pool first; the safety net's real handler, told the stack is rolling
    back, answers SUCCESS without a single EC2 or IAM call."""
    monkeypatch.setenv("CLUSTER_NAME", "eks-karpenter")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    current = all_templates(default)
    before = Lifecycle(
        _without(current, "/TeardownSafetyNet/", "/manifest-NodePool-default/"), "eks-karpenter.template"
    )
    lifecycle = Lifecycle(current, "eks-karpenter.template")
    order = [
        lifecycle.nodes[k].path.removeprefix("eks-karpenter/").removeprefix("Default/")
        for k in _rollback_events(lifecycle, before)
    ]
    # (at the same start, ordered by logical id)
    assert order[:5] == [
        "Cluster/manifest-NodePool-default/Resource/Default",
        "TeardownSafetyNet/LoadBalancers/Default",  # nothing the rollback deletes depends on these two
        "TeardownSafetyNet/Resource/Default",
        "TeardownSafetyNet/DrainBound/Default",  # after the pool
        "TeardownSafetyNet/Handler/Resource",  # after its three custom resources
    ]
    assert sorted(order[5:]) == [
        "TeardownSafetyNet/Logs/Resource",
        "TeardownSafetyNet/Policy/Resource",
        "TeardownSafetyNet/Role/Resource",
    ]
    for status in ("UPDATE_ROLLBACK_IN_PROGRESS", "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS"):
        cloudformation, _ = _status_client(status)
        answers = []
        index.handler(
            {**EVENT, "RequestType": "Delete"},
            Context(FakeTime()),
            clients=lambda cloudformation=cloudformation: {
                "cloudformation": cloudformation,
                "ec2": Untouchable(),
                "iam": Untouchable(),
            },
            respond=lambda e, c, s, reason="", data=None, answers=answers: answers.append((s, reason)),
        )
        assert answers == [("SUCCESS", f"stack status {status}: not a stack deletion, nothing touched")]


def test_critical_paths(lifecycles):
    """`make rehearsal` prints these (pytest -s; the suite keeps them out of its output). The destroy path runs through Karpenter's objects, the safety net,
    the controller, CoreDNS and the controller's hosting before the cluster and the network."""
    report = []
    for name, lifecycle in each(lifecycles.items()):
        create, destroy = lifecycle.schedule("create"), lifecycle.schedule("delete")
        report += [f"== {name}", create.describe(), destroy.describe()]
        milestones = [lifecycle.nodes[k].type for k in destroy.critical_path()]
        karpenter = [
            "Custom::AWSCDK-EKS-KubernetesResource",  # a NodePool
            "Custom::KarpenterTeardown",  # the drain bound
            "Custom::AWSCDK-EKS-KubernetesResource",  # an EC2NodeClass
            "Custom::KarpenterTeardown",  # the safety net
            "Custom::AWSCDK-EKS-HelmChart",
        ]
        if name == "existing":  # then the controller's role; the CRD chart is kept (retained), the cluster stays
            expected = [*karpenter, "AWS::IAM::Role"]
            assert "Custom::AWSCDK-EKS-HelmChart" not in milestones[len(karpenter) :], milestones
        else:
            expected = [
                *karpenter,
                *(
                    ["AWS::EKS::Nodegroup"]
                    if name in ("alternative", "pod_identity")
                    # the CRD chart, then aws-cdk's kubectl barrier, outlive the controller chart
                    else ["Custom::AWSCDK-EKS-HelmChart", "AWS::SSM::Parameter", "Custom::AWSCDK-EKS-FargateProfile"]
                ),
                "Custom::AWSCDK-EKS-Cluster",
                "Custom::KarpenterTeardown",  # the load-balancer cleanup, after the cluster
            ]
        assert milestones[: len(expected)] == expected, (name, milestones)
    print("\n" + "\n".join(report))
    totals = {
        name: (lc.schedule("create").total // 60, lc.schedule("delete").total // 60) for name, lc in lifecycles.items()
    }
    assert totals == {
        "default": (160, 194),
        "alternative": (126, 160),
        "production": (160, 194),
        "existing": (32, 59),  # the CRD chart is kept: no helm uninstall on the path
        "pod_identity": (126, 160),
        "example_windows": (160, 194),
        "example_baseline_and_burst": (160, 194),
    }


# What a plain aws_eks + Karpenter app creates on its way to a NodePool: the network, aws-cdk's cluster (with
# its creation role and kubectl barrier), the controller's capacity, the two charts, the node class and pool.
PLAIN_APP_PATH = {
    "AWS::EC2::VPC",
    "AWS::EC2::Subnet",
    "AWS::EC2::RouteTable",
    "AWS::EC2::SubnetRouteTableAssociation",
    "AWS::EC2::NatGateway",
    "AWS::EC2::Route",
    "AWS::IAM::Role",
    "AWS::IAM::Policy",
    "Custom::AWSCDK-EKS-Cluster",
    "Custom::AWSCDK-EKS-FargateProfile",
    "AWS::EKS::Nodegroup",
    "AWS::SSM::Parameter",
    "Custom::AWSCDK-EKS-HelmChart",
    "Custom::AWSCDK-EKS-KubernetesResource",
}


@pytest.mark.parametrize("configuration", ["default", "alternative", "pod_identity"])
def test_the_create_path_holds_nothing_a_plain_karpenter_app_lacks_but_two_no_op_answers(configuration, lifecycles):
    """No order-only dependency that no delete order needs: the controller waits for its capacity (and, with Pod
    Identity, the agent that hands it credentials), never for CoreDNS (dnsPolicy Default); node classes wait for
    pod networking, not CoreDNS. The only additions to a plain app's path are the safety net's two custom
    resources, whose create is one Lambda answer each and whose place the destroy order needs."""
    create = lifecycles[configuration].schedule("create")
    nodes = [lifecycles[configuration].nodes[k] for k in create.critical_path()]
    extra = [n.path.split("/", 1)[1] for n in nodes if n.type not in PLAIN_APP_PATH]
    assert extra == ["Default/TeardownSafetyNet/Resource/Default", "Default/TeardownSafetyNet/DrainBound/Default"]
    assert "AWS::EKS::Addon" not in {n.type for n in nodes}
