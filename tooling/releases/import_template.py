"""The project's hardened template of an imported release: the hardening of the nearest imported version
(:func:`nearest`) re-applied to upstream's new template by a 3-way merge (``git merge-file``: base, that version's
upstream template; ours, its project template; theirs, the new upstream template), with the diffs to review
(:func:`merge_template`); a conflict stops the import, naming the hunk and how to resolve it by hand."""

from __future__ import annotations

import difflib
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tooling.releases.import_base import ImportFailure, _one_line, layout, version_key


def imported(root: Path) -> list[str]:
    """The versions the project has a hardened template of, with upstream's template it was derived from."""
    found = [
        m.group(1)
        for p in (root / "templates").glob("karpenter-*.yaml")
        if (m := re.fullmatch(r"karpenter-([0-9]+\.[0-9]+\.[0-9]+)\.yaml", p.name, re.ASCII))
        and (root / "templates" / "upstream" / p.name).is_file()
    ]
    return sorted(found, key=version_key)


def nearest(root: Path, version: str) -> str:
    """The imported version the project's hardening is carried from: the version itself when it is imported, else
    the nearest one (major, then minor, then patch distance; the older of two as near)."""
    candidates = imported(root)
    if not candidates:
        raise ImportFailure(
            f"{root / 'templates'}: no imported version to carry the project's hardening from "
            "(templates/karpenter-<version>.yaml with templates/upstream/karpenter-<version>.yaml)"
        )
    wanted = version_key(version)
    return min(
        candidates,
        key=lambda v: (tuple(abs(a - b) for a, b in zip(version_key(v), wanted, strict=True)), version_key(v)),
    )


def resolve(version: str) -> str:
    """What to do when the hardening cannot be carried over by itself: the import carries a release's own files."""
    names = layout(version)
    return (
        f"merge it by hand: upstream's template as {names['upstream template']}, the project's as "
        f"{names['template']} and its reasons as {names['changes']}, then import again"
    )


def with_version(text: str, old: str, new: str) -> str:
    """``text`` with the release it names (``Karpenter 1.14.1``) changed to ``new``."""
    return re.sub(rf"(?<![0-9.]){re.escape(old)}(?!\.?[0-9])", new, text, flags=re.ASCII)


@dataclass(frozen=True)
class Merged:
    text: str
    base: str  # the version whose hardening was carried
    review: list[str]  # what to print


def _conflict(merged: str, ours: str, version: str, base: str, count: int) -> ImportFailure:
    lines = merged.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("<<<<<<< "))
    middle = next(i for i in range(start, len(lines)) if lines[i].startswith("======="))
    theirs = lines[middle + 1] if middle + 1 < len(lines) and not lines[middle + 1].startswith(">>>>>>> ") else ""
    mine = lines[start + 1] if start + 1 < middle else ""
    return ImportFailure(
        f"{ours}: the project's hardening (carried from Karpenter {base}) conflicts with upstream's change "
        f"{base} -> {version} at line {start + 1} ({count} conflicting hunk{'s' if count > 1 else ''}): "
        f"the project's {mine.strip()!r} against upstream's {theirs.strip()!r}; {resolve(version)}"
    )


def three_way(ours: str, base: str, theirs: str, scratch: Path) -> tuple[str, int]:
    """git merge-file of the three texts: the merge, and how many hunks conflict."""
    paths = []
    for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
        path = scratch / f"merge-{name}.yaml"
        path.write_text(text)
        paths.append(str(path))
    try:
        done = subprocess.run(
            ["git", "merge-file", "-p", "-L", "project", "-L", "base", "-L", "upstream", *paths],
            capture_output=True,
            text=True,
        )
    except OSError as err:
        raise ImportFailure(f"git merge-file (the 3-way merge of the template): {err.strerror}") from None
    if done.returncode < 0 or done.returncode > 127:
        raise ImportFailure(f"git merge-file: {_one_line(done.stderr)}")
    return done.stdout, done.returncode


def merge_template(root: Path, version: str, upstream: str, scratch: Path) -> Merged:
    """The project's template of ``version``: its hardening of the nearest imported version re-applied to
    upstream's new template, with the diffs to review."""
    base = nearest(root, version)
    names = layout(base)
    ours_path, base_path = names["template"], names["upstream template"]
    ours = with_version((root / ours_path).read_text(), base, version)
    base_text = with_version((root / base_path).read_text(), base, version)
    merged, conflicts = three_way(ours, base_text, upstream, scratch)
    if conflicts:
        raise _conflict(merged, ours_path, version, base, conflicts)
    target = layout(version)["template"]
    upstream_diff = list(
        difflib.unified_diff(
            (root / base_path).read_text().splitlines(),
            upstream.splitlines(),
            f"{base_path} (upstream's {base})",
            f"upstream's {version}",
            lineterm="",
        )
    )
    review = [
        f"{target}: the project's hardening of Karpenter {base} re-applied to upstream's {version} template "
        f"(3-way merge: base {base_path}, ours {ours_path}, theirs upstream's {version})",
        f"upstream's template {base} -> {version}: " + ("identical" if not upstream_diff else "changed:"),
        *upstream_diff,
    ]
    ours_diff = list(
        difflib.unified_diff(
            (root / ours_path).read_text().splitlines(), merged.splitlines(), ours_path, target, lineterm=""
        )
    )
    review += (
        [f"the project's template {base} -> {version} (review it):", *ours_diff]
        if ours_diff
        else [f"the project's template {base} -> {version}: identical"]
    )
    return Merged(merged, base, review)
