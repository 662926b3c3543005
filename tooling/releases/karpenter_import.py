"""Import one Karpenter release: ``make karpenter-import VERSION=1.15.0 [FROM=<folder>]``, or

    python -m tooling.releases.karpenter_import <VERSION> [--from DIR] [--root DIR]

fetches the release's artifacts -- the ``karpenter`` and ``karpenter-crd`` charts from the OCI registry the app
installs from (``helm pull`` with the project's pinned Helm, helm.py) and the getting-started CloudFormation
template of the release's documentation -- and writes everything the project pins per Karpenter version:

- ``tooling/upstream/karpenter-<V>/charts/{karpenter,karpenter-crd}/``: the charts as pulled;
- ``tooling/upstream/karpenter-<V>/crds/``: the CRDs the ``karpenter-crd`` chart installs (``helm template``), one
  file each, the source of the mirrors; ``README.md``: where all of it comes from;
- ``templates/upstream/karpenter-<V>.yaml``: upstream's template, unmodified;
- ``templates/karpenter-<V>.yaml``: the project's hardened template, re-applied by a 3-way merge (base: the nearest
  imported version's upstream template, ours: its project template, theirs: the new upstream template) and printed
  as a diff to review; ``templates/changes/karpenter-<V>.yaml``: the reasons, carried over. A conflict, or a
  difference the carried reasons do not cover (``make template-diff``'s check), stops the import: merge by hand into
  those three files of <V> and import again (a release that has them is its own base, so the merge keeps them);
- ``tooling/schemas/karpenter-<V>/``: the NodePool, EC2NodeClass and NodeOverlay schema mirrors and ``cel-rules.json``
  (tooling/mirror_crd_schema.py, tooling/mirror_crd_rules.py) and ``controller-values.schema.json``, generated from
  the chart (tooling/chart_values_schema.py);
- ``constructs_lib/karpenter/releases/karpenter-<V>.json``: the release's feature gates and their defaults (values.yaml
  ``settings.featureGates``), the fields of each kind's spec with their enums (from the CRDs), and the chart values
  schema again (``chartValues``: the construct reads only its own release data; ``controller.chartValues`` is
  checked against it).

Before anything moves in, the release report (release_report.py) between the release and its base, the older
first, is printed; a change that needs a human decision (a new required field, a removed field or chart key the app
writes, an enum or pattern narrowed under what the app produces, an upstream grant the project's template does not
cover) stops the import, naming it.

``--from DIR`` reads the same artifacts from a folder: ``DIR/charts/karpenter/`` and ``DIR/charts/karpenter-crd/``
(or the archives ``helm pull`` writes, ``DIR/charts/karpenter-<V>.tgz``) and ``DIR/cloudformation.yaml``.
``--root DIR`` writes into another copy of the project. Everything is written into a staging folder first and moved
in only when every step passed: bad input (a version the registry does not have, a folder without the files, an
artifact that cannot be parsed) is one line naming what and where, exit 1, and nothing written.

The parts: what they share in import_base.py, fetching the artifacts in import_fetch.py, the project's template
(the 3-way merge) in import_template.py, checking, deriving, staging and moving in in import_write.py; here, the
command.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tooling.releases import release_report, report_base
from tooling.releases.import_base import REGISTRY, ImportFailure, layout, version_key
from tooling.releases.import_fetch import from_folder, online
from tooling.releases.import_write import _files, move_in, stage

ROOT = Path(__file__).resolve().parents[2]
VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+", re.ASCII)


@contextmanager
def scratch_folder(root: Path) -> Iterator[Path]:
    """A staging folder beside the project's files (same file system: moving in is a rename), removed at the end."""
    parent = root / ".cache" / "karpenter-import"
    parent.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def decide(root: Path, tree: Path, version: str, base: str, out: Callable[[str], None]) -> None:
    """The release report between the release imported and its base (the older of the two first: what an upgrade
    meets), printed; ImportFailure when a change needs a human decision (release_report.py: a new required
    field, a removed field or chart key the app writes, an enum or pattern narrowed under what the app produces, an
    upstream grant the project's template does not cover)."""
    if base == version:
        return
    old, new = sorted((base, version), key=version_key)
    try:
        report = release_report.compare(root, old, new, trees={version: tree})
    except report_base.ReportError as error:
        raise ImportFailure(f"the release report {old} -> {new}: {error}") from None
    out(report.markdown().rstrip("\n"))
    if report.decisions:
        more = f" (and {len(report.decisions) - 1} more, listed above)" if len(report.decisions) > 1 else ""
        raise ImportFailure(
            f"Karpenter {old} -> {new} needs a decision before the import: {report.decisions[0]}{more}; nothing was "
            "written"
        )


def run(
    version: str,
    source: Path | None,
    root: Path,
    out: Callable[[str], None] = print,
) -> list[str]:
    """Import ``version`` into ``root`` (``source``: a folder of its artifacts, else the public sources); the files
    written. ImportFailure: nothing was written."""
    if not VERSION.fullmatch(version):
        raise ImportFailure(f"VERSION {version!r}: not a Karpenter release version (X.Y.Z, e.g. 1.14.1)")
    if not (root / "templates").is_dir():
        raise ImportFailure(f"--root {root}: not a copy of the project (no templates/)")
    with scratch_folder(root) as scratch:
        fetched = scratch / "fetched"
        fetched.mkdir()
        artifacts = from_folder(source, version, fetched) if source else online(version, fetched)
        shown = f"{source}/charts" if source else REGISTRY
        tree, merged = stage(root, version, artifacts, shown, scratch)
        for line in merged.review:
            out(line)
        decide(root, tree, version, merged.base, out)
        written = move_in(root, tree, version, scratch / "aside")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tooling.releases.karpenter_import", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("version", help="the Karpenter release, e.g. 1.15.0")
    parser.add_argument("--from", dest="source", type=Path, help="a folder holding the release's artifacts")
    parser.add_argument("--root", type=Path, default=ROOT, help="the copy of the project to write into")
    args = parser.parse_args(argv)
    if not args.version:
        print("karpenter-import: VERSION is required, e.g. make karpenter-import VERSION=1.15.0", file=sys.stderr)
        return 1
    root = args.root.resolve()
    before = _contents(root, args.version) if VERSION.fullmatch(args.version) else {}
    try:
        written = run(args.version, args.source, root)
    except ImportFailure as failure:
        print(f"karpenter-import: {failure}", file=sys.stderr)
        return 1
    after = _contents(root, args.version)
    changed = sorted(f for f in after if before.get(f) != after[f]) + sorted(set(before) - set(after))
    lines = sum(len(after[f].splitlines()) for f in written)
    folders = ", ".join(layout(args.version).values())
    print(
        f"imported Karpenter {args.version}: {len(written)} files, {lines} lines, in {folders}; "
        + (
            f"{len(changed)} new or changed (review the diff above and `git status`, then commit)"
            if changed
            else "nothing changed"
        )
    )
    return 0


def _contents(root: Path, version: str) -> dict[str, bytes]:
    """The files one release has in ``root`` (relative path -> bytes)."""
    return {f: (root / f).read_bytes() for f in _files(root, version) if (root / f).is_file()}


if __name__ == "__main__":
    sys.exit(main())
