"""Selector terms of an EC2NodeClass: which subnets, security groups, capacity reservations and images it uses
(spec.subnetSelectorTerms, securityGroupSelectorTerms, capacityReservationSelectorTerms, amiSelectorTerms)."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from . import ami
from .base import CamelModel, optional_match, quoted
from .ec2 import MAX_TAG_KEY, MAX_TAG_VALUE, ec2_id, ec2_tag_characters

# Most tags one selector term may match on (the CRDs' maxProperties), and most terms of one kind.
MAX_SELECTOR_TAGS, MAX_SELECTOR_TERMS = 20, 30


def selector_tags(value: dict[str, str]) -> dict[str, str]:
    """Tags a selector term matches (a value '*' matches any value of the key)."""
    if len(value) > MAX_SELECTOR_TAGS:
        raise ValueError(f"a selector term matches at most {MAX_SELECTOR_TAGS} tags (has {len(value)})")
    for key, tag in value.items():
        if not key or not tag:
            raise ValueError(f"tag {quoted(key)}: empty keys and values select nothing (use '*' for any value)")
        ec2_tag_characters(key, tag)
        if len(key) > MAX_TAG_KEY or len(tag) > MAX_TAG_VALUE:  # no EC2 resource carries such a tag
            raise ValueError(
                f"tag {quoted(key)}: EC2 allows keys of at most {MAX_TAG_KEY} and values of at most "
                f"{MAX_TAG_VALUE} characters, so it would select nothing"
            )
    return value


def exactly_one(term: BaseModel, fields: tuple[str, ...], what: str) -> None:
    """A selector term selects by exactly one of ``fields`` (camelCase names in the message)."""
    chosen = [f for f in fields if getattr(term, f)]
    if len(chosen) != 1:
        names = [to_camel(f) for f in fields]
        raise ValueError(
            f"a {what} selector term selects by exactly one of {', '.join(names)} "
            f"(has {', '.join(to_camel(f) for f in chosen) or 'none'})"
        )


class SelectorTermSpec(CamelModel):
    """What selector terms share: an EC2 id of the term's kind (ID_KIND), tags to match."""

    ID_KIND: ClassVar[str]

    @field_validator("id", check_fields=False)
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        return ec2_id(cls.ID_KIND, value)

    @field_validator("tags", check_fields=False)
    @classmethod
    def _tags(cls, value: dict[str, str]) -> dict[str, str]:
        return selector_tags(value)


class SubnetTermSpec(SelectorTermSpec):
    """One more subnetSelectorTerms entry: a subnet by id, or subnets by tags."""

    REFERENCE_NOTE: ClassVar[str] = "exactly one key each"

    id: str | None = Field(None, description="A subnet id (subnet-...).")
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="Tags the subnets carry, read as EC2 filters: `*` and `?` are wildcards anywhere in keys and values "
        "(`*` alone: any value; a backslash before one makes it literal).",
    )

    ID_KIND: ClassVar[str] = "subnet"

    @model_validator(mode="after")
    def _one(self) -> SubnetTermSpec:
        exactly_one(self, ("id", "tags"), "subnet")
        return self


class SecurityGroupTermSpec(SelectorTermSpec):
    """One more securityGroupSelectorTerms entry: a group by id or by name, or groups by tags."""

    REFERENCE_NOTE: ClassVar[str] = "exactly one key each"

    id: str | None = Field(None, description="A security group id (sg-...).")
    name: str | None = Field(
        None,
        description="A security group name (its GroupName, not its Name tag), in any VPC of the region; `*` and `?` "
        "are EC2 wildcards in it.",
    )
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="Tags the groups carry, read as EC2 filters: `*` and `?` are wildcards anywhere in keys and values "
        "(`*` alone: any value; a backslash before one makes it literal).",
    )

    ID_KIND: ClassVar[str] = "sg"

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and not 1 <= len(value) <= 255:
            raise ValueError("a security group name has 1 to 255 characters")
        return value

    @model_validator(mode="after")
    def _one(self) -> SecurityGroupTermSpec:
        exactly_one(self, ("id", "name", "tags"), "security group")
        return self


