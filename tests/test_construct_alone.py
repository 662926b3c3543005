"""The reusable Karpenter construct (constructs_lib/karpenter/) in another CDK app: the package copied alone (no
app, no tooling, no app-only construct beside it) is imported and builds its resources on a bare stack.
tests/test_architecture.py holds the same boundary on the import graph; this proves it where it matters."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from karpenter_stack import versions
from tests.conftest import ROOT

# Another app's code: an imported cluster, one node class and one pool, typed props (no cdk.json, no configuration).
THEIR_APP = """
import json, sys
import aws_cdk as cdk
from aws_cdk import aws_eks as eks, aws_iam as iam
from aws_cdk.lambda_layer_kubectl_v35 import KubectlV35Layer

from constructs_lib.karpenter import Karpenter, KarpenterProps, NodeAuthorization
from constructs_lib.karpenter.specs.node_class import NodeClassSpec
from constructs_lib.karpenter.specs.node_pool import NodePoolSpec

app = cdk.App(outdir=sys.argv[2])
stack = cdk.Stack(app, "Theirs", env=cdk.Environment(account="111122223333", region="eu-west-1"))
cluster = eks.Cluster.from_cluster_attributes(
    stack, "Cluster", cluster_name="theirs",
    kubectl_role_arn="arn:aws:iam::111122223333:role/admin",
    kubectl_layer=KubectlV35Layer(stack, "Kubectl"),
    open_id_connect_provider=iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
        stack, "Oidc", "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/0123456789ABCDEF"),
    cluster_security_group_id="sg-0123456789abcdef0",
)
karpenter = Karpenter(stack, "Karpenter", KarpenterProps(
    cluster=cluster, cluster_name="theirs", version="1.14.1", template_file=sys.argv[1],
    node_authorization=NodeAuthorization.ACCESS_ENTRY,
    node_classes=[NodeClassSpec(name="general")],
    node_pools=[NodePoolSpec(name="spot", node_class="general", capacity_types=["spot"])],
))
app.synth()
print(json.dumps({
    "node_pools": sorted(karpenter.node_pools),
    "loaded": sorted({m.split(".")[0] for m in sys.modules} & {"karpenter_stack", "tooling", "tests"}),
    "app_only": sorted(m for m in sys.modules if m.startswith("constructs_lib.") and not m.startswith("constructs_lib.karpenter")),
}))
"""


@pytest.mark.cli
def test_the_construct_package_copied_alone_builds_in_another_app(tmp_path: Path):
    shutil.copytree(ROOT / "constructs_lib" / "karpenter", tmp_path / "constructs_lib" / "karpenter")
    (tmp_path / "constructs_lib" / "__init__.py").write_text("")
    # The template with what the construct holds it to beside it: upstream's of the release and the changes' reasons.
    template = Path(versions.karpenter_template("1.14.1"))
    for source in (template, *(template.parent / folder / template.name for folder in ("upstream", "changes"))):
        if source.exists():
            copied = tmp_path / "templates" / source.relative_to(template.parent)
            copied.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, copied)
    (tmp_path / "app.py").write_text(THEIR_APP)
    done = subprocess.run(
        [sys.executable, "app.py", f"templates/{template.name}", str(tmp_path / "out")],
        cwd=tmp_path,
        env={"PATH": str(ROOT / "node_modules" / ".bin") + ":/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"node_pools": ["spot"], "loaded": [], "app_only": []}
    stack = json.loads((tmp_path / "out" / "Theirs.template.json").read_text())
    types = {r["Type"] for r in stack["Resources"].values()}
    assert {
        "AWS::CloudFormation::Stack",
        "Custom::AWSCDK-EKS-HelmChart",
        "Custom::AWSCDK-EKS-KubernetesResource",
    } <= types
