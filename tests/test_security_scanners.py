"""checkov and cfn-lint as `make scan` runs them (tooling/scans/scan.py): each checkov finding skipped with a reason in
one reviewed place (karpenter_stack/checkov_skips.yaml), no stale or vague skip, cfn-lint's expected refusal;
cdk-nag's and checkov's results as SARIF for code scanning. The scanners' real runs are `make scan`'s; here, the
verdicts on findings as the scanners report them."""

from __future__ import annotations

import json
import re

from tests.cfn import each
from tooling.scans.scan import skip_problems
from tooling.scans.security_report import CheckovFinding, checkov_results, checkov_skips, sarif, skip_reason

QUEUE = "AWS::SQS::Queue.KarpenterInterruptionQueue"


def _findings_every_skip_uses() -> list[CheckovFinding]:
    """One finding per skip, on a resource the skip names (a logical id its pattern accepts)."""
    out = []
    for skip in checkov_skips():
        pattern = skip["resources"][0]
        resource = pattern.replace("\\.", ".").replace("..+", ".Handler").replace("[0-9A-F]{8}", "0123ABCD")
        assert re.fullmatch(pattern, resource), (pattern, resource)
        out.append(CheckovFinding(skip["check"], "a check", "t.template.json", resource, 3))
    return out


def test_the_skips_are_narrow_and_explained():
    skips = checkov_skips()
    assert skip_problems(_findings_every_skip_uses(), skips) == []
    # what is skipped, by check: CDK's and the safety net's custom-resource handlers and their logs,
    # the interruption queue's SQS-managed encryption, CDK's cluster creation role, the delivery pipeline's
    # replication bucket, the node volumes' key
    assert {s["check"] for s in skips} == {
        "CKV_AWS_18",
        "CKV_AWS_21",
        "CKV_AWS_111",
        "CKV_AWS_115",
        "CKV_AWS_116",
        "CKV_AWS_117",
        "CKV_AWS_173",
        "CKV_AWS_158",
        "CKV_AWS_27",
        "CKV_AWS_109",
        "CKV_AWS_33",  # the node volumes' key: its service-linked roles by aws:PrincipalArn (volume_key.py)
    }
    (queue,) = [s for s in skips if s["check"] == "CKV_AWS_27"]
    assert queue["resources"] == ["AWS::SQS::Queue\\.KarpenterInterruptionQueue"]


def test_the_scan_fails_on_an_unexplained_finding_and_on_a_stale_or_vague_skip():
    skips = checkov_skips()
    used = _findings_every_skip_uses()
    new = CheckovFinding("CKV_AWS_999", "new rule", "t.template.json", "AWS::Lambda::Function.X", 1)
    assert skip_problems([*used, new], skips) == [
        "t.template.json: CKV_AWS_999 (new rule) on AWS::Lambda::Function.X: not skipped in "
        "karpenter_stack/checkov_skips.yaml"
    ]
    without_queue = [f for f in used if f.check != "CKV_AWS_27"]
    assert skip_problems(without_queue, skips) == ["checkov skip CKV_AWS_27: skips nothing any more; remove it"]
    vague = [{"check": "CKV_AWS_27", "reason": "Encrypted enough", "resources": ["KarpenterInterruptionQueue"]}]
    assert skip_problems([CheckovFinding("CKV_AWS_27", "SQS", "t", QUEUE, 1)], vague) == [
        "t: CKV_AWS_27 (SQS) on AWS::SQS::Queue.KarpenterInterruptionQueue: not skipped in "
        "karpenter_stack/checkov_skips.yaml",
        "checkov skip CKV_AWS_27: skips nothing any more; remove it",
        "checkov skip CKV_AWS_27: its reason must say why in at least 150 characters",
        "checkov skip CKV_AWS_27: every resource must name its type (AWS::Service::Type\\.Id)",
    ]


def test_a_finding_no_skip_names_is_unexplained():
    skips = checkov_skips()
    assert skip_reason(CheckovFinding("CKV_AWS_999", "new rule", "t.json", "AWS::Lambda::Function.X", 1), skips) is None
    # a listed check on a resource type its skip does not name
    assert skip_reason(CheckovFinding("CKV_AWS_27", "SQS", "t.json", "AWS::SQS::Queue.OtherQueue", 1), skips) is None
    assert skip_reason(CheckovFinding("CKV_AWS_27", "SQS", "t.json", QUEUE, 1), skips).startswith(
        "The interruption queue is encrypted with SQS-managed"
    )


