"""The EKS cluster stack: VPC, cluster, controller hosting, Karpenter and its node configuration."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, cast

from aws_cdk import Annotations, Aws, CfnOutput, CfnResource, CfnWaitConditionHandle
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from constructs_lib.cluster_addons import ManagedAddons, coredns_follows_kubernetes
from constructs_lib.controller_hosting import FargateControllerHosting, SystemNodeGroupHosting
from constructs_lib.karpenter import Karpenter, NodeAuthorization, manifests
from constructs_lib.karpenter.controller_role import ControllerCredentials
from constructs_lib.karpenter.nag import acknowledge, managed_policy_finding
from constructs_lib.karpenter.names import ADMIN_ROLE_ID, POD_IDENTITY_AGENT, WINDOWS_CLUSTER_POLICY
from constructs_lib.karpenter.specs.base import quoted
from constructs_lib.key_policies import deny_direct_grants
from constructs_lib.network import ClusterVpc

from .acknowledgments import acknowledge_cluster
from .base_stack import AppStack
from .config import AppConfig, ConfigError, ResolvedEnvironment, stack_name_for
from .deployed import deployed_access_entries

# The id of the access entry aws-cdk-lib 2.275's eks.Cluster grants its masters_role where the authentication mode
# reads access entries (aws-eks/lib/cluster.js: grantAccess("mastersRoleAccess", ...), AmazonEKSClusterAdminPolicy).
MASTERS_ROLE_ACCESS = "mastersRoleAccess"

# How Karpenter's nodes join, per authentication mode (unset is EKS's CONFIG_MAP).
NODE_AUTHORIZATION = {
    None: NodeAuthorization.AWS_AUTH,
    "CONFIG_MAP": NodeAuthorization.AWS_AUTH,
    "API_AND_CONFIG_MAP": NodeAuthorization.AWS_AUTH_AND_ACCESS_ENTRY,
    "API": NodeAuthorization.ACCESS_ENTRY,
}

ALL_LOG_TYPES = [
    eks.ClusterLoggingTypes.API,
    eks.ClusterLoggingTypes.AUDIT,
    eks.ClusterLoggingTypes.AUTHENTICATOR,
    eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
    eks.ClusterLoggingTypes.SCHEDULER,
]


def endpoint_access(config: AppConfig) -> eks.EndpointAccess:
    """Private only, or private plus a public endpoint restricted to the configured CIDRs. With a
    private-only endpoint CDK runs its kubectl handler inside the VPC."""
    if config.endpoint_access == "private":
        return eks.EndpointAccess.PRIVATE
    return eks.EndpointAccess.PUBLIC_AND_PRIVATE.only_from(*config.public_access_cidrs)


def check_controller_placement(private_subnets: Sequence[ec2.ISubnet], hosting: str) -> None:
    """The chart runs two replicas with hostname anti-affinity and a zone spread constraint
    (DoNotSchedule): they need hosts in two availability zones, which Fargate and the node group take
    from the private subnets."""
    zones = {s.availability_zone for s in private_subnets}
    if len(zones) < 2:
        raise ConfigError(
            f"controllerHosting '{hosting}': the private subnets span {len(zones)} availability zone(s) "
            f"({', '.join(sorted(zones)) or 'none'}); the Karpenter controller's two replicas need private "
            "subnets in at least 2 zones (zone spread, DoNotSchedule)"
        )


def public_subnet_terms(config: AppConfig, public_ids: Collection[str], vpc_id: str) -> list[str]:
    """The subnet terms that name, by id, a public subnet of the existing VPC (its lookup says which are public; the
    configuration cannot): one line each, naming the typed setting or the file's own field."""
    found = []
    sources = config.node_class_sources
    for i, node_class in enumerate(config.node_classes):
        source = sources[i] if i < len(sources) else ""
        if source and node_class.written is not None:
            written = node_class.written["spec"].get("subnetSelectorTerms") or []
            terms = [(f"{source}: spec.subnetSelectorTerms[{j}]", t) for j, t in enumerate(written)]
        else:
            terms = [
                (f"nodeClasses[{i}].extraSubnetSelectorTerms[{j}]", {"id": t.id})
                for j, t in enumerate(node_class.extra_subnet_selector_terms)
            ]
        found += [
            f"{at}.id {quoted(term['id'])}: a public subnet of VPC {vpc_id} (its lookup in cdk.context.json says so)"
            for at, term in terms
            if isinstance(term, dict) and term.get("id") in public_ids
        ]
    return found


