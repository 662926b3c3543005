"""The Karpenter construct on a bare stack with an imported cluster, as another CDK app would use it:
typed props in, handles out, its own order, no app configuration involved."""

from __future__ import annotations

import re

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template

from constructs_lib.karpenter import Karpenter, KarpenterProps, NodeAuthorization
from constructs_lib.karpenter.nag import logical_id_of
from constructs_lib.karpenter.names import NODE_MANAGED_POLICIES
from constructs_lib.karpenter.specs.node_class import NodeClassSpec
from constructs_lib.karpenter.specs.node_pool import NodePoolSpec
from karpenter_stack import versions
from tests.bare import (
    CLUSTER_NAME,
    KUBECTL_ROLE_ARN,
    OIDC_PROVIDER_ARN,
    SECURITY_GROUP_ID,
    bare_stack,
    imported_cluster,
)
from tests.cfn import depends_on, each, kubernetes_objects, only, render, render_json, resources

SUBNETS = ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]


def _karpenter(stack: cdk.Stack, **options) -> Karpenter:
    defaults = {
        "node_classes": [NodeClassSpec(name="general")],
        "node_pools": [
            NodePoolSpec(name="spot", node_class="general", capacity_types=["spot"]),
            NodePoolSpec(name="steady", node_class="general", capacity_types=["on-demand"]),
        ],
    }
    cluster = options.pop("cluster", None) or imported_cluster(stack)
    defaults["template_file"] = versions.karpenter_template("1.14.1")
    props = KarpenterProps(cluster=cluster, cluster_name=CLUSTER_NAME, version="1.14.1", **{**defaults, **options})
    return Karpenter(stack, "Karpenter", props)


@pytest.fixture(scope="module")
def built():
    stack = bare_stack()
    karpenter = _karpenter(
        stack,
        node_authorization=NodeAuthorization.ACCESS_ENTRY,
        subnet_ids=SUBNETS,
        security_group_ids=[SECURITY_GROUP_ID],
        spot_service_linked_role=True,
        interruption_queue_alarms=True,
    )
    template = Template.from_stack(stack)
    return stack, karpenter, template, template.to_json()


def test_handles_lead_to_the_resources_they_name(built):
    stack, karpenter, template, _ = built
    assert sorted(karpenter.node_pools) == ["spot", "steady"] and sorted(karpenter.node_classes) == ["general"]
    # nested-stack outputs of the template's queue and node role
    assert re.fullmatch(
        r"Outputs\.BareKarpenterTemplateKarpenterInterruptionQueue[0-9A-F]{8}QueueName",
        stack.resolve(karpenter.queue_name)["Fn::GetAtt"][1],
    )
    assert re.fullmatch(
        r"Outputs\.BareKarpenterTemplateKarpenterNodeRole[0-9A-F]{8}Arn",
        stack.resolve(karpenter.node_role_arn)["Fn::GetAtt"][1],
    )
    role_id = logical_id_of(karpenter.controller_role.role)
    assert template.to_json()["Resources"][role_id]["Type"] == "AWS::IAM::Role"
    assert karpenter.discovery_tag is None  # security groups selected by id: nothing of the cluster tagged
    assert len(karpenter.queue_alarms.alarms) == 2


def test_nodes_join_through_an_ec2_linux_access_entry(built):
    stack, karpenter, template, _ = built
    _, entry = only(resources(template, "AWS::EKS::AccessEntry"))
    assert entry["Properties"]["Type"] == "EC2_LINUX"
    assert entry["Properties"]["AccessPolicies"] == []  # EKS refuses access policies on EC2 entries
    assert entry["Properties"]["ClusterName"] == CLUSTER_NAME
    assert stack.resolve(karpenter.node_role_arn) == entry["Properties"]["PrincipalArn"]
    assert "ConfigMap/aws-auth" not in kubernetes_objects(template)


def test_node_classes_select_the_given_subnets_and_security_groups_by_id(built):
    _, _, template, _ = built
    spec = kubernetes_objects(template)["EC2NodeClass/general"]["spec"]
    assert spec["subnetSelectorTerms"] == [{"id": s} for s in SUBNETS]
    assert spec["securityGroupSelectorTerms"] == [{"id": SECURITY_GROUP_ID}]


