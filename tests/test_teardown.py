"""The teardown safety net: its handler against stubbed AWS APIs, its IAM scope, its place in the
delete order."""

from __future__ import annotations

import importlib.util

import boto3
import pytest
from botocore.stub import Stubber

from tests.cfn import kubernetes_objects, load_balancer_cleanups, only, render, resources, teardown
from tests.conftest import ROOT
from tests.test_lifecycle import dependency_graph
from tooling.review.lifecycle_model import depends_transitively

spec = importlib.util.spec_from_file_location(
    "teardown_index", ROOT / "constructs_lib" / "karpenter" / "teardown_handler" / "index.py"
)
index = importlib.util.module_from_spec(spec)
spec.loader.exec_module(index)

CLUSTER, REGION = "eks-karpenter", "eu-west-1"
OWNED = {"Name": "tag:kubernetes.io/cluster/eks-karpenter", "Values": ["owned"]}
KARPENTER = [OWNED, {"Name": "tag-key", "Values": ["karpenter.sh/nodepool"]}]
INSTANCE_FILTERS = [*KARPENTER, {"Name": "instance-state-name", "Values": index.LIVE_STATES}]
STACK_ID = "arn:aws:cloudformation:eu-west-1:000000000000:stack/eks-karpenter/0a1b2c3d-0000-4000-8000-000000000000"


