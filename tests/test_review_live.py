"""The review against what is deployed (`make review LIVE=1`, tooling/review/live.py): CloudFormation's templates of
the app's stacks and their nested stacks, read through botocore's Stubber (no AWS account; moto's CloudFormation
needs its extra), reviewed instead of the accepted baseline, with the synth guard's refusals run against them."""

from __future__ import annotations

import copy
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import NoCredentialsError
from botocore.stub import Stubber

from tooling import review as rv
from tooling.review import cli, live

ACCOUNT, REGION = "123456789012", "eu-west-1"
STACK_ID = f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/eks-karpenter/0a1b2c3d-0000-4000-8000-000000000000"
NOW = datetime(2026, 11, 1, tzinfo=UTC)
KARPENTER = "ekskarpenterKarpenterBE946E71.nested.template"


def _client(service: str) -> Any:
    return boto3.client(service, region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")


def _nested_id(logical_id: str) -> str:
    return f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/eks-karpenter-{logical_id[:20]}-X/1"


def _deployed(cfn: Stubber, templates: dict[str, dict[str, Any]], name: str, stack_id: str, names: dict) -> None:
    """Stub GetTemplate and ListStackResources of one stack and, depth first, its nested stacks."""
    cfn.add_response(
        "get_template",
        {"TemplateBody": json.dumps(templates[name])},
        {"StackName": stack_id, "TemplateStage": "Original"},
    )
    nested = {k: v for k, v in templates[name]["Resources"].items() if v["Type"] == "AWS::CloudFormation::Stack"}
    summaries = [
        {
            "LogicalResourceId": logical_id,
            "PhysicalResourceId": _nested_id(logical_id),
            "ResourceType": "AWS::CloudFormation::Stack",
            "LastUpdatedTimestamp": NOW,
            "ResourceStatus": "UPDATE_COMPLETE",
        }
        for logical_id in nested
    ]
    cfn.add_response("list_stack_resources", {"StackResourceSummaries": summaries}, {"StackName": stack_id})
    for logical_id in nested:
        _deployed(cfn, templates, names[logical_id], _nested_id(logical_id), names)


@pytest.fixture
def project(tmp_path, monkeypatch, default):
    """A project with the product's cdk.json whose synth is the `default` fixture's (copied, not synthesized
    again), its baseline that synth accepted, and AWS clients that tests stub (``aws``)."""
    from karpenter_stack import context_sources
    from tooling import workspace

    root = tmp_path / "project"
    root.mkdir()
    for name in ("cdk.json", "cdk.context.json"):
        (root / name).write_text((workspace.PRODUCT / name).read_text())
    monkeypatch.setattr(context_sources, "project_dir", lambda: root)
    source = Path(default.app.outdir)
    rv.accept(source, root / rv.BASELINE)

    def synthesize(context, outdir):
        for path in [source / "manifest.json", *source.glob("*.template.json"), *source.glob("*.assets.json")]:
            shutil.copyfile(path, Path(outdir) / path.name)
        return None

    monkeypatch.setattr(cli, "synthesize", synthesize)
    sts, cfn = _client("sts"), _client("cloudformation")
    monkeypatch.setattr(
        live, "boto3_clients", lambda service, region, credentials: {"sts": sts, "cloudformation": cfn}[service]
    )
    with Stubber(sts) as sts_stub, Stubber(cfn) as cfn_stub:
        yield {"sts": sts_stub, "cloudformation": cfn_stub, "synth": rv.synthesized_templates(source), "outdir": source}
        cfn_stub.assert_no_pending_responses()


def _caller(aws, account=ACCOUNT):
    aws["sts"].add_response(
        "get_caller_identity", {"Account": account, "Arn": f"arn:aws:iam::{account}:user/u", "UserId": "U"}
    )


def _stack(aws, status="UPDATE_COMPLETE"):
    aws["cloudformation"].add_response(
        "describe_stacks",
        {"Stacks": [{"StackName": "eks-karpenter", "StackId": STACK_ID, "CreationTime": NOW, "StackStatus": status}]},
        {"StackName": "eks-karpenter"},
    )


def test_the_live_review_sees_what_is_deployed_not_the_accepted_baseline(project, capsys):
    """The baseline accepted the synth (1.36, private endpoint): against it, no change. Production still runs 1.35
    with a public endpoint (the run that brought them was rejected before production): deploying the synth over it
    is two kinds of cluster update at once, which aws-cdk's handler refuses -- the review fails and the synth guard
    refuses it, naming the deployed stack."""
    assert rv.main([]) == 0
    assert "No change: every stack deploys as its baseline" in capsys.readouterr().out

    templates = copy.deepcopy(project["synth"])
    (cluster,) = [r for r in templates["eks-karpenter.template"]["Resources"].values() if r["Type"] == rv.CLUSTER]
    cluster["Properties"]["Config"]["version"] = "1.35"
    cluster["Properties"]["Config"]["resourcesVpcConfig"]["endpointPublicAccess"] = True
    cluster["Properties"]["Config"]["resourcesVpcConfig"]["publicAccessCidrs"] = ["203.0.113.0/24"]
    templates[KARPENTER]["Description"] = "the Karpenter nested stack as deployed"
    names = {
        logical_id: live.nested_template(
            "eks-karpenter.template",
            logical_id,
            [project["synth"]["eks-karpenter.template"]],
            live.asset_templates(project["outdir"]),
        )
        for logical_id, r in templates["eks-karpenter.template"]["Resources"].items()
        if r["Type"] == "AWS::CloudFormation::Stack"
    }
    assert sorted(names.values()) == sorted(n for n in templates if n.endswith(".nested.template"))
    _caller(project)
    _stack(project)
    _deployed(project["cloudformation"], templates, "eks-karpenter.template", STACK_ID, names)

    out = Path(project["outdir"]).parent / "live-review.md"
    assert rv.main(["--live", "--region", REGION, "--output", str(out)]) == 1
    text = capsys.readouterr().out
    assert text == out.read_text()
    assert "- eks-karpenter in 123456789012/eu-west-1: UPDATE_COMPLETE, 4 templates (nested included)" in text
    assert "## eks-karpenter > nested Karpenter" in text  # the nested stack's deployed template, under its synth name
    assert "**The deploy would fail** at: eks-karpenter/Cluster9EE0221C." in text
    refused = text.split("**Refused** against the deployed stacks")[1]
    assert "kubernetesVersion" in refused and "the deployed cluster (stack eks-karpenter as deployed)" in refused


def test_a_stack_that_does_not_exist_is_a_first_deploy(project, capsys):
    _caller(project)
    project["cloudformation"].add_client_error(
        "describe_stacks",
        "ValidationError",
        "Stack with id eks-karpenter does not exist",
        400,
        expected_params={"StackName": "eks-karpenter"},
    )
    assert rv.main(["--live", "--region", REGION, "--stack", "eks-karpenter"]) == 0
    text = capsys.readouterr().out
    assert "- eks-karpenter in 123456789012/eu-west-1: does not exist; the deploy creates it (a first deploy)" in text
    assert "## eks-karpenter\n\nnew stack: every resource is created" in text and "Refused" not in text


def test_access_denied_and_no_credentials_are_one_line_and_exit_2(project, capsys, monkeypatch):
    _caller(project)
    project["cloudformation"].add_client_error("describe_stacks", "AccessDenied", "not authorized", 403)
    assert rv.main(["--live", "--region", REGION]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "review --live: access denied to cloudformation:DescribeStacks of eks-karpenter in 123456789012/eu-west-1 "
        "(AccessDenied: not authorized); the live review needs cloudformation:DescribeStacks, "
        "cloudformation:GetTemplate, cloudformation:ListStackResources on the app's stacks"
    )

    class NoCredentials:
        def get_caller_identity(self):
            raise NoCredentialsError()

    monkeypatch.setattr(live, "boto3_clients", lambda *_: NoCredentials())
    assert rv.main(["--live", "--region", REGION]) == 2
    assert capsys.readouterr().err == f"review --live: {live.NO_CREDENTIALS}\n"
    assert rv.main(["--live", "--region", REGION, "--stack", "nope"]) == 2
    assert capsys.readouterr().err == "review --live: no stack nope in the app (its stacks: eks-karpenter)\n"
    # a profile that does not exist (issue 41: 64 lines of traceback before) is one line
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    assert rv.main(["--live"]) == 2
    assert capsys.readouterr().err == (
        "review --live: your AWS configuration: The config profile (no-such-profile) could not be found\n"
    )
    with pytest.raises(SystemExit) as usage:
        rv.main(["--live", "--base", "HEAD"])
    assert (
        usage.value.code == 2
        and "--live compares with the deployed stacks: not with --accept, --base or --adopt (ADOPT)"
        in (capsys.readouterr().err)
    )


def test_stacks_of_other_accounts_are_read_through_their_lookup_role_narrowed_to_reading_them(delivery):
    """The pipeline's environments (examples/pipeline.json): each stack names its account, region and CDK bootstrap
    lookup role; without --lookup-role, credentials of another account are refused (the stack would look absent,
    a first deploy); with it, the role is assumed with a session policy of the three read actions on the stack."""
    outdir = Path(delivery.app.outdir)
    stacks = {s.name: s for s in live.app_stacks(outdir)}
    prod = stacks["eks-karpenter-prod"]
    assert (prod.template, prod.account, prod.region) == ("prodekskarpenterprodEAB9585F.template", ACCOUNT, "us-east-1")
    assert (
        prod.lookup_role == f"arn:${{AWS::Partition}}:iam::{ACCOUNT}:role/cdk-hnb659fds-lookup-role-{ACCOUNT}-us-east-1"
    )
    new = rv.synthesized_templates(outdir)
    assert len(live.stack_templates(prod.template, new, live.asset_templates(outdir))) == 4

    sts = _client("sts")
    with Stubber(sts) as stub:
        stub.add_response(
            "get_caller_identity", {"Account": "111122223333", "Arn": "arn:aws:iam::111122223333:role/b", "UserId": "U"}
        )
        with pytest.raises(
            live.LiveError,
            match="the credentials are for account 111122223333, and stack eks-karpenter-prod is deployed in account 123456789012",
        ):
            live.Connection(None, False, lambda *_: sts).cloudformation(prod)

        stub.add_response(
            "get_caller_identity", {"Account": "111122223333", "Arn": "arn:aws:iam::111122223333:role/b", "UserId": "U"}
        )
        policy = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": list(live.READ_ACTIONS),
                    "Resource": [
                        f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/eks-karpenter-prod/*",
                        f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/eks-karpenter-prod-*/*",
                    ],
                }
            ],
        }
        stub.add_response(
            "assume_role",
            {
                "Credentials": {
                    "AccessKeyId": "AKIAEXAMPLEEXAMPLE01",
                    "SecretAccessKey": "s",
                    "SessionToken": "t",
                    "Expiration": NOW,
                }
            },
            {
                "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/cdk-hnb659fds-lookup-role-{ACCOUNT}-us-east-1",
                "RoleSessionName": "live-review",
                "Policy": json.dumps(policy),
                "DurationSeconds": 900,
            },
        )
        made = []
        clients = lambda service, region, credentials: made.append((service, region, credentials)) or sts  # noqa: E731
        _, where = live.Connection(None, True, clients).cloudformation(prod)
    assert where == f"{ACCOUNT}/us-east-1"
    assert made[-1] == (
        "cloudformation",
        "us-east-1",
        {"aws_access_key_id": "AKIAEXAMPLEEXAMPLE01", "aws_secret_access_key": "s", "aws_session_token": "t"},
    )
    assert live.READ_ACTIONS == (
        "cloudformation:DescribeStacks",
        "cloudformation:GetTemplate",
        "cloudformation:ListStackResources",
    )


