"""The security gate as a reviewer reads it: every cdk-nag finding of the current configuration
(fixed findings do not appear; acknowledged ones with their reason; unacknowledged ones flagged), the
checkov findings of every synthesized template (skipped ones with their reason from
karpenter_stack/checkov_skips.yaml) and the cfn-lint results. Exits 1 on any unacknowledged cdk-nag
finding, unexplained checkov finding or cfn-lint error -- the command a CI job runs. With --sarif-dir,
also writes cdk-nag.sarif and checkov.sarif (acknowledged and skipped findings as suppressed results)
for code scanning.

    make security-report                                  # default configuration
    make security-report ARGS="-c additionalNagPacks='[\"NIST80053R5\"]'"
    make security-report ARGS="--sarif-dir reports"
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from constructs_lib.karpenter import yaml_load
from karpenter_stack.application import build_deferred, new_app
from karpenter_stack.config import ConfigError
from karpenter_stack.security import acknowledgments, covers, findings
from tooling.review.synth import TEMPLATES_ONLY

ROOT = Path(__file__).resolve().parents[2]


def _context(overrides: list[str]) -> dict[str, Any]:
    """Your configuration as `make synth` gives it to the app: cdk.context.json, cdk.json, CONTEXT_FILE, -c."""
    from karpenter_stack.context_sources import working_context

    return working_context(os.environ.get("CONTEXT_FILE") or None, [a for o in overrides for a in ("-c", o)])


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def _short(rule: str, limit: int = 70) -> str:
    return rule if len(rule) <= limit else rule[: limit - 3] + "..."


def nag_section(context: dict[str, Any], outdir: str) -> tuple[str, int, cdk.App, list[dict[str, Any]]]:
    """The findings table, the number left open, the acknowledged app (synthesized into ``outdir``, for
    linting) and the findings as SARIF results (acknowledged ones suppressed with their reason)."""
    # One build: the findings before acknowledgments, then after them.
    # Path metadata on, as `cdk synth` writes the templates a deploy uses (cfn-lint reads it, too); no assets copied.
    app = new_app(context={**context, **TEMPLATES_ONLY}, outdir=outdir)
    stacks, register = build_deferred(app)
    packs = ["AwsSolutions", *sorted({p for s in stacks for p in s.config.additional_nag_packs})]
    raw = findings(app, packs)
    register()
    open_findings = set(findings(app, packs))
    acks = acknowledgments(app)

    rows, results = [], []
    for f in sorted(raw, key=lambda f: (f.pack, f.rule, f.path)):
        ack = None if f in open_findings else next((a for a in acks if covers(a, f)), None)
        if f in open_findings:
            rows.append([f.pack, _short(f.rule), f.path, "UNACKNOWLEDGED", f.description[:80]])
        else:
            rows.append([f.pack, _short(f.rule), f.path, f"acknowledged at {ack.path}" if ack else "acknowledged", ""])
        results.append(
            {
                "rule": f.rule,
                "message": f"{f.path}: {f.description}",
                "uri": template_uri(app, f.path),
                "line": 1,
                "reason": None if f in open_findings else (ack.reason if ack else "acknowledged"),
            }
        )
    header = (
        f"cdk-nag ({', '.join(packs)}): {len(raw)} findings before acknowledgments, "
        f"{len(raw) - len(open_findings)} acknowledged, {len(open_findings)} unacknowledged"
    )
    table = _table(["pack", "finding", "resource", "status", "detail"], rows)
    return header + "\n\n" + table, len(open_findings), app, results


def template_uri(app: cdk.App, path: str) -> str:
    """The template a construct path lands in, relative to the project: ``cdk.out/<stack>.template.json``,
    or ``cdk.out/assembly-<stage>/<stack>.template.json`` for a stack in a Stage (the delivery pipeline's
    environments)."""
    first, *rest = path.split("/")
    scope = app.node.try_find_child(first)
    if isinstance(scope, cdk.Stage) and rest:
        stack = scope.node.try_find_child(rest[0])
        if isinstance(stack, cdk.Stack):
            return f"cdk.out/assembly-{first}/{stack.template_file}"
    if isinstance(scope, cdk.Stack):
        return f"cdk.out/{scope.template_file}"
    return f"cdk.out/{first}.template.json"


def _popen(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)


class LintRun:
    """One cfn-lint run (with the project's .cfnlintrc) over files, started in the background: its
    start-up costs about a second, so callers pay it once. Files with the same content (CDK's provider
    stacks of several configurations) are linted once; each gets the findings under its own name."""

    def __init__(self, paths: Iterable[Path], start: Callable[[list[str]], Any] | None = None) -> None:
        self.paths = [str(p) for p in paths]
        self._first: dict[bytes, str] = {}  # content -> the file linted for it
        for path in self.paths:
            self._first.setdefault(Path(path).read_bytes(), path)
        self._process = (start or _popen)(
            [str(Path(sys.executable).parent / "cfn-lint"), "--format", "parseable", *self._first.values()]
        )

    def findings(self) -> dict[str, list[str]]:
        """File -> its findings in cfn-lint's parseable format (``[]`` when clean); waits for the run."""
        stdout, stderr = self._process.communicate()
        if stderr.strip():
            raise RuntimeError(f"cfn-lint failed: {stderr.strip()}")
        linted = list(self._first.values())
        found: dict[str, list[str]] = {p: [] for p in linted}
        for line in stdout.splitlines():
            path = next((p for p in linted if line.startswith(p + ":")), None)
            if path is None:  # parseable output names the file first
                raise RuntimeError(f"unexpected cfn-lint output: {line}")
            found[path].append(line)
        findings = {}
        for path in self.paths:
            linted_as = self._first[Path(path).read_bytes()]
            findings[path] = [path + line[len(linted_as) :] for line in found[linted_as]]
        return findings


def lint_each(paths: Iterable[Path]) -> dict[str, list[str]]:
    """The findings of one cfn-lint run over ``paths`` (see :class:`LintRun`)."""
    return LintRun(paths).findings()


CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"
CHECKOV_SKIPS = ROOT / "karpenter_stack" / "checkov_skips.yaml"


@dataclass(frozen=True)
class CheckovFinding:
    check: str
    name: str
    file: str  # the template's path
    resource: str  # "<resource type>.<logical id>"
    line: int


class CheckovRun:
    """One checkov run over CloudFormation templates, started in the background. Offline
    (--skip-download): nothing is fetched from Prisma Cloud, so it runs in CI without network. Files
    with the same content are scanned once; each gets the findings under its own name."""

    def __init__(self, paths: Iterable[Path], start: Callable[[list[str]], Any] | None = None) -> None:
        self.paths = [str(p) for p in paths]
        self._first: dict[bytes, str] = {}  # content -> the file scanned for it
        for path in self.paths:
            self._first.setdefault(Path(path).read_bytes(), path)
        files = [arg for path in self._first.values() for arg in ("-f", path)]
        self._process = (start or _popen)(
            [
                str(CHECKOV),
                "--framework",
                "cloudformation",
                "--quiet",
                "--compact",
                "--skip-download",
                "-o",
                "json",
                *files,
            ]
        )

    def findings(self) -> list[CheckovFinding]:
        stdout, stderr = self._process.communicate()
        if self._process.returncode not in (0, 1):  # 1: there are failed checks
            raise RuntimeError(f"checkov failed ({self._process.returncode}): {stderr.strip()[-500:]}")
        reports = json.loads(stdout) if stdout.strip() else []
        reports = reports if isinstance(reports, list) else [reports]
        scanned = {str(Path(p).resolve()): p for p in self._first.values()}
        found: dict[str, list[dict[str, Any]]] = {p: [] for p in self._first.values()}
        for report in reports:
            for f in report["results"]["failed_checks"]:
                found[scanned[str(Path(f["file_abs_path"]).resolve())]].append(f)
        return [
            CheckovFinding(f["check_id"], f["check_name"], path, f["resource"], (f.get("file_line_range") or [1])[0])
            for path in self.paths
            for f in found[self._first[Path(path).read_bytes()]]
        ]


def checkov_skips(path: Path = CHECKOV_SKIPS) -> list[dict[str, Any]]:
    return list(yaml_load.safe_load(path.read_text()))


def skip_reason(finding: CheckovFinding, skips: list[dict[str, Any]]) -> str | None:
    """The reason the finding is skipped, or None: it is unexplained."""
    for skip in skips:
        if skip["check"] == finding.check and any(re.fullmatch(r, finding.resource) for r in skip["resources"]):
            return str(skip["reason"])
    return None


# What the report scans, as its checkov line says; `make scan` (tooling/scans/scan.py) names the same part of its count.
YOURS = "your configuration's synth and templates/"


def checkov_section(findings: list[CheckovFinding], templates: int) -> tuple[str, int]:
    skips = checkov_skips()
    rows, unexplained = [], 0
    for f in sorted(findings, key=lambda f: (f.check, Path(f.file).name, f.resource)):
        reason = skip_reason(f, skips)
        unexplained += reason is None
        rows.append(
            [f.check, Path(f.file).name, f.resource, "skipped (checkov_skips.yaml)" if reason else "UNEXPLAINED"]
        )
    header = (
        f"checkov ({YOURS}: {templates} templates): {len(findings)} findings, "
        f"{len(findings) - unexplained} skipped with a reason, {unexplained} unexplained"
    )
    return header + ("\n\n" + _table(["check", "template", "resource", "status"], rows) if rows else ""), unexplained


def sarif(tool: str, version: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    """A SARIF 2.1.0 log of one tool's results; each result: rule, message, uri, line, reason (a
    suppression's justification: the finding is acknowledged or skipped) or None."""
    rules = sorted({r["rule"] for r in results})
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": tool,
                        "version": version,
                        "informationUri": "https://github.com/",
                        "rules": [{"id": rule} for rule in rules],
                    }
                },
                "results": [
                    {
                        "ruleId": r["rule"],
                        "level": "warning" if r["reason"] else "error",
                        "message": {"text": r["message"]},
                        "locations": [
                            {
                                "physicalLocation": {
                                    "artifactLocation": {"uri": r["uri"]},
                                    "region": {"startLine": max(1, int(r["line"]))},
                                }
                            }
                        ],
                        **(
                            {"suppressions": [{"kind": "external", "justification": r["reason"]}]}
                            if r["reason"]
                            else {}
                        ),
                    }
                    for r in results
                ],
            }
        ],
    }


