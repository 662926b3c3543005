"""The configuration reference (docs/configuration-reference.md), generated from the model (``make docs``)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from constructs_lib.specs.base import CamelModel
from constructs_lib.specs.controller import ControllerSpec
from constructs_lib.specs.kubelet import KubeletSpec
from constructs_lib.specs.node_class import (
    CapacityReservationTermSpec,
    DataVolumeSpec,
    NodeClassSpec,
    SecurityGroupTermSpec,
    SubnetTermSpec,
)
from constructs_lib.specs.node_overlay import NodeOverlaySpec, OverlayRequirementSpec
from constructs_lib.specs.node_pool import DisruptionBudgetSpec, NodePoolSpec, RequirementSpec, TaintSpec

from .errors import NESTED_MODELS
from .model import AppConfig, ExistingClusterConfig
from .pipeline import PipelineConfig, WaveSpec


def default_context() -> dict[str, Any]:
    """Every built-in default as a context value (what docs/configuration-reference.md lists)."""
    return AppConfig().model_dump(by_alias=True, mode="json")


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, mode="json", exclude_none=True)
    return value


def reference_markdown() -> str:
    """The configuration reference as Markdown tables (docs/configuration-reference.md embeds this; a test keeps it current)."""
    sections: list[tuple[str, type[CamelModel]]] = [
        ("Settings (context keys)", AppConfig),
        ("`controller` keys (the Karpenter controller)", ControllerSpec),
        ("`existingCluster` keys (Karpenter on a cluster this app does not create)", ExistingClusterConfig),
        ("`nodeClasses[]` entries", NodeClassSpec),
        ("`nodeClasses[].kubelet` keys", KubeletSpec),
        ("`nodeClasses[].dataVolumes[]` entries", DataVolumeSpec),
        ("`nodeClasses[].extraSubnetSelectorTerms[]` entries (exactly one key each)", SubnetTermSpec),
        ("`nodeClasses[].extraSecurityGroupSelectorTerms[]` entries (exactly one key each)", SecurityGroupTermSpec),
        ("`nodeClasses[].capacityReservationSelectorTerms[]` entries", CapacityReservationTermSpec),
        ("`nodePools[]` entries", NodePoolSpec),
        ("`nodePools[].requirements[]` entries", RequirementSpec),
        ("`nodePools[].taints[]` entries", TaintSpec),
        ("`nodePools[].budgets[]` entries", DisruptionBudgetSpec),
        ("`nodeOverlays[]` entries", NodeOverlaySpec),
        ("`nodeOverlays[].requirements[]` entries", OverlayRequirementSpec),
        ("`pipeline` keys (the delivery pipeline; top level only)", PipelineConfig),
        ("`pipeline.waves[]` entries", WaveSpec),
    ]
    out: list[str] = []
    for title, model in sections:
        defaults = {
            field.alias or to_camel(name): field.get_default(call_default_factory=True)
            for name, field in model.model_fields.items()
            if not field.is_required()
        }
        out += [f"## {title}", "", "| key | default | meaning |", "|---|---|---|"]
        for name, field in model.model_fields.items():
            key = field.alias or to_camel(name)
            if model is AppConfig and isinstance(defaults.get(key), list) and key in NESTED_MODELS:
                entries = defaults[key]
                default_text = (
                    f"{'one entry' if len(entries) == 1 else f'{len(entries)} entries'} with the defaults below"
                    if entries
                    else "`[]` (entries: keys below)"
                )
            elif isinstance(defaults.get(key), BaseModel):
                default_text = "the defaults below"
            elif field.is_required():
                default_text = "required"
            else:
                default_text = f"`{json.dumps(_plain(defaults[key]))}`"
            out.append(f"| `{key}` | {default_text} | {field.description or ''} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
