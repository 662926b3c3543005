"""`make bench`: time this project's default synth against the same-scope app built with
aws_eks.Cluster + cdk-eks-karpenter, alternating the two, and report medians and their ratio; beside them the
floor, an app that only loads the CDK modules this scope needs and synthesizes an empty stack.

All run through the project's pinned CDK CLI and Node.js; the alternative gets a throwaway virtualenv
(from tooling/bench/requirements.txt) and the project's feature flags. The ratio moves with the machine's load (the
alternative's synth, with CDK's built-in validator on, suffers more from a busy machine): compare quiet runs."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


# The environment of every run: no CLI telemetry.
ENV = {**os.environ, "CDK_DISABLE_CLI_TELEMETRY": "true"}


def _flags() -> dict[str, object]:
    return {k: v for k, v in json.loads((ROOT / "cdk.json").read_text())["context"].items() if k.startswith("@")}


def _alternative_dir(work: Path) -> Path:
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=ENV)
    subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-qq",
            "--disable-pip-version-check",
            "-r",
            str(HERE / "requirements.txt"),
        ],
        check=True,
        env=ENV,
    )
    app_dir = work / "app"
    app_dir.mkdir()
    shutil.copy(HERE / "alternative_app.py", app_dir / "app.py")
    (app_dir / "cdk.json").write_text(json.dumps({"app": f"{venv}/bin/python app.py", "context": _flags()}))
    return app_dir


def _floor_dir(work: Path) -> Path:
    """The floor app with this project's Python (its virtualenv, first on PATH under make) and feature flags."""
    app_dir = work / "floor"
    app_dir.mkdir()
    shutil.copy(HERE / "floor_app.py", app_dir / "app.py")
    (app_dir / "cdk.json").write_text(json.dumps({"app": f"{sys.executable} app.py", "context": _flags()}))
    return app_dir


def _time_synth(cwd: Path, outdir: Path) -> float:
    start = time.perf_counter()
    result = subprocess.run(
        ["cdk", "--no-notices", "synth", "--quiet", "--output", str(outdir)],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"synth failed in {cwd}:\n{result.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each (after one warm-up each)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        work = Path(tmp)
        print("setting up the alternative's throwaway environment ...", flush=True)
        apps = {"this project": ROOT, "alternative": _alternative_dir(work), "floor": _floor_dir(work)}
        times: dict[str, list[float]] = {name: [] for name in apps}
        for name, cwd in apps.items():  # warm-up: jsii caches, page cache, bytecode
            _time_synth(cwd, work / f"{name}.out")
        for i in range(args.runs):
            for name, cwd in apps.items():
                times[name].append(_time_synth(cwd, work / f"{name}.out"))
            print(f"run {i + 1}: " + ", ".join(f"{name} {t[-1]:.2f} s" for name, t in times.items()), flush=True)
    ratios = [o / t for o, t in zip(times["this project"], times["alternative"], strict=True)]
    floors = [f / t for f, t in zip(times["floor"], times["alternative"], strict=True)]
    print(
        f"\nmedian of {args.runs}: this project {statistics.median(times['this project']):.2f} s, "
        f"aws_eks + cdk-eks-karpenter {statistics.median(times['alternative']):.2f} s, "
        f"ratio {statistics.median(ratios):.2f} (median of per-run ratios; target <= 0.80); "
        f"the floor (the CDK modules of this scope and an empty stack) {statistics.median(times['floor']):.2f} s, "
        f"{statistics.median(floors):.2f} of the alternative"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
