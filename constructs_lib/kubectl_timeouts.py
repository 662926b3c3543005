"""A service timeout on every custom resource that aws-cdk's kubectl handler serves."""

from __future__ import annotations

from aws_cdk import CfnResource, Duration
from constructs import IConstruct

# The custom resource types of aws-cdk's EKS kubectl provider (manifests, Helm charts, patches).
KUBECTL_RESOURCE_TYPES = frozenset({
    "Custom::AWSCDK-EKS-KubernetesResource",
    "Custom::AWSCDK-EKS-HelmChart",
    "Custom::AWSCDK-EKS-KubernetesPatch",
})
# The kubectl handler and the provider framework in front of it each run at most 15 minutes. Should the
# handler time out (kubectl delete waiting on a finalizer that never clears), the framework times out
# with it and never answers: without a ServiceTimeout CloudFormation would wait its default hour.
KUBECTL_SERVICE_TIMEOUT = Duration.minutes(16)


def bound_kubectl_operations(scope: IConstruct) -> int:
    """Sets ``ServiceTimeout`` on every kubectl-provider custom resource under ``scope``; returns how
    many. Call it once the scope is complete (a manifest added afterwards needs another call).

    A one-pass walk rather than a CDK Aspect: an Aspect calls back from the jsii runtime into Python
    for every construct of the app, which doubled the synth time."""
    count = 0
    for node in scope.node.find_all():
        # aws-cdk's custom resources are plain CfnResources: only those cost a call into jsii.
        if type(node) is CfnResource and node.cfn_resource_type in KUBECTL_RESOURCE_TYPES:
            node.add_property_override("ServiceTimeout", KUBECTL_SERVICE_TIMEOUT.to_seconds())
            count += 1
    return count
