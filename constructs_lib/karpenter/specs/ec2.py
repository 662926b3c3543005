"""EC2 and EBS facts the specs share: resource ids, tags, instance types and families, and what EC2
accepts of an EBS volume."""

from __future__ import annotations

import difflib
import functools
import gzip
import importlib.metadata
import importlib.util
import json
import re
import unicodedata
from pathlib import Path
from typing import Any

from .base import optional_match, quoted

# EC2 resource ids by prefix: 8 or 17 hex digits (matched in full). The one table: the app's settings use it too.
EC2_ID = {
    kind: re.compile(rf"{kind}-[0-9a-f]{{8}}([0-9a-f]{{9}})?", re.ASCII)
    for kind in ("subnet", "sg", "cr", "snap", "vpc", "ami")
}
# EC2's longest tag key and value.
MAX_TAG_KEY, MAX_TAG_VALUE = 128, 256

# karpenter.k8s.aws/instance-category values: the letters before an EC2 family's generation digit
# (c7g -> c, inf2 -> inf, u-6tb1 -> u). A category outside this list matches no instance type, and the
# pool's pods stay Pending.
INSTANCE_CATEGORIES = (
    "a",
    "c",
    "d",
    "dl",
    "f",
    "g",
    "gr",
    "h",
    "hpc",
    "i",
    "im",
    "inf",
    "is",
    "m",
    "mac",
    "p",
    "r",
    "t",
    "trn",
    "u",
    "vt",
    "x",
    "z",
)
# EC2 instance type and family names (t3.medium, m7g.xlarge, u-6tb1.metal; m7g, mac2-m2pro).
INSTANCE_TYPE = re.compile(r"^[a-z][a-z-]*[0-9][a-z0-9-]*\.[a-z0-9-]+$")
INSTANCE_FAMILY = re.compile(r"^[a-z][a-z-]*[0-9][a-z0-9-]*$")

# EBS provisioned IOPS per volume type (EC2 EbsBlockDevice): range, and most IOPS per GiB of size.
EBS_IOPS = {"gp3": (3000, 16000, 500), "io1": (100, 64000, 50), "io2": (100, 256000, 1000)}
GP3_BASELINE_IOPS, GP3_MIN_THROUGHPUT, GP3_MAX_THROUGHPUT = 3000, 125, 1000
# Smallest EBS volume per type (GiB), where above 1.
EBS_MIN_GIB = {"io1": 4, "io2": 4, "st1": 125, "sc1": 125}
# Largest EBS volume per type (GiB). EC2 (botocore 1.44.5's EC2 model, EbsBlockDevice.VolumeSize, read
# 2026-11): gp2, io1, st1 and sc1 up to 16,384; gp3 and io2 (Block Express) up to 65,536. Karpenter 1.14.1's
# EC2NodeClass volumeSize pattern allows at most 59000Gi, and the app writes sizes in Gi: 59,000 for those two.
EBS_MAX_GIB = {"gp2": 16384, "io1": 16384, "st1": 16384, "sc1": 16384, "gp3": 59000, "io2": 59000}
MAX_VOLUME_GIB = max(EBS_MAX_GIB.values())
# Device names of an extra volume (the letter a is the root device's).
DATA_DEVICE = re.compile(r"/dev/(xvd|sd)[b-z]")
# The four settings of a volume, as messages name them.
ROOT_VOLUME_FIELDS = ("rootVolumeType", "rootVolumeSizeGib", "rootVolumeIops", "rootVolumeThroughput")
DATA_VOLUME_FIELDS = ("volumeType", "sizeGib", "iops", "throughput")


def ec2_id(kind: str, value: str | None) -> str | None:
    """An EC2 id of ``kind`` (subnet, sg, cr, snap): the prefix and 8 or 17 hex digits."""
    return optional_match(value, EC2_ID[kind], f"must look like {kind}-0123456789abcdef0")


def ec2_tag_characters(key: str, value: str) -> None:
    """EC2 tag keys and values are letters, digits, spaces and + - = . _ : / @ (Unicode letters allowed, so
    no ASCII pattern): a control character or line break (newline, tab, U+2028, ...) is never one."""
    if any(unicodedata.category(c)[0] == "C" or unicodedata.category(c) in ("Zl", "Zp") for c in key + value):
        raise ValueError(
            f"tag {quoted(key)}: EC2 tag keys and values are letters, digits, spaces and + - = . _ : / @, "
            "with no control characters"
        )