def test_the_controller_role_trusts_the_imported_oidc_provider_for_one_service_account(built):
    stack, karpenter, template, json_ = built
    role = json_["Resources"][logical_id_of(karpenter.controller_role.role)]
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Federated": OIDC_PROVIDER_ARN}
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    conditions = json_["Resources"][logical_id_of(karpenter.controller_role.node.find_child("TrustConditions"))]
    value = render_json(conditions["Properties"]["Value"])
    issuer = "oidc.eks.eu-west-1.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF"
    assert value == {
        f"{issuer}:aud": "sts.amazonaws.com",
        f"{issuer}:sub": "system:serviceaccount:kube-system:karpenter",
    }


def test_order_objects_after_the_charts_authorization_and_safety_net(built):
    stack, karpenter, template, json_ = built
    crd, controller = (logical_id_of(c) for c in (karpenter.crd_chart, karpenter.controller_chart))
    entry = logical_id_of(karpenter.node_access)
    teardown = logical_id_of(karpenter.teardown.resource)
    bound = logical_id_of(karpenter.teardown.drain_bound)
    assert set(depends_on(json_, teardown)) == {controller, entry}
    for manifest in each(karpenter.node_classes.values()):
        assert set(depends_on(json_, logical_id_of(manifest))) == {crd, controller, entry, teardown}
    # The drain bound, between every class and every pool.
    assert set(depends_on(json_, bound)) == {logical_id_of(m) for m in karpenter.node_classes.values()}
    general = logical_id_of(karpenter.node_classes["general"])
    slr = logical_id_of(karpenter.spot_service_linked_role)
    assert set(depends_on(json_, logical_id_of(karpenter.node_pools["spot"]))) == {
        crd,
        controller,
        entry,
        teardown,
        bound,
        general,
        slr,
    }
    assert set(depends_on(json_, logical_id_of(karpenter.node_pools["steady"]))) == {
        crd,
        controller,
        entry,
        teardown,
        bound,
        general,
    }
    assert json_["Resources"][slr]["DeletionPolicy"] == "Retain"


def test_without_ids_the_clusters_group_and_the_given_subnets_are_tagged_for_discovery():
    stack = bare_stack()
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    karpenter = _karpenter(
        stack, node_authorization=NodeAuthorization.ACCESS_ENTRY, discovery_subnets=vpc.private_subnets
    )
    template = Template.from_stack(stack)
    subnets = resources(template, "AWS::EC2::Subnet").values()
    discovery = [{t["Key"]: t["Value"] for t in s["Properties"]["Tags"]}.get("karpenter.sh/discovery") for s in subnets]
    assert sorted(discovery, key=str) == [None, None, CLUSTER_NAME, CLUSTER_NAME]  # the private ones only
    _, tag = only(resources(template, "Custom::AWS"))
    create = render_json(tag["Properties"]["Create"])
    assert create["parameters"] == {
        "Resources": [SECURITY_GROUP_ID],
        "Tags": [{"Key": "karpenter.sh/discovery", "Value": CLUSTER_NAME}],
    }
    spec = kubernetes_objects(template)["EC2NodeClass/general"]["spec"]
    assert (
        spec["securityGroupSelectorTerms"]
        == spec["subnetSelectorTerms"]
        == [{"tags": {"karpenter.sh/discovery": CLUSTER_NAME}}]
    )
    teardown = logical_id_of(karpenter.teardown.resource)
    assert logical_id_of(karpenter.discovery_tag.resource) in depends_on(template.to_json(), teardown)


def test_an_imported_clusters_aws_auth_is_refused():
    stack = bare_stack()
    with pytest.raises(ValueError, match="node_authorization AWS_AUTH needs an eks.Cluster this app creates"):
        _karpenter(stack, node_authorization=NodeAuthorization.AWS_AUTH)


def _without_security_group(stack: cdk.Stack) -> eks.ICluster:
    """An imported cluster as the EKS docs import one: no cluster security group given."""
    return eks.Cluster.from_cluster_attributes(
        stack,
        "NoSecurityGroup",
        cluster_name=CLUSTER_NAME,
        kubectl_role_arn=KUBECTL_ROLE_ARN,
        kubectl_layer=versions.KubectlLayer.for_version("1.35").load()(stack, "Layer"),
        open_id_connect_provider=iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
            stack, "NoSecurityGroupOidc", OIDC_PROVIDER_ARN
        ),
    )


