"""`make bench`: time this project's default synth against the same-scope app built with
aws_eks.Cluster + cdk-eks-karpenter, alternating the two, and report medians and their ratio.

Both run through the project's pinned CDK CLI and Node.js; the alternative gets a throwaway virtualenv
(from tooling/bench/requirements.txt) and the project's feature flags."""

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


def _alternative_dir(work: Path) -> Path:
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
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
    )
    app_dir = work / "app"
    app_dir.mkdir()
    shutil.copy(HERE / "alternative_app.py", app_dir / "app.py")
    flags = {k: v for k, v in json.loads((ROOT / "cdk.json").read_text())["context"].items() if k.startswith("@")}
    (app_dir / "cdk.json").write_text(json.dumps({"app": f"{venv}/bin/python app.py", "context": flags}))
    return app_dir


def _time_synth(cwd: Path, outdir: Path) -> float:
    env = {**os.environ, "CDK_DISABLE_CLI_TELEMETRY": "true"}
    start = time.perf_counter()
    result = subprocess.run(
        ["cdk", "--no-notices", "synth", "--quiet", "--output", str(outdir)],
        cwd=cwd,
        env=env,
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
        alternative = _alternative_dir(work)
        ours_out, theirs_out = work / "ours.out", work / "theirs.out"
        _time_synth(ROOT, ours_out)  # warm-up: jsii caches, page cache
        _time_synth(alternative, theirs_out)
        ours, theirs = [], []
        for i in range(args.runs):
            ours.append(_time_synth(ROOT, ours_out))
            theirs.append(_time_synth(alternative, theirs_out))
            print(f"run {i + 1}: this project {ours[-1]:.2f} s, alternative {theirs[-1]:.2f} s", flush=True)
    ratios = [o / t for o, t in zip(ours, theirs, strict=True)]
    print(
        f"\nmedian of {args.runs}: this project {statistics.median(ours):.2f} s, "
        f"aws_eks + cdk-eks-karpenter {statistics.median(theirs):.2f} s, "
        f"ratio {statistics.median(ratios):.2f} (median of per-run ratios; target <= 0.80)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
