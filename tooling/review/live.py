"""The review against what is deployed (``make review LIVE=1``, ``python -m tooling.review --live``): the current
synth compared with the templates CloudFormation holds for the app's stacks and their nested stacks, read with
the target account's credentials, instead of with the accepted baseline (``baseline/``).

The accepted baseline says what was *accepted*, not what reached an account: a delivery pipeline run that was
rejected or superseded before production leaves production behind the baseline, and the next run then brings two
accepted changes in one deploy (two kinds of cluster update: refused by aws-cdk's handler, and its rollback too).
This review sees what the deploy will really change, and runs the synth guard (``karpenter_stack/baseline.py``)
against the deployed templates as well.

What it reads (all read-only): ``cloudformation:DescribeStacks`` (does the stack exist, is it deployable),
``cloudformation:GetTemplate`` with ``TemplateStage=Original`` (the template as it was submitted, which is what
``cdk synth`` writes; ``Processed`` is the template after transforms and macros expanded, which no synth holds)
and ``cloudformation:ListStackResources`` (the nested stacks' physical ids). A stack that does not exist is a first
deploy. With ``--lookup-role`` it first assumes each stack's CDK bootstrap lookup role (``sts:AssumeRole``), with a
session policy that narrows the session to those three actions on that stack and its nested stacks.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .model import ReviewError
from .render import render
from .stacks import review

# The calls the live review makes with the target account's credentials (README, the pipeline's step).
READ_ACTIONS = ("cloudformation:DescribeStacks", "cloudformation:GetTemplate", "cloudformation:ListStackResources")
# The template as submitted: what `cdk synth` wrote and `cdk deploy` or the pipeline uploaded.
TEMPLATE_STAGE = "Original"
# A stack in these states holds nothing deployed: a change set never executed, a creation rolled back.
NOT_DEPLOYED = ("REVIEW_IN_PROGRESS", "ROLLBACK_COMPLETE")
# States in which CloudFormation takes no update until the stack is recovered.
STUCK = ("UPDATE_ROLLBACK_FAILED", "ROLLBACK_FAILED", "DELETE_FAILED")
# Error codes of missing or refused permissions and of unusable credentials.
DENIED = (
    "AccessDenied",
    "AccessDeniedException",
    "UnauthorizedOperation",
    "ExpiredToken",
    "ExpiredTokenException",
    "InvalidClientTokenId",
    "UnrecognizedClientException",
    "SignatureDoesNotMatch",
)
NO_CREDENTIALS = (
    "no AWS credentials: the live review reads the deployed templates with the target account's credentials "
    "(AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY); `make review` without LIVE compares with "
    "your accepted baseline, offline"
)
_ASSET_HASH = re.compile(r"[0-9a-f]{64}")
_UNKNOWN = ("unknown-account", "unknown-region")

# (service, region, credentials or None for the default chain) -> a boto3 client; tests pass stubbed ones.
Clients = Callable[[str, str, Mapping[str, str] | None], Any]


class LiveError(ReviewError):
    """What stops the live review; ``str(err)`` is the one line to show."""


@dataclass(frozen=True)
class AppStack:
    """A top-level stack of the synthesized app, as the cloud assembly's manifest describes it."""

    name: str  # the CloudFormation stack name
    template: str  # the synth's template name, as the review names templates (``eks-karpenter.template``)
    account: str | None  # None: environment-agnostic
    region: str | None
    lookup_role: str | None  # the CDK bootstrap lookup role, ${AWS::...} placeholders unresolved


@dataclass
class Deployed:
    """A stack as deployed: its status (None: no such stack) and its templates by the synth's names."""

    stack: AppStack
    where: str  # <account>/<region>
    status: str | None = None
    templates: dict[str, dict[str, Any]] = field(default_factory=dict)


