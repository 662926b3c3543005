"""Delivery to many accounts (`pipeline`): the CDK Pipelines pipeline of examples/pipeline.json, its waves,
its synth step, the security gate over it, bad pipeline settings, and what turning it on does to
environments that were deployed by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.karpenter import yaml_load
from karpenter_stack import pipeline_tools
from karpenter_stack.application import build, new_app
from karpenter_stack.config import ConfigError
from tests.cfn import create_only_properties, each, template_change
from tests.conftest import ROOT, TODAY
from tooling.configurations import PRODUCT_CONTEXT

EXAMPLE: dict[str, Any] = json.loads((ROOT / "examples" / "pipeline.json").read_text())


def _of_type(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_}


def _pipeline(delivery) -> dict[str, Any]:
    ((_, pipeline),) = _of_type(delivery.json, "AWS::CodePipeline::Pipeline").items()
    return pipeline["Properties"]


def _project(delivery, name_part: str) -> dict[str, Any]:
    (project,) = [
        r["Properties"]
        for logical_id, r in _of_type(delivery.json, "AWS::CodeBuild::Project").items()
        if name_part in logical_id
    ]
    return project


def test_the_pipeline_deploys_the_environments_in_waves_from_the_connection(delivery):
    pipeline = _pipeline(delivery)
    assert pipeline["Name"] == "eks-karpenter-delivery" and pipeline["PipelineType"] == "V2"
    stages = {s["Name"]: s["Actions"] for s in pipeline["Stages"]}
    # (CDK Pipelines names a wave of one stage after that stage)
    assert list(stages) == ["Source", "Build", "UpdatePipeline", "Assets", "dev", "prod"]
    (source,) = stages["Source"]
    assert source["ActionTypeId"]["Provider"] == "CodeStarSourceConnection"
    assert source["Configuration"]["ConnectionArn"] == EXAMPLE["pipeline"]["connectionArn"]
    assert (source["Configuration"]["FullRepositoryId"], source["Configuration"]["BranchName"]) == (
        "example-org/eks-karpenter",
        "main",
    )
    # dev deploys without approval; production waits for one, then deploys eks-karpenter-prod in us-east-1 (each
    # after its live review: the next test)
    dev = sorted(stages["dev"], key=lambda a: a["RunOrder"])
    assert [a["ActionTypeId"]["Category"] for a in dev] == ["Build", "Deploy", "Deploy"]
    assert [a["Configuration"]["StackName"] for a in dev[1:]] == ["eks-karpenter-dev"] * 2
    approve, _, prepare, execute = sorted(stages["prod"], key=lambda a: a["RunOrder"])
    assert approve["ActionTypeId"]["Category"] == "Approval" and approve["RunOrder"] == 1
    assert approve["Configuration"]["CustomData"] == "Deploy prod (wave production)?"
    assert (prepare["Configuration"]["ActionMode"], execute["Configuration"]["ActionMode"]) == (
        "CHANGE_SET_REPLACE",
        "CHANGE_SET_EXECUTE",
    )
    assert prepare["Region"] == "us-east-1" and prepare["Configuration"]["StackName"] == "eks-karpenter-prod"
    # the production stack is deployed with the target account's bootstrap roles
    assert ":iam::123456789012:role/cdk-hnb659fds-deploy-role-123456789012-us-east-1" in json.dumps(prepare["RoleArn"])


def test_runs_are_queued_so_a_newer_one_never_supersedes_one_waiting_for_approval(delivery):
    """SUPERSEDED (the default) lets a newer run overtake one waiting at production's approval: approving it then
    deploys both runs' changes at once. QUEUED runs them one after another."""
    assert _pipeline(delivery)["ExecutionMode"] == "QUEUED"


def _role_statements(delivery, project_id: str) -> list[dict[str, Any]]:
    """The statements of the CodeBuild project's role (its DefaultPolicy)."""
    role = delivery.json["Resources"][project_id]["Properties"]["ServiceRole"]["Fn::GetAtt"][0]
    (policy,) = [
        r["Properties"]["PolicyDocument"]["Statement"]
        for r in _of_type(delivery.json, "AWS::IAM::Policy").values()
        if r["Properties"]["Roles"] == [{"Ref": role}]
    ]
    return policy


