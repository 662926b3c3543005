"""Karpenter YAML files of your own (nodeManifests): converted into the typed specs, mixed with the typed settings,
checked by every gate the typed settings go through (the specs' validators, the construct's rules, the schemas and
CEL rules, the review), refused in one line naming the file, the object and the field; and Karpenter's own
examples/v1/ (tests/fixtures/karpenter-examples-v1.14.1/) through this path, with what differs from upstream's
objects (tooling/releases/upstream_examples.py, `python -m tooling.releases.upstream_examples`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from aws_cdk import Stack
from aws_cdk.aws_eks import CfnAccessEntry
from aws_cdk.aws_iam import CfnManagedPolicy

from constructs_lib.karpenter import Karpenter, KarpenterProps, NodeAuthorization, NodeSpecsError, yaml_load
from constructs_lib.karpenter.node_manifests import ManifestError, load_node_manifests, read_node_manifests
from constructs_lib.karpenter.specs.node_class import NodeClassSpec
from constructs_lib.karpenter.specs.node_pool import NodePoolSpec
from constructs_lib.karpenter.specs.rules import check_nodes
from karpenter_stack import versions
from karpenter_stack.application import build, new_app
from karpenter_stack.config import ConfigError, load_config
from tests.bare import CLUSTER_NAME, bare_stack, imported_cluster
from tests.conftest import ROOT, TODAY
from tooling import review as rv
from tooling.configurations import ADMINISTRATOR, PRODUCT_CONTEXT
from tooling.kubernetes_schemas import config_objects
from tooling.releases import upstream_examples
from tooling.review.model import MANIFEST

UPSTREAM = ROOT / "tests" / "fixtures" / "karpenter-examples-v1.14.1"
FIXTURES = "tests/fixtures/karpenter-examples-v1.14.1"
CLASS = """apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: "KarpenterNodeRole-${CLUSTER_NAME}"
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: "${CLUSTER_NAME}"
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: "${CLUSTER_NAME}"
"""
POOL = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


# --- Karpenter's own examples/v1 through the manifest path ----------------------------------------------------


def _refused(file: str, *lines: str) -> str:
    return "\n".join(f"{FIXTURES}/{file}: {line} (from cdk.json)" for line in lines)


STALE_PIN = (
    "EC2NodeClass/default: spec.amiSelectorTerms[0].alias 'al2023@v20240625': has no AMI for Kubernetes 1.36: "
    "EKS-optimized AMIs for 1.36 start with its EKS release (2026-04-22 at the earliest); pin al2023@v20260422 or "
    "later, or al2023@latest"
)
# upstream's file -> accepted, or the synth's message (with why upstream's example is refused in NOTES)
VERDICTS = {
    "100-cpu-limit.yaml": "accepted",
    "al2-custom-ami.yaml": _refused(
        "al2-custom-ami.yaml",
        "EC2NodeClass/al2: spec.amiSelectorTerms[0].id 'ami-123': must look like ami-0123456789abcdef0",
        "EC2NodeClass/al2: spec.amiSelectorTerms[1].id 'ami-456': must look like ami-0123456789abcdef0",
    ),
    "al2-custom-userdata.yaml": "accepted",
    "al2-kubelet-log-query.yaml": "accepted",
    "al2023-custom-userdata.yaml": "accepted",
    "bottlerocket.yaml": "accepted",
    "br-custom-userdata.yaml": "accepted",
    "custom-family-with-alias.yaml": "accepted",
    "custom-family.yaml": _refused(
        "custom-family.yaml",
        "EC2NodeClass/custom-family: spec.amiSelectorTerms[0].id 'ami-123': must look like ami-0123456789abcdef0",
        "EC2NodeClass/custom-family: spec.amiSelectorTerms[1].id 'ami-456': must look like ami-0123456789abcdef0",
    ),
    "general-purpose.yaml": "accepted",
    "instance-store-ephemeral-storage.yaml": "accepted",
    "large-instances.yaml": "accepted",
    "max-node-lifetime.yaml": "accepted",
    "min-values-family.yaml": _refused("min-values-family.yaml", STALE_PIN),
    "min-values-multiple-keys.yaml": _refused("min-values-multiple-keys.yaml", STALE_PIN),
    "multiple-arch.yaml": "accepted",
    "multiple-ebs.yaml": "accepted",
    "spot.yaml": "accepted",
    "windows-2019.yaml": "accepted",
    "windows-2022.yaml": "accepted",
    "windows-2025.yaml": "accepted",
    "windows-custom-userdata.yaml": _refused(
        "windows-custom-userdata.yaml",
        "NodePool/windows2022: spec.template.spec.nodeClassRef.group 'karpenter.k8s.aws/v1': must be "
        "karpenter.k8s.aws (an API group, without a version: the CRD's pattern ^[^/]*$ refuses a '/')",
    ),
}
ACCEPTED = [name for name, verdict in VERDICTS.items() if verdict == "accepted"]


@pytest.fixture(scope="module")
def verdicts() -> dict[str, upstream_examples.Verdict]:
    return {v.name: v for v in upstream_examples.verdicts()}


def test_each_upstream_example_is_accepted_or_refused_with_its_reason(verdicts):
    assert sorted(p.name for p in UPSTREAM.glob("*.yaml")) == sorted(VERDICTS)  # all 22
    assert upstream_examples.summary(verdicts) == VERDICTS
    assert set(upstream_examples.NOTES) - set(VERDICTS) == set()
    # every refusal is explained in the table's notes
    assert all(name in upstream_examples.NOTES for name, v in VERDICTS.items() if v != "accepted")


def test_accepted_examples_pass_the_schemas_and_cel_rules(verdicts):
    for name in ACCEPTED:
        assert verdicts[name].violations == [], name


def test_every_accepted_example_deploys_exactly_what_its_file_says(verdicts):
    """Field by field, as written (no CRD default filled in on either side): the app's objects are upstream's with
    ${CLUSTER_NAME} filled in; the node role and the discovery terms the app fills in are upstream's own here."""
    for name in ACCEPTED:
        assert verdicts[name].objects == upstream_examples.upstream_objects(UPSTREAM / name), name
        assert all(found == [] for found in verdicts[name].differences.values()), name


