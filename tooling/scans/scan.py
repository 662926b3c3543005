"""The scanners as commands of their own (`make scan` runs both, `make test` runs `make scan`):

    python -m tooling.scans.scan cfn-lint [--expect-findings FILE] FILES...
    python -m tooling.scans.scan checkov FILES...

cfn-lint (the project's .cfnlintrc) must find nothing in FILES; ``--expect-findings`` names a template it must
refuse (proof that the run reports what it finds). checkov's findings must each be skipped with a reason in
karpenter_stack/checkov_skips.yaml, and every skip there must still skip something, name resource types and say
why at length. Exit 0 when all holds, 1 otherwise, with the findings listed.

`make scan` gives them this app's own templates as the snapshots hold them (tests/__snapshots__/, which the suite
holds equal to the synth), templates/, and your configuration's synth (the gate's, .gate/).

Each scanner's findings are kept per template in .cache/scan/ (git-ignored), keyed by the template's content, the
scanner's version and how it is run: a template scanned before is not scanned again (the skips and the problems
are worked out afresh every run). A clean clone, as CI runs, scans everything; `rm -rf .cache/scan` does too."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tooling.scans import security_report
from tooling.scans.security_report import CheckovFinding, CheckovRun, LintRun, checkov_skips, skip_reason

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


CACHE = Path(__file__).resolve().parents[2] / ".cache" / "scan"


class FindingsCache:
    """A scanner's findings per template content, in ``root``: keyed by the template's bytes and ``inputs`` (the
    scanner's name and version, its settings, the code that runs it)."""

    def __init__(self, inputs: Sequence[bytes], root: Path = CACHE) -> None:
        self.root, self.salt = root, hashlib.sha256(b"\0".join(inputs)).digest()

    def _file(self, path: Path) -> Path:
        return self.root / f"{hashlib.sha256(self.salt + path.read_bytes()).hexdigest()}.json"

    def get(self, path: Path) -> Any:
        """What was stored for a template of this content (None: nothing)."""
        try:
            return json.loads(self._file(path).read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def put(self, path: Path, value: Any) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        target = self._file(path)
        with tempfile.NamedTemporaryFile("w", dir=self.root, delete=False, suffix=".tmp") as out:
            json.dump(value, out)
        os.replace(out.name, target)  # whole or not at all (the two scanners run side by side)

    def findings(self, paths: Sequence[Path], scan: Callable[[list[Path]], dict[Path, Any]]) -> dict[Path, Any]:
        """Each path's findings: stored, or ``scan`` run once over the paths with none stored (and stored)."""
        found = {path: value for path in paths if (value := self.get(path)) is not None}
        missing = [path for path in paths if path not in found]
        if missing:
            fresh = scan(missing)
            for path in missing:
                self.put(path, fresh[path])
            found |= fresh
        return found


def _inputs(scanner: str, version: str, *files: Path) -> list[bytes]:
    return [scanner.encode(), version.encode(), *(f.read_bytes() for f in files)]


def lint_cache(root: Path = CACHE) -> FindingsCache:
    rc = Path(security_report.ROOT) / ".cfnlintrc"
    version = importlib.metadata.version("cfn-lint")
    return FindingsCache(_inputs("cfn-lint", version, rc, Path(security_report.__file__), Path(__file__)), root)


def checkov_cache(root: Path = CACHE) -> FindingsCache:
    installed = sorted(
        p.name for p in security_report.CHECKOV.parent.parent.glob("lib/python*/site-packages/checkov-*")
    )
    return FindingsCache(_inputs("checkov", " ".join(installed), Path(security_report.__file__), Path(__file__)), root)


def _lint(paths: list[Path]) -> dict[Path, Any]:
    """cfn-lint over ``paths``: each one's findings, without its name (``:<line>:<column>:...``)."""
    with tempfile.TemporaryDirectory(prefix="scan-") as staging:
        # cfn-lint reads its arguments as glob patterns: a snapshot's name ("...[default][...].json") is linted
        # as a copy with a plain name
        staged = {}
        for i, path in enumerate(paths):
            plain = (
                path if not GLOB_CHARACTERS.search(str(path)) else Path(staging) / f"{i}-{path.name.translate(PLAIN)}"
            )
            if plain != path:
                shutil.copyfile(path, plain)
            staged[str(plain)] = path
        return {
            staged[p]: [line[len(p) :] for line in lines] for p, lines in LintRun(map(Path, staged)).findings().items()
        }


def lint_problems(
    files: Sequence[Path], expect_findings: Path | None, cache: FindingsCache | None = None
) -> tuple[list[str], int]:
    """cfn-lint's findings that should not be there (and the expected one, when missing); files linted."""
    groups = same_templates(files)
    targets = [*groups, *([expect_findings] if expect_findings else [])]
    linted = (cache or lint_cache()).findings(targets, _lint)
    found = {
        str(same): [str(same) + rest for rest in linted[path]] for path in targets for same in groups.get(path, [path])
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


def _checkov(paths: list[Path]) -> dict[Path, Any]:
    """checkov over ``paths``: each one's findings, without its name."""
    found: dict[Path, Any] = {path: [] for path in paths}
    for finding in CheckovRun(paths).findings():
        found[Path(finding.file)].append({k: v for k, v in dataclasses.asdict(finding).items() if k != "file"})
    return found


def checkov_findings(files: Sequence[Path], cache: FindingsCache | None = None) -> list[CheckovFinding]:
    """checkov's findings in ``files`` (each template's under each name it has)."""
    groups = same_templates(files)
    scanned = (cache or checkov_cache()).findings(list(groups), _checkov)
    return [
        CheckovFinding(**item, file=str(same)) for path in groups for item in scanned[path] for same in groups[path]
    ]


SNAPSHOTS = Path("tests") / "__snapshots__"


def _snapshot(path: Path | str) -> bool:
    """Whether a scanned template is one of the product's test snapshots (else: your configuration's or templates/)."""
    root = Path(security_report.ROOT)
    full = Path(path) if Path(path).is_absolute() else root / path
    return full.resolve().is_relative_to((root / SNAPSHOTS).resolve())


def lint_summary(files: Sequence[Path], problems: int) -> str:
    """The scan's cfn-lint line, its templates split as :func:`checkov_summary` splits them."""
    ours = sum(1 for f in files if _snapshot(f))
    return (
        f"cfn-lint: {problems} findings in {len(files)} templates: {ours} of the product's test snapshots "
        f"({SNAPSHOTS}/), {len(files) - ours} of {security_report.YOURS} (`make security-report` lints these)"
    )


def checkov_summary(files: Sequence[Path], findings: Sequence[CheckovFinding], problems: int) -> str:
    """The scan's checkov line, its count split by what was scanned: the product's test snapshots, and your
    configuration's synth with templates/ -- the part `make security-report` lists (its own checkov line names it)."""
    ours = sum(1 for f in findings if _snapshot(f.file))
    theirs = [f for f in files if not _snapshot(f)]
    return (
        f"checkov: {len(findings)} findings in {len(files)} templates: {ours} in the product's test snapshots "
        f"({SNAPSHOTS}/, {len(files) - len(theirs)} templates), {len(findings) - ours} in "
        f"{security_report.YOURS} ({len(theirs)} templates; `make security-report` lists these); {problems} problems"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tooling.scans.scan", description=__doc__.split("\n\n")[0])
    parser.add_argument("scanner", choices=("cfn-lint", "checkov"))
    parser.add_argument("--expect-findings", type=Path, help="a template cfn-lint must refuse")
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.scanner == "cfn-lint":
        problems, _ = lint_problems(args.files, args.expect_findings)
        summary = lint_summary(args.files, len(problems))
    else:
        findings = checkov_findings(args.files)
        problems = skip_problems(findings, checkov_skips())
        summary = checkov_summary(args.files, findings, len(problems))
    print("\n".join([*problems, summary]))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
