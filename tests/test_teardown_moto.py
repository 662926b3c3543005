"""The teardown handler against moto's EC2 and IAM: real tag filters, instance states and paging
behaviour, two clusters and a managed node group side by side. The stack status comes from a
Stubber-backed CloudFormation client (moto's CloudFormation needs a much larger install)."""

from __future__ import annotations

import functools

import boto3
import botocore.session
import pytest
from moto import mock_aws

from tests.conftest import ROOT
from tests.test_teardown import (
    CLUSTER,
    NESTED_ID,
    REGION,
    STACK_ID,
    Context,
    FakeTime,
    _nested_status_client,
    _status_client,
    index,
)

OTHER = "other-cluster"
NODE_ROLE = f"KarpenterNodeRole-{CLUSTER}"
AMI = "ami-12c6146b"  # the one AMI of tests/data/moto_amis.json


def _tags(cluster, nodepool=True, **extra):
    tags = {f"kubernetes.io/cluster/{cluster}": "owned", "eks:eks-cluster-name": cluster, **extra}
    if nodepool:
        tags["karpenter.sh/nodepool"] = "default"
    return [{"Key": k, "Value": v} for k, v in tags.items()]


@pytest.fixture(scope="module", autouse=True)
def one_model_loader():
    """moto gives each test a boto3 session of its own, and each session parsed botocore's service models again (the
    run's largest garbage: about 185,000 parsed JSON objects in cycles, 1 s of this module's 4.6): the sessions of this
    module share one loader, which keeps each model once (what a model holds does not depend on the session)."""
    shared = functools.cache(botocore.session.create_loader)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(botocore.session, "create_loader", shared)
        yield


@pytest.fixture
def world(monkeypatch):
    """This cluster's Karpenter nodes, launch templates and instance profiles; its managed node group's
    instance and launch template; and another cluster's Karpenter resources."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("CLUSTER_NAME", CLUSTER)
    # One AMI instead of moto's built-in catalogue, whose loading took 2 of these tests' 3 seconds.
    monkeypatch.setenv("MOTO_AMIS_PATH", str(ROOT / "tests" / "data" / "moto_amis.json"))
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        iam = boto3.client("iam", region_name=REGION)

        def instances(count, tags):
            reservation = ec2.run_instances(
                ImageId=AMI,
                MinCount=count,
                MaxCount=count,
                InstanceType="m5.large",
                TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
            )
            return sorted(i["InstanceId"] for i in reservation["Instances"])

        def template(name, tags):
            return ec2.create_launch_template(
                LaunchTemplateName=name,
                LaunchTemplateData={"ImageId": AMI},
                TagSpecifications=[{"ResourceType": "launch-template", "Tags": tags}],
            )["LaunchTemplate"]["LaunchTemplateId"]

        def profile(name, path, role):
            iam.create_instance_profile(InstanceProfileName=name, Path=path)
            iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=role)

        trust = '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}'
        for role in (NODE_ROLE, f"KarpenterNodeRole-{OTHER}"):
            iam.create_role(RoleName=role, AssumeRolePolicyDocument=trust)
        world = {
            "ec2": ec2,
            "iam": iam,
            "ours": instances(3, _tags(CLUSTER)),
            # more than one page of moto's describe_launch_templates (15, without a NextToken)
            "our_templates": sorted(template(f"karpenter.k8s.aws/{i}", _tags(CLUSTER)) for i in range(16)),
            "nodegroup": instances(1, _tags(CLUSTER, nodepool=False, **{"eks:nodegroup-name": "system"})),
            "nodegroup_template": template("eks-system-nodegroup", _tags(CLUSTER, nodepool=False)),
            "theirs": instances(2, _tags(OTHER)),
            "their_template": template("karpenter.k8s.aws/other", _tags(OTHER)),
        }
        profile(f"{CLUSTER}_1111", f"/karpenter/{REGION}/{CLUSTER}/uid-1/", NODE_ROLE)
        profile(f"{CLUSTER}_2222", f"/karpenter/{REGION}/{CLUSTER}/uid-2/", NODE_ROLE)
        profile(f"{OTHER}_3333", f"/karpenter/{REGION}/{OTHER}/uid-3/", f"KarpenterNodeRole-{OTHER}")
        profile("unrelated", "/", NODE_ROLE)
        yield world


def _states(ec2, ids):
    reservations = ec2.describe_instances(InstanceIds=ids)["Reservations"]
    return {i["InstanceId"]: i["State"]["Name"] for r in reservations for i in r["Instances"]}


def _templates(ec2):
    return sorted(t["LaunchTemplateId"] for t in ec2.describe_launch_templates(MaxResults=200)["LaunchTemplates"])


def _profiles(iam):
    return sorted(p["InstanceProfileName"] for p in iam.list_instance_profiles()["InstanceProfiles"])


def _handle(status, clients, properties, budget_ms=840_000, nested_in=None, **options):
    """The handler's answers to a Delete while the stack is in ``status``: (status, data, reason, answered at).
    ``nested_in``: the resource's stack is nested, its root stack in that status."""
    if nested_in is None:
        cloudformation, _ = _status_client(status)
    else:
        cloudformation, _ = _nested_status_client(status, nested_in)
    fake = FakeTime()
    responses = []
    index.handler(
        {
            "RequestType": "Delete",
            "StackId": STACK_ID if nested_in is None else NESTED_ID,
            "RequestId": "r",
            "LogicalResourceId": "TeardownSafetyNet",
            "ResponseURL": "https://example.invalid",
            "ResourceProperties": {"ClusterName": CLUSTER, **properties},
        },
        Context(fake, budget_ms),
        clients=lambda: {"cloudformation": cloudformation, **clients},
        respond=lambda e, c, status, reason="", data=None: responses.append((status, data, reason, fake.now)),
        sleep=fake.sleep,
        clock=fake.clock,
        **options,
    )
    return responses