def test_an_imported_cluster_without_its_security_group_is_refused_in_one_line_unless_groups_are_given():
    """Node security groups are selected by id or through the cluster security group, which the construct tags:
    an imported cluster that does not name it was a 40-line jsii traceback (a newcomer's trial)."""
    stack = bare_stack()
    with pytest.raises(ValueError) as refused:
        _karpenter(stack, cluster=_without_security_group(stack), node_authorization=NodeAuthorization.ACCESS_ENTRY)
    assert str(refused.value) == (
        "Bare/Karpenter: the imported cluster has no cluster security group, which node security groups are "
        "selected by: give cluster_security_group_id to eks.Cluster.from_cluster_attributes, or select them by id "
        "(security_group_ids)"
    )
    assert [c.node.id for c in stack.node.children if c.node.id == "Karpenter"] == []  # nothing built
    other = bare_stack()
    karpenter = _karpenter(
        other,
        cluster=_without_security_group(other),
        node_authorization=NodeAuthorization.ACCESS_ENTRY,
        security_group_ids=[SECURITY_GROUP_ID],
    )
    assert karpenter.discovery_tag is None


def test_a_template_file_that_is_not_there_is_refused_in_one_line(tmp_path):
    stack = bare_stack()
    with pytest.raises(ValueError) as refused:
        _karpenter(stack, node_authorization=NodeAuthorization.ACCESS_ENTRY, template_file=str(tmp_path / "no.yaml"))
    assert str(refused.value) == (
        f"Bare/Karpenter: template_file '{tmp_path / 'no.yaml'}': no such file (a relative path is read from the "
        "working directory)"
    )


def test_windows_node_classes_get_their_own_role_with_an_ec2_windows_access_entry():
    """An access entry is EC2_LINUX or EC2_WINDOWS: Windows classes launch with a role of their own, which
    the controller may pass to EC2 (the template's PassRole names only the node role)."""
    stack = bare_stack()
    karpenter = _karpenter(
        stack,
        node_classes=[NodeClassSpec(name="linux"), NodeClassSpec(name="win", ami_alias="windows2022@latest")],
        node_pools=[NodePoolSpec(name="linux", node_class="linux"), NodePoolSpec(name="win", node_class="win")],
        node_authorization=NodeAuthorization.ACCESS_ENTRY,
    )
    template = Template.from_stack(stack)
    resolved = template.to_json()["Resources"]
    windows_role = logical_id_of(karpenter.windows_node_role)
    entries = {
        r["Properties"]["Type"]: r["Properties"]["PrincipalArn"]
        for r in resources(template, "AWS::EKS::AccessEntry").values()
    }
    assert entries == {
        "EC2_LINUX": stack.resolve(karpenter.node_role_arn),
        "EC2_WINDOWS": {"Fn::GetAtt": [windows_role, "Arn"]},
    }
    assert [render(a) for a in resolved[windows_role]["Properties"]["ManagedPolicyArns"]] == [
        f"arn:${{Ref:AWS::Partition}}:iam::aws:policy/{p}" for p in NODE_MANAGED_POLICIES
    ]
    objects = kubernetes_objects(template)
    assert objects["EC2NodeClass/win"]["spec"]["role"] == "${Ref:" + windows_role + "}"
    assert objects["EC2NodeClass/linux"]["spec"]["role"] == render(stack.resolve(karpenter.node_role_name))
    (pass_role,) = [
        r
        for r in resources(template, "AWS::IAM::ManagedPolicy").values()
        if r["Properties"]["PolicyDocument"]["Statement"][0]["Action"] == "iam:PassRole"
    ]
    assert pass_role["Properties"]["PolicyDocument"]["Statement"] == [
        {
            "Action": "iam:PassRole",
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [windows_role, "Arn"]},
            "Condition": {
                "StringEquals": {"iam:PassedToService": {"Fn::Join": ["", ["ec2.", {"Ref": "AWS::URLSuffix"}]]}}
            },
        }
    ]
    assert pass_role["Properties"]["Roles"] == [{"Ref": logical_id_of(karpenter.controller_role.role)}]


