"""The release report (tooling/releases/release_report.py, ``make release-report SINCE=... VERSION=...``): what moving
between two kept Karpenter releases changes, the app's settings each change touches, and the changes that need a
decision.

Read from the kept charts (tooling/upstream/karpenter-<version>/charts/, the CRDs rendered once per session through
tooling/releases/chart_render.py's cache) and the templates of templates/; the synthetic cases run on a scratch copy
with one edit each (a new required CRD field, a removed chart key the app writes, a statement the project's template
drops), each giving its one-line decision."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from constructs_lib.karpenter.template_parity import load_template
from tooling import workspace
from tooling.releases import report_base, report_settings
from tooling.releases.release_report import compare, main
from tooling.releases.report_base import ROOT, ReportError
from tooling.releases.report_settings import CHART

UPSTREAM = ROOT / "tooling" / "upstream"
TEMPLATE = "karpenter-1.14.1.yaml"


@pytest.fixture(scope="module")
def forward() -> report_base.Report:
    return compare(ROOT, "1.13.1", "1.14.1")


@pytest.fixture(scope="module")
def backward() -> report_base.Report:
    return compare(ROOT, "1.14.1", "1.13.1")


def test_forward_report_names_the_changes_of_1_14(forward):
    text = forward.markdown().splitlines()
    assert text[0] == "# Karpenter 1.13.1 → 1.14.1"
    assert "- Charts: karpenter 1.13.1 → 1.14.1 (appVersion 1.13.1 → 1.14.1)." in text
    # the image is the release itself, not a changed default of the chart
    assert "- `controller.image.tag`: 1.13.1 → 1.14.1 (the release itself)" in text
    assert (
        "- `controller.image.digest`: sha256:4d5d576e8ba007948869b379740554a7cd8642ad2bbaa7ea9cf907c141a31f5d → "
        "sha256:445baefaaa689029cc12ac1f659b916b0b82fb14308ce536f8521fcf079116fa (the release itself)"
    ) in text
    assert forward.section("chart value") == []
    assert (
        "- `capacitybuffers.autoscaling.x-k8s.io`: CRD added: CapacityBuffer (autoscaling.x-k8s.io/v1beta1; "
        "15 fields, 2 CEL rules); the app writes no object of it"
    ) in text
    assert (
        "- NodePool `spec.disruption.consolidationPolicy`: enum + `Balanced` (setting "
        "`nodePools[].consolidationPolicy` lists `Balanced`; the synth takes it where the chosen release's CRD does) — setting `nodePools[].consolidationPolicy`; "
        "the app writes it"
    ) in text
    assert (
        "- `capacityBuffer`: added, default false — setting `controller.featureGates` lists it (the app's table: "
        "default false; the synth takes it where the chosen release has it)"
    ) in text
    # the CRD chart changes nothing else between the two releases: two CRD lines in all
    assert [c.path for c in forward.section("CRD")] == [
        "capacitybuffers.autoscaling.x-k8s.io",
        "spec.disruption.consolidationPolicy",
    ]
    assert forward.decisions == []
    assert "## Decisions (0)" in text


def test_forward_iam_in_the_repository(forward):
    # Without 1.13.1's templates (until the import writes them), the report says so and checks 1.14.1's parity;
    # with them, the grants compare equal (upstream's two templates are identical: the scratch test below).
    imported = (ROOT / "templates" / "karpenter-1.13.1.yaml").is_file()
    first = (
        "- no change: each template grants the same in both releases, per principal"
        if imported
        else "- 1.13.1: no template imported (templates/upstream/karpenter-1.13.1.yaml, templates/karpenter-1.13.1.yaml): "
        "its grants are not compared; make karpenter-import VERSION=1.13.1"
    )
    assert [c.line() for c in forward.section("IAM")] == [
        first,
        "- templates/karpenter-1.14.1.yaml covers every grant of upstream's 1.14.1 template",
    ]


def test_backward_report_lists_the_removals_and_fails_on_what_the_app_writes(backward):
    text = backward.markdown().splitlines()
    assert (
        "- `capacitybuffers.autoscaling.x-k8s.io`: CRD removed: CapacityBuffer; the app writes no object of it"
    ) in text
    assert (
        "- NodePool `spec.disruption.consolidationPolicy`: enum − `Balanced` — setting "
        "`nodePools[].consolidationPolicy`; the app writes it"
    ) in text
    assert "- `controller.image.tag`: 1.14.1 → 1.13.1 (the release itself)" in text
    # The app writes both: its consolidationPolicy setting offers Balanced (and the product's configurations write
    # it), and controller.featureGates offers capacityBuffer, which 1.13.1's chart would silently ignore (its
    # FEATURE_GATES env names its five gates). No CapacityBuffer object is written: that removal is no decision.
    assert backward.decisions == [
        "NodePool spec.disruption.consolidationPolicy: enum narrowed in 1.13.1 (drops Balanced); the app produces "
        '"Balanced" (the app\'s objects hold it; setting `nodePools[].consolidationPolicy` allows it)',
        "feature gate settings.featureGates.capacityBuffer: removed in 1.13.1; setting `controller.featureGates` "
        "offers it and writes it when set (constructs_lib/karpenter/specs/controller.py FEATURE_GATE_DEFAULTS)",
    ]
    assert "## Decisions (2)" in text


# --- a scratch copy of the repository's release data --------------------------------------------------------


def _release(root: Path, version: str, *, like: str = "1.14.1") -> Path:
    """tooling/upstream/karpenter-<version>/charts/ and both templates of ``version``, copied from ``like``'s."""
    charts = root / "tooling" / "upstream" / f"karpenter-{version}" / "charts"
    shutil.copytree(UPSTREAM / f"karpenter-{like}" / "charts", charts)
    for folder in ("templates", "templates/upstream"):
        (root / folder).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / folder / f"karpenter-{like}.yaml", root / folder / f"karpenter-{version}.yaml")
    return charts


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{path}: {old!r} is not there once"
    path.write_text(text.replace(old, new))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """A scratch root keeping 1.14.1, 1.13.1 (its charts, 1.14.1's templates: upstream's are identical) and three
    synthetic releases, one edit each."""
    root = tmp_path_factory.mktemp("release-report")
    _release(root, "1.14.1")
    _release(root, "1.13.1")
    shutil.rmtree(root / "tooling" / "upstream" / "karpenter-1.13.1" / "charts")
    shutil.copytree(
        UPSTREAM / "karpenter-1.13.1" / "charts", root / "tooling" / "upstream" / "karpenter-1.13.1" / "charts"
    )
    # 1.14.2: the NodePool spec gains a required field
    charts = _release(root, "1.14.2")
    _edit(
        charts / "karpenter-crd" / "templates" / "karpenter.sh_nodepools.yaml",
        "              required:\n                - template\n",
        "              required:\n                - template\n                - zone\n",
    )
    _edit(
        charts / "karpenter-crd" / "templates" / "karpenter.sh_nodepools.yaml",
        "                weight:\n",
        "                zone:\n                  type: string\n                weight:\n",
    )
    # ... and the consolidation policy a value the app's setting does not offer (no decision: a wider enum)
    _edit(
        charts / "karpenter-crd" / "templates" / "karpenter.sh_nodepools.yaml",
        "                        - Balanced\n",
        "                        - Balanced\n                        - Aggressive\n",
    )
    # ... a budgets rule rewritten (same message), and a rule on the spec that names weight
    _edit(
        charts / "karpenter-crd" / "templates" / "karpenter.sh_nodepools.yaml",
        "rule: self.all(x, has(x.schedule) == has(x.duration))",
        "rule: self.all(x, has(x.schedule) == has(x.duration) && x.nodes != '')",
    )
    _edit(
        charts / "karpenter-crd" / "templates" / "karpenter.sh_nodepools.yaml",
        "                  rule: '!has(self.replicas) || !has(self.weight)'\n",
        "                  rule: '!has(self.replicas) || !has(self.weight)'\n"
        "                - message: weight at most 50\n                  rule: '!has(self.weight) || self.weight <= 50'\n",
    )
    # 1.14.3: the chart drops priorityClassName, which the app always writes
    charts = _release(root, "1.14.3")
    _edit(charts / "karpenter" / "values.yaml", "priorityClassName: system-cluster-critical\n", "")
    # 1.14.4: the project's template drops ec2:CreateFleet from upstream's statement
    _release(root, "1.14.4")
    _edit(
        root / "templates" / "karpenter-1.14.4.yaml",
        '"Sid": "LaunchFromSharedResources",\n              "Effect": "Allow",\n              "Action": ["ec2:RunInstances", "ec2:CreateFleet"],',
        '"Sid": "LaunchFromSharedResources",\n              "Effect": "Allow",\n              "Action": ["ec2:RunInstances"],',
    )
    return root


