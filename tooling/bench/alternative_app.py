"""The same-scope app built the way most Python users would: aws_eks.Cluster plus the
cdk-eks-karpenter construct library (Kubernetes 1.36, one Fargate profile, one EC2NodeClass, one
NodePool). Only `make bench` runs it, in a throwaway environment."""

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk.lambda_layer_kubectl_v36 import KubectlV36Layer
from cdk_eks_karpenter import Karpenter

app = cdk.App()
stack = cdk.Stack(app, "alternative")
vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
cluster = eks.Cluster(
    stack,
    "Cluster",
    vpc=vpc,
    version=eks.KubernetesVersion.V1_36,
    default_capacity=0,
    kubectl_layer=KubectlV36Layer(stack, "KubectlLayer"),
    core_dns_compute_type=eks.CoreDnsComputeType.FARGATE,
)
cluster.add_fargate_profile(
    "karpenter",
    selectors=[
        eks.Selector(namespace="karpenter"),
        eks.Selector(namespace="kube-system", labels={"k8s-app": "kube-dns"}),
    ],
)
karpenter = Karpenter(stack, "Karpenter", cluster=cluster, namespace="karpenter", version="1.14.1")
node_class = karpenter.add_ec2_node_class(
    "default-class",
    {
        "amiFamily": "AL2023",  # cdk-eks-karpenter 1.0.27 insists on it, even next to an alias
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"aws-cdk:subnet-type": "Private"}}],
        "securityGroupSelectorTerms": [{"id": cluster.cluster_security_group_id}],
        "role": karpenter.node_role.role_name,
    },
)
karpenter.add_node_pool(
    "default-pool",
    {
        "template": {
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": node_class["name"]},
                "requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
                    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
                    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]},
                ],
            }
        },
        "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m"},
    },
)
app.synth()
