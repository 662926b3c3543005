#!/usr/bin/env python3
"""CDK app: an EKS cluster autoscaled by Karpenter. Configuration comes from CDK context
(cdk.json, overridable with ``cdk synth -c key=value``) and is validated before anything is built."""

import sys

import aws_cdk as cdk

from karpenter_stack.application import build, missing_lookups, new_app
from karpenter_stack.config import ConfigError


def main(app: cdk.App | None = None) -> None:
    """Build and synthesize ``app`` (by default the one the CDK CLI's context describes)."""
    app = app or new_app()
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
    # Lookups not cached: the CLI makes them now with credentials for their account (offline it stops).
    for line in missing_lookups(assembly):
        print(f"Note: {line}", file=sys.stderr)


if __name__ == "__main__":
    main()
