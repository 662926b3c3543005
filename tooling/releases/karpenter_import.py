"""Import one Karpenter release: ``make karpenter-import VERSION=1.15.0 [FROM=<folder>]``, or

    python -m tooling.releases.karpenter_import <VERSION> [--from DIR] [--root DIR]

fetches the release's artifacts -- the ``karpenter`` and ``karpenter-crd`` charts from the OCI registry the app
installs from (``helm pull`` with the project's pinned Helm, helm.py) and the getting-started CloudFormation
template of the release's documentation -- and writes everything the project pins per Karpenter version:

- ``tooling/upstream/karpenter-<V>/charts/{karpenter,karpenter-crd}/``: the charts as pulled;
- ``tooling/upstream/karpenter-<V>/crds/``: the CRDs the ``karpenter-crd`` chart installs (``helm template``), one
  file each, the source of the mirrors; ``README.md``: where all of it comes from;
- ``templates/upstream/karpenter-<V>.yaml``: upstream's template, unmodified;
- ``templates/karpenter-<V>.yaml``: the project's hardened template, re-applied by a 3-way merge (base: the nearest
  imported version's upstream template, ours: its project template, theirs: the new upstream template) and printed
  as a diff to review; ``templates/changes/karpenter-<V>.yaml``: the reasons, carried over. A conflict, or a
  difference the carried reasons do not cover (``make template-diff``'s check), stops the import: merge by hand into
  those three files of <V> and import again (a release that has them is its own base, so the merge keeps them);
- ``tooling/schemas/karpenter-<V>/``: the NodePool, EC2NodeClass and NodeOverlay schema mirrors and ``cel-rules.json``
  (tooling/mirror_crd_schema.py, tooling/mirror_crd_rules.py) and ``controller-values.schema.json``, generated from
  the chart (tooling/chart_values_schema.py);
- ``constructs_lib/releases/karpenter-<V>.json``: the release's feature gates and their defaults (values.yaml
  ``settings.featureGates``), and the fields of each kind's spec with their enums (from the CRDs).

Before anything moves in, the release report (release_report.py) between the release and its base, the older
first, is printed; a change that needs a human decision (a new required field, a removed field or chart key the app
writes, an enum or pattern narrowed under what the app produces, an upstream grant the project's template does not
cover) stops the import, naming it.

``--from DIR`` reads the same artifacts from a folder: ``DIR/charts/karpenter/`` and ``DIR/charts/karpenter-crd/``
(or the archives ``helm pull`` writes, ``DIR/charts/karpenter-<V>.tgz``) and ``DIR/cloudformation.yaml``.
``--root DIR`` writes into another copy of the project. Everything is written into a staging folder first and moved
in only when every step passed: bad input (a version the registry does not have, a folder without the files, an
artifact that cannot be parsed) is one line naming what and where, exit 1, and nothing written.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator

from constructs_lib import yaml_load
from constructs_lib.template_parity import load_template
from tooling import mirror_crd_rules, mirror_crd_schema
from tooling.chart_values_schema import values_schema
from tooling.releases import helm, release_report, report_base, template_parity

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = "oci://public.ecr.aws/karpenter"
CHARTS = ("karpenter", "karpenter-crd")
# The getting-started template of a release's documentation, at the release's tag: the minor's own docs folder
# (website/content/en/v1.14/), else the one upstream's CloudFormation reference page tells users to curl (preview/).
TEMPLATE_URL = (
    "https://raw.githubusercontent.com/aws/karpenter-provider-aws/v{version}/website/content/en/{docs}/"
    "getting-started/getting-started-with-karpenter/cloudformation.yaml"
)
VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+", re.ASCII)
RENDERED = re.compile(r"^---\n# Source: karpenter-crd/templates/([^\n]+)\n", re.ASCII | re.MULTILINE)


class ImportFailure(Exception):
    """The import cannot go on: the one line to show (what, and where)."""


@dataclass(frozen=True)
class Artifacts:
    charts: Path  # holds karpenter/ and karpenter-crd/, unpacked
    template: str  # upstream's CloudFormation template, as fetched
    template_source: str  # where it was read from (for messages)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def layout(version: str) -> dict[str, str]:
    """What one release writes, by role: each a file or a folder relative to the project's root."""
    return {
        "upstream": f"tooling/upstream/karpenter-{version}",
        "schemas": f"tooling/schemas/karpenter-{version}",
        "upstream template": f"templates/upstream/karpenter-{version}.yaml",
        "template": f"templates/karpenter-{version}.yaml",
        "changes": f"templates/changes/karpenter-{version}.yaml",
        "release": f"constructs_lib/releases/karpenter-{version}.json",
    }


