"""Teardown safety net (Lambda custom resource handler).

On stack deletion, after the NodePools and EC2NodeClasses are gone, make sure nothing Karpenter
launched for this cluster outlives the stack: wait (bounded) for its instances to drain, terminate
any that remain, delete its launch templates and its instance profiles. Only resources carrying this
cluster's tags (or, for instance profiles, Karpenter's path for this cluster) are touched.

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


class Teardown:
    """The cleanup itself, with AWS clients and time injected so tests can stub them."""

    def __init__(
        self,
        *,
        ec2: Any,
        iam: Any,
        cluster: str,
        region: str,
        drain_timeout: float = 480,
        terminate_timeout: float = 240,
        poll_interval: float = 15,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        max_attempts: int = 8,
    ) -> None:
        self.ec2, self.iam, self.cluster, self.region = ec2, iam, cluster, region
        self.drain_timeout, self.terminate_timeout, self.poll_interval = drain_timeout, terminate_timeout, poll_interval
        self.sleep, self.clock, self.max_attempts = sleep, clock, max_attempts

    # --- AWS calls, retried on throttling ---------------------------------------------------------
    def call(self, fn: Callable[..., dict], **kwargs: Any) -> dict:
        for attempt in range(1, self.max_attempts + 1):
            try:
                return fn(**kwargs)
            except Exception as err:  # botocore ClientError, without importing botocore here
                code = getattr(err, "response", {}).get("Error", {}).get("Code")
                if code not in THROTTLING or attempt == self.max_attempts:
                    raise
                self.sleep(min(2 ** attempt, 20))
        raise AssertionError("unreachable")

    # --- what belongs to this cluster ---------------------------------------------------------------
    @property
    def owned_filter(self) -> dict:
        return {"Name": f"tag:kubernetes.io/cluster/{self.cluster}", "Values": ["owned"]}

    def karpenter_instances(self) -> list[str]:
        """Instances Karpenter launched for this cluster and not yet terminated."""
        ids: list[str] = []
        token: Optional[str] = None
        while True:
            kwargs = {"Filters": [self.owned_filter, {"Name": "tag-key", "Values": ["karpenter.sh/nodepool"]},
                                  {"Name": "instance-state-name", "Values": LIVE_STATES}]}
            if token:
                kwargs["NextToken"] = token
            page = self.call(self.ec2.describe_instances, **kwargs)
            ids += [i["InstanceId"] for r in page.get("Reservations", []) for i in r.get("Instances", [])]
            token = page.get("NextToken")
            if not token:
                return ids

    def wait_until_no_instances(self, timeout: float) -> list[str]:
        deadline = self.clock() + timeout
        while True:
            remaining = self.karpenter_instances()
            if not remaining or self.clock() >= deadline:
                return remaining
            self.sleep(self.poll_interval)

    # --- the steps ------------------------------------------------------------------------------------
    def run(self) -> dict:
        summary: dict[str, list[str]] = {"terminated": [], "launch_templates": [], "instance_profiles": []}
        leftovers = self.wait_until_no_instances(self.drain_timeout)
        if leftovers:
            LOG.info("terminating %d instances Karpenter did not drain: %s", len(leftovers), leftovers)
            for start in range(0, len(leftovers), 50):
                self.call(self.ec2.terminate_instances, InstanceIds=leftovers[start:start + 50])
            summary["terminated"] = leftovers
            still = self.wait_until_no_instances(self.terminate_timeout)
            if still:
                LOG.warning("instances still shutting down after %ss: %s", self.terminate_timeout, still)
        summary["launch_templates"] = self.delete_launch_templates()
        summary["instance_profiles"] = self.delete_instance_profiles()
        return summary

    def delete_launch_templates(self) -> list[str]:
        deleted: list[str] = []
        token: Optional[str] = None
        while True:
            kwargs = {"Filters": [self.owned_filter]}
            if token:
                kwargs["NextToken"] = token
            page = self.call(self.ec2.describe_launch_templates, **kwargs)
            for template in page.get("LaunchTemplates", []):
                self.call(self.ec2.delete_launch_template, LaunchTemplateId=template["LaunchTemplateId"])
                deleted.append(template["LaunchTemplateId"])
            token = page.get("NextToken")
            if not token:
                return deleted

    def delete_instance_profiles(self) -> list[str]:
        """Karpenter 1.x creates instance profiles under /karpenter/<region>/<cluster>/<nodeclass uid>/."""
        deleted: list[str] = []
        prefix = f"/karpenter/{self.region}/{self.cluster}/"
        marker: Optional[str] = None
        while True:
            kwargs = {"PathPrefix": prefix}
            if marker:
                kwargs["Marker"] = marker
            page = self.call(self.iam.list_instance_profiles, **kwargs)
            for profile in page.get("InstanceProfiles", []):
                if not profile["Path"].startswith(prefix):
                    continue  # defensive: never act outside this cluster's path
                name = profile["InstanceProfileName"]
                for role in profile.get("Roles", []):
                    self.call(self.iam.remove_role_from_instance_profile, InstanceProfileName=name,
                              RoleName=role["RoleName"])
                self.call(self.iam.delete_instance_profile, InstanceProfileName=name)
                deleted.append(name)
            if not page.get("IsTruncated"):
                return deleted
            marker = page.get("Marker")


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
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - CloudFormation's presigned URL
        response.read()


def handler(event: dict, context: Any, teardown_factory: Optional[Callable[[], Teardown]] = None,
            respond: Callable[..., None] = send_response) -> None:
    LOG.info("%s request for %s", event.get("RequestType"), event.get("LogicalResourceId"))
    if event.get("RequestType") != "Delete":
        respond(event, context, "SUCCESS")
        return
    try:
        if teardown_factory is None:
            import boto3
            from botocore.config import Config

            config = Config(retries={"mode": "standard", "max_attempts": 10})
            teardown = Teardown(ec2=boto3.client("ec2", config=config), iam=boto3.client("iam", config=config),
                                cluster=os.environ["CLUSTER_NAME"], region=os.environ["AWS_REGION"])
        else:
            teardown = teardown_factory()
        summary = teardown.run()
        LOG.info("teardown summary: %s", json.dumps(summary))
        respond(event, context, "SUCCESS", data={k: str(len(v)) for k, v in summary.items()})
    except Exception as err:  # report, so the stack shows why instead of hanging for an hour
        LOG.exception("teardown failed")
        respond(event, context, "FAILED", reason=f"Karpenter teardown failed: {err}")