# What the typed settings of a file (make upstream-examples ARGS="--settings FILE") write beyond the file's objects,
# both as the API server stores them: the volumes Karpenter defaults to (written out, encrypted), the shortcuts'
# requirements first, and the pool's kubernetes.io/os where the file has none; nothing else.
KARPENTER_VOLUMES = "spec.blockDeviceMappings: added [/dev/xvda 20Gi gp3 encrypted]"
WINDOWS_VOLUMES = "spec.blockDeviceMappings: added [/dev/sda1 50Gi gp3 encrypted]"
SHORTCUTS_FIRST = "spec.template.spec.requirements: same requirements, the app's shortcuts first"
OS_ADDED = 'spec.template.spec.requirements: added {"key":"kubernetes.io/os","operator":"In","values":["linux"]}'
TYPED_DIFFERENCES = {
    "100-cpu-limit.yaml": {
        "EC2NodeClass/default": [KARPENTER_VOLUMES],
        "NodePool/limitcpu100": [SHORTCUTS_FIRST, 'spec.limits.cpu: 100 -> "100" (the same quantity)'],
    },
    "bottlerocket.yaml": {
        "EC2NodeClass/bottlerocket": [f"spec.blockDeviceMappings[{i}].ebs.encrypted: added true" for i in (0, 1)],
        "NodePool/default": [SHORTCUTS_FIRST],
    },
    "br-custom-userdata.yaml": {
        "EC2NodeClass/bottlerocket": [
            "spec.blockDeviceMappings: added [/dev/xvda 4Gi gp3 encrypted, /dev/xvdb 20Gi gp3 encrypted]"
        ],
        "NodePool/default": [SHORTCUTS_FIRST],
    },
    "large-instances.yaml": {"EC2NodeClass/default": [KARPENTER_VOLUMES], "NodePool/large-instances": [OS_ADDED]},
    "multiple-ebs.yaml": {
        "EC2NodeClass/multiple-ebs": [f"spec.blockDeviceMappings[{i}].ebs.encrypted: added true" for i in range(3)],
        "NodePool/default": [SHORTCUTS_FIRST],
    },
    "spot.yaml": {"EC2NodeClass/default": [KARPENTER_VOLUMES]},
    # the typed settings cannot say "the image's own volumes" of a Custom class: they refuse it
    "custom-family-with-alias.yaml": {
        "typed settings": [
            "nodeClasses[0]: amiFamily Custom has no default volumes: set rootVolumeDeviceName to your image's root "
            "device (e.g. /dev/xvda), so that its size, type and encryption apply (from cdk.json)"
        ]
    },
}


@pytest.mark.parametrize("name", sorted(TYPED_DIFFERENCES))
def test_what_the_typed_settings_of_a_file_write_beyond_it(name, verdicts):
    assert verdicts[name].typed_differences == TYPED_DIFFERENCES[name]


def test_the_typed_settings_of_every_accepted_example_write_only_karpenters_volumes_and_the_shortcuts_order(verdicts):
    allowed = {KARPENTER_VOLUMES, WINDOWS_VOLUMES, SHORTCUTS_FIRST}
    for name in set(ACCEPTED) - set(TYPED_DIFFERENCES):
        found = verdicts[name].typed_differences
        assert found, name  # each writes something out: at least the volumes
        assert {line for lines in found.values() for line in lines} - allowed == set(), name


def test_the_table_prints_every_file(verdicts):
    table = upstream_examples.table(list(verdicts.values()))
    assert table.count("\n| ") == 22  # a row per file
    assert table.endswith("17 of 22 files accepted, 5 refused.\n")
    assert "| windows-custom-userdata.yaml | refused: windows-custom-userdata.yaml: NodePool/windows2022: " in table


def test_upstreams_refused_examples_convert_once_their_mistake_is_fixed(tmp_path: Path):
    fixed = {
        "al2-custom-ami.yaml": ("ami-123", "ami-0123456789abcdef0"),
        "windows-custom-userdata.yaml": ("group: karpenter.k8s.aws/v1", "group: karpenter.k8s.aws"),
    }
    for name, (wrong, right) in fixed.items():
        (tmp_path / name).write_text(
            (UPSTREAM / name).read_text().replace(wrong, right).replace("ami-456", "ami-0123456789abcdef1")
        )
        files = load_node_manifests([name], cluster_name="c", kubernetes_version="1.32", root=tmp_path)
        assert [(o.kind, o.name) for o in files.objects] == [("NodePool", o.name) for o in files.objects[:1]] + [
            ("EC2NodeClass", o.name) for o in files.objects[1:]
        ]
    al2 = load_node_manifests(["al2-custom-ami.yaml"], cluster_name="c", root=tmp_path).settings()["nodeClasses"][0]
    assert al2["amiFamily"] == "AL2"
    assert al2["amiSelectorTerms"] == [{"id": "ami-0123456789abcdef0"}, {"id": "ami-0123456789abcdef1"}]


# --- converting: what the app fills in, how requirements map, mixed with typed settings --------------------------


def test_the_app_fills_in_the_node_role_discovery_and_cluster_name_and_keeps_other_terms(tmp_path: Path):
    text = CLASS.replace(
        "  securityGroupSelectorTerms:",
        "    - id: subnet-0123456789abcdef0\n  securityGroupSelectorTerms:\n    - name: ${CLUSTER_NAME}-nodes",
    )
    text += "  tags:\n    cluster: ${CLUSTER_NAME}\n  userData: |\n    echo ${CLUSTER_NAME} ${HOME}\n"
    _write(tmp_path, {"class.yaml": text})
    files = read_node_manifests(["class.yaml"], cluster_name="prod", root=tmp_path)
    assert files.settings() == {
        "nodeClasses": [
            {
                "name": "default",
                "amiAlias": "al2023@latest",
                "userData": "echo prod ${HOME}\n",
                "tags": {"cluster": "prod"},
                "extraSubnetSelectorTerms": [{"id": "subnet-0123456789abcdef0"}],
                "extraSecurityGroupSelectorTerms": [{"name": "prod-nodes"}],
                # what the class runs with (Karpenter's AL2023 volume), not written into it
                "rootVolumeSizeGib": 20,
                "rootVolumeType": "gp3",
            }
        ]
    }
    node_class = files.node_classes[0]
    written = yaml_load.safe_load(text.replace("${CLUSTER_NAME}", "prod"))
    # as written, with the cluster's fill-ins: the app's role (whatever its name), its discovery terms in their place
    assert node_class.manifest(cluster_name="prod", node_role_name="app-node-role") == {
        **written,
        "spec": {**written["spec"], "role": "app-node-role"},
    }
    by_id = node_class.manifest(
        cluster_name="prod", node_role_name="r", subnet_ids=["subnet-a", "subnet-b"], security_group_ids=["sg-a"]
    )["spec"]
    assert by_id["subnetSelectorTerms"] == [{"id": "subnet-a"}, {"id": "subnet-b"}, {"id": "subnet-0123456789abcdef0"}]
    assert by_id["securityGroupSelectorTerms"] == [{"name": "prod-nodes"}, {"id": "sg-a"}]  # the file's order
    # a list without the cluster's term gets the app's selection first; a class without the list gets it alone
    head = CLASS[: CLASS.index("  subnetSelectorTerms:")]
    _write(tmp_path, {"class.yaml": head + "  subnetSelectorTerms:\n    - id: subnet-0123456789abcdef0\n"})
    spec = read_node_manifests(["class.yaml"], cluster_name="prod", root=tmp_path).node_classes[0]
    terms = spec.manifest(cluster_name="prod", node_role_name="r")["spec"]
    assert terms["subnetSelectorTerms"] == [
        {"tags": {"karpenter.sh/discovery": "prod"}},
        {"id": "subnet-0123456789abcdef0"},
    ]
    assert terms["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "prod"}}]


def test_requirements_become_shortcuts_only_where_a_shortcut_writes_them_exactly(tmp_path: Path):
    requirements = [
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"], "minValues": 2},
        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gte", "values": ["5"]},
        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["65"]},
    ]
    text = POOL.replace(
        '      requirements:\n        - key: karpenter.sh/capacity-type\n          operator: In\n          values: ["on-demand"]\n',
        f"      requirements: {json.dumps(requirements)}\n",
    )
    _write(tmp_path, {"class.yaml": CLASS, "pool.yaml": text})
    files = load_node_manifests(["*.yaml"], cluster_name="c", root=tmp_path)
    assert files.settings()["nodePools"] == [
        {
            "name": "gpu",
            "nodeClass": "default",
            "capacityTypes": ["spot"],
            "architectures": None,
            "instanceCategories": None,
            "minInstanceGeneration": None,
            "requirements": requirements[2:],
            # what the pool runs with where the file is silent: the CRD's defaults, not the app's
            "consolidateAfter": "0s",
            "limits": {},
            "terminationGracePeriod": None,
        }
    ]
    pool = files.node_pools[0].manifest()
    assert pool["spec"]["template"]["spec"]["requirements"] == requirements  # as written, in its order
    assert "disruption" not in pool["spec"] and "limits" not in pool["spec"]


