"""The deploy simulator: replays a deploy of new templates over deployed ones step by step, as CloudFormation
orders it (``plan.py``), and what aws-cdk's handlers, EKS and the nodes do at each step; checks the running
cluster's invariants after every step (``world.py`` says where each fact comes from); and, for a failure at every
step of the update phase, replays CloudFormation's rollback and its cleanup too.

The invariants, each with its source:

- **authorized**: every Fargate profile's and node group's role, and the node role of each NodePool's EC2NodeClass
  (Karpenter's, or the Windows node role) while the pool exists, is mapped in aws-auth or has an access entry (as the cluster's authentication mode reads them): a node whose
  kubelet cannot authenticate goes NotReady (EKS User Guide, "Grant IAM users access to Kubernetes").
- **running**: CoreDNS and the Karpenter controller run on capacity that is Ready (their pods move only when they
  are re-created: a Helm upgrade that changes the controller's pod template, a deleted Fargate profile or node
  group; EKS User Guide, "Delete a Fargate profile").
- **credentials**: the controller's pods got credentials when they were created and their source is still there
  (IRSA: the role and the OIDC provider; Pod Identity: the association and its agent, never on Fargate).
- **one update**: aws-cdk's cluster handler accepts the step (one kind of cluster update at a time; the handler's
  rules: ``karpenter_stack/cluster_updates.py``, agreeing with the bundled handler) and EKS the version step.
- **skew**: no kubelet is newer than the control plane, none more than three minors older (EKS User Guide,
  "Kubernetes version skew"): the node group's ``Version``, and Karpenter's nodes, which follow the control plane
  by drift once it is upgraded (Karpenter 1.14 AMI aliases resolve per Kubernetes minor).
- **references**: every NodePool's ``nodeClassRef`` names an EC2NodeClass that exists (Karpenter launches
  nothing for a pool whose class is missing).

A Helm release that waits (``Wait``) fails its step when the controller's new pods cannot become Ready: ``helm
upgrade --wait`` times out, and CloudFormation rolls the deploy back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tooling.review.lifecycle_model import Lifecycle

from . import plan
from .replay import Finding, Run, Simulation, Violation, _Replay, _Tracker
from .world import Resolver

__all__ = ["Finding", "Simulation", "Violation", "simulate"]


def simulate_stack(old: Mapping[str, dict[str, Any]], new: Mapping[str, dict[str, Any]], root: str) -> Simulation:
    """Replay the deploy of the stack whose template is ``root`` (with its nested templates) over ``old``."""
    before, after = Lifecycle(dict(old), root), Lifecycle(dict(new), root)
    resolver = Resolver(old, new)
    update_steps, cleanup_steps = plan.forward(before, after)
    deploy = Run()
    tracker = _Tracker(_Replay(before, after, resolver), deploy)
    if tracker.steps(update_steps):
        tracker.steps(cleanup_steps)
    else:  # CloudFormation rolls back what it did, the failed resource included
        failed = deploy.failed[0] if deploy.failed else None
        done = deploy.steps if failed in deploy.steps else [*deploy.steps, *([failed] if failed else [])]
        back, back_cleanup = plan.rollback(done, before, after)
        if tracker.steps(back):
            tracker.steps(back_cleanup)
    tracker.finish()
    rollbacks: dict[str, Run] = {}
    for i, failing in enumerate(update_steps):
        if deploy.failed and deploy.failed[0] == failing:
            break
        run = Run()
        tracker = _Tracker(_Replay(before, after, resolver), run)
        tracker.steps(update_steps[:i])
        known = {(v.invariant, v.text) for v in run.violations} | {(k[0], t) for k, (_, t) in tracker.open.items()}
        # the failing step's handler throws before it changes anything; CloudFormation still rolls it back
        back, back_cleanup = plan.rollback([*update_steps[:i], failing], before, after)
        if tracker.steps(back):
            tracker.steps(back_cleanup)
        tracker.finish()
        # (what breaks before the failing step is the deploy's own: reported there)
        run.violations = [v for v in run.violations if (v.invariant, v.text) not in known]
        if run.violations or run.wedged:
            rollbacks[failing.key] = run
    return Simulation(deploy, rollbacks)


def simulate(old: Mapping[str, dict[str, Any]], new: Mapping[str, dict[str, Any]]) -> dict[str, Simulation]:
    """Replay the deploy of every stack both template sets hold (top-level stacks with their nested templates);
    a stack new or gone is a create or a delete, not an update: not replayed here."""
    out = {}
    for root in sorted(n for n in new if not n.endswith(".nested.template") and n in old):
        try:
            out[root.removesuffix(".template")] = simulate_stack(old, new, root)
        except ValueError:  # a nested template missing from one side (a partial template set): nothing to replay
            continue
    return out
