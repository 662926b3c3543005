"""The cluster stack: VPC, EKS cluster, controller hosting, aws-auth, IRSA and outputs."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Match

from constructs_lib.karpenter.names import DISCOVERY_TAG_KEY
from tests.cfn import each, only, render, render_json, resources
from tests.conftest import synth


def _tags(res) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in res["Properties"].get("Tags", [])}


def _subnets(synth, kind: str) -> dict[str, dict]:
    return {
        lid: res
        for lid, res in resources(synth.template, "AWS::EC2::Subnet").items()
        if _tags(res).get("aws-cdk:subnet-type") == kind
    }


# --- network -----------------------------------------------------------------------------------


def test_private_subnets_carry_the_discovery_tag_and_public_ones_do_not(default):
    private = _subnets(default, "Private")
    public = _subnets(default, "Public")
    assert len(private) == 2 and len(public) == 2
    assert {_tags(s)[DISCOVERY_TAG_KEY] for s in private.values()} == {"eks-karpenter"}
    assert all(DISCOVERY_TAG_KEY not in _tags(s) for s in public.values())
    assert all(_tags(s)["kubernetes.io/role/internal-elb"] == "1" for s in private.values())
    assert all(_tags(s)["kubernetes.io/role/elb"] == "1" for s in public.values())


def test_vpc_cidr_and_nat_gateways_follow_configuration(default):
    default.template.has_resource_properties("AWS::EC2::VPC", {"CidrBlock": "10.0.0.0/16"})
    default.template.resource_count_is("AWS::EC2::NatGateway", 1)


def test_no_security_group_of_ours_carries_the_discovery_tag(default):
    for res in each(resources(default.template, "AWS::EC2::SecurityGroup").values()):
        assert DISCOVERY_TAG_KEY not in _tags(res)


def test_cluster_security_group_is_tagged_for_discovery(default):
    _, res = only(resources(default.template, "Custom::AWS"))
    cluster_id = only(resources(default.template, "Custom::AWSCDK-EKS-Cluster"))[0]
    sg = f"${{GetAtt:{cluster_id}.ClusterSecurityGroupId}}"
    create = render_json(res["Properties"]["Create"])
    assert create["action"] == "createTags"
    assert create["parameters"] == {"Resources": [sg], "Tags": [{"Key": DISCOVERY_TAG_KEY, "Value": "eks-karpenter"}]}
    assert render_json(res["Properties"]["Update"]) == create
    delete = render_json(res["Properties"]["Delete"])
    assert (delete["action"], delete["parameters"]) == (
        "deleteTags",
        {"Resources": [sg], "Tags": [{"Key": DISCOVERY_TAG_KEY}]},
    )
    # The handler may tag that one security group and nothing else.
    policy = only({k: v for k, v in resources(default.template, "AWS::IAM::Policy").items() if "DiscoveryTag" in k})[1]
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == ["ec2:CreateTags", "ec2:DeleteTags"]
    assert render(statement["Resource"]).endswith(f":security-group/{sg}")


# --- cluster -----------------------------------------------------------------------------------


def test_cluster_version_logging_and_no_default_capacity(default):
    _, cluster = only(resources(default.template, "Custom::AWSCDK-EKS-Cluster"))
    config = cluster["Properties"]["Config"]
    assert config["name"] == "eks-karpenter"
    assert config["version"] == "1.36"
    assert config["logging"] == {
        "clusterLogging": [
            {"enabled": True, "types": ["api", "audit", "authenticator", "controllerManager", "scheduler"]}
        ]
    }
    # default_capacity=0: no node group, no auto scaling group, no instances of ours.
    default.template.resource_count_is("AWS::EKS::Nodegroup", 0)
    default.template.resource_count_is("AWS::AutoScaling::AutoScalingGroup", 0)
    default.template.resource_count_is("AWS::EC2::Instance", 0)


def test_cluster_runs_in_the_private_subnets(default):
    _, cluster = only(resources(default.template, "Custom::AWSCDK-EKS-Cluster"))
    subnet_ids = {s["Ref"] for s in cluster["Properties"]["Config"]["resourcesVpcConfig"]["subnetIds"]}
    assert subnet_ids == set(_subnets(default, "Private"))


def test_kubectl_layer_matches_the_cluster_version(default):
    _, layer = only(resources(default.template, "AWS::Lambda::LayerVersion"))
    assert layer["Properties"]["Description"].startswith("/opt/kubectl/kubectl 1.36.")


def test_a_non_default_kubernetes_version_uses_its_own_layer():
    from tests.conftest import synth

    s = synth(kubernetesVersion="1.35")
    _, cluster = only(resources(s.template, "Custom::AWSCDK-EKS-Cluster"))
    assert cluster["Properties"]["Config"]["version"] == "1.35"
    _, layer = only(resources(s.template, "AWS::Lambda::LayerVersion"))
    assert layer["Properties"]["Description"].startswith("/opt/kubectl/kubectl 1.35.")


def test_native_oidc_provider_for_irsa(default):
    _, provider = only(resources(default.template, "AWS::IAM::OIDCProvider"))
    assert provider["Properties"]["ClientIdList"] == ["sts.amazonaws.com"]


# --- controller hosting ------------------------------------------------------------------------


def test_one_fargate_profile_selects_karpenter_and_coredns(default):
    _, profile = only(resources(default.template, "Custom::AWSCDK-EKS-FargateProfile"))
    assert profile["Properties"]["Config"]["selectors"] == [
        {"namespace": "kube-system", "labels": {"app.kubernetes.io/name": "karpenter"}},
        {"namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
    ]
    subnets = {s["Ref"] for s in profile["Properties"]["Config"]["subnets"]}
    assert subnets == set(_subnets(default, "Private"))


def _addons(synthesized) -> dict[str, tuple[str, dict]]:
    return {
        r["Properties"]["AddonName"]: (lid, r) for lid, r in resources(synthesized.template, "AWS::EKS::Addon").items()
    }


def test_networking_and_dns_are_managed_addons_that_follow_the_kubernetes_version(default):
    addons = _addons(default)
    assert {name: r["Properties"].get("AddonVersion") for name, (_, r) in addons.items()} == {
        "vpc-cni": None,
        "kube-proxy": "v1.36.0-eksbuild.14",
        "coredns": "v1.14.3-eksbuild.3",
    }
    for _, addon in addons.values():
        props = addon["Properties"]
        assert props["ClusterName"] == {"Ref": "Cluster9EE0221C"}  # updated after the control plane
        assert (props["ResolveConflicts"], props["PreserveOnDelete"]) == ("OVERWRITE", True)
    coredns = addons["coredns"][1]
    assert json.loads(coredns["Properties"]["ConfigurationValues"]) == {"computeType": "Fargate"}
    (profile,) = resources(default.template, "Custom::AWSCDK-EKS-FargateProfile")
    assert profile in coredns["DependsOn"]  # CoreDNS pods need the profile to become active


def test_a_kubernetes_upgrade_moves_the_minor_bound_addons_in_the_same_deploy(default):
    older = synth(kubernetesVersion="1.35")
    assert {n: r["Properties"].get("AddonVersion") for n, (_, r) in _addons(older).items()} == {
        "vpc-cni": None,
        "kube-proxy": "v1.35.3-eksbuild.13",
        "coredns": "v1.14.3-eksbuild.3",
    }
    assert set(_addons(older)) == set(_addons(default))  # same logical ids: updated, never replaced
    assert {lid for lid, _ in _addons(older).values()} == {lid for lid, _ in _addons(default).values()}


def test_every_managed_addon_follows_the_kubernetes_version_or_a_documented_reason_says_why(default, pod_identity):
    """coredns and kube-proxy follow kubernetesVersion (a table per minor); vpc-cni and eks-pod-identity-agent are
    not bound to a minor and stay at EKS's default until addonVersions pins them, each with its reason."""
    from typing import get_args

    from karpenter_stack import versions
    from karpenter_stack.config.model import AppConfig

    (keys,) = get_args(AppConfig.model_fields["addon_versions"].annotation)[:1]
    settable = set(get_args(keys))
    assert settable == {"vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent"}
    assert set(versions.ADDON_VERSIONS) == {"coredns", "kube-proxy"}
    assert set(versions.ADDONS_NOT_BOUND_TO_A_MINOR) == settable - set(versions.ADDON_VERSIONS)
    assert versions.ADDONS_NOT_BOUND_TO_A_MINOR["vpc-cni"].startswith(
        "EKS lists one vpc-cni version for every supported Kubernetes minor"
    )
    built = {
        n: r["Properties"].get("AddonVersion") for n, (_, r) in {**_addons(default), **_addons(pod_identity)}.items()
    }
    assert set(built) == settable
    for name, version in built.items():
        follows = versions.ADDON_VERSIONS.get(name, {}).get(36)
        assert version == follows, name  # None: EKS's default, for the documented reason
    # The setting's description says what an upgrade does to each (the configuration reference is generated from it)
    description = AppConfig.model_fields["addon_versions"].description or ""
    assert "stay at EKS's default of the day the cluster was created, also through an upgrade" in description


