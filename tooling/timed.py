"""Wall and CPU time of each job of ``make test``, printed at its end, so that growth shows in every run.

    python -m tooling.timed <job> -- <command ...>   # run it; with JOB_TIMES set, add a line to that file
    python -m tooling.timed --report <file>          # the jobs' wall and CPU times, and all of them together

A job's CPU time is its own and its descendants' that it waited for (user + system: ``RUSAGE_CHILDREN``; the jsii
kernel's Node.js process, the CDK CLI and the scanners are waited for). The jobs run side by side, so "all jobs"
gives the wall time from the first start to the last end, and the CPU time of all of them.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path


def run(job: str, command: list[str]) -> int:
    """Run ``command``; record ``job``'s start, end and CPU seconds in $JOB_TIMES (when set)."""
    start = time.time()
    code = subprocess.call(command)
    end = time.time()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    record = os.environ.get("JOB_TIMES")
    if record:
        with Path(record).open("a") as out:
            out.write(f"{job}\t{start:.3f}\t{end:.3f}\t{usage.ru_utime + usage.ru_stime:.1f}\n")
    return code


def report(record: Path) -> str:
    """One line per job (its commands summed) and one for all of them, from a JOB_TIMES file."""
    jobs: dict[str, tuple[float, float, float]] = {}
    for line in record.read_text().splitlines() if record.exists() else []:
        job, *numbers = line.split("\t")
        start, end, cpu = (float(n) for n in numbers)
        first, last, total = jobs.get(job, (start, end, 0.0))
        jobs[job] = (min(first, start), max(last, end), total + cpu)
    if not jobs:
        return ""
    width = max(len(job) for job in jobs) + 2
    lines = [f"{'job':<{width}}{'wall s':>8}{'CPU s':>8}"]
    for job, (first, last, cpu) in sorted(jobs.items(), key=lambda item: item[1][0]):
        lines.append(f"{job:<{width}}{last - first:>8.1f}{cpu:>8.1f}")
    first = min(v[0] for v in jobs.values())
    last = max(v[1] for v in jobs.values())
    lines.append(f"{'all jobs':<{width}}{last - first:>8.1f}{sum(v[2] for v in jobs.values()):>8.1f}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv[:1] == ["--report"] and len(argv) == 2:
        print(report(Path(argv[1])), end="")
        return 0
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m tooling.timed <job> -- <command ...> | --report <file>", file=sys.stderr)
        return 2
    return run(argv[0], argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
