"""The app's configuration model: every setting, its type, default, description and rules.

Node classes and node pools are the Karpenter construct's own specs (constructs_lib.karpenter.specs);
this model adds what the app decides: the cluster, its network, hosting, protection and versions
(``cluster_settings``, the first of :class:`AppConfig`'s settings), its access, and an existing cluster to
install Karpenter onto (``existing_cluster``); the forms of the values are in ``forms``.
The model checks each setting on its own; the rules across settings are ``validate``'s topic validators.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, field_validator

from constructs_lib.karpenter.node_manifests import CLUSTER_NAME_VARIABLE, VARIABLE_NAME
from constructs_lib.karpenter.specs.base import quoted
from constructs_lib.karpenter.specs.change import Change, change
from constructs_lib.karpenter.specs.controller import ControllerSpec
from constructs_lib.karpenter.specs.files import project_path
from constructs_lib.karpenter.specs.node_class import NodeClassSpec
from constructs_lib.karpenter.specs.node_objects import NodeObjects
from constructs_lib.karpenter.specs.node_overlay import NodeOverlaySpec
from constructs_lib.karpenter.specs.node_pool import NodePoolSpec

from . import changes as facts
from .cluster_settings import CREATED_CLUSTER, ClusterSettings, KarpenterProp
from .existing_cluster import EXISTING_CLUSTER_EXAMPLE, ExistingClusterConfig
from .forms import _ROLE_NAME, _unique


def stack_name_for(cluster_name: str) -> str:
    """The stack is named after its cluster; stack names allow no '_'."""
    return cluster_name.replace("_", "-")


# typing caches a Literal union by its set of values: authenticationMode's values are listed (in the reference,
# in the messages) in the order of ExistingClusterConfig.authenticationMode, the first such union built (its class
# is built before this one; declared in ClusterSettings, built first, the order would be this field's own).
class AppConfig(ClusterSettings):
    """Everything the app builds is decided here."""

    authentication_mode: Annotated[Literal["CONFIG_MAP", "API_AND_CONFIG_MAP", "API"] | None, CREATED_CLUSTER] = Field(
        None,
        description=(
            "How the cluster authenticates IAM principals. Unset: EKS's CONFIG_MAP (the aws-auth ConfigMap); under the "
            "production profile, API_AND_CONFIG_MAP for a new cluster and the deployed cluster's mode (your accepted "
            "baseline's) for a running one, with a synth warning and the steps to move where that is aws-auth alone. "
            "API_AND_CONFIG_MAP adds EKS access entries (node role, administrators) and keeps aws-auth; API uses access "
            "entries only. One way only (unset/CONFIG_MAP -> API_AND_CONFIG_MAP -> API), one step per deploy, and in a "
            "deploy that changes nothing else of the cluster; a mode once written (even CONFIG_MAP) cannot be unset "
            "again. With an accepted baseline the synth refuses any other step."
        ),
        json_schema_extra=change(
            Change.ONE_WAY,
            "Custom::AWSCDK-EKS-Cluster Config.accessConfig.authenticationMode",
            facts.AUTHENTICATION_MODE,
        ),
    )
    administrators: Annotated[list[str], CREATED_CLUSTER] = Field(
        default_factory=list,
        description="IAM role ARNs with cluster-admin (access entries with AmazonEKSClusterAdminPolicy; with "
        "CONFIG_MAP, system:masters in aws-auth), instead of the stack's ClusterAdminRole that anyone in "
        "the account allowed sts:AssumeRole may assume (unset: that role). Setting them on a running "
        "cluster deletes that role and its mapping in place. Not service-linked roles; role paths only with "
        "access entries (aws-auth matches roles without their path).",
        examples=[["arn:aws:iam::111122223333:role/platform-admins"]],
        json_schema_extra=change(
            Change.RESOURCES, "the ClusterAdminRole, access entries and aws-auth", facts.ADMINISTRATORS
        ),
    )
    controller: Annotated[ControllerSpec, KarpenterProp()] = Field(
        default_factory=ControllerSpec,
        description="The Karpenter controller: featureGates, batchMaxDuration, batchIdleDuration, zonalShift, logLevel, "
        "cpu, memory, and chartValues: any other value of the karpenter chart (keys below).",
        json_schema_extra=change(Change.BY_FIELD, "the karpenter chart's values", facts.BY_FIELD),
        examples=[{"logLevel": "debug", "featureGates": {"nodeOverlay": True}}],
    )
    existing_cluster: ExistingClusterConfig | None = Field(
        None,
        description=(
            "Install Karpenter onto this existing EKS cluster (named clusterName, running kubernetesVersion) instead of "
            "creating one: no VPC, cluster, hosting or add-ons are created, and the settings that shape them are refused."
        ),
        json_schema_extra=change(
            Change.BY_FIELD,
            "the imported cluster; adding or removing it makes another kind of stack",
            facts.BY_FIELD,
        ),
        examples=[EXISTING_CLUSTER_EXAMPLE],
    )
    node_objects: Annotated[NodeObjects, KarpenterProp()] = Field(
        NodeObjects.STACK,
        description=(
            "Who applies the node classes, pools and overlays. stack: the stack (one custom resource each). gitops: "
            "a GitOps tool (Argo CD, Flux): the stack deploys everything else, and make manifests ARGS=--write "
            "writes them, every fill-in resolved, to gitops/<stack>/ for the tool to apply; the node lists may then be "
            "empty. handover: as stack, but an object that leaves the stack keeps running (CloudFormation retains "
            "it): deploy it before moving a running cluster from stack to gitops, or the move deletes every pool and "
            "Karpenter drains their nodes (the synth refuses that move against your baseline)."
        ),
        json_schema_extra=change(
            Change.INTERRUPTS,
            "the EC2NodeClass, NodePool and NodeOverlay custom resources: retained (handover), or removed (gitops)",
            facts.NODE_OBJECTS,
        ),
        examples=["gitops"],
    )
    node_classes: Annotated[list[NodeClassSpec], KarpenterProp()] = Field(
        default_factory=lambda: [NodeClassSpec()],
        description="EC2NodeClasses to apply (at least one, unless nodeObjects is gitops).",
        json_schema_extra=change(
            Change.BY_FIELD,
            "EC2NodeClass objects; an entry removed deletes its EC2NodeClass (refused while a pool uses it)",
            facts.BY_FIELD,
        ),
        examples=[[{"name": "default", "amiAlias": "bottlerocket@latest", "rootVolumeSizeGib": 100}]],
    )
    node_pools: Annotated[list[NodePoolSpec], KarpenterProp()] = Field(
        default_factory=lambda: [NodePoolSpec()],
        description="NodePools to apply (at least one, unless nodeObjects is gitops).",
        json_schema_extra=change(
            Change.BY_FIELD,
            "NodePool objects; an entry removed deletes its NodePool, and Karpenter drains all its nodes",
            facts.BY_FIELD,
        ),
        examples=[
            [{"name": "general", "capacityTypes": ["on-demand", "spot"]}, {"name": "arm", "architectures": ["arm64"]}]
        ],
    )
    node_overlays: Annotated[list[NodeOverlaySpec], KarpenterProp()] = Field(
        default_factory=list,
        description="NodeOverlays to apply (alpha, needs controller.featureGates.nodeOverlay): price or extended-"
        "resource capacity Karpenter assumes for matching instance types.",
        json_schema_extra=change(
            Change.BY_FIELD,
            "NodeOverlay objects; an entry removed deletes its NodeOverlay (no node drifts)",
            facts.BY_FIELD,
            needs={"controller": {"featureGates": {"nodeOverlay": True}}},
        ),
        examples=[
            [
                {
                    "name": "gpu-slices",
                    "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g6"]}],
                    "capacity": {"nvidia.com/gpu-slice": "4"},
                }
            ]
        ],
    )

    node_manifests: list[str] = Field(
        default_factory=list,
        description="Karpenter YAML files of your own (EC2NodeClass, NodePool, NodeOverlay; several objects per file "
        "with ---), as paths or globs relative to the project folder (where cdk.json is). Each object becomes a node "
        "class, pool or overlay next to those of nodeClasses, nodePools and nodeOverlays, checked like them; the app "
        "fills in the node role, the cluster's subnets and security groups (the karpenter.sh/discovery terms) and "
        "${CLUSTER_NAME}. Where the files define classes (pools) and nodeClasses (nodePools) is not set, the built-in "
        "default class (pool) is not added.",
        json_schema_extra=change(
            Change.INTERRUPTS,
            "the EC2NodeClass, NodePool and NodeOverlay objects of the files",
            facts.NODE_MANIFESTS,
        ),
        examples=[["examples/manifests/node-*.yaml"]],
    )
    node_manifest_variables: dict[str, str] = Field(
        default_factory=dict,
        description="Values of your own placeholders in the nodeManifests files, by name: ${NAME} and <<NAME>> alike "
        "(as envsubst, Terraform or your CI wrote them), in any field; a value may hold ${CLUSTER_NAME}, which the app "
        "fills in itself. A placeholder without a value is refused, but in spec.userData, where a shell's ${VAR} is "
        "the script's own.",
        json_schema_extra=change(
            Change.INTERRUPTS,
            "the EC2NodeClass, NodePool and NodeOverlay objects of the files, where they use the placeholder",
            facts.NODE_MANIFESTS,
            not_moved=facts.NOT_MOVED_FILLING,
        ),
        examples=[{"KARPENTER_NODE_IAM_ROLE_NAME": "KarpenterNodeRole-${CLUSTER_NAME}", "TEAM": "payments"}],
    )
    existing_node_roles: Annotated[list[str], KarpenterProp("own_node_roles")] = Field(
        default_factory=list,
        description="On an existing cluster: ARNs of node roles your team already has (a running install's), which "
        "nodeManifests classes may name in spec.role (by name) and keep: the app authorizes each (an EC2_LINUX or "
        "EC2_WINDOWS access entry) and lets the controller pass it to EC2, as it does its own node role; the safety "
        "net removes the instance profiles Karpenter made for them with the rest of this stack's.",
        json_schema_extra=change(
            Change.RESOURCES,
            "an access entry per role and the controller's PassRole policy for them",
            facts.NODE_MANIFESTS,
            not_moved=facts.NOT_MOVED_FILLING,
            needs={"existingCluster": EXISTING_CLUSTER_EXAMPLE},
        ),
        examples=[["arn:aws:iam::111122223333:role/eks-node-role"]],
    )
    node_manifest_roles: list[str] = Field(
        default_factory=list,
        description="Names your nodeManifests files give spec.role for the app's node role (KarpenterNodeRole-"
        "<clusterName>, Karpenter's own name for it, always means it): such a class launches with the app's node role "
        "(Windows classes: its Windows node role), which the app authorizes, lets the controller pass and cleans up "
        "after. Another role in a file is refused.",
        json_schema_extra=change(
            Change.INTERRUPTS,
            "the EC2NodeClass objects of the files that name one of these roles",
            facts.NODE_MANIFESTS,
            not_moved=facts.NOT_MOVED_FILLING,
        ),
        examples=[["eks-node-role", "karpenter-node"]],
    )

    @field_validator("node_manifests")
    @classmethod
    def _manifest_paths(cls, value: list[str]) -> list[str]:
        for path in value:
            project_path(path)
        _unique("nodeManifests", value, what="paths")
        return value

    @field_validator("node_manifest_variables")
    @classmethod
    def _variables(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not VARIABLE_NAME.fullmatch(name):
                raise ValueError(
                    f"{quoted(name)} is not a placeholder name: letters, digits and '_', not starting with a digit "
                    "(the NAME of ${NAME} or <<NAME>>)"
                )
            if name == CLUSTER_NAME_VARIABLE:
                raise ValueError("CLUSTER_NAME is the cluster's name (clusterName), which the app fills in itself")
        return value

    @field_validator("node_manifest_roles")
    @classmethod
    def _roles(cls, value: list[str]) -> list[str]:
        for name in value:
            if not _ROLE_NAME.fullmatch(name):
                raise ValueError(f"{quoted(name)} is not an IAM role name (1-64 of letters, digits and +=,.@_-)")
        _unique("nodeManifestRoles", value, what="names")
        return value

    def karpenter_settings(self) -> dict[str, Any]:
        """The settings marked :class:`KarpenterProp`, by the name of the construct's prop they are."""
        return {
            marker.name or name: getattr(self, name)
            for name, field in type(self).model_fields.items()
            for marker in field.metadata
            if isinstance(marker, KarpenterProp)
        }

    @property
    def pinned_addon_versions(self) -> dict[str, str]:
        """addonVersions by add-on name."""
        return {str(name): version for name, version in self.addon_versions.items()}

    # Filled by load_config: things the user should know that do not stop the synth.
    _warnings: tuple[str, ...] = PrivateAttr(default=())
    # Filled by load_config: what the app did that changes nothing the user meant (a namespace left out of a
    # cluster-scoped object of a file), said as information, not as a warning.
    _notes: tuple[str, ...] = PrivateAttr(default=())

    @property
    def warnings(self) -> tuple[str, ...]:
        return self._warnings

    @property
    def notes(self) -> tuple[str, ...]:
        return self._notes

    # Filled by load_config: the steps that move a deployed cluster the production profile keeps on aws-auth alone to
    # access entries (config/access_steps.py), which make review prints; empty otherwise.
    _access_steps: tuple[str, ...] = PrivateAttr(default=())

    @property
    def access_steps(self) -> tuple[str, ...]:
        return self._access_steps

    # Filled by load_config: where each node class, pool and overlay was written, by setting ("" for an entry of the
    # setting itself, else "<file>: <Kind>/<name>" of nodeManifests), so that a rule's message names the file.
    _node_sources: dict[str, tuple[str, ...]] = PrivateAttr(default_factory=dict)

    @property
    def node_sources(self) -> dict[str, tuple[str, ...]]:
        return self._node_sources

    @property
    def node_class_sources(self) -> tuple[str, ...]:
        return self._node_sources.get("nodeClasses", ())


# The settings marked CREATED_CLUSTER, by field name.
CREATED_CLUSTER_ONLY = tuple(
    name for name, field in AppConfig.model_fields.items() if any(m is CREATED_CLUSTER for m in field.metadata)
)
