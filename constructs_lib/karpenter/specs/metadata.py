"""The labels and annotations of a node object itself (its metadata, not its nodes'), one declaration for the
EC2NodeClass, the NodePool and the NodeOverlay: the type that checks them (``specs.base.object_labels`` and
``object_annotations``, with their sources) and the field that declares them."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field

from .base import object_annotations, object_labels
from .change import OBJECT_METADATA, Change, change


def _labels(value: dict[str, str]) -> dict[str, str]:
    object_labels(value)
    return value


def _annotations(value: dict[str, str]) -> dict[str, str]:
    object_annotations(value)
    return value


ObjectLabels = Annotated[dict[str, str], AfterValidator(_labels)]
ObjectAnnotations = Annotated[dict[str, str], AfterValidator(_annotations)]


def object_labels_field(kind: str, besides: str = "") -> Any:
    """``objectLabels`` of a ``kind`` (``besides``: what the description adds after "itself")."""
    return Field(
        default_factory=dict,
        description=f"Labels on the {kind} object itself (metadata.labels){besides}: not the kubernetes.io, k8s.io, "
        "karpenter.sh, karpenter.k8s.aws or aws.cdk.eks domains (app.kubernetes.io is allowed).",
        json_schema_extra=change(Change.IN_PLACE, "metadata.labels", OBJECT_METADATA),
        examples=[{"app.kubernetes.io/part-of": "platform"}],
    )


def object_annotations_field(kind: str, example: str, *, hashed: bool, besides: str = "") -> Any:
    """``objectAnnotations`` of a ``kind`` (``hashed``: Karpenter writes its hash annotations on it)."""
    hashes = " nor Karpenter's hash annotations" if hashed else ""
    return Field(
        default_factory=dict,
        description=f"Annotations on the {kind} object itself (metadata.annotations){besides}: not the reserved "
        f"domains of objectLabels (kubernetes.io/description is allowed){hashes}; with kubectl's copy of the object, "
        "at most 256 KiB.",
        json_schema_extra=change(Change.IN_PLACE, "metadata.annotations", OBJECT_METADATA),
        examples=[{"kubernetes.io/description": example}],
    )