class FakeTime:
    def __init__(self):
        self.now, self.sleeps = 0.0, []

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def _client(service):
    return boto3.client(service, region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")


@pytest.fixture
def aws():
    ec2, iam = _client("ec2"), _client("iam")
    with Stubber(ec2) as ec2_stub, Stubber(iam) as iam_stub:
        fake = FakeTime()
        teardown = index.Teardown(
            ec2=ec2,
            iam=iam,
            cluster=CLUSTER,
            region=REGION,
            deadline=600,
            drain_timeout=60,
            terminate_timeout=30,
            poll_interval=15,
            sleep=fake.sleep,
            clock=fake.clock,
        )
        yield teardown, ec2_stub, iam_stub, fake
        ec2_stub.assert_no_pending_responses()
        iam_stub.assert_no_pending_responses()


def _instances(*ids):
    return {"Reservations": [{"Instances": [{"InstanceId": i} for i in ids]}]} if ids else {"Reservations": []}


def _templates(*ids):
    return {"LaunchTemplates": [{"LaunchTemplateId": i} for i in ids]}


def _expect_no_templates_or_profiles(ec2_stub, iam_stub):
    ec2_stub.add_response("describe_launch_templates", _templates(), {"Filters": KARPENTER})
    iam_stub.add_response(
        "list_instance_profiles",
        {"InstanceProfiles": [], "IsTruncated": False},
        {"PathPrefix": f"/karpenter/{REGION}/{CLUSTER}/"},
    )


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
    ec2_stub.add_response("describe_launch_templates", _templates("lt-0123456789abcdef0"), {"Filters": KARPENTER})
    ec2_stub.add_response("delete_launch_template", {}, {"LaunchTemplateId": "lt-0123456789abcdef0"})
    ec2_stub.add_response("describe_launch_templates", _templates(), {"Filters": KARPENTER})
    profile = {
        "Path": f"/karpenter/{REGION}/{CLUSTER}/uid-1/",
        "InstanceProfileName": "eks-karpenter_123",
        "InstanceProfileId": "AIPAEXAMPLEEXAMPLE001",
        "Arn": "arn:aws:iam::000000000000:instance-profile/x",
        "CreateDate": "2026-11-01T00:00:00Z",
        "Roles": [
            {
                "Path": "/",
                "RoleName": "KarpenterNodeRole-eks-karpenter",
                "RoleId": "AROAEXAMPLEEXAMPLE001",
                "Arn": "arn:aws:iam::000000000000:role/x",
                "CreateDate": "2026-11-01T00:00:00Z",
            }
        ],
    }
    iam_stub.add_response(
        "list_instance_profiles",
        {"InstanceProfiles": [profile], "IsTruncated": False},
        {"PathPrefix": f"/karpenter/{REGION}/{CLUSTER}/"},
    )
    iam_stub.add_response(
        "remove_role_from_instance_profile",
        {},
        {"InstanceProfileName": "eks-karpenter_123", "RoleName": "KarpenterNodeRole-eks-karpenter"},
    )
    iam_stub.add_response("delete_instance_profile", {}, {"InstanceProfileName": "eks-karpenter_123"})
    assert teardown.run() == {
        "terminated": ["i-0aaa", "i-0bbb"],
        "launch_templates": ["lt-0123456789abcdef0"],
        "instance_profiles": ["eks-karpenter_123"],
    }
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
    ec2_stub.add_response("describe_launch_templates", _templates(), {"Filters": KARPENTER})
    other = {
        "Path": f"/karpenter/{REGION}/other-cluster/uid/",
        "InstanceProfileName": "other",
        "InstanceProfileId": "AIPAEXAMPLEEXAMPLE002",
        "Arn": "arn:aws:iam::000000000000:instance-profile/o",
        "CreateDate": "2026-11-01T00:00:00Z",
        "Roles": [],
    }
    iam_stub.add_response(
        "list_instance_profiles",
        {"InstanceProfiles": [other], "IsTruncated": False},
        {"PathPrefix": f"/karpenter/{REGION}/{CLUSTER}/"},
    )
    assert teardown.run() == {"terminated": [], "launch_templates": [], "instance_profiles": []}


def test_throttling_is_retried_with_backoff(aws):
    teardown, ec2_stub, iam_stub, fake = aws
    ec2_stub.add_client_error("describe_instances", service_error_code="RequestLimitExceeded", http_status_code=503)
    ec2_stub.add_client_error("describe_instances", service_error_code="Throttling", http_status_code=400)
    ec2_stub.add_response("describe_instances", _instances(), {"Filters": INSTANCE_FILTERS})
    _expect_no_templates_or_profiles(ec2_stub, iam_stub)
    assert teardown.run()["terminated"] == []
    assert fake.sleeps == [2, 4]


def test_throttling_retries_are_bounded(aws):
    teardown, ec2_stub, _, fake = aws
    for _ in range(5):
        ec2_stub.add_client_error("describe_instances", service_error_code="Throttling", http_status_code=400)
    with pytest.raises(Exception, match="Throttling"):
        teardown.run()
    assert fake.sleeps == [2, 4, 8, 16]  # max_attempts 5, backoff capped at 16 s: 30 s at worst


def test_a_retry_that_would_pass_the_deadline_is_not_slept(aws):
    teardown, ec2_stub, _, fake = aws
    teardown.deadline = 5
    ec2_stub.add_client_error("describe_instances", service_error_code="Throttling", http_status_code=400)
    ec2_stub.add_client_error("describe_instances", service_error_code="Throttling", http_status_code=400)
    with pytest.raises(index.OutOfTime, match="throttled with 3 s left"):
        teardown.run()
    assert fake.sleeps == [2]


def test_other_errors_are_not_retried(aws):
    teardown, ec2_stub, _, fake = aws
    ec2_stub.add_client_error("describe_instances", service_error_code="UnauthorizedOperation", http_status_code=403)
    with pytest.raises(Exception, match="UnauthorizedOperation"):
        teardown.run()
    assert fake.sleeps == []


def test_drain_and_termination_waits_shrink_to_fit_the_invocation(aws):
    """With 300 s of budget the 60 s drain fits, but the termination wait is cut so that launch
    templates and instance profiles still get their reserve before the deadline."""
    teardown, ec2_stub, iam_stub, fake = aws
    teardown.drain_timeout, teardown.terminate_timeout, teardown.deadline = 480, 180, 300
    # drain until min(480, 300 - 60 - 180) = 60: polls at 0, 15, 30, 45, 60
    for _ in range(5):
        ec2_stub.add_response("describe_instances", _instances("i-0aaa"), {"Filters": INSTANCE_FILTERS})
    ec2_stub.add_response("terminate_instances", {"TerminatingInstances": []}, {"InstanceIds": ["i-0aaa"]})
    # termination wait until min(60 + 180, 300 - 60) = 240: polls at 60, 75 ... 240, then gives up
    for _ in range(13):
        ec2_stub.add_response("describe_instances", _instances("i-0aaa"), {"Filters": INSTANCE_FILTERS})
    _expect_no_templates_or_profiles(ec2_stub, iam_stub)
    assert teardown.run()["terminated"] == ["i-0aaa"]
    assert fake.now == 240 == teardown.deadline - index.CLEANUP_RESERVE


# --- the handler: when it acts, and that it always answers ---------------------------------------

EVENT = {
    "StackId": STACK_ID,
    "RequestId": "req",
    "LogicalResourceId": "Teardown",
    "ResponseURL": "https://example.invalid",
    "PhysicalResourceId": "karpenter-teardown-eks-karpenter",
}


class Context:
    """A Lambda context whose remaining time follows the fake clock."""

    def __init__(self, fake, budget_ms=840_000):
        self.fake, self.end = fake, fake.now + budget_ms / 1000

    def get_remaining_time_in_millis(self):
        return int((self.end - self.fake.now) * 1000)


@pytest.fixture
def lambda_env(monkeypatch):
    monkeypatch.setenv("CLUSTER_NAME", CLUSTER)
    monkeypatch.setenv("AWS_REGION", REGION)


def _run_handler(request_type, clients, fake, properties=None, stack_id=STACK_ID, **options):
    responses = []
    index.handler(
        {**EVENT, "StackId": stack_id, "RequestType": request_type, "ResourceProperties": properties or {}},
        Context(fake),
        clients=lambda: clients,
        respond=lambda e, c, status, reason="", data=None: responses.append((status, reason, fake.now)),
        sleep=fake.sleep,
        clock=fake.clock,
        **options,
    )
    return responses


def _status_client(*statuses):
    """A CloudFormation client stubbed to report these stack statuses, request validated."""
    cloudformation = _client("cloudformation")
    stub = Stubber(cloudformation)
    for status in statuses:
        stub.add_response(
            "describe_stacks",
            {
                "Stacks": [
                    {
                        "StackName": CLUSTER,
                        "StackId": STACK_ID,
                        "CreationTime": "2026-11-01T00:00:00Z",
                        "StackStatus": status,
                    }
                ]
            },
            {"StackName": STACK_ID},
        )
    stub.activate()
    return cloudformation, stub


NESTED_ID = "arn:aws:cloudformation:eu-west-1:000000000000:stack/eks-karpenter-Platform-1A2B3C/1f2e3d4c-0000-4000-8000-000000000000"


def _stack(status, stack_id=STACK_ID, root=None):
    """A DescribeStacks record; ``root``: the RootId (and ParentId) of a nested stack."""
    record = {"StackName": stack_id.split("/")[1], "StackId": stack_id, "CreationTime": "2026-11-01T00:00:00Z"}
    return {**record, "StackStatus": status, **({"RootId": root, "ParentId": root} if root else {})}


def _nested_status_client(own, root):
    """A CloudFormation client for a resource of a nested stack (own status ``own``) whose root stack reads
    ``root`` (None: the root's status cannot be read), requests validated: its own stack, then the root."""
    cloudformation = _client("cloudformation")
    stub = Stubber(cloudformation)
    stub.add_response("describe_stacks", {"Stacks": [_stack(own, NESTED_ID, root=STACK_ID)]}, {"StackName": NESTED_ID})
    if root is None:
        stub.add_client_error("describe_stacks", service_error_code="AccessDenied", http_status_code=403)
    else:
        stub.add_response("describe_stacks", {"Stacks": [_stack(root)]}, {"StackName": STACK_ID})
    stub.activate()
    return cloudformation, stub


class Untouchable:
    """Any call on it fails the test: the handler must not even look."""

    def __getattr__(self, name):
        pytest.fail(f"unexpected AWS call {name}")


def test_create_and_update_do_nothing(lambda_env):
    fake = FakeTime()
    for request in ("Create", "Update"):
        assert _run_handler(
            request, {"cloudformation": Untouchable(), "ec2": Untouchable(), "iam": Untouchable()}, fake
        ) == [("SUCCESS", "", 0)]


@pytest.mark.parametrize(
    "status",
    [
        "UPDATE_ROLLBACK_IN_PROGRESS",
        "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS",
        "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS",
        "UPDATE_IN_PROGRESS",
    ],
)
def test_a_delete_that_is_not_a_stack_deletion_touches_nothing(status, lambda_env):
    """An update rollback, the cleanup after a replacement (logical id change), or any other update:
    the live nodes, launch templates and instance profiles stay."""
    cloudformation, stub = _status_client(status)
    fake = FakeTime()
    responses = _run_handler(
        "Delete", {"cloudformation": cloudformation, "ec2": Untouchable(), "iam": Untouchable()}, fake
    )
    assert responses == [("SUCCESS", f"stack status {status}: not a stack deletion, nothing touched", 0)]
    stub.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("own", "root", "act", "read"),
    [
        # a stack that is its own root (the app's stacks): its own status decides, as before
        ("DELETE_IN_PROGRESS", None, True, "stack status DELETE_IN_PROGRESS"),
        ("ROLLBACK_IN_PROGRESS", None, True, "stack status ROLLBACK_IN_PROGRESS"),
        ("UPDATE_ROLLBACK_IN_PROGRESS", None, False, "stack status UPDATE_ROLLBACK_IN_PROGRESS"),
        ("UPDATE_COMPLETE_CLEANUP_IN_PROGRESS", None, False, "stack status UPDATE_COMPLETE_CLEANUP_IN_PROGRESS"),
        # a nested stack: the root's status decides, whatever its own says
        ("DELETE_IN_PROGRESS", "DELETE_IN_PROGRESS", True, "root stack status DELETE_IN_PROGRESS"),
        ("DELETE_IN_PROGRESS", "ROLLBACK_IN_PROGRESS", True, "root stack status ROLLBACK_IN_PROGRESS"),
        ("DELETE_IN_PROGRESS", "UPDATE_IN_PROGRESS", False, "root stack status UPDATE_IN_PROGRESS"),
        ("DELETE_IN_PROGRESS", "UPDATE_ROLLBACK_IN_PROGRESS", False, "root stack status UPDATE_ROLLBACK_IN_PROGRESS"),
        (
            "DELETE_IN_PROGRESS",
            "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS",
            False,
            "root stack status UPDATE_COMPLETE_CLEANUP_IN_PROGRESS",
        ),
        (
            "UPDATE_ROLLBACK_IN_PROGRESS",
            "UPDATE_ROLLBACK_IN_PROGRESS",
            False,
            "root stack status UPDATE_ROLLBACK_IN_PROGRESS",
        ),
    ],
)
def test_the_root_stacks_status_decides_whether_a_delete_is_the_apps_deletion(own, root, act, read):
    """A nested stack's own status reads DELETE_IN_PROGRESS also when its parent removes or replaces it in an
    update or a rollback: only the root's status says the whole app is going away."""
    own_record = _stack(own, NESTED_ID, root=STACK_ID) if root else _stack(own)
    root_record = _stack(root) if root else None
    suffix = f" (this nested stack: {own})" if root else ""
    assert index.decide(own_record, root_record) == (act, read + suffix)