def test_files_mix_with_typed_settings_and_replace_only_the_defaults_of_what_they_define():
    own = json.loads((ROOT / "examples" / "own-manifests.json").read_text())
    config = load_config({**PRODUCT_CONTEXT, **own}, today=TODAY)
    assert [c.name for c in config.node_classes] == ["gpu", "default"]  # typed first, then the files'
    # no built-in default pool; the files in the glob's (sorted) order: gpu-pool.yaml, node-classes.yaml, node-pools.yaml
    assert [p.name for p in config.node_pools] == ["gpu", "default", "batch"]
    # a kind the files do not define keeps its default; typed pools set beside the files are kept
    only_classes = {**PRODUCT_CONTEXT, "nodeManifests": ["examples/manifests/node-classes.yaml"]}
    assert [p.name for p in load_config(only_classes, today=TODAY).node_pools] == ["default"]
    typed_pool = {
        **only_classes,
        "nodeClasses": [{"name": "extra"}],
        "nodePools": [{"name": "x", "nodeClass": "extra"}],
    }
    assert [p.node_class for p in load_config(typed_pool, today=TODAY).node_pools] == ["extra"]
    # the production profile adds no pools to files' (they would collide by name): it warns instead; and its pinned
    # images rule names a file's class in its file
    pinned = {"name": "gpu", "amiAlias": "bottlerocket@v1.50.0"}
    with pytest.raises(ConfigError) as info:
        load_config({**PRODUCT_CONTEXT, **own, "profile": "production", "nodeClasses": [pinned]}, today=TODAY)
    assert str(info.value) == (
        "examples/manifests/node-classes.yaml: EC2NodeClass/default: spec.amiSelectorTerms[0].alias 'al2023@latest': "
        "the production profile needs a pinned AMI (e.g. al2023@v20260801), so node images change only when this "
        "setting does (from cdk.json)"
    )
    pools_only = ["examples/manifests/node-pools.yaml", "examples/manifests/gpu-pool.yaml"]
    classes = [pinned, {"name": "default", "amiAlias": "al2023@v20260801"}]
    production = load_config(
        {
            **PRODUCT_CONTEXT,
            "profile": "production",
            "nodeClasses": classes,
            "nodeManifests": pools_only,
            "administrators": [ADMINISTRATOR],
        },
        today=TODAY,
    )
    assert [p.name for p in production.node_pools] == ["default", "batch", "gpu"]
    assert any(w.startswith("nodePools: your list replaces the production profile's") for w in production.warnings)


def test_the_example_files_deploy_as_written_and_their_typed_settings_store_the_same_objects():
    own = json.loads((ROOT / "examples" / "own-manifests.json").read_text())
    config = load_config({**PRODUCT_CONTEXT, **own}, today=TODAY)
    files = read_node_manifests(own["nodeManifests"], cluster_name=config.cluster_name)
    objects = {f"{o['kind']}/{o['metadata']['name']}": o for o in config_objects(config)}
    for obj in files.objects:  # each as its file writes it, the cluster's fill-ins aside (the role is the app's)
        written = {**obj.spec.written}
        if obj.kind == "EC2NodeClass":
            written["spec"] = {"role": f"KarpenterNodeRole-{config.cluster_name}", **written["spec"]}
        assert objects[f"{obj.kind}/{obj.name}"] == written
    typed = load_config(
        {
            **PRODUCT_CONTEXT,
            "nodeClasses": [*own["nodeClasses"], *files.settings()["nodeClasses"]],
            "nodePools": files.settings()["nodePools"],
        },
        today=TODAY,
    )
    # the typed settings give the objects the API server then stores (the CRDs' defaults filled in on both sides);
    # they write the pools' requirements in their own order, kubernetes.io/os where a file has none, and a quantity
    # as a string
    typed_objects = {f"{o['kind']}/{o['metadata']['name']}": o for o in config_objects(typed)}
    assert set(typed_objects) == set(objects)
    found = {key: upstream_examples.differences(objects[key], obj) for key, obj in typed_objects.items()}
    assert {key: lines for key, lines in found.items() if lines} == {
        "NodePool/default": [SHORTCUTS_FIRST, 'spec.limits.cpu: 200 -> "200" (the same quantity)'],
        "NodePool/batch": [OS_ADDED, 'spec.limits.cpu: 100 -> "100" (the same quantity)'],
        "NodePool/gpu": [OS_ADDED, 'spec.limits.nvidia.com/gpu: 16 -> "16" (the same quantity)'],
    }
    batch = next(p for p in files.settings()["nodePools"] if p["name"] == "batch")
    assert batch == {
        "name": "batch",
        "nodeClass": "default",
        "capacityTypes": ["spot"],
        "architectures": None,
        "instanceCategories": None,
        "minInstanceGeneration": None,
        "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "Exists", "minValues": 5}],
        "labels": {"workload": "batch"},
        "taints": [{"key": "workload", "value": "batch", "effect": "NoSchedule"}],
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "1m",
        "budgets": [{"nodes": "20%"}],
        "limits": {"cpu": 100},
        "weight": 10,
        "terminationGracePeriod": "24h",
    }


# --- refused, one line naming the file, the object and the field ----------------------------------------------

