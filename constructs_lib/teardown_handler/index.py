"""Teardown safety net (Lambda custom resource handler).

On stack deletion, make sure nothing Karpenter launched for this cluster outlives the stack. Two
resources share this handler:

- the drain bound (``Phase: Instances``), deleted after the NodePools and before the EC2NodeClasses:
  wait (bounded) for the pools' instances to drain, terminate any that remain. A destroy's drains so
  end in bounded time, whatever the pools' ``terminationGracePeriod``;
- the safety net itself (no ``Phase``), deleted after the EC2NodeClasses: terminate any instance still
  there, delete the launch templates and instance profiles Karpenter left.
 Only resources carrying this
cluster's tags (or, for instance profiles, Karpenter's path for this cluster) are touched; when the
resource's properties name ``NodePools`` and ``NodeClasses`` (a cluster the stack did not create, shared
with other teams), only what those pools and classes launched.

CloudFormation sends ``Delete`` to a custom resource in more situations than a stack deletion: when
the update that created it rolls back (``UPDATE_ROLLBACK_*``) and for the old resource after a
replacement (``UPDATE_COMPLETE_CLEANUP_IN_PROGRESS``). Terminating nodes then would take down a
running cluster, so the handler reads its stack's status and cleans up only while the stack itself
is going away (``DELETE_IN_PROGRESS``, or ``ROLLBACK_IN_PROGRESS`` after a failed create). When the
status cannot be read, it touches nothing.

Every path answers CloudFormation before the Lambda times out: the budget is the invocation's
remaining time minus a reserve for the answer, each phase and each retry stays inside it.

Create and Update do nothing. Runs on the Lambda Python runtime, whose boto3 it uses.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.request
from typing import Any, Callable, Optional

LOG = logging.getLogger()
LOG.setLevel(logging.INFO)

THROTTLING = {"Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException"}
LIVE_STATES = ["pending", "running", "stopping", "stopped", "shutting-down"]
# Stack statuses in which this resource's Delete means "the stack is going away".
STACK_GOING_AWAY = {"DELETE_IN_PROGRESS", "ROLLBACK_IN_PROGRESS"}
NODEPOOL_TAG = "karpenter.sh/nodepool"
NODECLASS_TAG = "karpenter.k8s.aws/ec2nodeclass"
INSTANCES_PHASE = "Instances"  # the drain bound: instances only

# Kept back from the invocation's remaining time: answering CloudFormation (one HTTPS PUT, bounded by
# RESPONSE_TIMEOUT) plus the slowest single AWS call (CLIENT_CONNECT_TIMEOUT + CLIENT_READ_TIMEOUT).
RESPONSE_TIMEOUT = 20
CLIENT_CONNECT_TIMEOUT = 5
CLIENT_READ_TIMEOUT = 20
RESERVE = RESPONSE_TIMEOUT + CLIENT_CONNECT_TIMEOUT + CLIENT_READ_TIMEOUT + 15  # 60 s
# Time set aside for launch templates and instance profiles after the instances.
CLEANUP_RESERVE = 60


class OutOfTime(Exception):
    """The invocation's budget would be exceeded; the caller answers CloudFormation instead."""