def test_pinned_addon_versions_win_and_kube_proxy_must_match_the_minor():
    from karpenter_stack import versions

    assert versions.addon_versions("1.36", {"vpc-cni": "v1.20.1-eksbuild.3"})["vpc-cni"] == "v1.20.1-eksbuild.3"
    with pytest.raises(versions.VersionError) as info:
        versions.addon_versions("1.36", {"kube-proxy": "v1.35.3-eksbuild.13"})
    assert str(info.value) == (
        "addonVersions.kube-proxy 'v1.35.3-eksbuild.13' is not for Kubernetes 1.36 "
        "(kube-proxy's version follows the cluster's minor: v1.36.x-eksbuild.N)"
    )
    with pytest.raises(versions.VersionError) as info:
        versions.addon_versions("1.37", {})
    assert str(info.value) == (
        "kubernetesVersion '1.37' has no known kube-proxy add-on version; set "
        "addonVersions.kube-proxy (aws eks describe-addon-versions --addon-name kube-proxy "
        "--kubernetes-version 1.37)"
    )


def test_the_old_coredns_patch_keeps_its_logical_id_and_its_delete_changes_nothing(default):
    """Running clusters deployed with aws-cdk's Fargate patch: the resource is kept (its delete would push
    CoreDNS off Fargate, compute-type ec2) and now names the Kubernetes minor on CoreDNS's pod template, so an
    upgrade re-creates CoreDNS's Fargate pods (tests/test_upgrades.py); its delete restores nothing."""
    patches = resources(default.template, "Custom::AWSCDK-EKS-KubernetesPatch")
    assert list(patches) == ["ClusterCoreDnsComputeTypePatch37F4F125"]
    props = patches["ClusterCoreDnsComputeTypePatch37F4F125"]["Properties"]
    assert (props["ResourceName"], props["ResourceNamespace"]) == ("deployment/coredns", "kube-system")
    assert (props["ApplyPatchJson"], props["RestorePatchJson"]) == (
        '{"spec":{"template":{"metadata":{"annotations":{"karpenter-stack.cdk/kubernetes-version":"1.36"}}}}}',
        "{}",
    )