K = "karpenter/"
CASES: dict[str, tuple[dict[str, str], dict, str]] = {
    "yaml error with its line": (
        {K + "a.yaml": CLASS.replace("  name: default", "  name: default\n   labels: x: y")},
        {},
        "karpenter/a.yaml: line 5, column 10: not valid YAML (mapping values are not allowed here) (from -c)",
    ),
    "an unclosed flow sequence names the line it opened on": (
        {K + "a.yaml": CLASS + "  tags:\n    team: [a, b\n    owner: platform\n"},
        {},
        "karpenter/a.yaml: line 17, column 10: not valid YAML (expected ',' or ']', but got ':', while parsing a flow "
        "sequence from line 16) (from -c)",
    ),
    "a key twice": (
        {K + "a.yaml": CLASS.replace("spec:\n", "spec:\n  amiFamily: AL2023\n  amiFamily: AL2\n")},
        {},
        "karpenter/a.yaml: line 7, column 3: not valid YAML (key 'amiFamily' is given twice in one mapping) (from -c)",
    ),
    "unknown kind": (
        {K + "a.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec: {}\n"},
        {},
        "karpenter/a.yaml: Deployment/web: apiVersion 'apps/v1': not a node object the app applies: karpenter.k8s.aws/v1 EC2NodeClass, karpenter.sh/v1 NodePool, karpenter.sh/v1alpha1 NodeOverlay (from -c)",
    ),
    "v1beta1": (
        {K + "a.yaml": POOL.replace("karpenter.sh/v1", "karpenter.sh/v1beta1", 1)},
        {},
        "karpenter/a.yaml: NodePool/gpu: apiVersion 'karpenter.sh/v1beta1': v1beta1 is no longer served by Karpenter 1.14 (v1 since Karpenter 1.0); node objects are karpenter.k8s.aws/v1 EC2NodeClass, karpenter.sh/v1 NodePool, karpenter.sh/v1alpha1 NodeOverlay (from -c)",
    ),
    "not a mapping": (
        {K + "a.yaml": CLASS + "---\n- a\n- b\n"},
        {},
        'karpenter/a.yaml: document 2: ["a", "b"]: a Kubernetes object is a mapping (apiVersion, kind, metadata, spec) (from -c)',
    ),
    "name twice across files": (
        {K + "a.yaml": CLASS, K + "b.yaml": CLASS + "---\n" + POOL},
        {},
        "karpenter/b.yaml: EC2NodeClass/default: metadata.name 'default': an EC2NodeClass of that name is also in karpenter/a.yaml; each object is applied once, by its name (from -c)",
    ),
    "name twice with typed settings": (
        {K + "a.yaml": CLASS + "---\n" + POOL},
        {"nodePools": [{"name": "gpu"}]},
        "karpenter/a.yaml: NodePool/gpu: metadata.name 'gpu': a NodePool of that name is also in nodePools; each object is applied once, by its name (from -c)",
    ),
    "pool of an unknown class": (
        {K + "a.yaml": POOL},
        {"nodeClasses": [{"name": "general"}]},
        "karpenter/a.yaml: NodePool/gpu: spec.template.spec.nodeClassRef.name 'default': no EC2NodeClass of that name in nodeManifests or nodeClasses (there: general) (from -c)",
    ),
    "group with a version": (
        {K + "a.yaml": CLASS + "---\n" + POOL.replace("group: karpenter.k8s.aws", "group: karpenter.k8s.aws/v1")},
        {},
        "karpenter/a.yaml: NodePool/gpu: spec.template.spec.nodeClassRef.group 'karpenter.k8s.aws/v1': must be karpenter.k8s.aws (an API group, without a version: the CRD's pattern ^[^/]*$ refuses a '/') (from -c)",
    ),
    "another role": (
        {K + "a.yaml": CLASS.replace('"KarpenterNodeRole-${CLUSTER_NAME}"', "MyNodeRole")},
        {},
        "karpenter/a.yaml: EC2NodeClass/default: spec.role 'MyNodeRole': not the app's node role (KarpenterNodeRole-eks-karpenter, Karpenter's name for it; Windows classes get a Windows node role of their own): list the name your files give it in nodeManifestRoles, give a placeholder's value in nodeManifestVariables, on an existing cluster list your own role's ARN in existingNodeRoles, or leave role out (from -c)",
    ),
    "a role placeholder without a value": (
        {K + "a.yaml": CLASS.replace('"KarpenterNodeRole-${CLUSTER_NAME}"', "<<KARPENTER_NODE_IAM_ROLE_NAME>>")},
        {"nodeManifestVariables": {"TEAM": "payments"}},
        'karpenter/a.yaml: EC2NodeClass/default: spec.role \'<<KARPENTER_NODE_IAM_ROLE_NAME>>\': <<KARPENTER_NODE_IAM_ROLE_NAME>> has no value: give it in nodeManifestVariables (e.g. {"KARPENTER_NODE_IAM_ROLE_NAME": "..."}) or write the value; the app fills in ${CLUSTER_NAME} itself (from -c)',
    ),
    "disruption without consolidateAfter": (
        {K + "a.yaml": CLASS + "---\n" + POOL + "  disruption:\n    consolidationPolicy: WhenEmpty\n"},
        {},
        "karpenter/a.yaml: NodePool/gpu: spec.disruption.consolidateAfter: required (the CRD's, once spec.disruption is given; its default 0s applies only without disruption): e.g. 1m, 0s or Never (from -c)",
    ),
    "instance profile": (
        {K + "a.yaml": CLASS.replace('  role: "KarpenterNodeRole-${CLUSTER_NAME}"', "  instanceProfile: my-profile")},
        {},
        "karpenter/a.yaml: EC2NodeClass/default: spec.instanceProfile 'my-profile': not exposed by the app: Karpenter manages the instance profile from the node role (spec.role; the CRD takes one of the two), which the teardown safety net and the node authorizations are built around (from -c)",
    ),
    "imdsv1": (
        {K + "a.yaml": CLASS + "  metadataOptions:\n    httpTokens: optional\n"},
        {},
        "karpenter/a.yaml: EC2NodeClass/default: spec.metadataOptions.httpTokens 'optional': must be required: the app requires IMDSv2 with the endpoint on and IPv6 IMDS off; only httpPutResponseHopLimit is yours (from -c)",
    ),
    "unknown field": (
        {K + "a.yaml": CLASS + "  amiSelector: x\n"},
        {},
        "karpenter/a.yaml: EC2NodeClass/default: spec.amiSelector: Karpenter 1.14.1's EC2NodeClass has no such field (known: role, instanceProfile, amiSelectorTerms, amiFamily, userData, subnetSelectorTerms, securityGroupSelectorTerms, capacityReservationSelectorTerms, blockDeviceMappings, metadataOptions, kubelet, tags, detailedMonitoring, associatePublicIPAddress, instanceStorePolicy, networkInterfaces, ipPrefixCount, connectionTracking, cpuOptions, placementGroupSelector, context) (from -c)",
    ),
    "status": (
        {K + "a.yaml": CLASS + "status:\n  conditions: []\n"},
        {},
        "karpenter/a.yaml: EC2NodeClass/default: status: written by Karpenter, not applied; leave it out (from -c)",
    ),
    "metadata written by the API server": (
        {K + "a.yaml": CLASS.replace("  name: default\n", "  name: default\n  uid: 123\n")},
        {},
        "karpenter/a.yaml: EC2NodeClass/default: metadata.uid 123: the app applies metadata.name, labels and annotations only (the objects are cluster-scoped; the API server writes the rest) (from -c)",
    ),
    "unknown placeholder": (
        {K + "a.yaml": CLASS.replace("al2023@latest", "al2023@${ALIAS_VERSION}")},
        {},
        'karpenter/a.yaml: EC2NodeClass/default: spec.amiSelectorTerms[0].alias \'al2023@${ALIAS_VERSION}\': ${ALIAS_VERSION} has no value: give it in nodeManifestVariables (e.g. {"ALIAS_VERSION": "..."}) or write the value; the app fills in ${CLUSTER_NAME} itself (pin the alias, e.g. al2023@v20260801, or write @latest) (from -c)',
    ),
    "volume size not in GiB": (
        {
            K + "a.yaml": CLASS
            + "  blockDeviceMappings:\n    - deviceName: /dev/xvda\n      ebs:\n        volumeSize: 100G\n"
        },
        {},
        "karpenter/a.yaml: EC2NodeClass/default: spec.blockDeviceMappings[0].ebs.volumeSize '100G': write whole GiB, like 100Gi (from -c)",
    ),
    "customer-managed key by alias": (
        {
            K + "a.yaml": CLASS
            + "  blockDeviceMappings:\n    - deviceName: /dev/xvda\n      ebs:\n        volumeSize: 100Gi\n        encrypted: true\n        kmsKeyID: alias/nodes\n"
        },
        {},
        "karpenter/a.yaml: EC2NodeClass/default: spec.blockDeviceMappings[0].ebs.kmsKeyID 'alias/nodes': an alias: write the key's ARN, arn:<partition>:kms:<region>:<account>:key/<key id>: a grant names a key by its key ARN, and a policy naming an alias applies to the alias, not its key (aws kms describe-key --key-id alias/nodes --query KeyMetadata.Arn prints the ARN) (from -c)",
    ),
    "customer-managed key on a volume not said encrypted": (
        {
            K + "a.yaml": CLASS
            + "  blockDeviceMappings:\n    - deviceName: /dev/xvda\n      ebs:\n        volumeSize: 100Gi\n        kmsKeyID: arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab\n"
        },
        {},
        "karpenter/a.yaml: EC2NodeClass/default: spec.blockDeviceMappings[0].ebs.kmsKeyID 'arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab': needs encrypted: true beside it: EC2 encrypts a volume with a KMS key only when the volume is encrypted (EC2 API Reference, EbsBlockDevice KmsKeyId) (from -c)",
    ),
    "data volume too small for its type": (
        {
            K + "a.yaml": CLASS
            + "  blockDeviceMappings:\n    - deviceName: /dev/xvdb\n      ebs:\n        volumeSize: 10Gi\n        volumeType: st1\n"
        },
        {},
        "karpenter/a.yaml: EC2NodeClass/default: spec.blockDeviceMappings[0]: sizeGib 10 is below the 125 GiB EC2 needs for st1 (from -c)",
    ),
    "os of another class": (
        {
            K + "a.yaml": CLASS
            + "---\n"
            + POOL
            + "        - key: kubernetes.io/os\n          operator: In\n          values: [windows]\n"
        },
        {},
        'karpenter/a.yaml: NodePool/gpu: spec.template.spec.requirements[1] {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}: the app writes kubernetes.io/os In [linux] from the node class \'default\' (its AMI family), so that the pool\'s nodes run their image\'s OS; write that or leave the requirement out (from -c)',
    ),
    "taint effect": (
        {K + "a.yaml": CLASS + "---\n" + POOL + "      taints:\n        - key: a\n          effect: NoRun\n"},
        {},
        "karpenter/a.yaml: NodePool/gpu: spec.template.spec.taints[0].effect 'NoRun': Input should be 'NoSchedule', 'PreferNoSchedule' or 'NoExecute' (from -c)",
    ),
    "minValues above the values": (
        {
            K + "a.yaml": CLASS
            + "---\n"
            + POOL.replace('values: ["on-demand"]', 'values: ["on-demand"]\n          minValues: 2')
        },
        {},
        "karpenter/a.yaml: NodePool/gpu: spec.template.spec.requirements[0]: requirement 'karpenter.sh/capacity-type' has minValues 2 but only 1 value(s); Karpenter needs at least as many values as minValues (from -c)",
    ),
    "user data karpenter overrides": (
        {
            K + "a.yaml": CLASS
            + "  userData: |\n    apiVersion: node.eks.aws/v1alpha1\n    kind: NodeConfig\n    spec:\n      cluster:\n        name: other\n"
        },
        {},
        "karpenter/a.yaml: EC2NodeClass/default: spec.userData: user data part 1: NodeConfig spec.cluster.name is written by Karpenter from the cluster, and Karpenter's value wins; leave it out (from -c)",
    ),
    "a glob that matches nothing": (
        {},
        {},
        "nodeManifests: 'karpenter/*.yaml' matches no file (paths are relative to the project folder) (from -c)",
    ),
    "a missing file": (
        {},
        {"nodeManifests": ["karpenter/pools.yaml"]},
        "nodeManifests: 'karpenter/pools.yaml': no such file (paths are relative to the project folder) (from -c)",
    ),
    "a path outside the project": (
        {},
        {"nodeManifests": ["../karpenter/pools.yaml"]},
        "nodeManifests = [\"../karpenter/pools.yaml\"]: '../karpenter/pools.yaml' must be a path inside the project folder, relative to it (where cdk.json is) (from -c)",
    ),
    "kubelet field": (
        {K + "a.yaml": CLASS + "  kubelet:\n    maxPod: 10\n"},
        {},
        "karpenter/a.yaml: EC2NodeClass/default: spec.kubelet.maxPod: Karpenter 1.14.1 has no such field here (from -c)",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_file_the_app_cannot_apply_stops_the_synth_with_one_line_and_builds_nothing(
    case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    files, overrides, message = CASES[case]
    project = tmp_path / "project"
    project.mkdir()
    _write(project, files)
    monkeypatch.chdir(project)
    out = tmp_path / "cdk.out"
    app = new_app(context={**PRODUCT_CONTEXT, "nodeManifests": ["karpenter/*.yaml"], **overrides}, outdir=str(out))
    with pytest.raises(ConfigError) as info:
        build(app, today=TODAY)
    assert str(info.value) == message
    assert app.node.children == []
    assert not out.exists() or list(out.iterdir()) == []


# --- the construct: a CDK app of your own gets the same refusals ------------------------------------------------


def test_a_cdk_app_of_your_own_loads_the_files_and_the_construct_refuses_what_does_not_fit(tmp_path: Path):
    reserved = POOL.replace('values: ["on-demand"]', 'values: ["reserved"]')
    _write(tmp_path, {"class.yaml": CLASS, "pool.yaml": reserved})
    files = load_node_manifests(["*.yaml"], cluster_name=CLUSTER_NAME, kubernetes_version="1.36", root=tmp_path)
    stack = bare_stack()
    props = KarpenterProps(
        cluster=imported_cluster(stack),
        cluster_name=CLUSTER_NAME,
        version="1.14.1",
        template_file=versions.karpenter_template("1.14.1"),
        node_classes=files.node_classes,
        node_pools=files.node_pools,
        node_authorization=NodeAuthorization.ACCESS_ENTRY,
    )
    with pytest.raises(NodeSpecsError) as info:
        Karpenter(stack, "Karpenter", props)
    assert str(info.value).endswith(
        "nodePools 'gpu' allows the reserved capacity type, but its nodeClass 'default' has no "
        "capacityReservationSelectorTerms: it would launch nothing reserved"
    )
    # with its class typed instead, a file's pool is checked against it, and a name twice is refused
    with pytest.raises(ManifestError) as twice:
        load_node_manifests(["class.yaml"], cluster_name="c", root=tmp_path, node_classes=[NodeClassSpec()])
    assert str(twice.value) == (
        "class.yaml: EC2NodeClass/default: metadata.name 'default': an EC2NodeClass of that name is also in "
        "nodeClasses; each object is applied once, by its name"
    )
    _write(tmp_path, {"pool.yaml": POOL})
    pool_only = load_node_manifests(["pool.yaml"], cluster_name="c", root=tmp_path, node_classes=[NodeClassSpec()])
    check_nodes("Karpenter", node_classes=[NodeClassSpec()], node_pools=pool_only.node_pools, feature_gates={})
    built = Karpenter(bare_stack(), "Karpenter", _props(files.node_classes, pool_only.node_pools))
    assert sorted(built.node_classes) == ["default"] and sorted(built.node_pools) == ["gpu"]


def _props(classes: list[NodeClassSpec], pools: list[NodePoolSpec]) -> KarpenterProps:
    stack = bare_stack()
    return KarpenterProps(
        cluster=imported_cluster(stack),
        cluster_name=CLUSTER_NAME,
        version="1.14.1",
        template_file=versions.karpenter_template("1.14.1"),
        node_classes=classes,
        node_pools=pools,
        node_authorization=NodeAuthorization.ACCESS_ENTRY,
    )


# --- the review: a change of a file is the change of its objects -----------------------------------------------


def _manifest_template(files: list[dict]) -> dict:
    return {
        "Resources": {
            f"R{i}": {"Type": MANIFEST, "Properties": {"Manifest": json.dumps([obj])}} for i, obj in enumerate(files)
        }
    }


def _objects_of(root: Path) -> dict[str, dict]:
    config = load_node_manifests(["*.yaml"], cluster_name="c", root=root)
    classes = {c.name: c.manifest(cluster_name="c", node_role_name="r") for c in config.node_classes}
    pools = {p.name: p.manifest() for p in config.node_pools}
    return {**{f"EC2NodeClass/{k}": v for k, v in classes.items()}, **{f"NodePool/{k}": v for k, v in pools.items()}}


def test_the_review_reads_a_changed_file_as_its_objects_changes(tmp_path: Path):
    _write(tmp_path, {"class.yaml": CLASS, "pool.yaml": POOL})
    before = _objects_of(tmp_path)
    _write(tmp_path, {"class.yaml": CLASS + "  userData: |\n    #!/bin/bash\n    echo hi\n"})
    after = _objects_of(tmp_path)
    template = _manifest_template(list(after.values()))
    assert rv.kubernetes_effects(
        json.dumps([before["EC2NodeClass/default"]]), json.dumps([after["EC2NodeClass/default"]]), template
    ) == [
        "EC2NodeClass `default` (userData): all nodes of pool `gpu` will be replaced by drift, "
        "starting right after the deploy, at most 10% of its nodes (rounded up) at a time (its disruption budgets for Drifted)"
    ]
    tainted = POOL + "      taints:\n        - key: nvidia.com/gpu\n          effect: NoSchedule\n"
    _write(tmp_path, {"pool.yaml": tainted})
    retainted = _objects_of(tmp_path)
    effects = rv.kubernetes_effects(
        json.dumps([after["NodePool/gpu"]]), json.dumps([retainted["NodePool/gpu"]]), template
    )
    assert effects == [
        "NodePool `gpu` (template.spec.taints): all nodes of pool `gpu` will be replaced by drift, "
        "starting right after the deploy, at most 10% of its nodes (rounded up) at a time (its disruption budgets for Drifted)"
    ]


def test_overlays_kubelet_and_data_volumes_keep_upstreams_names_and_are_checked_in_its_terms(tmp_path: Path):
    overlay = """apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata:
  name: prefer-graviton
spec:
  requirements:
    - key: kubernetes.io/arch
      operator: In
      values: ["arm64"]
  priceAdjustment: "-10%"
  weight: 10
"""
    volumes = "  kubelet:\n    maxPods: 50\n  blockDeviceMappings:\n    - deviceName: /dev/xvdb\n      ebs:\n"
    _write(tmp_path, {"overlay.yaml": overlay, "class.yaml": CLASS + volumes + "        volumeSize: 100Gi\n"})
    files = read_node_manifests(["overlay.yaml", "class.yaml"], cluster_name="c", root=tmp_path)
    assert files.settings() == {
        "nodeOverlays": [
            {
                "name": "prefer-graviton",
                "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}],
                "priceAdjustment": "-10%",
                "weight": 10,
            }
        ],
        "nodeClasses": [
            {
                "name": "default",
                "amiAlias": "al2023@latest",
                "kubelet": {"maxPods": 50},
                "dataVolumes": [{"deviceName": "/dev/xvdb", "sizeGib": 100}],
            }
        ],
    }
    assert files.node_overlays[0].manifest()["spec"]["priceAdjustment"] == "-10%"
    _write(tmp_path, {"class.yaml": CLASS + volumes + "        volumeSize: 100Gi\n        iops: 100\n"})
    with pytest.raises(ManifestError) as info:
        read_node_manifests(["class.yaml"], cluster_name="c", root=tmp_path)
    assert str(info.value).startswith("class.yaml: EC2NodeClass/default: spec.blockDeviceMappings[0]")
    _write(tmp_path, {"class.yaml": CLASS + "  kubelet:\n    maxPods: 0\n"})
    with pytest.raises(ManifestError) as info:
        read_node_manifests(["class.yaml"], cluster_name="c", root=tmp_path)
    assert str(info.value) == (
        "class.yaml: EC2NodeClass/default: spec.kubelet.maxPods 0: Input should be greater than or equal to 1"
    )


# --- what teams write: their own placeholders and role names, a namespace, a class in a later file -------------

TEAM_CLASS = """apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: <<CLASS>>
  namespace: karpenter
spec:
  role: ${KARPENTER_NODE_IAM_ROLE_NAME}
  amiSelectorTerms:
    - alias: al2023@${AMI_VERSION}
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: <<CLUSTER_NAME>>
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: "${CLUSTER_NAME}"
  tags:
    team: <<TEAM>>
  userData: |
    #!/bin/bash
    echo "${HOME} <<TEAM>>"
"""


def _load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], **settings):
    _write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    return load_config({**PRODUCT_CONTEXT, "nodeManifests": sorted(files), **settings}, today=TODAY)


def test_a_teams_placeholders_role_name_and_namespace_deploy_as_the_file_means_them(tmp_path, monkeypatch):
    variables = {
        "CLASS": "general",
        "AMI_VERSION": "v20260801",
        "TEAM": "payments",
        "KARPENTER_NODE_IAM_ROLE_NAME": "KarpenterNodeRole-${CLUSTER_NAME}",
    }
    # the pool (first file) refers to the class of a later file
    files = {"a-pool.yaml": POOL.replace("name: default", "name: general"), "b-class.yaml": TEAM_CLASS}
    config = _load(tmp_path, monkeypatch, files, nodeManifestVariables=variables)
    cluster = config.cluster_name
    objects = {f"{o['kind']}/{o['metadata']['name']}": o for o in config_objects(config)}
    assert objects["EC2NodeClass/general"] == {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "general"},  # the namespace left out
        "spec": {
            "role": f"KarpenterNodeRole-{cluster}",
            "amiSelectorTerms": [{"alias": "al2023@v20260801"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": cluster}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": cluster}}],
            "tags": {"team": "payments"},
            "userData": '#!/bin/bash\necho "${HOME} payments"\n',  # the script's own ${HOME} stays
        },
    }
    assert objects["NodePool/gpu"]["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "general"
    assert (
        "b-class.yaml: EC2NodeClass/general: metadata.namespace 'karpenter': left out: an EC2NodeClass is "
        "cluster-scoped, and the API server ignores a namespace on it (from cdk.json)"
    ) in config.notes  # information, not a warning: nothing the file meant is lost
    # a literal name the team gives its node role, listed in nodeManifestRoles, is the app's node role
    literal = TEAM_CLASS.replace("${KARPENTER_NODE_IAM_ROLE_NAME}", "eks-node-role")
    config = _load(
        tmp_path,
        monkeypatch,
        {**files, "b-class.yaml": literal},
        nodeManifestVariables={k: v for k, v in variables.items() if k != "KARPENTER_NODE_IAM_ROLE_NAME"},
        nodeManifestRoles=["eks-node-role"],
    )
    assert config.node_classes[-1].manifest(cluster_name=cluster, node_role_name="app-role")["spec"]["role"] == (
        "app-role"
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"nodeManifestVariables": {"my-var": "x"}},
            "nodeManifestVariables: 'my-var' is not a placeholder name: letters, digits and '_', "
            "not starting with a digit (the NAME of ${NAME} or <<NAME>>) (from cdk.json)",
        ),
        (
            {"nodeManifestVariables": {"CLUSTER_NAME": "x"}},
            "nodeManifestVariables: CLUSTER_NAME is the cluster's name (clusterName), which "
            "the app fills in itself (from cdk.json)",
        ),
        (
            {"nodeManifestRoles": ["arn:aws:iam::123456789012:role/x"]},
            "nodeManifestRoles = [\"arn:aws:iam::123456789012:role/x\"]: 'arn:aws:iam::123456789012:role/x' is not an "
            "IAM role name (1-64 of letters, digits and +=,.@_-) (from cdk.json)",
        ),
    ],
)
def test_bad_variables_and_role_names_are_one_line(settings, message):
    with pytest.raises(ConfigError) as info:
        load_config({**PRODUCT_CONTEXT, **settings}, today=TODAY)
    assert str(info.value) == message


