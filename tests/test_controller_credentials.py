"""The controller's credentials: IRSA (default, anywhere) or EKS Pod Identity (node-group hosting), and
what switching between them does to a running cluster. (Refused combinations: test_bad_configuration.)"""

from __future__ import annotations

import pytest

from tests.cfn import controller_values, create_only_properties, depends_on, only, resources, template_change

ROLE = "ControllerRole4FED04D7"
ASSOCIATION = "ControllerRolePodIdentityAssociationE22383C0"
AGENT = "Addonsekspodidentityagent9BB54A31"
CHART = "KarpenterReleaseControllerChartB127D32C"


def _trust(synthesized) -> list[dict]:
    return synthesized.json["Resources"][ROLE]["Properties"]["AssumeRolePolicyDocument"]["Statement"]


def test_irsa_trusts_the_oidc_provider_for_one_service_account_and_annotates_it(alternative):
    (statement,) = _trust(alternative)
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Principal"] == {"Federated": {"Ref": "ClusterOidcProviderNativeBAC9C7E2"}}
    assert controller_values(alternative.template)["serviceAccount"] == {
        "create": True,
        "name": "karpenter-controller",
        "annotations": {"eks.amazonaws.com/role-arn": "${GetAtt:ControllerRole4FED04D7.Arn}"},
    }
    assert not resources(alternative.template, "AWS::EKS::PodIdentityAssociation")


def test_pod_identity_associates_the_service_account_and_trusts_only_its_session_tags(pod_identity, alternative):
    irsa, pods = _trust(pod_identity)
    assert irsa == _trust(alternative)[0]  # kept: running IRSA pods keep their credentials through a switch
    assert pods == {
        "Action": ["sts:AssumeRole", "sts:TagSession"],
        "Effect": "Allow",
        "Principal": {"Service": "pods.eks.amazonaws.com"},
        "Condition": {
            "StringEquals": {
                "aws:SourceAccount": {"Ref": "AWS::AccountId"},
                "aws:RequestTag/eks-cluster-name": "alt_cluster-1",
                "aws:RequestTag/kubernetes-namespace": "karpenter",
                "aws:RequestTag/kubernetes-service-account": "karpenter-controller",
            }
        },
    }
    association_id, association = only(resources(pod_identity.template, "AWS::EKS::PodIdentityAssociation"))
    assert association_id == ASSOCIATION
    assert association["Properties"] == {
        "ClusterName": {"Ref": "Cluster9EE0221C"},
        "Namespace": "karpenter",
        "ServiceAccount": "karpenter-controller",
        "RoleArn": {"Fn::GetAtt": [ROLE, "Arn"]},
    }
    # no annotation: the association names the role
    assert controller_values(pod_identity.template)["serviceAccount"] == {
        "create": True,
        "name": "karpenter-controller",
    }
    agent = pod_identity.json["Resources"][AGENT]["Properties"]
    assert (agent["AddonName"], agent["PreserveOnDelete"], "AddonVersion" in agent) == (
        "eks-pod-identity-agent",
        True,
        False,
    )
    # created before the controller, deleted after it: it drains nodes on destroy with working credentials
    assert {ASSOCIATION, AGENT, "ClusterNodegroupSystemNodesV27445704A"} <= set(depends_on(pod_identity.json, CHART))


@pytest.mark.parametrize("direction", ["irsa -> pod-identity", "pod-identity -> irsa"])
def test_switching_keeps_the_role_and_replaces_nothing(direction, alternative, pod_identity):
    before, after = (alternative, pod_identity) if direction.startswith("irsa") else (pod_identity, alternative)
    added, removed, changed = template_change(before.json, after.json)
    assert (added | removed) == {ASSOCIATION, AGENT}
    assert changed == {ROLE: ["AssumeRolePolicyDocument"], CHART: ["Values"]}  # the chart: a helm upgrade
    assert not create_only_properties("AWS::IAM::Role") & {"AssumeRolePolicyDocument"}
    assert before.karpenter_json == after.karpenter_json


def test_a_switch_rolls_the_controllers_pods_in_the_same_helm_upgrade(alternative, pod_identity):
    """EKS injects credentials when a pod is created, and the 1.14.1 chart's Deployment reads neither the
    service account's annotation nor a checksum of it: only a change under podAnnotations changes its pod
    template. The association is deleted in the cleanup after the upgrade, when the new pods run; the IRSA
    trust statement stays in both modes (above)."""
    irsa, pods = (controller_values(s.template)["podAnnotations"] for s in (alternative, pod_identity))
    assert irsa == {"karpenter-stack.cdk/controller-credentials": "irsa"}
    assert pods == {"karpenter-stack.cdk/controller-credentials": "pod-identity"}
