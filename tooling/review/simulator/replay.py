"""The deploy simulator's replay (tooling/review/simulator/__init__.py runs it): the invariants it checks and what it
finds (Violation, Finding, Run, Simulation), one step at a time as aws-cdk's handlers, EKS and the nodes take it
(_Replay), and the record of when each invariant breaks and mends (_Tracker)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from karpenter_stack.cluster_updates import UpdateRefused, is_downgrade, update, version_step_refusal
from tooling.review.lifecycle_model import Lifecycle

from . import plan
from .plan import CLEANUP, ROLLBACK, ROLLBACK_CLEANUP, Step
from .world import (
    CLUSTER,
    FARGATE,
    HELM,
    IRSA_ANNOTATION,
    MANIFEST,
    Host,
    Live,
    Physical,
    Resolver,
    World,
    aws_auth,
    host_roles,
    world,
)

CONTROLLER = "the Karpenter controller"
# Every replica of CoreDNS or the controller gone at once: EKS deletes the pods of a deleted Fargate profile
# together (EKS User Guide, "Delete a Fargate profile"), not one at a time as a node group's drain does.
OUTAGE = "every replica"


@dataclass(frozen=True)
class Violation:
    invariant: str  # authorized | running | every replica | credentials | one update | skew | references
    text: str  # what breaks, in a platform engineer's words
    first: Step | None  # the step after which it starts (None: before the deploy starts)
    last: Step | None  # the last step during which it holds (None: still at the end)
    until: Step | None  # the step that ends it (None: it outlasts the deploy)
    subject: str = ""  # what it is about (a host's key for "every replica")
    minutes: int = 0  # how long at worst: the steps' worst-case durations up to the one that ends it

    def describe(self) -> str:
        if self.invariant == OUTAGE and self.first is not None:  # (an event of one step, not a state)
            return f"at {self.first.describe()}, {self.text} ({self.invariant})"
        start = "from the start" if self.first is None else f"from {self.first.describe()}"
        end = f"until {self.until.describe()}" if self.until is not None else "to the end of the deploy and after it"
        took = f" (at worst {self.minutes} min)" if self.until is not None and self.minutes else ""
        return f"{start} {end}{took}, {self.text} ({self.invariant})"


@dataclass(frozen=True)
class Finding:
    text: str
    severity: str  # fails | one way (a rollback the cluster handler or EKS refuses) | outage (acknowledgeable both)
    subject: str  # the invariant broken, or the key of the step that fails (its stack's key: "<stack>/...")


@dataclass
class Run:
    """One replay: the steps taken, where it failed, what broke."""

    steps: list[Step] = field(default_factory=list)
    calls: list[tuple[Step, list[str]]] = field(default_factory=list)  # the cluster handler's EKS calls per step
    failed: tuple[Step, str] | None = None  # the step that failed and why
    wedged: tuple[Step, str] | None = None  # a rollback step refused: UPDATE_ROLLBACK_FAILED
    violations: list[Violation] = field(default_factory=list)


@dataclass
class Simulation:
    deploy: Run
    rollbacks: dict[str, Run]  # the update-phase step that fails (its key) -> the rollback replayed from there

    @property
    def violations(self) -> list[Violation]:
        return self.deploy.violations

    def findings(self) -> list[Finding]:
        """What the review reports: the deploy's broken invariants and its failure (the deploy fails), and, for a
        failure at each step of the update phase, a rollback that breaks an invariant (fails) or that aws-cdk's
        cluster handler or EKS refuses (one way: the stack would be left in UPDATE_ROLLBACK_FAILED)."""
        out = [
            Finding(v.describe(), "outage", v.subject)
            if v.invariant == OUTAGE
            else Finding(v.describe(), "fails", v.invariant)
            for v in self.deploy.violations
        ]
        if self.deploy.failed:
            step, why = self.deploy.failed
            out.append(Finding(f"the deploy fails at {step.describe()}: {why}", "fails", step.key))
        if self.deploy.wedged:
            step, why = self.deploy.wedged
            out.append(
                Finding(
                    f"its rollback is refused at {step.describe()}: {why}: UPDATE_ROLLBACK_FAILED", "fails", step.key
                )
            )
        seen = {f.text for f in out}
        for key, run in self.rollbacks.items():
            where = self.label(key)
            # a rollback that sends the cluster back (a version rollback, a mode): what it breaks comes with the
            # cluster's one-way step -- acknowledgeable as the review's one-way change is, by the cluster's key
            back = next(
                (
                    s
                    for s in [*run.steps, *([run.wedged[0]] if run.wedged else [])]
                    if s.phase == ROLLBACK and s.type == CLUSTER
                ),
                None,
            )
            severity, subject = ("one way", back.key) if back else ("fails", "")
            found = [
                Finding(v.describe(), "outage", v.subject)
                if v.invariant == OUTAGE and not subject
                else Finding(v.describe(), severity, subject or v.invariant)
                for v in run.violations
            ]
            if run.wedged:
                step, why = run.wedged
                found.append(
                    Finding(
                        f"the rollback is refused at {step.describe()}: {why}: UPDATE_ROLLBACK_FAILED",
                        severity,
                        subject or step.key,
                    )
                )
            for f in found:
                if f.text not in seen:
                    seen.add(f.text)
                    out.append(Finding(f"if {where} fails, {f.text}", f.severity, f.subject))
        return out

    def label(self, key: str) -> str:
        return next((s.describe() for s in self.deploy.steps if s.key == key), key)


class _Replay:
    """The live resources, the aws-auth ConfigMap and the running pods as the steps move them."""

    def __init__(self, old: Lifecycle, new: Lifecycle, resolver: Resolver) -> None:
        self.old, self.new, self.resolver = old, new, resolver
        self.replaced = plan.changes(old, new)[2]  # (a reference to one resolves to a new physical id)
        self.live: Live = {
            k: [self._physical(old, k, "old")] for k in old.nodes if old.nodes[k].type != plan.NESTED_STACK
        }
        mapped = aws_auth(self.live, resolver)
        self.config_map: set[str] = mapped if mapped is not None else set()
        if mapped is None:  # not the app's: whatever runs is mapped outside it
            self.config_map = {h.role for h in self.world().hosts}
        self.placed: dict[str, Host | None] = {}  # workload -> where its pods run (None: nowhere)
        self.calls: list[tuple[Step, list[str]]] = []  # the cluster handler's EKS calls (or its error) per step
        self.outages: dict[str, tuple[Host, Host | None]] = {}  # this step: workload -> (the host gone, the new one)
        self.credentials: str | None = None  # how the controller's running pods got credentials
        now = self.world()
        for workload in now.workloads():
            self.placed[workload.name] = now.place(workload)
        self.credentials = self._credentials(now)
        self.kubelet_high = now.version if now.pools else None  # the newest minor Karpenter's nodes may run

    @staticmethod
    def _physical(lifecycle: Lifecycle, key: str, side: str) -> Physical:
        node = lifecycle.nodes[key]
        return Physical(key, node.type, side, node.resource.get("Properties", {}))

    def world(self) -> World:
        return world(self.live, self.resolver, self.config_map)

    def _credentials(self, w: World) -> str | None:
        """How new controller pods get AWS credentials right now (None: they get none)."""
        if w.controller is None:
            return None
        account = str((w.controller.get("serviceAccount") or {}).get("name", "karpenter"))
        role = ((w.controller.get("serviceAccount") or {}).get("annotations") or {}).get(IRSA_ANNOTATION)
        host = self.placed.get(CONTROLLER)
        if role and w.oidc and (role in w.roles or not str(role).startswith("«")):
            return f"irsa {role}"
        association = w.associations.get((w.controller_namespace, account))
        if association and w.agent and (host is None or host.kind != "fargate"):
            return f"pod-identity {association}"
        return None

    def _still_valid(self, w: World) -> bool:
        if self.credentials is None:
            return False
        kind, role = self.credentials.split(" ", 1)
        account = str(((w.controller or {}).get("serviceAccount") or {}).get("name", "karpenter"))
        if kind == "irsa":
            return w.oidc and (role in w.roles or not role.startswith("«"))
        return w.associations.get((w.controller_namespace, account)) == role and w.agent

    def apply(self, step: Step) -> str | None:
        """Apply ``step``; why it fails (None: it succeeds; a failed step changes nothing)."""
        key, saved = step.key, dict(self.live)
        if step.action == "create":
            self.live[key] = [self._physical(self.new, key, "new")]
        elif step.action == "update":
            lifecycle, side = (self.old, "old") if step.phase == ROLLBACK else (self.new, "new")
            other = self.new if step.phase == ROLLBACK else self.old
            deployed = self.live[key][-1].props.get("Config", {}).get("version") if key in self.live else None
            self.live[key] = [*self.live[key][:-1], self._physical(lifecycle, key, side)]
            # the handler reads the event: OldResourceProperties and ResourceProperties (swapped on a rollback)
            refused = self._handler(self._physical(other, key, side), self.live[key][-1], step, deployed)
            if refused:
                self.live = saved
                return refused
        elif step.action == "replace":
            self.live[key] = [*self.live[key], self._physical(self.new, key, "new")]
        elif step.action == "restore":
            self.live[key] = sorted(self.live[key], key=lambda p: p.side == "old")
        elif step.action == "delete":
            gone = "new" if step.phase == ROLLBACK_CLEANUP else ("old" if key in self.new.nodes else None)
            kept = [p for p in self.live.get(key, []) if gone is not None and p.side != gone]
            if kept:
                self.live[key] = kept
            else:
                self.live.pop(key, None)
        self._config_map(step)
        return self._pods(step)

    def _config_map(self, step: Step) -> None:
        """kubectl apply of the app's aws-auth manifest overwrites its mapRoles (aws-cdk-lib 2.275 kubectl-handler
        apply, Overwrite); EKS adds a managed node group's or Fargate profile's role when it creates one (EKS User
        Guide, "Managed node groups" / "Fargate pod execution role")."""
        if step.type == MANIFEST and step.label == "the aws-auth ConfigMap" and step.action != "delete":
            self.config_map = aws_auth(self.live, self.resolver) or set()
        elif step.action in ("create", "replace") and (step.type in FARGATE or step.type == "AWS::EKS::Nodegroup"):
            self.config_map |= host_roles(self.live, self.resolver, step.key)

    def _handler(self, old: Physical, new: Physical, step: Step, deployed: Any) -> str | None:
        """aws-cdk's cluster handler on the Update event of the cluster (the real one, ``handlers``; its mirror
        ``karpenter_stack/cluster_updates.py`` where Node.js is not there, agreeing by
        tests/test_cluster_handler.py), then EKS on the calls it makes (``eks_answer``)."""
        if new.type != CLUSTER:
            return None
        a, b = old.props.get("Config", {}), new.props.get("Config", {})
        # CloudFormation resolves a reference to a replaced resource to the new physical id: in the new template's
        # side of the event (the forward's new properties, the rollback's old ones)
        target = b
        if step.phase == ROLLBACK:
            a = self._resolved_new(a, new.prefix)
        else:
            b = self._resolved_new(b, new.prefix)
        try:
            from tooling.review.simulator import handlers

            outcome = handlers.cluster_update(a, b, deployed_version=deployed)
            error, calls = outcome.error, outcome.calls
        except (ImportError, RuntimeError):
            try:
                kinds = update(a, b)
                error, calls = (
                    None,
                    [("UpdateClusterVersion", {"version": b.get("version")})] if "updateVersion" in kinds else [],
                )
            except UpdateRefused as err:
                error, calls = str(err), []
        self.calls.append((step, [op for op, _ in calls] if not error else [f"throws: {error}"]))
        if error:
            return f"aws-cdk's cluster handler refuses ({error})"
        moved = any(op == "UpdateClusterConfig" and "resourcesVpcConfig" in p for op, p in calls)
        return eks_answer(calls, deployed, rollback=step.phase == ROLLBACK) or (
            self._zones_refusal(target, new.prefix, step.phase == ROLLBACK) if moved else None
        )

    def _resolved_new(self, value: Any, prefix: str) -> Any:
        """``value`` with each reference to a resource this deploy replaces marked (its new physical id)."""
        if isinstance(value, dict):
            if set(value) in ({"Ref"}, {"Fn::GetAtt"}):
                target = value.get("Ref") or (value["Fn::GetAtt"][0] if isinstance(value["Fn::GetAtt"], list) else "")
                if f"{prefix}/{target}" in self.replaced:
                    return {"Fn::Join": ["", [value, " (replaced)"]]}
                return value
            return {k: self._resolved_new(v, prefix) for k, v in value.items()}
        if isinstance(value, list):
            return [self._resolved_new(v, prefix) for v in value]
        return value

    def _zones(self, config: dict[str, Any], prefix: str, lifecycle: Lifecycle) -> set[str]:
        """The availability zones of a cluster Config's subnets (their AvailabilityZone, as the template has it)."""
        zones = set()
        for subnet in (config.get("resourcesVpcConfig") or {}).get("subnetIds") or []:
            name = subnet.get("Ref") if isinstance(subnet, dict) else None
            node = lifecycle.nodes.get(f"{prefix}/{name}")
            if node is not None:
                zones.add(json.dumps(node.resource.get("Properties", {}).get("AvailabilityZone"), sort_keys=True))
        return zones

    def _zones_refusal(self, config: dict[str, Any], prefix: str, rollback: bool) -> str | None:
        """EKS keeps a cluster's subnets in the availability zones chosen at its creation (EKS User Guide, "View
        Amazon EKS networking requirements for VPC and subnets"): an UpdateClusterConfig whose subnets reach another
        zone is refused. The deployed template's subnets stand for the creation's."""
        key = next((k for k, n in self.old.nodes.items() if n.type == CLUSTER), None)
        if key is None:
            return None
        # the subnets the event names: the new template's on a deploy, the old one's again on its rollback
        lifecycle = self.old if rollback else self.new
        for subnet in (config.get("resourcesVpcConfig") or {}).get("subnetIds") or []:
            node = lifecycle.nodes.get(f"{prefix}/{subnet.get('Ref')}") if isinstance(subnet, dict) else None
            vpc = node.resource.get("Properties", {}).get("VpcId") if node is not None else None
            if isinstance(vpc, dict) and f"{prefix}/{vpc.get('Ref')}" in self.replaced and not rollback:
                return (
                    "EKS refuses subnets of another VPC: a cluster stays in the VPC it was created in (EKS User "
                    "Guide, networking requirements)"
                )
        created = self._zones(self.old.nodes[key].resource.get("Properties", {}).get("Config", {}), prefix, self.old)
        extra = sorted(self._zones(config, prefix, lifecycle) - created)
        if created and extra:
            return (
                f"EKS refuses subnets in availability zones the cluster was not created in ({', '.join(extra)}): "
                "a cluster's subnets stay in its creation zones"
            )
        return None

    def _pods(self, step: Step) -> str | None:
        """Re-create the pods the step moves; a waiting Helm release fails when its new pods cannot be Ready."""
        now = self.world()
        failure = None
        self.outages = {}
        for workload in now.workloads():
            host = self.placed.get(workload.name)
            rolled = workload.name == CONTROLLER and step.type == HELM and self._controller_rolls(step)
            if workload.name not in self.placed or host is None or host not in now.hosts or rolled:
                self.placed[workload.name] = where = now.place(workload)
                if host is not None and host.kind == "fargate" and host not in now.hosts:
                    self.outages[workload.name] = (host, where)
                if workload.name == CONTROLLER:
                    self.credentials = self._credentials(now)
                if rolled and not now.ready(where) and self.live[step.key][-1].props.get("Wait"):
                    failure = (
                        f"helm upgrade --wait times out after {self.live[step.key][-1].props.get('Timeout', 'its timeout')}: "
                        f"the controller's new pods land on {where.name if where else 'no capacity'}"
                        + (", whose nodes cannot authenticate (NotReady)" if where else "")
                    )
        if now.version and now.pools:
            self.kubelet_high = max((v for v in (self.kubelet_high, now.version) if v), key=_minor)
        return failure

    def _controller_rolls(self, step: Step) -> bool:
        """Whether the controller chart's step re-creates its pods: created, or a new chart version or pod template."""
        from tooling.review.kubernetes import _pod_template_changes

        physicals = self.live.get(step.key, [])
        if not physicals or physicals[-1].props.get("Release") != "karpenter":
            return False
        if step.action == "create":
            return True
        other = self.new if step.phase == ROLLBACK else self.old
        previous = other.nodes[step.key].resource.get("Properties", {}) if step.key in other.nodes else {}
        current = physicals[-1].props
        return previous.get("Version") != current.get("Version") or bool(_pod_template_changes(previous, current))

    def check(self) -> dict[tuple[str, str], str]:
        """The invariants broken right now: (invariant, subject) -> what breaks."""
        w = self.world()
        broken: dict[tuple[str, str], str] = {}
        for pool, node_class in w.pools.items():
            if node_class not in w.classes:
                broken[("references", pool)] = (
                    f"NodePool `{pool}` refers to EC2NodeClass `{node_class}`, which does not exist: Karpenter "
                    "launches no node for it"
                )
        if not w.has_cluster:
            return broken
        for host in w.hosts:
            running = [name for name, where in self.placed.items() if where == host]
            if running and host.role not in w.authorized:
                broken[("authorized", host.key)] = (
                    f"{host.name}'s role is neither in aws-auth nor in an access entry: its nodes cannot authenticate "
                    f"and {' and '.join(running)} go NotReady"
                )
        for pool, node_class in sorted(w.pools.items()):  # every role a pool's nodes run with, while the pool exists
            role = w.class_roles.get(node_class)
            if role is not None and role not in w.authorized:
                broken[("authorized", f"karpenter:{pool}")] = (
                    f"the node role of NodePool `{pool}` (EC2NodeClass `{node_class}`) is neither in aws-auth nor in an "
                    "access entry: its nodes cannot authenticate and go NotReady, their pods die without a drain"
                )
        for workload in w.workloads():
            if self.placed.get(workload.name) is None:
                broken[("running", workload.name)] = f"{workload.name} has nowhere to run: no capacity takes its pods"
        for name, (gone, where) in self.outages.items():
            broken[(OUTAGE, f"{gone.key}|{name}")] = (
                f"{name} loses every replica at once: EKS deletes the pods of {gone.name} together, and they start "
                f"again on {where.name if where else 'no capacity'}"
                + (" (a new Fargate node takes about a minute)" if where and where.kind == "fargate" else "")
            )
        if w.controller is not None and not self._still_valid(w):
            broken[("credentials", "controller")] = (
                "the Karpenter controller's pods have no AWS credentials (IRSA needs its role and the OIDC provider; "
                "Pod Identity its association and agent, and never works on Fargate)"
            )
        if w.version:
            minor = _minor(w.version)
            for host in w.hosts:
                if host.kind == "nodegroup" and host.version and not (minor - 3 <= _minor(host.version) <= minor):
                    broken[("skew", host.key)] = (
                        f"{host.name}'s kubelets are {host.version}, the control plane {w.version}: EKS allows kubelets "
                        "up to three minors older, never newer"
                    )
            if w.pools and self.kubelet_high and _minor(self.kubelet_high) > minor:
                broken[("skew", "karpenter")] = (
                    f"Karpenter's nodes may already run kubelet {self.kubelet_high} (they follow the control plane by "
                    f"drift), newer than the control plane {w.version}"
                )
        return broken