# --- the app's opinions: warnings where a file is silent or weaker, refusals where production promises ------------


def test_where_a_file_leaves_a_field_to_karpenter_the_app_warns_with_what_it_recommends(tmp_path, monkeypatch):
    config = _load(tmp_path, monkeypatch, {"class.yaml": CLASS, "pool.yaml": POOL})
    where = {"EC2NodeClass": "class.yaml: EC2NodeClass/default", "NodePool": "pool.yaml: NodePool/gpu"}
    assert [w for w in config.warnings if w.startswith(tuple(where.values()))] == [
        f"{where['EC2NodeClass']}: spec.blockDeviceMappings: not given: Karpenter's al2023 default, /dev/xvda 20Gi gp3 "
        "encrypted, for images, logs and pods; the app recommends nodeClasses' default 50Gi (from cdk.json)",
        f"{where['NodePool']}: spec.limits: not given: the pool's nodes have no upper bound (Karpenter's default), so a "
        "runaway Deployment grows the bill without end; the app recommends a bound, like nodePools' default "
        "{cpu: '1000', memory: '1000Gi'} (from cdk.json)",
        f"{where['NodePool']}: spec.template.spec.terminationGracePeriod: not given: a drain then waits for every "
        "PodDisruptionBudget and do-not-disrupt pod without end (Karpenter's default); the app recommends a bound, "
        "like nodePools' default 24h (from cdk.json)",
        f"{where['NodePool']}: spec.disruption.consolidateAfter: not given: 0s (the CRD's default), so a node may be "
        "consolidated as soon as its pods change, in the middle of a rollout; the app recommends nodePools' default "
        "1m (from cdk.json)",
    ]
    # the spec holds what the cluster runs: the CRD's and Karpenter's defaults, not the app's
    pool, node_class = config.node_pools[-1], config.node_classes[-1]
    assert (pool.consolidate_after, pool.limits, pool.termination_grace_period) == ("0s", {}, None)
    assert (node_class.root_volume_size_gib, node_class.root_volume_type) == (20, "gp3")