def test_iam_no_change_when_both_releases_have_templates(scratch):
    report = compare(scratch, "1.13.1", "1.14.1")
    assert [c.line() for c in report.section("IAM")] == [
        "- no change: each template grants the same in both releases, per principal",
        "- templates/karpenter-1.14.1.yaml covers every grant of upstream's 1.14.1 template",
    ]
    # the scratch copy renders its own charts: the same report as the repository's, IAM aside
    repository = compare(ROOT, "1.13.1", "1.14.1")
    assert [c for c in report.changes if c.area != "IAM"] == [c for c in repository.changes if c.area != "IAM"]


def test_a_new_required_field_is_a_decision(scratch):
    report = compare(scratch, "1.14.1", "1.14.2")
    assert report.decisions == ["NodePool spec.zone: a new required field in 1.14.2; the app's objects do not write it"]
    text = report.markdown().splitlines()
    assert "- NodePool `spec.zone`: field added (required)" in text
    assert (
        "- NodePool `spec.disruption.consolidationPolicy`: enum + `Aggressive` (setting "
        "`nodePools[].consolidationPolicy` does not list `Aggressive`) — setting "
        "`nodePools[].consolidationPolicy`; the app writes it"
    ) in text
    # CEL: by field path, with the settings the rule's field (or a field it names) belongs to; not decisions
    cel = " (the synth's CEL check of the app's objects: tooling/schemas/karpenter-<version>/cel-rules.json)"
    assert (
        "- NodePool `spec.disruption.budgets`: CEL rule changed: `self.all(x, has(x.schedule) == has(x.duration))` → "
        f"`self.all(x, has(x.schedule) == has(x.duration) && x.nodes != '')`{cel} — setting `nodePools[].budgets`"
    ) in text
    assert (
        f"- NodePool `spec`: CEL rule added: `!has(self.weight) || self.weight <= 50` (weight at most 50){cel} — "
        "setting `nodePools[].weight`"
    ) in text


