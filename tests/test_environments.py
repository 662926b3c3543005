"""Several environments in one app, and the production profile's stricter defaults."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest

from karpenter_stack.application import build, new_app
from karpenter_stack.config import ConfigError, load_config, load_environments
from tests.cfn import kubernetes_objects, only, resources
from tests.conftest import TODAY
from tooling.configurations import PRODUCT_CONTEXT


@pytest.fixture(scope="module")
def stacks(by_hand):
    """examples/pipeline.json's two environments (dev; prod with the production profile), without the
    pipeline: one synth shared with tests/test_pipeline.py."""
    return {name: (stack, cdk.assertions.Template.from_stack(stack)) for name, stack in by_hand.items()}


def test_each_environment_is_its_own_stack_and_cluster(stacks):
    assert sorted(stacks) == ["eks-karpenter-dev", "eks-karpenter-prod"]
    for name, (stack, template) in stacks.items():
        assert stack.stack_name == name
        _, cluster = only(resources(template, "Custom::AWSCDK-EKS-Cluster"))
        assert cluster["Properties"]["Config"]["name"] == name
        nested = cdk.assertions.Template.from_stack(stack.karpenter.infra).to_json()
        stack_id = stack.resolve(stack.karpenter.infra.nested_stack_resource.logical_id)
        assert template.to_json()["Resources"][stack_id]["Properties"]["Parameters"] == {"ClusterName": name}
        assert nested["Resources"]["KarpenterInterruptionQueue"]["Properties"]["QueueName"] == {"Ref": "ClusterName"}


def test_environment_account_and_region(stacks):
    prod, _ = stacks["eks-karpenter-prod"]
    dev, _ = stacks["eks-karpenter-dev"]
    assert (prod.account, prod.region) == ("123456789012", "us-east-1")
    assert (dev.account, dev.region) == ("444455556666", "eu-west-1")
    # an environment that names neither is environment-agnostic, like the default stack
    agnostic = new_app(context={**PRODUCT_CONTEXT, "environments": {"dev": {}}})
    (stack,) = build(agnostic, today=TODAY)
    assert cdk.Token.is_unresolved(stack.account) and cdk.Token.is_unresolved(stack.region)


def test_production_profile_defaults(stacks):
    _, prod = stacks["eks-karpenter-prod"]
    _, dev = stacks["eks-karpenter-dev"]
    prod_cluster = only(resources(prod, "Custom::AWSCDK-EKS-Cluster"))[1]["Properties"]["Config"]
    dev_cluster = only(resources(dev, "Custom::AWSCDK-EKS-Cluster"))[1]["Properties"]["Config"]
    assert prod_cluster["deletionProtection"] is True
    assert "deletionProtection" not in dev_cluster
    assert prod_cluster["resourcesVpcConfig"]["endpointPublicAccess"] is False
    prod.resource_count_is("AWS::EC2::NatGateway", 2)  # one per AZ
    dev.resource_count_is("AWS::EC2::NatGateway", 1)
    objects = kubernetes_objects(prod)
    system = objects["NodePool/system"]["spec"]["template"]
    assert system["spec"]["requirements"][0] == {
        "key": "karpenter.sh/capacity-type",
        "operator": "In",
        "values": ["on-demand"],
    }
    assert system["spec"]["taints"] == [{"key": "workload-class", "value": "system", "effect": "NoSchedule"}]
    assert system["metadata"]["labels"] == {"workload-class": "system"}
    assert objects["EC2NodeClass/default"]["spec"]["amiSelectorTerms"] == [{"alias": "al2023@v20260801"}]
    assert "NodePool/system" not in kubernetes_objects(dev)


def test_production_profile_refuses_unpinned_amis():
    with pytest.raises(ConfigError) as info:
        load_config({"profile": "production"}, today=TODAY)
    assert str(info.value) == (
        "nodeClasses[0].amiAlias 'al2023@latest': the production profile needs a pinned AMI (e.g. "
        "al2023@v20260801), so node images change only when this setting does (from built-in default)"
    )


def test_environment_errors_name_the_environment():
    with pytest.raises(ConfigError) as info:
        load_environments({"environments": {"prod": {"natGateway": 2}}}, today=TODAY)
    assert str(info.value) == (
        "environments.prod.natGateway: unknown setting; did you mean 'natGateways'? (from environments.prod)"
    )
    with pytest.raises(ConfigError) as info:
        load_environments({"environments": {"prod": {"kubernetesVersion": "1.30"}}}, today=TODAY)
    assert str(info.value).startswith("environments.prod.kubernetesVersion '1.30' is past the end of EKS")
    with pytest.raises(ConfigError) as info:
        load_environments({"environments": {"a": {"clusterName": "x"}, "b": {"clusterName": "x"}}}, today=TODAY)
    assert str(info.value) == "environments: cluster names must differ, got x, x"
    with pytest.raises(ConfigError) as info:
        load_environments({"environments": {"Prod": {}}}, today=TODAY)
    assert str(info.value).startswith("environments: 'Prod' is not a valid environment name")


def test_shared_settings_apply_to_every_environment_and_environments_override_them():
    configs = load_environments(
        {
            "clusterName": "shop",
            "controllerHosting": "nodegroup",
            "environments": json.dumps(
                {"dev": {}, "prod": {"controllerHosting": "fargate", "clusterName": "shop-live"}}
            ),
        },
        today=TODAY,
    )
    assert {n: (c.cluster_name, c.controller_hosting) for n, c in configs.items()} == {
        "dev": ("shop-dev", "nodegroup"),
        "prod": ("shop-live", "fargate"),
    }


def test_the_cloud_assembly_lists_one_deployable_stack_per_environment(stacks):
    """What `cdk list` prints and `cdk deploy <name>` selects: the assembly's top-level stacks (the CLI
    itself runs in tests/test_toolchain.py)."""
    (stack, _), _ = stacks.values()
    assembly = stack.node.root.synth()
    assert [s.hierarchical_id for s in assembly.stacks] == ["eks-karpenter-dev", "eks-karpenter-prod"]
    assert [s.stack_name for s in assembly.stacks] == ["eks-karpenter-dev", "eks-karpenter-prod"]


def test_a_lookup_the_cli_could_not_make_stops_the_app_in_one_line(capsys):
    """Without credentials for an environment's account, the CDK CLI runs the app a second time with the lookup's key
    set to its error: the app says what to do in one line and stops (before: the note twice, then the CLI's
    error annotation in four more lines)."""
    import app as cdk_app
    from karpenter_stack.application import new_app
    from tooling.configurations import PRODUCT_CONTEXT

    key = "availability-zones:account=999988887777:region=eu-west-1"
    failed = {"$providerError": "Need to perform AWS calls for account 999988887777", "$dontSaveContext": True}
    with pytest.raises(SystemExit) as info:
        cdk_app.main(new_app(context={**PRODUCT_CONTEXT, key: failed}))
    assert info.value.code == 1
    assert capsys.readouterr().err.splitlines() == [
        'cdk.context.json has no availability zones for account 999988887777, region eu-west-1 (key "'
        + key
        + '"): run `make synth` once with credentials for account 999988887777 (the CDK CLI caches the answer there) '
        "or add the key by hand with the zone names of `aws ec2 describe-availability-zones --region eu-west-1`, then "
        "commit cdk.context.json"
    ]