def test_nodegroup_hosting_is_two_small_tainted_nodes_and_no_fargate(alternative):
    alternative.template.resource_count_is("Custom::AWSCDK-EKS-FargateProfile", 0)
    _, nodegroup = only(resources(alternative.template, "AWS::EKS::Nodegroup"))
    props = nodegroup["Properties"]
    assert props["ScalingConfig"] == {"MinSize": 2, "DesiredSize": 2, "MaxSize": 2}
    assert props["InstanceTypes"] == ["t3.medium"]
    assert props["Taints"] == [{"Effect": "NO_SCHEDULE", "Key": "CriticalAddonsOnly", "Value": "true"}]
    assert len(props["Subnets"]) == 2  # two private subnets, two AZs


def test_nodegroup_hosting_leaves_coredns_on_ec2(alternative):
    alternative.template.resource_count_is("Custom::AWSCDK-EKS-KubernetesPatch", 0)
    lid, coredns = _addons(alternative)["coredns"]
    assert "ConfigurationValues" not in coredns["Properties"]
    (nodegroup,) = resources(alternative.template, "AWS::EKS::Nodegroup")
    assert nodegroup in coredns["DependsOn"]


# --- aws-auth ----------------------------------------------------------------------------------


def _map_roles(synth) -> list[dict]:
    objects = [
        obj
        for res in resources(synth.template, "Custom::AWSCDK-EKS-KubernetesResource").values()
        for obj in render_json(res["Properties"]["Manifest"])
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == "aws-auth"
    ]
    assert len(objects) == 1, "aws-auth must be applied exactly once"
    return json.loads(objects[0]["data"]["mapRoles"])


def _nested_output_ref(synth, source: dict) -> str:
    """How the parent refers to the Karpenter nested stack's output of ``source``."""
    stack_id = synth.stack.resolve(synth.stack.karpenter.infra.nested_stack_resource.logical_id)
    outputs = {name: o for name, o in synth.karpenter_json["Outputs"].items() if o["Value"] == source}
    output = only(outputs)[0]
    return f"${{GetAtt:{stack_id}.Outputs.{output}}}"


NODE_ROLE_ARN = {"Fn::GetAtt": ["KarpenterNodeRole", "Arn"]}
QUEUE_NAME = {"Fn::GetAtt": ["KarpenterInterruptionQueue", "QueueName"]}


def test_node_role_is_mapped_exactly_once_as_a_node(default):
    node_role_arn = _nested_output_ref(default, NODE_ROLE_ARN)
    entries = [e for e in _map_roles(default) if e["rolearn"] == node_role_arn]
    assert entries == [
        {
            "rolearn": node_role_arn,
            "username": "system:node:{{EC2PrivateDNSName}}",
            "groups": ["system:bootstrappers", "system:nodes"],
        }
    ]


