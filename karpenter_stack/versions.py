"""Version facts: which Kubernetes versions CDK, Karpenter and EKS support, where each one's kubectl
layer comes from, which Karpenter versions this project has a CloudFormation template for, and which
EKS add-on versions follow each Kubernetes minor. (The delivery pipeline's tool versions:
``pipeline_tools``; which AMIs exist for a minor: ``constructs_lib.karpenter.specs.ami``.)"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import cast

from aws_cdk import aws_eks as eks

from constructs_lib.karpenter import releases
from constructs_lib.karpenter.specs import ami
from constructs_lib.karpenter.specs.base import quoted

TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "templates"
_TEMPLATE_PATTERN = re.compile(r"^karpenter-(\d+\.\d+\.\d+)\.yaml$", re.ASCII)

# Kubernetes minor versions each Karpenter minor supports (upstream compatibility matrix).
KARPENTER_KUBERNETES_RANGE: dict[tuple[int, int], tuple[int, int]] = {
    (1, 6): (26, 34),
    (1, 7): (26, 34),
    (1, 8): (26, 34),
    (1, 9): (26, 35),
    (1, 10): (26, 35),
    (1, 11): (26, 35),
    (1, 12): (26, 35),
    (1, 13): (26, 36),
    (1, 14): (26, 36),
}

# The project's runtime requirements: they list the kubectl layer of every supported Kubernetes version.
REQUIREMENTS = TEMPLATES_DIR.parent / "requirements.txt"


class VersionError(ValueError):
    """A version setting that cannot be honoured; the message names setting, value and what is allowed."""


def minor_of(kubernetes_version: str) -> int:
    match = re.fullmatch(r"1\.(\d+)", kubernetes_version, re.ASCII)
    if not match:
        raise VersionError(
            f"kubernetesVersion '{kubernetes_version}' is not of the form 1.NN (e.g. {cdk_kubernetes_versions()[-1]})"
        )
    return int(match.group(1))


def cdk_kubernetes_versions() -> list[str]:
    """Kubernetes versions aws-cdk-lib's aws_eks module knows (KubernetesVersion.V1_NN)."""
    minors = sorted(
        int(name.split("_")[1]) for name in dir(eks.KubernetesVersion) if re.fullmatch(r"V1_\d+", name, re.ASCII)
    )
    return [f"1.{m}" for m in minors]


@dataclass(frozen=True)
class KubectlLayer:
    """The kubectl/helm Lambda layer that matches one Kubernetes version."""

    kubernetes_version: str
    package: str
    module: str
    class_name: str

    @classmethod
    def for_version(cls, kubernetes_version: str) -> KubectlLayer:
        minor = minor_of(kubernetes_version)
        return cls(
            kubernetes_version=kubernetes_version,
            package=f"aws-cdk.lambda-layer-kubectl-v{minor}",
            module=f"aws_cdk.lambda_layer_kubectl_v{minor}",
            class_name=f"KubectlV{minor}Layer",
        )

    def listed(self, requirements: Path = REQUIREMENTS) -> bool:
        """Whether the project's requirements install this layer."""
        lines = requirements.read_text().splitlines() if requirements.is_file() else []
        return any(line.split("==")[0].strip() == self.package for line in lines)

    def load(self, importer: Callable[[str], object] = importlib.import_module) -> type:
        """Import the layer class, or fail with what installs it."""
        try:
            module = importer(self.module)
        except ModuleNotFoundError:
            fix = (
                "run `make setup` (it installs requirements.txt into .venv/)"
                if self.listed()
                else f"add it to requirements.txt, pinned ({self.package}==<version>), and run `make setup`"
            )
            raise VersionError(
                f"kubernetesVersion '{self.kubernetes_version}' needs the kubectl layer package {self.package}, "
                f"which is not installed; {fix}"
            ) from None
        return cast(type, getattr(module, self.class_name))


@functools.cache  # (a jsii call each time otherwise: every configuration the process loads asks)
def eks_kubernetes_version(kubernetes_version: str) -> eks.KubernetesVersion:
    minor = minor_of(kubernetes_version)
    constant = getattr(eks.KubernetesVersion, f"V1_{minor}", None)
    if constant is None:
        raise VersionError(
            f"kubernetesVersion '{kubernetes_version}' is not known to aws-cdk-lib's aws_eks module "
            f"(it knows up to {cdk_kubernetes_versions()[-1]})"
        )
    return cast(eks.KubernetesVersion, constant)


def available_karpenter_versions(templates_dir: Path = TEMPLATES_DIR) -> list[str]:
    """The imported Karpenter releases (``make karpenter-import``): a template in ``templates_dir`` and the release's
    facts in constructs_lib/karpenter/releases."""
    found = [m.group(1) for p in templates_dir.iterdir() if (m := _TEMPLATE_PATTERN.match(p.name))]
    return [v for v in releases.imported() if v in found]