class KarpenterClusterStack(AppStack):
    """An EKS cluster with no default capacity, autoscaled by Karpenter: network -> cluster ->
    controller hosting (and the add-ons that run there) -> Karpenter."""

    def __init__(
        self, scope: Construct, id: str, *, environment: ResolvedEnvironment, cluster_only: bool = False, **kwargs: Any
    ) -> None:
        """``cluster_only``: stop once the cluster is built (the synth's guard reads its Config: karpenter_stack/
        baseline.py; nothing later changes it, tests/test_transitions.py checks)."""
        config = environment.config
        super().__init__(
            scope,
            id,
            environment=environment,
            description=f"EKS cluster {config.cluster_name} autoscaled by Karpenter {config.karpenter_version}",
            **kwargs,
        )
        self.network = self._network()
        if self.network.lookup_pending:
            # The CLI looks the VPC up and runs the app again; this pass's template is never
            # deployed, but must not be empty (CloudFormation validation rejects that).
            CfnWaitConditionHandle(self, "AwaitingVpcLookup")
            return
        if not self.network.created:
            self._public_subnet_terms()
        self.cluster = self._cluster()
        if cluster_only:
            return
        self.hosting, self.addons = self._controller_hosting()
        self.karpenter = self._karpenter()
        if config.demo_workload:
            # Applied after the node pools exist, so scaling it up has somewhere to go.
            demo = self.cluster.add_manifest("DemoWorkload", manifests.demo_deployment())
            demo.node.add_dependency(*self.karpenter.node_pools.values())
        self._cluster_outputs()
        self.add_karpenter_outputs(self.karpenter)
        self.finish()

    def _public_subnet_terms(self) -> None:
        """An existing VPC's public subnets by id: refused by the production profile, a warning otherwise."""
        config = self.config
        public = {s.subnet_id for s in self.network.vpc.public_subnets}
        lines = public_subnet_terms(config, public, self.network.vpc.vpc_id)
        if lines and config.profile == "production":
            refused = "which the production profile refuses for nodes; select private subnets"
            raise ConfigError("\n".join(f"{line}, {refused}" for line in lines))
        for line in lines:
            Annotations.of(self).add_warning_v2(
                "eks-karpenter:configuration", f"{line}; select private subnets (the production profile refuses it)"
            )

    def _network(self) -> ClusterVpc:
        config = self.config
        return ClusterVpc(
            self,
            "Network",
            cluster_name=config.cluster_name,
            vpc_id=config.vpc_id,
            cidr=config.vpc_cidr,
            max_azs=config.max_azs,
            nat_gateways=config.nat_gateways,
        )

    def _cluster(self) -> eks.Cluster:
        config, name = self.config, self.config.cluster_name
        self.admin_role = self._admin_role()
        # Kubernetes secrets are envelope-encrypted with a key of ours (rotated yearly by KMS).
        self.secrets_key = kms.Key(
            self,
            "SecretsKey",
            description=f"Envelope encryption of Kubernetes secrets in EKS cluster {name}",
            enable_key_rotation=True,
        )
        # EKS documents no encryption context for secrets encryption (EKS User Guide, "Encrypt Kubernetes secrets
        # with KMS on existing clusters", https://docs.aws.amazon.com/eks/latest/userguide/enable-kms.html, asks only
        # for a symmetric key of the cluster's Region) and no kms:ViaService value: a key policy condition on
        # either could refuse EKS's own calls. What it supports: its grant is made for an AWS resource.
        deny_direct_grants(self.secrets_key)
        cluster = eks.Cluster(
            self,
            "Cluster",
            cluster_name=name,
            version=self.resolved.kubernetes_version,
            kubectl_layer=self.resolved.kubectl_layer(self, "KubectlLayer"),
            vpc=self.network.vpc,
            vpc_subnets=[self.network.private_subnets],
            default_capacity=0,
            cluster_logging=ALL_LOG_TYPES,
            endpoint_access=endpoint_access(config),
            secrets_encryption_key=self.secrets_key,
            # false is written too: aws-cdk's handler sends the property's new value, and an absent one is no
            # change (a protected cluster would stay protected through the documented destroy).
            deletion_protection=config.deletion_protection,
            # EC2 = no patch: CoreDNS's compute type is the managed add-on's configuration.
            core_dns_compute_type=eks.CoreDnsComputeType.EC2,
            masters_role=self.admin_role,
            authentication_mode=eks.AuthenticationMode(config.authentication_mode)
            if config.authentication_mode
            else None,
            output_cluster_name=False,
            output_config_command=False,
            output_masters_role_arn=False,
        )
        if not self.network.created:
            Annotations.of(cluster).acknowledge_warning(
                "@aws-cdk/aws-eks:clusterMustManuallyTagSubnet",
                "Existing VPC: its subnets belong to whoever manages that VPC. Karpenter selects them by "
                "id; load-balancer role tags are the VPC owner's to add (docs/configuration.md, 'Existing VPC').",
            )
        acknowledge_cluster(cluster, cluster_name=name, public_access_cidrs=config.public_access_cidrs)
        self._administrators(cluster)
        if self.windows:
            self._windows_cluster_role(cluster)
        return cluster

    def _admin_role(self) -> iam.Role | None:
        """Without `administrators`: a role an operator assumes for kubectl (mapped to system:masters), for
        anyone in the account who is allowed sts:AssumeRole on it (the card's design). With them, only
        those roles are cluster admins (see _administrators), and this role is not created."""
        if self.config.administrators:
            return None
        return iam.Role(
            self,
            ADMIN_ROLE_ID,
            assumed_by=iam.AccountRootPrincipal(),
            description=f"kubectl administrators of EKS cluster {self.config.cluster_name}",
        )

    @staticmethod
    def _windows_cluster_role(cluster: eks.Cluster) -> None:
        """EKS's VPC resource controller assigns Windows nodes' pod IPs with the cluster role."""
        cluster.role.add_managed_policy(iam.ManagedPolicy.from_aws_managed_policy_name(WINDOWS_CLUSTER_POLICY))
        acknowledge(
            cluster.role,
            managed_policy_finding(WINDOWS_CLUSTER_POLICY),
            "Windows node classes: EKS's VPC resource controller assigns Windows pods' IP addresses with "
            "the cluster role, which needs this AWS managed policy (EKS user guide, Windows support).",
        )

    @property
    def windows(self) -> bool:
        """Some node class launches Windows nodes."""
        return any(c.windows for c in self.config.node_classes)

    def _administrators(self, cluster: eks.Cluster) -> None:
        """Cluster-admin for the configured roles: access entries when the mode reads them, else aws-auth."""
        mode = self.config.authentication_mode
        if mode in ("API_AND_CONFIG_MAP", "API"):
            deployed = deployed_access_entries(stack_name_for(self.config.cluster_name))
            entries = administrator_entries(self, cast(eks.ICluster, cluster), self.config.administrators, deployed)
            # (aws-cdk's own entry of the ClusterAdminRole, masters_role, where the mode reads access entries)
            masters = cluster.node.try_find_child(MASTERS_ROLE_ACCESS)
            admins = [*entries.values(), *([masters] if masters is not None else [])]
            if mode == "API_AND_CONFIG_MAP" and admins:
                # Moving from CONFIG_MAP, the deploy that adds the entries drops the administrators' system:masters
                # mappings: aws-auth is rewritten only once the entries exist, so no administrator is locked out.
                cluster.aws_auth.node.add_dependency(*admins)
            return
        for arn in self.config.administrators:
            cluster.aws_auth.add_masters_role(
                iam.Role.from_role_arn(self, f"Administrator{principal_key(arn)}", arn, mutable=False)
            )

    def _controller_hosting(self) -> tuple[FargateControllerHosting | SystemNodeGroupHosting, ManagedAddons]:
        """Capacity for the controller and CoreDNS, and the managed add-ons (CoreDNS runs there)."""
        config = self.config
        check_controller_placement(self.network.vpc.private_subnets, config.controller_hosting)
        fargate = config.controller_hosting == "fargate"
        hosting: FargateControllerHosting | SystemNodeGroupHosting
        if fargate:
            hosting = FargateControllerHosting(
                self,
                "ControllerHosting",
                cluster=self.cluster,
                cluster_name=config.cluster_name,
                kubernetes_version=config.kubernetes_version,
                karpenter_namespace=config.karpenter_namespace,
                subnets=self.network.private_subnets,
                aws_auth=config.authentication_mode != "API",
            )
        else:
            hosting = SystemNodeGroupHosting(
                self,
                "ControllerHosting",
                cluster=self.cluster,
                cluster_name=config.cluster_name,
                kubernetes_version=config.kubernetes_version,
                instance_type=config.system_node_instance_type,
                subnets=self.network.private_subnets,
                aws_auth=config.authentication_mode != "API",
            )
        addons = ManagedAddons(
            self,
            "Addons",
            cluster=self.cluster,
            versions=self.resolved.addon_versions,
            coredns_on_fargate=fargate,
            windows_ipam=self.windows,
            coredns_after=[hosting.capacity],
        )
        if fargate:
            coredns_follows_kubernetes(self.cluster, config.kubernetes_version, addons.coredns)
        return hosting, addons

    def _karpenter(self) -> Karpenter:
        # Id "Default" adds nothing to the logical ids of what it contains: everything Karpenter adds
        # keeps the ids it had when the stack built these parts itself, so deployed stacks update in
        # place (tests/test_logical_ids.py). Another app can give it any id.
        props = self.resolved.karpenter_props(
            cluster=cast(eks.ICluster, self.cluster),  # (jsii's typing: Cluster lacks ICluster.kubectl_provider)
            node_authorization=NODE_AUTHORIZATION[self.config.authentication_mode],
            # (not CoreDNS: the controller resolves through the VPC's resolver, dnsPolicy Default)
            controller_after=[
                self.hosting.capacity,
                *([self.addons.addons[POD_IDENTITY_AGENT]] if POD_IDENTITY_AGENT in self.addons.addons else []),
            ],
            controller_credentials=ControllerCredentials(self.config.controller_credentials),
            controller_dns_policy=self.hosting.controller_dns_policy,
            controller_tolerations=self.hosting.controller_tolerations,
            controller_pod_annotations=self.hosting.controller_pod_annotations,
            # Pod networking before the nodes (Windows IPAM is the vpc-cni add-on's setting). Not CoreDNS: nodes
            # join without it, and every add-on is preserved on delete (its deletion changes nothing running).
            node_networking=[a for name, a in self.addons.addons.items() if name != "coredns"],
            discovery_subnets=self.network.vpc.private_subnets if self.network.created else (),
            subnet_ids=() if self.network.created else self.network.private_subnet_ids,
        )
        return Karpenter(self, "Default", props)

    def _cluster_outputs(self) -> None:
        CfnOutput(self, "ClusterName", value=self.cluster.cluster_name, description="EKS cluster name")
        admin = self.admin_role.role_arn if self.admin_role else self.config.administrators[0]
        CfnOutput(
            self,
            "UpdateKubeconfigCommand",
            value=(
                f"aws eks update-kubeconfig --name {self.cluster.cluster_name} --region {Aws.REGION} --role-arn {admin}"
            ),
            description="Run this to point kubectl at the cluster (as the cluster admin role)"
            if self.admin_role
            else "Run this to point kubectl at the cluster (as the first of the administrators)",
        )