# --- fetching --------------------------------------------------------------------------------------------------


def _unpack(archive: Path, into: Path) -> Path:
    """A chart archive (``helm pull``'s .tgz) unpacked; its one top folder."""
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data")
    except (tarfile.TarError, OSError) as err:
        raise ImportFailure(
            f"{archive}: not a chart archive (a gzipped tar, as helm pull writes it): {type(err).__name__}"
        ) from None
    tops = [p for p in into.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise ImportFailure(f"{archive}: expected one chart folder in the archive, found {len(tops)}")
    return tops[0]


def _local_chart(charts: Path, name: str, version: str, scratch: Path) -> Path:
    folder, archive = charts / name, charts / f"{name}-{version}.tgz"
    if folder.is_dir():
        return folder
    if archive.is_file():
        return _unpack(archive, Path(tempfile.mkdtemp(dir=scratch)))
    raise ImportFailure(
        f"{charts}: neither {name}/ nor {name}-{version}.tgz (the {name} chart of Karpenter {version}, as helm pull writes it)"
    )


def from_folder(folder: Path, version: str, scratch: Path) -> Artifacts:
    """The artifacts of a release kept in a folder (``--from``)."""
    if not folder.is_dir():
        raise ImportFailure(f"--from {folder}: no such folder")
    template = folder / "cloudformation.yaml"
    if not template.is_file():
        raise ImportFailure(f"{template}: missing (the getting-started CloudFormation template of Karpenter {version})")
    charts = scratch / "charts"
    charts.mkdir()
    for name in CHARTS:
        chart = _local_chart(folder / "charts", name, version, scratch)
        try:  # as Helm reads a chart folder: a symlink is its target's content
            shutil.copytree(chart, charts / name)
        except shutil.Error as err:
            source, _, why = err.args[0][0]
            raise ImportFailure(
                f"{source}: cannot read it ({str(why).split('] ', 1)[-1].split(':', 1)[0]}; a symlink whose target "
                "is missing?): give the chart's files as Helm reads them"
            ) from None
    try:
        text = template.read_text()
    except UnicodeDecodeError:
        raise ImportFailure(f"{template}: not a CloudFormation template (not UTF-8 text)") from None
    return Artifacts(charts, text, str(template))


def _download(url: str) -> str | None:
    """The text at ``url``; None when there is none (404)."""
    try:
        with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 - a fixed https URL
            return str(response.read().decode())
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return None
        raise ImportFailure(f"{url}: HTTP {err.code} {err.reason}") from None
    except (urllib.error.URLError, OSError) as err:
        raise ImportFailure(f"{url}: {_one_line(str(getattr(err, 'reason', err)))}") from None
    except UnicodeDecodeError:
        raise ImportFailure(f"{url}: not a CloudFormation template (not UTF-8 text)") from None


def online(version: str, scratch: Path) -> Artifacts:
    """The artifacts of a release from their public sources."""
    charts = scratch / "charts"
    charts.mkdir()
    for name in CHARTS:
        try:
            helm.run("pull", f"{REGISTRY}/{name}", "--version", version, "--untar", "--untardir", str(charts))
        except helm.HelmError as err:
            raise ImportFailure(f"Karpenter {version}: {REGISTRY}/{name}: {_one_line(str(err))}") from None
    major, minor, _ = version.split(".")
    urls = [TEMPLATE_URL.format(version=version, docs=docs) for docs in (f"v{major}.{minor}", "preview")]
    for url in urls:
        text = _download(url)
        if text is not None:
            return Artifacts(charts, text, url)
    raise ImportFailure(f"Karpenter {version}: no getting-started CloudFormation template at {' nor '.join(urls)}")


# --- checking and deriving -------------------------------------------------------------------------------------


def _yaml_problem(err: yaml.YAMLError) -> str:
    where = getattr(err, "problem_mark", None)
    at = f" at line {where.line + 1}" if where is not None else ""
    return f"not YAML{at} ({_one_line(str(getattr(err, 'problem', None) or err))})"


def _yaml(path: Path, shown: str) -> Any:
    """``path`` parsed (``shown``: how messages name it)."""
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ImportFailure(f"{shown}: {_yaml_problem(err)}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ImportFailure(f"{shown}: not readable ({_one_line(str(err))})") from None


def check_chart(chart: Path, name: str, version: str, shown: str) -> dict[str, Any]:
    """The chart's parsed values.yaml, after checking it is the chart ``name`` of ``version`` (``shown``: its
    folder as the user gave it, for messages)."""
    meta = _yaml(chart / "Chart.yaml", f"{shown}/Chart.yaml") if (chart / "Chart.yaml").is_file() else None
    if not isinstance(meta, dict):
        raise ImportFailure(f"{shown}/Chart.yaml: missing or not a chart's metadata")
    if meta.get("name") != name or str(meta.get("version")) != version:
        raise ImportFailure(
            f"{shown}/Chart.yaml: chart {meta.get('name')} {meta.get('version')}, expected {name} {version}"
        )
    values = _yaml(chart / "values.yaml", f"{shown}/values.yaml") if (chart / "values.yaml").is_file() else None
    if not isinstance(values, dict):
        raise ImportFailure(f"{shown}/values.yaml: missing or not a mapping of values")
    return values


def render_crds(chart: Path, shown: str) -> dict[str, str]:
    """The CRDs the karpenter-crd chart installs (``helm template`` with its default values: the app installs it with
    none, constructs_lib/karpenter_release.py), by file name: each document as the chart renders it, without the
    ``# Source:`` line Helm adds and the blank line between documents. (1.14.1's are then byte for byte the
    ``pkg/apis/crds/`` files of the release, which the chart's templates hold with an ``additionalAnnotations``
    hook that renders nothing by default.)"""
    try:
        out = helm.run("template", "karpenter-crd", str(chart))
    except helm.HelmError as err:
        raise ImportFailure(f"{shown}: {_one_line(str(err))}") from None
    parts = RENDERED.split(out)
    crds = {name: "---\n" + body.rstrip("\n") + "\n" for name, body in zip(parts[1::2], parts[2::2], strict=True)}
    for name, text in crds.items():
        try:
            loaded = yaml.load(text, Loader=yaml_load.SAFE_LOADER)
        except yaml.YAMLError:
            loaded = None
        if not isinstance(loaded, dict) or loaded.get("kind") != "CustomResourceDefinition":
            raise ImportFailure(f"{shown}/templates/{name}: does not render a CustomResourceDefinition")
        problem = crd_shape_problem(loaded)
        if problem is not None:
            raise ImportFailure(f"{shown}/templates/{name}: {problem}")
    missing = sorted(set(mirror_crd_schema.CRD_FILES.values()) - set(crds))
    if missing:
        raise ImportFailure(f"{shown}: renders no {', '.join(missing)} (the schema mirrors are taken from it)")
    return crds


def crd_shape_problem(crd: dict[str, Any]) -> str | None:
    """What the mirrors need of a CRD and it lacks (None: it has it): a group and a kind, exactly one served
    version, whose OpenAPI schema is a mapping with a spec of properties."""
    spec = crd.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("group"), str):
        return "a CustomResourceDefinition without spec.group"
    if not isinstance(spec.get("names"), dict) or not isinstance(spec["names"].get("kind"), str):
        return "a CustomResourceDefinition without spec.names.kind"
    versions = spec.get("versions")
    served = [v for v in versions if isinstance(v, dict) and v.get("served")] if isinstance(versions, list) else []
    if len(served) != 1:
        return f"serves {len(served)} versions (spec.versions[].served); the mirrors read exactly one"
    schema = served[0].get("schema")
    openapi = schema.get("openAPIV3Schema") if isinstance(schema, dict) else None
    properties = openapi.get("properties") if isinstance(openapi, dict) else None
    if not isinstance(properties, dict) or not isinstance(properties.get("spec"), dict):
        return f"version {served[0].get('name')!s}: schema.openAPIV3Schema.properties.spec is not a mapping"
    return None


def feature_gates(values: dict[str, Any], shown: str) -> dict[str, bool]:
    settings = values.get("settings")
    gates = settings.get("featureGates") if isinstance(settings, dict) else None
    if not isinstance(gates, dict) or not all(isinstance(v, bool) for v in gates.values()):
        raise ImportFailure(f"{shown}/values.yaml: settings.featureGates is not a mapping of gates to true or false")
    return dict(gates)


def _json(data: Any, indent: int = 2) -> str:
    return json.dumps(data, indent=indent) + "\n"


# --- the project's template -------------------------------------------------------------------------------------


def imported(root: Path) -> list[str]:
    """The versions the project has a hardened template of, with upstream's template it was derived from."""
    found = [
        m.group(1)
        for p in (root / "templates").glob("karpenter-*.yaml")
        if (m := re.fullmatch(r"karpenter-([0-9]+\.[0-9]+\.[0-9]+)\.yaml", p.name, re.ASCII))
        and (root / "templates" / "upstream" / p.name).is_file()
    ]
    return sorted(found, key=version_key)


def nearest(root: Path, version: str) -> str:
    """The imported version the project's hardening is carried from: the version itself when it is imported, else
    the nearest one (major, then minor, then patch distance; the older of two as near)."""
    candidates = imported(root)
    if not candidates:
        raise ImportFailure(
            f"{root / 'templates'}: no imported version to carry the project's hardening from "
            "(templates/karpenter-<version>.yaml with templates/upstream/karpenter-<version>.yaml)"
        )
    wanted = version_key(version)
    return min(
        candidates,
        key=lambda v: (tuple(abs(a - b) for a, b in zip(version_key(v), wanted, strict=True)), version_key(v)),
    )


def resolve(version: str) -> str:
    """What to do when the hardening cannot be carried over by itself: the import carries a release's own files."""
    names = layout(version)
    return (
        f"merge it by hand: upstream's template as {names['upstream template']}, the project's as "
        f"{names['template']} and its reasons as {names['changes']}, then import again"
    )


def with_version(text: str, old: str, new: str) -> str:
    """``text`` with the release it names (``Karpenter 1.14.1``) changed to ``new``."""
    return re.sub(rf"(?<![0-9.]){re.escape(old)}(?!\.?[0-9])", new, text, flags=re.ASCII)


@dataclass(frozen=True)
class Merged:
    text: str
    base: str  # the version whose hardening was carried
    review: list[str]  # what to print


def _conflict(merged: str, ours: str, version: str, base: str, count: int) -> ImportFailure:
    lines = merged.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("<<<<<<< "))
    middle = next(i for i in range(start, len(lines)) if lines[i].startswith("======="))
    theirs = lines[middle + 1] if middle + 1 < len(lines) and not lines[middle + 1].startswith(">>>>>>> ") else ""
    mine = lines[start + 1] if start + 1 < middle else ""
    return ImportFailure(
        f"{ours}: the project's hardening (carried from Karpenter {base}) conflicts with upstream's change "
        f"{base} -> {version} at line {start + 1} ({count} conflicting hunk{'s' if count > 1 else ''}): "
        f"the project's {mine.strip()!r} against upstream's {theirs.strip()!r}; {resolve(version)}"
    )


