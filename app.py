#!/usr/bin/env python3
"""CDK app: an EKS cluster autoscaled by Karpenter. Configuration comes from CDK context
(cdk.json, overridable with ``cdk synth -c key=value``) and is validated before anything is built."""

import os
import sys

import aws_cdk as cdk

from karpenter_stack.application import build, failed_lookups, missing_lookups, new_app
from karpenter_stack.config import ConfigError


def main(app: cdk.App | None = None) -> None:
    """Build and synthesize ``app`` (by default the one the CDK CLI's context describes)."""
    app = app or new_app()
    # A lookup the CDK CLI could not make (its second run of the app): say what to do, in one line each, and stop.
    failed = failed_lookups(app.node.get_all_context())
    if failed:
        print("\n".join(failed), file=sys.stderr)
        sys.exit(1)
    try:
        build(app)
    except ConfigError as err:
        # One clear message, no traceback, and nothing synthesized.
        print(f"Configuration error:\n{err}", file=sys.stderr)
        sys.exit(1)
    try:
        assembly = app.synth()
    except RuntimeError as err:
        if "ValidationFailed" not in str(err):
            raise
        # The CDK has printed every unacknowledged finding above; no traceback on top of them.
        print(
            "Security gate failed: the findings above are neither fixed nor acknowledged "
            "(full report: validation-report.json in the output folder).",
            file=sys.stderr,
        )
        sys.exit(1)
    # Lookups not cached: run by the CDK CLI (CDK_OUTDIR set), it makes them now with credentials for their account
    # and, when it cannot, runs the app again, which says so above; run on its own, the app says so here.
    if "CDK_OUTDIR" not in os.environ:
        for line in missing_lookups(assembly):
            print(f"Note: {line}", file=sys.stderr)


if __name__ == "__main__":
    main()
