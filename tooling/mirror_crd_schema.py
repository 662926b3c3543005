#!/usr/bin/env python3
"""Mirror the OpenAPI schemas of Karpenter's CRDs into ``tooling/schemas/karpenter-<version>/<name>.schema.json``
as JSON Schema (the format of the project's other schema mirrors), from the CRDs the release's ``karpenter-crd``
chart installs, rendered into ``tooling/upstream/karpenter-<version>/crds/``. ``python -m
tooling.releases.karpenter_import <version>`` (``make karpenter-import``) renders them and calls this; by hand, from
those CRDs::

    python -m tooling.mirror_crd_schema --all <version>

writes the NodePool, EC2NodeClass and NodeOverlay mirrors (``python -m tooling.mirror_crd_schema <crd file>
<version> <name>`` one of them). tests/test_karpenter_import.py fails when a committed mirror is not what the import
writes.

What is kept is what the API server checks structurally: types, properties, required fields, enums, patterns,
the formats it enforces (``FORMATS``), lengths, bounds, item and map schemas. Objects with declared properties
take no other keys (kubectl's strict field validation). ``x-kubernetes-int-or-string`` becomes ``integer or
string``. Patterns are kept verbatim: they are Go RE2 expressions, searched unanchored as the API server does;
``tooling.kubernetes_schemas`` matches them with RE2, not with Python's ``re`` (which differs on ``$`` before a
final newline, ``\\d`` and ``\\s``). Descriptions are dropped, and so are the CEL rules:
``tooling/mirror_crd_rules.py`` mirrors those.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from constructs_lib.karpenter import yaml_load

ROOT = Path(__file__).resolve().parent.parent
KEPT = (
    "type",
    "required",
    "enum",
    "pattern",
    "maxLength",
    "minLength",
    "maximum",
    "minimum",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
)
# The formats of Karpenter's CRDs, as the API server treats them (apiextensions-apiserver
# pkg/apiserver/validation/formats.go, supportedVersionedFormats): "date-time" (normalized "datetime") is checked
# as an RFC 3339 date-time; int32 and int64 are not among its formats, so it strips them and checks no range.
FORMATS = {"date-time": "date-time"}
NOT_ENFORCED_FORMATS = ("int32", "int64")
# The CRD file of each mirror (its name in tooling/schemas/karpenter-<version>/).
CRD_FILES = {
    "nodepool": "karpenter.sh_nodepools.yaml",
    "ec2nodeclass": "karpenter.k8s.aws_ec2nodeclasses.yaml",
    "nodeoverlay": "karpenter.sh_nodeoverlays.yaml",
}
# Where each API group's types are written (both ship in aws/karpenter-provider-aws's pkg/apis/crds/).
PROJECTS = {
    "karpenter.sh": "kubernetes-sigs/karpenter (via aws/karpenter-provider-aws chart karpenter-crd)",
    "karpenter.k8s.aws": "aws/karpenter-provider-aws (chart karpenter-crd)",
}
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def upstream_crds(version: str) -> Path:
    """The folder of a release's vendored CRDs."""
    return ROOT / "tooling" / "upstream" / f"karpenter-{version}" / "crds"


def json_schema(node: dict[str, Any]) -> dict[str, Any]:
    """One OpenAPI v3 (structural) schema node as JSON Schema."""
    out: dict[str, Any] = {k: node[k] for k in KEPT if k in node}
    format_ = node.get("format")
    if format_ in FORMATS:
        out["format"] = FORMATS[format_]
    elif format_ is not None and format_ not in NOT_ENFORCED_FORMATS:
        raise ValueError(f"format {format_!r}: unknown to the mirror; add it to FORMATS or NOT_ENFORCED_FORMATS")
    if node.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    if "properties" in node:
        out["properties"] = {name: json_schema(child) for name, child in node["properties"].items()}
        out.setdefault("additionalProperties", False)
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = json_schema(node["additionalProperties"])
    if isinstance(node.get("items"), dict):
        out["items"] = json_schema(node["items"])
    return out


def served_spec(crd_file: Path) -> tuple[dict[str, Any], str, str, str]:
    """The OpenAPI schema of the served version's spec, the kind, the apiVersion and the CRD's name."""
    crd = yaml_load.safe_load(crd_file.read_text())
    (served,) = [v for v in crd["spec"]["versions"] if v.get("served")]
    kind, group = crd["spec"]["names"]["kind"], crd["spec"]["group"]
    spec = served["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return spec, kind, f"{group}/{served['name']}", crd["metadata"]["name"]


def mirror(crd_file: Path, version: str) -> dict[str, Any]:
    spec, kind, api_version, crd_name = served_spec(crd_file)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"{kind} {api_version}",
        "x-upstream": {
            "project": PROJECTS[api_version.split("/")[0]],
            "version": version,
            "crd": crd_name,
            "source": f"tooling/upstream/karpenter-{version}/crds/{crd_file.name} (the karpenter-crd chart {version}, "
            "rendered)",
            "note": "Generated by tooling/mirror_crd_schema.py from the spec part of the CRD's openAPIV3Schema; "
            "unknown fields are rejected as kubectl's strict field validation does. Patterns are Go RE2, "
            "searched unanchored as the API server does (tooling.kubernetes_schemas matches them with RE2).",
        },
        "type": "object",
        "properties": {
            "apiVersion": {"const": api_version},
            "kind": {"const": kind},
            "metadata": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "pattern": DNS_SUBDOMAIN, "maxLength": 253},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                },
                "additionalProperties": False,
                "required": ["name"],
            },
            "spec": json_schema(spec),
        },
        "additionalProperties": False,
        "required": ["apiVersion", "kind", "metadata", "spec"],
    }


def text(schema: dict[str, Any]) -> str:
    """A mirror as it is committed."""
    return json.dumps(schema, indent=2) + "\n"


def mirrors(version: str, crds: Path | None = None) -> dict[str, str]:
    """Every mirror of a release (name -> its text), from its vendored CRDs (or ``crds``)."""
    folder = crds or upstream_crds(version)
    return {name: text(mirror(folder / file, version)) for name, file in CRD_FILES.items()}


def _write(name: str, content: str, version: str) -> None:
    target = ROOT / "tooling" / "schemas" / f"karpenter-{version}" / f"{name}.schema.json"
    target.write_text(content)
    print(f"wrote {target.relative_to(ROOT)}")


def main(args: list[str]) -> None:
    if len(args) == 2 and args[0] == "--all":
        for name, content in mirrors(args[1]).items():
            _write(name, content, args[1])
        return
    if len(args) != 3:
        sys.exit("usage: python -m tooling.mirror_crd_schema --all <version> | <crd file> <version> <name>")
    crd_file, version, name = Path(args[0]), args[1], args[2]
    _write(name, text(mirror(crd_file, version)), version)


if __name__ == "__main__":
    main(sys.argv[1:])