def three_way(ours: str, base: str, theirs: str, scratch: Path) -> tuple[str, int]:
    """git merge-file of the three texts: the merge, and how many hunks conflict."""
    paths = []
    for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
        path = scratch / f"merge-{name}.yaml"
        path.write_text(text)
        paths.append(str(path))
    try:
        done = subprocess.run(
            ["git", "merge-file", "-p", "-L", "project", "-L", "base", "-L", "upstream", *paths],
            capture_output=True,
            text=True,
        )
    except OSError as err:
        raise ImportFailure(f"git merge-file (the 3-way merge of the template): {err.strerror}") from None
    if done.returncode < 0 or done.returncode > 127:
        raise ImportFailure(f"git merge-file: {_one_line(done.stderr)}")
    return done.stdout, done.returncode


def merge_template(root: Path, version: str, upstream: str, scratch: Path) -> Merged:
    """The project's template of ``version``: its hardening of the nearest imported version re-applied to
    upstream's new template, with the diffs to review."""
    base = nearest(root, version)
    names = layout(base)
    ours_path, base_path = names["template"], names["upstream template"]
    ours = with_version((root / ours_path).read_text(), base, version)
    base_text = with_version((root / base_path).read_text(), base, version)
    merged, conflicts = three_way(ours, base_text, upstream, scratch)
    if conflicts:
        raise _conflict(merged, ours_path, version, base, conflicts)
    target = layout(version)["template"]
    upstream_diff = list(
        difflib.unified_diff(
            (root / base_path).read_text().splitlines(),
            upstream.splitlines(),
            f"{base_path} (upstream's {base})",
            f"upstream's {version}",
            lineterm="",
        )
    )
    review = [
        f"{target}: the project's hardening of Karpenter {base} re-applied to upstream's {version} template "
        f"(3-way merge: base {base_path}, ours {ours_path}, theirs upstream's {version})",
        f"upstream's template {base} -> {version}: " + ("identical" if not upstream_diff else "changed:"),
        *upstream_diff,
    ]
    ours_diff = list(
        difflib.unified_diff(
            (root / ours_path).read_text().splitlines(), merged.splitlines(), ours_path, target, lineterm=""
        )
    )
    review += (
        [f"the project's template {base} -> {version} (review it):", *ours_diff]
        if ours_diff
        else [f"the project's template {base} -> {version}: identical"]
    )
    return Merged(merged, base, review)


