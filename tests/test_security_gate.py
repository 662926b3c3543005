"""The security gate: cdk-nag on every synth, narrow explained acknowledgments, hardened defaults."""

from __future__ import annotations

import json
import re
from pathlib import Path

import aws_cdk as cdk
import pytest

from karpenter_stack.application import build, new_app
from karpenter_stack.context_sources import working_context
from karpenter_stack.security import acknowledgments, covers, findings, is_cdk_provider_stack
from tests import commands
from tests.cfn import assemblies_in_tmp, each, kubernetes_objects, only, render, resources
from tests.conftest import ROOT, synth
from tooling import workspace
from tooling.configurations import ALTERNATIVE, EXISTING, POD_IDENTITY, PRODUCT_CONTEXT

NIST = {"additionalNagPacks": ["NIST80053R5"]}
PUBLIC = {"endpointAccess": "public-and-private", "publicAccessCidrs": ["203.0.113.0/24", "198.51.100.7/32"]}

# Configurations whose acknowledgments are checked finding by finding.
GATED = {
    "default": {},
    "alternative": ALTERNATIVE,
    "nist": NIST,
    "nist-alternative-public": {**ALTERNATIVE, **NIST, **PUBLIC},
    # the operability switches, alarms without a topic (their NIST alarm-action finding is acknowledged); customer-
    # managed keys of node volumes: the app's key and its policy, the controller's grants on a kept key
    "nist-operability": {
        **NIST,
        "demoWorkload": True,
        "serviceMonitor": True,
        "interruptionQueueAlarms": True,
        "nodeClasses": [
            {"name": "default", "volumeKmsKey": "create"},
            {
                "name": "kept",
                "volumeKmsKey": "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
            },
        ],
    },
    # an imported cluster: CDK's kubectl provider for it, in the VPC (private endpoint) and outside it
    "existing-nist": {**EXISTING, **NIST},
    "existing-public-endpoint": {
        **EXISTING,
        "existingCluster": {**EXISTING["existingCluster"], "privateEndpoint": False},
    },
    # the controller on EKS Pod Identity: its association and agent add-on
    "pod-identity-nist": {**POD_IDENTITY, **NIST},
    # Windows node classes: the cluster role's extra managed policy
    "windows-nist": {**json.loads((ROOT / "examples" / "windows.json").read_text()), **NIST},
}


@pytest.fixture(scope="module", params=sorted(GATED))
def gated(request):
    # one build: the raw findings are read before the acknowledgments are registered, then the
    # synthesis runs the packs and fails on any open finding
    synthesized = synth(raw_findings=True, **GATED[request.param])
    return request.param, synthesized, synthesized.raw_findings


def test_aws_solutions_runs_on_every_synth_and_fails_it_on_open_findings():
    app = new_app(context=dict(PRODUCT_CONTEXT))
    (stack,) = build(app, acknowledge=False)
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        cdk.assertions.Template.from_stack(stack)


def test_every_finding_is_fixed_or_acknowledged(gated):
    name, synthesized, raw = gated
    packs = ["AwsSolutions", *synthesized.config.additional_nag_packs]
    assert findings(synthesized.app, packs) == [], name
    assert raw, "the raw run must find what the acknowledgments cover"


def test_acknowledgments_are_granular_narrow_explained_and_used(gated):
    name, synthesized, raw = gated
    for ack in each(acknowledgments(synthesized.app)):
        where = f"{name}: {ack.rule} at {ack.path}"
        assert "/" in ack.path, f"{where}: acknowledgments never go on the app or the main stack"
        assert len(ack.reason) >= 60 and ack.reason.rstrip().endswith((".", ")")), f"{where}: reason too thin"
        if re.match(r"AwsSolutions-IAM[45]$", ack.rule):
            pytest.fail(f"{where}: IAM4/IAM5 must be acknowledged by their granular id")
        if ack.on_stack:
            stack = synthesized.app.node.find_child(ack.path.split("/")[0]).node.find_child(ack.path.split("/")[1])
            assert is_cdk_provider_stack(stack), f"{where}: only CDK's provider stacks take stack-wide acknowledgments"
        assert any(covers(ack, f) for f in raw), f"{where}: acknowledges nothing (stale)"


def test_public_endpoint_finding_is_acknowledged_only_when_configured(default):
    public = synth(**{**ALTERNATIVE, **NIST, **PUBLIC})
    eks1 = [a for a in acknowledgments(public.app) if a.rule == "AwsSolutions-EKS1"]
    assert [a.path for a in eks1] == ["alt-cluster-1/Cluster"]
    assert "endpointAccess=private" in eks1[0].reason and "203.0.113.0/24, 198.51.100.7/32" in eks1[0].reason
    assert not [a for a in acknowledgments(default.app) if a.rule == "AwsSolutions-EKS1"]