class Teardown:
    """The cleanup itself, with AWS clients and time injected so tests can stub them.

    ``deadline`` is an absolute time on ``clock`` by which every step must be done; the drain and
    termination waits are further capped by their own timeouts.
    """

    def __init__(
        self,
        *,
        ec2: Any,
        iam: Any,
        cluster: str,
        region: str,
        deadline: float,
        drain_timeout: float = 480,
        terminate_timeout: float = 180,
        poll_interval: float = 15,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        max_attempts: int = 5,
        max_backoff: float = 16,
        node_pools: Optional[list] = None,
        node_classes: Optional[list] = None,
    ) -> None:
        self.ec2, self.iam, self.cluster, self.region = ec2, iam, cluster, region
        # None: every Karpenter pool and class of the cluster is this stack's (a cluster it created);
        # lists: only these are (a cluster other teams may run Karpenter pools on too).
        self.node_pools, self.node_classes = node_pools, node_classes
        self.deadline = deadline
        self.drain_timeout, self.terminate_timeout, self.poll_interval = drain_timeout, terminate_timeout, poll_interval
        self.sleep, self.clock = sleep, clock
        self.max_attempts, self.max_backoff = max_attempts, max_backoff

    def left(self) -> float:
        return self.deadline - self.clock()

    # --- AWS calls, retried on throttling within the budget -----------------------------------------
    def call(self, fn: Callable[..., dict], **kwargs: Any) -> dict:
        for attempt in range(1, self.max_attempts + 1):
            if self.left() <= 0:
                raise OutOfTime(f"no time left for {getattr(fn, '__name__', 'an AWS call')}")
            try:
                return fn(**kwargs)
            except Exception as err:  # botocore ClientError, without importing botocore here
                code = getattr(err, "response", {}).get("Error", {}).get("Code")
                if code not in THROTTLING or attempt == self.max_attempts:
                    raise
                pause = min(2 ** attempt, self.max_backoff)
                if pause >= self.left():
                    raise OutOfTime(f"throttled with {self.left():.0f} s left") from err
                self.sleep(pause)
        raise AssertionError("unreachable")

    # --- what belongs to this cluster ---------------------------------------------------------------
    def karpenter_filters(self) -> list[dict]:
        """What Karpenter tags everything it launches for this cluster with (and a node group's
        instances and launch templates never carry: the nodepool tag)."""
        return [{"Name": f"tag:kubernetes.io/cluster/{self.cluster}", "Values": ["owned"]},
                {"Name": "tag-key", "Values": [NODEPOOL_TAG]}]

    def instance_filters(self) -> list[dict]:
        if self.node_pools is None:
            return self.karpenter_filters()
        return [self.karpenter_filters()[0], {"Name": f"tag:{NODEPOOL_TAG}", "Values": self.node_pools}]

    def launch_template_filters(self) -> list[dict]:
        if self.node_classes is None:
            return self.karpenter_filters()
        return [self.karpenter_filters()[0], {"Name": f"tag:{NODECLASS_TAG}", "Values": self.node_classes}]

    def ours(self, profile_name: str) -> bool:
        """Whether an instance profile under this cluster's path was made for one of this stack's classes."""
        if self.node_classes is None:
            return True
        profile = self.call(self.iam.get_instance_profile, InstanceProfileName=profile_name)["InstanceProfile"]
        tags = profile.get("Tags", [])
        return any(t["Key"] == NODECLASS_TAG and t["Value"] in self.node_classes for t in tags)

    def karpenter_instances(self) -> list[str]:
        """Instances Karpenter launched for this cluster and not yet terminated."""
        ids: list[str] = []
        token: Optional[str] = None
        while True:
            kwargs: dict[str, Any] = {"Filters": [*self.instance_filters(),
                                                  {"Name": "instance-state-name", "Values": LIVE_STATES}]}
            if token:
                kwargs["NextToken"] = token
            page = self.call(self.ec2.describe_instances, **kwargs)
            ids += [i["InstanceId"] for r in page.get("Reservations", []) for i in r.get("Instances", [])]
            token = page.get("NextToken")
            if not token:
                return ids

    def wait_until_no_instances(self, until: float) -> list[str]:
        while True:
            remaining = self.karpenter_instances()
            if not remaining or self.clock() + self.poll_interval > until:
                return remaining
            self.sleep(self.poll_interval)

    # --- the steps ------------------------------------------------------------------------------------
    def run(self, instances_only: bool = False) -> dict:
        summary: dict[str, list[str]] = {"terminated": [], "launch_templates": [], "instance_profiles": []}
        start = self.clock()
        cleanup_start = self.deadline - (0 if instances_only else CLEANUP_RESERVE)
        drain_until = min(start + self.drain_timeout, cleanup_start - self.terminate_timeout)
        leftovers = self.wait_until_no_instances(drain_until)
        if leftovers:
            LOG.info("terminating %d instances Karpenter did not drain: %s", len(leftovers), leftovers)
            for first in range(0, len(leftovers), 50):
                self.call(self.ec2.terminate_instances, InstanceIds=leftovers[first:first + 50])
            summary["terminated"] = leftovers
            still = self.wait_until_no_instances(min(self.clock() + self.terminate_timeout, cleanup_start))
            if still:
                # Terminating instances finish on their own; only their ENIs may delay the VPC.
                LOG.warning("instances still shutting down: %s", still)
        if instances_only:
            return summary
        summary["launch_templates"] = self.delete_launch_templates()
        summary["instance_profiles"] = self.delete_instance_profiles()
        return summary

    def delete_launch_templates(self) -> list[str]:
        """Karpenter's launch templates of this cluster; a managed node group's launch templates carry
        the cluster tag too, but never the nodepool tag, and survive.

        Describes again after each page of deletions instead of following a NextToken across them, until
        nothing is left (or only what was just deleted shows up again, which EC2's eventual consistency
        allows)."""
        deleted: list[str] = []
        while True:
            page = self.call(self.ec2.describe_launch_templates, Filters=self.launch_template_filters())
            found = [t["LaunchTemplateId"] for t in page.get("LaunchTemplates", [])]
            fresh = [t for t in found if t not in deleted]
            if not fresh:
                return deleted
            for template_id in fresh:
                try:
                    self.call(self.ec2.delete_launch_template, LaunchTemplateId=template_id)
                except Exception as err:  # already gone (Karpenter's own finalizer raced us) is fine
                    code = getattr(err, "response", {}).get("Error", {}).get("Code", "")
                    if not code.startswith("InvalidLaunchTemplateId.NotFound"):
                        raise
                deleted.append(template_id)

    def delete_instance_profiles(self) -> list[str]:
        """Karpenter 1.x creates instance profiles under /karpenter/<region>/<cluster>/<nodeclass uid>/."""
        deleted: list[str] = []
        prefix = f"/karpenter/{self.region}/{self.cluster}/"
        marker: Optional[str] = None
        while True:
            kwargs: dict[str, Any] = {"PathPrefix": prefix}
            if marker:
                kwargs["Marker"] = marker
            page = self.call(self.iam.list_instance_profiles, **kwargs)
            for profile in page.get("InstanceProfiles", []):
                if not profile["Path"].startswith(prefix):
                    continue  # defensive: never act outside this cluster's path
                name = profile["InstanceProfileName"]
                if not self.ours(name):
                    continue  # another team's class on a shared cluster
                for role in profile.get("Roles", []):
                    self.call(self.iam.remove_role_from_instance_profile, InstanceProfileName=name,
                              RoleName=role["RoleName"])
                self.call(self.iam.delete_instance_profile, InstanceProfileName=name)
                deleted.append(name)
            if not page.get("IsTruncated"):
                return deleted
            marker = page.get("Marker")


