"""Is the committed baseline the synth of the configuration? The gate's check in CI (tests/test_your_configuration.py):
a change committed without ``make accept`` leaves ``baseline/`` behind, and the next review shows two changes.

It compares the gate's CLI synth (``.gate/cdk.out``) with ``baseline/`` stack by stack, as the snapshot tests compare
templates: equal, or a failure naming what differs. ``make accept`` writes the review's own synth (in process), which
the CLI's differs from only by what the CDK CLI adds to a synth (found by comparing the two, aws-cdk-lib 2.275 and
its CLI): the version-reporting resource (``AWS::CDK::Metadata``) and its ``CDKMetadataAvailable`` condition, the
asset metadata (``aws:asset:*`` keys of a resource's ``Metadata``), and so each nested stack's ``TemplateURL`` (the
hash of its template, which holds them); those are left out, and each nested template is compared itself. Every
other value counts, asset hashes of Lambda code and layers included (they are the same in both synths, and on every
machine: the product's snapshots hold them).

A stack without an accepted template passes (nothing accepted for it yet: its first review lists what it creates);
templates the baseline holds that the configuration no longer synthesizes (a stack renamed or removed, a nested
stack gone) fail, since the next review would show them as changes too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .live import app_stacks, asset_templates, stack_templates
from .synth import synthesized_templates

CDK_METADATA = "AWS::CDK::Metadata"
CDK_METADATA_CONDITION = "CDKMetadataAvailable"
ASSET_METADATA = "aws:asset:"
NESTED_STACK = "AWS::CloudFormation::Stack"
SECTIONS = ("Parameters", "Conditions", "Mappings", "Rules", "Outputs", "Transform", "Description")
# how many differences a message lists before "and N more"
SHOWN = 5
FIX = "run `make accept` and commit baseline/ with the change (`make review` says what deploying it does)"


def in_ci(environ: Mapping[str, str]) -> bool:
    """Running in CI: ``CI`` set to anything but empty, ``0``, ``false`` or ``no`` (GitHub Actions sets ``CI=true``
    on every runner: docs.github.com, "Variables reference", default environment variables)."""
    return environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def comparable(template: Mapping[str, Any]) -> dict[str, Any]:
    """The template without what only a CLI synth holds (module docstring)."""
    resources = {}
    for logical_id, resource in template.get("Resources", {}).items():
        if resource.get("Type") == CDK_METADATA:
            continue
        resource = dict(resource)
        metadata = {k: v for k, v in resource.get("Metadata", {}).items() if not k.startswith(ASSET_METADATA)}
        resource.pop("Metadata", None)
        if metadata:
            resource["Metadata"] = metadata
        if resource.get("Type") == NESTED_STACK:
            resource["Properties"] = {k: v for k, v in resource.get("Properties", {}).items() if k != "TemplateURL"}
        resources[logical_id] = resource
    out = {k: v for k, v in template.items() if k != "Resources"}
    conditions = {k: v for k, v in out.pop("Conditions", {}).items() if k != CDK_METADATA_CONDITION}
    if conditions:
        out["Conditions"] = conditions
    return {**out, "Resources": resources}


def differences(accepted: Mapping[str, Any], synthesized: Mapping[str, Any]) -> list[str]:
    """What differs between two comparable templates: resources added, removed or changed (logical id and type),
    then the other sections that differ."""
    old, new = accepted.get("Resources", {}), synthesized.get("Resources", {})
    found = []
    for logical_id in sorted(old.keys() | new.keys()):
        if logical_id not in old:
            found.append(f"{logical_id} ({new[logical_id].get('Type')}) added")
        elif logical_id not in new:
            found.append(f"{logical_id} ({old[logical_id].get('Type')}) removed")
        elif old[logical_id] != new[logical_id]:
            found.append(f"{logical_id} ({new[logical_id].get('Type')}) changed")
    extra = sorted((accepted.keys() | synthesized.keys()) - {"Resources", *SECTIONS})
    found += [f"{s} changed" for s in (*SECTIONS, *extra) if accepted.get(s) != synthesized.get(s)]
    return found


def _nested_name(stack: str, top: str, template: str) -> str:
    """A nested template as a reviewer names it: ``<stack> > nested <id>`` (CDK names it after its parent's
    artifact, without the artifact's hash in a stage, then its own id and a hash)."""
    stem, prefix = template.removesuffix(".nested.template"), top.removesuffix(".template")
    if prefix != stack:  # a stage's artifact: <stage><stack><hash>
        prefix = re.sub(r"[0-9A-F]{8}$", "", prefix)
    else:
        prefix = re.sub(r"[^A-Za-z0-9]", "", prefix)
    inner = stem.removeprefix(prefix) if stem.startswith(prefix) else stem
    return f"{stack} > nested {re.sub(r'[0-9A-F]{8}$', '', inner)}"


def _listed(items: list[tuple[str, str]]) -> str:
    """``(where, what)`` pairs as ``where: what, what; where: what``, the first :data:`SHOWN` of them."""
    grouped: dict[str, list[str]] = {}
    for where, what in items[:SHOWN]:
        grouped.setdefault(where, []).append(what)
    more = f"; and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return "; ".join(f"{where}: {', '.join(whats)}" for where, whats in grouped.items()) + more


def stale(baseline: Mapping[str, Mapping[str, Any]], outdir: Path, environments: Mapping[str, str]) -> list[str]:
    """One message per stack whose accepted templates are not the synth in ``outdir`` (a CLI's cloud assembly), and
    one for accepted templates the synth no longer has. ``baseline``: template name -> template, as
    :func:`tooling.review.baseline.baseline_templates` reads them; ``environments``: stack name -> environment name
    (``""``: the configuration without environments)."""
    if not baseline:
        return []  # nothing accepted yet
    synth = synthesized_templates(outdir)
    hashes = asset_templates(outdir)
    claimed: set[str] = set()
    messages = []
    for stack in app_stacks(outdir):
        templates = stack_templates(stack.template, synth, hashes)
        claimed |= set(templates)
        if stack.template not in baseline:
            continue  # nothing accepted for this stack yet
        found: list[tuple[str, str]] = []
        for template in templates:
            name = stack.name if template == stack.template else _nested_name(stack.name, stack.template, template)
            if template not in baseline:
                found.append((name, "new nested stack"))
                continue
            diff = differences(comparable(baseline[template]), comparable(synth[template]))
            found += [(name, d) for d in diff]
        if found:
            environment = environments.get(stack.name)
            who = f"environment {environment} (stack {stack.name})" if environment else f"stack {stack.name}"
            messages.append(f"{who}: baseline/ is not the synth of your configuration: {_listed(found)}; {FIX}")
    left = sorted(t for t in baseline if t not in claimed)
    if left:
        files = ", ".join(f"{t}.json" for t in left[:SHOWN])
        more = f" and {len(left) - SHOWN} more" if len(left) > SHOWN else ""
        messages.append(
            f"baseline/ holds templates your configuration no longer synthesizes (a stack renamed or removed, a "
            f"nested stack gone): {files}{more}; {FIX}"
        )
    return messages