UNENCRYPTED = CLASS + (
    "  blockDeviceMappings:\n    - deviceName: /dev/xvda\n      ebs:\n        volumeSize: 100Gi\n"
    "        encrypted: false\n        deleteOnTermination: false\n    - deviceName: /dev/xvdb\n      ebs:\n"
    "        volumeSize: 10Gi\n"
)


def test_an_unencrypted_volume_is_a_warning_and_refused_by_the_production_profile(tmp_path, monkeypatch):
    config = _load(tmp_path, monkeypatch, {"class.yaml": UNENCRYPTED})
    at = "class.yaml: EC2NodeClass/default: spec.blockDeviceMappings"
    assert [w for w in config.warnings if w.startswith(at)] == [
        f"{at}[0].ebs.encrypted: false: the volume is not encrypted; the app's volumes are (true) (from cdk.json)",
        f"{at}[0].ebs.deleteOnTermination: false: the volume outlives its instance, and is billed until someone "
        "deletes it; the app's volumes are deleted with their instance (true) (from cdk.json)",
        f"{at}[1].ebs.encrypted: not given: the volume is encrypted only where the account's EBS encryption by "
        "default is on; the app's volumes are encrypted (true) (from cdk.json)",
    ]
    assert config.node_classes[-1].manifest(cluster_name="c", node_role_name="r")["spec"]["blockDeviceMappings"][0][
        "ebs"
    ] == {"volumeSize": "100Gi", "encrypted": False, "deleteOnTermination": False}
    pinned = UNENCRYPTED.replace("al2023@latest", "al2023@v20260801")
    with pytest.raises(ConfigError) as info:
        _load(
            tmp_path,
            monkeypatch,
            {"class.yaml": pinned},
            profile="production",
            administrators=[ADMINISTRATOR],
        )
    assert str(info.value) == (
        f"{at}[0].ebs.encrypted: false: the volume is not encrypted; the app's volumes are (true); the production "
        "profile requires it (from cdk.json)\n"
        f"{at}[1].ebs.encrypted: not given: the volume is encrypted only where the account's EBS encryption by default "
        "is on; the app's volumes are encrypted (true); the production profile requires it (from cdk.json)"
    )