def karpenter_template(karpenter_version: str, templates_dir: Path = TEMPLATES_DIR) -> Path:
    path = templates_dir / f"karpenter-{karpenter_version}.yaml"
    if not path.is_file() or karpenter_version not in releases.imported():
        available = ", ".join(available_karpenter_versions(templates_dir)) or "none"
        raise VersionError(
            f"karpenterVersion = {quoted(karpenter_version)}: not imported (imported: {available}); import it with "
            f"make karpenter-import VERSION={karpenter_version}"
        )
    return path


def check_compatibility(karpenter_version: str, kubernetes_version: str) -> None:
    major, minor = (int(x) for x in karpenter_version.split(".")[:2])
    supported = KARPENTER_KUBERNETES_RANGE.get((major, minor))
    if supported is None:
        return  # no matrix entry: the template check already limits versions to known ones
    low, high = supported
    k8s_minor = minor_of(kubernetes_version)
    if not low <= k8s_minor <= high:
        raise VersionError(
            f"kubernetesVersion '{kubernetes_version}' is not supported by Karpenter "
            f"{karpenter_version}, which supports Kubernetes 1.{low} to 1.{high}"
        )


# EKS support calendar (end of standard support, end of extended support) per Kubernetes minor.
# Extended support lasts 12 months after standard support and is billed at the extended rate; after
# it ends a version can no longer be created. None: not announced when this table was written.
EKS_SUPPORT: dict[int, tuple[date | None, date | None]] = {
    30: (None, date(2026, 7, 23)),
    31: (None, date(2026, 11, 26)),
    32: (date(2026, 3, 23), date(2027, 3, 23)),
    33: (date(2026, 7, 29), date(2027, 7, 29)),
    34: (date(2026, 12, 2), date(2027, 12, 2)),
    35: (date(2027, 3, 27), date(2028, 3, 27)),
    36: (None, None),
}
# Minors below the table ended extended support no later than the oldest entry.
_OLDEST = min(EKS_SUPPORT)
EXTENDED_SUPPORT_PRICE = "USD 0.60 per cluster-hour instead of USD 0.10 in standard support"


def check_eks_support(kubernetes_version: str, today: date) -> str | None:
    """Raise if EKS can no longer create the version; return a warning while it is in extended support."""
    minor = minor_of(kubernetes_version)
    if minor < _OLDEST:
        ended = EKS_SUPPORT[_OLDEST][1]
        raise VersionError(
            f"kubernetesVersion '{kubernetes_version}' is past the end of EKS extended support (ended before "
            f"{ended}) and can no longer be created; use 1.{_first_supported(today)} or newer"
        )
    standard_end, extended_end = EKS_SUPPORT.get(minor, (None, None))
    if extended_end is not None and today >= extended_end:
        raise VersionError(
            f"kubernetesVersion '{kubernetes_version}' is past the end of EKS extended support "
            f"({extended_end.isoformat()}) and can no longer be created; use 1.{_first_supported(today)} or newer"
        )
    if (standard_end is not None and today >= standard_end) or (standard_end is None and extended_end is not None):
        return (
            f"kubernetesVersion '{kubernetes_version}' is in EKS extended support until {extended_end}: "
            f"the cluster is billed at the extended-support rate ({EXTENDED_SUPPORT_PRICE}); upgrade to a "
            "version in standard support to avoid it"
        )
    return None


def _first_supported(today: date) -> int:
    return min(m for m, (_, ext) in EKS_SUPPORT.items() if ext is None or today < ext)