def test_a_stack_listed_as_its_own_root_and_unreadable_stacks_decide_hands_off():
    assert index.decide(_stack("DELETE_IN_PROGRESS", root=STACK_ID), None) == (True, "stack status DELETE_IN_PROGRESS")
    assert index.decide(None, None) == (False, "stack status None")
    assert index.decide(_stack("DELETE_IN_PROGRESS", NESTED_ID, root=STACK_ID), None) == (
        False,
        "root stack status None (this nested stack: DELETE_IN_PROGRESS)",
    )


@pytest.mark.parametrize(
    "root", ["UPDATE_IN_PROGRESS", "UPDATE_ROLLBACK_IN_PROGRESS", "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS", None]
)
def test_a_nested_stack_removed_by_its_parents_update_or_rollback_touches_nothing(root, lambda_env):
    """The handler reads its own (nested) stack, then the RootId it names; an update, rollback or cleanup of the
    root -- or a root it cannot read -- leaves every instance, template and profile alone."""
    cloudformation, stub = _nested_status_client("DELETE_IN_PROGRESS", root)
    fake = FakeTime()
    responses = _run_handler(
        "Delete",
        {"cloudformation": cloudformation, "ec2": Untouchable(), "iam": Untouchable()},
        fake,
        stack_id=NESTED_ID,
    )
    assert responses == [
        (
            "SUCCESS",
            f"root stack status {root} (this nested stack: DELETE_IN_PROGRESS): not a stack deletion, nothing touched",
            0,
        )
    ]
    stub.assert_no_pending_responses()


