"""The NodeOverlay (alpha): what Karpenter assumes about matching instance types when it chooses one --
their price, or extra capacity of an extended resource."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..names import NODE_OVERLAY_API_VERSION, NODE_OVERLAY_AWS_LABELS
from .base import (
    QUALIFIED_NAME,
    CamelModel,
    IntOrString,
    annotations_fit,
    applied_size,
    kubernetes_name,
    label_key,
    label_value,
    non_negative_quantities,
    optional_match,
    quoted,
)
from .change import NODE_OVERLAY, OBJECT_NAME, Change, change
from .metadata import ObjectAnnotations, ObjectLabels, object_annotations_field, object_labels_field
from .node_pool_parts import operator_values
from .written import NodeObjectSpec, filled

# NodeOverlay spec.price / spec.priceAdjustment (the CRD's patterns): a price, or a change of one -- an
# amount (+0.1, -0.05) or a percentage (+10%, -10%, at most -100%).
_PRICE = re.compile(r"\d+(\.\d+)?", re.ASCII)
_PRICE_ADJUSTMENT = re.compile(r"[+-]\d*\.?\d+|\+\d*\.?\d+%|-\d{1,2}(\.\d+)?%|-100%", re.ASCII)
# Resources a NodeOverlay cannot add capacity of (the CRD refuses them: Karpenter computes them itself).
OVERLAY_RESTRICTED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")


class OverlayRequirementSpec(CamelModel):
    """Which instance types a NodeOverlay applies to (a node selector requirement, without minValues)."""

    key: str = Field(description="Label key, e.g. karpenter.k8s.aws/instance-family or karpenter.sh/nodepool.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"] = Field(
        description="How the values apply."
    )
    values: list[str] = Field(default_factory=list, description="Values (none for Exists/DoesNotExist).")

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        return label_key(value, aws_labels=NODE_OVERLAY_AWS_LABELS, node_pool_key=True)

    @field_validator("values")
    @classmethod
    def _values(cls, value: list[str]) -> list[str]:
        for item in value:
            label_value(item)
        return value

    @model_validator(mode="after")
    def _values_fit_operator(self) -> OverlayRequirementSpec:
        operator_values(self.key, self.operator, self.values)
        return self


class NodeOverlaySpec(NodeObjectSpec):
    """One NodeOverlay (alpha; needs controller.featureGates.nodeOverlay): changes what Karpenter assumes
    about matching instance types when it chooses one -- their price, or extra capacity of an extended
    resource. It changes no running node."""

    name: str = Field(
        description="Kubernetes name of the NodeOverlay.",
        json_schema_extra=change(Change.REPLACE, "metadata.name", OBJECT_NAME),
        examples=["prefer-graviton"],
    )
    requirements: list[OverlayRequirementSpec] = Field(
        default_factory=list,
        max_length=100,
        description="Instance types it applies to (all when empty); karpenter.sh/nodepool limits it to pools.",
        json_schema_extra=change(Change.BEHAVIORAL, "spec.requirements", NODE_OVERLAY),
        examples=[[{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m7g"]}]],
    )
    price: str | None = Field(
        None,
        description='Price to assume (USD per hour), e.g. "0.25".',
        json_schema_extra=change(Change.BEHAVIORAL, "spec.price", NODE_OVERLAY),
        examples=["0.25"],
    )
    price_adjustment: str | None = Field(
        None,
        description="Change of the price: an amount (+0.1, -0.05) or a percentage (+10%, -10%, -100%).",
        json_schema_extra=change(Change.BEHAVIORAL, "spec.priceAdjustment", NODE_OVERLAY),
        examples=["-10%"],
    )
    capacity: dict[str, IntOrString] = Field(
        default_factory=dict,
        description='Extra capacity of extended resources per node (e.g. {"example.com/device": "2"}); not '
        "cpu, memory, ephemeral-storage or pods.",
        json_schema_extra=change(Change.BEHAVIORAL, "spec.capacity", NODE_OVERLAY),
        examples=[{"example.com/device": "2"}],
    )
    weight: int | None = Field(
        None,
        ge=1,
        le=10000,
        description="Which overlay wins where several match (higher first).",
        json_schema_extra=change(Change.BEHAVIORAL, "spec.weight", NODE_OVERLAY),
        examples=[10],
    )

    object_labels: ObjectLabels = object_labels_field("NodeOverlay")
    object_annotations: ObjectAnnotations = object_annotations_field(
        "NodeOverlay", "Graviton instances are 10% cheaper than their list price to us", hashed=False
    )

    @field_validator("name")
    @classmethod
    def _k8s_name(cls, value: str) -> str:
        return kubernetes_name(value)

    @field_validator("price")
    @classmethod
    def _price(cls, value: str | None) -> str | None:
        return optional_match(value, _PRICE, "must be a price like 0.25 (USD per hour)")

    @field_validator("price_adjustment")
    @classmethod
    def _adjustment(cls, value: str | None) -> str | None:
        return optional_match(
            value,
            _PRICE_ADJUSTMENT,
            "must be a signed amount like +0.1 or -0.05, or a percentage like +10% or -10% (at most -100%)",
        )

    @field_validator("capacity")
    @classmethod
    def _capacity(cls, value: dict[str, str]) -> dict[str, str]:
        restricted = [r for r in value if r in OVERLAY_RESTRICTED_RESOURCES]
        if restricted:
            raise ValueError(
                f"{', '.join(restricted)}: Karpenter computes {', '.join(OVERLAY_RESTRICTED_RESOURCES)} "
                "itself; an overlay adds capacity of extended resources only"
            )
        for resource in value:
            if not QUALIFIED_NAME.fullmatch(resource):
                raise ValueError(f"{quoted(resource)} is not a resource name like example.com/device")
        return non_negative_quantities(value)

    @model_validator(mode="after")
    def _effect(self) -> NodeOverlaySpec:
        if self.price is not None and self.price_adjustment is not None:
            raise ValueError("a node overlay sets price or priceAdjustment, not both")
        if self.price is None and self.price_adjustment is None and not self.capacity:
            raise ValueError("a node overlay needs price, priceAdjustment or capacity (it would change nothing)")
        if self.object_annotations:
            annotations_fit(self.object_annotations, applied_size(self.manifest()), "objectAnnotations")
        return self

    def manifest(self) -> dict[str, object]:
        """The NodeOverlay (karpenter.sh/v1alpha1); an overlay of a file is its object as written."""
        if self.written is not None:
            return filled(self.written)
        metadata: dict[str, object] = {"name": self.name}
        metadata |= {"labels": dict(self.object_labels)} if self.object_labels else {}
        metadata |= {"annotations": dict(self.object_annotations)} if self.object_annotations else {}
        return {
            "apiVersion": NODE_OVERLAY_API_VERSION,
            "kind": "NodeOverlay",
            "metadata": metadata,
            "spec": {
                "requirements": [r.model_dump(by_alias=True, exclude_defaults=True) for r in self.requirements],
                **self.model_dump(
                    by_alias=True,
                    exclude_none=True,
                    exclude_defaults=True,
                    include={"price", "price_adjustment", "capacity", "weight"},
                ),
            },
        }
