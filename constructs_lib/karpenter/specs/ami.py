"""AMI families, in one place: the aliases Karpenter resolves, the operating system each family runs,
the devices and snapshot sizes it boots with, and what it does not support."""

from __future__ import annotations

import re
from datetime import date
from typing import Any, Literal, get_args

from .base import quoted
from .ec2 import ebs_volume

WINDOWS_FAMILIES = ("windows2019", "windows2022", "windows2025")
# EC2NodeClass spec.amiFamily (Karpenter 1.14.1's CRD enum): what user data Karpenter generates and which block
# devices it defaults to; Custom: neither (the user data joins the node, the mappings are given).
AmiFamily = Literal["AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022", "Windows2025", "Custom"]
AMI_FAMILIES: tuple[str, ...] = get_args(AmiFamily)
CUSTOM = "custom"
# An AMI selector term's owner: account ids and the aliases EC2 DescribeImages takes (Owners), comma-separated.
_OWNER = re.compile(r"(self|amazon|aws-marketplace|[0-9]{12})(,(self|amazon|aws-marketplace|[0-9]{12}))*")
# EC2NodeClass amiSelectorTerms[].alias: family@version (Karpenter 1.14.1's CRD).
_ALIAS = re.compile(r"(al2|al2023|bottlerocket|windows2019|windows2022|windows2025)@(latest|v[0-9][0-9.]*)")
# What each AMI family boots from (Karpenter 1.14's amifamily defaults): the device of the volume that
# holds images, logs and pod storage, and the size of the AMI's snapshot for it -- EC2 refuses a smaller
# volume at launch. Bottlerocket boots from a 4 GiB OS volume and keeps everything else on /dev/xvdb.
STORAGE_DEVICE = {
    "al2": "/dev/xvda",
    "al2023": "/dev/xvda",
    "bottlerocket": "/dev/xvdb",
    **{w: "/dev/sda1" for w in WINDOWS_FAMILIES},
}
SNAPSHOT_GIB = {"al2": 20, "al2023": 20, "bottlerocket": 20, **{w: 50 for w in WINDOWS_FAMILIES}}
BOTTLEROCKET_OS_VOLUME = {"deviceName": "/dev/xvda", "size": "4Gi"}
# The size of that volume when an EC2NodeClass gives no blockDeviceMappings: Karpenter's defaults per family, all
# gp3 and encrypted (Karpenter 1.14 docs, concepts/nodeclasses, spec.blockDeviceMappings; Custom has none).
KARPENTER_VOLUME_GIB = {"al2": 20, "al2023": 20, "bottlerocket": 20, **{w: 50 for w in WINDOWS_FAMILIES}}
# When Amazon EKS released each Kubernetes minor (endoflife.date's Amazon EKS table, read 2026-11). An
# EKS-optimized AMI release dated before it has no image for that minor: Karpenter resolves a pinned
# alias through an SSM parameter per minor, which does not exist, and the node class never launches.
EKS_RELEASE: dict[int, date] = {
    31: date(2024, 9, 26),
    32: date(2025, 1, 25),
    33: date(2025, 5, 28),
    34: date(2025, 10, 6),
    35: date(2026, 1, 28),
}
# Where EKS's date is not in the table: upstream Kubernetes's x.y.0 release, a lower bound (EKS never
# ships a minor before upstream does).
UPSTREAM_RELEASE: dict[int, date] = {36: date(2026, 4, 22)}
# EKS publishes no Amazon Linux 2 AMIs from this minor on.
LAST_AL2_MINOR = 32
_DATED_ALIAS = re.compile(r"^(al2|al2023)@v(\d{4})(\d{2})(\d{2})$", re.ASCII)


def os_volumes(family: str) -> list[dict[str, Any]]:
    """The family's volumes besides the storage volume, as block device mappings: Bottlerocket's OS volume
    (a mapping list replaces all of the family's defaults, so it is written out)."""
    if family != "bottlerocket":
        return []
    return [
        {
            "deviceName": BOTTLEROCKET_OS_VOLUME["deviceName"],
            "ebs": ebs_volume(BOTTLEROCKET_OS_VOLUME["size"], "gp3"),
        }
    ]