def eks_answer(calls: list[tuple[str, dict[str, Any]]], deployed: Any, rollback: bool) -> str | None:
    """EKS on the handler's calls (None: it accepts them). UpdateClusterVersion: one minor up at a time; one minor
    down is EKS's version rollback, within ``VERSION_ROLLBACK_DAYS`` of an in-place upgrade and of the control plane
    only -- CloudFormation's rollback of this deploy's upgrade is well within it, so EKS starts it (EKS User Guide,
    "Roll back a cluster to a previous Kubernetes version"); a deploy that asks for it is refused at synth.
    UpdateClusterConfig that changes nothing (only the name): EKS refuses an empty update (InvalidParameterException;
    the same reading as karpenter_stack/cluster_updates.py)."""
    for operation, params in calls:
        if operation == "UpdateClusterVersion":
            target = params.get("version")
            if rollback and is_downgrade(deployed, target) and _minor(str(deployed)) - _minor(str(target)) == 1:
                continue
            refused = version_step_refusal(deployed, target)
            if refused:
                return f"EKS refuses the {refused}"
        if operation == "UpdateClusterConfig" and set(params) <= {"name", "clientRequestToken"}:
            return "EKS refuses an UpdateClusterConfig that changes nothing (InvalidParameterException)"
    return None


def _minor(version: str) -> int:
    return int(str(version).split(".")[1]) if "." in str(version) else 0


