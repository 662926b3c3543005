"""Commands the suite runs as subprocesses (the real CDK CLI), started when collection ends so that they
run on the machine's other core while the in-process tests run; each test awaits its own result.

A test module declares its command at import time with :func:`command`, naming the test that reads it;
only commands whose test is selected are started (``pytest -k ...`` starts nothing else).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Command:
    args: tuple[str, ...]
    test: str  # the test function that reads the result
    env: Mapping[str, str] | None


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str
    outdir: Path  # the command's own output directory (`--output`)


_COMMANDS: dict[str, Command] = {}
_RUNNING: dict[str, tuple[subprocess.Popen, Path]] = {}
_BASE: list[Path] = []


def command(name: str, args: Sequence[str], *, test: str, env: Mapping[str, str] | None = None) -> str:
    """Declare a command (``{outdir}`` in ``args`` becomes its own empty directory); returns ``name``."""
    _COMMANDS[name] = Command(tuple(args), test, env)
    return name


def start(selected_tests: set[str]) -> None:
    """Start every declared command whose test is selected."""
    for name, cmd in _COMMANDS.items():
        if cmd.test not in selected_tests or name in _RUNNING:
            continue
        if not _BASE:
            _BASE.append(Path(tempfile.mkdtemp(prefix="suite-commands-")))
        outdir = _BASE[0] / name
        outdir.mkdir()
        process = subprocess.Popen(
            [a.replace("{outdir}", str(outdir)) for a in cmd.args],
            cwd=ROOT,
            env=dict(cmd.env) if cmd.env is not None else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _RUNNING[name] = (process, outdir)


def result(name: str, timeout: float = 300) -> Finished:
    """The finished command (started now if collection did not start it, e.g. a test run by id)."""
    if name not in _RUNNING:
        start({_COMMANDS[name].test})
    process, outdir = _RUNNING[name]
    stdout, stderr = process.communicate(timeout=timeout)
    return Finished(process.returncode, stdout, stderr, outdir)


def stop() -> None:
    """End of session: nothing left running, nothing left on disk."""
    for process, _ in _RUNNING.values():
        if process.poll() is None:
            process.kill()
            process.communicate()
    _RUNNING.clear()
    for base in _BASE:
        shutil.rmtree(base, ignore_errors=True)
    _BASE.clear()


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
    ):
        env.pop(var, None)
    return env
