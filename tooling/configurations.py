"""The product's own configurations: what the suite, the release's logical-id baseline and the tooling synthesize
as "the product" -- built from the shipped defaults kept in tooling/product/ (cdk.json and an empty lookup
cache), never from the working copy's cdk.json, which is the user's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from karpenter_stack import context_sources

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ROOT / "tooling" / "product"
PRODUCT_CONTEXT: dict[str, Any] = {
    **context_sources.cdk_json_context(PRODUCT),
    # In-process synths reference assets where they are instead of copying them into each cloud assembly: the
    # kubectl layer made every assembly ~60 MB. Templates are the same (asset hashes come from the sources);
    # the CLI runs stage as `make synth` does.
    "aws:cdk:disable-asset-staging": True,
}

# A second configuration exercising the alternatives: managed node group hosting, a custom
# namespace/service account, the spot service-linked role, an administrator in aws-auth and two node
# pools (on-demand + weighted spot) over two node classes.
ADMINISTRATOR = "arn:aws:iam::111122223333:role/platform-admins"
ALTERNATIVE: dict[str, Any] = {
    "clusterName": "alt_cluster-1",
    "controllerHosting": "nodegroup",
    "karpenterNamespace": "karpenter",
    "karpenterServiceAccount": "karpenter-controller",
    "createSpotServiceLinkedRole": True,
    "administrators": [ADMINISTRATOR],
    "deletionProtection": False,  # written out (tests/test_transitions.py)
    "nodeClasses": [
        {"name": "default", "amiAlias": "al2023@v20260801"},
        {"name": "large-disk", "rootVolumeSizeGib": 200, "metadataHopLimit": 1},
    ],
    "nodePools": [
        {
            "name": "on-demand",
            "capacityTypes": ["on-demand"],
            "architectures": ["amd64"],
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": "5m",
            "expireAfter": "168h",
            "limits": {"cpu": "64", "memory": "256Gi"},
        },
        {
            "name": "spot",
            "nodeClass": "large-disk",
            "capacityTypes": ["spot"],
            "weight": 50,
            "instanceCategories": ["c", "m"],
            "minInstanceGeneration": 5,
            "budgets": [{"nodes": "20%"}, {"nodes": "0"}],
        },
    ],
}

# The production profile, environment-agnostic (no account id in snapshots), with a pinned AMI and its cluster
# administrators (the profile creates no account-wide admin role).
PRODUCTION: dict[str, Any] = {
    "profile": "production",
    "nodeClasses": [{"name": "default", "amiAlias": "al2023@v20260801"}],
    "administrators": [ADMINISTRATOR],
}

# Access entries next to aws-auth, with an administrator (tests/test_cluster_access.py).
ACCESS_ENTRIES: dict[str, Any] = {"authenticationMode": "API_AND_CONFIG_MAP", "administrators": [ADMINISTRATOR]}

# The alternative configuration with the controller on EKS Pod Identity (tests/test_controller_credentials.py).
POD_IDENTITY: dict[str, Any] = {**ALTERNATIVE, "controllerCredentials": "pod-identity"}

# Karpenter on an existing cluster: the README's worked example, as `make synth CONTEXT_FILE=...` runs it.
EXISTING: dict[str, Any] = json.loads((ROOT / "examples" / "existing-cluster.json").read_text())