@functools.cache
def ec2_instance_types() -> tuple[frozenset[str], str]:
    """Every EC2 instance type name, and where the list comes from: the ``InstanceType`` enum of the EC2
    service model that botocore ships (pinned in requirements.txt, so the list moves only with that pin).
    Read once, and only when an instance type must be checked (~35 ms: the gzipped model is ~4 MB of JSON)."""
    spec = importlib.util.find_spec("botocore")
    if spec is None or spec.origin is None:
        raise ValueError("cannot check instance types: botocore is not installed (pip install -r requirements.txt)")
    models = sorted((Path(spec.origin).parent / "data" / "ec2").glob("*/service-2.json*"))
    raw = models[-1].read_bytes()  # the newest EC2 API version, as botocore itself picks it
    model = json.loads(gzip.decompress(raw) if models[-1].suffix == ".gz" else raw)
    source = f"botocore {importlib.metadata.version('botocore')}'s EC2 model"
    return frozenset(model["shapes"]["InstanceType"]["enum"]), source


def ec2_instance_families() -> frozenset[str]:
    """The families of :func:`ec2_instance_types` (m7g of m7g.large)."""
    return frozenset(t.split(".", 1)[0] for t in ec2_instance_types()[0])


def unknown_instance_type(value: str, families: bool = False) -> str | None:
    """None when ``value`` is an EC2 instance type (or, with ``families``, a family); else what is
    allowed and the closest known names, for a message that has named the setting and the value."""
    types, source = ec2_instance_types()
    known = ec2_instance_families() if families else types
    if value in known:
        return None
    close = difflib.get_close_matches(value, sorted(known), n=3)
    hint = f"; did you mean {' or '.join(quoted(c) for c in close)}?" if close else ""
    return f"is not one of the {len(known)} EC2 instance {'families' if families else 'types'} {source} lists{hint}"


def ebs_volume(
    size: str | None, volume_type: str, iops: int | None = None, throughput: int | None = None
) -> dict[str, Any]:
    """The ``ebs`` of a block device mapping: encrypted and deleted with the instance; ``size`` None: the
    snapshot's size."""
    ebs: dict[str, Any] = {
        **({"volumeSize": size} if size is not None else {}),
        "volumeType": volume_type,
        "encrypted": True,
        "deleteOnTermination": True,
    }
    if iops is not None:
        ebs["iops"] = iops
    if throughput is not None:
        ebs["throughput"] = throughput
    return ebs


def check_volume(
    fields: tuple[str, str, str, str], kind: str, size: int | None, iops: int | None, throughput: int | None
) -> None:
    """What EC2 refuses of an EBS volume's type, size, IOPS and throughput; ``fields`` names the four
    settings in messages. ``size`` None: the volume takes its snapshot's size (then no IOPS are given)."""
    type_field, size_field, iops_field, throughput_field = fields
    if size is not None and size < EBS_MIN_GIB.get(kind, 1):
        raise ValueError(f"{size_field} {size} is below the {EBS_MIN_GIB[kind]} GiB EC2 needs for {kind}")
    if size is not None and size > EBS_MAX_GIB[kind]:
        raise ValueError(
            f"{size_field} {size} is above the {EBS_MAX_GIB[kind]} GiB EC2 allows for {kind} "
            f"(gp3 and io2: up to {MAX_VOLUME_GIB})"
        )
    if kind in ("io1", "io2") and iops is None:
        raise ValueError(f"{type_field} {kind} needs {iops_field}: EC2 requires provisioned IOPS for it")
    if iops is not None and kind not in EBS_IOPS:
        raise ValueError(
            f"{iops_field} applies to gp3, io1 and io2, not {kind}"
            + (" (gp2's IOPS follow its size; use gp3)" if kind == "gp2" else "")
        )
    if throughput is not None and kind != "gp3":
        raise ValueError(f"{throughput_field} applies to gp3 only, not {kind}")
    if iops is not None and size is not None:
        low, high, per_gib = EBS_IOPS[kind]
        if not low <= iops <= high or iops > per_gib * size:
            raise ValueError(
                f"{iops_field} {iops} is outside what EC2 allows for a {size} GiB {kind} volume: "
                f"{low}-{min(high, per_gib * size)} ({per_gib} per GiB, at most {high})"
            )
    if throughput is not None:
        most = min(GP3_MAX_THROUGHPUT, (iops or GP3_BASELINE_IOPS) // 4)
        if not GP3_MIN_THROUGHPUT <= throughput <= most:
            raise ValueError(
                f"{throughput_field} {throughput} MiB/s is outside what EC2 allows with "
                f"{iops or GP3_BASELINE_IOPS} IOPS: {GP3_MIN_THROUGHPUT}-{most} (at most IOPS/4)"
            )