# The pack comes from ARGS over a CONTEXT_FILE that sets none: ARGS win over the file, as the gate and the
# review layer them (karpenter_stack.context_sources.working_context); the file's clusterName applies.
HIPAA_SYNTH = commands.command(
    "hipaa-synth",
    [
        "make",
        "synth",
        "CONTEXT_FILE=tests/fixtures/packs-in-a-context-file.json",
        """ARGS=-c 'additionalNagPacks=["HIPAASecurity"]'""",
    ],
    env=workspace.clean_env(),
    in_project=True,
)


@pytest.mark.cli
def test_other_packs_can_be_enabled_and_their_findings_fail_the_cli_synth():
    result = commands.result(HIPAA_SYNTH)
    assert result.returncode == 2  # make's exit code for a failed recipe
    assert "Acknowledge with 'HIPAA.Security::HIPAA.Security-CloudWatchLogGroupEncrypted'" in result.stderr
    assert "\n   from-the-file/" in result.stderr  # the findings' resources are in the file's cluster
    assert "Traceback" not in result.stderr
    layered = working_context(
        result.outdir / "tests/fixtures/packs-in-a-context-file.json",
        ["-c", 'additionalNagPacks=["HIPAASecurity"]'],
        root=result.outdir,
    )
    assert (layered["clusterName"], layered["additionalNagPacks"]) == ("from-the-file", '["HIPAASecurity"]')


def test_security_report_command(capsys, monkeypatch, tmp_path):
    """The report's own parsing, tables, SARIF and verdict; its cfn-lint and checkov runs are stood in for with
    what they report (the scanners' real runs over the same templates are `make scan`'s)."""
    from tooling.scans import security_report
    from tooling.scans.security_report import CheckovFinding, main

    linted: list[Path] = []

    def lint_each(files):  # cfn-lint finds nothing
        files = list(files)
        linted.extend(files)
        return {str(f): [] for f in files}

    monkeypatch.setattr(security_report, "lint_each", lint_each)
    scanned: list[CheckovFinding] = []

    class Checkov:  # one skipped finding per template: a custom-resource handler without a DLQ
        def __init__(self, files):
            self.files = list(files)

        def findings(self):
            found = [
                CheckovFinding("CKV_AWS_116", "DLQ", str(f), "AWS::Lambda::Function.Handler", 5) for f in self.files
            ]
            scanned.extend(found)
            return found

    monkeypatch.setattr(security_report, "CheckovRun", Checkov)
    before = assemblies_in_tmp()
    assert main(["--sarif-dir", str(tmp_path)]) == 0
    assert assemblies_in_tmp() == before  # its cloud assembly is removed, not left in /tmp
    ok = capsys.readouterr().out
    assert (
        f"checkov (your configuration's synth and templates/: 6 templates): {len(scanned)} findings, "
        f"{len(scanned)} skipped with a reason, 0 unexplained"
    ) in ok  # what it counts, as `make scan` names this part of its own count (tests/test_security_scanners.py)
    # the four templates of the default configuration and templates/'s two (1.13.1 and 1.14.1, both imported)
    assert sorted(p.name for p in linted)[-2:] == ["karpenter-1.13.1.yaml", "karpenter-1.14.1.yaml"]
    assert len(linted) == len(scanned) == 6
    logs = {p.name: json.loads(p.read_text()) for p in sorted(tmp_path.glob("*.sarif"))}
    assert sorted(logs) == ["cdk-nag.sarif", "checkov.sarif"]
    assert [len(log["runs"][0]["results"]) for log in logs.values()] == [61, 6]
    assert all("suppressions" in r for log in logs.values() for r in log["runs"][0]["results"])
    assert "cdk-nag (AwsSolutions): 61 findings before acknowledgments, 61 acknowledged, 0 unacknowledged" in ok
    assert "\nAcknowledged beyond the product's bounds: nothing\n" in ok
    assert re.search(
        r"AwsSolutions-SQS3 +eks-karpenter/Default/Karpenter/Template/KarpenterInterruptionQueue +acknowledged", ok
    )
    assert "cfn-lint (6 templates, rules ignored in .cfnlintrc): 0 errors, 0 other findings" in ok
    assert ok.rstrip().endswith("Security gate: passed")
    # The lint half is proven above; the failing case is about cdk-nag (saves a 3.5 s cfn-lint run).
    monkeypatch.setattr(security_report, "lint_section", lambda files: ("cfn-lint: not run", 0))
    assert main(["-c", 'additionalNagPacks=["HIPAASecurity"]']) == 1
    failing = capsys.readouterr().out
    assert re.search(r"HIPAA\.Security-CloudWatchLogGroupEncrypted +\S+ +UNACKNOWLEDGED", failing)
    assert failing.rstrip().endswith("Security gate: FAILED")


# --- fixed rather than acknowledged ------------------------------------------------------------


def _cluster_config(synthesized) -> dict:
    return only(resources(synthesized.template, "Custom::AWSCDK-EKS-Cluster"))[1]["Properties"]["Config"]


def test_api_endpoint_is_private_by_default(default):
    vpc_config = _cluster_config(default)["resourcesVpcConfig"]
    assert (vpc_config["endpointPrivateAccess"], vpc_config["endpointPublicAccess"]) == (True, False)
    assert "publicAccessCidrs" not in vpc_config


