"""The transition matrix: every setting of the configuration model moved from its default to another valid value
and back -- for settings with modes (Literal or boolean types: authentication, credentials, hosting, ...), every
ordered pair of modes -- each synthesized, reviewed (``tooling/review/``) as a deploy and as CloudFormation's
rollback of it (the reverse update), and the review's verdict checked against the mirrored rules:

- CloudFormation: a changed create-only property (the resource schemas cfn-lint ships) replaces the resource;
- aws-cdk 2.275's cluster handler and EKS (``karpenter_stack.cluster_updates``): what the update refuses fails,
  and an update whose rollback the handler refuses is reported one way;
- Helm (Karpenter 1.14.1's chart): values rendered into the controller's pod template (and a chart version)
  restart its pods, the others leave them running;
- EKS: a deleted or replaced Fargate profile deletes the pods it scheduled; node groups and kube-proxy follow the
  control plane's minor (version skew);
- Karpenter 1.14: a NodePool's template (but its requirements) and an EC2NodeClass's spec (but its selector terms)
  are hashed, so changing them replaces every node by drift; the CRDs' transition rules refuse some updates.

A deploy the review says fails must also be refused by the synth against the deployed baseline
(``karpenter_stack/baseline.py``), so that it never reaches CloudFormation.

The settings come from ``AppConfig``'s fields, and the fields of the settings declared ``by field`` (node pools,
node classes, node overlays, the controller, an existing cluster: ``nodePools.<field>``, ...), each in the one
entry or object of its setting. Everything about a setting comes from its declaration
(``constructs_lib/karpenter/specs/change.py``): Literal and boolean types give their values (or the declaration its modes),
lists of Literals each value, bounded integers the next value, other types the field's example
(``Field(examples=[...])``); what a value needs besides, and why a setting is not moved (another stack, field by
field, or a reason of its own). A new field with no declaration or no value fails ``tests/test_transitions.py``.
The review's verdict must also fit what the setting declares changing it does (``declaration_problems``).

    make transitions            # every transition; prints the matrix and its counts; exit 1 on a wrong verdict
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from constructs_lib.karpenter.specs.change import Change
from karpenter_stack.config import AppConfig, ConfigError, load_config
from tooling import review as rv
from tooling.review.transition_checks import Synth, mirrored_problems
from tooling.review.transition_moves import (
    Transition,
    field_transitions,
    transitions,
)

ROOT = Path(__file__).resolve().parents[2]

# refused: the deploy fails (or the synth refuses it); blocked: it would work, but replaces or deletes something
# stateful, or its rollback would wedge the stack -- the review fails until it is acknowledged.
CATEGORIES = ("in place", "replace", "interrupt", "blocked", "refused", "not decided", "no change")


@dataclass
class Outcome:
    transition: Transition
    category: str
    rollback: str  # the category of CloudFormation's rollback (the reverse update)
    summary: str  # the changes, briefly
    problems: list[str] = field(default_factory=list)  # where the review disagrees with a mirrored rule
    interrupts: bool = False  # some change of the deploy restarts pods or replaces nodes
    restarts: bool = False  # the controller's pods restart
    replayed: list[str] = field(default_factory=list)  # what the deploy simulator finds (tooling/review/simulator)


def _category(reports: list[rv.StackReport], failing: list[str], blocking: list[str]) -> str:
    changes = [c for r in reports for c in r.changes]
    if failing:
        return "refused"
    if blocking:
        return "blocked"
    if any(c.why.startswith("its handler decides") for c in changes):
        return "not decided"
    if any(c.action in ("replaced", "removed") for c in changes):
        return "replace"
    if any(c.interrupts for c in changes):
        return "interrupt"
    return "in place" if changes else "no change"


def _summary(reports: list[rv.StackReport]) -> str:
    counts = Counter(c.action for r in reports for c in r.changes)
    return ", ".join(f"{n} {a}" for a, n in sorted(counts.items())) or "nothing"


def assess(transition: Transition, synth: Synth) -> Outcome:
    """Synthesize both sides, review the deploy and its rollback, check the verdict against the mirrored rules."""
    try:
        for which in ("old", "new"):
            load_config(transition.overrides(which))
    except ConfigError as err:
        first = str(err).splitlines()[0]
        return Outcome(transition, "refused", "—", f"refused at synth: {first}")
    try:
        old, new = synth(transition.overrides("old")), synth(transition.overrides("new"))
    except RuntimeError as err:
        if "ValidationFailed" not in str(err):
            raise
        return Outcome(transition, "refused", "—", "refused at synth: the security gate (unacknowledged findings)")
    forward = rv.review(old, new)
    _, blocking, failing = rv.render(forward, {})
    reverse = rv.review(new, old)
    _, back_blocking, back_failing = rv.render(reverse, {})
    problems = mirrored_problems(old, new, forward)
    if failing and not _refused_against(old, load_config(transition.overrides("new"))):
        problems.append("the deploy fails, but the synth against the deployed baseline does not refuse it")
    changes = [c for r in forward for c in r.changes]
    outcome = Outcome(
        transition,
        _category(forward, failing, blocking),
        _category(reverse, back_failing, back_blocking),
        _summary(forward),
        problems,
        interrupts=any(c.interrupts for c in changes),
        restarts=any(rv.CONTROLLER_RESTARTS in e for c in changes for e in c.effects),
        replayed=[f.text for r in forward for f in r.replayed],
    )
    outcome.problems += declaration_problems(outcome)
    return outcome


def declaration_problems(outcome: Outcome) -> list[str]:
    """Where the review's verdict on a deploy disagrees with what the setting declares changing it does
    (``constructs_lib/karpenter/specs/change.py``). A refusal fits every kind (a value the model, the API or a handler
    refuses changes nothing); ``one way`` and ``interrupts`` over all of a setting's moves (``setting_problems``)."""
    declared, category = outcome.transition.declared, outcome.category
    if category != "refused" and outcome.transition.setting.startswith("nodePools."):
        return disruption_problems(outcome)
    if declared is None or declared.change in _PER_SETTING or category == "refused":
        return []
    kind = declared.change
    fits = {
        Change.NOTHING_DEPLOYED: category == "no change",
        Change.IN_PLACE: category in ("in place", "no change"),
        Change.BEHAVIORAL: category in ("in place", "no change"),
        Change.RESOURCES: category in ("in place", "replace", "no change") and not outcome.interrupts,
        Change.RESTARTS_CONTROLLER: outcome.restarts,
        Change.STATIC_DRIFT: outcome.interrupts,
        Change.DYNAMIC_DRIFT: outcome.interrupts or category == "in place",
        Change.REPLACE: category in ("replace", "blocked"),
        Change.REFUSED: False,
        Change.ANOTHER_STACK: category == "blocked",  # the old stack stays: the review blocks until acknowledged
    }.get(kind, True)
    if fits:
        return []
    said = (
        category
        + (", controller restarts" if outcome.restarts else "")
        + (", interrupts" if outcome.interrupts and category != "interrupt" else "")
    )
    return [f"declared '{kind.value}', review says {said}"]


