"""The props of the :class:`~constructs_lib.karpenter.Karpenter` construct, one object in the AWS CDK style:
each prop is described once, on the prop, with its ``:default:`` when it has one (the required ones have none)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from constructs import IDependable

from .controller_role import ControllerCredentials
from .specs.controller import ControllerSpec
from .specs.node_class import NodeClassSpec
from .specs.node_objects import NodeObjects
from .specs.node_overlay import NodeOverlaySpec
from .specs.node_pool import NodePoolSpec


class NodeAuthorization(Enum):
    """How Karpenter's nodes are allowed to join the cluster."""

    AWS_AUTH = "aws-auth"  # a mapping in the aws-auth ConfigMap (needs an eks.Cluster this app owns)
    ACCESS_ENTRY = "access-entry"  # an EKS access entry (authentication mode API or API_AND_CONFIG_MAP)
    # both (authentication mode API_AND_CONFIG_MAP): nodes keep joining whichever EKS reads, so the
    # cluster can move to API later without a window where its nodes are not authorized
    AWS_AUTH_AND_ACCESS_ENTRY = "aws-auth+access-entry"


@dataclass(frozen=True, kw_only=True)
class KarpenterProps:
    """Properties of a :class:`~constructs_lib.karpenter.Karpenter`."""

    cluster: eks.ICluster
    """The cluster, created (``eks.Cluster``) or imported (``eks.Cluster.from_cluster_attributes``; an imported
    one needs its kubectl role, kubectl layer and OIDC provider)."""

    cluster_name: str
    """The cluster's name as a literal (not the cluster's token): IAM and the queue then do not wait for the
    cluster."""

    version: str
    """Karpenter release of the ``karpenter-crd`` and ``karpenter`` charts, e.g. ``1.14.1``."""

    template_file: str | Path
    """Karpenter's CloudFormation template for ``version`` (node role, controller policies, interruption queue)."""

    node_classes: Sequence[NodeClassSpec]
    """EC2NodeClasses to apply, one per spec (a Windows class gets a Windows node role of its own)."""

    node_pools: Sequence[NodePoolSpec]
    """NodePools to apply, one per spec."""

    node_authorization: NodeAuthorization
    """How the node roles may join the cluster: an aws-auth mapping (a cluster this app creates), an EKS access
    entry, or both."""

    node_objects: NodeObjects = NodeObjects.STACK
    """Who applies the node classes, pools and overlays: the stack, the stack retaining them (the step between the
    modes), or a GitOps tool (the construct renders them; the lists may then be empty).

    :default: NodeObjects.STACK
    """

    node_overlays: Sequence[NodeOverlaySpec] = ()
    """NodeOverlays to apply (alpha: needs the controller's ``nodeOverlay`` feature gate).

    :default: - no NodeOverlays
    """

    kubernetes_version: str | None = None
    """The cluster's Kubernetes version (``1.NN``), which the node classes' AMI aliases must have images for
    (Amazon Linux 2 ends with 1.32; an alias pinned to a build date before EKS released the version has none).

    :default: - the aliases are not checked against a version (the construct cannot read it from the cluster)
    """

    namespace: str = "kube-system"
    """Namespace of the Karpenter controller and its charts' release.

    :default: "kube-system"
    """

    service_account: str = "karpenter"
    """Service account of the Karpenter controller (the one its role trusts).

    :default: "karpenter"
    """

    controller_after: Sequence[IDependable] = ()
    """What the controller needs before it starts and must outlive it on delete (the capacity it runs on,
    CoreDNS; with EKS Pod Identity the ``eks-pod-identity-agent`` add-on).

    :default: - nothing outside the construct
    """

    controller_dns_policy: str = "ClusterFirst"
    """The controller pods' ``dnsPolicy``.

    :default: "ClusterFirst"
    """

    controller_tolerations: Sequence[Mapping[str, str]] = ()
    """Tolerations of the controller pods (the taints of the capacity they run on).

    :default: - the chart's tolerations
    """

    controller_pod_annotations: Mapping[str, str] | None = None
    """More annotations of the controller pods (besides the one that names their credentials).

    :default: - no more
    """

    node_networking: Sequence[IDependable] = ()
    """What Karpenter's nodes need while they exist (vpc-cni, kube-proxy add-ons): created before and deleted
    after every node class and pool.

    :default: - nothing besides the construct's own parts
    """

    discovery_subnets: Sequence[ec2.ISubnet] = ()
    """Subnets created in this app that the construct tags for discovery (``karpenter.sh/discovery=<cluster_name>``).

    :default: - no subnet is tagged
    """

    subnet_ids: Sequence[str] = ()
    """Node subnets, selected by id.

    :default: - by the discovery tag (on ``discovery_subnets``, or added by whoever owns the subnets)
    """

    security_group_ids: Sequence[str] = ()
    """Node security groups, selected by id.

    :default: - the cluster security group, tagged for discovery by the construct
    """

    service_monitor: bool = False
    """Create the chart's Prometheus ServiceMonitor (needs the Prometheus operator's CRDs).

    :default: false
    """

    controller: ControllerSpec = field(default_factory=ControllerSpec)
    """Feature gates, batching, zonal shift, log level and size of the controller.

    :default: ``ControllerSpec()``: the chart's defaults
    """

    controller_credentials: ControllerCredentials = ControllerCredentials.IRSA
    """How the controller gets its role: IRSA (anywhere) or EKS Pod Identity (not on Fargate; the
    ``eks-pod-identity-agent`` add-on must run on the controller's nodes: pass it in ``controller_after``).

    :default: ControllerCredentials.IRSA
    """

    spot_service_linked_role: bool = False
    """Create the account's spot service-linked role (retained on delete); pools that may launch spot are
    applied after it.

    :default: false
    """

    interruption_queue_alarms: bool = False
    """CloudWatch alarms when interruption messages pile up or grow old in the queue.

    :default: false
    """

    own_node_roles: Sequence[str] = ()
    """IAM role ARNs of node roles you already have (a running install's, on an existing cluster): an EC2NodeClass of a
    file may name one in ``spec.role`` (its name); the construct authorizes each (an EC2_LINUX or EC2_WINDOWS access
    entry, or an aws-auth mapping) and lets the controller pass it to EC2, as it does its own node roles.

    :default: - the classes use the construct's node roles
    """

    alarm_topic_arn: str | None = None
    """SNS topic the alarms notify (with ``interruption_queue_alarms``).

    :default: - the alarms notify nobody
    """