def app_stacks(outdir: Path) -> list[AppStack]:
    """Every top-level stack of the cloud assembly in ``outdir`` (the stages' nested assemblies included)."""
    manifest = json.loads((outdir / "manifest.json").read_text())
    found: list[AppStack] = []
    for artifact_id, artifact in sorted(manifest.get("artifacts", {}).items()):
        properties = artifact.get("properties", {})
        if artifact.get("type") == "cdk:cloud-assembly":
            found += app_stacks(outdir / properties["directoryName"])
        elif artifact.get("type") == "aws:cloudformation:stack":
            account, region = str(artifact.get("environment", "aws://unknown-account/unknown-region"))[6:].split("/")
            found.append(
                AppStack(
                    name=properties.get("stackName", artifact_id),
                    template=str(properties["templateFile"]).removesuffix(".json"),
                    account=None if account in _UNKNOWN else account,
                    region=None if region in _UNKNOWN else region,
                    lookup_role=(properties.get("lookupRole") or {}).get("arn"),
                )
            )
    return found


def asset_templates(outdir: Path) -> dict[str, str]:
    """Asset hash -> template name of every nested template in the cloud assembly (its asset manifests)."""
    names: dict[str, str] = {}
    for path in outdir.rglob("*.assets.json"):
        for asset_hash, asset in json.loads(path.read_text()).get("files", {}).items():
            source = str(asset.get("source", {}).get("path", ""))
            if source.endswith(".nested.template.json"):
                names[asset_hash] = source.removesuffix(".json")
    return names


def nested_template(
    parent: str, logical_id: str, templates: Sequence[Mapping[str, Any] | None], hashes: Mapping[str, str]
) -> str:
    """The template name of the nested stack ``logical_id`` of template ``parent``: the asset its TemplateURL names
    in the first of ``templates`` (the synth's parent, then the deployed one) that has it; else the asset path CDK's
    CLI records in its metadata; else one made of the parent's and the resource's names (a nested stack the synth no
    longer has, named for the report only)."""
    for template in templates:
        resource = (template or {}).get("Resources", {}).get(logical_id, {})
        found = _ASSET_HASH.search(json.dumps(resource.get("Properties", {}).get("TemplateURL", "")))
        if found and found.group() in hashes:
            return hashes[found.group()]
        path = str(resource.get("Metadata", {}).get("aws:asset:path", ""))
        if path.endswith(".nested.template.json"):
            return path.removesuffix(".json")
    stem = re.sub(r"[^A-Za-z0-9]", "", parent.removesuffix(".template").removesuffix(".nested"))
    return f"{stem}{logical_id.split('NestedStack')[0]}.nested.template"


def stack_templates(template: str, new: Mapping[str, dict[str, Any]], hashes: Mapping[str, str]) -> list[str]:
    """The synth's templates of one stack: its own and its nested stacks' (recursively)."""
    names = [template]
    for logical_id, resource in new.get(template, {}).get("Resources", {}).items():
        if resource.get("Type") == "AWS::CloudFormation::Stack":
            child = nested_template(template, logical_id, [new[template]], hashes)
            if child in new:
                names += stack_templates(child, new, hashes)
    return names


def partition(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    return "aws-us-gov" if region.startswith("us-gov-") else "aws"


def session_policy(stack: str, account: str, region: str) -> dict[str, Any]:
    """What the assumed lookup role may do in the review's session: read this stack and its nested stacks (named
    ``<stack>-<nested id>-<suffix>``) and nothing else, whatever the role itself allows."""
    arn = f"arn:{partition(region)}:cloudformation:{region}:{account}:stack"
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": list(READ_ACTIONS),
                "Resource": [f"{arn}/{stack}/*", f"{arn}/{stack}-*/*"],
            }
        ],
    }


