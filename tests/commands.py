"""Commands the suite runs as a user types them (the README's `make` targets, the CDK CLI), in folders of their
own. A test module declares each command once with :func:`command`; :func:`result` runs it the first time a test
asks, and hands every later reader the same result. These tests carry the ``cli`` marker: `make test` runs them in
pytest runs of their own (`make pytest-cli`: the examples, and the other commands), beside the in-process tests."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tooling import workspace

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Command:
    name: str
    args: tuple[str, ...]
    env: Mapping[str, str] | None
    in_project: bool = False  # runs in a project folder of its own with the product's cdk.json
    prepare: Callable[[Path], object] | None = None  # makes that folder instead (e.g. a user's copy)


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str
    outdir: Path  # the command's own output directory (`--output`), or its project folder (``in_project``)


_RESULTS: dict[str, Finished] = {}


def command(
    name: str,
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    in_project: bool = False,
    prepare: Callable[[Path], object] | None = None,
) -> Command:
    """Declare a command: ``{outdir}`` in ``args`` becomes its own empty directory. ``in_project``: it runs in a
    project folder of its own (tooling/workspace.py: the product's files linked, the product's cdk.json), as a user
    runs a README command in a clone; ``{outdir}`` is that folder."""
    return Command(name, tuple(args), env, in_project=in_project or prepare is not None, prepare=prepare)


def result(cmd: Command, timeout: float = 600) -> Finished:
    """The finished command: run now, or the result of its earlier run in this session."""
    if cmd.name not in _RESULTS:
        # under the session's own temporary directory (tests/conftest.py), removed with it
        outdir = Path(tempfile.mkdtemp(prefix=f"{cmd.name}-"))
        if cmd.prepare is not None:
            cmd.prepare(outdir)
        elif cmd.in_project:
            workspace.linked(outdir)
        args = [a.replace("{outdir}", str(outdir)) for a in cmd.args]
        done = subprocess.run(
            args,
            cwd=outdir if cmd.in_project else ROOT,
            env=dict(cmd.env) if cmd.env is not None else None,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        _RESULTS[cmd.name] = Finished(done.returncode, done.stdout, done.stderr, outdir)
    return _RESULTS[cmd.name]