def test_the_silent_values_are_the_crds_defaults():
    """The converter's reading of a silent pool (manifest_opinions.SILENT_POOL) is the vendored 1.14.1 CRD's default,
    applied as the API server applies it: only where spec.disruption itself is absent."""
    from constructs_lib.karpenter.manifest_opinions import SILENT_POOL
    from tooling.cel_rules import mirror, with_defaults

    defaults = mirror("1.14.1")["kinds"]["NodePool karpenter.sh/v1"]["defaults"]
    silent = with_defaults(yaml_load.safe_load(POOL), defaults)["spec"]
    assert silent["disruption"]["consolidateAfter"] == SILENT_POOL["consolidateAfter"]
    assert "limits" not in silent and "terminationGracePeriod" not in silent["template"]["spec"]
    given = with_defaults(yaml_load.safe_load(POOL + "  disruption:\n    consolidationPolicy: WhenEmpty\n"), defaults)
    assert "consolidateAfter" not in given["spec"]["disruption"]  # the CRD then requires it: refused (CASES)


# --- on an existing cluster: a node role the team already has --------------------------------------------------

OWN_ROLE = "arn:aws:iam::111122223333:role/eks-node-role"


def test_a_class_keeps_a_node_role_the_team_has_and_the_construct_authorizes_and_passes_it(tmp_path, monkeypatch):

    own = CLASS.replace('"KarpenterNodeRole-${CLUSTER_NAME}"', "eks-node-role")
    existing = json.loads((ROOT / "examples" / "existing-cluster.json").read_text())
    config = _load(tmp_path, monkeypatch, {"class.yaml": own}, **existing, existingNodeRoles=[OWN_ROLE])
    (node_class,) = [c for c in config.node_classes if c.written is not None]
    assert node_class.manifest(cluster_name="shared-prod", node_role_name="app-role")["spec"]["role"] == "eks-node-role"
    # the construct: an EC2_LINUX access entry for the role, and the controller may pass it to EC2
    props = dataclasses.replace(_props([node_class], [NodePoolSpec()]), own_node_roles=[OWN_ROLE])
    stack = Stack.of(props.cluster)
    Karpenter(stack, "Karpenter", props)
    # read from the construct tree (no synth: no cloud assembly with the kubectl layer written)
    found = stack.node.find_all()
    entries = {
        stack.resolve(e.principal_arn): e.type
        for e in found
        if isinstance(e, CfnAccessEntry) and isinstance(stack.resolve(e.principal_arn), str)
    }
    assert entries == {OWN_ROLE: "EC2_LINUX"}
    (policy,) = [p for p in found if isinstance(p, CfnManagedPolicy) and "OwnNodeRolesPassRole" in p.node.path]
    assert stack.resolve(policy.policy_document)["Statement"] == [
        {
            "Action": "iam:PassRole",
            "Condition": {
                "StringEquals": {"iam:PassedToService": {"Fn::Join": ["", ["ec2.", {"Ref": "AWS::URLSuffix"}]]}}
            },
            "Effect": "Allow",
            "Resource": OWN_ROLE,
        }
    ]
    # a class naming a role the props do not list is refused by the construct's rule
    with pytest.raises(
        NodeSpecsError, match=r"names the role 'eks-node-role', which is not among own_node_roles \(none\)"
    ):
        Karpenter(bare_stack(), "Karpenter", _props([node_class], [NodePoolSpec()]))


