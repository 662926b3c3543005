"""A service timeout on every custom resource that aws-cdk's kubectl handler serves."""

from __future__ import annotations

from aws_cdk import CfnResource, Duration
from aws_cdk import aws_eks as eks
from constructs import IConstruct

# The custom resource types of aws-cdk's EKS kubectl provider (manifests, Helm charts, patches).
KUBECTL_RESOURCE_TYPES = frozenset(
    {
        "Custom::AWSCDK-EKS-KubernetesResource",
        "Custom::AWSCDK-EKS-HelmChart",
        "Custom::AWSCDK-EKS-KubernetesPatch",
    }
)
# The kubectl handler and the provider framework in front of it each run at most 15 minutes. Should the
# handler time out (kubectl delete waiting on a finalizer that never clears), the framework times out
# with it and never answers: without a ServiceTimeout CloudFormation would wait its default hour.
KUBECTL_SERVICE_TIMEOUT = Duration.minutes(16)


def bound_kubectl_operations(scope: IConstruct) -> int:
    """Sets ``ServiceTimeout`` on every kubectl-provider custom resource under ``scope``; returns how
    many. Call it once the scope is complete (a manifest added afterwards needs another call).

    A one-pass walk rather than a CDK Aspect: an Aspect calls back from the jsii runtime into Python
    for every construct of the app, which doubled the synth time. The walk is pre-order, so each
    manifest, chart or patch is followed by its CustomResource and then the CfnResource to set: class
    checks in Python find them without a call into jsii per construct."""
    count = 0
    owner_seen = False
    for node in scope.node.find_all():
        if isinstance(node, (eks.KubernetesManifest, eks.HelmChart, eks.KubernetesPatch)):
            owner_seen = True
        elif owner_seen and type(node) is CfnResource:
            node.add_property_override("ServiceTimeout", KUBECTL_SERVICE_TIMEOUT.to_seconds())
            owner_seen = False
            count += 1
    return count
