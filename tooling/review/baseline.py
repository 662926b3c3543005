"""The baseline: the templates of the configuration last accepted (``make accept``, into ``baseline/``), read
from the working tree or from a git revision; accepting a synth makes it the baseline."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .model import ReviewError

ROOT = Path(__file__).resolve().parents[2]  # the project

BASELINE = "baseline"


def baseline_templates(directory: str, base: str | None = None, root: Path = ROOT) -> dict[str, dict[str, Any]]:
    """The accepted templates in ``directory`` (template name -> template): from git revision ``base``, or
    the working tree; empty when nothing was accepted there."""
    if base is None:
        return {p.name.removesuffix(".json"): _json(p, root) for p in sorted((root / directory).glob("*.json"))}
    listing = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{base}:{directory}"], cwd=root, capture_output=True, text=True
    )
    if listing.returncode != 0:  # no such folder at that revision: nothing accepted there
        exists = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}"], cwd=root, capture_output=True, text=True
        )
        if exists.returncode != 0:  # but the revision must exist
            raise ReviewError(f"BASE={base}: not a commit of this repository (a branch, tag or commit id)")
        return {}
    return {
        name.removesuffix(".json"): json.loads(_git(["show", f"{base}:{directory}/{name}"], root))
        for name in listing.stdout.splitlines()
        if name.endswith(".template.json")
    }


def accept(outdir: Path, directory: Path) -> list[str]:
    """Make the templates of a cloud assembly the baseline in ``directory`` (replacing what was there);
    returns the names written."""
    templates = sorted(outdir.rglob("*.template.json"))
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("*.template.json"):
        old.unlink()
    for path in templates:
        shutil.copyfile(path, directory / path.name)
    return [p.name for p in templates]


def _json(path: Path, root: Path) -> Any:
    """An accepted template; ReviewError naming the file when it is not JSON (edited or cut by hand)."""
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        reason = f"{err.msg}, line {err.lineno}" if isinstance(err, json.JSONDecodeError) else str(err)
        raise ReviewError(
            f"{path.relative_to(root).as_posix()}: not an accepted template ({reason}); restore it from git or run "
            "make accept"
        ) from None


def _git(args: list[str], root: Path) -> str:
    result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if result.returncode != 0:
        raise ReviewError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout
