"""The running cluster as the resources live at one step of a deploy make it: what a replay checks its
invariants on. Everything is read from the templates' resources as they stand at that step (old or new
properties, both physical resources of a replacement until the cleanup deletes the old one).

What each fact relies on (the sources of the invariants in ``invariants.py``):
- aws-auth: aws-cdk-lib 2.275's ``AwsAuth`` writes one ConfigMap manifest (``mapRoles``), applied with ``kubectl
  apply`` and overwritten as a whole on every update (kubectl-handler ``apply``); EKS reads it in the modes
  ``CONFIG_MAP`` (unset) and ``API_AND_CONFIG_MAP`` (EKS User Guide, "Grant IAM users access to Kubernetes").
- access entries (``AWS::EKS::AccessEntry``) count in ``API_AND_CONFIG_MAP`` and ``API``; EKS creates the entries of
  managed node groups' and Fargate profiles' roles itself in those modes (EKS User Guide, "Create access entries").
- Fargate: a pod whose namespace and labels match a profile's selector is scheduled on Fargate, whatever other
  capacity exists (EKS User Guide, "Fargate profile"); its node authenticates with the profile's pod execution role.
- the managed node group's nodes authenticate with its node role and carry its taints.
- credentials are injected when a pod is created: IRSA from the service account's ``eks.amazonaws.com/role-arn``
  annotation (needs the cluster's OIDC provider), Pod Identity from an association of the service account (needs
  the ``eks-pod-identity-agent`` add-on, and never works on Fargate: EKS User Guide, "EKS Pod Identity
  restrictions").
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from constructs_lib.karpenter.names import CONTROLLER_POD_LABELS, COREDNS_POD_LABELS
from tooling.review.lifecycle_model import _nested_template_name

from .plan import NESTED_STACK

CLUSTER = "Custom::AWSCDK-EKS-Cluster"
FARGATE = ("Custom::AWSCDK-EKS-FargateProfile", "AWS::EKS::FargateProfile")
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
HELM = "Custom::AWSCDK-EKS-HelmChart"
IRSA_ANNOTATION = "eks.amazonaws.com/role-arn"
# Karpenter 1.14.1's chart (values.yaml): the controller tolerates CriticalAddonsOnly unless told otherwise;
# EKS's coredns add-on tolerates it too (its Deployment's tolerations).
SYSTEM_TOLERATION = "CriticalAddonsOnly"


class Resolver:
    """CloudFormation values as tokens that name what they refer to: ``«<key>»`` for a resource (``Ref`` and
    ``Fn::GetAtt`` alike: the key identifies the role, queue, ...), a nested stack's output followed to the value
    inside it, a nested stack's parameter to what its parent passes."""

    def __init__(self, *template_sets: Mapping[str, dict[str, Any]]) -> None:
        self.parsed: dict[tuple[int, str], Any] = {}  # a property's JSON text, parsed once (by the value's identity)
        self.scopes: dict[str, dict[str, Any]] = {}
        # every scope's logical ids across the sets: a resource only the old templates have (a role the deploy
        # deletes) is still what an old object refers to
        self.ids: dict[str, set[str]] = {}
        self.parents: dict[str, tuple[str, dict[str, Any]]] = {}
        for templates in template_sets:  # later sets win: the new templates' outputs over the old ones'
            for name in templates:
                if not name.endswith(".nested.template"):
                    self._add(templates, name, name.removesuffix(".template"))

    def _add(self, templates: Mapping[str, dict[str, Any]], name: str, prefix: str) -> None:
        template = templates[name]
        self.scopes[prefix] = template
        self.ids.setdefault(prefix, set()).update(template.get("Resources", {}))
        for logical_id, resource in template.get("Resources", {}).items():
            if resource.get("Type") == NESTED_STACK and "aws:cdk:path" in resource.get("Metadata", {}):
                try:
                    inner = _nested_template_name(resource, templates)
                except ValueError:
                    continue
                self.parents[f"{prefix}/{logical_id}"] = (prefix, resource)
                self._add(templates, inner, f"{prefix}/{logical_id}")

    def parse(self, value: Any, prefix: str, default: Any) -> Any:
        """A property holding JSON text (a manifest, Helm values), tokens for its intrinsics, parsed (``default``
        when it is not JSON)."""
        key = (id(value), prefix)
        if key not in self.parsed:
            try:
                self.parsed[key] = json.loads(self.token(value, prefix))
            except json.JSONDecodeError:
                self.parsed[key] = default
        return self.parsed[key]

    def token(self, value: Any, prefix: str) -> str:
        if isinstance(value, str):
            return value
        if isinstance(value, dict) and len(value) == 1:
            (fn, arg), resources = next(iter(value.items())), self.scopes.get(prefix, {}).get("Resources", {})
            if fn == "Ref":
                if arg in resources or arg in self.ids.get(prefix, ()):
                    return f"«{prefix}/{arg}»"
                if prefix in self.parents:  # a nested stack's parameter: what its parent passes
                    parent, resource = self.parents[prefix]
                    passed = resource.get("Properties", {}).get("Parameters", {}).get(arg)
                    if passed is not None:
                        return self.token(passed, parent)
                return f"«{arg}»"
            if fn == "Fn::GetAtt":
                target, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                if str(attribute).startswith("Outputs.") and f"{prefix}/{target}" in self.parents:
                    inner = f"{prefix}/{target}"
                    output = self.scopes[inner].get("Outputs", {}).get(attribute.removeprefix("Outputs."))
                    if output is not None:
                        return self.token(output.get("Value"), inner)
                return f"«{prefix}/{target}»"
            if fn == "Fn::Join":
                sep, parts = arg
                return str(sep).join(self.token(p, prefix) for p in parts)
            if fn == "Fn::Sub":
                text = arg if isinstance(arg, str) else arg[0]
                return re.sub(r"\$\{([A-Za-z0-9]+)[^}]*\}", lambda m: self.token({"Ref": m.group(1)}, prefix), text)
        return json.dumps(value, sort_keys=True)


