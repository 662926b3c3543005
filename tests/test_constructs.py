"""The construct library's parts, each on a bare stack (no app, no configuration): what a user of one
construct gets from its props."""

from __future__ import annotations

from aws_cdk.assertions import Template

from constructs_lib.karpenter.nag import logical_id_of
from constructs_lib.karpenter.queue_alarms import InterruptionQueueAlarms
from constructs_lib.karpenter.release import KarpenterRelease
from constructs_lib.karpenter.specs.controller import ControllerSpec
from constructs_lib.karpenter.teardown import TeardownSafetyNet
from constructs_lib.network import ClusterVpc
from tests.bare import CLUSTER_NAME, bare_stack, imported_cluster
from tests.cfn import depends_on, only, render_json, resources, teardown

TOPIC = "arn:aws:sns:eu-west-1:111122223333:karpenter-alerts"


def test_cluster_vpc_tags_subnets_for_load_balancers_and_leaves_discovery_to_karpenter():
    stack = bare_stack()
    network = ClusterVpc(
        stack, "Network", cluster_name=CLUSTER_NAME, vpc_id=None, cidr="10.1.0.0/16", max_azs=2, nat_gateways=1
    )
    template = Template.from_stack(stack)
    assert network.created and not network.lookup_pending
    subnets = resources(template, "AWS::EC2::Subnet")
    tags = {k: {t["Key"]: t["Value"] for t in s["Properties"]["Tags"]} for k, s in subnets.items()}
    private = {k: t for k, t in tags.items() if t["aws-cdk:subnet-type"] == "Private"}
    public = {k: t for k, t in tags.items() if t["aws-cdk:subnet-type"] == "Public"}
    assert len(private) == len(public) == 2
    assert all(t["kubernetes.io/role/internal-elb"] == "1" for t in private.values())
    assert all(t["kubernetes.io/role/elb"] == "1" for t in public.values())
    assert not any("karpenter.sh/discovery" in t for t in tags.values())
    assert len(resources(template, "AWS::EC2::NatGateway")) == 1
    _, flow_log = only(resources(template, "AWS::EC2::FlowLog"))
    assert flow_log["Properties"]["TrafficType"] == "ALL"


def test_queue_alarms_notify_the_topic_on_alarm_and_ok():
    stack = bare_stack()
    InterruptionQueueAlarms(stack, "Alarms", queue_name="q", topic_arn=TOPIC)
    alarms = resources(Template.from_stack(stack), "AWS::CloudWatch::Alarm")
    assert sorted(a["Properties"]["MetricName"] for a in alarms.values()) == [
        "ApproximateAgeOfOldestMessage",
        "ApproximateNumberOfMessagesVisible",
    ]
    for alarm in alarms.values():
        assert alarm["Properties"]["AlarmActions"] == alarm["Properties"]["OKActions"] == [TOPIC]
        assert alarm["Properties"]["Dimensions"] == [{"Name": "QueueName", "Value": "q"}]


def test_teardown_safety_net_writes_only_to_this_clusters_karpenter_resources():
    stack = bare_stack()
    net = TeardownSafetyNet(stack, "Teardown", cluster_name=CLUSTER_NAME)
    template = Template.from_stack(stack)
    _, policy = only(resources(template, "AWS::IAM::ManagedPolicy"))
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    owned = {"aws:ResourceTag/kubernetes.io/cluster/bare": "owned"}
    for sid in ("TerminateThisClustersKarpenterInstances", "DeleteThisClustersLaunchTemplates"):
        assert statements[sid]["Condition"] == {
            "StringEquals": owned,
            "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
        }
    assert statements["ReadOwnStackStatus"]["Resource"] == {"Ref": "AWS::StackId"}
    assert "ReadRootStackStatus" not in statements  # a root stack: its own status decides
    (net_id, resource), (bound_id, bound) = teardown(template)
    assert (resource["Properties"]["ServiceTimeout"], bound["Properties"]["ServiceTimeout"]) == ("900", "900")
    assert (net_id, bound_id) == (logical_id_of(net.resource), logical_id_of(net.drain_bound))
    assert bound["Properties"]["ServiceToken"] == resource["Properties"]["ServiceToken"]  # one function
    assert depends_on(template.to_json(), net_id) == depends_on(template.to_json(), bound_id) == []  # the user orders