def _delete(world, status, budget_ms=840_000, properties=None, nested_in=None):
    clients = {"ec2": world["ec2"], "iam": world["iam"]}
    answers = _handle(
        status, clients, properties or {}, budget_ms, nested_in=nested_in, drain_timeout=60, poll_interval=15
    )
    return [(answer, data, at) for answer, data, _, at in answers]


def _snapshot(world):
    ec2, iam = world["ec2"], world["iam"]
    every = world["ours"] + world["nodegroup"] + world["theirs"]
    return _states(ec2, every), _templates(ec2), _profiles(iam)


def test_rollbacks_touch_nothing_then_the_stack_deletion_removes_exactly_this_clusters_karpenter_resources(world):
    """One lifecycle in one account: updates that roll back or replace the safety net (or, in a nested stack,
    the parent's update, rollback or cleanup) change nothing;
    the later stack deletion removes this cluster's Karpenter resources and nothing else; a retried
    deletion finds nothing left."""
    ec2, iam = world["ec2"], world["iam"]
    before = _snapshot(world)
    assert set(before[0].values()) == {"running"} and len(before[1]) == 18 and len(before[2]) == 4
    for status in (
        "UPDATE_ROLLBACK_IN_PROGRESS",
        "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS",
        "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS",
    ):
        assert [r[0] for r in _delete(world, status)] == ["SUCCESS"]
        assert _snapshot(world) == before, status
    # The construct inside a nested stack that the parent's update or rollback removes or replaces: the nested
    # stack's own status reads DELETE_IN_PROGRESS, the root's does not (the root's deletion: tests/test_teardown.py).
    for root in ("UPDATE_IN_PROGRESS", "UPDATE_ROLLBACK_IN_PROGRESS", "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS"):
        assert [r[0] for r in _delete(world, "DELETE_IN_PROGRESS", nested_in=root)] == ["SUCCESS"]
        assert _snapshot(world) == before, f"nested, root {root}"

    ((status, data, answered_at),) = _delete(world, "DELETE_IN_PROGRESS")
    assert status == "SUCCESS"
    assert data == {"terminated": "3", "launch_templates": "16", "instance_profiles": "2"}
    assert answered_at <= 840 - index.RESERVE
    states = _states(ec2, world["ours"] + world["nodegroup"] + world["theirs"])
    assert {i: states[i] for i in world["ours"]} == {i: "terminated" for i in world["ours"]}
    # the node group's instance and launch template carry the cluster tag, not the nodepool tag
    assert {i: states[i] for i in world["nodegroup"] + world["theirs"]} == {
        i: "running" for i in world["nodegroup"] + world["theirs"]
    }
    assert _templates(ec2) == sorted([world["nodegroup_template"], world["their_template"]])
    # moto ignores PathPrefix, as a misbehaving API might: the handler's own path check keeps the others
    assert _profiles(iam) == sorted([f"{OTHER}_3333", "unrelated"])

    ((status, data, _),) = _delete(world, "DELETE_IN_PROGRESS")
    assert (status, data) == ("SUCCESS", {"terminated": "0", "launch_templates": "0", "instance_profiles": "0"})


