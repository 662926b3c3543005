"""The scanners as commands of their own (`make scan` runs both, `make test` runs `make scan`):

    python -m tooling.scan cfn-lint [--expect-findings FILE] FILES...
    python -m tooling.scan checkov FILES...

cfn-lint (the project's .cfnlintrc) must find nothing in FILES; ``--expect-findings`` names a template it must
refuse (proof that the run reports what it finds). checkov's findings must each be skipped with a reason in
karpenter_stack/checkov_skips.yaml, and every skip there must still skip something, name resource types and say
why at length. Exit 0 when all holds, 1 otherwise, with the findings listed.

`make scan` gives them this app's own templates as the snapshots hold them (tests/__snapshots__/, which the suite
holds equal to the synth), templates/, and your configuration's synth (the gate's, .gate/)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tooling.security_report import CheckovFinding, CheckovRun, LintRun, checkov_skips, skip_reason

# Shortest reason a checkov skip may give, and the form of the resources it names: a type, then a logical id.
MIN_REASON = 150
SKIPPED_RESOURCE = re.compile(r"AWS::[A-Za-z0-9]+::[A-Za-z0-9]+\\\.")
GLOB_CHARACTERS = re.compile(r"[][*?]")
PLAIN = str.maketrans("[]*?", "____")


def same_templates(files: Sequence[Path]) -> dict[Path, list[Path]]:
    """The files to scan, each with the files that hold the same template (JSON compared as data: a snapshot
    and your synth of the same configuration are written differently), itself first."""
    groups: dict[str, list[Path]] = {}
    for path in files:
        text = path.read_text()
        key = json.dumps(json.loads(text), sort_keys=True) if path.suffix == ".json" else text
        groups.setdefault(key, []).append(path)
    return {same[0]: same for same in groups.values()}


def lint_problems(files: Sequence[Path], expect_findings: Path | None) -> tuple[list[str], int]:
    """cfn-lint's findings that should not be there (and the expected one, when missing); files linted."""
    groups = same_templates(files)
    with tempfile.TemporaryDirectory(prefix="scan-") as staging:
        # cfn-lint reads its arguments as glob patterns: a snapshot's name ("...[default][...].json") is linted
        # as a copy with a plain name, and its findings are reported under its own
        staged = {}
        for i, path in enumerate([*groups, *([expect_findings] if expect_findings else [])]):
            plain = (
                path if not GLOB_CHARACTERS.search(str(path)) else Path(staging) / f"{i}-{path.name.translate(PLAIN)}"
            )
            if plain != path:
                shutil.copyfile(path, plain)
            staged[str(plain)] = str(path)
        found = {
            str(same): [str(same) + line[len(path) :] for line in lines]
            for path, lines in LintRun([Path(p) for p in staged]).findings().items()
            for same in groups.get(Path(staged[path]), [Path(staged[path])])
        }
    problems = [line for path, lines in found.items() if path != str(expect_findings) for line in lines]
    if expect_findings is not None and not found[str(expect_findings)]:
        problems.append(f"{expect_findings}: cfn-lint found nothing in a template it must refuse")
    return problems, len(files)


def skip_problems(findings: Sequence[CheckovFinding], skips: list[dict[str, object]]) -> list[str]:
    """Findings without a skip, and skips that skip nothing, name no resource type or give no real reason."""
    problems = [
        f"{f.file}: {f.check} ({f.name}) on {f.resource}: not skipped in karpenter_stack/checkov_skips.yaml"
        for f in findings
        if skip_reason(f, skips) is None
    ]
    for skip in skips:
        check, reason, resources = skip["check"], str(skip["reason"]), skip["resources"]
        if not any(skip_reason(f, [skip]) is not None for f in findings):
            problems.append(f"checkov skip {check}: skips nothing any more; remove it")
        if len(reason) < MIN_REASON or not reason.endswith("."):
            problems.append(f"checkov skip {check}: its reason must say why in at least {MIN_REASON} characters")
        if not isinstance(resources, list) or not all(SKIPPED_RESOURCE.match(str(r)) for r in resources):
            problems.append(f"checkov skip {check}: every resource must name its type (AWS::Service::Type\\.Id)")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tooling.scan", description=__doc__.split("\n\n")[0])
    parser.add_argument("scanner", choices=("cfn-lint", "checkov"))
    parser.add_argument("--expect-findings", type=Path, help="a template cfn-lint must refuse")
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.scanner == "cfn-lint":
        problems, count = lint_problems(args.files, args.expect_findings)
        summary = f"cfn-lint: {count} templates, {len(problems)} findings"
    else:
        groups = same_templates(args.files)
        findings = [
            dataclasses.replace(finding, file=str(same))
            for finding in CheckovRun(list(groups)).findings()
            for same in groups[Path(finding.file)]
        ]
        problems = skip_problems(findings, checkov_skips())
        summary = f"checkov: {len(args.files)} templates, {len(findings)} findings, {len(problems)} problems"
    print("\n".join([*problems, summary]))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