def test_a_nested_stack_cleans_up_when_its_root_is_being_deleted(lambda_env):
    cloudformation, stub = _nested_status_client("DELETE_IN_PROGRESS", "DELETE_IN_PROGRESS")
    ec2, iam = _client("ec2"), _client("iam")
    with Stubber(ec2) as ec2_stub, Stubber(iam) as iam_stub:
        ec2_stub.add_response("describe_instances", _instances(), {"Filters": INSTANCE_FILTERS})
        _expect_no_templates_or_profiles(ec2_stub, iam_stub)
        responses = _run_handler(
            "Delete", {"cloudformation": cloudformation, "ec2": ec2, "iam": iam}, FakeTime(), stack_id=NESTED_ID
        )
    assert responses == [("SUCCESS", "", 0)]
    stub.assert_no_pending_responses()


def test_an_unreadable_stack_status_touches_nothing(lambda_env):
    cloudformation = _client("cloudformation")
    stub = Stubber(cloudformation)
    stub.add_client_error("describe_stacks", service_error_code="AccessDenied", http_status_code=403)
    stub.activate()
    fake = FakeTime()
    responses = _run_handler(
        "Delete", {"cloudformation": cloudformation, "ec2": Untouchable(), "iam": Untouchable()}, fake
    )
    assert responses == [("SUCCESS", "stack status None: not a stack deletion, nothing touched", 0)]