def test_the_synth_guard_runs_against_each_environments_deployed_stack(delivery):
    """In the pipeline's app the stage's template file is not named after the stack (the baseline guard reads
    ``baseline/<stack>.template.json``): the live review hands it the deployed template under the stack's name, and
    names the environment."""
    outdir = Path(delivery.app.outdir)
    prod = {s.name: s for s in live.app_stacks(outdir)}["eks-karpenter-prod"]
    template = copy.deepcopy(rv.synthesized_templates(outdir)[prod.template])
    (cluster,) = [r for r in template["Resources"].values() if r["Type"] == rv.CLUSTER]
    config = cluster["Properties"]["Config"]
    minor = int(config["version"].split(".")[1])
    config["version"] = f"1.{minor - 1}"
    config["resourcesVpcConfig"]["endpointPublicAccess"] = not config["resourcesVpcConfig"]["endpointPublicAccess"]
    deployed = [
        live.Deployed(prod, f"{ACCOUNT}/us-east-1", "UPDATE_COMPLETE", {prod.template: template}),
        live.Deployed({s.name: s for s in live.app_stacks(outdir)}["eks-karpenter-dev"], "444455556666/eu-west-1"),
    ]
    (refused,) = live.refusals(delivery.app.node.get_all_context(), {}, deployed)
    assert "the deployed cluster (stack eks-karpenter-prod as deployed)" in refused
    assert refused.startswith(
        'kubernetesVersion "1.35" → "1.36" and endpointAccess "public-and-private" → "private"'
    ) and refused.endswith("(environment prod)")