def test_pools_and_classes_that_do_not_fit_are_refused_with_every_problem():
    from constructs_lib.karpenter.specs.rules import pool_problems

    problems = pool_problems(
        [NodeClassSpec(name="general")],
        [
            NodePoolSpec(name="r", node_class="general", capacity_types=["reserved"]),
            NodePoolSpec(name="lost", node_class="gpu"),
            NodePoolSpec(name="fixed", replicas=2),
        ],
        {},
    )
    assert problems == [
        "nodePools 'r' allows the reserved capacity type, but its nodeClass 'general' has no "
        "capacityReservationSelectorTerms: it would launch nothing reserved",
        "nodePools 'lost' refers to nodeClass 'gpu', which is not in nodeClasses (general)",
        "nodePools 'fixed' refers to nodeClass 'default', which is not in nodeClasses (general)",
        "nodePools 'fixed' set replicas (static capacity), which Karpenter ignores unless "
        "controller.featureGates.staticCapacity is true",
    ]


def _prop_docs() -> dict[str, str]:
    """Each field of KarpenterProps and the docstring under it (the AWS CDK style: a prop's doc sits on the prop)."""
    import ast
    import inspect

    from constructs_lib.karpenter import props as karpenter_props

    (props,) = [
        n
        for n in ast.parse(inspect.getsource(karpenter_props)).body
        if isinstance(n, ast.ClassDef) and n.name == "KarpenterProps"
    ]
    docs = {}
    for field, after in zip(props.body, [*props.body[1:], None], strict=True):
        if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name):
            is_doc = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            docs[field.target.id] = after.value.value if is_doc else ""
    return docs


def test_every_prop_is_described_and_states_its_default_once():
    import dataclasses

    docs = _prop_docs()
    fields = {f.name: f for f in dataclasses.fields(KarpenterProps)}
    assert list(docs) == list(fields)
    required = [
        name
        for name, f in fields.items()
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    assert required == [
        "cluster",
        "cluster_name",
        "version",
        "template_file",
        "node_classes",
        "node_pools",
        "node_authorization",
    ]
    for name, doc in docs.items():
        description = doc.split(":default:")[0].strip()
        assert len(description) > 20, f"{name}: no description"
        assert doc.count(":default:") == (0 if name in required else 1), f"{name}: {doc!r}"


def test_the_apps_settings_that_are_props_name_props_of_the_construct():
    import dataclasses

    from karpenter_stack.config import AppConfig

    settings = AppConfig().karpenter_settings()
    assert set(settings) <= {f.name for f in dataclasses.fields(KarpenterProps)}
    assert settings["version"] == "1.14.1" and settings["namespace"] == "kube-system"
    assert settings["spot_service_linked_role"] is False and settings["service_account"] == "karpenter"
    assert len(settings) == 14


def _object_ids(node_classes: list[NodeClassSpec], node_pools: list[NodePoolSpec]) -> dict[str, str]:
    """Kind/name -> the logical id of the manifest that applies it (resolved from the construct tree, no synth)."""
    stack = bare_stack()
    karpenter = _karpenter(
        stack, node_authorization=NodeAuthorization.ACCESS_ENTRY, node_classes=node_classes, node_pools=node_pools
    )
    manifests = {
        **{f"EC2NodeClass/{n}": m for n, m in karpenter.node_classes.items()},
        **{f"NodePool/{n}": m for n, m in karpenter.node_pools.items()},
    }
    return {key: stack.resolve(m.node.default_child.logical_id) for key, m in manifests.items()}


def test_reordering_inserting_or_removing_a_pool_or_class_keeps_every_other_objects_logical_id():
    """Node classes and pools are keyed by name (EC2NodeClass-<name>, NodePool-<name>), never by position; with the
    administrators (tests/test_cluster_access.py) these are the lists whose entries are resources. The other list
    settings make none per entry (publicAccessCidrs, subnetIds, additionalNagPacks: properties or imports; a data
    volume or a requirement lives inside its object; nodeManifests' objects are these, by name)."""
    classes = [NodeClassSpec(name="general"), NodeClassSpec(name="arm")]
    pools = [
        NodePoolSpec(name=n, node_class=c) for n, c in (("spot", "general"), ("steady", "general"), ("graviton", "arm"))
    ]
    first = _object_ids(classes, pools)
    assert len(set(first.values())) == 5
    changed = _object_ids(
        [classes[1], classes[0], NodeClassSpec(name="extra")],
        [pools[2], NodePoolSpec(name="new", node_class="extra"), pools[0]],
    )
    assert {k: changed[k] for k in changed if k in first} == {k: first[k] for k in changed if k in first}
    assert "NodePool/steady" not in changed and len([k for k in changed if k in first]) == 4
