"""Names that cross a boundary (AWS <-> Kubernetes <-> Helm), defined once.

Everything that two components must agree on -- a tag key, a chart location, a CRD group -- lives
here, and tests assert that both sides use these values.
"""

from __future__ import annotations

# Karpenter discovers subnets and security groups by this tag (value: the cluster name).
DISCOVERY_TAG_KEY = "karpenter.sh/discovery"

# Karpenter's Helm charts are published as OCI artifacts; the CDK Helm handler needs the full URL.
CHART_REPOSITORY = "oci://public.ecr.aws/karpenter"
CONTROLLER_CHART = "karpenter"
CRD_CHART = "karpenter-crd"

# Kubernetes API groups/versions of the Karpenter v1 CRDs.
NODE_POOL_API_VERSION = "karpenter.sh/v1"
NODE_CLASS_GROUP = "karpenter.k8s.aws"
NODE_CLASS_API_VERSION = f"{NODE_CLASS_GROUP}/v1"
NODE_CLASS_KIND = "EC2NodeClass"

# Label keys of Karpenter's restricted domains that NodePool labels and requirements may still use
# (Karpenter 1.14.1 CRD rules, "label domain ... is restricted"; tests/test_cel_rules.py keeps these
# equal to the mirrored rules).
KARPENTER_SH_LABELS_ALLOWED = ("karpenter.sh/capacity-type", "karpenter.sh/nodepool")
KARPENTER_AWS_WELL_KNOWN_LABELS = (
    "karpenter.k8s.aws/instance-tenancy",
    "karpenter.k8s.aws/capacity-reservation-type",
    "karpenter.k8s.aws/capacity-reservation-id",
    "karpenter.k8s.aws/capacity-reservation-interruptible",
    "karpenter.k8s.aws/ec2nodeclass",
    "karpenter.k8s.aws/instance-encryption-in-transit-supported",
    "karpenter.k8s.aws/instance-category",
    "karpenter.k8s.aws/instance-hypervisor",
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-generation",
    "karpenter.k8s.aws/instance-local-nvme",
    "karpenter.k8s.aws/instance-size",
    "karpenter.k8s.aws/instance-cpu",
    "karpenter.k8s.aws/instance-cpu-manufacturer",
    "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
    "karpenter.k8s.aws/instance-memory",
    "karpenter.k8s.aws/instance-ebs-bandwidth",
    "karpenter.k8s.aws/instance-network-bandwidth",
    "karpenter.k8s.aws/instance-gpu-name",
    "karpenter.k8s.aws/instance-gpu-manufacturer",
    "karpenter.k8s.aws/instance-gpu-count",
    "karpenter.k8s.aws/instance-gpu-memory",
    "karpenter.k8s.aws/instance-accelerator-name",
    "karpenter.k8s.aws/instance-accelerator-manufacturer",
    "karpenter.k8s.aws/instance-accelerator-count",
    "karpenter.k8s.aws/instance-capability-flex",
    "karpenter.k8s.aws/placement-group-id",
    "karpenter.k8s.aws/placement-group-partition",
)
# ... and the ones NodeOverlay requirements may use (its CRD's shorter list, Karpenter 1.14.1: no
# tenancy, capacity-reservation or placement-group keys; kept equal to the mirrored rule by a test).
NODE_OVERLAY_AWS_LABELS = tuple(
    key
    for key in KARPENTER_AWS_WELL_KNOWN_LABELS
    if not key.startswith(
        (
            "karpenter.k8s.aws/instance-tenancy",
            "karpenter.k8s.aws/capacity-reservation-",
            "karpenter.k8s.aws/placement-group-",
        )
    )
)
NODE_OVERLAY_API_VERSION = "karpenter.sh/v1alpha1"
# EC2NodeClass tag keys Karpenter sets itself (CRD rules "tag contains a restricted tag matching ...").
RESTRICTED_TAG_KEYS = (
    "eks:eks-cluster-name",
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
)
RESTRICTED_TAG_PREFIX = "kubernetes.io/cluster"

# The AWS managed policies of a node role: the Karpenter node role (templates/) and the system node
# group's role have exactly these.
NODE_MANAGED_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
)

# aws-auth mapping EKS requires for a node role.
NODE_USERNAME = "system:node:{{EC2PrivateDNSName}}"
NODE_GROUPS = ("system:bootstrappers", "system:nodes")
# ... and for a role Windows nodes use too: kube-proxy on Windows runs with the node's identity.
WINDOWS_NODE_GROUP = "eks:kube-proxy-windows"
# What the cluster role needs for Windows nodes: the VPC resource controller assigns their pod IPs.
WINDOWS_CLUSTER_POLICY = "AmazonEKSVPCResourceController"

# IRSA: the audience STS expects and the annotation the EKS pod identity webhook reads.
IRSA_AUDIENCE = "sts.amazonaws.com"
IRSA_ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"
# On the controller's pods: how they get credentials. EKS injects IRSA's token or Pod Identity's agent
# endpoint when a pod is created, and the chart's Deployment reads neither the service account's annotation
# nor a checksum of it: this annotation changes the pod template, so a switch rolls the pods.
CREDENTIALS_POD_ANNOTATION = "karpenter-stack.cdk/controller-credentials"
# On the pods this app runs on Fargate (the controller, CoreDNS): the cluster's Kubernetes minor. A Fargate
# node runs the kubelet of the cluster's version when its pod was created, and EKS requires Fargate nodes at
# the control plane's minor before the next upgrade (EKS User Guide, "Update existing cluster to new Kubernetes
# version"): a bump changes this annotation, so the pods are re-created on nodes of the new minor.
KUBERNETES_VERSION_POD_ANNOTATION = "karpenter-stack.cdk/kubernetes-version"
# EKS Pod Identity: the service principal that assumes the role, and the add-on whose agent hands pods
# their credentials.
POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"
POD_IDENTITY_AGENT = "eks-pod-identity-agent"

# Pod labels the Karpenter chart puts on its controller pods (the chart name, without nameOverride),
# and the label of the CoreDNS pods EKS installs. Fargate profile selectors match on these.
CONTROLLER_POD_LABELS = {"app.kubernetes.io/name": CONTROLLER_CHART}
COREDNS_POD_LABELS = {"k8s-app": "kube-dns"}


def service_account_subject(namespace: str, service_account: str) -> str:
    """The ``sub`` claim of a projected service-account token."""
    return f"system:serviceaccount:{namespace}:{service_account}"


# The construct id of the stack's default cluster-admin role (no `administrators`): the synth finds it in a
# deployed stack's baseline by it (karpenter_stack/baseline.py).
ADMIN_ROLE_ID = "ClusterAdminRole"

# What Karpenter's example files write for the cluster's name; the app fills it in (node_manifests.py, specs/reach.py).
CLUSTER_NAME_PLACEHOLDER = "${CLUSTER_NAME}"

# The node role's name, as the project's template writes it (templates/karpenter-<version>.yaml: RoleName
# !Sub "KarpenterNodeRole-${ClusterName}", upstream's getting-started name; tests/test_karpenter_template.py keeps
# them equal): known before deploy, so node objects rendered for a GitOps tool can name it.
NODE_ROLE_NAME_PREFIX = "KarpenterNodeRole-"


def node_role_name(cluster_name: str) -> str:
    """The name of the node role the construct's template creates for ``cluster_name``."""
    return f"{NODE_ROLE_NAME_PREFIX}{cluster_name}"
