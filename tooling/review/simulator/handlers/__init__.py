"""aws-cdk's real EKS cluster-resource handler, run offline as an oracle.

The code a deploy runs for ``Custom::AWSCDK-EKS-Cluster`` and ``Custom::AWSCDK-EKS-FargateProfile`` is the bundled
``custom-resource-handlers/dist/aws-eks/cluster-resource-handler/index.js`` of the installed aws-cdk-lib (the Python
wheel carries the npm package as ``aws_cdk/_jsii/aws-cdk-lib@<version>.jsii.tgz``). It is extracted once into
``.cache/aws-cdk-handlers/<version>/`` (git-ignored) and run by ``harness.js`` on the ``node`` of PATH (``make``
puts the project's pinned Node.js 22 first): ONE long-lived process per Python process, JSON lines over its
stdin/stdout, a few milliseconds a query.

Hermetic: the bundle does not contain the AWS SDK (the Lambda runtime provides ``@aws-sdk/client-eks`` and
``@aws-sdk/credential-providers``); the harness gives the handler in-process fakes of both that record every call
and answer from a small cluster state sent with each query. No socket is opened (node's http/https/net/tls throw
if called), the child's environment holds fake credentials and no proxy, and the child is killed at exit.

What the simulator calls (each returns a :class:`HandlerOutcome`; configs are the template's ``Config``
properties, CloudFormation intrinsics allowed)::

    from tooling.review.simulator import handlers
    out = handlers.cluster_update(old_config, new_config)            # CloudFormation's Update, forward
    back = handlers.cluster_update(new_config, old_config,            # its rollback: old and new swapped, the
                                   deployed_version="1.36")           # cluster as the forward left it
    out.error        # "Only one type of update - ..." or None
    out.calls        # [("DescribeCluster", {"name": ...}), ("UpdateClusterVersion", {"name": ..., "version": ...})]
    out.operations   # ["DescribeCluster", "UpdateClusterVersion"]
    out.analysis     # the handler's own analyzeUpdate, {"updateVersion": True, ...}
    handlers.cluster_create(config); handlers.cluster_delete(config)
    handlers.fargate_profile_create(config); handlers.fargate_profile_update(old, new); ...delete(config)

Every ``Config`` goes through :func:`karpenter_stack.cluster_updates.delivered` (intrinsics as stable placeholder
strings, keys in CloudFormation's order) and its scalars become strings, as CloudFormation delivers a custom
resource's properties. Only ``onEvent`` runs (what CloudFormation's first call does); ``is_complete`` runs the
provider's polling call when asked.
"""

from __future__ import annotations

import atexit
import functools
import importlib.metadata
import json
import os
import shutil
import subprocess
import tarfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from karpenter_stack.cluster_updates import delivered

CLUSTER = "Custom::AWSCDK-EKS-Cluster"
FARGATE_PROFILE = "Custom::AWSCDK-EKS-FargateProfile"
HANDLER_MEMBER = "package/custom-resource-handlers/dist/aws-eks/cluster-resource-handler/index.js"
HARNESS = Path(__file__).with_name("harness.js")
CACHE = Path(__file__).resolve().parents[4] / ".cache" / "aws-cdk-handlers"
ROLE = "arn:aws:iam::111111111111:role/cluster-creation-role"
# The child's whole environment: no proxy, fake credentials, nothing of the caller's.
CHILD_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIDFAKEFAKEFAKE",
    "AWS_SECRET_ACCESS_KEY": "fake",
    "AWS_SESSION_TOKEN": "fake",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "NODE_OPTIONS": "",
}
MINIMUM_NODE = 22


class HarnessError(RuntimeError):
    """The handler could not be run (no Node.js 22, no aws-cdk-lib, the harness died)."""


@dataclass(frozen=True)
class HandlerOutcome:
    """What one handler call did: the EKS calls it made (operation, request parameters without undefined
    members), what it returned to the provider, or the message it threw (CloudFormation's failure reason)."""

    calls: list[tuple[str, dict[str, Any]]]
    error: str | None
    result: Any = None
    analysis: dict[str, bool] | None = None
    assume_role: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def operations(self) -> list[str]:
        return [op for op, _ in self.calls]

    @property
    def kinds(self) -> list[str]:
        """The analysis keys the handler saw change (its own order)."""
        return [k for k, v in (self.analysis or {}).items() if v]

    def call(self, operation: str) -> dict[str, Any] | None:
        """The parameters of the first call of ``operation`` (None: not called)."""
        return next((params for op, params in self.calls if op == operation), None)


