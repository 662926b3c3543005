"""Fetching a Karpenter release's artifacts for the import: the ``karpenter`` and ``karpenter-crd`` charts and
upstream's getting-started CloudFormation template, from a folder (``--from``: the charts unpacked or as the archives
``helm pull`` writes, and ``cloudformation.yaml``, :func:`from_folder`) or from their public sources (``helm pull``
from the OCI registry with the project's pinned Helm, the template from the release's documentation,
:func:`online`)."""

from __future__ import annotations

import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from tooling.releases import helm
from tooling.releases.import_base import CHARTS, REGISTRY, TEMPLATE_URL, Artifacts, ImportFailure, _one_line


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
