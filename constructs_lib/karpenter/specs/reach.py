"""How far a subnet or security group selector term reaches, read as EC2 reads it.

Karpenter sends each term to EC2 as describe filters (aws/karpenter-provider-aws, ``getFilterSets`` of
``pkg/providers/subnet/subnet.go`` and ``pkg/providers/securitygroup/securitygroup.go``, alike in the v1.x sources
read; not re-read at the 1.14.1 tag): an ``id`` becomes a ``subnet-id`` or ``group-id`` filter, a ``name`` a
``group-name`` filter, each tag a ``tag:<key>`` filter with its value -- or, for the value ``*``, a ``tag-key``
filter with the key; the filters of a term are ANDed, the terms ORed. No filter names a VPC: a term reaches every
subnet or security group of the account in the region.

EC2 reads every filter value as a pattern (EC2 API Reference, "Filter" and the Describe* actions' "Wildcards": ``*``
matches zero or more characters, ``?`` one; a backslash makes the next character literal, ``\\*`` a ``*``). So ``*``
and ``?`` are wildcards anywhere in a tag value, in a name, and in the key of a ``tag-key`` filter. In a
``tag:<key>`` filter name EC2 documents no wildcards; a key with one is read as a pattern here all the same (the
reading that cannot reach less than EC2 does). Ids cannot hold a wildcard (the CRDs' patterns, ``ec2.EC2_ID``).

A term is bounded when it reaches only what it names: an id, exact values, or the cluster's own discovery tag
(``karpenter.sh/discovery: <cluster>``, on the cluster's private subnets and its security group) ANDed with
anything. A term with a wildcard elsewhere reaches resources nobody named: subnets of any VPC, public ones among them,
and other workloads' security groups. A subnet term that can match a tag marking public subnets reaches those
(whatever else it ANDs). What the synth cannot see it cannot judge: which subnets carry an exact tag, or whether a
subnet named by id is public.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..names import CLUSTER_NAME_PLACEHOLDER, DISCOVERY_TAG_KEY
from .base import quoted

SUBNET, SECURITY_GROUP = "subnet", "security group"

# Tags that mark public subnets: aws-cdk's subnet type (aws-ec2 Vpc tags every subnet aws-cdk:subnet-type), and the
# role tag of subnets for internet-facing load balancers (EKS User Guide, "Subnet requirements and considerations":
# kubernetes.io/role/elb on public subnets). (None: any value.)
PUBLIC_SUBNET_TAGS: tuple[tuple[str, str | None], ...] = (
    ("aws-cdk:subnet-type", "Public"),
    ("kubernetes.io/role/elb", None),
)

# What a term may name instead of a pattern (the end of each message).
EXACT = "name exact values ('\\*' is a literal '*', '\\?' a '?'), or select by id"
PRIVATE = "select private subnets"

_BEYOND = {
    SUBNET: "in every VPC of the region, the public ones among them",
    SECURITY_GROUP: "in every VPC of the region, other workloads' among them",
}


def is_pattern(text: str) -> bool:
    """``text`` holds a ``*`` or ``?`` that no backslash makes literal: EC2 reads it as a pattern."""
    escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "*?":
            return True
    return False


def pattern_matches(pattern: str, text: str) -> bool:
    """EC2 would match ``text`` with the filter value ``pattern`` (``?`` read as at most one character: EC2's
    guides say "zero or one", its API reference "exactly one"; the wider reading)."""
    parts, escaped = [], False
    for char in pattern:
        if escaped:
            parts.append(re.escape(char))
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "*":
            parts.append(".*")
        elif char == "?":
            parts.append(".?")
        else:
            parts.append(re.escape(char))
    if escaped:  # a trailing backslash escapes nothing: itself
        parts.append(re.escape("\\"))
    return re.fullmatch("".join(parts), text, re.ASCII | re.DOTALL) is not None


@dataclass(frozen=True)
class Reach:
    """Where a term reaches beyond what it names: the field within the term (``tags.Name``, ``tags``, ``name``), the
    value as a message shows it, what EC2 selects by it, and whether that is public subnets."""

    field: str
    shown: str
    reading: str
    public: bool = False
    fix: str = ""  # what to write instead, when it is neither PRIVATE nor EXACT

    def refusal(self, setting: str) -> str:
        """The production profile's line for the term at ``setting`` (``nodeClasses[0].extraSubnetSelectorTerms[1]``)."""
        refuses = "which the production profile refuses" + (" for nodes" if self.public else "")
        return f"{setting}.{self.field} {self.shown}: {self.reading}, {refuses}; {self.allowed}"

    def warning(self, setting: str) -> str:
        """The other profiles' synth warning for the term at ``setting``."""
        return (
            f"{setting}.{self.field} {self.shown}: {self.reading}; {self.allowed} (the production profile refuses it)"
        )

    def opinion(self) -> str:
        """The message of a file's term (its path named before it)."""
        return f"{self.shown}: {self.reading}; {self.allowed}"

    @property
    def allowed(self) -> str:
        return self.fix or (PRIVATE if self.public else EXACT)


