#!/usr/bin/env python3
"""What you give `make` reaches a command as data, never as shell: the Makefile exports ARGS, SET, PYTEST_ARGS (and
CONTEXT_FILE, BASE, LIVE) literally, and its recipes start the project's tools through this launcher instead of
pasting the values into a shell line:

    python -m tooling.make_args SET ARGS -- python -m tooling.cdk synth --quiet

runs ``python -m tooling.cdk synth --quiet`` followed by SET's settings as ``-c key=value`` flags, then ARGS split
into words as a POSIX shell splits them (quotes group and are removed, a backslash escapes) -- but nothing in them
is run or expanded: ``;``, ``$(...)``, backticks and ``*`` are characters of an argument. The later flags win, so
ARGS win over SET, which wins over CONTEXT_FILE (tooling/cdk.py puts the file's flags first).

    SET='{"nodePools": [{"name": "spot", "capacityTypes": ["spot"]}]}'   a JSON object of settings, quoted once
    ARGS='-c clusterName=payments-dev'                                    words, as on a command line

A SET that is not a JSON object, or ARGS with an unclosed quote, stops here with one line and exit code 2.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping, Sequence

from karpenter_stack.context_sources import ContextFileError, as_flags

# The variables this launcher reads: SET as settings, the others as words.
SETTINGS = "SET"
WORDS = ("ARGS", "PYTEST_ARGS")


def words(name: str, environ: Mapping[str, str]) -> list[str]:
    """A variable's value split as a shell splits words, without running or expanding anything in it."""
    value = environ.get(name, "")
    try:
        return shlex.split(value)
    except ValueError as err:  # "No closing quotation", "No escaped character"
        raise ContextFileError(f"{name}={json.dumps(value)}: {str(err).lower()}; quote each value once") from None


def settings(environ: Mapping[str, str]) -> list[str]:
    """SET's JSON object of settings as ``-c key=value`` flags (``[]`` when SET is empty)."""
    value = environ.get(SETTINGS, "").strip()
    if not value:
        return []
    name = f"{SETTINGS}={json.dumps(value)}"
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as err:
        raise ContextFileError(f"{name}: not valid JSON ({err.msg} at column {err.colno})") from None
    if not isinstance(parsed, dict):
        raise ContextFileError(f'{name}: expected a JSON object of settings, e.g. {{"clusterName": "payments-dev"}}')
    return as_flags(parsed)


def arguments(variables: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """The arguments the named variables give, in their order (ContextFileError: the one line to show)."""
    result: list[str] = []
    for name in variables:
        if name == SETTINGS:
            result += settings(environ)
        elif name in WORDS:
            result += words(name, environ)
        else:
            raise ValueError(f"tooling.make_args reads {SETTINGS} and {', '.join(WORDS)}, not {name}")
    return result


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print("usage: python -m tooling.make_args [SET] [ARGS|PYTEST_ARGS]... -- COMMAND...", file=sys.stderr)
        return 2
    split = argv.index("--")
    try:
        extra = arguments(argv[:split], os.environ)
    except ContextFileError as err:
        print(err, file=sys.stderr)
        return 2
    command = [*argv[split + 1 :], *extra]
    os.execvp(command[0], command)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