def test_teardown_safety_net_in_a_nested_stack_may_read_its_root_stacks_status_only():
    """The handler decides by the root stack's status (RootId); the root's id is not known at synth in the nested
    template: CDK passes the root's AWS::StackId down as a parameter, through every level."""
    from aws_cdk import NestedStack

    stack = bare_stack()
    inner = NestedStack(NestedStack(stack, "Platform"), "Karpenter")
    TeardownSafetyNet(inner, "Teardown", cluster_name=CLUSTER_NAME)
    template = Template.from_stack(inner).to_json()
    (parameter,) = template["Parameters"]
    _, policy = only({k: r for k, r in template["Resources"].items() if r["Type"] == "AWS::IAM::ManagedPolicy"})
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert statements["ReadOwnStackStatus"]["Resource"] == {"Ref": "AWS::StackId"}
    assert statements["ReadRootStackStatus"] == {
        "Sid": "ReadRootStackStatus",
        "Effect": "Allow",
        "Action": "cloudformation:DescribeStacks",
        "Resource": {"Ref": parameter},
    }
    # the root stack hands its own id to the first nested stack, which hands it on
    (platform,) = [r for r in Template.from_stack(stack).to_json()["Resources"].values() if r["Type"].endswith("Stack")]
    assert platform["Properties"]["Parameters"] == {parameter: {"Ref": "AWS::StackId"}}


def test_karpenter_release_installs_the_crd_chart_then_the_controller_with_the_given_values():
    stack = bare_stack()
    values = {"settings": {"clusterName": CLUSTER_NAME}, "controller": {"resources": ControllerSpec().resources()}}
    release = KarpenterRelease(
        stack, "Release", cluster=imported_cluster(stack), version="1.14.1", namespace="karpenter", values=values
    )
    template = Template.from_stack(stack)
    charts = resources(template, "Custom::AWSCDK-EKS-HelmChart")
    crd, controller = (charts[logical_id_of(c)]["Properties"] for c in (release.crd_chart, release.controller_chart))
    assert (crd["Chart"], crd["Repository"], crd["CreateNamespace"], "Wait" in crd) == (
        "karpenter-crd",
        "oci://public.ecr.aws/karpenter/karpenter-crd",
        True,
        False,
    )  # no pods to wait for
    assert (controller["Chart"], controller["SkipCrds"], controller["Wait"], controller["Namespace"]) == (
        "karpenter",
        True,
        True,
        "karpenter",
    )
    assert render_json(controller["Values"]) == values
    assert depends_on(template.to_json(), logical_id_of(release.controller_chart)) == [logical_id_of(release.crd_chart)]


def test_node_classes_size_the_volume_that_holds_images_at_the_familys_device():
    from constructs_lib.karpenter.specs.node_class import NodeClassSpec

    def devices(alias: str) -> list[tuple[str, str]]:
        spec = NodeClassSpec(ami_alias=alias, root_volume_size_gib=80).manifest(cluster_name="c", node_role_name="r")[
            "spec"
        ]
        return [(d["deviceName"], d["ebs"]["volumeSize"]) for d in spec["blockDeviceMappings"]]

    assert devices("al2023@latest") == [("/dev/xvda", "80Gi")]
    # Bottlerocket keeps its 4 GiB OS volume; the size goes to the data volume (a list replaces all defaults)
    assert devices("bottlerocket@latest") == [("/dev/xvda", "4Gi"), ("/dev/xvdb", "80Gi")]
