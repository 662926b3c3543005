"""A CDK Pipelines pipeline that delivers stages in waves from a repository connection.

Inputs: the source (repository, branch, connection), the synth step's commands, the CLI and
cdk-assets versions its CodeBuild steps install, the build runtimes, and optionally the commands of a
live review run before each stage deploys. Outputs: the built ``pipelines.CodePipeline``.

Executions are QUEUED (CodePipeline V2), not SUPERSEDED (the default): a newer run waits for the one ahead
of it instead of overtaking it at a manual approval, so one approved deploy never carries two runs' changes.
A rejected run still leaves its changes for the next run: the live review step (:class:`LiveReview`) sees
them, reviewing each stage's synth against its deployed stacks, and fails the stage on a refused change. Every wildcard CDK Pipelines writes into its roles' policies is
acknowledged for cdk-nag by what it grants (see :func:`wildcard_kind`); a wildcard of any other kind
stays a finding and fails the security gate.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Aws, Duration, Stack, Stage, pipelines
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_codepipeline as codepipeline
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from .karpenter.nag import acknowledge

# What each kind of wildcard in CDK Pipelines' own policies grants, as the acknowledgment's reason.
WILDCARD_REASONS = {
    "artifacts": (
        "CDK Pipelines' grant on its own artifact store: the action groups of a bucket read/write grant on the "
        "objects of this pipeline's artifact bucket (and, across regions, its replication buckets) and of its "
        "KMS key; nothing else is in the statement."
    ),
    "replication-keys": (
        "Across regions CDK Pipelines knows each replication bucket's KMS key by alias only, so the pipeline "
        "role's key grant names '*'; KMS still requires each key's own policy to allow the call."
    ),
    "codebuild-logs": (
        "CodeBuild writes its build logs and test reports into log groups and report groups named after the "
        "project ('/aws/codebuild/<project>:*', '<project>-*'); the shared asset-publishing role serves every "
        "publishing project, so it names /aws/codebuild/* and report-group/*."
    ),
    "bootstrap-roles": (
        "The self-mutation step's `cdk deploy` assumes the CDK bootstrap roles of the pipeline account; the "
        "statement's condition admits only roles tagged aws-cdk:bootstrap-role (deploy, file- and "
        "image-publishing)."
    ),
    "read-state": (
        "Read-only calls the self-mutation step's `cdk deploy` makes before it knows any resource name: "
        "cloudformation:DescribeStacks and s3:ListBucket."
    ),
    "asset-builds": (
        "CDK Pipelines grants its shared asset-publishing role codebuild:BatchGetBuilds/StartBuild/StopBuild "
        "on '*' (the publishing projects are created after the role); the role is assumable by CodeBuild only "
        "and used by this pipeline's publishing projects alone."
    ),
}

# Why the artifact buckets (the pipeline's, and its replication buckets in other regions) log no access.
ARTIFACTS_LOGGED = (
    "A CDK Pipelines artifact bucket: only the pipeline's own roles read and write it (CloudTrail records their "
    "calls); server access logs would need a log bucket of their own, with the same finding."
)
# NIST 800-53 R5 findings of the artifact buckets (CDK Pipelines' and its replication buckets), and why.
NIST_ARTIFACT_BUCKETS = (
    (
        "S3BucketVersioningEnabled",
        "Each pipeline execution writes new artifact objects and never overwrites one; the repository "
        "and the cloud assembly rebuild any of them.",
    ),
    (
        "S3BucketReplicationEnabled",
        "Build artifacts between the pipeline's own steps, rebuilt from the repository by the next "
        "execution; nothing to recover from a copy.",
    ),
    ("S3BucketLoggingEnabled", ARTIFACTS_LOGGED),
)
_ARTIFACT_ACTIONS = ("s3:", "kms:")
_LOG_ACTIONS = {"logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"}
_REPORT_ACTIONS = {
    "codebuild:BatchPutCodeCoverages",
    "codebuild:BatchPutTestCases",
    "codebuild:CreateReport",
    "codebuild:CreateReportGroup",
    "codebuild:UpdateReport",
}
_READ_STATE = {"cloudformation:DescribeStacks", "s3:ListBucket"}
_ASSET_BUILDS = {"codebuild:BatchGetBuilds", "codebuild:StartBuild", "codebuild:StopBuild"}


@dataclass(frozen=True)
class RepositorySource:
    """Where the pipeline's source comes from: a CodeConnections connection to the repository host."""

    repository: str  # owner/name
    branch: str
    connection_arn: str