# --- writing ----------------------------------------------------------------------------------------------------


def _readme(version: str, stubs: bool) -> str:
    major, minor, _ = version.split(".")
    lines = [
        f"# Karpenter {version}, as upstream released it",
        "",
        "Written by `python -m tooling.karpenter_import` (`make karpenter-import VERSION=...`); do not edit by hand.",
        "Apache License 2.0, as the Karpenter project ([aws/karpenter-provider-aws](https://github.com/aws/karpenter-provider-aws)).",
        "",
        f"- `charts/karpenter/` and `charts/karpenter-crd/`: the two Helm charts of version {version}, unchanged, as "
        f"`helm pull {REGISTRY}/<chart> --version {version}` gives them (the registry the app installs from), or as "
        "a folder given to `--from` holds them.",
        "- `crds/`: the CustomResourceDefinitions the `karpenter-crd` chart installs, rendered by the project's Helm "
        "(`helm template` with the chart's default values: the app installs it with none), one file per "
        "document, without the `# Source:` line Helm adds. The schema and CEL mirrors of `tooling/schemas/karpenter-"
        f"{version}/` are generated from them.",
        f"- Upstream's getting-started CloudFormation template is `templates/upstream/karpenter-{version}.yaml`, "
        f"from `{TEMPLATE_URL.format(version=version, docs=f'v{major}.{minor}')}` (or the `preview/` docs folder "
        "where the minor's is missing at the tag).",
    ]
    if stubs:
        lines.append(
            "- `charts/karpenter/crds/` holds Git symlink stubs (paths into the repository's `pkg/apis/crds/`), as a "
            "checkout of the release commit has them; the registry's archive holds the CRDs themselves. The app "
            "installs the CRDs with the `karpenter-crd` chart, whose rendering is `crds/`."
        )
    return "\n".join(lines) + "\n"