def templates(app: cdk.App) -> list[Path]:
    """The synthesized templates (written even when open findings fail the synth) and templates/."""
    outdir = Path(app.outdir)
    try:
        app.synth()
    except RuntimeError:
        pass  # unacknowledged findings are reported above; the templates are written regardless
    # (rglob: the delivery pipeline's environments are in nested assemblies, assembly-<environment>/)
    return sorted(outdir.rglob("*.template.json")) + sorted((ROOT / "templates").glob("*.yaml"))


def lint_section(files: list[Path]) -> tuple[str, int]:
    rows = []
    errors = 0
    for path, lines in lint_each(files).items():
        for line in lines:
            # parseable: file:line:col:endline:endcol:rule:message
            parts = line[len(path) + 1 :].split(":", 5)
            rows.append([Path(path).name, parts[4], parts[5][:100]])
            errors += parts[4].startswith("E")
    header = f"cfn-lint ({len(files)} templates, rules ignored in .cfnlintrc): {errors} errors, {len(rows) - errors} other findings"
    return header + ("\n\n" + _table(["template", "rule", "message"], rows) if rows else ""), errors


def _scanned_uri(file: Path) -> str:
    if file.suffix == ".yaml":
        return f"templates/{file.name}"
    nested = file.parent.name if file.parent.name.startswith("assembly-") else ""
    return f"cdk.out/{nested + '/' if nested else ''}{file.name}"


