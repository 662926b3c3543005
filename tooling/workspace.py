"""Copies of the project for commands that read a ``cdk.json`` from their working directory (the CDK CLI,
``make``): the product's own configuration (tooling/product) for the product's command-line tests,
whatever the working copy's ``cdk.json`` holds; a user's own for the newcomer test."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ROOT / "tooling" / "product"
# The toolchain `make` set up: linked into every copy, never copied (and never installed again: the
# copies keep the files' modification times, so make's stamps stay newer than the requirements).
TOOLCHAIN = (".venv", "node_modules", ".venv-checkov")
# Folders of files the configuration names (nodeManifests, userDataFile): copied, as a clone holds them, since a
# project file must resolve inside the project (constructs_lib/karpenter/specs/files.py), which a link to this one does not.
COPIED = ("examples",)
# What a project folder holds that is the user's (or the CLI's) rather than the product's.
OWN = {"cdk.json", "cdk.context.json", "baseline", "cdk.out", "cdk.out.next", ".git", *TOOLCHAIN}


def project_files() -> list[str]:
    """The project's files as a clone of the working tree would hold them (tracked and new, not ignored)."""
    listing = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted(name for name in set(listing.split("\0")) if name and (ROOT / name).is_file())


def linked(dest: Path, cdk_json: dict[str, Any] | None = None, cdk_context: dict[str, Any] | None = None) -> Path:
    """``dest`` as a project folder whose product files are links to this one's, with ``cdk_json`` (default:
    the product's) and ``cdk_context`` (default: the product's, empty) as its own files."""
    dest.mkdir(parents=True, exist_ok=True)
    for entry in sorted(ROOT.iterdir()):
        if entry.name in COPIED:
            shutil.copytree(entry, dest / entry.name)
        elif entry.name not in OWN and not entry.name.startswith((".pytest", ".mypy", ".ruff", ".hypothesis")):
            (dest / entry.name).symlink_to(entry)
    _link_toolchain(dest)
    _own_files(dest, cdk_json, cdk_context)
    return dest


def copied(dest: Path, cdk_json: dict[str, Any] | None = None, cdk_context: dict[str, Any] | None = None) -> Path:
    """``dest`` as a clone of this project would be (its own git repository: the project, then a commit of
    ``cdk_json``/``cdk_context`` as a user wrote them), with the toolchain linked."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in project_files():
        if name in OWN:  # the user's (written below), never this working copy's
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    _link_toolchain(dest)
    _history(dest)
    _own_files(dest, cdk_json, cdk_context)
    _git(dest, "add", "cdk.json", "cdk.context.json")
    _git(dest, "commit", "-q", "--allow-empty", "-m", "my cluster")
    return dest


# The repository of the first copy a process makes, as it is before the copy's own files (the project's files and the
# product's cdk.json, committed), kept aside: every later copy starts from it, their objects hard-linked (git never changes an object once written; its index,
# refs and logs are copied), instead of hashing and compressing the project's files again (0.5 s a copy).
_FIRST_REPOSITORY: list[Path] = []


def _history(dest: Path) -> None:
    if _FIRST_REPOSITORY:
        shutil.copytree(_FIRST_REPOSITORY[0], dest / ".git", copy_function=_link_objects)
        return
    _own_files(dest, None, None)
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "the project")
    kept = Path(tempfile.mkdtemp(prefix="project-history-"))
    atexit.register(shutil.rmtree, kept, ignore_errors=True)
    shutil.copytree(dest / ".git", kept / ".git", copy_function=_link_objects)
    _FIRST_REPOSITORY.append(kept / ".git")


def _link_objects(src: str, dst: str) -> None:
    if f"{os.sep}objects{os.sep}" in src:
        os.link(src, dst)
    else:
        shutil.copy2(src, dst)


def _git(dest: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "newcomer", "GIT_AUTHOR_EMAIL": "newcomer@example.com"}
    env |= {"GIT_COMMITTER_NAME": "newcomer", "GIT_COMMITTER_EMAIL": "newcomer@example.com"}
    subprocess.run(["git", *args], cwd=dest, env=env, check=True, capture_output=True)


def _link_toolchain(dest: Path) -> None:
    for name in TOOLCHAIN:
        if (ROOT / name).exists():
            (dest / name).symlink_to(ROOT / name)


def _own_files(dest: Path, cdk_json: dict[str, Any] | None, cdk_context: dict[str, Any] | None) -> None:
    for name, content in (("cdk.json", cdk_json), ("cdk.context.json", cdk_context)):
        target = dest / name
        if target.is_symlink() or target.exists():
            target.unlink()
        if content is None:
            shutil.copy2(PRODUCT / name, target)
        else:
            target.write_text(json.dumps(content, indent=2) + "\n")


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a machine without AWS credentials or a default account/region."""
    env = {**os.environ, "CDK_DISABLE_CLI_TELEMETRY": "true", **extra}
    for var in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "CDK_DEFAULT_ACCOUNT",
        "CDK_DEFAULT_REGION",
        # a command of the suite's runs as a user types it, not as a sub-make of `make test`, nor with the
        # variables `make test` was given (the Makefile exports them)
        "ARGS",
        "SET",
        "CONTEXT_FILE",
        "BASE",
        "LIVE",
        "PYTEST_ARGS",
        "MAKEFLAGS",
        "MAKELEVEL",
        "MFLAGS",
        "JOB_TIMES",  # make test's record of its jobs' times (tooling/timed.py)
    ):
        env.pop(var, None)
    return env
