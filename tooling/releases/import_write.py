"""What an import writes, checked and derived from the release's artifacts: each chart checked against the release
(:func:`check_chart`), the CRDs the ``karpenter-crd`` chart installs rendered and checked (:func:`render_crds`), the
schema and CEL mirrors and the chart values schema, the release's feature gates and object fields, upstream's
template and the project's merged one; all of it staged in a scratch tree laid out as the project is (:func:`stage`),
then moved in, putting back what was there on a failure midway (:func:`move_in`)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator

from constructs_lib.karpenter import yaml_load
from constructs_lib.karpenter.template_parity import load_template
from tooling import mirror_crd_rules, mirror_crd_schema
from tooling.chart_values_schema import values_schema
from tooling.releases import helm, template_parity
from tooling.releases.import_base import REGISTRY, TEMPLATE_URL, Artifacts, ImportFailure, _one_line, layout
from tooling.releases.import_template import Merged, merge_template, resolve, with_version

RENDERED = re.compile(r"^---\n# Source: karpenter-crd/templates/([^\n]+)\n", re.ASCII | re.MULTILINE)


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
    none, constructs_lib/karpenter/release.py), by file name: each document as the chart renders it, without the
    ``# Source:`` line Helm adds and the blank line between documents. (1.14.1's are then byte for byte the
    ``pkg/apis/crds/`` files of the release, which the chart's templates hold with an ``additionalAnnotations``
    hook that renders nothing by default.)"""
    try:
        out = helm.template("karpenter-crd", chart)
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


# --- writing ----------------------------------------------------------------------------------------------------


def _readme(version: str, stubs: bool) -> str:
    major, minor, _ = version.split(".")
    lines = [
        f"# Karpenter {version}, as upstream released it",
        "",
        "Written by `python -m tooling.releases.karpenter_import` (`make karpenter-import VERSION=...`); do not edit by hand.",
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
        "source": f"{names['upstream']}/charts/karpenter/values.yaml settings.featureGates; {names['upstream']}/crds; "
        f"{names['schemas']}/controller-values.schema.json",
        "generated-by": "python -m tooling.releases.karpenter_import",
        "featureGates": feature_gates(values, f"{shown}/karpenter"),
        "objects": object_fields(schemas),
        # The chart values schema again, for the construct (which reads only its own release data): what
        # controller.chartValues may hold for this release.
        "chartValues": json.loads(schemas["controller-values.schema.json"]),
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
