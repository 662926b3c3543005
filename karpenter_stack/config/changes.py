"""Where the facts the app's settings declare about changing them come from (``change(...)`` on each field of
``model``; the node objects' facts are in ``constructs_lib/karpenter/specs/change.py``). Each names the behaviour it
relies on and the version: aws-cdk-lib 2.275's bundled handlers (``custom-resource-handlers/dist/aws-eks``),
CloudFormation's resource schemas (the create-only properties cfn-lint ships), EKS's documented rules and
Karpenter 1.14.1's chart. ``make transitions`` checks every declaration against the review's verdict."""

from __future__ import annotations

CLUSTER_NAME = (
    "karpenter_stack/config/model.py stack_name_for: the stack is named after its cluster, so another name is a "
    "new stack (a new cluster, queue, roles and rules) created from nothing by cdk deploy, and the old stack keeps "
    "running until it is destroyed (make review blocks the rename until acknowledged)"
)
KUBERNETES_VERSION = (
    "EKS User Guide, 'Update existing cluster to new Kubernetes version': one minor version up at a time; "
    "CloudFormation's rollback of an upgrade calls UpdateClusterVersion to the old minor, which EKS's version "
    "rollback (within 7 days) may carry out on the control plane only (karpenter_stack/cluster_updates.py)"
)
AUTHENTICATION_MODE = (
    "aws-cdk-lib 2.275 cluster-resource-handler onUpdate: unset (CONFIG_MAP) -> API_AND_CONFIG_MAP -> API, one step "
    "per deploy and never back (karpenter_stack/cluster_updates.py)"
)
KARPENTER_VERSION = (
    "aws-cdk-lib 2.275 kubectl-handler: helm upgrade of the CRD chart, then of the controller chart to the new "
    "Version (a new image: the controller's pods roll)"
)
HELM_NAMESPACE = (
    "Helm 3: a release in another namespace cannot take over the old release's cluster-scoped objects (CRDs, "
    "ClusterRoles) and fails, and aws-cdk's kubectl-handler never uninstalls the old release "
    "(karpenter_stack/baseline.py refuses it)"
)
STACK_ENVIRONMENT = "a CDK stack's env (account, region): CloudFormation stacks live in one account and region"
VPC = (
    "AWS::EC2::VPC CidrBlock is create-only (a new CIDR replaces the VPC and its subnets), and EKS keeps a cluster "
    "in the VPC it was created in: the cluster handler's subnet update (updateVpc) fails (karpenter_stack/baseline.py)"
)
ZONES = (
    "one AWS::EC2::Subnet pair per zone, and EKS keeps a cluster's subnets in the availability zones chosen at its "
    "creation (EKS User Guide, network requirements): the handler's subnet update (updateVpc) fails on a running "
    "cluster (karpenter_stack/baseline.py refuses it)"
)
NAT_GATEWAYS = "AWS::EC2::NatGateway, one per zone up to natGateways: added or deleted; nothing running restarts"
ENDPOINT = (
    "aws-cdk-lib 2.275 cluster-resource-handler onUpdate: endpoint access and public CIDRs are an "
    "EndpointAccessUpdate in place (updateAccess), one kind of cluster update per deploy"
)
NAG = "cdk-nag 3 runs as a validation plugin at synth: the templates do not change"
SYNTH_ONLY = "read by the synth's checks and make security-report only: the templates do not change"
HOSTING = (
    "EKS: a Fargate profile cannot be updated or moved; aws-cdk-lib 2.275's handler deletes it (or creates a new "
    "one) and the pods it scheduled (the controller, CoreDNS) are evicted and rescheduled; a managed node group's "
    "nodes are drained when it is deleted"
)
SYSTEM_INSTANCE_TYPE = (
    "AWS::EKS::Nodegroup InstanceTypes is create-only: a new node group replaces the old one, whose nodes EKS drains"
)
DELETION_PROTECTION = (
    "aws-cdk-lib 2.275 cluster-resource-handler onUpdate: deletionProtection is an update in place "
    "(updateDeletionProtection) sending the new value; an absent one is an UpdateClusterConfig with nothing in it "
    "(tooling/handlers runs the real handler), refused at synth against the baseline; so a first value is one way: "
    "CloudFormation's rollback of it is that empty update (the deploy simulator, tooling/simulator)"
)
TERMINATION_PROTECTION = (
    "CloudFormation termination protection: the app also sets it with a custom resource "
    "(constructs_lib/stack_protection.py), added or removed with the setting"
)
RETENTION = "CloudFormation DeletionPolicy and UpdateReplacePolicy act on deletion only: nothing running changes"
DEMO_WORKLOAD = (
    "aws-cdk-lib 2.275 kubectl-handler: a Kubernetes manifest resource is applied on create and deleted on delete"
)
ALARMS = "AWS::CloudWatch::Alarm resources, added or deleted (AlarmActions updated in place)"
SPOT_ROLE = "AWS::IAM::ServiceLinkedRole AWSServiceRoleForEC2Spot, added or deleted"
ADDON_VERSIONS = (
    "AWS::EKS::Addon AddonVersion is updated in place: EKS rolls the add-on's DaemonSet or Deployment (its pods "
    "restart)"
)
CREDENTIALS = (
    "constructs_lib/karpenter/names.py: a pod annotation names the controller's credentials, so a switch rolls its pods in the "
    "same helm upgrade (karpenter chart 1.14.1: podAnnotations are in the pod template); the role is kept, the "
    "AWS::EKS::PodIdentityAssociation and the agent add-on are added or deleted"
)
ADMINISTRATORS = (
    "the stack's ClusterAdminRole and its mapping are deleted (or added) and the access entries or aws-auth "
    "mapping updated in place (aws-cdk-lib 2.275 kubectl-handler patches aws-auth)"
)
PROFILE = (
    "the production profile fills in protections, retention and a NAT gateway per zone "
    "(karpenter_stack/config/merge.py), each changing as its own setting declares, and adds an on-demand system "
    "NodePool: leaving production deletes that NodePool, and Karpenter drains and terminates all its nodes; its "
    "authenticationMode (API_AND_CONFIG_MAP) is a new cluster's only: a deployed cluster keeps its mode"
)
BY_FIELD = "each field of the object declares its own"
EXISTING_KUBECTL_ROLE = (
    "aws-cdk-lib 2.275 kubectl-handler: each Kubernetes resource (charts, manifests) names the role it assumes "
    "(RoleArn): a new role updates them in place, the releases and objects stay"
)
EXISTING_OIDC = (
    "AWS::IAM::Role AssumeRolePolicyDocument (the controller's IRSA trust) is updated in place; the running pods "
    "keep their credentials"
)
EXISTING_VPC = (
    "the imported cluster's VPC: the kubectl handler's network is named by subnetIds and clusterSecurityGroupId, "
    "and no resource of the stack has the VPC id as a property"
)
EXISTING_PRIVATE_ENDPOINT = (
    "aws-cdk-lib 2.275 KubectlProvider: with a private endpoint its handler runs in the cluster's subnets (the "
    "Lambda function's VpcConfig, updated in place)"
)
EXISTING_AUTHENTICATION_MODE = "read by the synth's checks only (CONFIG_MAP refused, unset warned about)"