def checkov_results(found: list[CheckovFinding]) -> list[dict[str, Any]]:
    skips = checkov_skips()
    return [
        {
            "rule": f.check,
            "message": f"{f.resource}: {f.name}",
            "uri": _scanned_uri(Path(f.file)),
            "line": f.line,
            "reason": skip_reason(f, skips),
        }
        for f in found
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-c",
        "--context",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a configuration key, as with cdk synth -c",
    )
    parser.add_argument("--sarif-dir", type=Path, help="also write cdk-nag.sarif and checkov.sarif there")
    args = parser.parse_args(argv)
    context = _context(args.context)
    # The cloud assembly (its templates) lives only as long as the report.
    with tempfile.TemporaryDirectory(prefix="security-report-") as outdir:
        return _report(args, context, outdir)


def _report(args: argparse.Namespace, context: dict[str, Any], outdir: str) -> int:
    try:
        nag_text, unacknowledged, app, nag_results = nag_section(context, outdir)
    except ConfigError as err:
        print(f"Configuration error:\n{err}", file=sys.stderr)
        return 1
    files = templates(app)
    scan = CheckovRun(files)  # in the background while cfn-lint runs
    lint_text, lint_errors = lint_section(files)
    found = scan.findings()
    checkov_text, unexplained = checkov_section(found, len(files))
    print(nag_text, checkov_text, lint_text, exceptions_section(app), sep="\n\n")
    if args.sarif_dir:
        args.sarif_dir.mkdir(parents=True, exist_ok=True)
        for name, tool, results in (
            ("cdk-nag", "cdk-nag", nag_results),
            ("checkov", "checkov", checkov_results(found)),
        ):
            log = sarif(tool, _version(tool), results)
            (args.sarif_dir / f"{name}.sarif").write_text(json.dumps(log, indent=1) + "\n")
    failed = unacknowledged > 0 or unexplained > 0 or lint_errors > 0
    print("\nSecurity gate:", "FAILED" if failed else "passed")
    return 1 if failed else 0