def disruption_problems(outcome: Outcome) -> list[str]:
    """A node pool's move: whether the review says nodes are disrupted is what Karpenter's disruption model
    (tooling/review/disruption.py: drift within budgets, consolidation, budgets released) predicts from the pool as
    each configuration writes it, not what the field declares."""
    from tooling.kubernetes_schemas import config_objects
    from tooling.review.disruption import disrupts, refused_labels

    def pools(which: str) -> dict[str, dict[str, Any]]:
        objects = config_objects(load_config(outcome.transition.overrides(which)))
        return {o["metadata"]["name"]: o for o in objects if o["kind"] == "NodePool"}

    try:
        before, after = pools("old"), pools("new")
    except ConfigError:
        return []

    def drifts(name: str) -> bool:
        """The pool's template changed in a field every node is hashed with, or its requirements refuse labels nodes
        launched under the old ones may carry (Karpenter's static and dynamic drift)."""
        if name not in before or name not in after:
            return False
        a, b = before[name]["spec"]["template"], after[name]["spec"]["template"]
        if a == b:
            return False
        spec_a, spec_b = a.get("spec", {}), b.get("spec", {})
        others = {k: v for k, v in spec_a.items() if k != "requirements"}
        if a.get("metadata") != b.get("metadata") or others != {k: v for k, v in spec_b.items() if k != "requirements"}:
            return True
        return refused_labels(spec_a, spec_b) != []

    expected = any(disrupts(before.get(name), after.get(name), drifts(name)) for name in before.keys() | after.keys())
    if expected == outcome.interrupts:
        return []
    return [
        f"Karpenter's disruption model says {'nodes are' if expected else 'no node is'} disrupted, the review "
        f"says {'they are' if outcome.interrupts else 'none is'}"
    ]


# Kinds that say what some move of a setting does (not every one): checked over all of its moves.
_PER_SETTING: dict[Change, tuple[str, Callable[[Outcome], bool]]] = {
    Change.ONE_WAY: (
        "step the deploy takes whose rollback is refused",
        lambda o: o.category != "refused" and o.rollback == "refused",
    ),
    Change.INTERRUPTS: ("move that evicts or restarts pods or replaces nodes", lambda o: o.interrupts),
}


