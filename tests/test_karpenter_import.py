"""``python -m tooling.releases.karpenter_import`` (``make karpenter-import``): re-importing each kept release from the
project's own artifacts (its charts in tooling/upstream/, upstream's template in templates/upstream/) into a scratch
copy writes exactly the committed files -- the CRDs, every schema and CEL mirror, the chart values schema, the
feature gates and the project's template, its hardening carried from the other release by the 3-way merge. Bad input
is one line and leaves nothing written. Offline: the charts are rendered with the pinned Helm, nothing is pulled."""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tooling.kubernetes_schemas import KubernetesValidator, schema
from tooling.mirror_crd_schema import CRD_FILES
from tooling.releases import helm, import_base, import_fetch, import_template, import_write, karpenter_import
from tooling.releases.import_base import layout

VERSIONS = ("1.13.1", "1.14.1")


def kept_artifacts(version: str, into: Path) -> Path:
    """A --from folder of the project's own kept artifacts of ``version``."""
    folder = into / f"kept-{version}"
    shutil.copytree(ROOT / layout(version)["upstream"] / "charts", folder / "charts")
    shutil.copy(ROOT / layout(version)["upstream template"], folder / "cloudformation.yaml")
    return folder


def as_archives(folder: Path, version: str) -> Path:
    """The charts of a --from folder as the archives ``helm pull`` writes (charts/<chart>-<version>.tgz)."""
    for name in import_base.CHARTS:
        with tarfile.open(folder / "charts" / f"{name}-{version}.tgz", "w:gz") as tar:
            tar.add(folder / "charts" / name, arcname=name)
        shutil.rmtree(folder / "charts" / name)
    return folder


def scratch_root(into: Path, without: str) -> Path:
    """A copy of the project's templates/ and the other release's charts, without ``without``'s: its hardening must come
    from the other release."""
    root = into / f"root-without-{without}"
    shutil.copytree(ROOT / "templates", root / "templates")
    for other in VERSIONS:  # the other release's kept charts: the release report compares with them
        if other != without:
            shutil.copytree(ROOT / layout(other)["upstream"] / "charts", root / layout(other)["upstream"] / "charts")
    for role in ("template", "upstream template", "changes"):
        (root / layout(without)[role]).unlink()
    return root


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@dataclass(frozen=True)
class Imported:
    root: Path
    written: list[str]
    printed: list[str]


@pytest.fixture(scope="module")
def imports(tmp_path_factory) -> dict[str, Imported]:
    """One import of each kept release, shared by the tests: 1.13.1's charts as archives, 1.14.1's as folders."""
    done = {}
    for version in VERSIONS:
        scratch = tmp_path_factory.mktemp(f"import-{version}")
        root, printed, source = scratch_root(scratch, version), [], kept_artifacts(version, scratch)
        if version == "1.13.1":
            as_archives(source, version)
        written = karpenter_import.run(version, source, root, printed.append)
        done[version] = Imported(root, written, printed)
    return done


@pytest.mark.parametrize("version", VERSIONS)
def test_reimporting_a_kept_release_writes_the_committed_files_byte_for_byte(version, imports):
    done = imports[version]
    committed = import_write._files(ROOT, version)
    assert done.written == committed
    assert len(committed) == {"1.13.1": 46, "1.14.1": 49}[version]  # 1.14 adds the capacitybuffers CRD (3 files)
    for relative in committed:
        assert (done.root / relative).read_bytes() == (ROOT / relative).read_bytes(), relative
    assert [p for p in (done.root / ".cache" / "karpenter-import").iterdir()] == []  # the staging folder is gone