def test_public_endpoint_is_restricted_to_configured_cidrs():
    vpc_config = _cluster_config(synth(**PUBLIC))["resourcesVpcConfig"]
    assert (vpc_config["endpointPrivateAccess"], vpc_config["endpointPublicAccess"]) == (True, True)
    assert vpc_config["publicAccessCidrs"] == ["203.0.113.0/24", "198.51.100.7/32"]


def test_secrets_are_envelope_encrypted_with_a_rotated_customer_key(default):
    keys = resources(default.template, "AWS::KMS::Key")
    secrets_id = next(k for k in keys if k.startswith("SecretsKey"))
    assert keys[secrets_id]["Properties"]["EnableKeyRotation"] is True
    assert _cluster_config(default)["encryptionConfig"] == [
        {"provider": {"keyArn": {"Fn::GetAtt": [secrets_id, "Arn"]}}, "resources": ["secrets"]}
    ]


def test_vpc_flow_logs_go_to_an_encrypted_log_group(default):
    _, flow_log = only(resources(default.template, "AWS::EC2::FlowLog"))
    vpc_id = only(resources(default.template, "AWS::EC2::VPC"))[0]
    props = flow_log["Properties"]
    assert (props["ResourceType"], props["ResourceId"], props["TrafficType"]) == ("VPC", {"Ref": vpc_id}, "ALL")
    group_id = props["LogGroupName"]["Ref"]
    group = default.json["Resources"][group_id]["Properties"]
    assert group["RetentionInDays"] == 90
    key_id = group["KmsKeyId"]["Fn::GetAtt"][0]
    assert default.json["Resources"][key_id]["Properties"]["EnableKeyRotation"] is True


def test_public_subnets_never_assign_public_ips(default):
    public = [
        r
        for r in resources(default.template, "AWS::EC2::Subnet").values()
        if {"Key": "aws-cdk:subnet-type", "Value": "Public"} in r["Properties"]["Tags"]
    ]
    assert len(public) == 2
    assert all(r["Properties"]["MapPublicIpOnLaunch"] is False for r in public)


def test_karpenter_nodes_are_hardened(default, alternative):
    for synthesized in (default, alternative):
        for key, obj in each(kubernetes_objects(synthesized.template).items()):
            if obj["kind"] != "EC2NodeClass":
                continue
            spec = obj["spec"]
            assert spec["metadataOptions"]["httpTokens"] == "required", key
            assert spec["metadataOptions"]["httpPutResponseHopLimit"] == 1, key
            assert all(m["ebs"]["encrypted"] is True for m in spec["blockDeviceMappings"]), key
            # no SSH key: EC2NodeClass has no key-pair field, and no user data is injected
            assert "userData" not in spec, key
    # nodes land only in subnets carrying the discovery tag, and only private subnets carry it
    tagged = [
        r
        for r in resources(default.template, "AWS::EC2::Subnet").values()
        if any(t["Key"] == "karpenter.sh/discovery" for t in r["Properties"]["Tags"])
    ]
    assert all({"Key": "aws-cdk:subnet-type", "Value": "Private"} in r["Properties"]["Tags"] for r in tagged)


def test_system_node_group_role_is_trusted_by_ec2_with_the_four_node_policies(alternative):
    _, nodegroup = only(resources(alternative.template, "AWS::EKS::Nodegroup"))
    role_id = nodegroup["Properties"]["NodeRole"]["Fn::GetAtt"][0]
    role = alternative.json["Resources"][role_id]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"] == [
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}}
    ]
    policies = sorted(render(p).rsplit("/", 1)[1] for p in role["ManagedPolicyArns"])
    assert policies == [
        "AmazonEC2ContainerRegistryPullOnly",
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
        "AmazonSSMManagedInstanceCore",
    ]


def test_no_trust_policy_uses_string_like_or_wildcards(default, alternative):
    for synthesized in (default, alternative):
        for role_id, role in each(resources(synthesized.template, "AWS::IAM::Role").items()):
            for statement in each(role["Properties"]["AssumeRolePolicyDocument"]["Statement"]):
                condition = json.dumps(statement.get("Condition", {}))
                assert "StringLike" not in condition, role_id
                assert statement["Principal"] != "*" and statement["Principal"] != {"AWS": "*"}, role_id


def test_docs_list_every_acknowledgment():
    from tooling.generate_docs import acknowledgments_markdown, documented_acknowledgments

    table = acknowledgments_markdown(lambda overrides: synth(**overrides).app)  # synthesized once per session
    assert documented_acknowledgments() == table, "run `make docs`"


def test_every_pack_the_app_offers_has_its_finding_prefix_for_construct_acknowledgments():
    from constructs_lib.karpenter.nag import PACK_PREFIXES
    from karpenter_stack.security import PACKS

    assert set(PACKS) == set(PACK_PREFIXES)
    for name, pack in PACKS.items():  # a pack's findings carry its prefix: AwsSolutions-EKS1, NIST.800.53.R5-...
        assert PACK_PREFIXES[name].rstrip("-") == pack().read_pack_name
