#!/usr/bin/env python3
"""Run the project's CDK CLI with a CONTEXT_FILE's settings as ``-c`` flags: ``make synth``, ``make cdk``.

    python -m tooling.cdk synth --quiet -c clusterName=payments-dev   # CONTEXT_FILE read from the environment
    python -m tooling.cdk --check                                      # only check CONTEXT_FILE (arguments ignored)
    python -m tooling.cdk --check-config -c maxAzs=3                   # and the whole configuration (make test)

A CONTEXT_FILE that is missing, unreadable or not a JSON object stops here with one line and exit code 2,
before the CLI (and the app) runs. When the app refuses a configuration (one line, exit 1), its line is the last one:
the CLI's own trailing ``<app>: Subprocess exited with error 1`` is left out of its stderr (the exit code stays).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from karpenter_stack.context_sources import ContextFileError, as_flags, read_context_file


def command(argv: list[str], context_file: str | None) -> list[str]:
    """The CDK CLI command line: notices off, the file's settings as ``-c`` flags, then the arguments -- the
    CLI keeps the last ``-c`` of a key, so a setting in the arguments (ARGS) wins over the file's, as
    :func:`karpenter_stack.context_sources.working_context` (the gate, the review) layers them."""
    settings = read_context_file(context_file) if context_file else {}
    return ["cdk", "--no-notices", *as_flags(settings), *argv]


# What a quiet synth of several stacks still says (the folder it wrote, which `make synth` then renames, and how to
# print one stack's template): `make synth` says what it synthesized itself.
QUIET_SYNTH = ("Successfully synthesized to ", "Supply a stack id (")
# What the CLI adds after the app's own message when the app exits non-zero ("python3 app.py: Subprocess exited with
# error 1"): the app has said why, this says nothing more. Matched without the terminal's colour codes.
NOISE = ": Subprocess exited with error "
ANSI = re.compile(rb"\x1b\[[0-9;]*m", re.ASCII)
UNFINISHED_ANSI = re.compile(rb"\x1b(?:\[[0-9;]*)?\Z", re.ASCII)


def app_command(root: Path) -> str:
    """cdk.json's ``app``: the command the CLI names in that line."""
    try:
        app = json.loads((root / "cdk.json").read_text()).get("app")
    except (OSError, ValueError, AttributeError):
        app = None
    return app if isinstance(app, str) else "python3 app.py"


class NoiseFilter:
    """The CLI's stderr without its ``<app>: Subprocess exited with error N`` line, passed on as it comes: a line is
    held back only while it may still become that line (so a prompt without a newline shows at once)."""

    def __init__(self, write: Callable[[bytes], object], app: str, lines: tuple[str, ...] = ()) -> None:
        self.write, self.pending = write, b""
        self.mark = (app + NOISE).encode()
        # whole lines left out too, by their start (a quiet synth's QUIET_SYNTH)
        self.lines = tuple(line.encode() for line in lines)

    def _plain(self, text: bytes) -> bytes:
        return UNFINISHED_ANSI.sub(b"", ANSI.sub(b"", text)).rstrip(b"\r\n")

    def _is_noise(self, line: bytes) -> bool:
        plain = self._plain(line)
        return (plain.startswith(self.mark) and plain[len(self.mark) :].isdigit()) or plain.startswith(self.lines)

    def _may_be_noise(self, partial: bytes) -> bool:
        plain = self._plain(partial)
        return any(len(plain) <= len(m) and m.startswith(plain) for m in (self.mark, *self.lines)) or self._is_noise(
            partial
        )

    def feed(self, chunk: bytes) -> None:
        self.pending += chunk
        out = b""
        while self.pending:
            end = self.pending.find(b"\n")
            line = self.pending if end < 0 else self.pending[: end + 1]
            if end < 0 and self._may_be_noise(line):
                break  # wait for the rest of the line
            if end < 0 or not self._is_noise(line):
                out += line
            self.pending = self.pending[len(line) :]
        if out:
            self.write(out)

    def close(self) -> None:
        if self.pending and not self._is_noise(self.pending):
            self.write(self.pending)
        self.pending = b""


def run_filtered(args: list[str]) -> int:
    """Run the CLI with its stderr through :class:`NoiseFilter` (a terminal stays a terminal: a pseudo-terminal
    then); its exit code (128 + the signal when one ended it)."""
    out = sys.stderr.buffer
    sys.stderr.flush()

    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    quiet_synth = "synth" in args and "--quiet" in args
    noise = NoiseFilter(write, app_command(Path.cwd()), QUIET_SYNTH if quiet_synth else ())
    # Ctrl-C reaches the CLI (same process group); this process waits for it to finish.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        if sys.stderr.isatty():
            import pty
            import termios

            reader, writer = pty.openpty()
            modes = termios.tcgetattr(writer)
            modes[1] &= ~termios.ONLCR  # newlines as the CLI writes them (the terminal adds its own \r)
            termios.tcsetattr(writer, termios.TCSANOW, modes)
            process = subprocess.Popen(args, stderr=writer)
            os.close(writer)
            while True:
                try:
                    chunk = os.read(reader, 65536)
                except OSError:  # EIO: the CLI closed its end
                    break
                if not chunk:
                    break
                noise.feed(chunk)
            os.close(reader)
        else:
            process = subprocess.Popen(args, stderr=subprocess.PIPE)
            assert process.stderr is not None
            while chunk := os.read(process.stderr.fileno(), 65536):
                noise.feed(chunk)
        noise.close()
        code = process.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    return 128 - code if code < 0 else code


def check_config(args: list[str]) -> int:
    """Exit 2 with one message when the working configuration (cdk.json, CONTEXT_FILE, these -c flags) is
    invalid or needs lookups cdk.context.json does not hold: `make test` and `make check` start nothing then."""
    from karpenter_stack.preflight import stop_reason  # (loads the configuration model: only for this mode)

    stop = stop_reason(os.environ.get("CONTEXT_FILE") or None, args, Path.cwd())
    if stop is None:
        return 0
    message, summary = stop
    print(f"{message}\n{summary}; nothing was tested", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    if argv[:1] == ["--check-config"]:
        return check_config(argv[1:])
    try:
        args = command(argv, os.environ.get("CONTEXT_FILE") or None)
    except ContextFileError as err:
        print(err, file=sys.stderr)
        return 2
    if argv[:1] == ["--check"]:
        return 0
    return run_filtered(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