@pytest.mark.parametrize("version", VERSIONS)
def test_the_crds_are_what_the_crd_chart_installs_and_the_mirrors_name_them(version):
    crds = sorted(p.name for p in (ROOT / layout(version)["upstream"] / "crds").iterdir())
    assert crds == [
        *(["autoscaling.x-k8s.io_capacitybuffers.yaml"] if version == "1.14.1" else []),
        "karpenter.k8s.aws_ec2nodeclasses.yaml",
        "karpenter.sh_nodeclaims.yaml",
        "karpenter.sh_nodeoverlays.yaml",
        "karpenter.sh_nodepools.yaml",
    ]
    for name, file in CRD_FILES.items():
        upstream = schema(version, name)["x-upstream"]
        assert upstream["version"] == version
        assert (
            upstream["source"]
            == f"tooling/upstream/karpenter-{version}/crds/{file} (the karpenter-crd chart {version}, rendered)"
        )
    rules = json.loads((ROOT / layout(version)["schemas"] / "cel-rules.json").read_text())
    assert sorted(rules["kinds"]) == [
        *(["CapacityBuffer autoscaling.x-k8s.io/v1beta1"] if version == "1.14.1" else []),
        "EC2NodeClass karpenter.k8s.aws/v1",
        "NodeClaim karpenter.sh/v1",
        "NodeOverlay karpenter.sh/v1alpha1",
        "NodePool karpenter.sh/v1",
    ]


def test_the_hardening_reapplied_on_1_13_1_is_the_committed_template_and_the_diff_is_printed(imports):
    """1.13.1's upstream template is 1.14.1's: the merge carries the project's template over, the release it names
    changed, and prints it to review; then the release report between the two (nothing to decide)."""
    *merged, report = imports["1.13.1"].printed
    assert report.startswith("# Karpenter 1.13.1 → 1.14.1\n") and "\n## Decisions (0)\n" in report
    assert "- `capacityBuffer`: added, default false" in report
    assert merged == [
        "templates/karpenter-1.13.1.yaml: the project's hardening of Karpenter 1.14.1 re-applied to upstream's 1.13.1 "
        "template (3-way merge: base templates/upstream/karpenter-1.14.1.yaml, ours templates/karpenter-1.14.1.yaml, "
        "theirs upstream's 1.13.1)",
        "upstream's template 1.14.1 -> 1.13.1: identical",
        "the project's template 1.14.1 -> 1.13.1 (review it):",
        "--- templates/karpenter-1.14.1.yaml",
        "+++ templates/karpenter-1.13.1.yaml",
        "@@ -1,9 +1,9 @@",
        ' AWSTemplateFormatVersion: "2010-09-09"',
        " Description: >-",
        "-  AWS resources that Karpenter 1.14.1 needs outside Kubernetes: the node role, six controller managed",
        "+  AWS resources that Karpenter 1.13.1 needs outside Kubernetes: the node role, six controller managed",
        "   policies (attached by the installer to the controller's IRSA role), the interruption queue and the",
        "   EventBridge rules that feed it. Maintained by this project; mirrors what upstream's getting-started",
        "-  template grants for 1.14.1 and nothing more.",
        "+  template grants for 1.13.1 and nothing more.",
        " ",
        " Parameters:",
        "   ClusterName:",
    ]
    committed = (ROOT / "templates" / "karpenter-1.13.1.yaml").read_text()
    assert committed == (ROOT / "templates" / "karpenter-1.14.1.yaml").read_text().replace("1.14.1", "1.13.1")


def test_each_releases_values_schema_takes_the_keys_its_chart_reads_and_refuses_the_others():
    """The generated values schema takes the keys each chart reads and refuses the others: 1.13.1's chart has no
    capacityBuffer gate; a key below an object the chart passes through whole (affinity) is Kubernetes's."""
    gates = {"settings": {"clusterName": "c", "featureGates": {"capacityBuffer": True}}}
    refused = KubernetesValidator(schema("1.13.1", "controller-values"))
    assert [e.message for e in refused.iter_errors(gates)] == [
        "Additional properties are not allowed ('capacityBuffer' was unexpected)"
    ]
    accepted = KubernetesValidator(schema("1.14.1", "controller-values"))
    assert list(accepted.iter_errors(gates)) == []
    for values in (
        {"settings": {"clusterName": "c"}, "controller": {"image": {"tags": "x"}}},
        {"settings": {"clusterName": "c"}, "podDisruptionBudget": {"minAvailable": 1}},
        {"settings": {"clusterName": ""}},
        {"replicas": 2},
    ):
        assert list(accepted.iter_errors(values)) != [], values
    passed_through = {"settings": {"clusterName": "c"}, "affinity": {"podAffinity": {"x": 1}}, "strategy": {"y": 2}}
    assert list(accepted.iter_errors({**passed_through, "podDisruptionBudget": {"maxUnavailable": "50%"}})) == []


