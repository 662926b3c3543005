"""The teardown safety net: its handler against stubbed AWS APIs, its IAM scope, its place in the
delete order."""

from __future__ import annotations

import importlib.util

import boto3
import pytest
from botocore.stub import Stubber

from tests.cfn import kubernetes_objects, only, render, resources
from tests.conftest import ROOT
from tests.test_lifecycle import dependency_graph, depends_transitively

spec = importlib.util.spec_from_file_location("teardown_index", ROOT / "constructs_lib" / "teardown_handler" / "index.py")
index = importlib.util.module_from_spec(spec)
spec.loader.exec_module(index)

CLUSTER, REGION = "eks-karpenter", "eu-west-1"
OWNED = {"Name": "tag:kubernetes.io/cluster/eks-karpenter", "Values": ["owned"]}
INSTANCE_FILTERS = [OWNED, {"Name": "tag-key", "Values": ["karpenter.sh/nodepool"]},
                    {"Name": "instance-state-name", "Values": index.LIVE_STATES}]


class FakeTime:
    def __init__(self):
        self.now, self.sleeps = 0.0, []

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def aws():
    ec2 = boto3.client("ec2", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    iam = boto3.client("iam", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(ec2) as ec2_stub, Stubber(iam) as iam_stub:
        fake = FakeTime()
        teardown = index.Teardown(ec2=ec2, iam=iam, cluster=CLUSTER, region=REGION, drain_timeout=60,
                                  terminate_timeout=30, poll_interval=15, sleep=fake.sleep, clock=fake.clock)
        yield teardown, ec2_stub, iam_stub, fake
        ec2_stub.assert_no_pending_responses()
        iam_stub.assert_no_pending_responses()


def _instances(*ids):
    return {"Reservations": [{"Instances": [{"InstanceId": i} for i in ids]}]} if ids else {"Reservations": []}


def _expect_no_templates_or_profiles(ec2_stub, iam_stub):
    ec2_stub.add_response("describe_launch_templates", {"LaunchTemplates": []}, {"Filters": [OWNED]})
    iam_stub.add_response("list_instance_profiles", {"InstanceProfiles": [], "IsTruncated": False},
                          {"PathPrefix": f"/karpenter/{REGION}/{CLUSTER}/"})


def test_nothing_to_clean(aws):
    teardown, ec2_stub, iam_stub, fake = aws
    ec2_stub.add_response("describe_instances", _instances(), {"Filters": INSTANCE_FILTERS})
    _expect_no_templates_or_profiles(ec2_stub, iam_stub)
    assert teardown.run() == {"terminated": [], "launch_templates": [], "instance_profiles": []}
    assert fake.sleeps == []


def test_waits_for_the_drain_then_terminates_what_is_still_running(aws):
    teardown, ec2_stub, iam_stub, fake = aws
    for _ in range(5):  # t = 0, 15, 30, 45, 60: still there at the drain deadline
        ec2_stub.add_response("describe_instances", _instances("i-0aaa", "i-0bbb"), {"Filters": INSTANCE_FILTERS})
    ec2_stub.add_response("terminate_instances", {"TerminatingInstances": []}, {"InstanceIds": ["i-0aaa", "i-0bbb"]})
    ec2_stub.add_response("describe_instances", _instances(), {"Filters": INSTANCE_FILTERS})
    ec2_stub.add_response("describe_launch_templates",
                          {"LaunchTemplates": [{"LaunchTemplateId": "lt-0123456789abcdef0"}]}, {"Filters": [OWNED]})
    ec2_stub.add_response("delete_launch_template", {}, {"LaunchTemplateId": "lt-0123456789abcdef0"})
    profile = {"Path": f"/karpenter/{REGION}/{CLUSTER}/uid-1/", "InstanceProfileName": "eks-karpenter_123",
               "InstanceProfileId": "AIPAEXAMPLEEXAMPLE001", "Arn": "arn:aws:iam::000000000000:instance-profile/x",
               "CreateDate": "2026-11-01T00:00:00Z", "Roles": [{
                   "Path": "/", "RoleName": "KarpenterNodeRole-eks-karpenter", "RoleId": "AROAEXAMPLEEXAMPLE001",
                   "Arn": "arn:aws:iam::000000000000:role/x", "CreateDate": "2026-11-01T00:00:00Z"}]}
    iam_stub.add_response("list_instance_profiles", {"InstanceProfiles": [profile], "IsTruncated": False},
                          {"PathPrefix": f"/karpenter/{REGION}/{CLUSTER}/"})
    iam_stub.add_response("remove_role_from_instance_profile", {},
                          {"InstanceProfileName": "eks-karpenter_123", "RoleName": "KarpenterNodeRole-eks-karpenter"})
    iam_stub.add_response("delete_instance_profile", {}, {"InstanceProfileName": "eks-karpenter_123"})
    assert teardown.run() == {"terminated": ["i-0aaa", "i-0bbb"], "launch_templates": ["lt-0123456789abcdef0"],
                              "instance_profiles": ["eks-karpenter_123"]}
    assert fake.sleeps == [15, 15, 15, 15]  # bounded: stopped polling at the 60 s drain deadline


def test_drained_instances_are_not_terminated(aws):
    teardown, ec2_stub, iam_stub, fake = aws
    ec2_stub.add_response("describe_instances", _instances("i-0aaa"), {"Filters": INSTANCE_FILTERS})
    ec2_stub.add_response("describe_instances", _instances(), {"Filters": INSTANCE_FILTERS})
    _expect_no_templates_or_profiles(ec2_stub, iam_stub)
    assert teardown.run()["terminated"] == []
    assert fake.sleeps == [15]


def test_other_clusters_are_never_touched(aws):
    """Only this cluster's tag filter and path prefix are ever queried; a profile outside the prefix
    (were IAM to return one) is skipped; no terminate/delete call happens for anything else — the
    Stubber fails on any call not expected here."""
    teardown, ec2_stub, iam_stub, _ = aws
    ec2_stub.add_response("describe_instances", _instances(), {"Filters": INSTANCE_FILTERS})
    ec2_stub.add_response("describe_launch_templates", {"LaunchTemplates": []}, {"Filters": [OWNED]})
    other = {"Path": f"/karpenter/{REGION}/other-cluster/uid/", "InstanceProfileName": "other", "InstanceProfileId":
             "AIPAEXAMPLEEXAMPLE002", "Arn": "arn:aws:iam::000000000000:instance-profile/o",
             "CreateDate": "2026-11-01T00:00:00Z", "Roles": []}
    iam_stub.add_response("list_instance_profiles", {"InstanceProfiles": [other], "IsTruncated": False},
                          {"PathPrefix": f"/karpenter/{REGION}/{CLUSTER}/"})
    assert teardown.run() == {"terminated": [], "launch_templates": [], "instance_profiles": []}


def test_throttling_is_retried_with_backoff(aws):
    teardown, ec2_stub, iam_stub, fake = aws
    ec2_stub.add_client_error("describe_instances", service_error_code="RequestLimitExceeded", http_status_code=503)
    ec2_stub.add_client_error("describe_instances", service_error_code="Throttling", http_status_code=400)
    ec2_stub.add_response("describe_instances", _instances(), {"Filters": INSTANCE_FILTERS})
    _expect_no_templates_or_profiles(ec2_stub, iam_stub)
    assert teardown.run()["terminated"] == []
    assert fake.sleeps == [2, 4]


def test_other_errors_are_not_retried(aws):
    teardown, ec2_stub, _, fake = aws
    ec2_stub.add_client_error("describe_instances", service_error_code="UnauthorizedOperation", http_status_code=403)
    with pytest.raises(Exception, match="UnauthorizedOperation"):
        teardown.run()
    assert fake.sleeps == []


EVENT = {"StackId": "stack", "RequestId": "req", "LogicalResourceId": "Teardown", "ResponseURL": "https://example.invalid"}


def test_create_and_update_do_nothing():
    responses = []
    for request in ("Create", "Update"):
        index.handler({**EVENT, "RequestType": request}, None, teardown_factory=lambda: pytest.fail("no cleanup"),
                      respond=lambda e, c, status, **kw: responses.append(status))
    assert responses == ["SUCCESS", "SUCCESS"]


def test_delete_reports_failure_with_the_reason():
    class Broken:
        def run(self):
            raise RuntimeError("AccessDenied on ec2:TerminateInstances")

    responses = []
    index.handler({**EVENT, "RequestType": "Delete"}, None, teardown_factory=Broken,
                  respond=lambda e, c, status, reason="", data=None: responses.append((status, reason)))
    assert responses == [("FAILED", "Karpenter teardown failed: AccessDenied on ec2:TerminateInstances")]


# --- the construct --------------------------------------------------------------------------------

def _teardown_policy(synthesized) -> list[dict]:
    policies = {k: v for k, v in resources(synthesized.template, "AWS::IAM::ManagedPolicy").items()
                if k.startswith("TeardownSafetyNet")}
    return only(policies)[1]["Properties"]["PolicyDocument"]["Statement"]


def test_teardown_permissions_are_scoped_to_this_cluster(default):
    statements = {s["Sid"]: s for s in _teardown_policy(default)}
    assert statements["TerminateThisClustersKarpenterInstances"]["Action"] == "ec2:TerminateInstances"
    assert statements["TerminateThisClustersKarpenterInstances"]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/eks-karpenter": "owned"},
        "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}}
    assert statements["DeleteThisClustersLaunchTemplates"]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/eks-karpenter": "owned"}}
    profiles = statements["DeleteThisClustersInstanceProfiles"]
    assert profiles["Action"] == ["iam:DeleteInstanceProfile", "iam:RemoveRoleFromInstanceProfile"]
    assert render(profiles["Resource"]).endswith(":instance-profile/karpenter/${Ref:AWS::Region}/eks-karpenter/*")
    assert statements["FindLeftovers"]["Action"] == [
        "ec2:DescribeInstances", "ec2:DescribeLaunchTemplates", "iam:ListInstanceProfiles"]
    writes = {a for s in statements.values() for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
              if not a.startswith(("ec2:Describe", "iam:List", "logs:"))}
    assert writes == {"ec2:TerminateInstances", "ec2:DeleteLaunchTemplate", "iam:RemoveRoleFromInstanceProfile",
                      "iam:DeleteInstanceProfile"}


def test_handler_is_bounded_below_the_lambda_limit(default):
    functions = {k: v for k, v in resources(default.template, "AWS::Lambda::Function").items()
                 if k.startswith("TeardownSafetyNet")}
    props = only(functions)[1]["Properties"]
    assert props["Timeout"] == 840 and props["Runtime"] == "python3.14"
    assert props["Environment"] == {"Variables": {"CLUSTER_NAME": "eks-karpenter"}}
    assert index.Teardown.__init__.__kwdefaults__["drain_timeout"] + \
        index.Teardown.__init__.__kwdefaults__["terminate_timeout"] < 840


@pytest.mark.parametrize("configuration", ["default", "alternative"])
def test_teardown_runs_after_the_manifests_and_before_the_controller_and_aws_auth(configuration, request):
    synthesized = request.getfixturevalue(configuration)
    graph = dependency_graph(synthesized.json)
    (teardown,) = resources(synthesized.template, "Custom::KarpenterTeardown")
    karpenter_objects = [o["_logicalId"] for o in kubernetes_objects(synthesized.template).values()
                         if o["apiVersion"].startswith("karpenter")]
    charts = {r["Properties"]["Release"]: k for k, r in resources(synthesized.template, "Custom::AWSCDK-EKS-HelmChart").items()}
    aws_auth = kubernetes_objects(synthesized.template)["ConfigMap/aws-auth"]["_logicalId"]
    assert karpenter_objects and all(depends_transitively(graph, o, teardown) for o in karpenter_objects)
    assert depends_transitively(graph, teardown, charts["karpenter"])
    assert depends_transitively(graph, teardown, aws_auth)
    policy = next(k for k in resources(synthesized.template, "AWS::IAM::ManagedPolicy") if k.startswith("TeardownSafetyNet"))
    assert depends_transitively(graph, teardown, policy)
