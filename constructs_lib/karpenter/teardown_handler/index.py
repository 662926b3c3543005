"""Teardown safety net (Lambda custom resource handler).

On stack deletion, make sure nothing Karpenter launched for this cluster outlives the stack. Two
resources share this handler:

- the drain bound (``Phase: Instances``), deleted after the NodePools and before the EC2NodeClasses:
  wait (bounded) for the pools' instances to drain, terminate any that remain. A destroy's drains so
  end in bounded time, whatever the pools' ``terminationGracePeriod``;
- the safety net itself (no ``Phase``), deleted after the EC2NodeClasses: terminate any instance still
  there, delete the launch templates and instance profiles Karpenter left;
- the load-balancer cleanup (``Phase: LoadBalancers``, only on a cluster the stack created), deleted after
  the cluster and before the VPC's subnets: delete the load balancers that Kubernetes Services and
  Ingresses of this cluster left (the in-tree AWS cloud provider tags them
  ``kubernetes.io/cluster/<cluster>=owned``, the AWS Load Balancer Controller ``elbv2.k8s.aws/cluster=<cluster>``)
  and their security groups, which would otherwise block deleting the subnets and the VPC.
 Only resources carrying this
cluster's tags (or, for instance profiles, Karpenter's path for this cluster) are touched; when the
resource's properties name ``NodePools`` and ``NodeClasses`` (a cluster the stack did not create, shared
with other teams), only what those pools and classes launched.

CloudFormation sends ``Delete`` to a custom resource in more situations than a stack deletion: when
the update that created it rolls back (``UPDATE_ROLLBACK_*``) and for the old resource after a
replacement (``UPDATE_COMPLETE_CLEANUP_IN_PROGRESS``). Terminating nodes then would take down a
running cluster, so the handler reads its stack's status and cleans up only while the stack itself
is going away (``DELETE_IN_PROGRESS``, or ``ROLLBACK_IN_PROGRESS`` after a failed create). In a nested
stack it reads the root stack's status instead (DescribeStacks' ``RootId``): a nested stack's own status
reads ``DELETE_IN_PROGRESS`` also when its parent removes or replaces it in an update or a rollback. When a
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
LOAD_BALANCERS_PHASE = "LoadBalancers"  # after the cluster: its Services' load balancers and security groups
LBC_CLUSTER_TAG = "elbv2.k8s.aws/cluster"  # the AWS Load Balancer Controller's tag (value: the cluster name)
IN_TREE_GROUP_PREFIX = "k8s-elb-"  # the in-tree cloud provider's security groups: k8s-elb-<load balancer name>

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


class LoadBalancerCleanup:
    """The load balancers and security groups Kubernetes made for this cluster's Services, in its VPC.

    Theirs when tagged ``kubernetes.io/cluster/<cluster>=owned`` (the in-tree cloud provider; its security
    groups are named ``k8s-elb-...``) or ``elbv2.k8s.aws/cluster=<cluster>`` (the AWS Load Balancer
    Controller). Runs after the cluster is deleted, so nothing recreates them; a security group is deleted
    once the load balancer's network interfaces are released (EC2 answers DependencyViolation until then).
    """

    def __init__(self, teardown: Teardown, *, elb: Any, elbv2: Any, vpc_id: str) -> None:
        self.t, self.elb, self.elbv2, self.vpc_id = teardown, elb, elbv2, vpc_id

    def ours(self, tags: list[dict]) -> bool:
        found = {t["Key"]: t.get("Value") for t in tags}
        return (found.get(f"kubernetes.io/cluster/{self.t.cluster}") == "owned"
                or found.get(LBC_CLUSTER_TAG) == self.t.cluster)

    def _pages(self, client: Any, key: str) -> list[dict]:
        found: list[dict] = []
        marker: Optional[str] = None
        while True:
            page = self.t.call(client.describe_load_balancers, **({"Marker": marker} if marker else {}))
            found += page.get(key, [])
            marker = page.get("NextMarker")
            if not marker:
                return found

    def load_balancers(self) -> tuple[list[dict], list[dict]]:
        """(classic, v2) load balancers of this cluster in its VPC, with their security groups."""
        classic = [lb for lb in self._pages(self.elb, "LoadBalancerDescriptions") if lb.get("VPCId") == self.vpc_id]
        current = [lb for lb in self._pages(self.elbv2, "LoadBalancers") if lb.get("VpcId") == self.vpc_id]
        return (self._tagged(classic, self.elb, "LoadBalancerName", "LoadBalancerNames"),
                self._tagged(current, self.elbv2, "LoadBalancerArn", "ResourceArns"))

    def _tagged(self, balancers: list[dict], client: Any, key: str, argument: str) -> list[dict]:
        """The load balancers whose tags say they are this cluster's (DescribeTags takes 20 at a time)."""
        ours: list[dict] = []
        for first in range(0, len(balancers), 20):
            ids = [lb[key] for lb in balancers[first:first + 20]]
            for d in self.t.call(client.describe_tags, **{argument: ids})["TagDescriptions"]:
                named = d.get("LoadBalancerName") if key == "LoadBalancerName" else d.get("ResourceArn")
                if self.ours(d.get("Tags", [])):
                    ours += [lb for lb in balancers if lb[key] == named]
        return ours

    def security_groups(self, attached: set[str]) -> list[str]:
        """This cluster's load-balancer security groups in its VPC: the in-tree provider's k8s-elb-*, the
        controller's tagged ones, and any group a deleted load balancer used that carries either tag."""
        page = self.t.call(self.t.ec2.describe_security_groups, Filters=[{"Name": "vpc-id", "Values": [self.vpc_id]}])
        found = []
        for group in page.get("SecurityGroups", []):
            tags = {t["Key"]: t.get("Value") for t in group.get("Tags", [])}
            in_tree = (group["GroupName"].startswith(IN_TREE_GROUP_PREFIX)
                       and tags.get(f"kubernetes.io/cluster/{self.t.cluster}") == "owned")
            controller = tags.get(LBC_CLUSTER_TAG) == self.t.cluster
            if in_tree or controller or (group["GroupId"] in attached and self.ours(group.get("Tags", []))):
                found.append(group["GroupId"])
        return sorted(found)

    def run(self) -> dict:
        classic, current = self.load_balancers()
        attached = {g for lb in classic + current for g in lb.get("SecurityGroups", [])}
        for lb in classic:
            self.t.call(self.elb.delete_load_balancer, LoadBalancerName=lb["LoadBalancerName"])
        for lb in current:
            self.t.call(self.elbv2.delete_load_balancer, LoadBalancerArn=lb["LoadBalancerArn"])
        if classic or current:
            LOG.info("deleted load balancers: %s", [lb["LoadBalancerName"] for lb in classic + current])
        remaining = self.security_groups(attached)
        deleted: list[str] = []
        while True:
            for group_id in list(remaining):
                try:
                    self.t.call(self.t.ec2.delete_security_group, GroupId=group_id)
                except Exception as err:
                    code = getattr(err, "response", {}).get("Error", {}).get("Code", "")
                    if code == "InvalidGroup.NotFound":
                        remaining.remove(group_id)
                        continue
                    if code != "DependencyViolation":
                        raise
                    continue  # still used by a load balancer's network interface, or referenced by a group
                remaining.remove(group_id)
                deleted.append(group_id)
            if not remaining:
                break
            if self.t.clock() + self.t.poll_interval >= self.t.deadline:
                raise OutOfTime(f"security groups still in use: {', '.join(remaining)}")
            self.t.sleep(self.t.poll_interval)
        return {"load_balancers": [lb["LoadBalancerName"] for lb in classic + current], "security_groups": deleted}


