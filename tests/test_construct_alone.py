"""The reusable Karpenter construct (constructs_lib/karpenter/) in another CDK app: the package copied alone (no
app, no tooling, no app-only construct beside it) under another name is imported and builds its resources on a bare
stack. tests/test_architecture.py holds the same boundary on the import graph (no import of another layer); this
proves the rest: the package reaches nothing outside its folder (relative imports, its own data files), and another
app needs only the template with upstream's copy of the release beside it."""

from __future__ import annotations

import importlib
import importlib.abc
import shutil
import sys
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template

from karpenter_stack import versions
from tests.conftest import ROOT

THEIRS = "their_constructs"  # the folder another app copies the package into
PROJECT = ("constructs_lib", "karpenter_stack", "tooling", "tests", "app")


class _NotThere(importlib.abc.MetaPathFinder):
    """Another app has none of this project: an import of it fails while the copy is imported and built."""

    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in PROJECT:
            raise ModuleNotFoundError(f"No module named {name!r} (the copied package imports the project)")
        return None


def test_the_construct_package_copied_alone_builds_in_another_app(tmp_path: Path, monkeypatch):
    shutil.copytree(ROOT / "constructs_lib" / "karpenter", tmp_path / THEIRS / "karpenter")
    (tmp_path / THEIRS / "__init__.py").write_text("")
    # The template with what the construct holds it to beside it: upstream's of the release and the changes' reasons.
    template = Path(versions.karpenter_template("1.14.1"))
    for source in (template, *(template.parent / folder / template.name for folder in ("upstream", "changes"))):
        if source.exists():
            copied = tmp_path / "templates" / source.relative_to(template.parent)
            copied.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, copied)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    kubectl_layer = versions.KubectlLayer.for_version("1.35").load()
    hidden = {name: sys.modules.pop(name) for name in list(sys.modules) if name.split(".")[0] in PROJECT}
    sys.meta_path.insert(0, _NotThere())
    try:
        theirs = importlib.import_module(f"{THEIRS}.karpenter")
        node_class = importlib.import_module(f"{THEIRS}.karpenter.specs.node_class")
        node_pool = importlib.import_module(f"{THEIRS}.karpenter.specs.node_pool")
        stack = cdk.Stack(cdk.App(builtin_cloud_formation_validation=False), "Theirs")
        cluster = eks.Cluster.from_cluster_attributes(
            stack,
            "Cluster",
            cluster_name="theirs",
            kubectl_role_arn="arn:aws:iam::111122223333:role/admin",
            kubectl_layer=kubectl_layer(stack, "Kubectl"),
            open_id_connect_provider=iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
                stack, "Oidc", "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/0123ABCD"
            ),
            cluster_security_group_id="sg-0123456789abcdef0",
        )
        karpenter = theirs.Karpenter(
            stack,
            "Karpenter",
            theirs.KarpenterProps(
                cluster=cluster,
                cluster_name="theirs",
                version="1.14.1",
                template_file=f"templates/{template.name}",
                node_authorization=theirs.NodeAuthorization.ACCESS_ENTRY,
                node_classes=[node_class.NodeClassSpec(name="general")],
                node_pools=[node_pool.NodePoolSpec(name="spot", node_class="general", capacity_types=["spot"])],
            ),
        )
        resources = Template.from_stack(stack).to_json()["Resources"]
    finally:
        sys.meta_path = [finder for finder in sys.meta_path if not isinstance(finder, _NotThere)]
        for name in [m for m in sys.modules if m == THEIRS or m.startswith(f"{THEIRS}.")]:
            del sys.modules[name]
        sys.modules.update(hidden)
    assert sorted(karpenter.node_pools) == ["spot"]
    types = {r["Type"] for r in resources.values()}
    assert {
        "AWS::CloudFormation::Stack",
        "Custom::AWSCDK-EKS-HelmChart",
        "Custom::AWSCDK-EKS-KubernetesResource",
    } <= types