def test_the_values_schema_is_read_from_values_yaml_and_the_templates(tmp_path):
    """Keys: values.yaml's and the templates' .Values paths; an object read whole is not expanded; a value wrapped in
    `required` is required (and a required string non-empty); types and defaults are values.yaml's."""
    from tooling.chart_values_schema import values_schema

    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "deployment.yaml").write_text(
        "{{ toYaml .Values.affinity }} {{ .Values.affinity.podAffinity }} {{ .Values.pdb.maxUnavailable }}\n"
        '{{ required "name it" (tpl .Values.settings.name .) }} {{ .Values.settings.extra }} {{ .Values.grace }}\n'
    )
    values = {
        "affinity": {"nodeAffinity": {"x": 1}},
        "pdb": {"maxUnavailable": 1},
        "settings": {"name": ""},
        "grace": None,
    }
    generated = values_schema(tmp_path, values, "9.9.9")
    assert {k: v for k, v in generated.items() if k not in ("$schema", "title", "x-upstream")} == {
        "type": "object",
        "properties": {
            "affinity": {"type": "object", "default": {"nodeAffinity": {"x": 1}}},
            "pdb": {
                "type": "object",
                "properties": {"maxUnavailable": {"type": ["integer", "string"], "default": 1}},
                "additionalProperties": False,
            },
            "settings": {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1, "default": ""}, "extra": {}},
                "additionalProperties": False,
                "required": ["name"],
            },
            "grace": {},
        },
        "additionalProperties": False,
        "required": ["settings"],
    }


# --- bad input: one line, exit 1, nothing written ---------------------------------------------------------------


