"""The base model of every spec and the generic validators: Kubernetes names, label keys and values,
quantities, patterns, and how a message echoes a user's value."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, ClassVar, overload

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


def shown(value: object, render: Callable[[object], str] = quoted) -> str:
    """A value as a message echoes it (``render``: quoted by default), or its size when that would not fit on a
    line (a list's items, an object's keys), or its first 60 characters."""
    text = render(value)
    if len(text) <= 100:
        return text
    if isinstance(value, list):
        return f"[{len(value)} items]"
    if isinstance(value, dict):
        return f"{{{len(value)} keys}}"
    return text[:60] + "..." + text[-1:]


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


# --- labels and annotations on a Karpenter object itself (metadata.labels / metadata.annotations) -------------
#
# What the API server checks on any object's metadata (k8s.io/apimachinery pkg/api/validation/objectmeta.go,
# ValidateObjectMeta): every label key a qualified name and every value a label value (ValidateLabels); every
# annotation key, lowercased, a qualified name, and all annotations together at most TotalAnnotationSizeLimitB
# = 256 KiB, counted as the bytes of every key and value (ValidateAnnotations). A CRD cannot narrow them (only
# metadata.name), and Karpenter's 1.14.1 CRDs do not. What the app refuses besides, with why:
TOTAL_ANNOTATION_SIZE = 256 * 1024
# kubectl apply (aws-cdk-lib 2.275's kubectl handler: `kubectl create --save-config` on create, `kubectl apply`
# on update, kubectl-handler/apply/__init__.py) stores the whole object, as JSON, in this annotation: it counts
# towards the 256 KiB too.
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# Keys written on the object by someone else, who would overwrite (or be misled by) a value of ours.
OBJECT_KEYS_WRITTEN_BY_OTHERS: dict[str, str] = {
    # kubernetes-sigs/karpenter v1.14.1 pkg/apis/v1/labels.go NodePoolHashAnnotationKey and
    # NodePoolHashVersionAnnotationKey, written on every NodePool by pkg/controllers/nodepool/hash/controller.go
    # (a different hash version makes Karpenter re-stamp its NodeClaims' hashes: drift would be missed).
    "karpenter.sh/nodepool-hash": "Karpenter writes it on every NodePool (its drift hash)",
    "karpenter.sh/nodepool-hash-version": "Karpenter writes it on every NodePool (its drift hash's version)",
    # aws/karpenter-provider-aws v1.14.1 pkg/apis/v1/labels.go AnnotationEC2NodeClassHash(Version), written on
    # every EC2NodeClass by pkg/controllers/nodeclass/hash/controller.go.
    "karpenter.k8s.aws/ec2nodeclass-hash": "Karpenter writes it on every EC2NodeClass (its drift hash)",
    "karpenter.k8s.aws/ec2nodeclass-hash-version": "Karpenter writes it on every EC2NodeClass (its drift hash's version)",
    LAST_APPLIED: "kubectl apply writes it (the object as last applied)",
}
# Domains (and their subdomains) of keys the app refuses on the objects, with why.
OBJECT_RESERVED_DOMAINS: dict[str, str] = {
    # Kubernetes docs, "Labels and Selectors" (syntax and character set) and "Annotations": the kubernetes.io/
    # and k8s.io/ prefixes are reserved for Kubernetes core components; Karpenter refuses the same domains on
    # node labels (kubernetes-sigs/karpenter pkg/apis/v1/labels.go RestrictedLabelDomains).
    "kubernetes.io": "reserved for Kubernetes core components",
    "k8s.io": "reserved for Kubernetes core components",
    # Karpenter's API groups: it writes its own keys there on these objects (the hashes above).
    "karpenter.sh": "Karpenter's own (it writes karpenter.sh/nodepool-hash there)",
    "karpenter.k8s.aws": "Karpenter's own (it writes karpenter.k8s.aws/ec2nodeclass-hash there)",
    # aws-cdk-lib 2.275 aws-eks k8s-manifest.ts: every manifest gets the label aws.cdk.eks/prune-<id>, and its
    # handler's `kubectl apply --prune -l <that label>` deletes what else carries it.
    "aws.cdk.eks": "aws-cdk-lib's: it labels each manifest aws.cdk.eks/prune-<id> and deletes by that label",
}
# Exceptions under the reserved domains that Kubernetes documents for everyone's objects ("Well-Known Labels,
# Annotations and Taints"; "Recommended Labels"): app.kubernetes.io/* and the annotation kubernetes.io/description
# (upstream's examples/v1 NodePools carry it).
OBJECT_ALLOWED_DOMAINS = ("app.kubernetes.io",)
OBJECT_ALLOWED_ANNOTATIONS = ("kubernetes.io/description",)
_PRUNE_LABEL = 80  # bytes: ,"aws.cdk.eks/prune-<42 hex>":"" and, without other labels, "labels":{}


def qualified_name(key: str, what: str) -> str:
    """A Kubernetes qualified name (k8s.io/apimachinery pkg/util/validation IsQualifiedName): an optional prefix,
    a DNS subdomain of at most 253 characters, then '/' and a name of at most 63."""
    prefix = key.rsplit("/", 1)[0] if "/" in key else ""
    if not QUALIFIED_NAME.fullmatch(key) or len(prefix) > 253:
        raise ValueError(
            f"{what} {quoted(key)} is not a Kubernetes qualified name (an optional DNS prefix of at most 253 "
            "characters and '/', then a name of at most 63 characters of a-z, A-Z, 0-9, '-', '_', '.')"
        )
    return key


def _object_key(key: str, what: str, allowed: Sequence[str] = ()) -> None:
    """Not a key someone else writes on the object, nor one of a reserved domain (but the exceptions)."""
    if key in OBJECT_KEYS_WRITTEN_BY_OTHERS:
        raise ValueError(f"{what} {quoted(key)}: {OBJECT_KEYS_WRITTEN_BY_OTHERS[key]}; it cannot be set here")
    domain = key.split("/", 1)[0].lower() if "/" in key else ""
    if key in allowed or any(domain == d or domain.endswith("." + d) for d in OBJECT_ALLOWED_DOMAINS):
        return
    for reserved, why in OBJECT_RESERVED_DOMAINS.items():
        if domain == reserved or domain.endswith("." + reserved):
            exceptions = ", ".join([*(f"{d}/*" for d in OBJECT_ALLOWED_DOMAINS), *allowed])
            raise ValueError(
                f"{what} {quoted(key)}: the domain {reserved} is {why} (allowed there: {exceptions}); "
                "use a domain of your own, e.g. example.com/team"
            )


def object_labels(value: Mapping[str, str]) -> Mapping[str, str]:
    """Labels of a Karpenter object itself (metadata.labels): qualified keys, label values, no reserved domain."""
    for key, label in value.items():
        qualified_name(key, "label")
        _object_key(key, "label")
        label_value(label)
    return value


def object_annotations(
    value: Mapping[str, str], allowed: Sequence[str] = OBJECT_ALLOWED_ANNOTATIONS
) -> Mapping[str, str]:
    """Annotations of a Karpenter object itself (metadata.annotations): qualified keys (as the API server checks
    them, lowercased), no reserved domain but ``allowed``, at most 256 KiB together."""
    for key in value:
        qualified_name(key.lower(), "annotation")
        _object_key(key, "annotation", allowed)
    return annotations_fit(value)


def annotations_fit(value: Mapping[str, str], besides: int = 0, what: str = "annotations") -> Mapping[str, str]:
    """All annotations together within the API server's 256 KiB (``besides``: bytes of those written with them;
    ``what``: the setting a message names)."""
    size = besides + sum(len(k.encode()) + len(v.encode()) for k, v in value.items())
    if size > TOTAL_ANNOTATION_SIZE:
        copy = " with kubectl's copy of the object" if besides else ""
        raise ValueError(
            f"{what} of {size} bytes{copy} exceed the "
            f"{TOTAL_ANNOTATION_SIZE} bytes (256 KiB) the API server allows on one object"
        )
    return value


def applied_size(manifest: Mapping[str, Any]) -> int:
    """The bytes kubectl apply adds to an object's annotations: the key LAST_APPLIED and the object as JSON (Go's
    encoding/json: compact, keys sorted, <, > and & escaped as \\u003c..., a trailing newline), and the prune
    label aws-cdk-lib adds to it (aws.cdk.eks/prune- and 42 hex digits, an empty value: within _PRUNE_LABEL)."""
    text = json.dumps(manifest, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    escaped = sum(text.count(c) for c in "<>&") * 5
    return len(LAST_APPLIED) + len(text.encode()) + escaped + 1 + _PRUNE_LABEL