def test_a_production_cluster_deployed_on_aws_auth_without_a_baseline_is_not_moved_silently(delivery):
    """The production profile keeps a deployed cluster's authentication mode, as far as the baseline tells: with no
    baseline the synth takes a new cluster's API_AND_CONFIG_MAP, and the live review, which sees the deployed stack
    on aws-auth alone, refuses the one-way move it would make and says how to keep it."""
    outdir = Path(delivery.app.outdir)
    prod = {s.name: s for s in live.app_stacks(outdir)}["eks-karpenter-prod"]
    template = copy.deepcopy(rv.synthesized_templates(outdir)[prod.template])
    (cluster,) = [r for r in template["Resources"].values() if r["Type"] == rv.CLUSTER]
    assert cluster["Properties"]["Config"].pop("accessConfig") == {"authenticationMode": "API_AND_CONFIG_MAP"}
    deployed = [live.Deployed(prod, f"{ACCOUNT}/us-east-1", "UPDATE_COMPLETE", {prod.template: template})]
    assert live.refusals(delivery.app.node.get_all_context(), {}, deployed) == [
        'authenticationMode "API_AND_CONFIG_MAP" (the production profile\'s): stack eks-karpenter-prod as deployed is '
        "on unset (CONFIG_MAP), which the profile keeps, but your accepted baseline does not record it, so the synth "
        "took a new cluster's mode and the deploy would move the cluster one way; write authenticationMode null to "
        "keep it, or move it on purpose (docs/operations.md#move-a-cluster-to-access-entries) (environment prod)"
    ]
    cluster["Properties"]["Config"]["accessConfig"] = {"authenticationMode": "API_AND_CONFIG_MAP"}
    assert live.refusals(delivery.app.node.get_all_context(), {}, deployed) == []


def test_aws_region_names_the_region_of_an_environment_agnostic_stack(monkeypatch):
    """The README exports AWS_REGION; botocore reads only AWS_DEFAULT_REGION (found by a newcomer trial)."""
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert live._default_region() == "eu-west-1"
    monkeypatch.delenv("AWS_REGION")
    assert live._default_region() is None