def test_a_destroy_bounds_the_drains_first_then_removes_what_the_classes_left(world):
    """The destroy order: the drain bound (after the NodePools) terminates the nodes that have not drained
    and nothing else; the safety net (after the EC2NodeClasses) then finds no instance and removes the
    launch templates and instance profiles."""
    ec2, iam = world["ec2"], world["iam"]
    templates, profiles = _templates(ec2), _profiles(iam)
    ((status, data, answered_at),) = _delete(world, "DELETE_IN_PROGRESS", properties={"Phase": "Instances"})
    assert (status, data) == ("SUCCESS", {"terminated": "3", "launch_templates": "0", "instance_profiles": "0"})
    assert answered_at == 60  # the drain timeout: the nodes had not gone on their own
    states = _states(ec2, world["ours"] + world["nodegroup"] + world["theirs"])
    assert sorted(i for i, state in states.items() if state == "terminated") == world["ours"]
    assert (_templates(ec2), _profiles(iam)) == (templates, profiles)

    ((status, data, answered_at),) = _delete(world, "DELETE_IN_PROGRESS")
    assert (status, data) == ("SUCCESS", {"terminated": "0", "launch_templates": "16", "instance_profiles": "2"})
    assert answered_at == 0  # no wait: nothing left to drain


def test_on_a_shared_cluster_only_this_stacks_pools_and_classes_are_touched(world):
    """An existing cluster (existingCluster): other teams run Karpenter pools on it too, with the same cluster
    tag. The resource's properties name this stack's pools and classes, and nothing else is touched -- on the
    stack deletion, and on a failed create (ROLLBACK_IN_PROGRESS)."""
    ec2, iam = world["ec2"], world["iam"]

    def tagged(pool, node_class):
        return _tags(CLUSTER, nodepool=False, **{"karpenter.sh/nodepool": pool, index.NODECLASS_TAG: node_class})

    ours = sorted(
        ec2.run_instances(
            ImageId=AMI,
            MinCount=2,
            MaxCount=2,
            InstanceType="m5.large",
            TagSpecifications=[{"ResourceType": "instance", "Tags": tagged("payments", "payments")}],
        )["Instances"][i]["InstanceId"]
        for i in range(2)
    )
    team_b = ec2.run_instances(
        ImageId=AMI,
        MinCount=1,
        MaxCount=1,
        InstanceType="m5.large",
        TagSpecifications=[{"ResourceType": "instance", "Tags": tagged("search", "search")}],
    )["Instances"][0]["InstanceId"]
    our_template = ec2.create_launch_template(
        LaunchTemplateName="karpenter.k8s.aws/payments",
        LaunchTemplateData={"ImageId": AMI},
        TagSpecifications=[{"ResourceType": "launch-template", "Tags": tagged("payments", "payments")}],
    )["LaunchTemplate"]["LaunchTemplateId"]
    their_template = ec2.create_launch_template(
        LaunchTemplateName="karpenter.k8s.aws/search",
        LaunchTemplateData={"ImageId": AMI},
        TagSpecifications=[{"ResourceType": "launch-template", "Tags": tagged("search", "search")}],
    )["LaunchTemplate"]["LaunchTemplateId"]
    for name, node_class in ((f"{CLUSTER}_pay", "payments"), (f"{CLUSTER}_search", "search")):
        iam.create_instance_profile(
            InstanceProfileName=name,
            Path=f"/karpenter/{REGION}/{CLUSTER}/uid-{node_class}/",
            Tags=[{"Key": index.NODECLASS_TAG, "Value": node_class}],
        )
    scope = {"NodePools": ["payments"], "NodeClasses": ["payments"]}
    for status in ("ROLLBACK_IN_PROGRESS", "DELETE_IN_PROGRESS"):
        ((answer, _, _),) = _delete(world, status, properties=scope)
        assert answer == "SUCCESS"
        states = _states(ec2, [*ours, team_b, *world["ours"]])
        assert {i: states[i] for i in ours} == {i: "terminated" for i in ours}
        # another team's pool on the same cluster, and this cluster's Karpenter nodes of no pool of ours
        assert {i: states[i] for i in [team_b, *world["ours"]]} == {i: "running" for i in [team_b, *world["ours"]]}
        templates = _templates(ec2)
        assert our_template not in templates and their_template in templates
        assert set(world["our_templates"]) <= set(templates)
        assert f"{CLUSTER}_pay" not in _profiles(iam)
        assert {f"{CLUSTER}_search", f"{CLUSTER}_1111", f"{CLUSTER}_2222"} <= set(_profiles(iam))