def test_a_throttled_status_read_is_retried(lambda_env):
    cloudformation = _client("cloudformation")
    stub = Stubber(cloudformation)
    stub.add_client_error("describe_stacks", service_error_code="Throttling", http_status_code=400)
    stub.add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": CLUSTER,
                    "StackId": STACK_ID,
                    "CreationTime": "2026-11-01T00:00:00Z",
                    "StackStatus": "UPDATE_ROLLBACK_IN_PROGRESS",
                }
            ]
        },
        {"StackName": STACK_ID},
    )
    stub.activate()
    fake = FakeTime()
    responses = _run_handler(
        "Delete", {"cloudformation": cloudformation, "ec2": Untouchable(), "iam": Untouchable()}, fake
    )
    assert [r[0] for r in responses] == ["SUCCESS"] and fake.sleeps == [1]


@pytest.mark.parametrize("status", sorted(index.STACK_GOING_AWAY))
def test_a_stack_deletion_or_a_failed_create_cleans_up(status, lambda_env):
    cloudformation, _ = _status_client(status)
    ec2, iam = _client("ec2"), _client("iam")
    with Stubber(ec2) as ec2_stub, Stubber(iam) as iam_stub:
        ec2_stub.add_response("describe_instances", _instances(), {"Filters": INSTANCE_FILTERS})
        _expect_no_templates_or_profiles(ec2_stub, iam_stub)
        fake = FakeTime()
        responses = _run_handler("Delete", {"cloudformation": cloudformation, "ec2": ec2, "iam": iam}, fake)
    assert responses == [("SUCCESS", "", 0)]


def test_the_drain_bound_terminates_what_has_not_drained_and_leaves_templates_and_profiles(lambda_env):
    """Deleted between the NodePools and the EC2NodeClasses: it bounds the drains (whatever the pools'
    terminationGracePeriod) and leaves the launch templates and instance profiles to the classes'
    finalizers and to the safety net after them (no DescribeLaunchTemplates, no IAM call at all)."""
    cloudformation, _ = _status_client("DELETE_IN_PROGRESS")
    ec2 = _client("ec2")
    with Stubber(ec2) as ec2_stub:
        for _ in range(5):  # t = 0 .. 60: the drain deadline
            ec2_stub.add_response("describe_instances", _instances("i-0aaa"), {"Filters": INSTANCE_FILTERS})
        ec2_stub.add_response("terminate_instances", {"TerminatingInstances": []}, {"InstanceIds": ["i-0aaa"]})
        ec2_stub.add_response("describe_instances", _instances(), {"Filters": INSTANCE_FILTERS})
        fake = FakeTime()
        responses = _run_handler(
            "Delete",
            {"cloudformation": cloudformation, "ec2": ec2, "iam": Untouchable()},
            fake,
            properties={"ClusterName": CLUSTER, "Phase": "Instances"},
            drain_timeout=60,
            terminate_timeout=30,
        )
        ec2_stub.assert_no_pending_responses()
    assert responses == [("SUCCESS", "", 60)]


def test_delete_reports_failure_with_the_reason(lambda_env):
    cloudformation, _ = _status_client("DELETE_IN_PROGRESS")
    ec2 = _client("ec2")
    with Stubber(ec2) as ec2_stub:
        ec2_stub.add_client_error(
            "describe_instances",
            service_error_code="UnauthorizedOperation",
            service_message="not allowed",
            http_status_code=403,
        )
        responses = _run_handler(
            "Delete", {"cloudformation": cloudformation, "ec2": ec2, "iam": Untouchable()}, FakeTime()
        )
    assert responses == [
        (
            "FAILED",
            "Karpenter teardown failed: An error occurred (UnauthorizedOperation) when "
            "calling the DescribeInstances operation: not allowed",
            0,
        )
    ]