# The actions CDK Pipelines grants a stage account's deploy role on an artifact key (aws-cdk-lib's grantDecrypt).
DEPLOY_ROLE_KEY_ACTIONS = ["kms:Decrypt", "kms:DescribeKey"]


def is_deploy_role_grant(statement: Mapping[str, Any]) -> bool:
    """A key policy statement CDK Pipelines writes for another account's CDK deploy role: decrypt, no condition."""
    principal = statement.get("Principal", {})
    return (
        statement.get("Effect") == "Allow"
        and _listed(statement.get("Action")) == DEPLOY_ROLE_KEY_ACTIONS
        and "Condition" not in statement
        and isinstance(principal, dict)
        and "-deploy-role-" in json.dumps(principal.get("AWS"))
    )


def nag_string(value: Any) -> str | None:
    """A policy value as cdk-nag writes it in a finding id (``<Logical.Attr>`` for GetAtt, ``<Id>`` for
    Ref, joins flattened); ``None`` for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref":
            return f"<{argument}>"
        if function == "Fn::GetAtt":
            return f"<{argument[0]}.{argument[1]}>"
        if function == "Fn::Join":
            parts = [nag_string(p) for p in argument[1]]
            return None if any(p is None for p in parts) else argument[0].join(p for p in parts if p is not None)
    return None


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def wildcard_kind(statement: Mapping[str, Any], artifact_resources: set[str]) -> str | None:
    """Which of CDK Pipelines' own kinds of wildcard statement this is (a key of
    :data:`WILDCARD_REASONS`), or ``None``: then its findings stay open."""
    actions = set(_listed(statement.get("Action", [])))
    resources = [nag_string(r) for r in _listed(statement.get("Resource", []))]
    if statement.get("Effect") != "Allow" or "NotAction" in statement or "NotResource" in statement:
        return None
    if None in resources:
        return None
    if all(a.startswith(_ARTIFACT_ACTIONS) for a in actions) and not actions & _READ_STATE:
        if all(a.startswith("kms:") for a in actions) and "*" in resources:
            rest = {r for r in resources if r != "*"}
            return "replication-keys" if rest <= artifact_resources else None
        return "artifacts" if set(resources) <= artifact_resources else None
    if actions <= _LOG_ACTIONS | _REPORT_ACTIONS and all(
        ":log-group:/aws/codebuild/" in r or ":report-group/" in r for r in resources if r
    ):
        return "codebuild-logs"
    if (
        actions == {"sts:AssumeRole"}
        and all(r and ":role/" in r for r in resources)
        and "iam:ResourceTag/aws-cdk:bootstrap-role"
        in statement.get("Condition", {}).get("ForAnyValue:StringEquals", {})
    ):
        return "bootstrap-roles"
    if actions <= _READ_STATE and resources == ["*"]:
        return "read-state"
    if actions <= _ASSET_BUILDS and resources == ["*"]:
        return "asset-builds"
    return None


def wildcard_findings(statement: Mapping[str, Any]) -> list[str]:
    """The granular AwsSolutions-IAM5 finding ids of one statement's wildcards."""
    ids = [f"AwsSolutions-IAM5[Action::{a}]" for a in _listed(statement.get("Action", [])) if "*" in a]
    for resource in _listed(statement.get("Resource", [])):
        text = nag_string(resource)
        if text is not None and "*" in text:
            ids.append(f"AwsSolutions-IAM5[Resource::{text}]")
    return ids


@dataclass(frozen=True)
class LiveReview:
    """A step before each stage's deploy that reviews the stage against its deployed stacks and fails the stage
    when the command exits non-zero. It runs ``commands(stack names)`` in the repository checkout, and may do one
    thing in AWS: assume the CDK bootstrap lookup role of each of the stage's stacks (its account and region; the
    command narrows the session further, to reading those stacks' templates)."""

    commands: Callable[[Sequence[str]], Sequence[str]]