def principal_key(arn: str) -> str:
    """What keys the constructs of one IAM principal (an administrator): its name's letters and digits, then a hash
    of the whole ARN (two principals of one name, in other accounts or paths, stay apart). Never a list position."""
    name = re.sub(r"[^A-Za-z0-9]", "", arn.rsplit("/", 1)[-1])[:40]
    return name + hashlib.sha256(arn.encode()).hexdigest()[:8]


def administrator_entries(
    scope: Construct, cluster: eks.ICluster, administrators: Sequence[str], deployed: Mapping[str, str]
) -> dict[str, eks.AccessEntry]:
    """A cluster-admin access entry for each principal, by principal: each is keyed by its ARN
    (``AdministratorAccess<principal_key>``), never by its place in the list (EKS keeps one access entry per
    principal: an entry re-keyed by a removal before it would be created again while its old one still exists, and
    the deploy fails); an entry the running stack has (``deployed``: principal -> logical id, from the baseline)
    keeps its logical id, so the entries of releases that keyed them by position stay where they are."""
    entries = {}
    for arn in administrators:
        entry = eks.AccessEntry(
            scope,
            f"AdministratorAccess{principal_key(arn)}",
            cluster=cluster,
            principal=arn,
            access_policies=[
                eks.AccessPolicy.from_access_policy_name(
                    "AmazonEKSClusterAdminPolicy", access_scope_type=eks.AccessScopeType.CLUSTER
                )
            ],
        )
        if arn in deployed:
            cast(CfnResource, entry.node.default_child).override_logical_id(deployed[arn])
        entries[arn] = entry
    return entries
