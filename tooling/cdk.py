#!/usr/bin/env python3
"""Run the project's CDK CLI with a CONTEXT_FILE's settings as ``-c`` flags: ``make synth``, ``make cdk``.

    python -m tooling.cdk synth --quiet -c clusterName=payments-dev   # CONTEXT_FILE read from the environment
    python -m tooling.cdk --check                                      # only check CONTEXT_FILE
    python -m tooling.cdk --check-config -c maxAzs=3                   # and the whole configuration (make test)

A CONTEXT_FILE that is missing, unreadable or not a JSON object stops here with one line and exit code 2,
before the CLI (and the app) runs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from karpenter_stack.context_sources import ContextFileError, as_flags, read_context_file


def command(argv: list[str], context_file: str | None) -> list[str]:
    """The CDK CLI command line: notices off, the file's settings as ``-c`` flags, then the arguments -- the
    CLI keeps the last ``-c`` of a key, so a setting in the arguments (ARGS) wins over the file's, as
    :func:`karpenter_stack.context_sources.working_context` (the gate, the review) layers them."""
    settings = read_context_file(context_file) if context_file else {}
    return ["cdk", "--no-notices", *as_flags(settings), *argv]


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
    if argv == ["--check"]:
        return 0
    os.execvp(args[0], args)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
