"""A small model of CloudFormation's lifecycle semantics over synthesized templates, nested stacks
included, to rehearse create, destroy and update rollback offline.

What it models (CloudFormation's documented behaviour):
- a resource depends on what its ``DependsOn``, ``Ref``, ``Fn::GetAtt`` and ``Fn::Sub`` name;
- create: each resource starts once everything it depends on is created; independent ones in parallel;
- delete (stack deletion): the reverse -- a resource is deleted once everything that depends on it is
  deleted; what nothing depends on goes first, all of it in parallel;
- a nested stack is a resource whose own resources are created after the nested stack's
  dependencies and before its dependents (and deleted in the reverse order);
- an update rollback deletes what the update created, in the same reverse order;
- a resource with ``DeletionPolicy: Retain`` is left in place (its "delete" takes no time).

Durations are worst cases per resource type: the timeout that bounds an operation where one exists
(service timeouts, handler and waiter limits), a generous estimate otherwise. They make critical paths
comparable between versions of the app; they are not predictions of a real deploy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

MIN = 60

# type -> (create, delete) worst-case seconds, and where the figure comes from.
DURATIONS: dict[str, tuple[int, int, str]] = {
    "Custom::AWSCDK-EKS-Cluster": (60 * MIN, 60 * MIN, "aws-cdk's cluster provider waiter: totalTimeout 1 h"),
    "Custom::AWSCDK-EKS-FargateProfile": (60 * MIN, 60 * MIN, "same waiter (EKS serializes profiles)"),
    # Refined per resource in Lifecycle.duration: Helm's --timeout when it waits, drains bounded by
    # terminationGracePeriod; the service timeout where nothing else bounds the operation.
    "Custom::AWSCDK-EKS-KubernetesResource": (2 * MIN, 16 * MIN, "ServiceTimeout of kubectl resources"),
    "Custom::AWSCDK-EKS-HelmChart": (16 * MIN, 16 * MIN, "ServiceTimeout of kubectl resources"),
    "Custom::AWSCDK-EKS-KubernetesPatch": (2 * MIN, 2 * MIN, "kubectl patch, retried 3 times"),
    "Custom::KarpenterTeardown": (1 * MIN, 15 * MIN, "create: a no-op answer; delete: its ServiceTimeout"),
    "AWS::EKS::Nodegroup": (30 * MIN, 30 * MIN, "estimate: managed node group create/delete"),
    "AWS::EKS::Addon": (20 * MIN, 20 * MIN, "estimate: EKS add-on create/delete"),
    "AWS::CloudFormation::Stack": (0, 0, "the nested stack's own resources carry its time"),
    "AWS::EC2::NatGateway": (10 * MIN, 10 * MIN, "estimate: NAT gateway create/delete"),
    "AWS::Lambda::Function": (2 * MIN, 1 * MIN, "estimate (VPC functions wait for ENIs)"),
    "AWS::IAM::Role": (1 * MIN, 1 * MIN, "estimate (IAM eventual consistency)"),
}
DEFAULT_DURATION = (1 * MIN, 1 * MIN, "estimate: simple control-plane resources")
# Custom resources served by a Lambda of their own (AwsCustomResource, CfnJson, ...): bounded by
# CloudFormation's default service timeout unless they set one.
CUSTOM_DEFAULT = (5 * MIN, 5 * MIN, "estimate: SDK-call custom resources")

_SUB_REFERENCE = re.compile(r"\$\{([A-Za-z0-9]+)(?:\.[A-Za-z0-9.]+)?\}")


@dataclass
class Node:
    key: str  # "<stack>/<logical id>"
    type: str
    path: str  # aws:cdk:path, "" where the template has none
    resource: dict[str, Any] = field(repr=False)

    @property
    def logical_id(self) -> str:
        return self.key.rsplit("/", 1)[1]

    @property
    def retained(self) -> bool:
        """DeletionPolicy Retain: CloudFormation forgets it instead of deleting it."""
        return self.resource.get("DeletionPolicy") == "Retain"


def _seconds(duration: str) -> int:
    return int(duration.removesuffix("s"))


def _text(value: Any) -> str:
    """A property's string content, with intrinsic functions' arguments flattened in."""
    return value if isinstance(value, str) else json.dumps(value).replace('\\"', '"')


def references(value: Any) -> Iterator[str]:
    """The logical ids (and parameters, pseudo parameters) a property value refers to."""
    if isinstance(value, dict):
        if set(value) == {"Ref"}:
            yield value["Ref"]
        elif set(value) == {"Fn::GetAtt"}:
            target = value["Fn::GetAtt"]
            yield target[0] if isinstance(target, list) else target.split(".")[0]
        elif set(value) == {"Fn::Sub"}:
            text, variables = (value["Fn::Sub"], {}) if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"]
            yield from (name for name in _SUB_REFERENCE.findall(text) if name not in variables)
            yield from references(variables)
        else:
            for item in value.values():
                yield from references(item)
    elif isinstance(value, list):
        for item in value:
            yield from references(item)


def depends_transitively(graph: dict[str, set[str]], a: str, b: str) -> bool:
    """Whether ``a`` depends on ``b`` through any chain of dependencies in ``graph``."""
    seen, todo = set(), [a]
    while todo:
        for dep in graph.get(todo.pop(), ()):
            if dep == b:
                return True
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return False


def _nested_template_name(resource: dict[str, Any], names: Iterable[str]) -> str:
    """The nested template of a nested stack resource: its file is named after the construct path as
    CDK's unique ids are (components named ``Default`` dropped, a component repeating the one before it
    written once)."""
    path = resource["Metadata"]["aws:cdk:path"].split(".NestedStack/")[0]
    components = [p for p in path.split("/") if p != "Default"]
    kept = [p for i, p in enumerate(components) if i == 0 or p != components[i - 1]]
    prefix = re.sub(r"[^A-Za-z0-9]", "", "".join(kept))
    (name,) = [n for n in names if re.fullmatch(re.escape(prefix) + r"[0-9A-F]{8}\.nested\.template", n)]
    return name


class Lifecycle:
    """The flattened dependency graph of a stack and its nested stacks."""

    def __init__(self, templates: dict[str, dict[str, Any]], root: str) -> None:
        self.nodes: dict[str, Node] = {}
        self.deps: dict[str, set[str]] = {}
        self._add(templates, root, root.removesuffix(".template"), outer=set())
        self.dependents: dict[str, set[str]] = {k: set() for k in self.nodes}
        for key, deps in self.deps.items():
            for dep in deps:
                self.dependents[dep].add(key)

    def _add(self, templates: dict[str, dict[str, Any]], name: str, stack: str, outer: set[str]) -> set[str]:
        resources = templates[name]["Resources"]
        keys = set()
        for logical_id, resource in resources.items():
            key = f"{stack}/{logical_id}"
            keys.add(key)
            depends = resource.get("DependsOn", [])
            names = ({depends} if isinstance(depends, str) else set(depends)) | set(
                references(resource.get("Properties", {}))
            )
            self.nodes[key] = Node(
                key, resource["Type"], resource.get("Metadata", {}).get("aws:cdk:path", ""), resource
            )
            self.deps[key] = {f"{stack}/{n}" for n in names if n in resources} | outer
        for logical_id, resource in resources.items():
            if resource["Type"] == "AWS::CloudFormation::Stack":
                key = f"{stack}/{logical_id}"
                inner = self._add(templates, _nested_template_name(resource, templates), key, outer=set(self.deps[key]))
                self.deps[key] |= inner  # the nested stack completes when everything inside it has
        return keys

    # --- queries ----------------------------------------------------------------------------------
    def find(self, type_: str | None = None, path: str = "", logical_id: str = "") -> list[str]:
        return sorted(
            k
            for k, n in self.nodes.items()
            if (type_ is None or n.type == type_) and path in n.path and logical_id in n.logical_id
        )

    def leaves(self) -> list[str]:
        """What nothing depends on: deleted first, all in parallel, when the stack is deleted."""
        return sorted(k for k, d in self.dependents.items() if not d)

    def depends_transitively(self, a: str, b: str) -> bool:
        return depends_transitively(self.deps, a, b)

    @staticmethod
    def duration(node: Node, operation: str) -> int:
        if operation == "delete" and node.retained:
            return 0
        create, delete, _ = DURATIONS.get(node.type) or (
            CUSTOM_DEFAULT if node.type.startswith("Custom::") else DEFAULT_DURATION
        )
        props = node.resource.get("Properties", {})
        if node.type == "Custom::AWSCDK-EKS-HelmChart":
            # helm upgrade --install / helm uninstall: bounded by --timeout only when it waits; the
            # chart pull and the handler's start add a minute or two.
            helm = _seconds(props["Timeout"]) + 2 * MIN if props.get("Wait") else 3 * MIN
            return helm
        if node.type == "Custom::AWSCDK-EKS-KubernetesResource" and operation == "delete":
            kinds = set(re.findall(r'"kind":"([A-Za-z0-9]+)"', _text(props.get("Manifest", ""))))
            if "NodePool" in kinds:
                # No finalizer: kubectl returns once the pool is gone; its NodeClaims (owner references)
                # are deleted in the background, and the drain bound waits for their drains. (Checked
                # first: a pool's manifest names its EC2NodeClass too.)
                return 2 * MIN
            if "EC2NodeClass" in kinds:
                # kubectl delete waits for the class's finalizer: its NodeClaims, whose instances the drain
                # bound has terminated (nodes NotReady after the node-monitor grace period, ~1 min), then
                # the deletion of its instance profiles and launch templates.
                return 5 * MIN
            return 2 * MIN  # objects without finalizers
        return create if operation == "create" else delete

    # --- schedules ---------------------------------------------------------------------------------
    def schedule(self, operation: str, only: set[str] | None = None) -> Schedule:
        """Earliest start and end of each resource's create, or of its delete, with unlimited
        parallelism. ``only`` restricts a delete to a subset (an update rollback)."""
        members = set(self.nodes) if only is None else only
        waits_for = self.deps if operation == "create" else self.dependents
        start: dict[str, int] = {}
        end: dict[str, int] = {}
        cause: dict[str, str | None] = {}
        pending = set(members)
        while pending:
            ready = [k for k in pending if all(w in end for w in waits_for[k] if w in members)]
            assert ready, f"dependency cycle among {sorted(pending)[:5]}"
            for key in ready:
                before = [w for w in waits_for[key] if w in members]
                last = max(before, key=lambda w: (end[w], w), default=None)  # ties: by key, every run alike
                start[key] = end[last] if last else 0
                end[key] = start[key] + self.duration(self.nodes[key], operation)
                cause[key] = last
                pending.discard(key)
        return Schedule(operation, self, start, end, cause)

    def rollback_deletes(self, before: Lifecycle) -> set[str]:
        """What an update from ``before`` to this template set creates, and so its rollback deletes."""
        return set(self.nodes) - set(before.nodes)


@dataclass
class Schedule:
    operation: str
    lifecycle: Lifecycle
    start: dict[str, int]
    end: dict[str, int]
    cause: dict[str, str | None]

    @property
    def total(self) -> int:
        return max(self.end.values(), default=0)

    def critical_path(self) -> list[str]:
        key: str | None = max(self.end, key=lambda k: (self.end[k], k)) if self.end else None
        path = []
        while key is not None:
            path.append(key)
            key = self.cause[key]
        return path[::-1]

    def describe(self) -> str:
        lines = [f"{self.operation} critical path, worst case {self.total // 60} min:"]
        for key in self.critical_path():
            node = self.lifecycle.nodes[key]
            took = self.end[key] - self.start[key]
            lines.append(
                f"  {self.start[key] // 60:>4}–{self.end[key] // 60:<4} min  {node.type:<40} "
                f"{node.path or key}  (+{took // 60} min)"
            )
        return "\n".join(lines)
