"""What a stack deletion does to what outlives it: termination protection, kept keys and logs, the
account-wide spot service-linked role."""

from __future__ import annotations

from tests.cfn import depends_on, kubernetes_objects


def _all_templates(synthesized) -> dict[str, dict]:
    """The stack's template and every nested stack's (CDK's providers and the Karpenter stack)."""
    from aws_cdk import NestedStack
    from aws_cdk.assertions import Template

    templates = {synthesized.stack.stack_name: synthesized.json}
    for child in synthesized.stack.node.find_all():
        if NestedStack.is_nested_stack(child):
            templates[child.node.path] = Template.from_stack(child).to_json()
    return templates


def _policies(synthesized, *types: str) -> dict[str, tuple[str, str]]:
    return {
        f"{name}/{lid}": (r.get("DeletionPolicy", "Delete"), r.get("UpdateReplacePolicy", "Delete"))
        for name, template in _all_templates(synthesized).items()
        for lid, r in template["Resources"].items()
        if not types or r["Type"] in types
    }


def test_a_standard_stack_keeps_nothing_but_the_account_wide_spot_role(default, alternative):
    assert {k: v for k, v in _policies(default).items() if "Retain" in v[0]} == {}
    kept = {k: v for k, v in _policies(alternative).items() if "Retain" in v[0]}
    assert kept == {"alt-cluster-1/SpotServiceLinkedRole": ("Retain", "Retain")}


def test_an_existing_cluster_keeps_its_karpenter_crds_and_deletes_only_its_own_objects(existing, default):
    """``helm uninstall karpenter-crd`` would delete the CRDs (they carry no helm.sh/resource-policy: keep) and
    with them every NodePool, NodeClaim and EC2NodeClass of the cluster, other teams' too: on a cluster the app
    did not create, CloudFormation retains the CRD chart's custom resource and so never sends it Delete."""
    charts = {
        r["Properties"]["Release"]: (lid, r)
        for lid, r in existing.json["Resources"].items()
        if r["Type"] == "Custom::AWSCDK-EKS-HelmChart"
    }
    crd_chart, controller_chart = charts["karpenter-crd"][0], charts["karpenter"][0]
    kept = {k: v for k, v in _policies(existing).items() if "Retain" in v[0]}
    assert kept == {f"{existing.stack.stack_name}/{crd_chart}": ("Retain", "Retain")}
    # what goes: the controller chart, and this stack's pools and classes by their manifests, before it
    assert _policies(existing)[f"{existing.stack.stack_name}/{controller_chart}"] == ("Delete", "Delete")
    assert crd_chart in depends_on(existing.json, controller_chart)
    objects = kubernetes_objects(existing.template)
    for kind in ("NodePool/default", "EC2NodeClass/default"):
        lid = objects[kind]["_logicalId"]
        assert existing.json["Resources"][lid].get("DeletionPolicy", "Delete") == "Delete"
        assert {crd_chart, controller_chart} <= set(depends_on(existing.json, lid))
    # a cluster the stack created is deleted anyway: its CRD chart goes with the rest, before the cluster
    (created,) = [
        r
        for r in default.json["Resources"].values()
        if r["Type"] == "Custom::AWSCDK-EKS-HelmChart" and r["Properties"]["Release"] == "karpenter-crd"
    ]
    assert (created.get("DeletionPolicy"), created.get("UpdateReplacePolicy")) == ("Delete", "Delete")


def test_standard_keys_are_deleted_after_the_shortest_waiting_period_but_survive_a_replacement(default):
    keys = {lid: r for lid, r in default.json["Resources"].items() if r["Type"] == "AWS::KMS::Key"}
    assert len(keys) == 2  # secrets envelope encryption, flow logs
    for key in keys.values():
        assert (key["DeletionPolicy"], key["UpdateReplacePolicy"]) == ("Delete", "Retain")
        assert key["Properties"]["PendingWindowInDays"] == 7


def test_production_keeps_keys_and_logs_and_refuses_a_stack_deletion(production, default):
    kept = _policies(production, "AWS::KMS::Key", "AWS::Logs::LogGroup")
    assert len(kept) == 12 and set(kept.values()) == {("Retain", "Retain")}
    assert all(
        "PendingWindowInDays" not in r["Properties"]
        for r in production.json["Resources"].values()
        if r["Type"] == "AWS::KMS::Key"
    )
    assert production.stack.termination_protection is True
    assert default.stack.termination_protection is False


def test_pools_that_may_launch_spot_wait_for_the_spot_service_linked_role(alternative):
    objects = kubernetes_objects(alternative.template)
    resources_ = alternative.json["Resources"]
    spot, on_demand = objects["NodePool/spot"]["_logicalId"], objects["NodePool/on-demand"]["_logicalId"]
    assert "SpotServiceLinkedRole" in resources_[spot]["DependsOn"]
    assert "SpotServiceLinkedRole" not in resources_[on_demand]["DependsOn"]
    assert resources_["SpotServiceLinkedRole"]["Properties"] == {"AWSServiceName": "spot.amazonaws.com"}


def test_the_operations_docs_list_what_a_destroy_keeps():
    from tests.conftest import ROOT

    operations = (ROOT / "docs" / "operations.md").read_text()
    section = operations[operations.index("### What a destroy keeps") :]
    section = section[: section.index("\n## ", 1)] if "\n## " in section else section
    for needle in (
        "terminationProtection",
        "retainOnDestroy",
        "/aws/eks/",
        "AWSServiceRoleForEC2Spot",
        "update-termination-protection",
        "helm uninstall karpenter-crd",
        "DeletionPolicy and UpdateReplacePolicy Retain",
    ):
        assert needle in section, needle