def describe_stack(cloudformation: Any, stack_id: str, sleep: Callable[[float], None] = time.sleep,
                   attempts: int = 3) -> Optional[dict]:
    """DescribeStacks' record of one stack (StackStatus; RootId and ParentId when it is nested), or None when it
    cannot be read."""
    for attempt in range(1, attempts + 1):
        try:
            stacks = cloudformation.describe_stacks(StackName=stack_id)["Stacks"]
            return stacks[0] if stacks else None
        except Exception as err:  # noqa: BLE001 - any failure means "not known", and unknown means hands off
            code = getattr(err, "response", {}).get("Error", {}).get("Code")
            if code not in THROTTLING or attempt == attempts:
                LOG.exception("could not read the status of stack %s", stack_id)
                return None
            sleep(attempt)
    return None


def root_id(stack: Optional[dict]) -> Optional[str]:
    """The root stack of a nested stack (DescribeStacks' RootId); None for a stack that is its own root."""
    if not stack:
        return None
    root = stack.get("RootId")
    return root if root and root != stack.get("StackId") else None


def decide(own: Optional[dict], root: Optional[dict]) -> tuple[bool, str]:
    """Whether a Delete is the app going away, and why: (act, what was read).

    A stack that is its own root decides by its own status: ``DELETE_IN_PROGRESS`` (the stack deletion) or
    ``ROLLBACK_IN_PROGRESS`` (a failed create) act; any update, rollback or cleanup status does not. A nested
    stack's own status reads ``DELETE_IN_PROGRESS`` also when its parent removes or replaces it during an update or
    rollback (root ``UPDATE_IN_PROGRESS``, ``UPDATE_ROLLBACK_IN_PROGRESS``, ``UPDATE_COMPLETE_CLEANUP_IN_PROGRESS``):
    only the root's status says whether the whole app is going away, and ``root`` (the record of ``RootId``) decides.
    Unreadable (own, or the root of a nested stack) means hands off."""
    if own is None:
        return False, "stack status None"
    if root_id(own) is None:
        status = own.get("StackStatus")
        return status in STACK_GOING_AWAY, f"stack status {status}"
    status = None if root is None else root.get("StackStatus")
    return status in STACK_GOING_AWAY, f"root stack status {status} (this nested stack: {own.get('StackStatus')})"