class SlowEc2:
    """Instances that never drain and never finish terminating; every call takes 5 s of fake time."""

    def __init__(self, fake):
        self.fake = fake

    def describe_instances(self, **_):
        self.fake.now += 5
        return _instances("i-0stuck")

    def terminate_instances(self, **_):
        self.fake.now += 5
        return {}

    def describe_launch_templates(self, **_):
        self.fake.now += 5
        return _templates()


@pytest.mark.parametrize("budget_s", [840, 300, 90, 40])
def test_the_handler_answers_before_the_lambda_times_out(budget_s, lambda_env):
    """Worst case: nothing drains, nothing terminates. Whatever the invocation has left, the answer is
    sent with at least the response reserve to spare."""
    cloudformation, _ = _status_client("DELETE_IN_PROGRESS")
    fake = FakeTime()
    iam = _client("iam")
    responses = []
    context = Context(fake, budget_ms=budget_s * 1000)
    with Stubber(iam) as iam_stub:
        iam_stub.add_response(
            "list_instance_profiles",
            {"InstanceProfiles": [], "IsTruncated": False},
            {"PathPrefix": f"/karpenter/{REGION}/{CLUSTER}/"},
        )
        index.handler(
            {**EVENT, "RequestType": "Delete"},
            context,
            clients=lambda: {"cloudformation": cloudformation, "ec2": SlowEc2(fake), "iam": iam},
            respond=lambda e, c, status, reason="", data=None: responses.append((status, fake.now)),
            sleep=fake.sleep,
            clock=fake.clock,
        )
    ((status, answered_at),) = responses
    assert answered_at <= budget_s - index.RESPONSE_TIMEOUT
    # 40 s: less than the reserve, so not even the first look fits: FAILED, "retry the deletion"
    assert status == ("SUCCESS" if budget_s > index.RESERVE else "FAILED")


def test_the_lambda_and_the_service_timeout_cover_the_handlers_budget():
    drain, terminate = (index.Teardown.__init__.__kwdefaults__[k] for k in ("drain_timeout", "terminate_timeout"))
    assert drain + terminate + index.CLEANUP_RESERVE + index.RESERVE <= 840


# --- the construct --------------------------------------------------------------------------------


def _teardown_policy(synthesized) -> list[dict]:
    policies = {
        k: v
        for k, v in resources(synthesized.template, "AWS::IAM::ManagedPolicy").items()
        if k.startswith("TeardownSafetyNet")
    }
    return only(policies)[1]["Properties"]["PolicyDocument"]["Statement"]


def test_teardown_permissions_are_scoped_to_this_cluster(default):
    statements = {s["Sid"]: s for s in _teardown_policy(default)}
    assert statements["TerminateThisClustersKarpenterInstances"]["Action"] == "ec2:TerminateInstances"
    assert statements["TerminateThisClustersKarpenterInstances"]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/eks-karpenter": "owned"},
        "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
    }
    assert statements["DeleteThisClustersLaunchTemplates"]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/eks-karpenter": "owned"},
        "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
    }
    assert statements["ReadOwnStackStatus"] == {
        "Sid": "ReadOwnStackStatus",
        "Effect": "Allow",
        "Action": "cloudformation:DescribeStacks",
        "Resource": {"Ref": "AWS::StackId"},
    }
    profiles = statements["DeleteThisClustersInstanceProfiles"]
    assert profiles["Action"] == ["iam:DeleteInstanceProfile", "iam:RemoveRoleFromInstanceProfile"]
    assert render(profiles["Resource"]).endswith(":instance-profile/karpenter/${Ref:AWS::Region}/eks-karpenter/*")
    assert statements["FindLeftovers"]["Action"] == [
        "ec2:DescribeInstances",
        "ec2:DescribeLaunchTemplates",
        "iam:ListInstanceProfiles",
    ]
    writes = {
        a
        for s in statements.values()
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
        if not a.startswith(
            ("ec2:Describe", "iam:List", "logs:", "cloudformation:Describe", "elasticloadbalancing:Describe")
        )
    }
    assert writes == {
        "ec2:TerminateInstances",
        "ec2:DeleteLaunchTemplate",
        "iam:RemoveRoleFromInstanceProfile",
        "iam:DeleteInstanceProfile",
        "elasticloadbalancing:DeleteLoadBalancer",
        "ec2:DeleteSecurityGroup",
    }
    # Load balancers and security groups: only those tagged for this cluster (by the in-tree cloud provider
    # or the AWS Load Balancer Controller), security groups only in its VPC.
    vpc = {
        "ArnEquals": {
            "ec2:Vpc": {
                "Fn::Join": [
                    "",
                    [
                        "arn:",
                        {"Ref": "AWS::Partition"},
                        ":ec2:",
                        {"Ref": "AWS::Region"},
                        ":",
                        {"Ref": "AWS::AccountId"},
                        ":vpc/",
                        {"Ref": "NetworkVpc7FB7348F"},
                    ],
                ]
            }
        }
    }
    for who, tag in (
        ("InTree", {"aws:ResourceTag/kubernetes.io/cluster/eks-karpenter": "owned"}),
        ("Controller", {"aws:ResourceTag/elbv2.k8s.aws/cluster": "eks-karpenter"}),
    ):
        assert statements[f"DeleteThisClusters{who}LoadBalancers"]["Condition"] == {"StringEquals": tag}
        assert render(statements[f"DeleteThisClusters{who}LoadBalancers"]["Resource"]).endswith(":loadbalancer/*")
        assert statements[f"DeleteThisClusters{who}LoadBalancerSecurityGroups"]["Condition"] == {
            "StringEquals": tag,
            **vpc,
        }