# --- load balancers that the cluster's Services left (a cluster the stack created) -----------------------


@pytest.fixture
def services(monkeypatch):
    """A VPC with what Kubernetes made for this cluster's Services -- a classic ELB and its k8s-elb-*
    security group (in-tree cloud provider), an NLB and its security group (AWS Load Balancer Controller) --
    next to what must stay: another cluster's load balancer, an untagged one, this cluster's EKS-style
    security group (cluster tag, not a load balancer's), this cluster's load balancer in another VPC, and a
    Karpenter node of the cluster (the other phases' business)."""
    for key, value in (
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_DEFAULT_REGION", REGION),
    ):
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("CLUSTER_NAME", CLUSTER)
    monkeypatch.setenv("MOTO_AMIS_PATH", str(ROOT / "tests" / "data" / "moto_amis.json"))
    with mock_aws():
        yield _services()


def _services():
    ec2, iam = boto3.client("ec2", region_name=REGION), boto3.client("iam", region_name=REGION)
    elb, elbv2 = boto3.client("elb", region_name=REGION), boto3.client("elbv2", region_name=REGION)
    node = ec2.run_instances(
        ImageId=AMI,
        MinCount=1,
        MaxCount=1,
        InstanceType="m5.large",
        TagSpecifications=[{"ResourceType": "instance", "Tags": _tags(CLUSTER)}],
    )["Instances"][0]["InstanceId"]

    def network(cidr):
        vpc = ec2.create_vpc(CidrBlock=cidr)["Vpc"]["VpcId"]
        subnets = [
            ec2.create_subnet(
                VpcId=vpc, CidrBlock=cidr.replace("0.0/16", f"{i}.0/24"), AvailabilityZone=f"{REGION}{z}"
            )["Subnet"]["SubnetId"]
            for i, z in ((1, "a"), (2, "b"))
        ]
        return vpc, subnets

    def group(vpc, name, tags):
        return ec2.create_security_group(
            GroupName=name,
            Description=name,
            VpcId=vpc,
            TagSpecifications=[
                {"ResourceType": "security-group", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
            ],
        )["GroupId"]

    def classic(name, subnets, groups, tags):
        elb.create_load_balancer(
            LoadBalancerName=name,
            Listeners=[{"Protocol": "TCP", "LoadBalancerPort": 80, "InstancePort": 30080}],
            Subnets=subnets,
            SecurityGroups=groups,
            Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
        )
        return name

    def nlb(name, subnets, groups, tags):
        return elbv2.create_load_balancer(
            Name=name,
            Subnets=subnets,
            SecurityGroups=groups,
            Type="network",
            Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
        )["LoadBalancers"][0]["LoadBalancerName"]

    owned = {f"kubernetes.io/cluster/{CLUSTER}": "owned"}
    controller = {"elbv2.k8s.aws/cluster": CLUSTER, "service.k8s.aws/stack": "web/api"}
    vpc, subnets = network("10.20.0.0/16")
    other_vpc, other_subnets = network("10.30.0.0/16")
    in_tree_group = group(vpc, "k8s-elb-a1b2c3", {**owned, "kubernetes.io/service-name": "web/front"})
    controller_group = group(vpc, "k8s-web-api-0f1e2d", controller)
    cluster_group = group(vpc, "eks-cluster-sg-eks-karpenter", owned)
    other_cluster_group = group(vpc, "k8s-elb-d4e5f6", {f"kubernetes.io/cluster/{OTHER}": "owned"})
    return {
        "ec2": ec2,
        "iam": iam,
        "node": node,
        "elb": elb,
        "elbv2": elbv2,
        "vpc": vpc,
        "our_load_balancers": sorted(
            [
                classic("a1b2c3", subnets, [in_tree_group], {**owned, "kubernetes.io/service-name": "web/front"}),
                nlb("k8s-web-api-0f1e2d", subnets, [controller_group], controller),
            ]
        ),
        "our_groups": sorted([in_tree_group, controller_group]),
        "other_load_balancers": sorted(
            [
                classic("d4e5f6", subnets, [other_cluster_group], {f"kubernetes.io/cluster/{OTHER}": "owned"}),
                nlb("hand-made", subnets, [], {"team": "web"}),
                classic("elsewhere", other_subnets, [], owned),
            ]
        ),
        "stay_groups": sorted([cluster_group, other_cluster_group]),
    }


def _load_balancers(services):
    classic = [lb["LoadBalancerName"] for lb in services["elb"].describe_load_balancers()["LoadBalancerDescriptions"]]
    current = [lb["LoadBalancerName"] for lb in services["elbv2"].describe_load_balancers()["LoadBalancers"]]
    return sorted(classic + current)


def _groups(services):
    found = services["ec2"].describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [services["vpc"]]}])
    return sorted(g["GroupId"] for g in found["SecurityGroups"] if g["GroupName"] != "default")