def stack_status(cloudformation: Any, stack_id: str, sleep: Callable[[float], None] = time.sleep,
                 attempts: int = 3) -> Optional[str]:
    """The status of the stack that holds this resource, or None when it cannot be read."""
    for attempt in range(1, attempts + 1):
        try:
            stacks = cloudformation.describe_stacks(StackName=stack_id)["Stacks"]
            return stacks[0]["StackStatus"] if stacks else None
        except Exception as err:  # noqa: BLE001 - any failure means "not known", and unknown means hands off
            code = getattr(err, "response", {}).get("Error", {}).get("Code")
            if code not in THROTTLING or attempt == attempts:
                LOG.exception("could not read the status of stack %s", stack_id)
                return None
            sleep(attempt)
    return None


def send_response(event: dict, context: Any, status: str, reason: str = "", data: Optional[dict] = None) -> None:
    body = json.dumps({
        "Status": status,
        "Reason": (reason or f"see CloudWatch log stream {getattr(context, 'log_stream_name', '')}")[:1000],
        "PhysicalResourceId": event.get("PhysicalResourceId") or f"karpenter-teardown-{os.environ.get('CLUSTER_NAME', '')}",
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
        "Data": data or {},
    }).encode()
    request = urllib.request.Request(event["ResponseURL"], data=body, method="PUT",
                                     headers={"Content-Type": "", "Content-Length": str(len(body))})
    with urllib.request.urlopen(request, timeout=RESPONSE_TIMEOUT) as response:  # noqa: S310 - CloudFormation's presigned URL
        response.read()


def aws_clients() -> dict[str, Any]:
    import boto3
    from botocore.config import Config

    # Bounded per call: a hung connection cannot eat the budget; throttling is retried by Teardown.
    config = Config(connect_timeout=CLIENT_CONNECT_TIMEOUT, read_timeout=CLIENT_READ_TIMEOUT,
                    retries={"mode": "standard", "max_attempts": 1})
    return {name: boto3.client(name, config=config) for name in ("ec2", "iam", "cloudformation")}


def handler(event: dict, context: Any, clients: Optional[Callable[[], dict[str, Any]]] = None,
            respond: Callable[..., None] = send_response, sleep: Callable[[float], None] = time.sleep,
            clock: Callable[[], float] = time.monotonic, **teardown_options: Any) -> None:
    LOG.info("%s request for %s", event.get("RequestType"), event.get("LogicalResourceId"))
    if event.get("RequestType") != "Delete":
        respond(event, context, "SUCCESS")
        return
    # The budget: what this invocation has left, minus the reserve for answering.
    deadline = clock() + context.get_remaining_time_in_millis() / 1000 - RESERVE
    try:
        aws = (clients or aws_clients)()
        status = stack_status(aws["cloudformation"], event["StackId"], sleep=sleep)
    except Exception:  # noqa: BLE001 - without clients the status is unknown, and unknown means hands off
        LOG.exception("could not create AWS clients")
        status = None
    if status not in STACK_GOING_AWAY:
        LOG.info("stack status %s: the stack is not being deleted; nothing touched", status)
        respond(event, context, "SUCCESS", reason=f"stack status {status}: not a stack deletion, nothing touched")
        return
    try:
        properties = event.get("ResourceProperties", {})
        teardown = Teardown(ec2=aws["ec2"], iam=aws["iam"], cluster=os.environ["CLUSTER_NAME"],
                            region=os.environ["AWS_REGION"], deadline=deadline, sleep=sleep, clock=clock,
                            node_pools=properties.get("NodePools"), node_classes=properties.get("NodeClasses"),
                            **teardown_options)
        summary = teardown.run(instances_only=properties.get("Phase") == INSTANCES_PHASE)
        LOG.info("teardown summary: %s", json.dumps(summary))
        respond(event, context, "SUCCESS", data={k: str(len(v)) for k, v in summary.items()})
    except OutOfTime as err:
        LOG.error("teardown ran out of time: %s", err)
        respond(event, context, "FAILED", reason=f"Karpenter teardown ran out of time ({err}); retry the stack deletion "
                                                 "to continue where it stopped")
    except Exception as err:  # report, so the stack shows why instead of hanging
        LOG.exception("teardown failed")
        respond(event, context, "FAILED", reason=f"Karpenter teardown failed: {err}")