def test_handler_is_bounded_below_the_lambda_limit_and_cloudformation_waits_no_hour(default):
    functions = {
        k: v
        for k, v in resources(default.template, "AWS::Lambda::Function").items()
        if k.startswith("TeardownSafetyNet")
    }
    props = only(functions)[1]["Properties"]
    assert props["Timeout"] == 840 and props["Runtime"] == "python3.14"
    assert props["Environment"] == {"Variables": {"CLUSTER_NAME": "eks-karpenter"}}
    for _, resource in teardown(default.template):
        assert resource["Properties"]["ServiceTimeout"] == "900"  # > the Lambda's 840 s, << CloudFormation's 3600 s


def test_only_the_custom_resource_waits_for_the_charts(default):
    """The function, its role, policy and log group are created alongside the charts: only the custom
    resource (whose delete must come before the controller's) is ordered after them."""
    graph = dependency_graph(default.json)
    charts = set(resources(default.template, "Custom::AWSCDK-EKS-HelmChart"))
    ordered = [logical_id for logical_id, _ in teardown(default.template)]
    lb_cleanup = list(load_balancer_cleanups(default.template))  # ordered by the cluster, below
    helpers = [
        k for k in default.json["Resources"] if k.startswith("TeardownSafetyNet") and k not in ordered + lb_cleanup
    ]
    assert len(helpers) == 4  # log group, policy, role, function
    assert all(not depends_transitively(graph, h, c) for h in helpers for c in charts)
    assert all(depends_transitively(graph, resource, c) for resource in ordered for c in charts)


@pytest.mark.parametrize("configuration", ["default", "alternative"])
def test_teardown_runs_after_the_manifests_and_before_the_controller_and_aws_auth(configuration, request):
    synthesized = request.getfixturevalue(configuration)
    graph = dependency_graph(synthesized.json)
    (net, _), (bound, _) = teardown(synthesized.template)
    karpenter_objects = [
        o["_logicalId"]
        for o in kubernetes_objects(synthesized.template).values()
        if o["apiVersion"].startswith("karpenter")
    ]
    charts = {
        r["Properties"]["Release"]: k
        for k, r in resources(synthesized.template, "Custom::AWSCDK-EKS-HelmChart").items()
    }
    aws_auth = kubernetes_objects(synthesized.template)["ConfigMap/aws-auth"]["_logicalId"]
    assert karpenter_objects and all(depends_transitively(graph, o, net) for o in karpenter_objects)
    assert depends_transitively(graph, net, charts["karpenter"])
    assert depends_transitively(graph, net, aws_auth)
    policy = next(
        k for k in resources(synthesized.template, "AWS::IAM::ManagedPolicy") if k.startswith("TeardownSafetyNet")
    )
    assert depends_transitively(graph, net, policy)
    # The drain bound goes after every NodePool and before every EC2NodeClass.
    objects = kubernetes_objects(synthesized.template).values()
    pools = [o["_logicalId"] for o in objects if o["kind"] == "NodePool"]
    classes = [o["_logicalId"] for o in objects if o["kind"] == "EC2NodeClass"]
    assert pools and all(depends_transitively(graph, p, bound) for p in pools)
    assert classes and all(depends_transitively(graph, bound, c) for c in classes)
    assert depends_transitively(graph, bound, net)


