#!/usr/bin/env python3
"""What a new user does, end to end (`make newcomer`): a copy of this repository made their own -- another
cluster name, their own pools, two environments with accounts and a filled cdk.context.json, the production
profile -- then the README's two commands and nothing else (green), a README recipe with what the README says to
add on a cdk.json with environments (one stack), then an invalid edit (red, with the configuration error's one
line). Prints each command's time; exits 1 if anything differs.

The copy links this checkout's toolchain (.venv/, node_modules/, .venv-checkov/: `make setup` first) and keeps
the files' times, so neither command installs anything again.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tooling import workspace
from tooling.workspace import clean_env

ROOT = Path(__file__).resolve().parent.parent

SYSTEM_POOL = {
    "name": "system",
    "capacityTypes": ["on-demand"],
    "labels": {"workload-class": "system"},
    "taints": [{"key": "workload-class", "value": "system", "effect": "NoSchedule"}],
}
ENVIRONMENTS = {"staging": ("444455556666", "eu-west-1"), "prod": ("123456789012", "us-east-1")}


def their_cdk_json() -> dict[str, Any]:
    """The shipped cdk.json made someone's own."""
    cdk_json: dict[str, Any] = json.loads((workspace.PRODUCT / "cdk.json").read_text())
    cdk_json["context"] |= {
        "clusterName": "payments",
        "profile": "production",
        "nodeClasses": [{"name": "default", "amiAlias": "al2023@v20260801"}],
        "nodePools": [
            SYSTEM_POOL,
            {"name": "general", "capacityTypes": ["on-demand"], "architectures": ["arm64"], "limits": {"cpu": 256}},
            # (null: no bound on its drains, as upstream; jsii drops nulls from the context, the app must not)
            {
                "name": "batch",
                "capacityTypes": ["spot"],
                "weight": 10,
                "instanceCategories": ["c", "m"],
                "terminationGracePeriod": None,
            },
        ],
        "environments": {
            # (each account's own administrators: the production profile creates no account-wide admin role)
            name: {
                "account": account,
                "region": region,
                "administrators": [f"arn:aws:iam::{account}:role/platform-admins"],
            }
            for name, (account, region) in ENVIRONMENTS.items()
        },
    }
    return cdk_json


def their_lookups() -> dict[str, list[str]]:
    """cdk.context.json as the README says to fill it: each environment's availability zones."""
    return {
        f"availability-zones:account={account}:region={region}": [f"{region}{z}" for z in "abc"]
        for account, region in ENVIRONMENTS.values()
    }


def run(project: Path, *command: str) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    result = subprocess.run(command, cwd=project, capture_output=True, text=True, env=clean_env())
    return result, time.monotonic() - start


def main() -> int:
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="newcomer-") as tmp:
        project = workspace.copied(Path(tmp) / "my-cluster", their_cdk_json(), their_lookups())
        synth, seconds = run(project, "make", "synth")
        print(f"make synth: exit {synth.returncode} in {seconds:.1f} s")
        stacks = sorted(p.name for p in (project / "cdk.out").glob("*.template.json"))
        if synth.returncode != 0 or not {"payments-staging.template.json", "payments-prod.template.json"} <= set(
            stacks
        ):
            problems.append(f"make synth: {synth.stderr[-2000:]}")
        # a README recipe on their cdk.json with environments, with what the README says to add: one stack
        recipe, seconds = run(
            project, "make", "synth", "CONTEXT_FILE=examples/existing-cluster.json", 'SET={"environments": {}}'
        )
        print(f"make synth of the existing-cluster recipe: exit {recipe.returncode} in {seconds:.1f} s")
        recipe_stacks = sorted(
            p.name for p in (project / "cdk.out").glob("*.template.json") if ".nested." not in p.name
        )
        if recipe.returncode != 0 or recipe_stacks != ["shared-prod.template.json"]:
            problems.append(f"the existing-cluster recipe: {recipe_stacks} {recipe.stderr[-2000:]}")
        test, seconds = run(project, "make", "test")
        print(f"make test: exit {test.returncode} in {seconds:.1f} s ({test.stdout.strip().splitlines()[-1]})")
        if test.returncode != 0:
            problems.append(f"make test: {test.stdout[-3000:]}{test.stderr[-2000:]}")
        invalid = their_cdk_json()
        invalid["context"]["environments"]["prod"]["maxAzs"] = 7
        (project / "cdk.json").write_text(json.dumps(invalid, indent=2) + "\n")
        red, seconds = run(project, "make", "test")
        message = "environments.prod.maxAzs = 7: Input should be less than or equal to 6 (from environments.prod)"
        print(f"make test after an invalid edit: exit {red.returncode} in {seconds:.1f} s")
        if red.returncode == 0 or f"Configuration error:\n{message}\n" not in red.stderr:
            problems.append(f"invalid edit: expected the one-line error {message!r}, got:\n{red.stderr[-2000:]}")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