class _Tracker:
    """Replays steps and records each invariant from the step that breaks it to the step that restores it."""

    def __init__(self, replay: _Replay, run: Run) -> None:
        self.replay, self.run = replay, run
        self.start = replay.check()  # broken before the deploy: not the deploy's doing
        self.open: dict[tuple[str, str], tuple[Step, str]] = {}
        self.last: Step | None = None
        self.elapsed: list[
            int
        ] = []  # seconds at the end of each step, at worst (tooling/review/lifecycle_model durations)

    def steps(self, steps: list[Step]) -> bool:
        """Apply ``steps`` in order; False when one fails. A handler that refuses changes nothing; a Helm release
        that times out has applied its objects (the rollback sends it the old values)."""
        for step in steps:
            why = self.replay.apply(step)
            if why and step.phase in (ROLLBACK, ROLLBACK_CLEANUP):
                self.run.wedged = (step, why)
                return False
            self.run.steps.append(step)
            self.elapsed.append((self.elapsed[-1] if self.elapsed else 0) + self._worst(step))
            broken = self.replay.check()
            for k, text in broken.items():
                if k not in self.start and k not in self.open:
                    self.open[k] = (step, text)
            for k in [k for k in self.open if k not in broken]:
                first, text = self.open.pop(k)
                took = self.elapsed[-1] - self.elapsed[self.run.steps.index(first)]
                self.run.violations.append(
                    Violation(k[0], text, first, self.last, step, k[1].split("|")[0], -(-took // 60))
                )
            self.last = step
            if why:
                self.run.failed = (step, why)
                return False
        return True

    def _worst(self, step: Step) -> int:
        """A step's worst-case seconds (the lifecycle model's: timeouts that bound it, else estimates)."""
        lifecycle = self.replay.old if step.action == "delete" and step.phase == CLEANUP else self.replay.new
        node = lifecycle.nodes.get(step.key) or self.replay.old.nodes[step.key]
        return Lifecycle.duration(node, "delete" if step.action == "delete" else "create")

    def finish(self) -> None:
        self.run.calls = self.replay.calls
        for k, (first, text) in self.open.items():
            self.run.violations.append(Violation(k[0], text, first, self.last, None, k[1].split("|")[0]))
        self.open = {}