def test_sarif_keeps_skipped_and_acknowledged_findings_as_suppressed_results():
    findings = [
        CheckovFinding(f.check, f.name, "/tmp/x/eks-karpenter.template.json", f.resource, f.line)
        for f in _findings_every_skip_uses()
    ]
    results = checkov_results(findings)
    log = sarif("checkov", "3.3.30", results)
    assert (log["version"], log["$schema"]) == ("2.1.0", "https://json.schemastore.org/sarif-2.1.0.json")
    (run,) = log["runs"]
    assert run["tool"]["driver"]["name"] == "checkov" and len(run["results"]) == len(findings)
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} == {r["ruleId"] for r in run["results"]}
    for result in each(run["results"]):
        (location,) = result["locations"]
        uri = location["physicalLocation"]["artifactLocation"]["uri"]
        assert re.fullmatch(r"(cdk\.out|templates)/[\w.-]+\.(template\.json|yaml)", uri), uri
        assert location["physicalLocation"]["region"]["startLine"] >= 1
        (suppression,) = result["suppressions"]
        assert suppression["kind"] == "external" and len(suppression["justification"]) >= 150
    # an open finding is an error without suppression
    (open_result,) = sarif(
        "cdk-nag",
        "3.0.2",
        [{"rule": "AwsSolutions-X1", "message": "m", "uri": "cdk.out/a.json", "line": 0, "reason": None}],
    )["runs"][0]["results"]
    assert open_result["level"] == "error" and "suppressions" not in open_result
    assert open_result["locations"][0]["physicalLocation"]["region"]["startLine"] == 1
    json.dumps(log)  # serializable as written


def test_findings_are_kept_per_template_content_and_scanner_version(tmp_path):
    """`make scan` scans only what it has not scanned before (tooling/scans/scan.py's FindingsCache): a template of new
    content, or any template after a new scanner version or settings, is scanned; the rest is read back."""
    from tooling.scans.scan import FindingsCache, checkov_findings

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text('{"Resources": {}}')
    b.write_text('{"Resources": {"Q": {}}}')
    scanned: list[list[str]] = []

    def scan(paths):
        scanned.append([p.name for p in paths])
        return {p: [f":1:1:E3001:{p.name}"] for p in paths}

    cache = FindingsCache([b"cfn-lint", b"1.0"], root=tmp_path / "cache")
    assert cache.findings([a, b], scan) == {a: [":1:1:E3001:a.json"], b: [":1:1:E3001:b.json"]}
    assert cache.findings([a, b], scan) == {a: [":1:1:E3001:a.json"], b: [":1:1:E3001:b.json"]}
    b.write_text('{"Resources": {"R": {}}}')
    cache.findings([a, b], scan)
    FindingsCache([b"cfn-lint", b"1.1"], root=tmp_path / "cache").findings([a, b], scan)
    assert scanned == [["a.json", "b.json"], ["b.json"], ["a.json", "b.json"]]
    # checkov's findings come back under every name a template has (a snapshot and your synth of it)
    twin = tmp_path / "twin.json"
    twin.write_text('{"Resources":  {"R": {}}}')  # the same template, written differently
    checkov = FindingsCache([b"checkov"], root=tmp_path / "cache")
    checkov.put(b, [{"check": "CKV_AWS_1", "name": "n", "resource": "AWS::SQS::Queue.R", "line": 1}])
    assert checkov_findings([b, twin], checkov) == [
        CheckovFinding("CKV_AWS_1", "n", str(b), "AWS::SQS::Queue.R", 1),
        CheckovFinding("CKV_AWS_1", "n", str(twin), "AWS::SQS::Queue.R", 1),
    ]


def test_the_scan_and_the_security_report_say_what_their_checkov_counts_count():
    """Found by a newcomer trial: `make test` said "168 findings", `make security-report` "51 findings", for the same
    scanner. The scan counts the product's test snapshots too; its line splits the count, and the part that is your
    configuration's synth and templates/ is the report's, named the same way in both."""
    from pathlib import Path

    from tooling.scans.scan import checkov_summary, lint_summary
    from tooling.scans.security_report import ROOT, checkov_section

    snapshot = ROOT / "tests" / "__snapshots__" / "test_snapshots" / "a.json"
    yours = [Path(".gate/cdk.out/eks-karpenter.template.json"), ROOT / "templates" / "karpenter-1.14.1.yaml"]
    found = [
        CheckovFinding("CKV_AWS_116", "DLQ", str(path), "AWS::Lambda::Function.Handler", 5)
        for path in [snapshot, snapshot, *yours, yours[0]]
    ]
    scan_line = checkov_summary([snapshot, *yours], found, 0)
    assert scan_line == (
        "checkov: 5 findings in 3 templates: 2 in the product's test snapshots (tests/__snapshots__/, 1 templates), "
        "3 in your configuration's synth and templates/ (2 templates; `make security-report` lists these); 0 problems"
    )
    report_line = checkov_section([f for f in found if Path(f.file) != snapshot], len(yours))[0].splitlines()[0]
    assert report_line == (
        "checkov (your configuration's synth and templates/: 2 templates): 3 findings, 3 skipped with a reason, "
        "0 unexplained"
    )
    assert lint_summary([snapshot, *yours], 0) == (
        "cfn-lint: 0 findings in 3 templates: 1 of the product's test snapshots (tests/__snapshots__/), 2 of your "
        "configuration's synth and templates/ (`make security-report` lints these)"
    )