def _clean(services, status):
    clients = {k: services[k] for k in ("ec2", "iam", "elb", "elbv2")}
    answers = _handle(status, clients, {"Phase": "LoadBalancers", "VpcId": services["vpc"]})
    return [(answer, reason, data) for answer, data, reason, _ in answers]


def test_the_stack_deletion_removes_this_clusters_service_load_balancers_and_their_security_groups(services):
    """After the cluster, before the subnets: exactly the load balancers and security groups tagged for this
    cluster in its VPC go; an update rollback or replacement touches nothing; a retry finds nothing."""
    before = (_load_balancers(services), _groups(services))
    assert before == (
        sorted(services["our_load_balancers"] + services["other_load_balancers"]),
        sorted(services["our_groups"] + services["stay_groups"]),
    )
    for status in ("UPDATE_ROLLBACK_IN_PROGRESS", "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS"):
        assert [r[0] for r in _clean(services, status)] == ["SUCCESS"]
        assert (_load_balancers(services), _groups(services)) == before
    assert _clean(services, "DELETE_IN_PROGRESS") == [("SUCCESS", "", {"load_balancers": "2", "security_groups": "2"})]
    assert _load_balancers(services) == services["other_load_balancers"]
    assert _groups(services) == services["stay_groups"]
    assert _clean(services, "DELETE_IN_PROGRESS") == [("SUCCESS", "", {"load_balancers": "0", "security_groups": "0"})]
    # Instances are the other phases' business.
    assert _states(services["ec2"], [services["node"]]) == {services["node"]: "running"}