def exceptions_section(app: cdk.App) -> str:
    """What the configuration and the Karpenter template acknowledge beyond the product's bounds, with the reason:
    a production endpoint wider than PRODUCTION_MAX_PUBLIC (widePublicAccessReason), grants of the template wider
    than upstream's (templates/changes/)."""
    from constructs_lib.karpenter.template_parity import acknowledged_widenings
    from karpenter_stack import versions
    from karpenter_stack.config.cluster_rules import wide_public_access

    rows = []
    stacks = [c for child in app.node.children for c in (child, *child.node.children) if isinstance(c, cdk.Stack)]
    for stack in stacks:
        config = getattr(stack, "config", None)
        if config is None:
            continue
        wide = wide_public_access(config)
        if wide and config.wide_public_access_reason:
            rows.append([stack.stack_name, f"widePublicAccessReason: {wide}", config.wide_public_access_reason])
        template = versions.karpenter_template(config.karpenter_version)
        for (principal, policy, sid, action, resource), why in acknowledged_widenings(template).items():
            rows.append(
                [stack.stack_name, f"{template.name}: {principal}: {policy} {sid}: {action} on {resource}", why]
            )
    header = f"Acknowledged beyond the product's bounds: {len(rows) or 'nothing'}"
    return header if not rows else header + "\n\n" + _table(["stack", "what", "reason"], rows)


def _version(tool: str) -> str:
    """The pinned version, from the requirements file that pins the tool."""
    file = "requirements-checkov.txt" if tool == "checkov" else "requirements.txt"
    for line in (ROOT / file).read_text().splitlines():
        if line.startswith(f"{tool}=="):
            return line.split("==", 1)[1].strip()
    raise RuntimeError(f"{tool} is not pinned in {file}")


if __name__ == "__main__":
    sys.exit(main())