@contextmanager
def calling(what: str) -> Iterator[None]:
    """AWS errors of ``what`` as one line each (LiveError)."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    try:
        yield
    except NoCredentialsError as err:
        raise LiveError(NO_CREDENTIALS) from err
    except ClientError as err:
        code, message = err.response.get("Error", {}).get("Code", "?"), err.response.get("Error", {}).get("Message")
        if code in DENIED:
            raise LiveError(
                f"access denied to {what} ({code}: {message}); the live review needs "
                f"{', '.join(READ_ACTIONS)} on the app's stacks (or sts:AssumeRole on the lookup role with "
                "--lookup-role)"
            ) from err
        raise LiveError(f"{what}: {code}: {message}") from err
    except BotoCoreError as err:
        raise LiveError(f"{what}: {err}") from err


def boto3_clients(service: str, region: str, credentials: Mapping[str, str] | None) -> Any:
    import boto3

    return boto3.client(service, region_name=region, **(credentials or {}))


@dataclass
class Connection:
    """How the review reaches each stack's account: the default credentials, or (``lookup_role``) the stack's CDK
    bootstrap lookup role assumed with them, narrowed by :func:`session_policy`."""

    region: str | None  # for environment-agnostic stacks: --region, or the default one (AWS_REGION, the profile)
    lookup_role: bool
    clients: Clients = boto3_clients

    def cloudformation(self, stack: AppStack) -> tuple[Any, str]:
        """A CloudFormation client in the stack's account and region, and ``<account>/<region>``."""
        region = stack.region or self.region
        if region is None:
            raise LiveError(f"stack {stack.name} names no region: pass --region (or set AWS_REGION)")
        sts = self.clients("sts", region, None)
        with calling("sts:GetCallerIdentity"):
            caller = str(sts.get_caller_identity()["Account"])
        account = stack.account or caller
        if not self.lookup_role:
            if account != caller:
                raise LiveError(
                    f"the credentials are for account {caller}, and stack {stack.name} is deployed in account "
                    f"{account}: use that account's credentials, or --lookup-role"
                )
            return self.clients("cloudformation", region, None), f"{account}/{region}"
        if stack.lookup_role is None:
            raise LiveError(f"stack {stack.name} names no CDK bootstrap lookup role (its synthesizer has none)")
        role = (
            stack.lookup_role.replace("${AWS::Partition}", partition(region))
            .replace("${AWS::AccountId}", account)
            .replace("${AWS::Region}", region)
        )
        with calling(f"sts:AssumeRole on {role}"):
            assumed = sts.assume_role(
                RoleArn=role,
                RoleSessionName="live-review",
                Policy=json.dumps(session_policy(stack.name, account, region)),
                DurationSeconds=900,
            )["Credentials"]
        credentials = {
            "aws_access_key_id": assumed["AccessKeyId"],
            "aws_secret_access_key": assumed["SecretAccessKey"],
            "aws_session_token": assumed["SessionToken"],
        }
        return self.clients("cloudformation", region, credentials), f"{account}/{region}"


def _template(body: Any, stack: str) -> dict[str, Any]:
    """GetTemplate's body: boto3 hands a JSON template over parsed, a string otherwise."""
    if isinstance(body, dict):
        return body
    try:
        parsed = json.loads(body)
    except (TypeError, ValueError) as err:
        raise LiveError(f"stack {stack}: its deployed template is not JSON (not one `cdk deploy` wrote)") from err
    return parsed if isinstance(parsed, dict) else {}


def read_stack(
    cloudformation: Any, deployed: Deployed, new: Mapping[str, dict[str, Any]], hashes: Mapping[str, str]
) -> Deployed:
    """``deployed`` filled in: its status and templates (none when the stack does not exist or holds nothing)."""
    name = deployed.stack.name
    described = _describe(cloudformation, name, deployed.where)
    if described is None:
        return deployed  # a first deploy
    deployed.status = str(described["StackStatus"])
    if deployed.status in NOT_DEPLOYED:
        return deployed
    if deployed.status.endswith("_IN_PROGRESS") or deployed.status in STUCK:
        raise LiveError(
            f"stack {name} in {deployed.where} is {deployed.status}: CloudFormation takes no deploy until it is "
            "stable (a *_FAILED stack needs recovering first, e.g. continue-update-rollback)"
        )
    _read_templates(cloudformation, str(described["StackId"]), deployed.stack.template, deployed, new, hashes)
    return deployed


def _describe(cloudformation: Any, name: str, where: str) -> dict[str, Any] | None:
    """DescribeStacks of one stack; None when there is no such stack."""
    from botocore.exceptions import ClientError

    with calling(f"cloudformation:DescribeStacks of {name} in {where}"):
        try:
            (described,) = cloudformation.describe_stacks(StackName=name)["Stacks"]
        except ClientError as err:
            error = err.response.get("Error", {})
            if error.get("Code") == "ValidationError" and "does not exist" in str(error.get("Message")):
                return None
            raise
    return dict(described)


