"""A service timeout on every custom resource that aws-cdk's kubectl handler serves."""

from __future__ import annotations

import jsii
from aws_cdk import CfnResource, Duration, IAspect
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


@jsii.implements(IAspect)
class BoundKubectlOperations:
    """Sets ``ServiceTimeout`` on every kubectl-provider custom resource in the scope, including ones a
    user adds later through the cluster's ``add_manifest``/``add_helm_chart``."""

    def visit(self, node: IConstruct) -> None:
        if CfnResource.is_cfn_resource(node) and node.cfn_resource_type in KUBECTL_RESOURCE_TYPES:
            node.add_property_override("ServiceTimeout", KUBECTL_SERVICE_TIMEOUT.to_seconds())