@pytest.mark.parametrize(
    "stage,stack,account,region",
    [
        ("dev", "eks-karpenter-dev", "444455556666", "eu-west-1"),
        ("prod", "eks-karpenter-prod", "123456789012", "us-east-1"),
    ],
)
def test_each_environment_is_reviewed_against_its_deployed_stack_right_before_it_deploys(
    delivery, stage, stack, account, region
):
    """A CodeBuild step in the repository checkout runs the live review of the environment's stack (after the
    wave's approval, before the change set is made); a non-zero exit fails the stage. Its role may assume only
    that account's CDK bootstrap lookup role (the review narrows the session to reading the stack)."""
    stages = {s["Name"]: s["Actions"] for s in _pipeline(delivery)["Stages"]}
    actions = {a["Name"]: a for a in stages[stage]}
    review = actions["LiveReview"]
    assert review["ActionTypeId"]["Provider"] == "CodeBuild"
    assert review["RunOrder"] < actions[f"{stack}.Prepare"]["RunOrder"] < actions[f"{stack}.Deploy"]["RunOrder"]
    assert review["RunOrder"] == (2 if stage == "prod" else 1)  # (production: after the approval)
    assert review["InputArtifacts"] == stages["Source"][0]["OutputArtifacts"]  # the checkout, as the synth's
    project_id = review["Configuration"]["ProjectName"]["Ref"]
    spec = json.loads(delivery.json["Resources"][project_id]["Properties"]["Source"]["BuildSpec"])
    assert spec["phases"]["build"]["commands"] == [f'make review LIVE=1 ARGS="--lookup-role --stack {stack}"']
    statements = _role_statements(delivery, project_id)
    (assume,) = [s for s in statements if "sts:AssumeRole" in json.dumps(s["Action"])]
    assert assume == {
        "Action": "sts:AssumeRole",
        "Effect": "Allow",
        "Resource": {
            "Fn::Join": [
                "",
                [
                    "arn:",
                    {"Ref": "AWS::Partition"},
                    f":iam::{account}:role/cdk-hnb659fds-lookup-role-{account}-{region}",
                ],
            ]
        },
    }
    # the rest is CDK Pipelines' own for any CodeBuild step: its logs and reports, and reading the checkout
    others = {
        a
        for s in statements
        if s is not assume
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert {a.split(":")[0] for a in others} == {"logs", "codebuild", "s3", "kms"}
    assert not {a for a in others if a.startswith(("cloudformation:", "iam:", "sts:"))}


def test_the_synth_step_runs_the_test_suite_and_the_security_report_before_the_synth(delivery):
    spec = json.loads(_project(delivery, "SynthCdkBuildProject")["Source"]["BuildSpec"])
    assert spec["phases"]["build"]["commands"] == [
        "make test",
        'make security-report ARGS="--sarif-dir reports"',
        "make synth",
    ]
    assert spec["artifacts"]["base-directory"] == "cdk.out"
    assert spec["phases"]["install"]["runtime-versions"] == {"python": "3.11", "nodejs": "22"}
    synth = _project(delivery, "SynthCdkBuildProject")
    assert synth["Environment"]["ComputeType"] == "BUILD_GENERAL1_MEDIUM"
    assert synth["Environment"]["Image"] == "aws/codebuild/standard:7.0" and synth["TimeoutInMinutes"] == 90


def test_codebuild_installs_the_pinned_cdk_cli_and_cdk_assets_never_latest(delivery):
    cli = json.loads((ROOT / "package.json").read_text())["devDependencies"]["aws-cdk"]
    mutate = json.loads(_project(delivery, "SelfMutation")["Source"]["BuildSpec"])
    assert mutate["phases"]["install"]["commands"] == [f"npm install -g aws-cdk@{cli}"]
    assert mutate["phases"]["install"]["runtime-versions"] == {"python": "3.11", "nodejs": "22"}
    # one publisher per asset type, whose buildspec travels in the cloud assembly
    (assets,) = Path(delivery.app.outdir).glob("buildspec-*-FileAsset.yaml")
    spec = yaml_load.safe_load(assets.read_text())
    assert spec["phases"]["install"]["commands"] == [f"npm install -g cdk-assets@{pipeline_tools.CDK_ASSETS_VERSION}"]


def test_build_runtimes_are_the_ci_ones():
    workflow = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    assert 'python-version: "3.11"' in workflow and 'node-version: "22"' in workflow
    assert pipeline_tools.build_runtimes() == {"python": "3.11", "nodejs": "22"}
    assert 'target-version = "py311"' in (ROOT / "pyproject.toml").read_text()


def test_artifacts_are_encrypted_with_a_rotated_key_and_the_stages_keep_their_stack_names(delivery):
    ((_, key),) = _of_type(delivery.json, "AWS::KMS::Key").items()
    assert key["Properties"]["EnableKeyRotation"] is True
    assert [s.stack_name for s in delivery.stacks] == ["eks-karpenter-dev", "eks-karpenter-prod"]
    assert [(s.account, s.region) for s in delivery.stacks] == [
        ("444455556666", "eu-west-1"),
        ("123456789012", "us-east-1"),
    ]
    # `cdk deploy` selects them by their stage path; the pipeline and its us-east-1 support stack are top-level
    assert sorted(s.hierarchical_id for s in delivery.assembly.stacks_recursively) == [
        "cross-region-stack-111122223333:us-east-1",
        "dev/eks-karpenter-dev",
        "eks-karpenter-delivery",
        "prod/eks-karpenter-prod",
    ]


def test_the_pipeline_is_cdk_nag_clean_with_every_wildcard_acknowledged_by_kind(delivery):
    """The assembly synthesized (the gate passed, AwsSolutions and NIST 800-53 R5); before acknowledgments,
    the pipeline's own findings are exactly these."""
    ours = [f for f in delivery.raw_findings if f.path.startswith(("eks-karpenter-delivery/", "cross-region-stack"))]
    counts: dict[str, int] = {}
    for f in ours:
        rule = f.rule.split("[")[0]
        counts[rule] = counts.get(rule, 0) + 1
    # (the two live review steps' roles: 8 wildcards each -- their logs, reports, and reading the checkout -- and
    # one inline policy each, all of CDK Pipelines' own kinds)
    assert counts == {
        "AwsSolutions-IAM5": 45 + 2 * 8,
        "AwsSolutions-S1": 2,
        "NIST.800.53.R5-IAMNoInlinePolicy": 6 + 2,
        "NIST.800.53.R5-S3BucketLoggingEnabled": 2,
        "NIST.800.53.R5-S3BucketReplicationEnabled": 2,
        "NIST.800.53.R5-S3BucketVersioningEnabled": 2,
    }
    review = [f for f in ours if "LiveReview" in f.path]
    assert len(review) == 2 * (8 + 1) and {f.rule.split("[")[0] for f in review} == {
        "AwsSolutions-IAM5",
        "NIST.800.53.R5-IAMNoInlinePolicy",
    }
    stage_findings = [f for f in delivery.raw_findings if f.path.startswith(("dev/", "prod/"))]
    assert len(stage_findings) > 0  # the stages are gated too (and acknowledged as without the pipeline)


def test_a_wildcard_of_an_unknown_kind_stays_a_finding():
    from constructs_lib.delivery_pipeline import wildcard_findings, wildcard_kind

    artifacts = {"<Bucket.Arn>", "<Bucket.Arn>/*", "<Key.Arn>"}
    read_write = {"Effect": "Allow", "Action": ["s3:GetObject*", "s3:PutObject"], "Resource": ["<Bucket.Arn>/*"]}
    assert wildcard_kind(read_write, artifacts) == "artifacts"
    anything = {"Effect": "Allow", "Action": ["s3:GetObject*"], "Resource": ["*"]}
    assert wildcard_kind(anything, artifacts) is None
    assert wildcard_kind({"Effect": "Allow", "Action": "iam:*", "Resource": "*"}, artifacts) is None
    assert (
        wildcard_kind({"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "arn:aws:iam::1:role/*"}, artifacts)
        is None
    )
    assert wildcard_findings(read_write) == [
        "AwsSolutions-IAM5[Action::s3:GetObject*]",
        "AwsSolutions-IAM5[Resource::<Bucket.Arn>/*]",
    ]


def test_a_flag_setting_is_named_since_the_pipelines_own_synth_reads_cdk_json(delivery):
    warnings = [
        m
        for m in delivery.assembly.get_stack_artifact(delivery.pipeline_stack.artifact_id).messages
        if "pipeline-flags" in str(m.entry.data) or "not in cdk.json" in str(m.entry.data)
    ]
    (warning,) = warnings
    assert "settings given with -c (additionalNagPacks, environments, pipeline) are not in cdk.json" in str(
        warning.entry.data
    )


# -- what turning the pipeline on does to environments deployed by hand ---------------------------------------

_PRUNE = re.compile(r"aws\.cdk\.eks/prune-[0-9a-f]{42}")
_ASSET = re.compile(r"[0-9a-f]{64}")
_OUTPUT = re.compile(r"Outputs\.[A-Za-z0-9]+")
_REFERENCE = re.compile(r"referenceto[A-Za-z0-9]+")


def _path_free(value: Any, stage: str) -> Any:
    """A template with what CDK derives from construct paths blanked: the Stage's id in paths (Name tags,
    the provider functions' descriptions, path metadata), the manifests' prune labels, nested stacks'
    output and parameter names, asset hashes."""
    if isinstance(value, dict):
        if "Outputs" in value and "Resources" in value:  # output names are paths: what they output is kept
            outputs = sorted(json.dumps(_path_free(o, stage), sort_keys=True) for o in value["Outputs"].values())
            value = {**value, "Outputs": outputs}
        return {_path_free(k, stage): _path_free(v, stage) for k, v in value.items() if k != "aws:cdk:path"}
    if isinstance(value, list):
        return [_path_free(v, stage) for v in value]
    if isinstance(value, str):
        value = value.replace(f"{stage}/", "")
        for pattern, blank in ((_PRUNE, "PRUNE"), (_ASSET, "ASSET"), (_OUTPUT, "Outputs.X"), (_REFERENCE, "REF")):
            value = pattern.sub(blank, value)
    return value


def _stage_templates(stack) -> dict[str, dict[str, Any]]:
    """The stack's template and its nested templates, by their stack-relative role."""
    outdir = Path(stack.node.scope.outdir if stack.node.scope is not stack.node.root else stack.node.root.outdir)
    out = {"main": json.loads((outdir / stack.template_file).read_text())}
    for nested in stack.node.find_all():
        if getattr(nested, "nested_stack_parent", None) is stack:
            out[nested.node.id] = json.loads((outdir / nested.template_file).read_text())
    return out


@pytest.mark.parametrize("name", ["eks-karpenter-dev", "eks-karpenter-prod"])
def test_turning_the_pipeline_on_keeps_every_stack_and_resource_of_a_running_environment(name, by_hand, delivery):
    before = _stage_templates(by_hand[name])
    (piped,) = [s for s in delivery.stacks if s.stack_name == name]
    after = _stage_templates(piped)
    assert sorted(before) == sorted(after)
    for role in each(before):
        added, removed, changed = template_change(before[role], after[role])
        assert (added, removed) == (set(), set()), role  # every logical id kept: nothing created or deleted
        stage = piped.node.scope.node.id
        for logical_id, properties in changed.items():
            kind = before[role]["Resources"][logical_id]["Type"]
            if not kind.startswith("Custom::"):  # (custom resources: the next test names what changes)
                # A create-only property may change only as a reference to a nested stack's output renamed by the
                # Stage's path (the node role's ARN in its access entry): CloudFormation evaluates it when it
                # updates (a dynamic evaluation) to the same value, and replaces nothing.
                old_props = before[role]["Resources"][logical_id]["Properties"]
                new_props = after[role]["Resources"][logical_id]["Properties"]
                replaced = {
                    p
                    for p in set(properties) & create_only_properties(kind)
                    if _path_free(old_props.get(p), stage) != _path_free(new_props.get(p), stage)
                }
                assert not replaced, (role, logical_id, replaced)  # nothing replaced
        # and what changes is only what CDK derives from the construct path (the Stage adds its id)
        old, new = _path_free(before[role], stage), _path_free(after[role], stage)
        differing = sorted(k for k in old["Resources"] if old["Resources"][k] != new["Resources"][k])
        assert differing == [] and old == new, (
            role,
            differing[:1] and (old["Resources"][differing[0]], new["Resources"][differing[0]]),
        )


def test_what_changes_when_the_pipeline_takes_over_is_named(by_hand, delivery):
    before = _stage_templates(by_hand["eks-karpenter-dev"])["main"]
    (piped,) = [s for s in delivery.stacks if s.stack_name == "eks-karpenter-dev"]
    after = _stage_templates(piped)["main"]
    _, _, changed = template_change(before, after)
    kinds = {}
    for logical_id, properties in changed.items():
        kinds.setdefault(before["Resources"][logical_id]["Type"], set()).update(properties)
    assert kinds["AWS::EC2::VPC"] == {"Tags"}  # Name tag: the construct path
    assert kinds["Custom::AWSCDK-EKS-KubernetesResource"] == {"Manifest", "PruneLabel", "ServiceToken"}
    assert kinds["Custom::AWSCDK-EKS-Cluster"] == {"ServiceToken"}  # a renamed output of the same function
    assert kinds["AWS::CloudFormation::Stack"] <= {"TemplateURL", "Parameters"}


# -- bad pipeline settings ------------------------------------------------------------------------------------


def _refused(**settings: Any) -> str:
    app = new_app(context={**PRODUCT_CONTEXT, **settings})
    with pytest.raises(ConfigError) as raised:
        build(app, today=TODAY)
    assert not app.node.children  # nothing built
    return str(raised.value)


def _with(**pipeline: Any) -> dict[str, Any]:
    return {**EXAMPLE, "pipeline": {**EXAMPLE["pipeline"], **pipeline}}


def test_the_pipeline_needs_environments():
    message = _refused(pipeline=EXAMPLE["pipeline"])
    assert message.startswith("pipeline: needs environments (the pipeline deploys each environment as a stage")
    assert message.endswith("(from -c)")


@pytest.mark.parametrize(
    "settings,expected",
    [
        (
            {"connectionArn": "arn:aws:iam::111122223333:role/x"},
            'pipeline.connectionArn = "arn:aws:iam::111122223333:role/x": must be a connection ARN like '
            "arn:aws:codeconnections:<region>:<account>:connection/<uuid> (from -c)",
        ),
        (
            {"repository": "no-owner"},
            "pipeline.repository = \"no-owner\": must be owner/name (letters, digits, '.', '-', '_') (from -c)",
        ),
        (
            {"branch": "feature..x"},
            'pipeline.branch = "feature..x": must be a git branch name like main or release/1.x (from -c)',
        ),
        (
            {"account": "12345"},
            'pipeline.account = "12345": must be a 12-digit AWS account id (from -c)',
        ),
        (
            {"waves": [{"name": "dev", "environments": ["dev"]}, {"name": "dev", "environments": ["prod"]}]},
            "pipeline.waves has duplicate names: dev (from -c)",
        ),
        (
            {"waves": [{"name": "all", "environments": ["dev", "prd"]}]},
            'pipeline.waves[0].environments[1] = "prd": not an environment (environments: dev, prod) (from -c)\n'
            "pipeline.waves: environment 'prod' is in no wave; with the pipeline on, it delivers every environment "
            "(from -c)",
        ),
        (
            {"waves": [{"name": "a", "environments": ["dev", "prod"]}, {"name": "b", "environments": ["prod"]}]},
            "pipeline.waves: environment 'prod' is in waves 'a' and 'b' (from -c)",
        ),
        (
            {"waves": [{"name": "a", "environments": ["dev", "prod"], "aproval": True}]},
            "pipeline.waves[0].aproval: unknown setting; did you mean 'approval'? (from -c)",
        ),
        (
            {"conectionArn": "x"},
            "pipeline.conectionArn: unknown setting; did you mean 'connectionArn'? (from -c)",
        ),
        (
            {"name": "eks-karpenter-dev"},
            "pipeline.name: 'eks-karpenter-dev' is an environment's stack name; choose another (from -c)",
        ),
    ],
    ids=lambda v: str(v)[:40],
)
def test_bad_pipeline_settings_are_refused_with_one_line_each(settings, expected):
    assert _refused(**_with(**settings)) == expected


def test_an_environment_the_pipeline_delivers_names_its_account_and_region():
    settings = {**EXAMPLE, "environments": {**EXAMPLE["environments"], "dev": {}}}
    assert _refused(**settings) == (
        "pipeline.waves: environment 'dev' needs account and region (environments.dev.account/region): the "
        "pipeline deploys into a named account and region (from -c)"
    )


def test_the_pipeline_is_the_apps_not_an_environments():
    settings = {**EXAMPLE, "environments": {**EXAMPLE["environments"], "dev": {"pipeline": EXAMPLE["pipeline"]}}}
    assert _refused(**settings) == (
        "environments.dev.pipeline: the pipeline is the app's, set at the top level only (environments.dev)"
    )


def test_the_other_accounts_deploy_roles_use_the_artifact_keys_only_through_s3(delivery):
    """Issue 33, point 4: each artifact key's statement for a stage account's CDK deploy role (the dev account's on
    the pipeline's key, the prod account's on the us-east-1 replication key) holds the condition the CDK bootstrap
    template puts on that role's own key permission: kms:ViaService s3 of the key's region."""
    support = json.loads(delivery.templates()["cross-region-stack-111122223333_us-east-1.template.json"].read_text())
    found = {}
    for template in (delivery.json, support):
        ((_, key),) = _of_type(template, "AWS::KMS::Key").items()
        statements = key["Properties"]["KeyPolicy"]["Statement"]
        (deploy_role,) = [s for s in statements if "deploy-role" in json.dumps(s["Principal"])]
        found[json.dumps(deploy_role["Principal"]["AWS"]["Fn::Join"][1][-1])] = deploy_role
        assert deploy_role["Action"] == ["kms:Decrypt", "kms:DescribeKey"]
        assert deploy_role["Condition"] == {
            "StringEquals": {"kms:ViaService": {"Fn::Join": ["", ["s3.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]}}
        }
        # the pipeline account's own statements are untouched (CDK Pipelines' roles use the key through IAM)
        assert [s for s in statements if "Condition" in s] == [deploy_role]
    assert sorted(found) == [
        '":iam::123456789012:role/cdk-hnb659fds-deploy-role-123456789012-us-east-1"',
        '":iam::444455556666:role/cdk-hnb659fds-deploy-role-444455556666-eu-west-1"',
    ]


def test_only_a_deploy_roles_unconditioned_decrypt_grant_is_narrowed():
    from constructs_lib.delivery_pipeline import is_deploy_role_grant

    grant = {
        "Action": ["kms:Decrypt", "kms:DescribeKey"],
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::444455556666:role/cdk-hnb659fds-deploy-role-444455556666-eu-west-1"},
        "Resource": "*",
    }
    assert is_deploy_role_grant(grant)
    assert not is_deploy_role_grant({**grant, "Principal": {"AWS": "arn:aws:iam::111122223333:root"}})
    assert not is_deploy_role_grant({**grant, "Action": "kms:*"})
    assert not is_deploy_role_grant({**grant, "Condition": {"Bool": {"aws:SecureTransport": "true"}}})
    assert not is_deploy_role_grant({**grant, "Effect": "Deny"})