def _stubs(chart: Path) -> bool:
    """Whether the karpenter chart's crds/ holds symlink stubs (one line naming a path) instead of CRDs."""
    files = sorted((chart / "crds").glob("*.yaml"))
    return bool(files) and all(len(f.read_text().strip().splitlines()) == 1 for f in files)


def _schemas(crds: Path, chart: Path, values: dict[str, Any], version: str) -> dict[str, str]:
    """Every mirror of tooling/schemas/karpenter-<version>/, by file name."""
    out = {f"{name}.schema.json": text for name, text in mirror_crd_schema.mirrors(version, crds).items()}
    out["cel-rules.json"] = _json(mirror_crd_rules.mirror(crds, version), indent=1)
    out["controller-values.schema.json"] = _json(values_schema(chart, values, version))
    for name, text in out.items():
        if name.endswith(".schema.json"):
            Draft202012Validator.check_schema(json.loads(text))
    return out


def object_fields(schemas: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Every field of each kind's ``spec`` that the release's CRD declares, by path (``[]``: a list's items): its
    enum, ``"map"`` (keys of the user's choosing), or None. What the app reads to refuse, for the release a
    configuration chooses, a field or value that release does not know (constructs_lib/releases)."""
    kinds: dict[str, dict[str, Any]] = {}
    for name in ("nodepool", "ec2nodeclass", "nodeoverlay"):
        schema = json.loads(schemas[f"{name}.schema.json"])
        fields: dict[str, Any] = {}
        _fields(schema["properties"]["spec"], "spec", fields)
        kinds[schema["title"].split(" ", 1)[0]] = fields
    return kinds


def _fields(node: dict[str, Any], path: str, out: dict[str, Any]) -> None:
    extra = node.get("additionalProperties")
    out[path] = node["enum"] if "enum" in node else "map" if isinstance(extra, dict) else None
    for key, child in node.get("properties", {}).items():
        _fields(child, f"{path}.{key}", out)
    if isinstance(node.get("items"), dict):
        _fields(node["items"], f"{path}[]", out)


def _write(tree: Path, relative: str, text: str) -> None:
    path = tree / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _check_template(path: Path, shown: str) -> None:
    try:
        resources = load_template(path).get("Resources")
    except yaml.YAMLError as err:
        raise ImportFailure(f"{shown}: {_yaml_problem(err)}") from None
    except ValueError:
        raise ImportFailure(f"{shown}: not a CloudFormation template (not a mapping)") from None
    if not isinstance(resources, dict) or not resources:
        raise ImportFailure(f"{shown}: not a CloudFormation template (no Resources)")


def stage(root: Path, version: str, artifacts: Artifacts, shown: str, scratch: Path) -> tuple[Path, Merged]:
    """Everything the release writes, in ``scratch/tree`` laid out as the project is."""
    tree, names = scratch / "tree", layout(version)
    charts = tree / names["upstream"] / "charts"
    shutil.copytree(artifacts.charts, charts)
    values = check_chart(charts / "karpenter", "karpenter", version, f"{shown}/karpenter")
    check_chart(charts / "karpenter-crd", "karpenter-crd", version, f"{shown}/karpenter-crd")
    for name, text in render_crds(charts / "karpenter-crd", f"{shown}/karpenter-crd").items():
        _write(tree, f"{names['upstream']}/crds/{name}", text)
    _write(tree, f"{names['upstream']}/README.md", _readme(version, _stubs(charts / "karpenter")))
    _write(tree, names["upstream template"], artifacts.template)
    _check_template(tree / names["upstream template"], artifacts.template_source)
    merged = merge_template(root, version, artifacts.template, scratch)
    _write(tree, names["template"], merged.text)
    base_changes = root / layout(merged.base)["changes"]
    _write(tree, names["changes"], with_version(base_changes.read_text(), merged.base, version))
    schemas = _schemas(tree / names["upstream"] / "crds", charts / "karpenter", values, version)
    for name, text in schemas.items():
        _write(tree, f"{names['schemas']}/{name}", text)
    release = {
        "karpenter": version,
        "source": f"{names['upstream']}/charts/karpenter/values.yaml settings.featureGates; {names['upstream']}/crds",
        "generated-by": "python -m tooling.karpenter_import",
        "featureGates": feature_gates(values, f"{shown}/karpenter"),
        "objects": object_fields(schemas),
    }
    _write(tree, names["release"], _json(release))
    problems = template_parity.report(tree / names["template"])[1]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ImportFailure(f"{problems[0]}{more}; {resolve(version)}")
    return tree, merged


def move_in(root: Path, tree: Path, version: str, aside: Path) -> list[str]:
    """Move the staged release into the project, replacing what it had of that version; on a failure midway, put
    back what was there. The files written, relative to the root."""
    moved: list[tuple[Path, Path | None]] = []
    relative = ""
    try:
        for relative in layout(version).values():
            target, old = root / relative, None
            if target.exists():
                old = aside / relative
                old.parent.mkdir(parents=True, exist_ok=True)
                os.replace(target, old)
            moved.append((target, old))
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tree / relative, target)
    except OSError as err:
        for target, old in reversed(moved):
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
            if old is not None:
                os.replace(old, target)
        raise ImportFailure(f"{root}: could not move {relative} in ({err.strerror}); nothing was changed") from None
    return _files(root, version)


def _files(root: Path, version: str) -> list[str]:
    found: list[str] = []
    for relative in layout(version).values():
        path = root / relative
        if path.is_dir():
            found += [str(p.relative_to(root)) for p in sorted(path.rglob("*")) if p.is_file()]
        else:
            found.append(relative)
    return found


# --- the command ------------------------------------------------------------------------------------------------


@contextmanager
def scratch_folder(root: Path) -> Iterator[Path]:
    """A staging folder beside the project's files (same file system: moving in is a rename), removed at the end."""
    parent = root / ".cache" / "karpenter-import"
    parent.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def decide(root: Path, tree: Path, version: str, base: str, out: Callable[[str], None]) -> None:
    """The release report between the release imported and its base (the older of the two first: what an upgrade
    meets), printed; ImportFailure when a change needs a human decision (release_report.py: a new required
    field, a removed field or chart key the app writes, an enum or pattern narrowed under what the app produces, an
    upstream grant the project's template does not cover)."""
    if base == version:
        return
    old, new = sorted((base, version), key=version_key)
    try:
        report = release_report.compare(root, old, new, trees={version: tree})
    except report_base.ReportError as error:
        raise ImportFailure(f"the release report {old} -> {new}: {error}") from None
    out(report.markdown().rstrip("\n"))
    if report.decisions:
        more = f" (and {len(report.decisions) - 1} more, listed above)" if len(report.decisions) > 1 else ""
        raise ImportFailure(
            f"Karpenter {old} -> {new} needs a decision before the import: {report.decisions[0]}{more}; nothing was "
            "written"
        )


def run(
    version: str,
    source: Path | None,
    root: Path,
    out: Callable[[str], None] = print,
) -> list[str]:
    """Import ``version`` into ``root`` (``source``: a folder of its artifacts, else the public sources); the files
    written. ImportFailure: nothing was written."""
    if not VERSION.fullmatch(version):
        raise ImportFailure(f"VERSION {version!r}: not a Karpenter release version (X.Y.Z, e.g. 1.14.1)")
    if not (root / "templates").is_dir():
        raise ImportFailure(f"--root {root}: not a copy of the project (no templates/)")
    with scratch_folder(root) as scratch:
        fetched = scratch / "fetched"
        fetched.mkdir()
        artifacts = from_folder(source, version, fetched) if source else online(version, fetched)
        shown = f"{source}/charts" if source else REGISTRY
        tree, merged = stage(root, version, artifacts, shown, scratch)
        for line in merged.review:
            out(line)
        decide(root, tree, version, merged.base, out)
        written = move_in(root, tree, version, scratch / "aside")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tooling.releases.karpenter_import", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("version", help="the Karpenter release, e.g. 1.15.0")
    parser.add_argument("--from", dest="source", type=Path, help="a folder holding the release's artifacts")
    parser.add_argument("--root", type=Path, default=ROOT, help="the copy of the project to write into")
    args = parser.parse_args(argv)
    if not args.version:
        print("karpenter-import: VERSION is required, e.g. make karpenter-import VERSION=1.15.0", file=sys.stderr)
        return 1
    root = args.root.resolve()
    before = _contents(root, args.version) if VERSION.fullmatch(args.version) else {}
    try:
        written = run(args.version, args.source, root)
    except ImportFailure as failure:
        print(f"karpenter-import: {failure}", file=sys.stderr)
        return 1
    after = _contents(root, args.version)
    changed = sorted(f for f in after if before.get(f) != after[f]) + sorted(set(before) - set(after))
    lines = sum(len(after[f].splitlines()) for f in written)
    folders = ", ".join(layout(args.version).values())
    print(
        f"imported Karpenter {args.version}: {len(written)} files, {lines} lines, in {folders}; "
        + (
            f"{len(changed)} new or changed (review the diff above and `git status`, then commit)"
            if changed
            else "nothing changed"
        )
    )
    return 0


def _contents(root: Path, version: str) -> dict[str, bytes]:
    """The files one release has in ``root`` (relative path -> bytes)."""
    return {f: (root / f).read_bytes() for f in _files(root, version) if (root / f).is_file()}


if __name__ == "__main__":
    sys.exit(main())
