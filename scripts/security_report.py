"""The security gate as a reviewer reads it: every cdk-nag finding of the current configuration
(fixed findings do not appear; acknowledged ones with their reason; unacknowledged ones flagged) and
the cfn-lint results of every synthesized template. Exits 1 on any unacknowledged finding or
cfn-lint error -- the command a CI job runs.

    make security-report                                  # default configuration
    make security-report ARGS="-c additionalNagPacks='[\"NIST80053R5\"]'"
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aws_cdk as cdk  # noqa: E402

from karpenter_stack.application import build_deferred, new_app  # noqa: E402
from karpenter_stack.config import ConfigError  # noqa: E402
from karpenter_stack.security import acknowledgments, covers, findings  # noqa: E402


def _context(overrides: list[str]) -> dict:
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    for item in overrides:
        key, _, value = item.partition("=")
        context[key] = value
    return context


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def _short(rule: str, limit: int = 70) -> str:
    return rule if len(rule) <= limit else rule[: limit - 3] + "..."


def nag_section(context: dict) -> tuple[str, int, cdk.App]:
    """The findings table, the number left open, and the acknowledged app (for linting)."""
    # One build: the findings before acknowledgments, then after them.
    app = new_app(context=context, outdir=tempfile.mkdtemp())
    stacks, register = build_deferred(app)
    packs = ["AwsSolutions", *sorted({p for s in stacks for p in s.config.additional_nag_packs})]
    raw = findings(app, packs)
    register()
    open_findings = set(findings(app, packs))
    acks = acknowledgments(app)

    rows = []
    for f in sorted(raw, key=lambda f: (f.pack, f.rule, f.path)):
        if f in open_findings:
            rows.append([f.pack, _short(f.rule), f.path, "UNACKNOWLEDGED", f.description[:80]])
            continue
        ack = next((a for a in acks if covers(a, f)), None)
        rows.append([f.pack, _short(f.rule), f.path, f"acknowledged at {ack.path}" if ack else "acknowledged", ""])
    header = (
        f"cdk-nag ({', '.join(packs)}): {len(raw)} findings before acknowledgments, "
        f"{len(raw) - len(open_findings)} acknowledged, {len(open_findings)} unacknowledged"
    )
    return header + "\n\n" + _table(["pack", "finding", "resource", "status", "detail"], rows), len(open_findings), app


class LintRun:
    """One cfn-lint run (with the project's .cfnlintrc) over files, started in the background: its
    start-up costs about a second, so callers pay it once. Files with the same content (CDK's provider
    stacks of several configurations) are linted once; each gets the findings under its own name."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self.paths = [str(p) for p in paths]
        self._first: dict[bytes, str] = {}  # content -> the file linted for it
        for path in self.paths:
            self._first.setdefault(Path(path).read_bytes(), path)
        self._process = subprocess.Popen(
            [str(Path(sys.executable).parent / "cfn-lint"), "--format", "parseable", *self._first.values()],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
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


def lint_section(app: cdk.App) -> tuple[str, int]:
    outdir = Path(app.outdir)
    try:
        app.synth()
    except RuntimeError:
        pass  # unacknowledged findings are reported above; the templates are written regardless
    files = sorted(outdir.glob("*.template.json")) + sorted((ROOT / "templates").glob("*.yaml"))
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
    args = parser.parse_args(argv)
    context = _context(args.context)
    try:
        nag_text, unacknowledged, app = nag_section(context)
    except ConfigError as err:
        print(f"Configuration error:\n{err}", file=sys.stderr)
        return 1
    lint_text, lint_errors = lint_section(app)
    print(nag_text, lint_text, sep="\n\n")
    failed = unacknowledged > 0 or lint_errors > 0
    print("\nSecurity gate:", "FAILED" if failed else "passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