def check_alias(value: str) -> str:
    """An AMI alias Karpenter resolves: a known family, and a version of the form that family is pinned by
    (al2/al2023 by build date, Bottlerocket by release; Windows only @latest)."""
    if not _ALIAS.fullmatch(value):
        raise ValueError(
            "must be family@version with family al2, al2023, bottlerocket, windows2019, windows2022 "
            "or windows2025 and version 'latest' or a pinned vYYYYMMDD"
        )
    family, version = value.split("@", 1)
    if family in ("al2", "al2023") and version != "latest" and not re.fullmatch(r"v[0-9]{8}", version):
        raise ValueError(
            f"{family} AMIs are pinned by their build date: {family}@vYYYYMMDD (e.g. "
            f"{family}@v20260801), or {family}@latest"
        )
    if family == "bottlerocket" and version != "latest" and not re.fullmatch(r"v[0-9]+\.[0-9]+\.[0-9]+", version):
        raise ValueError(
            "Bottlerocket AMIs are pinned by their release: bottlerocket@vX.Y.Z (e.g. "
            "bottlerocket@v1.50.0), or bottlerocket@latest"
        )
    if value.startswith("windows") and not value.endswith("@latest"):
        raise ValueError("Windows AMI aliases only support @latest")
    return value


def check_owner(value: str) -> str:
    """An amiSelectorTerms owner: 12-digit account ids, self, amazon or aws-marketplace, comma-separated."""
    if not _OWNER.fullmatch(value):
        raise ValueError(
            f"owner {quoted(value)} must be 12-digit account ids, self, amazon or aws-marketplace, comma-separated"
        )
    return value


def family_of(alias: str) -> str:
    """The family of an alias (al2023 of al2023@v20260801)."""
    return alias.split("@", 1)[0]


def is_windows(family: str) -> bool:
    return family.startswith("windows")


def reserved_devices(family: str, storage_device: str) -> dict[str, str]:
    """The devices the class itself uses, by letter (/dev/sdX and /dev/xvdX name one device): its storage
    volume's, and Bottlerocket's OS volume's."""
    taken = {storage_device.removesuffix("1")[-1]: storage_device}
    if family == "bottlerocket":
        taken[BOTTLEROCKET_OS_VOLUME["deviceName"][-1]] = BOTTLEROCKET_OS_VOLUME["deviceName"]
    return taken


def check_pods_per_core(family: str, pods_per_core: int | None) -> None:
    """Bottlerocket has no podsPerCore (Karpenter ignores it there)."""
    if family == "bottlerocket" and pods_per_core is not None:
        raise ValueError(
            "kubelet.podsPerCore is not supported by Bottlerocket (Karpenter ignores it there); use kubelet.maxPods"
        )


def check_storage_size(family: str, size_gib: int) -> None:
    """The storage volume is at least the family's snapshot for it: EC2 refuses a smaller one."""
    minimum = SNAPSHOT_GIB[family]
    if size_gib < minimum:
        raise ValueError(
            f"rootVolumeSizeGib {size_gib} is smaller than the {family} AMI's {minimum} GiB "
            f"snapshot for {STORAGE_DEVICE[family]}; EC2 refuses a volume smaller than its snapshot"
        )


def unavailable_alias(alias: str, kubernetes_version: str, minor: int) -> str | None:
    """Why an AMI alias has no image for Kubernetes ``kubernetes_version`` (minor ``minor``), or None: Amazon
    Linux 2 ends with 1.32, and an alias pinned to a build date before EKS released the minor has none."""
    family = family_of(alias)
    if family == "al2" and minor > LAST_AL2_MINOR:
        return (
            f"amiAlias {quoted(alias)}: EKS publishes no Amazon Linux 2 AMIs for Kubernetes {kubernetes_version} "
            f"(the last is 1.{LAST_AL2_MINOR}); use al2023 or bottlerocket"
        )
    match = _DATED_ALIAS.fullmatch(alias)
    if not match:
        return None
    try:
        built = date(*(int(g) for g in match.groups()[1:]))
    except ValueError:
        return f"amiAlias {quoted(alias)}: v{''.join(match.groups()[1:])} is not a date (vYYYYMMDD)"
    released = EKS_RELEASE.get(minor) or UPSTREAM_RELEASE.get(minor)
    if released is not None and built < released:
        known = "" if minor in EKS_RELEASE else " at the earliest"
        return (
            f"amiAlias {quoted(alias)} has no AMI for Kubernetes {kubernetes_version}: EKS-optimized AMIs for "
            f"{kubernetes_version} start with its EKS release ({released.isoformat()}{known}); pin "
            f"{family}@v{released.strftime('%Y%m%d')} or later, or {family}@latest"
        )
    return None
