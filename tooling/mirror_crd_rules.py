#!/usr/bin/env python3
"""Mirror the CEL rules (``x-kubernetes-validations``) and the defaults of Karpenter's CRDs into
``tooling/schemas/karpenter-<version>/cel-rules.json``, the project's own record of them.

``python -m tooling.releases.karpenter_import <version>`` (``make karpenter-import``) calls this with the CRDs the
release's ``karpenter-crd`` chart installs (``tooling/upstream/karpenter-<version>/crds/``); by hand::

    python -m tooling.mirror_crd_rules <path to that crds/ folder> <version>

Each rule is kept exactly as upstream writes it, with the path of the schema node it sits on
(``spec.template.spec.requirements[]``: ``[]`` is every item of a list, ``{}`` every value of a map),
its message and whether it is a transition rule (it reads ``oldSelf``, so it only applies to updates).
Each default is kept with the path of the field it fills. The tests evaluate the rules with a real CEL
implementation after applying the defaults, as the API server does (tooling/cel_rules.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from constructs_lib.karpenter import yaml_load

ROOT = Path(__file__).resolve().parent.parent
KEPT = ("rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf")


def _walk(node: dict[str, Any], path: str) -> Iterator[tuple[str, str, Any]]:
    """(kind, path, value) for every rule ("rule") and default ("default") below ``node``."""
    for rule in node.get("x-kubernetes-validations", []):
        yield "rule", path, rule
    for name, child in node.get("properties", {}).items():
        if path == "" and name == "status":
            continue  # the API server's status subresource: never written by the app
        child_path = f"{path}.{name}" if path else name
        if "default" in child:
            yield "default", child_path, child["default"]
        yield from _walk(child, child_path)
    if isinstance(node.get("items"), dict):
        yield from _walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _walk(node["additionalProperties"], f"{path}{{}}")


def mirror(crds: Path, version: str) -> dict[str, Any]:
    kinds: dict[str, Any] = {}
    for path in sorted(crds.glob("*.yaml")):
        crd = yaml_load.safe_load(path.read_text())
        for served in (v for v in crd["spec"]["versions"] if v.get("served")):
            rules, defaults = [], []
            for what, where, value in _walk(served["schema"]["openAPIV3Schema"], ""):
                if what == "default":
                    defaults.append({"path": where, "default": value})
                    continue
                entry = {"path": where or "(root)", **{k: value[k] for k in KEPT if k in value}}
                entry["transition"] = "oldSelf" in value["rule"]
                rules.append(entry)
            kinds[f"{crd['spec']['names']['kind']} {crd['spec']['group']}/{served['name']}"] = {
                "file": path.name,
                "rules": rules,
                "defaults": defaults,
            }
    return {
        "x-upstream": {
            "project": "aws/karpenter-provider-aws",
            "tag": f"v{version}",
            "source": "the CRDs the karpenter-crd chart installs (tooling/upstream/karpenter-<version>/crds/): "
            "x-kubernetes-validations and default of every served version",
            "generated-by": "tooling/mirror_crd_rules.py",
        },
        "kinds": kinds,
    }


def main(crds: str, version: str) -> None:
    out = ROOT / "tooling" / "schemas" / f"karpenter-{version}" / "cel-rules.json"
    data = mirror(Path(crds), version)
    out.write_text(json.dumps(data, indent=1) + "\n")
    counts = {
        k: (len(v["rules"]), sum(r["transition"] for r in v["rules"]), len(v["defaults"]))
        for k, v in data["kinds"].items()
    }
    print(
        f"{out.relative_to(ROOT)}: "
        + "; ".join(f"{k}: {r} rules ({t} transition), {d} defaults" for k, (r, t, d) in counts.items())
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