def _read_templates(
    cloudformation: Any,
    stack_id: str,
    template: str,
    deployed: Deployed,
    new: Mapping[str, dict[str, Any]],
    hashes: Mapping[str, str],
) -> None:
    """The deployed template of ``stack_id`` under the synth's name ``template``, then its nested stacks'."""
    with calling(f"cloudformation:GetTemplate of {stack_id}"):
        body = cloudformation.get_template(StackName=stack_id, TemplateStage=TEMPLATE_STAGE)["TemplateBody"]
    deployed.templates[template] = _template(body, stack_id)
    nested = []
    with calling(f"cloudformation:ListStackResources of {stack_id}"):
        for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_id):
            nested += [
                r
                for r in page["StackResourceSummaries"]
                if r["ResourceType"] == "AWS::CloudFormation::Stack" and r.get("PhysicalResourceId")
            ]
    for resource in nested:
        logical_id = resource["LogicalResourceId"]
        child = nested_template(template, logical_id, [new.get(template), deployed.templates[template]], hashes)
        _read_templates(cloudformation, resource["PhysicalResourceId"], child, deployed, new, hashes)


def refusals(context: Mapping[str, Any], file_context: Mapping[str, Any], deployed: Sequence[Deployed]) -> list[str]:
    """What the synth guard (karpenter_stack/baseline.py) refuses of each environment's configuration with its
    deployed stack's templates as the baseline (written to a temporary baseline folder, as it reads them)."""
    from karpenter_stack import baseline
    from karpenter_stack.config import stack_name_for
    from karpenter_stack.config.load import load_environments

    by_name = {d.stack.name: d for d in deployed if d.templates}
    problems = []
    configs = load_environments(context, file_context=file_context)
    as_deployed = load_environments(context, file_context=file_context, deployed=_deployed_modes(by_name))
    for environment, config in configs.items():
        stack = stack_name_for(config.cluster_name)
        if stack not in by_name:
            continue
        problems += _kept_mode(config, as_deployed[environment], stack, environment)
        with tempfile.TemporaryDirectory(prefix="live-baseline-") as root:
            folder = Path(root) / baseline.BASELINE_DIR
            folder.mkdir()
            top = by_name[stack].templates[by_name[stack].stack.template]
            (folder / f"{stack}.template.json").write_text(json.dumps(top))
            found = baseline.refusals(config, stack, Path(root))
        where = f"{baseline.BASELINE_DIR}/{stack}.template.json"
        problems += [
            p.replace(where, f"stack {stack} as deployed") + (f" (environment {environment})" if environment else "")
            for p in found
        ]
    return problems


def _deployed_modes(by_name: Mapping[str, Deployed]) -> Callable[[str], tuple[str, str | None] | None]:
    """The deployed stacks' authentication modes, as the production profile reads a baseline's (it keeps them)."""
    from karpenter_stack.baseline import CLUSTER_TYPE

    def mode(stack: str) -> tuple[str, str | None] | None:
        found = by_name.get(stack)
        resources = found.templates[found.stack.template].get("Resources", {}) if found else {}
        configs = [r["Properties"].get("Config", {}) for r in resources.values() if r.get("Type") == CLUSTER_TYPE]
        if not configs:
            return None
        return f"stack {stack} as deployed", (configs[0].get("accessConfig") or {}).get("authenticationMode")

    return mode


def _kept_mode(config: Any, as_deployed: Any, stack: str, environment: str) -> list[str]:
    """The production profile keeps a deployed cluster's authentication mode, as far as the accepted baseline says
    what is deployed: without one (or with one that does not record the deployed stack), the synth chose a new
    cluster's mode, which would move the running cluster one way."""
    if config.authentication_mode == as_deployed.authentication_mode:
        return []
    from karpenter_stack.config.access_steps import DOCS

    old, new = as_deployed.authentication_mode, config.authentication_mode
    return [
        f"authenticationMode {json.dumps(new) if new else 'unset'} (the production profile's): stack {stack} as "
        f"deployed is on {json.dumps(old) if old else 'unset (CONFIG_MAP)'}, which the profile keeps, but your accepted "
        "baseline does not record it, so the synth took a new cluster's mode and the deploy would move the cluster "
        f"one way; write authenticationMode {json.dumps(old)} to keep it, or move it on purpose ({DOCS})"
        + (f" (environment {environment})" if environment else "")
    ]


