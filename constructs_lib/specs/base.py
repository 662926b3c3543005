"""The base model of every spec and the generic validators: Kubernetes names, label keys and values,
quantities, patterns, and how a message echoes a user's value."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Annotated, ClassVar, overload

from pydantic import BaseModel, BeforeValidator, ConfigDict
from pydantic.alias_generators import to_camel

from ..names import KARPENTER_AWS_WELL_KNOWN_LABELS, KARPENTER_SH_LABELS_ALLOWED
from ..quantities import parse_quantity

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# A Kubernetes qualified name (label keys, taint keys, resource names): an optional DNS prefix/, then a name.
QUALIFIED_NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
_ASCII_DIGITS = re.compile(r"[0-9]+")


class CamelModel(BaseModel):
    """Frozen, no unknown keys, camelCase aliases (the JSON and context spelling)."""

    # What the configuration reference's section of this model adds to its title, in parentheses ("" for nothing).
    REFERENCE_NOTE: ClassVar[str] = ""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
    )


def quoted(value: object) -> str:
    """A user's value as a message echoes it: a Python literal, so a newline or any other control or
    invisible character shows escaped and a message stays one line per problem. Every message that
    echoes a value goes through here (tests/test_message_hygiene.py)."""
    return repr(value) if isinstance(value, str) else json.dumps(value, default=str)


def named(key: str) -> str:
    """A key a message names: bare when it is a plain name (cpu, example.com/device), else quoted like a
    value (a stray space or newline shows)."""
    return key if _PLAIN_NAME.fullmatch(key) else quoted(key)


def ascii_int(value: str) -> bool:
    """A whole number of ASCII digits, as Go's strconv and CEL's int() read one (str.isdigit also takes
    '１' and '٣')."""
    return _ASCII_DIGITS.fullmatch(value) is not None


def int_or_string(value: object) -> object:
    """A JSON integer given where the CRD types the field x-kubernetes-int-or-string, as its string."""
    return str(value) if type(value) is int else value


# A field the CRD types x-kubernetes-int-or-string (NodePool limits, NodeOverlay capacity): "4" or 4.
IntOrString = Annotated[str, BeforeValidator(int_or_string)]


def kubernetes_name(value: str) -> str:
    """A Kubernetes object name (a DNS subdomain)."""
    if not _DNS_SUBDOMAIN.fullmatch(value) or len(value) > 253:
        raise ValueError("must be a lowercase DNS subdomain (a-z, 0-9, '-', '.')")
    return value


def non_negative_quantities(value: dict[str, str], what: str = "") -> dict[str, str]:
    """Every value a Kubernetes quantity of at least zero (limits, reservations)."""
    for resource, quantity in value.items():
        try:
            amount = parse_quantity(quantity)
        except ValueError as err:
            raise ValueError(f"{what}{named(resource)} {quoted(quantity)} {err}") from None
        if amount < 0:
            raise ValueError(f"{what}{named(resource)} {quoted(quantity)} must not be negative")
    return value


@overload
def optional_match(value: str, pattern: re.Pattern[str], message: str) -> str: ...
@overload
def optional_match(value: str | None, pattern: re.Pattern[str], message: str) -> str | None: ...
def optional_match(value: str | None, pattern: re.Pattern[str], message: str) -> str | None:
    """``value`` when it is unset or matches ``pattern`` in full; else ValueError(message)."""
    if value is not None and not pattern.fullmatch(value):
        raise ValueError(message)
    return value


def label_value(value: str) -> str:
    """A Kubernetes label value (also a requirement value): at most 63 characters of the allowed set."""
    if not _LABEL_VALUE.fullmatch(value):
        raise ValueError(f"label value {quoted(value)} must be at most 63 characters of a-z, A-Z, 0-9, '-', '_', '.'")
    return value


def label_key(
    key: str, *, aws_labels: Sequence[str] = KARPENTER_AWS_WELL_KNOWN_LABELS, node_pool_key: bool = False
) -> str:
    """A label or requirement key Karpenter accepts (not one of its restricted keys). ``aws_labels``: the
    karpenter.k8s.aws keys the object's CRD allows; ``node_pool_key``: karpenter.sh/nodepool may be
    required (a NodeOverlay's requirements; a pool's nodes get it from Karpenter)."""
    if not QUALIFIED_NAME.fullmatch(key) or len(key) > 316:
        raise ValueError(
            f"{quoted(key)} is not a Kubernetes label key (optional DNS prefix/, then a name of at most 63 characters)"
        )
    if key == "kubernetes.io/hostname" or key == "karpenter.sh/nodepool" and not node_pool_key:
        raise ValueError(f"{quoted(key)} is a label key Karpenter sets itself; it cannot be set or required here")
    domain = key.split("/", 1)[0]
    if domain.endswith("karpenter.sh") and key not in KARPENTER_SH_LABELS_ALLOWED:
        raise ValueError(
            f'{quoted(key)}: label domain "karpenter.sh" is restricted (allowed there: '
            f"karpenter.sh/capacity-type{', karpenter.sh/nodepool' if node_pool_key else ''})"
        )
    if domain.endswith("karpenter.k8s.aws") and key not in aws_labels:
        raise ValueError(
            f'{quoted(key)}: label domain "karpenter.k8s.aws" is restricted to Karpenter\'s well-known '
            "labels (karpenter.k8s.aws/instance-family, -category, -generation, -size, -cpu, -memory, "
            f"...{'' if aws_labels is KARPENTER_AWS_WELL_KNOWN_LABELS else '; for node overlays not tenancy, capacity-reservation or placement-group keys'})"
        )
    return key
