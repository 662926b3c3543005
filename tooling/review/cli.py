"""Review: what deploying the current synth over your accepted baseline would do.

The command (``python -m tooling.review``, as ``make review`` and ``make accept`` run it): its arguments, the
user's configuration read as the CDK CLI reads it, and its exit status (0 passes, 1 blocked or failing, 2 an
error of the configuration or of the baseline). With ``--live`` it compares with the deployed stacks instead
(``live``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from .acknowledgments import ACKNOWLEDGMENTS, acknowledgments
from .baseline import BASELINE, accept, baseline_templates
from .model import ReviewError
from .render import first_deploy, render
from .stacks import review
from .synth import synthesize, synthesized_templates


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="git revision whose baseline is compared (default: the working tree's)")
    parser.add_argument(
        "--context-file", default=os.environ.get("CONTEXT_FILE") or None, help="a JSON file of settings (CONTEXT_FILE)"
    )
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--acknowledge", action="append", default=[], metavar="STACK/LOGICAL_ID")
    parser.add_argument("--output", type=Path, help="also write the report there (e.g. a CI job summary)")
    parser.add_argument("--accept", action="store_true", help="make the current synth the baseline instead")
    parser.add_argument(
        "--adopt",
        default=os.environ.get("ADOPT") or None,
        metavar="FILE|live",
        help="the Karpenter objects the cluster runs (kubectl get nodepools,ec2nodeclasses,nodeoverlays -o yaml, or "
        "live: read with kubectl): what the first deploy does to each (ADOPT)",
    )
    live = parser.add_argument_group("against what is deployed (tooling/review/live.py)")
    live.add_argument("--live", action="store_true", help="compare with the deployed stacks instead of the baseline")
    live.add_argument("--stack", action="append", default=[], metavar="NAME", help="only this stack (repeatable)")
    live.add_argument("--region", help="the region of stacks that name none (default: AWS_REGION, the profile's)")
    live.add_argument(
        "--lookup-role", action="store_true", help="read each stack through its account's CDK bootstrap lookup role"
    )
    args = parser.parse_args(argv)
    if args.live and (args.accept or args.base or args.adopt):
        parser.error("--live compares with the deployed stacks: not with --accept, --base or --adopt (ADOPT)")
    from karpenter_stack import context_sources

    try:
        context = context_sources.working_context(args.context_file, [a for c in args.context for a in ("-c", c)])
    except context_sources.ContextFileError as err:
        print(err, file=sys.stderr)
        return 2
    # The cloud assembly (its templates) lives only as long as the review.
    with tempfile.TemporaryDirectory(prefix="review-") as outdir:
        return _review(args, context, BASELINE, outdir)


def _review(args: argparse.Namespace, context: dict[str, Any], directory: str, outdir: str) -> int:
    from karpenter_stack import context_sources
    from karpenter_stack.application import missing_lookups
    from karpenter_stack.config import ConfigError

    project = context_sources.project_dir()
    try:
        running = None
        if getattr(args, "adopt", None) and not args.accept:  # read first: a bad file stops before the synth
            from .adopt import read_running

            running = read_running(args.adopt, project)
        old = {} if args.accept or args.live else baseline_templates(directory, args.base, project)
        acknowledged = {
            **acknowledgments(project / ACKNOWLEDGMENTS.name),
            **{a: "--acknowledge" for a in args.acknowledge},
        }
        assembly = synthesize(context, outdir)
    except ConfigError as err:
        print(f"Configuration error:\n{err}", file=sys.stderr)
        return 2
    except ReviewError as err:
        print(f"review: {err}", file=sys.stderr)
        return 2
    missing = missing_lookups(assembly) if assembly is not None else []
    if missing:
        print("\n".join(missing), file=sys.stderr)
        return 2
    if args.accept:
        written = accept(Path(outdir), project / directory)
        print(f"Accepted {len(written)} templates into {directory}/: commit them with your configuration.")
        return 0
    if args.live:
        from . import live

        return live.main(args, context, context_sources.cdk_json_context(project), Path(outdir), acknowledged)
    new = synthesized_templates(Path(outdir))
    if not old:
        text, blocking, failing = first_deploy(new, directory), list[str](), list[str]()
    else:
        text, blocking, failing = render(review(old, new), acknowledged)
    text = _with_access_moves(text, context, project)
    from karpenter_stack.gitops import recorded

    from . import gitops

    stacks = [name.removesuffix(".template") for name in new if not name.endswith(".nested.template")]
    gitops_lines, _stale, moved = gitops.review(recorded(Path(outdir)), old, project, args.base, stacks)
    if gitops_lines:
        text = text.rstrip("\n") + "\n" + "\n".join(gitops_lines) + "\n"
    blocking += moved
    if running is not None:
        from .adopt import adoption

        text = text.rstrip("\n") + "\n\n" + "\n".join(adoption(running, new)) + "\n"
    print(text)
    if args.output:
        args.output.write_text(text)
    return 1 if blocking or failing else 0


def _with_access_moves(text: str, context: dict[str, Any], project: Path) -> str:
    """The report, with the steps that move a production cluster kept on aws-auth to access entries."""
    from karpenter_stack import context_sources
    from karpenter_stack.config import load_environments

    from .cluster import access_moves

    configs = load_environments(context, file_context=context_sources.cdk_json_context(project))
    moves = access_moves(configs)
    return text.rstrip("\n") + "\n" + "\n".join(moves) + "\n" if moves else text
