#!/usr/bin/env python3
"""CDK app: an EKS cluster autoscaled by Karpenter. Configuration comes from CDK context
(cdk.json, overridable with ``cdk synth -c key=value``) and is validated before anything is built."""

import sys

import aws_cdk as cdk

from karpenter_stack.config import ConfigError, load_config
from karpenter_stack.cluster_stack import KarpenterClusterStack, stack_name_for


def main() -> None:
    app = cdk.App()
    try:
        config = load_config(app.node.get_all_context())
    except ConfigError as err:
        # One clear message, no traceback, and nothing synthesized.
        print(f"Configuration error:\n{err}", file=sys.stderr)
        sys.exit(1)
    KarpenterClusterStack(app, stack_name_for(config.cluster_name), config=config)
    app.synth()


if __name__ == "__main__":
    main()