# --- the load-balancer cleanup's wait for released network interfaces --------------------------------

VPC = "vpc-0123456789abcdef0"


def _cleanup(aws, security_group_answers):
    """The cleanup with one classic ELB of this cluster (security group sg-1); ``security_group_answers``:
    what each DeleteSecurityGroup answers in turn (an error code, or None for success)."""
    teardown, ec2_stub, _, fake = aws
    elb, elbv2 = _client("elb"), _client("elbv2")
    elb_stub, elbv2_stub = Stubber(elb), Stubber(elbv2)
    elb_stub.add_response(
        "describe_load_balancers",
        {"LoadBalancerDescriptions": [{"LoadBalancerName": "a1b2", "VPCId": VPC, "SecurityGroups": ["sg-1"]}]},
        {},
    )
    elbv2_stub.add_response("describe_load_balancers", {"LoadBalancers": []}, {})
    elb_stub.add_response(
        "describe_tags",
        {
            "TagDescriptions": [
                {"LoadBalancerName": "a1b2", "Tags": [{"Key": f"kubernetes.io/cluster/{CLUSTER}", "Value": "owned"}]}
            ]
        },
        {"LoadBalancerNames": ["a1b2"]},
    )
    elb_stub.add_response("delete_load_balancer", {}, {"LoadBalancerName": "a1b2"})
    group = {
        "GroupId": "sg-1",
        "GroupName": "k8s-elb-a1b2",
        "Tags": [{"Key": f"kubernetes.io/cluster/{CLUSTER}", "Value": "owned"}],
    }
    ec2_stub.add_response(
        "describe_security_groups", {"SecurityGroups": [group]}, {"Filters": [{"Name": "vpc-id", "Values": [VPC]}]}
    )
    for answer in security_group_answers:
        if answer is None:
            ec2_stub.add_response("delete_security_group", {}, {"GroupId": "sg-1"})
        else:
            ec2_stub.add_client_error("delete_security_group", service_error_code=answer, http_status_code=400)
    elb_stub.activate()
    elbv2_stub.activate()
    return index.LoadBalancerCleanup(teardown, elb=elb, elbv2=elbv2, vpc_id=VPC), fake


def test_a_security_group_still_used_by_a_load_balancers_interfaces_is_retried_until_released(aws):
    cleanup, fake = _cleanup(aws, ["DependencyViolation", "DependencyViolation", None])
    assert cleanup.run() == {"load_balancers": ["a1b2"], "security_groups": ["sg-1"]}
    assert fake.sleeps == [15, 15]


def test_a_security_group_that_outlives_the_budget_fails_the_deletion_naming_it(aws):
    """Deadline 600 s, polls every 15 s: 40 refusals, then the stack deletion stops with the group's id
    (a retried deletion continues: the load balancer is gone by then)."""
    cleanup, fake = _cleanup(aws, ["DependencyViolation"] * 40)
    with pytest.raises(index.OutOfTime, match="security groups still in use: sg-1"):
        cleanup.run()
    assert fake.now == 585


def test_the_load_balancer_cleanup_runs_after_the_cluster_and_before_the_subnets_and_gateway(default, existing):
    """Deleted once the cluster is gone (nothing recreates the load balancers) and before the subnets and the
    internet gateway's attachment (load balancers' interfaces and public addresses block their deletion).
    Created early, beside the NAT gateways, so it is not on the create path. On an existing cluster, none."""
    graph = dependency_graph(default.json)
    ((cleanup, resource),) = load_balancer_cleanups(default.template).items()
    assert resource["Properties"]["VpcId"] == {"Ref": "NetworkVpc7FB7348F"}
    (cluster,) = resources(default.template, "Custom::AWSCDK-EKS-Cluster")
    assert cleanup in default.json["Resources"][cluster]["DependsOn"]
    subnets = set(resources(default.template, "AWS::EC2::Subnet"))
    (gateway,) = resources(default.template, "AWS::EC2::VPCGatewayAttachment")
    assert len(subnets) == 4 and set(graph[cleanup]) >= subnets | {gateway}
    nat = set(resources(default.template, "AWS::EC2::NatGateway"))
    assert nat and not any(depends_transitively(graph, cleanup, n) for n in nat)
    assert load_balancer_cleanups(existing.template) == {}
