"""Bad input to the commands around the synth is one line naming what and where, never a traceback (issue 41,
point 5): the review's baseline and BASE, and upstream-examples' --settings; the CLI paths of the others are in
tests/test_commands.py and tests/test_project_files.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tooling.releases import upstream_examples
from tooling.review.baseline import baseline_templates
from tooling.review.model import ReviewError


def test_a_base_that_is_no_commit_is_named(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with pytest.raises(ReviewError) as info:
        baseline_templates("baseline/dev", base="no-such-rev", root=tmp_path)
    assert str(info.value) == "BASE=no-such-rev: not a commit of this repository (a branch, tag or commit id)"


def test_an_accepted_template_cut_by_hand_is_named(tmp_path: Path) -> None:
    (tmp_path / "baseline" / "dev").mkdir(parents=True)
    (tmp_path / "baseline" / "dev" / "Cluster.template.json").write_text('{"Resources": {')
    with pytest.raises(ReviewError) as info:
        baseline_templates("baseline/dev", root=tmp_path)
    assert str(info.value) == (
        "baseline/dev/Cluster.template.json: not an accepted template (Expecting property name enclosed in double "
        "quotes, line 1); restore it from git or run make accept"
    )


@pytest.mark.parametrize("given", ["/nonexistent.json", "../../README.md", "README.md", "general-purpose"])
def test_upstream_examples_settings_names_an_example(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert upstream_examples.main(["--settings", given]) == 2
    assert capsys.readouterr().err == (
        f"upstream-examples: --settings {given!r}: no such example; give the name of one of Karpenter's examples in "
        "tests/fixtures/karpenter-examples-v1.14.1/ (22: 100-cpu-limit.yaml, ..., windows-custom-userdata.yaml)\n"
    )
