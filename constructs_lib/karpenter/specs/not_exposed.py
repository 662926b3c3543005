"""The field paths of Karpenter 1.14.1's NodePool, NodeOverlay and EC2NodeClass that the app deliberately does not
write, each with the reason: the one list of them. A path covers the paths below it (``spec.networkInterfaces``
covers ``spec.networkInterfaces[].deviceIndex``). ``tests/test_crd_paths.py`` walks every field path of the three
CRDs (the mirrored schemas in ``tooling/schemas/``) and fails on one the app neither writes nor lists here, and
on an entry here that the app now writes (remove it then)."""

from __future__ import annotations

NOT_EXPOSED: dict[str, dict[str, str]] = {
    "NodePool": {
        # k8s.io/api core/v1 Taint.TimeAdded: "It is only written for NoExecute taints" -- by Kubernetes (the node
        # lifecycle controller), when it adds the taint; Karpenter's taints never carry one.
        "spec.template.spec.taints[].timeAdded": "written by Kubernetes when it adds a NoExecute taint, not by users",
        "spec.template.spec.startupTaints[].timeAdded": "written by Kubernetes when it adds a NoExecute taint, not by "
        "users",
    },
    "NodeOverlay": {},
    "EC2NodeClass": {
        "spec.instanceProfile": "Karpenter manages the instance profile from the node role (spec.role; the CRD takes "
        "one of the two), which the teardown safety net and the node authorizations are built around",
        "spec.blockDeviceMappings[].ebs.volumeInitializationRate": "not asked for yet (EBS volume initialization "
        "from a snapshot at a provisioned rate, billed per volume)",
        "spec.blockDeviceMappings[].rootVolume": "the AMI family's own device holds images and pods; the app "
        "places it (rootVolumeSizeGib and friends) and needs no other root",
        "spec.networkInterfaces": "not asked for yet: EFA interfaces constrain instance types and need their own "
        "security group rules",
        "spec.ipPrefixCount": "not asked for yet: prefix delegation is the VPC CNI's setting, which the app does "
        "not configure",
        "spec.connectionTracking": "not asked for yet (EC2 connection tracking timeouts)",
        "spec.cpuOptions": "not asked for yet (nested virtualization on supported instance types)",
        "spec.placementGroupSelector": "not asked for yet: a placement group constrains zones and instance types "
        "and needs the controller's placement group permissions checked",
        "spec.context": "reserved by EC2 for launches on behalf of partner services (EC2 CreateFleet Context); "
        "not for users",
    },
}


def not_exposed(kind: str, path: str) -> str | None:
    """Why ``path`` of ``kind`` is not written (its own entry or the nearest one above it), or None."""
    entries = NOT_EXPOSED[kind]
    while path:
        if path in entries:
            return entries[path]
        path = path.rsplit(".", 1)[0] if "." in path else ""
        path = path.removesuffix("[]")
    return None