@dataclass(frozen=True)
class Physical:
    """One physical resource: a key's properties from the old or the new templates."""

    key: str
    type: str
    side: str  # old | new
    props: dict[str, Any]

    @property
    def prefix(self) -> str:
        return self.key.rsplit("/", 1)[0]


Live = dict[str, list[Physical]]  # key -> its physical resources (a replacement: two, the current last)


@dataclass(frozen=True)
class Host:
    kind: str  # fargate | nodegroup
    key: str
    role: str  # token
    selectors: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()  # fargate: (namespace, labels)
    taints: tuple[str, ...] = ()  # nodegroup: taint keys
    version: str | None = field(default=None, compare=False)  # (a node group's upgrade rolls its nodes one by one)
    side: str = "old"  # which physical resource (a replacement's old one is deleted in the cleanup)

    @property
    def name(self) -> str:
        return f"{'the Fargate profile' if self.kind == 'fargate' else 'the node group'} {self.key.rsplit('/', 1)[1]}"


@dataclass(frozen=True)
class Workload:
    name: str  # as a reviewer says it
    namespace: str
    labels: tuple[tuple[str, str], ...]
    tolerations: tuple[str, ...]


@dataclass
class World:
    has_cluster: bool = False
    version: str | None = None
    mode: str | None = None
    authorized: set[str] = field(default_factory=set)
    hosts: list[Host] = field(default_factory=list)
    roles: set[str] = field(default_factory=set)  # live IAM roles (tokens)
    oidc: bool = False  # an OIDC provider exists (or none is managed by the app: an existing cluster's)
    associations: dict[tuple[str, str], str] = field(default_factory=dict)  # (namespace, account) -> role token
    agent: bool = False  # the eks-pod-identity-agent add-on
    controller: dict[str, Any] | None = None  # the controller chart's values (its current physical)
    controller_namespace: str = "kube-system"
    pools: dict[str, str] = field(default_factory=dict)  # NodePool -> its EC2NodeClass
    classes: set[str] = field(default_factory=set)
    class_roles: dict[str, str] = field(default_factory=dict)  # EC2NodeClass -> the node role its nodes join with

    def workloads(self) -> list[Workload]:
        if not self.has_cluster:
            return []
        found = [Workload("CoreDNS", "kube-system", tuple(COREDNS_POD_LABELS.items()), (SYSTEM_TOLERATION,))]
        if self.controller is not None:
            tolerations = self.controller.get("tolerations", [{"key": SYSTEM_TOLERATION}])
            found.append(
                Workload(
                    "the Karpenter controller",
                    self.controller_namespace,
                    tuple(CONTROLLER_POD_LABELS.items()),
                    tuple(str(t.get("key")) for t in tolerations if isinstance(t, dict)),
                )
            )
        return found

    def place(self, workload: Workload) -> Host | None:
        """Where new pods of ``workload`` run: a matching Fargate profile first, else a node group whose taints
        they tolerate."""
        labels = dict(workload.labels)
        for host in self.hosts:
            if host.kind == "fargate" and any(
                ns == workload.namespace and all(labels.get(k) == v for k, v in sel) for ns, sel in host.selectors
            ):
                return host
        for host in self.hosts:
            if host.kind == "nodegroup" and set(host.taints) <= set(workload.tolerations):
                return host
        return None

    def ready(self, host: Host | None) -> bool:
        return host is not None and host.role in self.authorized


def _current(live: Live, types: tuple[str, ...] | str) -> list[Physical]:
    wanted = (types,) if isinstance(types, str) else types
    return [p[-1] for p in live.values() if p and p[-1].type in wanted]


def _all(live: Live, types: tuple[str, ...] | str) -> list[Physical]:
    wanted = (types,) if isinstance(types, str) else types
    return [x for p in live.values() for x in p if x.type in wanted]