def _fails(argv: list[str], root: Path, capsys) -> str:
    before = tree(root)
    assert karpenter_import.main([*argv, "--root", str(root)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert {k: v for k, v in tree(root).items() if not k.startswith(".cache/")} == before  # nothing half-written
    staging = root / ".cache" / "karpenter-import"
    assert not staging.exists() or list(staging.iterdir()) == []
    return err.removesuffix("\n")


@pytest.fixture
def root(tmp_path) -> Path:
    return scratch_root(tmp_path, "1.13.1")


def test_a_version_that_is_not_one_is_refused(root, capsys):
    assert _fails(["1.14"], root, capsys) == (
        "karpenter-import: VERSION '1.14': not a Karpenter release version (X.Y.Z, e.g. 1.14.1)"
    )
    assert (
        _fails([""], root, capsys) == "karpenter-import: VERSION is required, e.g. make karpenter-import VERSION=1.15.0"
    )


def test_importing_a_release_again_says_nothing_changed(imports, tmp_path, capsys):
    """Its files are rewritten as they were: the template's diff is "identical", and the summary says so."""
    root = imports["1.13.1"].root
    assert (
        karpenter_import.main(["1.13.1", "--from", str(kept_artifacts("1.13.1", tmp_path)), "--root", str(root)]) == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out[-2] == "the project's template 1.13.1 -> 1.13.1: identical"
    assert out[-1].startswith("imported Karpenter 1.13.1: 46 files, ") and out[-1].endswith(
        ", constructs_lib/karpenter/releases/karpenter-1.13.1.json; nothing changed"
    )


def test_an_unknown_version_is_the_registrys_answer_in_one_line(root, capsys, monkeypatch):
    def pull(*args, cwd=None):
        raise helm.HelmError(
            'helm pull failed: Error: failed to perform "FetchReference" on source:\n'
            "public.ecr.aws/karpenter/karpenter:9.9.9: not found"
        )

    monkeypatch.setattr(helm, "run", pull)
    assert _fails(["9.9.9"], root, capsys) == (
        "karpenter-import: Karpenter 9.9.9: oci://public.ecr.aws/karpenter/karpenter: helm pull failed: Error: failed "
        'to perform "FetchReference" on source: public.ecr.aws/karpenter/karpenter:9.9.9: not found'
    )


def _artifacts(tmp_path: Path, version: str = "1.13.1") -> Path:
    return kept_artifacts(version, tmp_path)


def test_a_folder_without_the_expected_files(root, tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert _fails(["1.13.1", "--from", str(missing)], root, capsys) == (
        f"karpenter-import: --from {missing}: no such folder"
    )
    folder = _artifacts(tmp_path)
    (folder / "cloudformation.yaml").unlink()
    assert _fails(["1.13.1", "--from", str(folder)], root, capsys) == (
        f"karpenter-import: {folder}/cloudformation.yaml: missing (the getting-started CloudFormation template of "
        "Karpenter 1.13.1)"
    )
    (folder / "cloudformation.yaml").write_text("AWSTemplateFormatVersion: 2010-09-09\n")
    shutil.rmtree(folder / "charts" / "karpenter-crd")
    assert _fails(["1.13.1", "--from", str(folder)], root, capsys) == (
        f"karpenter-import: {folder}/charts: neither karpenter-crd/ nor karpenter-crd-1.13.1.tgz (the karpenter-crd "
        "chart of Karpenter 1.13.1, as helm pull writes it)"
    )


def test_artifacts_that_cannot_be_parsed(root, tmp_path, capsys):
    folder = _artifacts(tmp_path)
    values = folder / "charts" / "karpenter" / "values.yaml"
    values.write_text(values.read_text().replace("replicas: 2", "replicas: [2"))
    assert _fails(["1.13.1", "--from", str(folder)], root, capsys) == (
        f"karpenter-import: {folder}/charts/karpenter/values.yaml: not YAML at line 51 (expected ',' or ']', but got "
        "'?')"
    )
    values.write_text(
        values.read_text().replace("replicas: [2", "replicas: 2").replace("nodeRepair: false", 'nodeRepair: "no"')
    )
    assert _fails(["1.13.1", "--from", str(folder)], root, capsys) == (
        f"karpenter-import: {folder}/charts/karpenter/values.yaml: settings.featureGates is not a mapping of gates "
        "to true or false"
    )
    shutil.rmtree(folder / "charts")
    shutil.copytree(ROOT / layout("1.13.1")["upstream"] / "charts", folder / "charts")
    (folder / "cloudformation.yaml").write_text("Resources: [\n")
    assert _fails(["1.13.1", "--from", str(folder)], root, capsys) == (
        f"karpenter-import: {folder}/cloudformation.yaml: not YAML at line 2 (did not find expected node content)"
    )
    # a chart whose CRDs are symlinks (a repository's layout) reads as Helm reads it; a dangling one is one line
    # a CRD the mirrors cannot read is one line naming the chart's file (issue 41: a traceback before)
    rendered = folder / "charts" / "karpenter-crd" / "templates" / "karpenter.sh_nodepools.yaml"
    kept = rendered.read_text()
    rendered.write_text(kept[: kept.index("  versions:")] + "  versions: []\n")
    assert _fails(["1.13.1", "--from", str(folder)], root, capsys) == (
        f"karpenter-import: {folder}/charts/karpenter-crd/templates/karpenter.sh_nodepools.yaml: serves 0 versions "
        "(spec.versions[].served); the mirrors read exactly one"
    )
    rendered.write_text(kept)
    crd = folder / "charts" / "karpenter" / "crds" / "karpenter.sh_nodepools.yaml"
    crd.unlink()
    crd.symlink_to("/nonexistent/pkg/apis/crds/karpenter.sh_nodepools.yaml")
    assert _fails(["1.13.1", "--from", str(folder)], root, capsys) == (
        f"karpenter-import: {crd}: cannot read it (No such file or directory; a symlink whose target is missing?): "
        "give the chart's files as Helm reads them"
    )
    shutil.rmtree(folder / "charts" / "karpenter")
    (folder / "charts" / "karpenter-1.13.1.tgz").write_bytes(b"not a tar archive")
    assert _fails(["1.13.1", "--from", str(folder)], root, capsys) == (
        f"karpenter-import: {folder}/charts/karpenter-1.13.1.tgz: not a chart archive (a gzipped tar, as helm pull "
        "writes it): ReadError"
    )


def test_the_charts_of_another_release_are_refused(root, tmp_path, capsys):
    folder = _artifacts(tmp_path, "1.13.1")
    assert _fails(["1.14.1", "--from", str(folder)], root, capsys) == (
        f"karpenter-import: {folder}/charts/karpenter/Chart.yaml: chart karpenter 1.13.1, expected karpenter 1.14.1"
    )


def test_a_conflict_with_the_projects_hardening_stops_the_import_naming_the_hunk(root, tmp_path, capsys):
    """Upstream rewrites the description the project rewrote too: a human merges it."""
    folder = _artifacts(tmp_path)
    template = folder / "cloudformation.yaml"
    template.write_text(
        template.read_text().replace(
            "Description: Resources used by https://github.com/aws/karpenter", "Description: X"
        )
    )
    assert _fails(["1.13.1", "--from", str(folder)], root, capsys) == (
        "karpenter-import: templates/karpenter-1.14.1.yaml: the project's hardening (carried from Karpenter 1.14.1) "
        "conflicts with upstream's change 1.14.1 -> 1.13.1 at line 2 (1 conflicting hunk): the project's "
        "'Description: >-' against upstream's 'Description: X'; merge it by hand: upstream's template as "
        "templates/upstream/karpenter-1.13.1.yaml, the project's as templates/karpenter-1.13.1.yaml and its reasons "
        "as templates/changes/karpenter-1.13.1.yaml, then import again"
    )


def test_a_difference_the_carried_reasons_do_not_explain_stops_the_import(root, tmp_path, capsys, monkeypatch):
    """What make template-diff refuses on the merged template (stood in for: its check runs in the imports above)."""
    problems = ["templates/karpenter-1.13.1.yaml: Resources.X.Properties.Y: no reason in templates/changes/x", "2nd"]
    monkeypatch.setattr(import_write.template_parity, "report", lambda template: ([], problems))
    assert _fails(["1.13.1", "--from", str(_artifacts(tmp_path))], root, capsys) == (
        "karpenter-import: templates/karpenter-1.13.1.yaml: Resources.X.Properties.Y: no reason in "
        "templates/changes/x (and 1 more); merge it by hand: upstream's template as "
        "templates/upstream/karpenter-1.13.1.yaml, the project's as templates/karpenter-1.13.1.yaml and its reasons "
        "as templates/changes/karpenter-1.13.1.yaml, then import again"
    )


def test_a_release_with_its_own_files_is_its_own_base(tmp_path):
    """After a conflict merged by hand: the release's own template is carried (it is the nearest), not another's."""
    root = scratch_root(tmp_path, "1.13.1")
    assert import_template.nearest(root, "1.13.1") == "1.14.1"
    assert import_template.nearest(root, "1.12.0") == "1.14.1"
    assert import_template.nearest(ROOT, "1.13.1") == "1.13.1"
    assert import_template.nearest(ROOT, "1.13.9") == "1.13.1"
    assert import_template.nearest(ROOT, "1.14.0") == "1.14.1"
    assert import_template.nearest(ROOT, "1.15.0") == "1.14.1"
    shutil.rmtree(root / "templates")
    (root / "templates").mkdir()
    with pytest.raises(import_base.ImportFailure, match="no imported version to carry the project's hardening"):
        import_template.nearest(root, "1.13.1")


def test_a_failure_while_moving_in_puts_back_what_was_there(tmp_path, monkeypatch):
    """A release staged over a copy that has it: moving the fifth of its six paths aside fails; the four moved in
    are taken out and what they replaced is put back."""
    root, staged = tmp_path / "root", tmp_path / "staged"
    for base, text in ((root, "old"), (staged, "new")):
        for relative in layout("1.14.1").values():
            path = base / relative / "file" if "." not in Path(relative).name else base / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    real, calls = os.replace, []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 9:  # 4 moved aside and 4 moved in, then the fifth aside
            raise OSError(28, "No space left on device", str(dst))
        real(src, dst)

    monkeypatch.setattr(import_write.os, "replace", replace)
    before = tree(root)
    with pytest.raises(import_base.ImportFailure) as failure:
        import_write.move_in(root, staged, "1.14.1", tmp_path / "aside")
    assert str(failure.value) == (
        f"{root}: could not move templates/changes/karpenter-1.14.1.yaml in (No space left on device); nothing was "
        "changed"
    )
    assert tree(root) == before and set(before.values()) == {b"old"} and len(before) == 6


def test_online_the_charts_come_from_the_registry_and_the_template_from_the_release_docs(tmp_path, monkeypatch):
    """helm pull of both charts from the OCI registry, with the pinned Helm; the template from the release's tag,
    the minor's docs folder first, then preview/ (what upstream's reference page tells users to curl)."""
    pulled, asked = [], []

    def pull(*args, cwd=None):
        pulled.append(args)
        name = args[1].rsplit("/", 1)[1]
        shutil.copytree(ROOT / layout("1.14.1")["upstream"] / "charts" / name, Path(args[-1]) / name)
        return ""

    def download(url):
        asked.append(url)
        return None if "/en/v1.14/" in url else "Resources: {}\n"

    monkeypatch.setattr(helm, "run", pull)
    monkeypatch.setattr(import_fetch, "_download", download)
    (tmp_path / "fetched").mkdir()
    artifacts = import_fetch.online("1.14.1", tmp_path / "fetched")
    charts = str(tmp_path / "fetched" / "charts")
    assert pulled == [
        ("pull", f"oci://public.ecr.aws/karpenter/{name}", "--version", "1.14.1", "--untar", "--untardir", charts)
        for name in ("karpenter", "karpenter-crd")
    ]
    docs = "https://raw.githubusercontent.com/aws/karpenter-provider-aws/v1.14.1/website/content/en/{}/getting-started/"
    assert asked == [
        docs.format("v1.14") + "getting-started-with-karpenter/cloudformation.yaml",
        docs.format("preview") + "getting-started-with-karpenter/cloudformation.yaml",
    ]
    assert (artifacts.template, artifacts.template_source) == ("Resources: {}\n", asked[1])
    assert sorted(p.name for p in artifacts.charts.iterdir()) == ["karpenter", "karpenter-crd"]


def test_a_cluster_on_the_imported_previous_release_moves_to_the_current_one_as_a_reviewed_transition(
    imports, karpenter_1_13, default, tmp_path
):
    """Issue 34, offline end to end: 1.13.1 imported into a scratch copy (the same files as the committed ones); a
    cluster synthesized on it passes 1.13.1's CRD schema, CEL rules and chart; accepted as the baseline; moving it to
    1.14.1 is reviewed step by step in the deploy's order, and moving back is a downgrade that blocks, saying what it
    loses."""
    from pathlib import Path as P

    from tests.cfn import controller_values, kubernetes_objects
    from tooling import review as rv
    from tooling.cel_rules import evaluate
    from tooling.kubernetes_schemas import object_violations
    from tooling.releases.chart_render import unknown_values

    imported = imports["1.13.1"]
    release = layout("1.13.1")["release"]
    assert (imported.root / release).read_bytes() == (ROOT / release).read_bytes()
    # synthesized on 1.13.1: its objects and chart values against 1.13.1's own CRDs, rules and chart
    assert karpenter_1_13.config.karpenter_version == "1.13.1"
    objects = [o for o in kubernetes_objects(karpenter_1_13.template).values() if o["apiVersion"].startswith("karp")]
    assert sorted(o["kind"] for o in objects) == ["EC2NodeClass", "NodePool"]
    for obj in objects:
        obj = {k: v for k, v in obj.items() if k != "_logicalId"}
        assert object_violations(obj, "1.13.1", "1.36") == [] and evaluate(obj, "1.13.1").violations == []
    assert unknown_values(controller_values(karpenter_1_13.template), "1.13.1") == []
    # accepted, then moved to 1.14.1
    rv.accept(P(karpenter_1_13.app.outdir), tmp_path / rv.BASELINE)
    accepted = rv.baseline_templates(rv.BASELINE, root=tmp_path)
    text, blocking, failing = rv.render(rv.review(accepted, rv.synthesized_templates(P(default.app.outdir))), {})
    assert (blocking, failing) == ([], [])
    steps = [
        "- Karpenter 1.13.1 → 1.14.1, step 1 of 2: the `karpenter-crd` chart first (the controller chart waits for it)",
        "- Helm release `karpenter-crd` is upgraded 1.13.1 → 1.14.1 (helm upgrade)",
        "- CRDs: `capacitybuffers.autoscaling.x-k8s.io`: CRD added: CapacityBuffer (autoscaling.x-k8s.io/v1beta1; 15 "
        "fields, 2 CEL rules); the app writes no object of it",
        "- CRDs: NodePool `spec.disruption.consolidationPolicy`: enum + `Balanced` (setting "
        "`nodePools[].consolidationPolicy` lists `Balanced`; the synth takes it where the chosen release's CRD does) — setting `nodePools[].consolidationPolicy`; the "
        "app writes it",
        "- Karpenter 1.13.1 → 1.14.1, step 2 of 2: the `karpenter` chart",
        "- Helm release `karpenter` is upgraded 1.13.1 → 1.14.1 (helm upgrade)",
        "- chart defaults: no change",
        "- feature gate: `capacityBuffer`: added, default false — setting `controller.featureGates` lists it (the "
        "app's table: default false; the synth takes it where the chosen release has it)",
        "- the Karpenter controller pods restart one at a time (PodDisruptionBudget maxUnavailable 1); provisioning "
        "pauses during the leader handover",
    ]
    lines = text.splitlines()
    start = lines.index(steps[0])
    assert lines[start : start + len(steps)] == steps
    # and back: a downgrade, blocked until acknowledged, saying what Helm deletes and what stays stored
    back = rv.review(rv.synthesized_templates(P(default.app.outdir)), accepted)
    text, blocking, failing = rv.render(back, {})
    assert (blocking, failing) == (["eks-karpenter/KarpenterReleaseCrdChart14B91BFB"], [])
    assert (
        "- `KarpenterReleaseCrdChart14B91BFB` (updated): a Karpenter downgrade 1.14.1 → 1.13.1: Helm deletes what the "
        "1.13.1 chart does not have: the capacitybuffers.autoscaling.x-k8s.io CRD and every object of it in the "
        "cluster; every CRD keeps its storage version"
    ) in text  # (no stored object of the default configuration holds what 1.13.1 does not allow)
    assert (
        "every CRD keeps its storage version (ec2nodeclasses v1, nodeclaims v1, nodeoverlays v1alpha1, nodepools v1)"
        in text
    )
    assert "- Helm release `karpenter-crd` is downgraded 1.14.1 → 1.13.1 (helm upgrade)" in text
    _, blocking, _ = rv.render(back, {"eks-karpenter/KarpenterReleaseCrdChart14B91BFB": "moving back on purpose"})
    assert blocking == []


def test_a_stored_object_a_new_crd_rule_refuses_is_named_in_the_upgrade():
    """The CRD chart's step names each stored Karpenter object a rule of the new release refuses: the API server keeps
    it, but its next update (this deploy's kubectl apply, or Karpenter's own) fails."""
    from tests.cfn import node_pool
    from tooling.review.upgrade import crd_step

    stored = node_pool("old", ("karpenter.sh/nodepool", "x"))
    step = crd_step("1.13.1", "1.14.1", [stored])
    refused = [e for e in step.effects if e.startswith("a stored object the 1.14.1 CRDs refuse")]
    assert len(refused) == 1 and refused[0].startswith(
        "a stored object the 1.14.1 CRDs refuse (its next update fails): NodePool/old: spec.template.spec.requirements"
    ), refused
    assert (step.downgrade, step.fails) == (None, None)
    # back to 1.13.1 with a pool stored as Balanced: the downgrade says it stays stored where 1.13.1 does not expect it
    balanced = node_pool("old", ("karpenter.sh/nodepool", "x"), disruption={"consolidationPolicy": "Balanced"})
    back = crd_step("1.14.1", "1.13.1", [balanced])
    assert back.fails is None and back.downgrade is not None
    assert (
        "what 1.13.1's CRDs do not allow stays stored, where its controller does not expect it (NodePool 'old' sets "
        "spec.disruption.consolidationPolicy = 'Balanced': Karpenter 1.13.1 (karpenterVersion) does not allow it "
        "(allowed: WhenEmpty, WhenEmptyOrUnderutilized); 1.14.1 allows it)"
    ) in back.downgrade


def test_a_release_whose_changes_need_a_decision_is_not_imported(tmp_path, capsys):
    """The release report runs before anything moves in: a change the app cannot take as it is (here a chart value
    the app writes, gone from the new release's values.yaml) stops the import with the decision, nothing written."""
    source = kept_artifacts("1.14.1", tmp_path)
    for chart in import_base.CHARTS:
        meta = source / "charts" / chart / "Chart.yaml"
        meta.write_text(meta.read_text().replace("1.14.1", "1.14.2"))
    values = source / "charts" / "karpenter" / "values.yaml"
    lines = values.read_text().splitlines(True)
    values.write_text("".join(line for line in lines if not line.startswith("priorityClassName:")))
    root = scratch_root(tmp_path, "1.13.1")  # holds 1.14.1's charts and templates: the base of 1.14.2
    before = tree(root)
    assert karpenter_import.main(["1.14.2", "--from", str(source), "--root", str(root)]) == 1
    out, err = capsys.readouterr()
    assert "## Decisions (1)\n\n- chart value priorityClassName: removed in 1.14.2" in out
    assert err.startswith(
        "karpenter-import: Karpenter 1.14.1 -> 1.14.2 needs a decision before the import: chart value "
        "priorityClassName: removed in "
        "1.14.2"
    )
    assert err.rstrip().endswith("; nothing was written") and err.count("\n") == 1
    assert tree(root) == before


@pytest.mark.parametrize(
    ("crd", "problem"),
    [
        ({"spec": "x"}, "a CustomResourceDefinition without spec.group"),
        ({"spec": {"group": "g"}}, "a CustomResourceDefinition without spec.names.kind"),
        (
            {"spec": {"group": "g", "names": {"kind": "K"}, "versions": "v1"}},
            "serves 0 versions (spec.versions[].served); the mirrors read exactly one",
        ),
        (
            {
                "spec": {
                    "group": "g",
                    "names": {"kind": "K"},
                    "versions": [{"name": "v1", "served": True, "schema": []}],
                }
            },
            "version v1: schema.openAPIV3Schema.properties.spec is not a mapping",
        ),
        (
            {
                "spec": {
                    "group": "g",
                    "names": {"kind": "K"},
                    "versions": [
                        {"name": "v1", "served": True, "schema": {"openAPIV3Schema": {"properties": {"spec": {}}}}}
                    ],
                }
            },
            None,
        ),
    ],
)
def test_a_crd_the_mirrors_cannot_read_is_named(crd, problem):
    from tooling.releases.import_write import crd_shape_problem

    assert crd_shape_problem(crd) == problem