def term_reach(kind: str, term: Mapping[str, Any], cluster_name: str | None = None) -> list[Reach]:
    """Where one subnet (``kind`` SUBNET) or security group term, as Karpenter's CRD writes it, reaches beyond what it
    names (empty: bounded). A subnet term that can match a public subnet's tag is one Reach; else one per pattern."""
    written = term.get("tags")
    tags = {str(k): str(v) for k, v in written.items()} if isinstance(written, Mapping) else {}
    if kind == SUBNET:
        public = [m for k, v in tags.items() if (m := _public_marker(k, v)) is not None]
        if public:
            return [Reach("tags", json.dumps(tags), f"{', '.join(public)} marks public subnets", public=True)]
    discovery = tags.get(DISCOVERY_TAG_KEY)
    if cluster_name is not None and discovery is not None:
        # (a file's ${CLUSTER_NAME} is this cluster's name once the app fills it in)
        named = discovery.replace(CLUSTER_NAME_PLACEHOLDER, cluster_name)
        if named == cluster_name:
            return []  # ANDed with the cluster's own discovery tag: only what is the cluster's
        if not is_pattern(named):
            reading = f"the discovery tag of another cluster ({quoted(named)}): it selects that cluster's {kind}s, not this one's"
            fix = f"write this cluster's name ({quoted(cluster_name)}) or ${{CLUSTER_NAME}}, or select by id"
            return [Reach(f"tags.{DISCOVERY_TAG_KEY}", quoted(discovery), reading, fix=fix)]
    beyond = _BEYOND[kind]
    found = []
    name = term.get("name")
    if isinstance(name, str) and is_pattern(name):
        reading = (
            "'*' selects every security group in the region, other workloads' among them"
            if name == "*"
            else f"'*' and '?' are EC2 wildcards anywhere in a name: it selects every security group whose name "
            f"matches, {beyond}"
        )
        found.append(Reach("name", quoted(name), reading))
    for key, value in tags.items():
        if is_pattern(key):
            reading = f"'*' and '?' are EC2 wildcards in a tag key too: it selects every {kind} with a key that matches, {beyond}"
            found.append(Reach("tags", f"key {quoted(key)}", reading))
        elif value == "*":
            found.append(Reach(f"tags.{key}", quoted(value), f"'*' selects every {kind} tagged {key}, {beyond}"))
        elif is_pattern(value):
            reading = f"'*' and '?' are EC2 wildcards anywhere in a value: it selects every {kind} whose {key} tag matches, {beyond}"
            found.append(Reach(f"tags.{key}", quoted(value), reading))
    return found


def _public_marker(key: str, value: str) -> str | None:
    """How the tag ``key: value`` of a subnet term matches a tag of public subnets (None: it cannot)."""
    for marker, marked in PUBLIC_SUBNET_TAGS:
        if not pattern_matches(key, marker):
            continue
        if marked is None or value == "*" or pattern_matches(value, marked):
            if key == marker and (marked is None or value == marked):
                return marker
            return f"{key} {quoted(value)} (as EC2 reads it, {marker}{'' if marked is None else ': ' + marked})"
    return None


def selector_reach(
    subnet_terms: Sequence[Mapping[str, Any]],
    security_group_terms: Sequence[Mapping[str, Any]],
    cluster_name: str | None = None,
) -> list[tuple[str, int, Reach]]:
    """Every place the terms of one class reach beyond what they name: (SUBNET or SECURITY_GROUP, the term's index,
    the Reach), subnets first."""
    return [
        (kind, j, reach)
        for kind, terms in ((SUBNET, subnet_terms), (SECURITY_GROUP, security_group_terms))
        for j, term in enumerate(terms)
        for reach in term_reach(kind, term, cluster_name)
    ]