def test_a_removed_value_key_the_app_writes_is_a_decision(scratch):
    report = compare(scratch, "1.14.1", "1.14.3")
    assert report.decisions == [
        "chart value priorityClassName: removed in 1.14.3, and the app writes it (always; "
        "constructs_lib/karpenter/release.py)"
    ]
    assert (
        '- `priorityClassName`: removed (default was "system-cluster-critical") — the app writes it (always)'
        in report.markdown().splitlines()
    )


def test_an_upstream_grant_the_project_drops_is_a_decision(scratch):
    report = compare(scratch, "1.14.1", "1.14.4")
    resources = ", ".join(
        f"arn:${{AWS::Partition}}:ec2:${{AWS::Region}}:{where}"
        for where in (
            ":image/*",
            ":snapshot/*",
            "*:security-group/*",
            "*:subnet/*",
            "*:capacity-reservation/*",
            "*:placement-group/*",
        )
    )
    # named as upstream's template names it (its logical id and Sid): one line for the statement and action
    assert report.decisions == [
        "IAM the controller's managed policies: upstream's 1.14.4 template grants NodeLifecyclePolicy statement "
        f"'AllowScopedEC2InstanceAccessActions': Allow ec2:CreateFleet on {resources}, which "
        "templates/karpenter-1.14.4.yaml does not cover"
    ]
    # the project's template lost those six grants between the two releases; upstream's did not change
    removed = [c for c in report.section("IAM") if c.text.startswith("grant removed")]
    assert len(removed) == 6
    assert {c.subject for c in removed} == {"the project's template"}
    assert all("LaunchFromSharedResources': Allow ec2:CreateFleet on arn:" in c.text for c in removed)


