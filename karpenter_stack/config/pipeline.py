"""The optional delivery pipeline (``pipeline`` in cdk.json): CDK Pipelines deploying the app's
environments in waves from a repository connection.

The pipeline is one per app, so ``pipeline`` is a top-level key only; which environments it delivers,
and that each of them names its account and region, is checked against the environments in ``validate``.
"""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field, ValidationInfo, field_validator, model_validator

from constructs_lib.karpenter.specs.base import CamelModel, optional_match
from constructs_lib.karpenter.specs.change import Change, change

from . import changes as facts
from .forms import _FORMATS as _APP_FORMATS
from .forms import _unique, formatted

# A CodeStar Connections / CodeConnections connection (the two service prefixes name the same thing).
_CONNECTION_ARN = re.compile(
    r"^arn:aws[a-z-]*:(codestar-connections|codeconnections):[a-z0-9-]+:[0-9]{12}:connection/[0-9a-f-]{36}$"
)
# owner/name, or group/subgroup/name on GitLab: what the connection's source action calls FullRepositoryId.
_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+$")
# A git branch name: no spaces, '..', '~', '^', ':', '?', '*', '[', '\', no leading '-' or '/', no '.lock' end.
_BRANCH = re.compile(r"^(?!-)(?!/)(?!.*\.\.)(?!.*//)(?!.*\.lock$)(?!.*/$)[^\s~^:?*\[\\]{1,200}$", re.ASCII)
# A CodePipeline stage name (a wave is a stage): letters, digits and . @ - _, at most 100 characters.
_STAGE_NAME = re.compile(r"^[A-Za-z0-9.@_-]{1,100}$")
# The pipeline's name (also its stack's): a CodePipeline name that is also a CloudFormation stack name.
_PIPELINE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,99}$")


# Settings with one form -> that form and the message naming it.
_FORMATS = {
    "connection_arn": (
        _CONNECTION_ARN,
        "must be a connection ARN like arn:aws:codeconnections:<region>:<account>:connection/<uuid>",
    ),
    "repository": (_REPOSITORY, "must be owner/name (letters, digits, '.', '-', '_')"),
    "branch": (_BRANCH, "must be a git branch name like main or release/1.x"),
    "account": _APP_FORMATS["account"],
    "region": _APP_FORMATS["region"],
    "name": (_PIPELINE_NAME, "must start with a letter and contain only letters, digits and '-' (at most 100)"),
}


class WaveSpec(CamelModel):
    """One wave of the pipeline: its environments deploy in parallel, after the previous wave."""

    name: str = Field(
        description="Wave (pipeline stage) name, e.g. dev or production.",
        json_schema_extra=change(
            Change.IN_PLACE,
            "a stage of the AWS::CodePipeline::Pipeline",
            facts.PIPELINE_WAVES,
            not_moved=facts.NOT_MOVED_PIPELINE,
        ),
    )
    environments: list[str] = Field(
        min_length=1,
        description="Environments (keys of environments) it deploys.",
        json_schema_extra=change(
            Change.IN_PLACE, "the deploy actions of the stage", facts.PIPELINE_WAVES, not_moved=facts.NOT_MOVED_PIPELINE
        ),
    )
    approval: bool = Field(
        False,
        description="A manual approval in the pipeline before the wave deploys anything.",
        json_schema_extra=change(
            Change.IN_PLACE,
            "a manual approval action of the stage",
            facts.PIPELINE_WAVES,
            not_moved=facts.NOT_MOVED_PIPELINE,
        ),
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return optional_match(
            value, _STAGE_NAME, "must be 1-100 letters, digits, '.', '@', '-' or '_' (a CodePipeline stage name)"
        )

    @field_validator("environments")
    @classmethod
    def _environments(cls, value: list[str]) -> list[str]:
        _unique("environments", value)
        return value


class PipelineConfig(CamelModel):
    """A CDK Pipelines pipeline in its own account and region that synthesizes this app from a repository
    connection (running the README's test command and the security report first) and deploys the
    environments wave by wave."""

    REFERENCE_NOTE: ClassVar[str] = "the delivery pipeline; top level only"

    connection_arn: str = Field(
        description="CodeConnections (CodeStar Connections) connection to the repository host; "
        "created and authorized in the console first.",
        json_schema_extra=change(
            Change.IN_PLACE, "the pipeline's source action", facts.PIPELINE_SOURCE, not_moved=facts.NOT_MOVED_PIPELINE
        ),
    )
    repository: str = Field(
        description="Repository the pipeline builds, as owner/name.",
        json_schema_extra=change(
            Change.IN_PLACE, "the pipeline's source action", facts.PIPELINE_SOURCE, not_moved=facts.NOT_MOVED_PIPELINE
        ),
    )
    branch: str = Field(
        "main",
        description="Branch whose pushes start the pipeline.",
        json_schema_extra=change(
            Change.IN_PLACE, "the pipeline's source action", facts.PIPELINE_SOURCE, not_moved=facts.NOT_MOVED_PIPELINE
        ),
    )
    account: str = Field(
        description="AWS account id of the pipeline (the tooling account).",
        json_schema_extra=change(
            Change.ANOTHER_STACK,
            "the pipeline stack's env",
            facts.STACK_ENVIRONMENT,
            not_moved=facts.NOT_MOVED_PIPELINE,
        ),
    )
    region: str = Field(
        description="AWS region of the pipeline.",
        json_schema_extra=change(
            Change.ANOTHER_STACK,
            "the pipeline stack's env",
            facts.STACK_ENVIRONMENT,
            not_moved=facts.NOT_MOVED_PIPELINE,
        ),
    )
    name: str | None = Field(
        None,
        description="Pipeline and pipeline stack name (unset: <clusterName>-delivery).",
        json_schema_extra=change(
            Change.ANOTHER_STACK, "the pipeline stack's name", facts.PIPELINE_NAME, not_moved=facts.NOT_MOVED_PIPELINE
        ),
    )
    waves: list[WaveSpec] = Field(
        min_length=1,
        description="Waves in order; every environment is in exactly one.",
        json_schema_extra=change(
            Change.BY_FIELD, "the pipeline's stages", facts.BY_FIELD, not_moved=facts.NOT_MOVED_PIPELINE
        ),
    )

    @field_validator(*_FORMATS)
    @classmethod
    def _format(cls, value: str | None, info: ValidationInfo) -> str | None:
        return formatted(_FORMATS, value, info)

    @model_validator(mode="after")
    def _waves(self) -> PipelineConfig:
        _unique("waves", [w.name for w in self.waves])
        return self

    def pipeline_name(self, cluster_name: str) -> str:
        return self.name or f"{cluster_name.replace('_', '-')}-delivery"