class CapacityReservationTermSpec(SelectorTermSpec):
    """One capacityReservationSelectorTerms entry: a reservation by id, or reservations by tags (and owner)
    or by instance match criteria."""

    id: str | None = Field(None, description="A capacity reservation id (cr-...).")
    tags: dict[str, str] = Field(default_factory=dict, description="Tags the reservations carry ('*': any value).")
    owner_id: str | None = Field(
        None,
        alias="ownerID",
        description="Account that owns the reservations (shared ones); with tags or instanceMatchCriteria.",
    )
    instance_match_criteria: Literal["open", "targeted"] | None = Field(
        None, description="open: reservations any matching instance may use; targeted: only instances naming them."
    )

    ID_KIND: ClassVar[str] = "cr"

    @field_validator("owner_id")
    @classmethod
    def _owner(cls, value: str | None) -> str | None:
        return optional_match(value, re.compile(r"[0-9]{12}"), "must be a 12-digit AWS account id")

    @model_validator(mode="after")
    def _one(self) -> CapacityReservationTermSpec:
        if self.id is not None and (self.tags or self.owner_id or self.instance_match_criteria):
            raise ValueError(
                "a capacity reservation selector term with an id takes no tags, ownerID or instanceMatchCriteria"
            )
        if self.id is None and not self.tags and self.instance_match_criteria is None:
            raise ValueError("a capacity reservation selector term needs an id, tags or instanceMatchCriteria")
        if self.owner_id is not None and not self.tags and self.instance_match_criteria is None:
            raise ValueError("ownerID narrows a selection: set tags or instanceMatchCriteria too")
        return self


class AmiTermSpec(SelectorTermSpec):
    """One amiSelectorTerms entry (Karpenter's own shape): an image by id; images by name (and owner), by tags
    (and owner) or by an SSM parameter; or an EKS-optimized alias, alone. The fields of a term are ANDed, the
    terms ORed; of several matching images Karpenter takes the newest that fits the instance's architecture."""

    alias: str | None = Field(None, description="family@version, as amiAlias; the only term when given.")
    id: str | None = Field(None, description="An image id (ami-...): pinned, it never moves.")
    name: str | None = Field(None, description="An image name ('*' wildcards); with owner, else owners self,amazon.")
    owner: str | None = Field(None, description="Owner of the images: account ids, self, amazon or aws-marketplace.")
    tags: dict[str, str] = Field(default_factory=dict, description="Tags the images carry ('*': any value).")
    ssm_parameter: str | None = Field(
        None, alias="ssmParameter", description="An SSM parameter (name or ARN) whose value is an image id."
    )

    ID_KIND: ClassVar[str] = "ami"

    @field_validator("alias")
    @classmethod
    def _alias(cls, value: str | None) -> str | None:
        return None if value is None else ami.check_alias(value)

    @field_validator("owner")
    @classmethod
    def _owner(cls, value: str | None) -> str | None:
        return None if value is None else ami.check_owner(value)

    @field_validator("name", "ssm_parameter")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        if value is not None and not 1 <= len(value) <= 2048:
            raise ValueError("must have 1 to 2048 characters")
        return value

    @model_validator(mode="after")
    def _fields(self) -> AmiTermSpec:
        # Karpenter 1.14.1 CRD, amiSelectorTerms: at least one selecting field; id and alias each stand alone.
        if not (self.alias or self.id or self.name or self.tags or self.ssm_parameter):
            raise ValueError("an AMI selector term selects by alias, id, name, tags or ssmParameter")
        for alone in ("id", "alias"):
            others = [to_camel(f) for f in ("alias", "id", "name", "owner", "tags") if f != alone and getattr(self, f)]
            if getattr(self, alone) and others:
                raise ValueError(f"an AMI selector term with {alone} takes no {', '.join(others)} (the CRD's rule)")
        return self

    @property
    def pinned(self) -> bool:
        """The term selects one image whatever EC2 publishes later: an id, or an exact name of one account's
        (AMI names are unique per account and region)."""
        return self.id is not None or self.moves_by is None

    @property
    def moves_by(self) -> str | None:
        """What of the term selects new images as they are published (None: it selects one image)."""
        if self.id is not None:
            return None
        if self.ssm_parameter:
            return f"ssmParameter {quoted(self.ssm_parameter)} (its value can name a new image)"
        if self.tags:
            return "tags (a new image can carry them)"
        if self.alias:
            return None if not self.alias.endswith("@latest") else f"alias {quoted(self.alias)}"
        if self.name is not None and ("*" in self.name or "?" in self.name):
            return f"the name pattern {quoted(self.name)}"
        if self.owner is None or "," in self.owner or self.owner in ("amazon", "aws-marketplace"):
            return f"a name of {'owners ' + quoted(self.owner) if self.owner else 'owners self and amazon'} (AMI names are unique per account only)"
        return None
