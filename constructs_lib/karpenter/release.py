"""The Karpenter Helm releases: the CRD chart, then the controller chart."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Aws, CustomResource, Duration, RemovalPolicy
from aws_cdk import aws_eks as eks
from constructs import Construct

from .names import CHART_REPOSITORY, CONTROLLER_CHART, CRD_CHART, CREDENTIALS_POD_ANNOTATION, IRSA_ROLE_ANNOTATION
from .specs.controller import ControllerSpec

# The kubectl handler Lambda stops at 15 minutes; Helm must give up before that so the failure is
# reported as a Helm error rather than a Lambda timeout.
HELM_TIMEOUT = Duration.minutes(12)

CONTROLLER_REPLICAS = 2


# The app's defaults of chart values no setting writes: controller.chartValues may override them (a team's choice);
# every other value the app writes is its own (chart_values.ownership).
OVERRIDABLE = ("replicas", "podDisruptionBudget", "priorityClassName")


def controller_values(*, controller: ControllerSpec = ControllerSpec(), **app: Any) -> dict[str, Any]:
    """Values for the ``karpenter`` chart: the app's (:func:`app_values`, which takes ``app``) with
    ``controller.chart_values`` deep-merged over them (:func:`merge`; what the map may hold is checked before,
    chart_values.problems)."""
    values = app_values(controller=controller, **app)
    return merge(values, controller.chart_values) if controller.chart_values else values


def merge(app: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` deep-merged over ``app``: maps key by key, lists the app writes extended (its entries first, the
    map's after them, each once), anything else replaced."""
    out = dict(app)
    for key, value in extra.items():
        mine = out.get(key)
        if isinstance(mine, Mapping) and isinstance(value, Mapping):
            out[key] = merge(mine, value)
        elif isinstance(mine, list) and isinstance(value, list):
            out[key] = [*mine, *(item for item in value if item not in mine)]
        else:
            out[key] = value
    return out


def app_values(
    *,
    cluster_name: str,
    interruption_queue: str,
    service_account: str,
    role_arn: str | None,
    dns_policy: str,
    tolerations: Sequence[dict[str, str]] | None = None,
    service_monitor: bool = False,
    controller: ControllerSpec = ControllerSpec(),
    pod_annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The values the app writes for the ``karpenter`` chart. Every key here exists in the 1.14 chart's values.yaml.
    ``role_arn``: the IRSA annotation of the service account (None with EKS Pod Identity, whose
    association names the role)."""
    values: dict[str, Any] = {
        "serviceAccount": {
            "create": True,
            "name": service_account,
            **({"annotations": {IRSA_ROLE_ANNOTATION: role_arn}} if role_arn is not None else {}),
        },
        "settings": {
            "clusterName": cluster_name,
            "interruptionQueue": interruption_queue,
            **controller.settings(),
        },
        # A switch between IRSA and Pod Identity rolls the pods in the same helm upgrade (names.py).
        "podAnnotations": {
            CREDENTIALS_POD_ANNOTATION: "irsa" if role_arn is not None else "pod-identity",
            **(pod_annotations or {}),
        },
        "replicas": CONTROLLER_REPLICAS,
        # Voluntary disruptions (node drains, Fargate patching) take down at most one replica, and the
        # controller is scheduled ahead of workloads.
        "podDisruptionBudget": {"name": "karpenter", "maxUnavailable": 1},
        "priorityClassName": "system-cluster-critical",
        "dnsPolicy": dns_policy,
        "controller": {
            "resources": controller.resources(),
            # Saves the controller an IMDS lookup for its region (and Fargate has no IMDS).
            "env": [{"name": "AWS_REGION", "value": Aws.REGION}],
        },
    }
    if tolerations:
        values["tolerations"] = list(tolerations)
    if service_monitor:
        values["serviceMonitor"] = {"enabled": True}
    if controller.log_level is not None:
        values["logLevel"] = controller.log_level
    return values


class KarpenterRelease(Construct):
    """Installs ``karpenter-crd`` and then ``karpenter`` (with ``skip_crds``: the CRD chart owns the
    CRDs, so Helm upgrades them -- the controller chart's ``crds/`` would be installed once and never
    upgraded). Exposes both charts so manifests can depend on them.

    ``keep_crds`` (a cluster this app did not create): the CRD chart's custom resource is retained
    (DeletionPolicy and UpdateReplacePolicy Retain), so CloudFormation never sends it ``Delete`` and
    aws-cdk's kubectl handler never runs ``helm uninstall karpenter-crd``. The chart's CRDs carry no
    ``helm.sh/resource-policy: keep``: uninstalling it would delete the CRDs and with them every NodePool,
    NodeClaim and EC2NodeClass of the cluster, other teams' included. The app's own NodePools and
    EC2NodeClasses are still deleted one by one, by their manifests, before the controller chart."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: eks.ICluster,
        version: str,
        namespace: str,
        values: dict[str, Any],
        keep_crds: bool = False,
    ) -> None:
        super().__init__(scope, id)

        def chart(construct_id: str, name: str, **options: Any) -> eks.HelmChart:
            return eks.HelmChart(
                self,
                construct_id,
                cluster=cluster,
                chart=name,
                repository=f"{CHART_REPOSITORY}/{name}",
                version=version,
                release=name,
                namespace=namespace,
                timeout=HELM_TIMEOUT,
                **options,
            )

        # kube-system always exists; any other namespace is created by the first release.
        # The CRD chart has no pods: there is nothing for --wait to wait for (the API server serves a
        # CRD once it is established, long before the controller chart's pods are ready).
        self.crd_chart = chart("CrdChart", CRD_CHART, create_namespace=namespace != "kube-system", wait=False)
        self.controller_chart = chart(
            "ControllerChart", CONTROLLER_CHART, create_namespace=False, skip_crds=True, values=values, wait=True
        )
        self.controller_chart.node.add_dependency(self.crd_chart)
        if keep_crds:
            resource = self.crd_chart.node.default_child
            assert isinstance(resource, CustomResource), "aws-cdk's HelmChart is one custom resource"
            resource.apply_removal_policy(RemovalPolicy.RETAIN)
        self.charts = (self.crd_chart, self.controller_chart)
