"""Karpenter's own ``examples/v1/`` (1.14.1, copied as ``tests/fixtures/karpenter-examples-v1.14.1/``) through the
app, each file as ``nodeManifests`` of the product's configuration (cluster ``c``, Kubernetes of tooling/product):
accepted or refused (the synth's message), what differs from upstream's objects (both after the CRDs' defaults, as
the API server stores them; the node role is the template's ``KarpenterNodeRole-c`` on both sides), whether the
converter's typed settings (``nodeClasses``/``nodePools`` JSON) give the same objects through the normal
configuration path, and what was found about the file.

    python -m tooling.releases.upstream_examples                  # the table (Markdown)
    python -m tooling.releases.upstream_examples --settings FILE  # the typed settings of one file, as JSON for cdk.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from constructs_lib.karpenter import yaml_load
from constructs_lib.karpenter.names import CLUSTER_NAME_PLACEHOLDER
from constructs_lib.karpenter.node_manifests import read_node_manifests
from karpenter_stack.config import ConfigError, load_config
from tooling.cel_rules import KINDS, evaluate, mirror, with_defaults
from tooling.configurations import PRODUCT_CONTEXT, ROOT
from tooling.kubernetes_schemas import config_objects, object_violations

FIXTURES = ROOT / "tests" / "fixtures" / "karpenter-examples-v1.14.1"
CLUSTER = "c"  # the cluster name tooling.kubernetes_schemas.config_objects renders with
KARPENTER_VERSION = "1.14.1"
TODAY = date(2026, 11, 21)  # the suite's day (the EKS support calendar)

# What was found about each file besides the verdict (read against Karpenter 1.14.1's CRDs and docs).
NOTES = {
    "al2-custom-ami.yaml": "ami-123 and ami-456 are placeholders, not EC2 image ids (ami- and 8 or 17 hex digits); "
    "with real ids the class converts (amiSelectorTerms by id, amiFamily AL2); AL2 has no AMIs past Kubernetes 1.32",
    "al2-custom-userdata.yaml": "named al2, but its alias is al2023: the MIME shell part runs on AL2023",
    "al2-kubelet-log-query.yaml": "named al2, but its alias is al2023: its script edits AL2's kubelet files "
    "(kubelet-extra-args, /etc/kubernetes/kubelet/kubelet-config.json), which AL2023's nodeadm does not use: "
    "accepted (the app cannot know a script's paths), stale on AL2023",
    "al2023-custom-userdata.yaml": "its MIME archive ends with --// instead of --//--, which Karpenter's reader "
    "takes as the end",
    "custom-family-with-alias.yaml": "Custom with a bottlerocket alias and a shell script calling /etc/eks/bootstrap.sh, "
    "which Bottlerocket images do not have: deployed as written (the image's own volumes, a warning), but no node it "
    "launches would join; its typed settings cannot say the image's own volumes (rootVolumeDeviceName is required)",
    "custom-family.yaml": "placeholder ids (ami-123, ami-456), not EC2 image ids",
    "min-values-family.yaml": "al2023@v20240625 (June 2024) has no image for any Kubernetes version the app "
    "supports (1.31 came out 2024-09-26): a stale pin",
    "min-values-multiple-keys.yaml": "the same stale pin, al2023@v20240625",
    "multiple-arch.yaml": "the arm64 pool asks for categories c and a (a1 instances)",
    "windows-custom-userdata.yaml": "nodeClassRef.group karpenter.k8s.aws/v1 is an apiVersion: the 1.14.1 CRD's "
    "pattern ^[^/]*$ refuses it (kubectl apply fails); with group karpenter.k8s.aws the file converts",
}


@dataclass
class Verdict:
    """One upstream file through the manifest path."""

    name: str
    refused: str | None = None  # the synth's message (None: accepted)
    differences: dict[str, list[str]] = field(default_factory=dict)  # Kind/name -> what differs from upstream's
    # what the objects of the typed settings (--settings) add to the file's, as the API server stores both (None:
    # refused): the typed settings write out the volumes Karpenter defaults to where a file gives none
    typed_differences: dict[str, list[str]] | None = None
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)  # the app's objects, by Kind/name
    violations: list[str] = field(default_factory=list)  # the app's objects against the schemas and CEL rules
    settings: dict[str, Any] = field(default_factory=dict)  # the typed settings (cdk.json JSON)


def verdict(path: Path) -> Verdict:
    """``path`` (a file of FIXTURES) through the manifest path, its typed settings and the comparison."""
    source = path.relative_to(ROOT).as_posix()
    base = {**PRODUCT_CONTEXT, "clusterName": CLUSTER}
    with contextlib.chdir(ROOT):
        try:
            config = load_config({**base, "nodeManifests": [source]}, today=TODAY)
        except ConfigError as err:
            return Verdict(path.name, refused=str(err))
        settings = read_node_manifests([source], cluster_name=CLUSTER).settings()
    objects = config_objects(config)
    typed_refused: str | None = None
    try:
        typed = config_objects(load_config({**base, **settings}, today=TODAY))
    except ConfigError as err:  # what the typed settings cannot say (a Custom class with its image's own volumes)
        typed, typed_refused = [], str(err)
    upstream = upstream_objects(path)
    return Verdict(
        path.name,
        objects=_keyed(objects),
        differences={key: differences(upstream.get(key), obj) for key, obj in _keyed(objects).items()},
        typed_differences={"typed settings": [typed_refused]}
        if typed_refused
        else {
            key: found for key, obj in _keyed(typed).items() if (found := differences(_keyed(objects).get(key), obj))
        },
        violations=[v for obj in objects for v in _violations(obj, config.kubernetes_version)],
        settings=settings,
    )


def _keyed(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in objects}


def _violations(obj: dict[str, Any], kubernetes_version: str) -> list[str]:
    return [
        *object_violations(obj, KARPENTER_VERSION, kubernetes_version),
        *evaluate(obj, KARPENTER_VERSION).violations,
    ]


def upstream_objects(path: Path) -> dict[str, dict[str, Any]]:
    """Upstream's objects of a file, ${CLUSTER_NAME} filled in, by Kind/name."""
    text = path.read_text().replace(CLUSTER_NAME_PLACEHOLDER, CLUSTER)
    return _keyed([d for d in yaml_load.safe_load_all(text) if d])


