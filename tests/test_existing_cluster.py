"""Karpenter on an existing cluster (``existingCluster``): the README's worked example, synthesized as
`make synth CONTEXT_FILE=examples/existing-cluster.json` does."""

from __future__ import annotations

import json
from pathlib import Path

from karpenter_stack.application import build, new_app
from karpenter_stack.config import load_config
from tests.cfn import controller_values, depends_on, kubernetes_objects, only, resources, teardown
from tests.conftest import ROOT, TODAY
from tooling.configurations import ADMINISTRATOR, EXISTING, PRODUCT_CONTEXT

CLUSTER = EXISTING["existingCluster"]


def test_only_karpenter_is_built_nothing_of_the_cluster(existing):
    types = {r["Type"] for r in existing.json["Resources"].values()}
    assert not types & {
        "AWS::EC2::VPC",
        "Custom::AWSCDK-EKS-Cluster",
        "AWS::EKS::Nodegroup",
        "AWS::EKS::Addon",
        "Custom::AWSCDK-EKS-FargateProfile",
        "AWS::KMS::Key",
        "Custom::AWS",
    }
    assert existing.stack.template_options.description == "Karpenter 1.14.1 on existing EKS cluster shared-prod"
    assert sorted(existing.json["Outputs"]) == ["ControllerRoleArn", "InterruptionQueueName", "NodeRoleArn"]


def test_nodes_join_through_an_access_entry_and_use_the_clusters_subnets_and_group_by_id(existing):
    _, entry = only(resources(existing.template, "AWS::EKS::AccessEntry"))
    assert (entry["Properties"]["Type"], entry["Properties"]["ClusterName"]) == ("EC2_LINUX", "shared-prod")
    objects = kubernetes_objects(existing.template)
    assert sorted(objects) == ["EC2NodeClass/default", "NodePool/default"]  # no aws-auth ConfigMap
    spec = objects["EC2NodeClass/default"]["spec"]
    assert spec["subnetSelectorTerms"] == [{"id": s} for s in CLUSTER["subnetIds"]]
    assert spec["securityGroupSelectorTerms"] == [{"id": CLUSTER["clusterSecurityGroupId"]}]


def test_kubectl_runs_in_the_clusters_subnets_for_a_private_endpoint(existing):
    (name,) = [p for p in Path(existing.app.outdir).glob("*KubectlProvider*.nested.template.json")]
    nested = json.loads(name.read_text())
    functions = [r["Properties"] for r in nested["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    assert len(functions) == 2  # the kubectl handler and its provider framework's onEvent
    for function in functions:
        assert function["VpcConfig"] == {
            "SecurityGroupIds": [CLUSTER["clusterSecurityGroupId"]],
            "SubnetIds": CLUSTER["subnetIds"],
        }


def test_the_controller_runs_on_the_clusters_own_nodes_and_trusts_its_oidc_provider(existing):
    values = controller_values(existing.template)
    assert values["settings"]["clusterName"] == "shared-prod"
    assert "tolerations" not in values and values["dnsPolicy"] == "ClusterFirst"
    roles = resources(existing.template, "AWS::IAM::Role")
    federated = [
        r
        for r in roles.values()
        if r["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"].get("Federated")
    ]
    (role,) = federated
    assert (
        role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]["Federated"]
        == CLUSTER["openIdConnectProviderArn"]
    )


def test_delete_order_keeps_the_access_entry_until_the_nodes_are_gone(existing):
    entry, _ = only(resources(existing.template, "AWS::EKS::AccessEntry"))
    (net, _), (bound, _) = teardown(existing.template)
    objects = kubernetes_objects(existing.template)
    node_class, pool = (objects[key]["_logicalId"] for key in ("EC2NodeClass/default", "NodePool/default"))
    assert {entry, net} <= set(depends_on(existing.json, node_class))
    assert {entry, net, bound, node_class} <= set(depends_on(existing.json, pool))
    assert node_class in depends_on(existing.json, bound)  # pools, then the drain bound, then classes go
    assert entry in depends_on(existing.json, net)


def test_the_production_profile_protects_the_stack_and_leaves_the_cluster_alone():
    config = load_config(
        {**EXISTING, "profile": "production", "nodeClasses": [{"amiAlias": "al2023@v20260801"}]}, today=TODAY
    )
    assert (config.termination_protection, config.retain_on_destroy) == (True, True)
    assert (config.deletion_protection, config.nat_gateways) == (None, 1)  # not set: no cluster of ours


def test_an_unknown_authentication_mode_is_a_warning_naming_what_would_fail():
    unknown = {**EXISTING, "existingCluster": {k: v for k, v in CLUSTER.items() if k != "authenticationMode"}}
    app = new_app(context={**PRODUCT_CONTEXT, **unknown})
    (stack,) = build(app, today=TODAY)
    warnings = [m.data for m in stack.node.metadata if m.type == "aws:cdk:warning"]
    assert warnings == [
        "existingCluster.authenticationMode is not set: Karpenter's nodes join through an EKS access entry, which "
        "needs authentication mode API or API_AND_CONFIG_MAP (a CONFIG_MAP cluster fails the deploy at the access "
        "entry); set it to what `aws eks describe-cluster` reports to check it at synth "
        "[ack: eks-karpenter:configuration]"
    ]


def test_windows_on_an_existing_cluster_warns_of_what_only_its_owner_can_switch_on():
    windows = json.loads((ROOT / "examples" / "windows.json").read_text())
    config = load_config({**EXISTING, **windows}, today=TODAY)
    assert config.warnings == (
        "nodeClasses: Windows nodes need Windows IPAM (the vpc-cni add-on's enableWindowsIpam) and "
        "AmazonEKSVPCResourceController on the cluster role; this app sets both on clusters it creates, not on "
        "existingCluster: check them there, or Windows pods get no IP address",
    )
    production = load_config(
        {
            **windows,
            "profile": "production",
            "nodeClasses": [{"name": "default", "amiAlias": "al2023@v20260801"}, windows["nodeClasses"][1]],
            "administrators": [ADMINISTRATOR],
        },
        today=TODAY,
    )
    assert production.warnings[0] == (
        "nodeClasses[1].amiAlias 'windows2022@latest': Windows AMIs cannot be pinned (alias @latest only), so this "
        "class's nodes move to each new Windows AMI by drift, within their pools' disruption budgets"
    )
    # the example's own pools replace the profile's: the system pool it drops is named
    assert len(production.warnings) == 2 and production.warnings[1].startswith(
        "nodePools: your list replaces the production profile's, so its on-demand 'system' pool"
    )