def aws_cdk_lib_version() -> str:
    return importlib.metadata.version("aws-cdk-lib")


def handler_path() -> Path:
    """The installed aws-cdk-lib's cluster handler, extracted once (per version) into the cache."""
    version = aws_cdk_lib_version()
    target = CACHE / version / "cluster-resource-handler" / "index.js"
    if target.is_file():
        return target
    import aws_cdk  # (the wheel's package: the tarball sits in its _jsii folder)

    tgz = Path(aws_cdk.__file__).parent / "_jsii" / f"aws-cdk-lib@{version}.jsii.tgz"
    if not tgz.is_file():
        raise HarnessError(f"no {tgz.name} next to the installed aws_cdk package ({tgz.parent})")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tgz) as archive:
        member = archive.extractfile(HANDLER_MEMBER)
        if member is None:
            raise HarnessError(f"{tgz.name} has no {HANDLER_MEMBER}")
        temporary = target.with_name(f"index.js.{os.getpid()}.tmp")
        temporary.write_bytes(member.read())
    temporary.replace(target)  # (atomic: parallel test workers may extract at once)
    return target


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        raise HarnessError("no node on PATH: run the tests through make (it puts the pinned Node.js 22 first)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < MINIMUM_NODE:
        raise HarnessError(f"node {version} on PATH: run through make (the project's Node.js {MINIMUM_NODE})")
    return node


def _cfn_strings(value: Any) -> Any:
    """CloudFormation delivers a custom resource's scalar properties as strings."""
    if isinstance(value, dict):
        return {k: _cfn_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cfn_strings(v) for v in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def properties(config: dict[str, Any] | None) -> dict[str, Any]:
    """A ``Config`` as CloudFormation hands it to the handler (see the module docstring)."""
    return {"AssumeRoleArn": ROLE, "Config": _cfn_strings(delivered(config or {}))}


class ClusterHandler:
    """One Node.js process running the real handler; queries are serialized (thread-safe)."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [_node(), str(HARNESS), str(handler_path())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                env={"PATH": os.environ.get("PATH", ""), **CHILD_ENV},
            )
        return self._process

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def invoke(self, fn: str, event: dict[str, Any], state: dict[str, Any]) -> HandlerOutcome:
        """Call the handler's exported ``fn`` (``onEvent`` or ``isComplete``) with a CloudFormation event."""
        with self._lock:
            process = self._start()
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps({"fn": fn, "event": event, "state": state}) + "\n")
            process.stdin.flush()
            line = process.stdout.readline()
        if not line:
            self.close()
            raise HarnessError(
                "the handler harness exited (run `node tooling/review/simulator/handlers/harness.js` to see why)"
            )
        reply = json.loads(line)
        return HandlerOutcome(
            calls=[(op, params) for op, params in reply["calls"]],
            error=reply["error"],
            result=reply["result"],
            analysis=reply["analysis"],
            assume_role=reply["assumeRole"],
        )


@functools.cache
def handler() -> ClusterHandler:
    """The process's one handler (started on first use, killed at exit)."""
    running = ClusterHandler()
    atexit.register(running.close)
    return running


def _event(
    request: str,
    resource_type: str,
    config: dict[str, Any] | None,
    old_config: dict[str, Any] | None = None,
    physical_id: str | None = None,
    logical_id: str = "Cluster",
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "RequestType": request,
        "RequestId": "11111111-2222-3333-4444-555555555555",
        "LogicalResourceId": logical_id,
        "StackId": "arn:aws:cloudformation:us-east-1:111111111111:stack/eks-karpenter/0",
        "ResourceType": resource_type,
        "ResourceProperties": properties(config),
    }
    if physical_id is not None:
        event["PhysicalResourceId"] = physical_id
    if old_config is not None:
        event["OldResourceProperties"] = properties(old_config)
    return event


def _name(config: dict[str, Any] | None, default: str = "eks-karpenter") -> str:
    name = delivered((config or {}).get("name"))
    return name if isinstance(name, str) and name else default


def _cluster_state(config: dict[str, Any] | None, version: Any, auth_mode: Any, status: str) -> dict[str, Any]:
    config = config or {}
    mode = (config.get("accessConfig") or {}).get("authenticationMode") if auth_mode is ... else auth_mode
    return {
        "name": _name(config),
        "status": status,
        "version": config.get("version") if version is ... else version,
        "accessConfig": {"authenticationMode": mode or "CONFIG_MAP"},
    }


def cluster_update(
    old_config: dict[str, Any],
    new_config: dict[str, Any],
    *,
    deployed_version: Any = ...,
    deployed_auth_mode: Any = ...,
    physical_id: str | None = None,
) -> HandlerOutcome:
    """CloudFormation's Update of the cluster resource from ``old_config`` to ``new_config`` (``onEvent``).

    The fake cluster is ACTIVE, named ``physical_id`` (default: ``old_config``'s name), and DescribeCluster answers
    ``deployed_version`` / ``deployed_auth_mode`` (default: what ``old_config`` says; a mode left unset reads
    CONFIG_MAP, as EKS answers). For CloudFormation's rollback, swap the configs and give the cluster's state
    after the forward (e.g. ``deployed_version`` = the forward's new version when its upgrade went through)."""
    name = physical_id or _name(old_config)
    state = {"cluster": _cluster_state(old_config, deployed_version, deployed_auth_mode, "ACTIVE") | {"name": name}}
    return handler().invoke("onEvent", _event("Update", CLUSTER, new_config, old_config, name), state)


def cluster_create(config: dict[str, Any]) -> HandlerOutcome:
    """CloudFormation's Create of the cluster resource (``onEvent``): the CreateCluster request."""
    return handler().invoke("onEvent", _event("Create", CLUSTER, config), {"cluster": None})


def cluster_delete(config: dict[str, Any], *, exists: bool = True, physical_id: str | None = None) -> HandlerOutcome:
    """CloudFormation's Delete of the cluster resource (``onEvent``); ``exists=False``: EKS no longer has it."""
    name = physical_id or _name(config)
    state = {"cluster": _cluster_state(config, ..., ..., "ACTIVE") | {"name": name} if exists else None}
    return handler().invoke("onEvent", _event("Delete", CLUSTER, config, physical_id=name), state)


def cluster_is_complete(
    request: str,
    config: dict[str, Any],
    *,
    old_config: dict[str, Any] | None = None,
    status: str = "ACTIVE",
    exists: bool = True,
    update_status: str | None = None,
    update_id: str | None = None,
) -> HandlerOutcome:
    """The provider's polling call (``isComplete``) after ``request`` (Create/Update/Delete): the cluster in
    ``status`` (or gone), the EKS update ``update_id`` (what onEvent returned as EksUpdateId) in
    ``update_status`` (InProgress, Successful, Failed, Cancelled)."""
    name = _name(config)
    event = _event(request, CLUSTER, config, old_config if request == "Update" else None, name)
    if update_id is not None:
        event["EksUpdateId"] = update_id
    state: dict[str, Any] = {"cluster": _cluster_state(config, ..., ..., status) | {"name": name} if exists else None}
    if update_status is not None:
        state["update"] = {"status": update_status}
    return handler().invoke("isComplete", event, state)


def fargate_profile_create(config: dict[str, Any], *, logical_id: str = "FargateProfile") -> HandlerOutcome:
    """CloudFormation's Create of a Fargate profile resource (``onEvent``): CreateFargateProfile."""
    return handler().invoke("onEvent", _event("Create", FARGATE_PROFILE, config, logical_id=logical_id), {})


def fargate_profile_update(
    old_config: dict[str, Any], new_config: dict[str, Any], *, physical_id: str, logical_id: str = "FargateProfile"
) -> HandlerOutcome:
    """CloudFormation's Update of a Fargate profile (``onEvent``): the handler creates a new profile (a new
    physical id, so CloudFormation deletes the old one in the cleanup phase)."""
    event = _event("Update", FARGATE_PROFILE, new_config, old_config, physical_id, logical_id)
    return handler().invoke("onEvent", event, {})


def fargate_profile_delete(config: dict[str, Any], *, physical_id: str) -> HandlerOutcome:
    """CloudFormation's Delete of a Fargate profile (``onEvent``): DeleteFargateProfile."""
    return handler().invoke("onEvent", _event("Delete", FARGATE_PROFILE, config, physical_id=physical_id), {})