def differences(upstream: dict[str, Any] | None, ours: dict[str, Any]) -> list[str]:
    """What differs between upstream's object and the app's, both as the API server stores them (the CRD's
    defaults filled in): ``path: added <value>``, ``path: left out``, ``path: <upstream> -> <app's>``."""
    if upstream is None:
        return ["not in upstream's file"]
    defaults = mirror(KARPENTER_VERSION)["kinds"][KINDS[ours["kind"]]]["defaults"]
    return list(_diff(with_defaults(upstream, defaults), with_defaults(ours, defaults), ""))


def _diff(a: Any, b: Any, path: str) -> Iterator[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            below = f"{path}.{key}" if path else key
            if key not in b:
                yield f"{below}: left out"
            elif key not in a:
                yield f"{below}: added {_short(b[key])}"
            else:
                yield from _diff(a[key], b[key], below)
    elif path.endswith("requirements") and isinstance(a, list) and isinstance(b, list):
        yield from _requirements_diff(a, b, path)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from _diff(x, y, f"{path}[{i}]")
    elif type(a) is int and b == str(a):  # an int-or-string quantity written as a string: the same quantity
        yield f"{path}: {a} -> {_short(b)} (the same quantity)"
    elif a != b:
        yield f"{path}: {_short(a)} -> {_short(b)}"


def _requirements_diff(a: list[Any], b: list[Any], path: str) -> Iterator[str]:
    """Requirements are ANDed: compared as a set; a different order is said once."""
    ours, theirs = [json.dumps(r, sort_keys=True) for r in b], [json.dumps(r, sort_keys=True) for r in a]
    for requirement in b:
        if json.dumps(requirement, sort_keys=True) not in theirs:
            yield f"{path}: added {_short(requirement)}"
    for requirement in a:
        if json.dumps(requirement, sort_keys=True) not in ours:
            yield f"{path}: left out {_short(requirement)}"
    if sorted(ours) == sorted(theirs) and ours != theirs:
        yield f"{path}: same requirements, the app's shortcuts first"


def _short(value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(v, dict) and "deviceName" in v for v in value):
        return "[" + ", ".join(_volume(v) for v in value) + "]"
    text = json.dumps(value, separators=(",", ":"))
    return text if len(text) <= 90 else text[:87] + "..."


def _volume(mapping: Mapping[str, Any]) -> str:
    """A block device mapping in a few words: /dev/xvda 50Gi gp3 encrypted."""
    ebs = mapping.get("ebs") or {}
    words = [mapping["deviceName"], ebs.get("volumeSize", ""), ebs.get("volumeType", "")]
    return " ".join(str(w) for w in [*words, "encrypted" if ebs.get("encrypted") else "unencrypted"] if w)


def verdicts() -> list[Verdict]:
    return [verdict(path) for path in sorted(FIXTURES.glob("*.yaml"))]


def table(found: list[Verdict]) -> str:
    """The verdicts as a Markdown table."""
    lines = [
        "| file | manifest path | what differs from upstream's objects | typed settings: same objects (or what they add) | found |",
        "|---|---|---|---|---|",
    ]
    for v in found:
        if v.refused is not None:
            shown = v.refused.replace(f"{FIXTURES.relative_to(ROOT).as_posix()}/", "").replace("\n", "<br>")
            outcome, differs, same = f"refused: {shown}", "—", "—"
        else:
            outcome = "accepted" + ("" if not v.violations else f" ({len(v.violations)} schema/CEL violations)")
            differs = "<br>".join(f"{key}: {'; '.join(d) or 'nothing'}" for key, d in v.differences.items())
            same = "<br>".join(f"{key}: {'; '.join(d)}" for key, d in (v.typed_differences or {}).items()) or "yes"
        lines.append(f"| {v.name} | {outcome} | {differs} | {same} | {NOTES.get(v.name, '')} |")
    accepted = sum(v.refused is None for v in found)
    lines += ["", f"{accepted} of {len(found)} files accepted, {len(found) - accepted} refused."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", metavar="FILE", help="print the typed settings of one file of the fixtures")
    args = parser.parse_args(argv)
    if args.settings:
        path = (FIXTURES / args.settings).resolve()
        if path.parent != FIXTURES.resolve() or path.suffix != ".yaml" or not path.is_file():
            names = sorted(p.name for p in FIXTURES.glob("*.yaml"))
            print(
                f"upstream-examples: --settings {args.settings!r}: no such example; give the name of one of Karpenter's examples in "
                f"{FIXTURES.relative_to(ROOT).as_posix()}/ ({len(names)}: {names[0]}, ..., {names[-1]})",
                file=sys.stderr,
            )
            return 2
        found = verdict(path)
        print(json.dumps(found.settings, indent=2) if found.refused is None else found.refused)
        return 0 if found.refused is None else 1
    print(table(verdicts()), end="")
    return 0


def summary(found: Mapping[str, Verdict]) -> dict[str, str]:
    """Each file's verdict in one line: ``accepted`` or the refusal."""
    return {name: v.refused or "accepted" for name, v in found.items()}


if __name__ == "__main__":
    sys.exit(main())