def test_cluster_admin_role_is_mapped_to_system_masters(default):
    admin = [e for e in _map_roles(default) if e["groups"] == ["system:masters"]]
    assert len(admin) == 1
    assert admin[0]["rolearn"].startswith("${GetAtt:ClusterAdminRole")


# --- IRSA --------------------------------------------------------------------------------------


def _controller_role(synth) -> dict:
    roles = {k: v for k, v in resources(synth.template, "AWS::IAM::Role").items() if k.startswith("ControllerRole")}
    return only(roles)[1]


def _trust_conditions(synth) -> dict:
    _, cfn_json = only(resources(synth.template, "Custom::AWSCDKCfnJson"))
    return render_json(cfn_json["Properties"]["Value"])


def test_controller_role_trusts_only_the_service_account_via_oidc(default):
    role = _controller_role(default)
    provider_id = only(resources(default.template, "AWS::IAM::OIDCProvider"))[0]
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Principal"] == {"Federated": {"Ref": provider_id}}
    assert list(statement["Condition"]) == ["StringEquals"]
    # the issuer is the provider ARN's part after ':oidc-provider/'
    issuer = f"${{Select:1:Split::oidc-provider/:${{Ref:{provider_id}}}}}"
    assert _trust_conditions(default) == {
        f"{issuer}:aud": "sts.amazonaws.com",
        f"{issuer}:sub": "system:serviceaccount:kube-system:karpenter",
    }


def test_controller_role_has_the_six_nested_managed_policies(default):
    arns = _controller_role(default)["Properties"]["ManagedPolicyArns"]
    assert len(arns) == 6
    sources = []
    for arn in arns:
        output = arn["Fn::GetAtt"][1].removeprefix("Outputs.")
        sources.append(default.karpenter_json["Outputs"][output]["Value"]["Ref"])
    assert sources == [
        "KarpenterControllerNodeLifecyclePolicy",
        "KarpenterControllerIAMIntegrationPolicy",
        "KarpenterControllerEKSIntegrationPolicy",
        "KarpenterControllerInterruptionPolicy",
        "KarpenterControllerZonalShiftPolicy",
        "KarpenterControllerResourceDiscoveryPolicy",
    ]


def test_irsa_subject_follows_namespace_and_service_account(alternative):
    subs = [v for k, v in _trust_conditions(alternative).items() if k.endswith(":sub")]
    assert subs == ["system:serviceaccount:karpenter:karpenter-controller"]


# --- spot service-linked role ------------------------------------------------------------------


def test_spot_service_linked_role_is_opt_in(default, alternative):
    default.template.resource_count_is("AWS::IAM::ServiceLinkedRole", 0)
    alternative.template.has_resource_properties(
        "AWS::IAM::ServiceLinkedRole", {"AWSServiceName": "spot.amazonaws.com"}
    )


# --- outputs -----------------------------------------------------------------------------------


def test_outputs(default):
    outputs = default.json["Outputs"]
    cluster_id = only(resources(default.template, "Custom::AWSCDK-EKS-Cluster"))[0]
    assert set(outputs) == {
        "ClusterName",
        "UpdateKubeconfigCommand",
        "NodeRoleArn",
        "ControllerRoleArn",
        "InterruptionQueueName",
    }
    assert outputs["ClusterName"]["Value"] == {"Ref": cluster_id}
    admin_id = next(k for k in resources(default.template, "AWS::IAM::Role") if k.startswith("ClusterAdminRole"))
    assert render(outputs["UpdateKubeconfigCommand"]["Value"]) == (
        f"aws eks update-kubeconfig --name ${{Ref:{cluster_id}}} --region ${{Ref:AWS::Region}} "
        f"--role-arn ${{GetAtt:{admin_id}.Arn}}"
    )
    assert render(outputs["NodeRoleArn"]["Value"]) == _nested_output_ref(default, NODE_ROLE_ARN)
    assert render(outputs["InterruptionQueueName"]["Value"]) == _nested_output_ref(default, QUEUE_NAME)
    controller_id = next(k for k in resources(default.template, "AWS::IAM::Role") if k.startswith("ControllerRole"))
    assert outputs["ControllerRoleArn"]["Value"] == {"Fn::GetAtt": [controller_id, "Arn"]}


def test_extended_support_warning_is_a_synth_annotation():
    from datetime import date

    from aws_cdk.assertions import Annotations

    from karpenter_stack.application import build, new_app
    from tooling.configurations import PRODUCT_CONTEXT

    app = new_app(context={**PRODUCT_CONTEXT, "kubernetesVersion": "1.35"})
    (stack,) = build(app, today=date(2027, 4, 1))
    Annotations.from_stack(stack).has_warning(
        "/eks-karpenter",
        Match.string_like_regexp("kubernetesVersion '1.35' is in EKS extended support until 2028-03-27"),
    )
