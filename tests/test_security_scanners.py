"""checkov over every synthesized template: each finding fixed or skipped with a reason in one reviewed
place (karpenter_stack/checkov_skips.yaml), no stale skip; cdk-nag's and checkov's results as SARIF
for code scanning."""

from __future__ import annotations

import json
import re
from collections import Counter

from tests.cfn import each
from tooling.security_report import CheckovFinding, checkov_results, checkov_skips, sarif, skip_reason


def test_every_checkov_finding_is_skipped_with_a_reason(checkov_findings):
    skips = checkov_skips()
    unexplained = [f for f in each(checkov_findings) if skip_reason(f, skips) is None]
    assert unexplained == []
    # what is skipped, by check: CDK's and the safety net's custom-resource handlers and their logs,
    # the interruption queue's SQS-managed encryption, CDK's cluster creation role, the delivery pipeline's
    # replication bucket
    assert set(Counter(f.check for f in checkov_findings)) == {
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
    }


def test_every_skip_is_used_narrow_and_explained(checkov_findings):
    for skip in each(checkov_skips()):
        used = [f for f in checkov_findings if skip_reason(f, [skip]) is not None]
        assert used, f"{skip['check']}: skips nothing any more; remove it"
        assert len(skip["reason"]) >= 150 and skip["reason"].endswith("."), skip["check"]
        # resource types named: no skip covers a whole check on every resource type
        assert all(re.match(r"AWS::[A-Za-z0-9]+::[A-Za-z0-9]+\\\.", r) for r in skip["resources"]), skip
    # the two narrowest ones name their resources
    (queue,) = [s for s in checkov_skips() if s["check"] == "CKV_AWS_27"]
    assert queue["resources"] == ["AWS::SQS::Queue\\.KarpenterInterruptionQueue"]


def test_a_finding_no_skip_names_is_unexplained():
    skips = checkov_skips()
    assert skip_reason(CheckovFinding("CKV_AWS_999", "new rule", "t.json", "AWS::Lambda::Function.X", 1), skips) is None
    # a listed check on a resource type its skip does not name
    assert skip_reason(CheckovFinding("CKV_AWS_27", "SQS", "t.json", "AWS::SQS::Queue.OtherQueue", 1), skips) is None
    assert skip_reason(
        CheckovFinding("CKV_AWS_27", "SQS", "t.json", "AWS::SQS::Queue.KarpenterInterruptionQueue", 1), skips
    ).startswith("The interruption queue is encrypted with SQS-managed")


def test_sarif_keeps_skipped_and_acknowledged_findings_as_suppressed_results(checkov_findings):
    results = checkov_results(checkov_findings)
    log = sarif("checkov", "3.3.30", results)
    assert (log["version"], log["$schema"]) == ("2.1.0", "https://json.schemastore.org/sarif-2.1.0.json")
    (run,) = log["runs"]
    assert run["tool"]["driver"]["name"] == "checkov" and len(run["results"]) == len(checkov_findings)
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
