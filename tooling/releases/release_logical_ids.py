"""Record the logical ids (and types) of every resource of the default, production and existing-cluster
configurations,
nested stacks included, as the baseline that tests/test_logical_ids.py holds later versions to.

Run when cutting a release (`make release-ids`), never to make a failing test pass: a logical id that
disappears means CloudFormation replaces (or deletes) that resource on the next deploy.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from karpenter_stack.application import build, new_app
from tooling.configurations import EXISTING, PRODUCT_CONTEXT, PRODUCTION
from tooling.review.lifecycle_model import Lifecycle

ROOT = Path(__file__).resolve().parents[2]

BASELINE = ROOT / "tests" / "release" / "logical-ids.json"
CONFIGURATIONS = {"default": {}, "production": PRODUCTION, "existing": EXISTING}


def logical_ids_of(templates: dict[str, dict[str, Any]]) -> dict[str, str]:
    """``<stack>/<logical id>`` (nested ones under their nested stack's id) -> resource type."""
    (root,) = [name for name in templates if not name.endswith(".nested.template")]
    return {key: node.type for key, node in sorted(Lifecycle(templates, root).nodes.items())}


def logical_ids(overrides: dict[str, Any]) -> dict[str, str]:
    # Path metadata on, as `cdk synth` does: nested templates are found by their construct path.
    with tempfile.TemporaryDirectory(prefix="release-ids-") as outdir:  # never left behind
        app = new_app(context={**PRODUCT_CONTEXT, "aws:cdk:enable-path-metadata": True, **overrides}, outdir=outdir)
        build(app)
        app.synth()
        return logical_ids_of(
            {p.name.removesuffix(".json"): json.loads(p.read_text()) for p in Path(outdir).glob("*.template.json")}
        )


def main() -> int:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    baseline: dict[str, Any] = {
        "release": commit.stdout.strip() or "unknown",
        "configurations": {name: logical_ids(overrides) for name, overrides in CONFIGURATIONS.items()},
    }
    BASELINE.write_text(json.dumps(baseline, indent=1, sort_keys=True) + "\n")
    print(
        f"{BASELINE.relative_to(ROOT)}: "
        + ", ".join(f"{name} {len(ids)} resources" for name, ids in baseline["configurations"].items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
