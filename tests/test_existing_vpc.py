"""An existing VPC, looked up by id (lookup answered from context, as cdk.context.json would)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cfn import each, kubernetes_objects, resources
from tests.conftest import synth

ACCOUNT = "1" * 12  # a made-up account id
VPC_ID = "vpc-0123456789abcdef0"
LOOKUP_KEY = f"vpc-provider:account={ACCOUNT}:filter.vpc-id={VPC_ID}:region=eu-west-1:returnAsymmetricSubnets=true"
PRIVATE = ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"]


def _subnet(subnet_id: str, cidr: str, az: str) -> dict:
    return {"subnetId": subnet_id, "cidr": cidr, "availabilityZone": az, "routeTableId": f"rtb-{subnet_id[7:]}"}


LOOKUP_RESULT = {
    "vpcId": VPC_ID,
    "vpcCidrBlock": "10.1.0.0/16",
    "availabilityZones": [],
    "subnetGroups": [
        {
            "name": "Private",
            "type": "Private",
            "subnets": [
                _subnet(PRIVATE[0], "10.1.0.0/19", "eu-west-1a"),
                _subnet(PRIVATE[1], "10.1.32.0/19", "eu-west-1b"),
            ],
        },
        {
            "name": "Public",
            "type": "Public",
            "subnets": [
                _subnet("subnet-0bbbbbbbbbbbbbbb1", "10.1.128.0/24", "eu-west-1a"),
                _subnet("subnet-0bbbbbbbbbbbbbbb2", "10.1.129.0/24", "eu-west-1b"),
            ],
        },
    ],
}
ENV = {"vpcId": VPC_ID, "account": ACCOUNT, "region": "eu-west-1"}


@pytest.fixture(scope="module")
def looked_up():
    return synth(**ENV, **{LOOKUP_KEY: LOOKUP_RESULT})


def test_before_the_lookup_only_a_placeholder_is_synthesized_and_the_lookup_requested():
    s = synth(**ENV)
    assert list(s.json["Resources"]) == ["AwaitingVpcLookup"]
    manifest = json.loads((Path(s.app.outdir) / "manifest.json").read_text())
    assert [m["key"] for m in manifest["missing"]] == [LOOKUP_KEY]


def test_no_vpc_is_created_and_the_cluster_uses_the_existing_private_subnets(looked_up):
    looked_up.template.resource_count_is("AWS::EC2::VPC", 0)
    looked_up.template.resource_count_is("AWS::EC2::Subnet", 0)
    _, cluster = next(iter(resources(looked_up.template, "Custom::AWSCDK-EKS-Cluster").items()))
    assert cluster["Properties"]["Config"]["resourcesVpcConfig"]["subnetIds"] == PRIVATE


def test_node_class_selects_the_existing_subnets_by_id(looked_up):
    spec = kubernetes_objects(looked_up.template)["EC2NodeClass/default"]["spec"]
    assert spec["subnetSelectorTerms"] == [{"id": PRIVATE[0]}, {"id": PRIVATE[1]}]
    assert spec["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "eks-karpenter"}}]


def test_stack_is_bound_to_the_configured_environment(looked_up):
    assert (looked_up.stack.account, looked_up.stack.region) == (ACCOUNT, "eu-west-1")


def test_a_vpc_whose_private_subnets_share_one_zone_is_refused():
    import copy
    from datetime import date

    from karpenter_stack.application import build, new_app
    from karpenter_stack.config import ConfigError
    from tooling.configurations import PRODUCT_CONTEXT

    one_zone = copy.deepcopy(LOOKUP_RESULT)
    for subnet in each(one_zone["subnetGroups"][0]["subnets"]):
        subnet["availabilityZone"] = "eu-west-1a"
    app = new_app(context={**PRODUCT_CONTEXT, **ENV, LOOKUP_KEY: one_zone})
    with pytest.raises(ConfigError) as info:
        build(app, today=date(2026, 11, 21))
    assert str(info.value) == (
        "controllerHosting 'fargate': the private subnets span 1 availability zone(s) (eu-west-1a); the Karpenter "
        "controller's two replicas need private subnets in at least 2 zones (zone spread, DoNotSchedule)"
    )
