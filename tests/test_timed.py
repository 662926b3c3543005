"""`make test` prints each job's wall and CPU time at its end (tooling/timed.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tooling import timed


def test_a_job_is_run_and_its_times_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = tmp_path / "times"
    monkeypatch.setenv("JOB_TIMES", str(record))
    assert timed.main(["lint", "--", sys.executable, "-c", "import sys; sys.exit(3)"]) == 3  # the command's code
    job, start, end, cpu = record.read_text().split("\t")
    assert job == "lint" and float(start) <= float(end) and float(cpu) >= 0


def test_without_job_times_nothing_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOB_TIMES", raising=False)
    monkeypatch.chdir(tmp_path)
    assert timed.main(["lint", "--", sys.executable, "-c", "pass"]) == 0
    assert list(tmp_path.iterdir()) == []


def test_the_report_sums_each_jobs_commands_and_spans_all_jobs(tmp_path: Path) -> None:
    record = tmp_path / "times"
    record.write_text(
        "pytest\t100.0\t160.5\t70.0\nlint\t100.5\t104.0\t6.0\nlint\t104.0\t120.0\t15.5\ngate\t101.0\t130.0\t20.0\n"
    )
    assert timed.report(record) == (
        "job       wall s   CPU s\n"
        "pytest      60.5    70.0\n"
        "lint        19.5    21.5\n"
        "gate        29.0    20.0\n"
        "all jobs    60.5   111.5\n"
    )
    assert timed.report(tmp_path / "none") == ""


def test_a_wrong_call_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert timed.main(["lint", "ruff"]) == 2
    assert capsys.readouterr().err == "usage: python -m tooling.timed <job> -- <command ...> | --report <file>\n"
