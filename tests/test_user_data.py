"""Your own images and user data: amiSelectorTerms, amiFamily, userData and userDataFile, checked per AMI family
as Karpenter 1.14 merges them, through the app's configuration as `make synth` reads it, and on Karpenter's own
examples/v1/ (tests/fixtures/karpenter-examples-v1.14.1/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from constructs_lib.karpenter import yaml_load
from constructs_lib.karpenter.specs import ami, bottlerocket_settings, user_data
from constructs_lib.karpenter.specs.kubelet import KubeletSpec
from constructs_lib.karpenter.specs.node_class import NodeClassSpec
from karpenter_stack.application import build, new_app
from karpenter_stack.config import ConfigError
from tests.conftest import ROOT, TODAY
from tooling import review as rv
from tooling.configurations import PRODUCT_CONTEXT
from tooling.review.cluster import cluster_update
from tooling.review.model import MANIFEST

UPSTREAM = ROOT / "tests/fixtures/karpenter-examples-v1.14.1"
MIME = 'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n'
NODE_CONFIG = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n"


def _classes_with_user_data() -> dict[str, dict]:
    found = {}
    for path in sorted(UPSTREAM.glob("*.yaml")):
        for document in yaml_load.safe_load_all(path.read_text()):
            if document and document["kind"] == "EC2NodeClass" and "userData" in document["spec"]:
                found[path.name] = document["spec"]
    return found


def _family(spec: dict) -> str:
    alias = next((t["alias"] for t in spec["amiSelectorTerms"] if "alias" in t), None)
    return (spec.get("amiFamily") or ami.family_of(alias)).lower()


def test_karpenters_own_user_data_examples_pass_the_check_of_their_family():
    classes = _classes_with_user_data()
    verdicts = {name: _family(spec) for name, spec in classes.items()}
    assert verdicts == {
        "al2-custom-ami.yaml": "al2",
        "al2-custom-userdata.yaml": "al2023",  # named al2, but its alias is al2023
        "al2-kubelet-log-query.yaml": "al2023",
        "al2023-custom-userdata.yaml": "al2023",
        "br-custom-userdata.yaml": "bottlerocket",
        "custom-family-with-alias.yaml": "custom",
        "custom-family.yaml": "custom",
        "windows-custom-userdata.yaml": "windows2022",
    }
    for spec in classes.values():
        user_data.check(_family(spec), spec["userData"])  # raises on a refusal
    # upstream's AL2023 example ends with "--//" instead of "--//--": Go's reader finds no next part and stops
    parts = user_data.entries("al2023", classes["al2023-custom-userdata.yaml"]["userData"])
    assert [p.media_type for p in parts] == ["application/node.eks.aws", "text/x-shellscript"]
    assert "strategy: Mount" in parts[0].content


REFUSED = {
    "al2023 NodeConfig sets the cluster": (
        "al2023",
        NODE_CONFIG + "  cluster:\n    name: other\n",
        "user data part 1: NodeConfig spec.cluster.name is written by Karpenter from the cluster, and Karpenter's "
        "value wins; leave it out",
    ),
    "al2023 NodeConfig sets a kubelet setting": (
        "al2023",
        MIME
        + "--//\nContent-Type: text/x-shellscript\n\necho hi\n--//\nContent-Type: application/node.eks.aws\n\n"
        + NODE_CONFIG
        + "  kubelet:\n    config:\n      evictionHard:\n        memory.available: 5%\n--//--\n",
        "user data part 2: NodeConfig spec.kubelet.config.evictionHard is set by Karpenter from the node class's "
        "kubelet.evictionHard (it computes each node's capacity from it); set kubelet.evictionHard instead",
    ),
    "al2023 NodeConfig labels the node": (
        "al2023",
        NODE_CONFIG + "  kubelet:\n    flags:\n      - --node-labels=team=data\n",
        "user data part 1: NodeConfig kubelet flag --node-labels=team=data is set by Karpenter from the pool's labels, "
        "which wins; set it there",
    ),
    "al2023 wrong apiVersion": (
        "al2023",
        "apiVersion: node.eks.aws/v1\nkind: NodeConfig\nspec: {}\n",
        "user data part 1: apiVersion 'node.eks.aws/v1' kind 'NodeConfig' is not a NodeConfig (apiVersion "
        "node.eks.aws/v1alpha1, kind NodeConfig); Karpenter reads YAML user data as a NodeConfig, so other YAML (e.g. "
        "#cloud-config) goes in a MIME part of its own type",
    ),
    "al2023 cloud-config outside MIME": (
        "al2023",
        "#cloud-config\npackages:\n  - htop\n",
        "user data part 1: apiVersion null kind null is not a NodeConfig (apiVersion node.eks.aws/v1alpha1, kind "
        "NodeConfig); Karpenter reads YAML user data as a NodeConfig, so other YAML (e.g. #cloud-config) goes in a MIME "
        "part of its own type",
    ),
    "al2023 MIME part runs to the end": (
        "al2023",
        MIME + "--//\nContent-Type: text/x-shellscript\n\necho hi\n",
        "user data starts with a MIME header, and Karpenter's MIME reader refuses it: parsing content, unexpected EOF",
    ),
    "al2023 MIME without boundary": (
        "al2023",
        "MIME-Version: 1.0\nContent-Type: text/plain\n\necho hi\n",
        "user data starts with a MIME header, and Karpenter's MIME reader refuses it: archive is not in multipart "
        "format (Content-Type 'text/plain')",
    ),
    "al2 runs the bootstrap itself": (
        "al2",
        "#!/bin/bash\n/etc/eks/bootstrap.sh my-cluster\n",
        "user data part 1, line 2, runs /etc/eks/bootstrap.sh: Karpenter adds a part that runs it with the cluster's "
        "and the pool's parameters after yours, and a node must join once (for a bootstrap of your own: amiFamily "
        "Custom)",
    ),
    "bottlerocket not TOML": (
        "bottlerocket",
        "settings.kubernetes.kube-api-qps: 30\n",
        "Bottlerocket user data is not TOML (Expected '=' after a key in a key/value pair (at line 1, column 33))",
    ),
    "bottlerocket taints": (
        "bottlerocket",
        "[settings.kubernetes.node-taints]\ndedicated = ['x:NoSchedule']\n",
        "Bottlerocket user data: settings.kubernetes.node-taints is set by Karpenter from the pool's taints and "
        "startupTaints, which wins; set it there",
    ),
    "bottlerocket kubelet setting": (
        "bottlerocket",
        "[settings.kubernetes]\nmax-pods = 20\n",
        "Bottlerocket user data: settings.kubernetes.max-pods is set by Karpenter from the node class's "
        "kubelet.maxPods (it computes each node's capacity from it); set kubelet.maxPods instead",
    ),
    "bottlerocket unknown kubernetes key": (
        "bottlerocket",
        "[settings.kubernetes]\nkube-api-qsp = 30\n",
        "Bottlerocket user data: settings.kubernetes.kube-api-qsp is not a setting Karpenter 1.14 knows: it drops it "
        "from the user data",
    ),
    "bottlerocket top-level table": (
        "bottlerocket",
        "[kubernetes]\nkube-api-qps = 30\n",
        "Bottlerocket user data: top-level 'kubernetes' is dropped by Karpenter, which keeps only [settings]",
    ),
    "windows tags": (
        "windows2022",
        "<powershell>\nWrite-Host hi\n</powershell>\n",
        "Windows user data: leave out <powershell>; Karpenter writes your commands inside its own <powershell> block, "
        "before its bootstrap call, where EC2Launch reads no tag",
    ),
    "empty": ("al2023", " \n", "user data is empty: leave it unset"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_user_data_karpenter_would_override_or_cannot_read_is_refused(case):
    family, text, message = REFUSED[case]
    with pytest.raises(ValueError) as info:
        user_data.check(family, text)
    assert str(info.value) == message


def test_what_karpenter_keeps_passes():
    user_data.check("bottlerocket", "[settings.kubernetes]\nkube-api-qps = 30\n[settings.host-containers.admin]\n")
    user_data.check("al2023", NODE_CONFIG + "  kubelet:\n    config:\n      registryPullQPS: 20\n")
    user_data.check("al2023", "#!/bin/bash\necho hi\n")  # not a YAML map: a shell part
    user_data.check("windows2025", "Write-Host hi\n")
    user_data.check("custom", "#!/bin/bash\n/etc/eks/bootstrap.sh my-cluster\n")  # Custom: nothing is merged


def test_every_kubelet_setting_is_known_to_the_user_data_check():
    # a new spec.kubelet field must be added to what the check refuses in user data (Karpenter writes it there)
    kubelet = {info.alias or name for name, info in KubeletSpec.model_fields.items()}
    assert kubelet == set(user_data.KUBELET_CONFIG_KEYS)
    assert kubelet - {"podsPerCore"} == set(user_data.BOTTLEROCKET_KUBELET_KEYS)  # Bottlerocket has no podsPerCore
    assert set(user_data.BOTTLEROCKET_KUBELET_KEYS.values()) <= set(bottlerocket_settings.KUBERNETES)


def _synth_error(overrides: dict, tmp_path: Path) -> str:
    app = new_app(context={**PRODUCT_CONTEXT, **overrides}, outdir=str(tmp_path))
    with pytest.raises(ConfigError) as info:
        build(app, today=TODAY)
    assert app.node.children == []
    assert list(tmp_path.iterdir()) == []
    return str(info.value)


AMI = {"id": "ami-0123456789abcdef0"}
BAD = {
    "terms without a family": (
        {"nodeClasses": [{"amiSelectorTerms": [AMI]}]},
        "nodeClasses[0]: amiSelectorTerms without an alias need amiFamily (AL2, AL2023, Bottlerocket, Windows2019, "
        "Windows2022, Windows2025, Custom): it decides the user data Karpenter generates and the volumes it defaults "
        "to (from -c)",
    ),
    "alias and terms": (
        {"nodeClasses": [{"amiAlias": "al2023@latest", "amiSelectorTerms": [AMI], "amiFamily": "AL2023"}]},
        "nodeClasses[0]: amiAlias and amiSelectorTerms both select images: give one (an alias term is amiAlias) "
        "(from -c)",
    ),
    "alias with other terms": (
        {"nodeClasses": [{"amiSelectorTerms": [{"alias": "al2023@latest"}, AMI]}]},
        "nodeClasses[0]: amiSelectorTerms: an alias term must be the only term (the CRD's rule) (from -c)",
    ),
    "id with owner": (
        {"nodeClasses": [{"amiSelectorTerms": [{**AMI, "owner": "self"}], "amiFamily": "AL2"}]},
        "nodeClasses[0].amiSelectorTerms[0]: an AMI selector term with id takes no owner (the CRD's rule) (from -c)",
    ),
    "family against the alias": (
        {"nodeClasses": [{"amiAlias": "bottlerocket@latest", "amiFamily": "AL2023"}]},
        "nodeClasses[0]: amiFamily 'AL2023' does not fit the alias family bottlerocket: with an alias, amiFamily is "
        "its family or Custom (the CRD's rule) (from -c)",
    ),
    "custom without a device": (
        {"nodeClasses": [{"amiSelectorTerms": [AMI], "amiFamily": "Custom", "userData": "#!/bin/bash\n"}]},
        "nodeClasses[0]: amiFamily Custom has no default volumes: set rootVolumeDeviceName to your image's root "
        "device (e.g. /dev/xvda), so that its size, type and encryption apply (from -c)",
    ),
    "custom without user data": (
        {"nodeClasses": [{"amiSelectorTerms": [AMI], "amiFamily": "Custom", "rootVolumeDeviceName": "/dev/xvda"}]},
        "nodeClasses[0]: amiFamily Custom: Karpenter adds no bootstrap of its own, so userData or userDataFile must "
        "join the node to the cluster (registered with the karpenter.sh/unregistered:NoExecute taint) (from -c)",
    ),
    "missing user data file": (
        {"nodeClasses": [{"userDataFile": "user-data/missing.sh"}]},
        "nodeClasses[0]: userDataFile 'user-data/missing.sh': no such file (paths are relative to the project folder) (from -c)",
    ),
    "user data file outside the project": (
        {"nodeClasses": [{"userDataFile": "../secrets.sh"}]},
        "nodeClasses[0]: userDataFile '../secrets.sh' must be a path inside the project folder, relative to it (where cdk.json "
        "is) (from -c)",
    ),
    "both user data settings": (
        {"nodeClasses": [{"userData": "#!/bin/bash\n", "userDataFile": "examples/user-data/al2023-nodeconfig.yaml"}]},
        "nodeClasses[0]: userData and userDataFile both give the user data: give one (from -c)",
    ),
    "user data Karpenter overrides": (
        {"nodeClasses": [{"amiAlias": "bottlerocket@latest", "userData": "[settings.kubernetes]\nmax-pods = 9\n"}]},
        "nodeClasses[0]: userData: Bottlerocket user data: settings.kubernetes.max-pods is set by Karpenter from the "
        "node class's kubelet.maxPods (it computes each node's capacity from it); set kubelet.maxPods instead "
        "(from -c)",
    ),
    "alias term older than the Kubernetes version": (
        {"nodeClasses": [{"amiSelectorTerms": [{"alias": "al2023@v20260301"}]}]},
        "nodeClasses[0].amiSelectorTerms[0].alias 'al2023@v20260301' has no AMI for Kubernetes 1.36: EKS-optimized "
        "AMIs for 1.36 start with its EKS release (2026-04-22 at the earliest); pin al2023@v20260422 or later, or "
        "al2023@latest (from -c)",
    ),
    "production with images by name pattern": (
        {
            "profile": "production",
            "nodeClasses": [
                {"amiSelectorTerms": [{"name": "golden-al2023-*", "owner": "123456789012"}], "amiFamily": "AL2023"}
            ],
        },
        "nodeClasses[0].amiSelectorTerms[0] selects by the name pattern 'golden-al2023-*': a new image that matches it "
        "replaces every node (drift) without a setting changing, which the production profile refuses; select by id (ami-...) "
        "or by an exact name with one owner account (from -c)",
    ),
    "production with an SSM parameter": (
        {
            "profile": "production",
            "nodeClasses": [{"amiSelectorTerms": [{"ssmParameter": "/golden/al2023/latest"}], "amiFamily": "AL2023"}],
        },
        "nodeClasses[0].amiSelectorTerms[0] selects by ssmParameter '/golden/al2023/latest' (its value can name a new "
        "image): a new image that matches it replaces every node (drift) without a setting changing, which the production profile refuses; select by id (ami-...) "
        "or by an exact name with one owner account (from -c)",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_image_and_user_data_settings_stop_the_synth_with_one_line(case, tmp_path: Path):
    overrides, message = BAD[case]
    assert _synth_error(overrides, tmp_path) == message


def test_production_takes_pinned_images_of_your_own():
    pinned = NodeClassSpec.model_validate(
        {
            "amiSelectorTerms": [AMI, {"name": "golden-al2023-2026-11-01", "owner": "123456789012"}],
            "amiFamily": "AL2023",
        }
    )
    assert pinned.pinned and pinned.alias is None and pinned.family == "al2023"
    moving = NodeClassSpec.model_validate({"amiSelectorTerms": [{"tags": {"golden": "true"}}], "amiFamily": "AL2023"})
    assert not moving.pinned
    assert not NodeClassSpec.model_validate(
        {"amiSelectorTerms": [{"name": "x", "owner": "amazon"}], "amiFamily": "AL2"}
    ).pinned
    amazon = NodeClassSpec.model_validate({"amiSelectorTerms": [{"name": "x"}], "amiFamily": "AL2"})
    assert amazon.ami_selector_terms[0].moves_by == (
        "a name of owners self and amazon (AMI names are unique per account only)"
    )
    assert moving.ami_selector_terms[0].moves_by == "tags (a new image can carry them)"
    assert NodeClassSpec.model_validate({"amiAlias": "al2023@v20260801"}).pinned
    assert not NodeClassSpec().pinned


def test_custom_family_writes_your_device_and_user_data_as_given():
    spec = NodeClassSpec.model_validate(
        {
            "amiSelectorTerms": [{"alias": "bottlerocket@latest"}],
            "amiFamily": "Custom",
            "rootVolumeDeviceName": "/dev/xvdb",
            "userData": "[settings.kubernetes]\ncluster-name = 'c'\n",  # Custom: Karpenter merges nothing
        }
    )
    manifest = spec.manifest(cluster_name="c", node_role_name="r")["spec"]
    assert manifest["amiSelectorTerms"] == [{"alias": "bottlerocket@latest"}]
    assert manifest["amiFamily"] == "Custom"
    assert manifest["userData"] == "[settings.kubernetes]\ncluster-name = 'c'\n"
    # no Bottlerocket OS volume: Custom has no defaults, the one volume is the device given
    assert [m["deviceName"] for m in manifest["blockDeviceMappings"]] == ["/dev/xvdb"]
    assert spec.family == "custom" and spec.operating_system == "linux"
    windows = NodeClassSpec.model_validate(
        {
            "amiAlias": "windows2022@latest",
            "amiFamily": "Custom",
            "rootVolumeDeviceName": "/dev/sda1",
            "userData": "<powershell>\n& $bootstrap\n</powershell>",
        }
    )
    assert windows.windows and windows.operating_system == "windows"


def _manifest(spec: NodeClassSpec) -> str:
    return json.dumps([spec.manifest(cluster_name="c", node_role_name="r")])


def _template(*classes: NodeClassSpec) -> dict:
    pool = {"kind": "NodePool", "metadata": {"name": "default"}, "spec": {"template": {"spec": {"nodeClassRef": {}}}}}
    pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] = "default"
    resources = {
        f"Class{i}": {"Type": MANIFEST, "Properties": {"Manifest": _manifest(c)}} for i, c in enumerate(classes)
    }
    return {"Resources": {**resources, "Pool": {"Type": MANIFEST, "Properties": {"Manifest": json.dumps([pool])}}}}


def test_the_review_says_changing_user_data_drifts_every_node_of_the_class():
    old, new = NodeClassSpec(), NodeClassSpec(userData="#!/bin/bash\necho hi\n")
    assert rv.kubernetes_effects(_manifest(old), _manifest(new), _template(new)) == [
        "EC2NodeClass `default` (userData): all nodes of pool `default` will be replaced by drift, "
        "starting right after the deploy, at most 10% of its nodes (rounded up) at a time (its disruption budgets for Drifted)"
    ]
    # and so does the file behind userDataFile: its content is what the EC2NodeClass carries
    from_file = NodeClassSpec(userDataFile="examples/user-data/al2023-nodeconfig.yaml")
    assert "replaced by drift" in rv.kubernetes_effects(_manifest(new), _manifest(from_file), _template(from_file))[0]


def test_writing_the_family_an_alias_implies_drifts_nothing_as_karpenters_hash_does():
    # Karpenter 1.14 EC2NodeClass.Hash() hashes AMIFamily() (amiFamily, else the alias's family), not the field
    old, same, custom = (
        NodeClassSpec(),
        NodeClassSpec(amiFamily="AL2023"),
        NodeClassSpec(amiFamily="Bottlerocket", amiAlias="bottlerocket@latest"),
    )
    assert rv.kubernetes_effects(_manifest(old), _manifest(same), _template(same)) == []
    assert (
        "all nodes of pool `default` will be replaced"
        in rv.kubernetes_effects(_manifest(old), _manifest(custom), _template(custom))[0]
    )


def test_a_kubernetes_upgrade_says_you_own_the_version_skew_of_your_own_images():
    golden = NodeClassSpec(name="golden", amiSelectorTerms=[AMI], amiFamily="AL2023")
    cluster = {"Config": {"name": "c", "version": "1.35"}}
    upgraded = {"Config": {"name": "c", "version": "1.36"}}
    change = cluster_update("Cluster", cluster, upgraded, set(), _template(NodeClassSpec(), golden), None)
    assert change.action == "updated"
    assert change.why.endswith(
        "; EC2NodeClass `golden` selects images of your own, which Karpenter does not move with the Kubernetes "
        "version: you own their kubelet's version skew against the new control plane (EKS allows the kubelet up to "
        "three minors behind, never ahead)"
    )
    aliases_only = cluster_update("Cluster", cluster, upgraded, set(), _template(NodeClassSpec()), None)
    assert "your own" not in aliases_only.why


def test_annotations_are_sized_last_with_the_user_data_they_travel_with():
    # the size check renders the object: it runs after the image and user data checks, and counts the user data
    with pytest.raises(ValueError, match="amiSelectorTerms without an alias need amiFamily"):
        NodeClassSpec.model_validate({"amiSelectorTerms": [AMI], "objectAnnotations": {"example.com/a": "b"}})
    user = "#!/bin/bash\n" + "echo 0123456789abcdef\n" * 500
    fits = {"example.com/notes": "n" * 118_000}
    assert NodeClassSpec.model_validate({"userData": user, "objectAnnotations": fits}).user_data_text == user
    with pytest.raises(ValueError, match="objectAnnotations of 2[0-9]{5} bytes with kubectl's copy of the object"):
        NodeClassSpec.model_validate({"userData": user, "objectAnnotations": {"example.com/notes": "n" * 126_000}})
    # without the user data the same annotations fit: it is the user data that tips them over
    assert NodeClassSpec.model_validate({"objectAnnotations": {"example.com/notes": "n" * 126_000}}).object_annotations