def objects(physical: Physical, resolver: Resolver) -> list[dict[str, Any]]:
    """The Kubernetes objects of a manifest resource (intrinsics as tokens)."""
    found = resolver.parse(physical.props.get("Manifest", "[]"), physical.prefix, [])
    return [o for o in (found if isinstance(found, list) else [found]) if isinstance(o, dict)]


def chart_values(physical: Physical, resolver: Resolver) -> dict[str, Any]:
    values = resolver.parse(physical.props.get("Values", "{}"), physical.prefix, {})
    return values if isinstance(values, dict) else {}


def aws_auth(live: Live, resolver: Resolver) -> set[str] | None:
    """The roles the app's aws-auth manifest maps (None: the app has none)."""
    found = None
    for physical in _current(live, MANIFEST):
        for obj in objects(physical, resolver):
            if obj.get("kind") == "ConfigMap" and obj.get("metadata", {}).get("name") == "aws-auth":
                try:
                    entries = json.loads(obj.get("data", {}).get("mapRoles", "[]"))
                except json.JSONDecodeError:
                    entries = []
                found = (found or set()) | {str(e.get("rolearn")) for e in entries if isinstance(e, dict)}
    return found


def host_roles(live: Live, resolver: Resolver, key: str) -> set[str]:
    """The role of a Fargate profile or node group resource (each of its physical resources)."""
    roles = set()
    for p in live.get(key, []):
        if p.type in FARGATE:
            config = p.props.get("Config", p.props)
            roles.add(resolver.token(config.get("podExecutionRoleArn", config.get("PodExecutionRoleArn")), p.prefix))
        elif p.type == "AWS::EKS::Nodegroup":
            roles.add(resolver.token(p.props.get("NodeRole"), p.prefix))
    return roles


def world(live: Live, resolver: Resolver, config_map: set[str]) -> World:
    """The cluster as ``live`` makes it; ``config_map``: the roles the aws-auth ConfigMap maps right now."""
    w = World()
    clusters = _current(live, CLUSTER)
    if clusters:
        config = clusters[0].props.get("Config", {})
        w.has_cluster, w.version = True, config.get("version")
        w.mode = (config.get("accessConfig") or {}).get("authenticationMode")
    for p in _all(live, FARGATE):
        config = p.props.get("Config", p.props)
        selectors = tuple(
            (str(s.get("namespace", s.get("Namespace"))), tuple(sorted((s.get("labels") or {}).items())))
            for s in config.get("selectors", config.get("Selectors", []))
        )
        role = resolver.token(config.get("podExecutionRoleArn", config.get("PodExecutionRoleArn")), p.prefix)
        w.hosts.append(Host("fargate", p.key, role, selectors=selectors, version=w.version, side=p.side))
    for p in _all(live, "AWS::EKS::Nodegroup"):
        taints = tuple(str(t.get("Key")) for t in p.props.get("Taints", []))
        w.hosts.append(
            Host(
                "nodegroup",
                p.key,
                resolver.token(p.props.get("NodeRole"), p.prefix),
                taints=taints,
                version=p.props.get("Version"),
                side=p.side,
            )
        )
    w.roles = {f"«{p.key}»" for p in _all(live, "AWS::IAM::Role")}
    w.oidc = bool(_all(live, "AWS::IAM::OIDCProvider")) or not clusters
    if w.mode in (None, "CONFIG_MAP", "API_AND_CONFIG_MAP"):
        w.authorized |= config_map
    if w.mode in ("API_AND_CONFIG_MAP", "API"):
        w.authorized |= {
            resolver.token(p.props.get("PrincipalArn"), p.prefix) for p in _current(live, "AWS::EKS::AccessEntry")
        }
        w.authorized |= {h.role for h in w.hosts}  # EKS's own entries for node groups and Fargate profiles
    for p in _current(live, "AWS::EKS::PodIdentityAssociation"):
        w.associations[(str(p.props.get("Namespace")), str(p.props.get("ServiceAccount")))] = resolver.token(
            p.props.get("RoleArn"), p.prefix
        )
    w.agent = any(p.props.get("AddonName") == "eks-pod-identity-agent" for p in _current(live, "AWS::EKS::Addon"))
    for p in _current(live, HELM):
        if p.props.get("Release") == "karpenter":
            w.controller = chart_values(p, resolver)
            w.controller_namespace = str(p.props.get("Namespace", "kube-system"))
    for p in _current(live, MANIFEST):
        for obj in objects(p, resolver):
            name = str(obj.get("metadata", {}).get("name"))
            if obj.get("kind") == "NodePool":
                ref = obj.get("spec", {}).get("template", {}).get("spec", {}).get("nodeClassRef", {})
                w.pools[name] = str(ref.get("name"))
            elif obj.get("kind") == "EC2NodeClass":
                w.classes.add(name)
                role = obj.get("spec", {}).get("role")
                if role:
                    w.class_roles[name] = str(role)
    return w