NODE_OBJECTS = (
    "aws-cdk-lib 2.275 kubectl-handler: a manifest resource's delete runs kubectl delete (a deleted NodePool drains "
    "all its nodes); CloudFormation calls no handler for a resource removed with DeletionPolicy Retain (handover "
    "sets it on every node object's resource: nothing running changes), and its apply over a running object "
    "(Overwrite) adopts what a GitOps tool applied (gitops -> stack); stack -> gitops deletes the objects "
    "(karpenter_stack/baseline.py refuses it against a baseline)"
)

# The delivery pipeline's settings (not moved by ``make transitions``, which moves one environment's settings).
PIPELINE_SOURCE = (
    "CDK Pipelines (aws-cdk-lib 2.275): the source action's configuration of the AWS::CodePipeline::Pipeline is "
    "updated in place; the next run builds from the new source"
)
PIPELINE_NAME = (
    "karpenter_stack/pipeline_stack.py: the pipeline's stack is named after it, so another name is a new pipeline "
    "stack; the old one keeps running until destroyed"
)
PIPELINE_WAVES = (
    "CDK Pipelines (aws-cdk-lib 2.275): a wave is a stage of the AWS::CodePipeline::Pipeline (updated in place); "
    "the environments' own stacks are named after the environments, not the waves, so nothing deployed moves"
)
NOT_MOVED_PIPELINE = "the delivery pipeline's settings: the matrix moves one environment's (tests/test_pipeline.py)"
NOT_MOVED_FILLING = (
    "moved with the files: a value changes only the objects of nodeManifests that use it, as editing those files "
    "would (nodeManifests' move; tests/test_node_manifests.py)"
)
NODE_MANIFESTS = (
    "constructs_lib/karpenter/node_manifests.py: each object of the files becomes a node class, pool or overlay like an entry "
    "of nodeClasses, nodePools or nodeOverlays, with the same logical id (EC2NodeClass-<name>, NodePool-<name>, "
    "NodeOverlay-<name>): adding a file adds its objects, editing it changes them as their fields declare (a pool's "
    "template or a class's spec drifts their nodes), and removing one deletes them (a deleted NodePool drains all "
    "its nodes)"
)