def setting_problems(outcomes: Iterable[Outcome]) -> list[str]:
    """Each setting declared ``one way`` has a step the deploy takes whose rollback is refused (whether the review
    calls such a step one way is checked per deploy by the mirrored handler rules); each declared ``interrupts``
    has a move that does."""
    by_setting: dict[str, list[Outcome]] = {}
    for o in outcomes:
        if o.transition.declared is not None and o.transition.declared.change in _PER_SETTING:
            by_setting.setdefault(o.transition.setting, []).append(o)
    problems = []
    for setting, moves in by_setting.items():
        kind = moves[0].transition.declared.change  # type: ignore[union-attr]
        what, holds = _PER_SETTING[kind]
        if not any(holds(o) for o in moves):
            problems.append(f"{setting}: declared '{kind.value}', but the review finds no {what}")
    return problems


def _refused_against(deployed: Mapping[str, dict[str, Any]], config: AppConfig) -> list[str]:
    """What the synth refuses of ``config`` with ``deployed`` as the accepted baseline (karpenter_stack/baseline.py)."""
    from karpenter_stack import baseline
    from karpenter_stack.config import stack_name_for

    with tempfile.TemporaryDirectory(prefix="baseline-") as root:
        folder = Path(root) / baseline.BASELINE_DIR
        folder.mkdir()
        for name, template in deployed.items():
            (folder / f"{name}.json").write_text(json.dumps(template))
        return baseline.refusals(config, stack_name_for(config.cluster_name), Path(root))


def in_process_synth(context: Mapping[str, Any], outdir_root: Path) -> Synth:
    """Synthesize configurations in this process (cached by their overrides), over ``context`` (feature flags)."""
    from karpenter_stack.application import build, new_app
    from tooling.review.synth import TEMPLATES_ONLY

    cache: dict[str, Mapping[str, dict[str, Any]]] = {}

    def synth(overrides: Mapping[str, Any]) -> Mapping[str, dict[str, Any]]:
        key = json.dumps(overrides, sort_keys=True)
        if key not in cache:
            outdir = tempfile.mkdtemp(prefix="transition-", dir=outdir_root)
            layer = {
                **context,
                **overrides,
            }  # as cdk.json would hold it (jsii drops the context's nulls; this keeps them)
            app = new_app(outdir=outdir, context={**layer, **TEMPLATES_ONLY})
            build(app, file_context=layer)
            app.synth()
            cache[key] = rv.synthesized_templates(Path(outdir))
        return cache[key]

    return synth


def matrix(outcomes: Iterable[Outcome], not_one: Mapping[str, str]) -> str:
    rows = [
        f"| {o.transition.label} | {o.category} | {o.rollback} | {o.summary} | {'; '.join(o.problems) or 'agrees'} |"
        for o in outcomes
    ]
    lines = ["| transition | deploy | its rollback | changes | mirrored rules |", "|---|---|---|---|---|", *rows]
    lines += ["", "Not moved as one setting:", *(f"- `{k}`: {why}" for k, why in sorted(not_one.items()))]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def the_products_project() -> Iterator[None]:
    """The app's synths read the product's folder as the project's, not your working directory: the matrix moves
    the model's defaults, which your accepted baseline (``baseline/``, ``make accept``) would refuse (found by a
    newcomer trial: a Kubernetes version step against your baseline stopped the matrix with a traceback)."""
    from karpenter_stack import context_sources

    yours = context_sources.project_dir
    context_sources.project_dir = lambda: ROOT / "tooling" / "product"
    try:
        yield
    finally:
        context_sources.project_dir = yours


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], metavar="SETTING", help="only these settings")
    args = parser.parse_args(argv)
    from karpenter_stack import context_sources

    found, not_one = transitions()
    found += field_transitions()
    if args.only:
        found = [t for t in found if t.setting in args.only or t.setting.split(".")[0] in args.only]
    # The product's settings layer (feature flags): the matrix is about the model's defaults, not your cdk.json.
    product = ROOT / "tooling" / "product"
    flags = {k: v for k, v in context_sources.cdk_json_context(product).items() if k.startswith(("@", "aws:"))}
    context = {**flags, **context_sources.cached_lookups(product)}
    with tempfile.TemporaryDirectory(prefix="transitions-") as scratch, the_products_project():
        synth = in_process_synth(context, Path(scratch))
        outcomes = [assess(t, synth) for t in found]
    print(matrix(outcomes, not_one))
    counts = Counter(o.category for o in outcomes)
    print(f"{len(outcomes)} transitions: " + ", ".join(f"{counts[c]} {c}" for c in CATEGORIES if counts[c]))
    replayed = [o for o in outcomes if o.replayed]
    print(f"{len(replayed)} transitions where the deploy simulator finds a step that breaks the running cluster:")
    for o in replayed:
        print(f"- {o.transition.label}: " + " | ".join(o.replayed))
    wrong = [o for o in outcomes if o.problems]
    per_setting = setting_problems(outcomes)
    for problem in per_setting:
        print(problem, file=sys.stderr)
    if wrong or per_setting:
        print(f"{len(wrong)} verdicts disagree with a mirrored rule or a declaration (above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