def select(stacks: Sequence[AppStack], names: Sequence[str]) -> list[AppStack]:
    """The stacks named (all of them when none is)."""
    unknown = sorted(set(names) - {s.name for s in stacks})
    if unknown:
        raise LiveError(f"no stack {', '.join(unknown)} in the app (its stacks: {', '.join(s.name for s in stacks)})")
    return [s for s in stacks if not names or s.name in names]


def read(
    stacks: Sequence[AppStack], connection: Connection, outdir: Path, new: Mapping[str, dict[str, Any]]
) -> list[Deployed]:
    """Every stack as deployed, each in its account and region."""
    hashes = asset_templates(outdir)
    found = []
    for stack in stacks:
        cloudformation, where = connection.cloudformation(stack)
        found.append(read_stack(cloudformation, Deployed(stack, where), new, hashes))
    return found


def compared(deployed: Sequence[Deployed]) -> list[str]:
    """The report's lines on what it compared with."""
    lines = [f"Compared with the deployed stacks (CloudFormation GetTemplate, TemplateStage {TEMPLATE_STAGE}):", ""]
    for d in deployed:
        if not d.templates:
            state = "does not exist" if d.status is None else f"{d.status}, nothing deployed"
            lines.append(f"- {d.stack.name} in {d.where}: {state}; the deploy creates it (a first deploy)")
        else:
            lines.append(f"- {d.stack.name} in {d.where}: {d.status}, {len(d.templates)} templates (nested included)")
    return lines


def report(
    deployed: Sequence[Deployed],
    new: Mapping[str, dict[str, Any]],
    hashes: Mapping[str, str],
    acknowledged: Mapping[str, str],
    refused: Sequence[str],
) -> tuple[str, bool]:
    """The review of the synth's templates of the stacks read over their deployed ones, and whether it fails."""
    old = {name: t for d in deployed for name, t in d.templates.items()}
    names = {n for d in deployed for n in stack_templates(d.stack.template, new, hashes)}
    text, blocking, failing = render(review(old, {n: new[n] for n in sorted(names)}), acknowledged)
    head, _, rest = text.partition("\n\n")
    lines = [head, "", *compared(deployed), "", rest.rstrip("\n")]
    if refused:
        lines += ["", "**Refused** against the deployed stacks (the synth guard, karpenter_stack/baseline.py):", ""]
        lines += [f"- {p}" for p in refused]
    return "\n".join(lines) + "\n", bool(blocking or failing or refused)


def main(
    options: Any,
    context: Mapping[str, Any],
    file_context: Mapping[str, Any],
    outdir: Path,
    acknowledged: Mapping[str, str],
) -> int:
    """The live review of the synth in ``outdir``: 0 passes, 1 blocked, failing or refused, 2 an error (one line)."""
    from .synth import synthesized_templates

    new = synthesized_templates(outdir)
    try:
        stacks = select(app_stacks(outdir), options.stack)
        connection = Connection(options.region or _default_region(), options.lookup_role, boto3_clients)
        deployed = read(stacks, connection, outdir, new)
        refused = refusals(context, file_context, deployed)
    except LiveError as err:
        print(f"review --live: {err}", file=sys.stderr)
        return 2
    text, fails = report(deployed, new, asset_templates(outdir), acknowledged, refused)
    print(text, end="")
    if options.output:
        options.output.write_text(text)
    return 1 if fails else 0


def _default_region() -> str | None:
    """The region the user names: AWS_REGION (what the AWS CLI v2 and the CDK CLI read first; botocore 1.44 reads
    only AWS_DEFAULT_REGION and the profile -- found by a newcomer trial), then the default chain's."""
    import boto3

    with calling("your AWS configuration"):  # a profile that does not exist (AWS_PROFILE) is one line, not a traceback
        region = os.environ.get("AWS_REGION") or boto3.Session().region_name
    return str(region) if region else None
