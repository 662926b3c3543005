"""tooling/mirror_crd_schema.py turns a CRD's structural OpenAPI schema into the project's JSON Schema
mirror (tooling/schemas/karpenter-<version>/nodeoverlay.schema.json was written by it)."""

from __future__ import annotations

import json

from jsonschema import Draft202012Validator

from tooling.kubernetes_schemas import SCHEMAS
from tooling.mirror_crd_schema import json_schema


def test_structural_openapi_becomes_strict_json_schema():
    node = {
        "type": "object",
        "description": "dropped",
        "required": ["requirements"],
        "x-kubernetes-validations": [{"rule": "true"}],  # CEL: mirrored by tooling/mirror_crd_rules.py
        "properties": {
            "capacity": {
                "type": "object",
                "additionalProperties": {
                    "x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "pattern": "^[0-9]+$",
                },
            },
            "weight": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 10000},
            "requirements": {
                "type": "array",
                "maxItems": 100,
                "x-kubernetes-list-type": "atomic",
                "items": {
                    "type": "object",
                    "required": ["key"],
                    "properties": {"key": {"type": "string", "maxLength": 316}},
                },
            },
        },
    }
    assert json_schema(node) == {
        "type": "object",
        "required": ["requirements"],
        "additionalProperties": False,
        "properties": {
            "capacity": {
                "type": "object",
                "additionalProperties": {"type": ["integer", "string"], "pattern": "^[0-9]+$"},
            },
            "weight": {"type": "integer", "minimum": 1, "maximum": 10000},
            "requirements": {
                "type": "array",
                "maxItems": 100,
                "items": {
                    "type": "object",
                    "required": ["key"],
                    "additionalProperties": False,
                    "properties": {"key": {"type": "string", "maxLength": 316}},
                },
            },
        },
    }


def test_the_committed_nodeoverlay_mirror_is_the_generators_format():
    mirror = json.loads((SCHEMAS / "karpenter-1.14.1" / "nodeoverlay.schema.json").read_text())
    Draft202012Validator.check_schema(mirror)
    assert mirror["x-upstream"]["crd"] == "nodeoverlays.karpenter.sh" and mirror["x-upstream"]["version"] == "1.14.1"
    spec = mirror["properties"]["spec"]
    assert spec["additionalProperties"] is False and spec["required"] == ["requirements"]
    assert set(spec["properties"]) == {"capacity", "price", "priceAdjustment", "requirements", "weight"}
    assert spec["properties"]["weight"] == {"type": "integer", "maximum": 10000, "minimum": 1}