def lookup_role_arn(stack: Stack) -> str:
    """The CDK bootstrap lookup role of ``stack``'s account and region, as its synthesizer names it."""
    role = stack.synthesizer.lookup_role
    if role is None:
        raise ValueError(f"stack {stack.stack_name} has no lookup role (its synthesizer names none)")
    return (
        role.replace("${AWS::Partition}", Aws.PARTITION)
        .replace("${AWS::AccountId}", stack.account)
        .replace("${AWS::Region}", stack.region)
    )


class DeliveryPipeline(Construct):
    """A self-mutating CDK Pipelines pipeline with cross-account keys (rotated), a synth step running
    ``synth_commands`` in the repository checkout, and waves of stages added with :meth:`add_wave`.
    Call :meth:`build` once every wave is added."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        source: RepositorySource,
        pipeline_name: str,
        synth_commands: Sequence[str],
        cli_version: str,
        cdk_assets_version: str,
        build_runtimes: Mapping[str, str],
        live_review: LiveReview | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.source = source
        self.live_review = live_review
        self._checkout = pipelines.CodePipelineSource.connection(
            source.repository, source.branch, connection_arn=source.connection_arn
        )
        self.pipeline = pipelines.CodePipeline(
            self,
            "Pipeline",
            pipeline_name=pipeline_name,
            # One run at a time, in order: a newer run never supersedes one waiting at an approval (and so never
            # deploys two runs' changes to an environment in one deploy).
            pipeline_type=codepipeline.PipelineType.V2,
            execution_mode=codepipeline.ExecutionMode.QUEUED,
            # Stages in other accounts read the artifacts: a customer-managed key, rotated yearly.
            cross_account_keys=True,
            enable_key_rotation=True,
            # Pinned: unset, CodeBuild installs the newest aws-cdk 2.x and cdk-assets that day.
            cli_version=cli_version,
            cdk_assets_cli_version=cdk_assets_version,
            # One publishing project per asset type instead of one per asset.
            publish_assets_in_parallel=False,
            code_build_defaults=pipelines.CodeBuildOptions(
                build_environment=codebuild.BuildEnvironment(build_image=codebuild.LinuxBuildImage.STANDARD_7_0),
                partial_build_spec=codebuild.BuildSpec.from_object(
                    {"version": "0.2", "phases": {"install": {"runtime-versions": dict(build_runtimes)}}}
                ),
            ),
            # The synth step runs the whole test suite: 4 vCPU / 7 GB instead of the default 2 / 3.
            synth_code_build_defaults=pipelines.CodeBuildOptions(
                build_environment=codebuild.BuildEnvironment(compute_type=codebuild.ComputeType.MEDIUM),
                timeout=Duration.minutes(90),
            ),
            synth=pipelines.CodeBuildStep(
                "Synth",
                input=self._checkout,
                commands=list(synth_commands),
                primary_output_directory="cdk.out",
            ),
        )

    def add_wave(self, name: str, stages: Sequence[Stage], *, approval: bool) -> pipelines.Wave:
        """A wave deploying ``stages`` in parallel, after a manual approval when ``approval``."""
        pre: list[pipelines.Step] = []
        if approval:
            names = ", ".join(s.stage_name for s in stages)
            pre.append(pipelines.ManualApprovalStep("Approve", comment=f"Deploy {names} (wave {name})?"))
        wave = self.pipeline.add_wave(name, pre=pre)
        for stage in stages:
            wave.add_stage(stage, pre=[] if self.live_review is None else [self._live_review_step(stage)])
        return wave

    def _live_review_step(self, stage: Stage) -> pipelines.CodeBuildStep:
        """The live review of ``stage``: after the wave's approval, right before its stacks deploy."""
        assert self.live_review is not None
        stacks = [c for c in stage.node.find_all() if isinstance(c, Stack) and c.nested_stack_parent is None]
        return pipelines.CodeBuildStep(
            "LiveReview",
            input=self._checkout,
            commands=list(self.live_review.commands([s.stack_name for s in stacks])),
            role_policy_statements=[
                iam.PolicyStatement(actions=["sts:AssumeRole"], resources=[lookup_role_arn(s) for s in stacks])
            ],
        )

    def build(self) -> None:
        """Build the pipeline (CDK Pipelines would at synth) and acknowledge the findings of its artifact
        buckets and the wildcards of its own policies."""
        self.pipeline.build_pipeline()
        self._narrow_deploy_roles_key_use()
        artifact_resources = self._artifact_resources()
        for bucket in self._artifact_buckets():
            acknowledge(bucket, "AwsSolutions-S1", ARTIFACTS_LOGGED)
            for rule, reason in NIST_ARTIFACT_BUCKETS:
                acknowledge(bucket, f"NIST.800.53.R5-{rule}", reason)
        for policy in self.node.find_all():
            if not isinstance(policy, iam.CfnPolicy):
                continue
            acknowledge(
                policy,
                "NIST.800.53.R5-IAMNoInlinePolicy",
                "CDK Pipelines attaches each role's grants as an inline DefaultPolicy of that role.",
            )
            document = Stack.of(policy).resolve(policy.policy_document)
            for statement in document.get("Statement", []):
                kind = wildcard_kind(statement, artifact_resources)
                if kind is not None:
                    for finding in wildcard_findings(statement):
                        acknowledge(policy, finding, WILDCARD_REASONS[kind])

    def _narrow_deploy_roles_key_use(self) -> None:
        """Each artifact key lets the other accounts' CDK deploy roles decrypt only through S3 in the key's region.

        CDK Pipelines grants each stage account's deploy role (``cdk-<qualifier>-deploy-role-...``) kms:Decrypt and
        kms:DescribeKey on the key of the artifact bucket its stage reads, with no condition. That role uses the key
        only as S3 reads the artifacts for it: the CDK bootstrap template gives it the key only so
        (aws-cdk, packages/aws-cdk/lib/api/bootstrap/bootstrap-template.yaml, DeploymentActionRole, statement
        PipelineCrossAccountArtifactsKey: ``kms:ViaService`` ``s3.${AWS::Region}.amazonaws.com``), and the key
        policy now says the same, so no other credentials of those accounts' roles can use the key directly. S3's
        encryption context (``aws:s3:arn``, the object's or bucket's ARN) is not used: the bucket's generated name
        cannot be written in its own key's policy (the bucket names the key)."""
        for bucket in self._artifact_buckets():
            key = bucket.encryption_key
            if isinstance(key, kms.Alias):  # a replication bucket knows its key by its alias
                key = key.alias_target_key
            cfn = key.node.default_child if key is not None else None
            if not isinstance(cfn, kms.CfnKey):
                continue
            statements = Stack.of(cfn).resolve(cfn.key_policy).get("Statement", [])
            for index, statement in enumerate(statements):
                if is_deploy_role_grant(statement):
                    cfn.add_property_override(
                        f"KeyPolicy.Statement.{index}.Condition",
                        {"StringEquals": {"kms:ViaService": f"s3.{Aws.REGION}.amazonaws.com"}},
                    )

    def _artifact_buckets(self) -> list[s3.IBucket]:
        """The pipeline's artifact bucket and the replication buckets of stages in other regions."""
        codepipeline = self.pipeline.pipeline
        return [
            codepipeline.artifact_bucket,
            *(s.replication_bucket for s in codepipeline.cross_region_support.values()),
        ]

    def _artifact_resources(self) -> set[str]:
        """The artifact store as cdk-nag writes it: the buckets, their objects, and the artifact key."""
        codepipeline = self.pipeline.pipeline
        stack = Stack.of(self)
        found: set[str] = set()
        for bucket in self._artifact_buckets():
            arn = nag_string(stack.resolve(bucket.bucket_arn))
            if arn is not None:
                found |= {arn, f"{arn}/*"}
        key = codepipeline.artifact_bucket.encryption_key
        if key is not None:
            key_arn = nag_string(stack.resolve(key.key_arn))
            if key_arn is not None:
                found.add(key_arn)
        return found
