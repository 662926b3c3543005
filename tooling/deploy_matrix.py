"""The jobs of the example deploy workflow (.github/workflows/deploy.yml): one per environment of your configuration,
as the workflow's matrix, in the order cdk.json lists them.

    python -m tooling.deploy_matrix >> "$GITHUB_OUTPUT"   # matrix={"include": [{"environment": "staging", ...}, ...]}

Each job: ``environment``, the GitHub environment it runs in (the name of the cdk.json environment; the stack's when
cdk.json has no ``environments``), ``stack``, the one stack it reviews live and deploys (named after its cluster),
and ``region``, the environment's (empty when it names none: the workflow's ``AWS_REGION`` variable then). A
configuration with a CDK Pipelines pipeline (``pipeline``) is refused: the pipeline deploys those environments, and
two deployers of one stack would race. Exit 0, or 2 with one message (a configuration error, a pipeline).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from karpenter_stack import context_sources
from karpenter_stack.config import AppConfig, ConfigError, load_environments, load_pipeline, stack_name_for

PIPELINE = (
    "your configuration sets pipeline: its CDK Pipelines pipeline deploys these environments (docs/delivery.md); the deploy "
    "workflow would deploy the same stacks beside it: use one of the two"
)


def jobs(configs: dict[str, AppConfig]) -> list[dict[str, str]]:
    """One job per environment, in the configuration's order."""
    return [
        {
            "environment": name or stack_name_for(config.cluster_name),
            "stack": stack_name_for(config.cluster_name),
            "region": config.region or "",
        }
        for name, config in configs.items()
    ]


def main(root: Path | None = None) -> int:
    root = root or context_sources.project_dir()
    try:
        context = context_sources.working_context(os.environ.get("CONTEXT_FILE") or None, [], root=root)
        file_context = context_sources.cdk_json_context(root)
        configs = load_environments(context, file_context=file_context)
        pipeline = load_pipeline(context, configs, file_context=file_context)
    except ConfigError as err:
        print(f"Configuration error:\n{err}", file=sys.stderr)
        return 2
    except context_sources.ContextFileError as err:
        print(err, file=sys.stderr)
        return 2
    if pipeline is not None:
        print(PIPELINE, file=sys.stderr)
        return 2
    print(f"matrix={json.dumps({'include': jobs(configs)}, separators=(',', ':'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