def test_every_declared_karpenter_name_belongs_to_a_kind_or_the_chart():
    found = report_settings.settings()
    assert {s.target for s in found} == {"NodePool", "EC2NodeClass", "NodeOverlay", CHART}
    by_key = {s.key: s for s in found}
    assert by_key["nodePools[].consolidationPolicy"] == report_settings.Setting(
        "nodePools[].consolidationPolicy",
        "NodePool",
        "spec.disruption.consolidationPolicy",
        ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"),
    )
    assert by_key["nodePools[].capacityTypes"].path == "spec.template.spec.requirements[]"
    assert by_key["controller.featureGates"].target == CHART
    assert by_key["controller.featureGates"].path == "settings.featureGates"
    assert by_key["existingCluster.subnetIds"].target == "EC2NodeClass"


def test_the_command_prints_the_report_and_exits_1_on_a_decision(capsys, scratch):
    assert main(["1.13.1", "1.14.1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Karpenter 1.13.1 → 1.14.1\n")
    assert main(["1.14.1", "1.14.3", "--root", str(scratch)]) == 1
    out = capsys.readouterr().out
    assert "## Decisions (1)\n\n- chart value priorityClassName: removed in 1.14.3" in out


def test_bad_versions_are_one_line(capsys, monkeypatch):
    monkeypatch.delenv("SINCE", raising=False)
    monkeypatch.delenv("VERSION", raising=False)
    assert main(["1.13", "1.14.1"]) == 2
    err = capsys.readouterr().err
    assert err == (
        'SINCE="1.13": a Karpenter release like 1.14.1 (kept: 1.13.1, 1.14.1), e.g. make release-report '
        "SINCE=1.13.1 VERSION=1.14.1\n"
    )
    assert main(["1.13.1", "1.99.0"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "Karpenter 1.99.0: no karpenter chart in tooling/upstream/karpenter-1.99.0/charts/karpenter; import the "
        "release: make karpenter-import VERSION=1.99.0\n"
    )
    with pytest.raises(ReportError, match="no karpenter chart"):
        compare(ROOT, "1.14.1", "1.99.0")


def test_versions_come_from_the_environment_as_make_passes_them(capsys, monkeypatch):
    monkeypatch.setenv("SINCE", "1.14.1")
    monkeypatch.setenv("VERSION", "1.13.1")
    assert main([]) == 1
    assert capsys.readouterr().out.startswith("# Karpenter 1.14.1 → 1.13.1\n")


def test_scratch_templates_load(scratch):
    # the edited template still parses, and keeps the statement with its one remaining action
    template = load_template(scratch / "templates" / "karpenter-1.14.4.yaml")
    policy = template["Resources"]["KarpenterControllerNodeLifecyclePolicy"]["Properties"]["PolicyDocument"]["Fn::Sub"]
    statement = next(s for s in json.loads(policy)["Statement"] if s["Sid"] == "LaunchFromSharedResources")
    assert statement["Action"] == ["ec2:RunInstances"]


@pytest.mark.cli
def test_make_release_report_as_a_user_types_it():
    done = subprocess.run(
        ["make", "-s", "--no-print-directory", "release-report", "SINCE=1.14.1", "VERSION=1.13.1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=workspace.clean_env(),
    )
    # the report exits 1 (two decisions), which make reports as its own failure (exit code 2)
    assert done.returncode == 2, done.stderr
    assert done.stdout.startswith("# Karpenter 1.14.1 → 1.13.1\n")
    assert "## Decisions (2)\n" in done.stdout
    assert "make: *** [Makefile:" in done.stderr and "release-report] Error 1" in done.stderr
