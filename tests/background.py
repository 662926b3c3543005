"""Commands the suite runs as subprocesses (the real CDK CLI, ruff, mypy, cfn-lint, checkov), one at a
time on a background lane from the moment collection ends: they use the machine's second core while the
in-process tests keep the first, and each test awaits its own result (those tests run last).

A test module declares its command at import time with :func:`command`, naming the test that reads it;
only commands whose test is selected are queued (``pytest -k ...`` runs nothing else). Other code queues
a command with :func:`queued` (the session's cfn-lint and checkov runs).
"""

from __future__ import annotations

import functools
import itertools
import queue
import shutil
import subprocess
import tempfile
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Command:
    args: tuple[str, ...]
    test: str  # the test function that reads the result
    env: Mapping[str, str] | None
    in_project: bool = False  # runs in a project folder of its own with the product's cdk.json
    prepare: Callable[[Path], object] | None = None  # makes that folder instead (e.g. a user's copy)
    after: str | None = None  # the command whose output this one reads


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str
    outdir: Path  # the command's own output directory (`--output`), or its project folder (``in_project``)


@dataclass
class Job:
    """A command on the lane; ``communicate()`` waits for it (as ``subprocess.Popen`` does)."""

    args: list[str]
    env: Mapping[str, str] | None = None
    cwd: Path = ROOT
    done: threading.Event = field(default_factory=threading.Event)
    process: subprocess.Popen[str] | None = None
    returncode: int | None = None
    output: tuple[str, str] = ("", "")
    after: Job | None = None  # a job whose output this one reads: it starts once that one is done
    prepare: Callable[[], object] | None = None  # makes its working directory, on the lane (not the main thread)

    def communicate(self, timeout: float | None = 600) -> tuple[str, str]:
        if not self.done.wait(timeout):
            raise TimeoutError(f"{self.args[0]} did not finish within {timeout} s")
        return self.output


_COMMANDS: dict[str, Command] = {}
_JOBS: dict[str, tuple[Job, Path]] = {}
_LANE: queue.PriorityQueue[tuple[int, int, Job | None]] = queue.PriorityQueue()
_ORDER = itertools.count()  # FIFO within a priority
_WORKER: list[threading.Thread] = []
_BASE: list[Path] = []
_STOPPED = threading.Event()


def _run_lane() -> None:
    while (job := _LANE.get()[2]) is not None:
        if job.after is not None:
            job.after.done.wait()
        try:
            if job.prepare is not None and not _STOPPED.is_set():
                job.prepare()
            if not _STOPPED.is_set():
                job.process = subprocess.Popen(
                    job.args,
                    cwd=job.cwd,
                    env=dict(job.env) if job.env is not None else None,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                job.output = job.process.communicate()
                job.returncode = job.process.returncode
        except Exception:  # the job's test reports it; the lane goes on
            job.output, job.returncode = ("", traceback.format_exc()), -1
        finally:
            job.done.set()


# Two workers: the in-process tests leave about half a core idle on these 2-core machines.
WORKERS = 2


def queued(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path = ROOT,
    after: Job | None = None,
    prepare: Callable[[], object] | None = None,
    first: bool = False,
) -> Job:
    """Run ``args`` on the lane, in the order queued (``first``: ahead of every job not yet started; ``after``:
    not before that job is done; ``prepare``: called on the lane first); returns at once."""
    if not _WORKER:
        for i in range(WORKERS):
            _WORKER.append(threading.Thread(target=_run_lane, name=f"suite-commands-{i}", daemon=True))
            _WORKER[-1].start()
    job = Job(list(args), env, cwd, after=after, prepare=prepare)
    _LANE.put((0 if first else 1, next(_ORDER), job))
    return job


def command(
    name: str,
    args: Sequence[str],
    *,
    test: str,
    env: Mapping[str, str] | None = None,
    in_project: bool = False,
    after: str | None = None,
    prepare: Callable[[Path], object] | None = None,
) -> str:
    """Declare a command (``{outdir}`` in ``args`` becomes its own empty directory, ``{lane}`` the folder of
    every command's directory, named as the commands are); returns ``name``.

    ``in_project``: the command runs in a project folder of its own (tooling/workspace.py: the product's files
    linked, the product's cdk.json), as a user runs a README command in a clone; ``{outdir}`` is that folder."""
    _COMMANDS[name] = Command(
        tuple(args), test, env, in_project=in_project or prepare is not None, after=after, prepare=prepare
    )
    return name


def start(selected_tests: set[str]) -> None:
    """Queue every declared command whose test is selected."""
    for name, cmd in _COMMANDS.items():
        if cmd.test not in selected_tests or name in _JOBS:
            continue
        if not _BASE:
            _BASE.append(Path(tempfile.mkdtemp(prefix="suite-commands-")))
        outdir = _BASE[0] / name
        outdir.mkdir()
        prepare = None
        if cmd.prepare is not None:
            prepare = functools.partial(cmd.prepare, outdir)
        elif cmd.in_project:
            from tooling import workspace

            prepare = functools.partial(workspace.linked, outdir)
        args = [a.replace("{outdir}", str(outdir)).replace("{lane}", str(_BASE[0])) for a in cmd.args]
        before = _JOBS[cmd.after][0] if cmd.after in _JOBS else None
        job = queued(args, env=cmd.env, cwd=outdir if cmd.in_project else ROOT, after=before, prepare=prepare)
        _JOBS[name] = (job, outdir)


def result(name: str, timeout: float = 600) -> Finished:
    """The finished command (queued now if collection did not queue it, e.g. a test run by id)."""
    if name not in _JOBS:
        start({_COMMANDS[name].test})
    job, outdir = _JOBS[name]
    stdout, stderr = job.communicate(timeout)
    assert job.returncode is not None
    return Finished(job.returncode, stdout, stderr, outdir)


def stop() -> None:
    """End of session: nothing left running or queued, nothing left on disk."""
    _STOPPED.set()
    for job, _ in _JOBS.values():
        if job.process is not None and job.process.poll() is None:
            job.process.kill()
    if _WORKER:
        for _ in _WORKER:
            _LANE.put((2, next(_ORDER), None))
        for worker in _WORKER:
            worker.join(timeout=60)
        _WORKER.clear()
    _JOBS.clear()
    _STOPPED.clear()
    for base in _BASE:
        shutil.rmtree(base, ignore_errors=True)
    _BASE.clear()