def test_existing_node_roles_are_refused_on_a_cluster_the_app_creates(tmp_path, monkeypatch):
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, monkeypatch, {"class.yaml": CLASS}, existingNodeRoles=[OWN_ROLE])
    assert str(info.value) == (
        f'existingNodeRoles ["{OWN_ROLE}"]: only with existingCluster (a running install\'s roles); on a cluster the app '
        "creates, classes use its node role (from cdk.json)"
    )


def test_a_custom_class_without_volumes_keeps_its_images_own_and_production_refuses_it(tmp_path, monkeypatch):
    custom = CLASS.replace(
        "  amiSelectorTerms:\n    - alias: al2023@latest\n",
        "  amiFamily: Custom\n  amiSelectorTerms:\n    - id: ami-0123456789abcdef0\n"
        "  userData: |\n    #!/bin/bash\n    /usr/local/bin/join-cluster --taint karpenter.sh/unregistered:NoExecute\n",
    )
    config = _load(tmp_path, monkeypatch, {"class.yaml": custom})
    at = "class.yaml: EC2NodeClass/default: spec.blockDeviceMappings"
    assert [w for w in config.warnings if w.startswith(at)] == [
        f"{at}: not given: amiFamily Custom has no default volumes, so the image's own block device mappings apply, "
        "with the size and encryption its snapshots have; the app recommends giving the root device (deviceName, "
        "ebs.volumeSize, encrypted: true) (from cdk.json)"
    ]
    (node_class,) = [c for c in config.node_classes if c.written is not None]
    assert "blockDeviceMappings" not in node_class.manifest(cluster_name="c", node_role_name="r")["spec"]
    with pytest.raises(
        ConfigError, match=r"spec.blockDeviceMappings: not given: .*; the production profile requires it"
    ):
        _load(tmp_path, monkeypatch, {"class.yaml": custom}, profile="production", administrators=[ADMINISTRATOR])