# Amazon EKS add-on versions that follow the Kubernetes minor: the latest EKS-type version per minor as
# listed by the Amazon EKS User Guide ("Manage CoreDNS", "Manage kube-proxy"; read 2026-11). Pinned
# here, so a Kubernetes version bump changes them in the same template and CloudFormation updates
# them in the same deploy, after the control plane (they reference the cluster). The vpc-cni add-on
# is one version for every supported minor: EKS's default unless addonVersions pins it.
ADDON_VERSIONS: dict[str, dict[int, str]] = {
    "coredns": {
        31: "v1.11.4-eksbuild.40",
        32: "v1.11.4-eksbuild.40",
        33: "v1.12.4-eksbuild.18",
        34: "v1.13.2-eksbuild.11",
        35: "v1.14.3-eksbuild.3",
        36: "v1.14.3-eksbuild.3",
    },
    "kube-proxy": {
        31: "v1.31.14-eksbuild.20",
        32: "v1.32.13-eksbuild.16",
        33: "v1.33.10-eksbuild.13",
        34: "v1.34.6-eksbuild.13",
        35: "v1.35.3-eksbuild.13",
        36: "v1.36.0-eksbuild.14",
    },
}
MANAGED_ADDONS = ("vpc-cni", "kube-proxy", "coredns")
# Every add-on this app manages either follows kubernetesVersion (ADDON_VERSIONS) or is here, with the reason it
# does not (a documented pin: AddonVersion unset, i.e. EKS's default at creation, until addonVersions pins it).
#
# Why no per-minor table for these two (checked 2026-11):
# - vpc-cni is not bound to a Kubernetes minor: every revision of the EKS User Guide's "Amazon VPC CNI versions"
#   table lists ONE version for all supported minors (awsdocs/amazon-eks-user-guide,
#   latest/ug/networking/managing-vpc-cni.adoc: v1.19.2-eksbuild.5 for 1.24-1.32 in one revision, v1.20.1-eksbuild.3
#   for 1.27-1.33 in the newest one stored, commit 057948d). No source available here lists the versions EKS
#   publishes for 1.34-1.36 in 2026-11; third-party templates show later builds (v1.21.x, v1.22.x) in use, which
#   is not EKS's word for a minor.
# - eks-pod-identity-agent: its EKS User Guide page ("EKS Pod Identity Agent", add-ons-pod-id) has no version
#   table, and its versions (v1.x.y-eksbuild.N) are not numbered after Kubernetes minors; the add-on is available
#   on every minor from 1.24 on.
# A table of the versions that can be verified would be wrong for running stacks: the add-on has AddonVersion
# unset today, so EKS installed its default of the day the cluster was created, often newer than a 2025 table;
# writing an older version into the template would ask EKS to move the running add-on backwards on the next
# deploy. Unverified strings could fail a deploy (a version EKS does not list for the cluster's minor).
# So the approach that cannot be wrong: leave them at EKS's default, say so, and let addonVersions pin them --
# a pin is updated in place (AddonVersion), after the control plane (the add-on references the cluster).
ADDONS_NOT_BOUND_TO_A_MINOR: dict[str, str] = {
    "vpc-cni": (
        "EKS lists one vpc-cni version for every supported Kubernetes minor (EKS User Guide, Amazon VPC CNI "
        "versions): it need not move with the minor; EKS's default at creation until addonVersions pins it"
    ),
    "eks-pod-identity-agent": (
        "EKS offers the Pod Identity Agent for every Kubernetes minor from 1.24 on, with no version per minor: "
        "EKS's default at creation until addonVersions pins it"
    ),
}


def _coredns_line(version: str) -> tuple[int, int]:
    major, minor = version.lstrip("v").split(".")[:2]
    return int(major), int(minor)


def _check_coredns(version: str, minor: int) -> None:
    """Refuse a CoreDNS release line that EKS lists first for a later Kubernetes minor: EKS offers a CoreDNS
    add-on version only for the cluster versions it was built for."""
    table = ADDON_VERSIONS["coredns"]
    documented = _coredns_line(table[minor])
    line = _coredns_line(version)
    first = min((m for m, v in table.items() if _coredns_line(v) >= line and m > minor), default=None)
    if line > documented and first is not None:
        raise VersionError(
            f"addonVersions.coredns '{version}' is CoreDNS {line[0]}.{line[1]}, which EKS lists first for "
            f"Kubernetes 1.{first}; for 1.{minor} EKS lists up to {table[minor]} (check: aws eks "
            f"describe-addon-versions --addon-name coredns --kubernetes-version 1.{minor})"
        )


def addon_versions(kubernetes_version: str, pinned: dict[str, str]) -> dict[str, str | None]:
    """The version of each managed add-on for this Kubernetes version (None: EKS's default), with the
    user's pins applied; raise when a minor-bound add-on has neither a known version nor a pin, a
    kube-proxy pin is for another minor, or a CoreDNS pin is of a line EKS lists only for later minors."""
    minor = minor_of(kubernetes_version)
    chosen: dict[str, str | None] = {}
    for name in MANAGED_ADDONS:
        assert (name in ADDON_VERSIONS) != (name in ADDONS_NOT_BOUND_TO_A_MINOR), f"{name}: a table or a reason"
        known = ADDON_VERSIONS.get(name, {}).get(minor)
        version = pinned.get(name, known)
        if version is None and name in ADDON_VERSIONS:
            raise VersionError(
                f"kubernetesVersion '{kubernetes_version}' has no known {name} add-on version; set "
                f"addonVersions.{name} (aws eks describe-addon-versions --addon-name {name} "
                f"--kubernetes-version {kubernetes_version})"
            )
        if name == "kube-proxy" and version is not None and not version.startswith(f"v1.{minor}."):
            raise VersionError(
                f"addonVersions.kube-proxy '{version}' is not for Kubernetes {kubernetes_version} "
                f"(kube-proxy's version follows the cluster's minor: v1.{minor}.x-eksbuild.N)"
            )
        if name == "coredns" and version is not None and minor in ADDON_VERSIONS["coredns"]:
            _check_coredns(version, minor)
        chosen[name] = version
    return chosen


def check_ami_alias(alias: str, kubernetes_version: str) -> None:
    """Refuse an AMI alias that has no image for this Kubernetes version (the rule: ``ami.unavailable_alias``)."""
    problem = ami.unavailable_alias(alias, kubernetes_version, minor_of(kubernetes_version))
    if problem is not None:
        raise VersionError(problem)