def stack_deletion(cloudformation: Any, stack_id: str, sleep: Callable[[float], None] = time.sleep) -> tuple[bool, str]:
    """:func:`decide` on this resource's stack and, when that stack is nested, its root (one more DescribeStacks:
    RootId names the root directly, whatever the depth)."""
    own = describe_stack(cloudformation, stack_id, sleep=sleep)
    root = root_id(own)
    return decide(own, None if root is None else describe_stack(cloudformation, root, sleep=sleep))


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
    return {name: boto3.client(name, config=config) for name in ("ec2", "iam", "cloudformation", "elb", "elbv2")}


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
        going_away, read = stack_deletion(aws["cloudformation"], event["StackId"], sleep=sleep)
    except Exception:  # noqa: BLE001 - without clients the status is unknown, and unknown means hands off
        LOG.exception("could not create AWS clients")
        going_away, read = False, "stack status None"
    if not going_away:
        LOG.info("%s: the stack is not being deleted; nothing touched", read)
        respond(event, context, "SUCCESS", reason=f"{read}: not a stack deletion, nothing touched")
        return
    LOG.info("%s: the stack is being deleted", read)
    try:
        properties = event.get("ResourceProperties", {})
        teardown = Teardown(ec2=aws["ec2"], iam=aws["iam"], cluster=os.environ["CLUSTER_NAME"],
                            region=os.environ["AWS_REGION"], deadline=deadline, sleep=sleep, clock=clock,
                            node_pools=properties.get("NodePools"), node_classes=properties.get("NodeClasses"),
                            **teardown_options)
        if properties.get("Phase") == LOAD_BALANCERS_PHASE:
            summary = LoadBalancerCleanup(teardown, elb=aws["elb"], elbv2=aws["elbv2"], vpc_id=properties["VpcId"]).run()
        else:
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
