"""Karpenter's real charts, rendered offline with the pinned Helm (tooling/releases/chart_render.py): for each kept
release (tooling/upstream/karpenter-<version>/charts/), every value the app sets is one of that chart's values.yaml, the
rendered controller objects carry the app's settings, and the CRD chart installs the CRDs the project's
schema and CEL mirrors were taken from.

The values are the ones the synthesized template carries (``Custom::AWSCDK-EKS-HelmChart`` ``Values``), CloudFormation
intrinsics as placeholders. The app synthesizes 1.14.1 only (1.13.1 has no template yet, issue 34): its values are
rendered with both kept charts, which is what a user moving between them would install."""

from __future__ import annotations

import copy
import json
import re
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

from constructs_lib.karpenter import yaml_load
from constructs_lib.karpenter.names import (
    CONTROLLER_POD_LABELS,
    CREDENTIALS_POD_ANNOTATION,
    KUBERNETES_VERSION_POD_ANNOTATION,
)
from tests.cfn import controller_values, each, only, resources
from tests.conftest import synth
from tests.test_operability import OPS
from tooling.releases import chart_render, helm
from tooling.releases.chart_render import (
    PASS_THROUGH,
    UPSTREAM,
    ChartError,
    by_kind,
    chart_defaults,
    empty_maps,
    release_values,
    render,
    render_crds,
    render_release,
    render_text,
    unknown_values,
)

VERSIONS = ("1.13.1", "1.14.1")
# The chart's FEATURE_GATES env, gate by gate, in the chart's order (deployment.yaml); 1.14 added CapacityBuffer.
GATES = {
    "1.13.1": ("ReservedCapacity", "SpotToSpotConsolidation", "NodeRepair", "NodeOverlay", "StaticCapacity"),
    "1.14.1": ("ReservedCapacity", "SpotToSpotConsolidation", "NodeRepair", "NodeOverlay", "StaticCapacity")
    + ("CapacityBuffer",),
}
CRITICAL_ADDONS_ONLY = [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
ONE_CPU = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}

# What each shared synth must install, read off the rendered objects. "gates": the ones on (all others off).
# "tolerations" on Fargate (default, production, ...) is the chart's own default: the app writes none there,
# and Helm keeps values.yaml's CriticalAddonsOnly toleration (harmless on Fargate, which ignores it).
EXPECTED: dict[str, dict] = {
    "default": {
        "namespace": "kube-system",
        "service_account": "karpenter",
        "role": "ControllerRole4FED04D7",
        "cluster": "eks-karpenter",
        "kubernetes": "1.36",
        "dns_policy": "Default",
        "tolerations": CRITICAL_ADDONS_ONLY,
        "resources": ONE_CPU,
        "gates": {"ReservedCapacity"},
        "log_level": "info",
        "pod_annotations": {CREDENTIALS_POD_ANNOTATION: "irsa", KUBERNETES_VERSION_POD_ANNOTATION: "1.36"},
    },
    "alternative": {  # a managed node group hosts the controller: the app writes the toleration of its taint
        "namespace": "karpenter",
        "service_account": "karpenter-controller",
        "role": "ControllerRole4FED04D7",
        "cluster": "alt_cluster-1",
        "kubernetes": "1.36",
        "dns_policy": "Default",
        "tolerations": CRITICAL_ADDONS_ONLY,
        "resources": ONE_CPU,
        "gates": {"ReservedCapacity"},
        "log_level": "info",
        "pod_annotations": {CREDENTIALS_POD_ANNOTATION: "irsa"},
    },
    "pod_identity": {  # no IRSA annotation: the Pod Identity association names the role
        "namespace": "karpenter",
        "service_account": "karpenter-controller",
        "role": None,
        "cluster": "alt_cluster-1",
        "kubernetes": "1.36",
        "dns_policy": "Default",
        "tolerations": CRITICAL_ADDONS_ONLY,
        "resources": ONE_CPU,
        "gates": {"ReservedCapacity"},
        "log_level": "info",
        "pod_annotations": {CREDENTIALS_POD_ANNOTATION: "pod-identity"},
    },
    "existing": {  # an existing cluster: its CoreDNS, Kubernetes 1.35
        "namespace": "kube-system",
        "service_account": "karpenter",
        "role": "KarpenterControllerRole28E8F7AF",
        "cluster": "shared-prod",
        "kubernetes": "1.35",
        "dns_policy": "ClusterFirst",
        "tolerations": CRITICAL_ADDONS_ONLY,
        "resources": ONE_CPU,
        "gates": {"ReservedCapacity"},
        "log_level": "info",
        "pod_annotations": {CREDENTIALS_POD_ANNOTATION: "irsa"},
    },
    "operability": {  # tests/test_operability.py's controller settings: gates, log level, batching, zonal shift
        "namespace": "kube-system",
        "service_account": "karpenter",
        "role": "ControllerRole4FED04D7",
        "cluster": "eks-karpenter",
        "kubernetes": "1.36",
        "dns_policy": "Default",
        "tolerations": CRITICAL_ADDONS_ONLY,
        "resources": {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}},
        "gates": {"ReservedCapacity", "SpotToSpotConsolidation", "NodeRepair"},
        "log_level": "debug",
        "pod_annotations": {CREDENTIALS_POD_ANNOTATION: "irsa", KUBERNETES_VERSION_POD_ANNOTATION: "1.36"},
        "env": {"BATCH_MAX_DURATION": "20s", "BATCH_IDLE_DURATION": "2s", "ENABLE_ZONAL_SHIFT": "true"},
    },
}
EXPECTED["production"] = EXPECTED["default"]  # the profile changes nothing the chart is given
CONFIGURATIONS = sorted(EXPECTED)


@pytest.fixture(scope="session")
def operability():
    return synth(**OPS)  # the synth tests/test_operability.py shares (the session's synth cache)


def _synth(request, configuration: str):
    return request.getfixturevalue(configuration)


def _release(request, configuration: str, version: str) -> dict[str, dict]:
    """The controller chart of ``version`` as the configuration installs it: rendered once per session."""
    synthesized = _synth(request, configuration)
    return render_release(synthesized.json, version, synthesized.config.kubernetes_version)


def _env(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value", "(from the pod)") for e in container["env"]}


# --- the charts and their values -------------------------------------------------------------------------------


def test_both_releases_charts_are_kept():
    assert chart_render.kept_versions() == list(VERSIONS)
    for version in VERSIONS:
        assert chart_defaults(version)["controller"]["image"]["tag"] == version


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_every_value_the_app_sets_is_one_of_the_chart(configuration, version, request):
    """The key walk of the chart's own values.yaml replaces the hand-kept key list (controller-values.schema.json)
    as the check that the chart reads what the app writes; the values read off the template are the ones the
    suite's other tests read (tests/cfn.py, same placeholders)."""
    synthesized = _synth(request, configuration)
    values = release_values(synthesized.json)
    assert values == controller_values(synthesized.template)
    assert unknown_values(values, version) == []


def test_a_value_the_chart_does_not_have_is_named_with_the_version(default):
    values = copy.deepcopy(release_values(default.json))
    values["settings"]["interruptionqueue"] = values["settings"].pop("interruptionQueue")
    values["podDisruptionBudget"]["minAvailable"] = 1  # not a value of the chart: its template writes maxUnavailable
    values["controller"]["resources"]["claims"] = [{"name": "gpu"}]  # passed through whole: Kubernetes' to judge
    values["serviceAccount"]["annotations"]["example.com/any"] = "x"  # passed through whole
    values["dnsPolicy"] = {"policy": "Default"}  # a scalar of the chart: the walk stops, a map is not refused here
    values["controller"]["metrics"] = 8080  # the chart has a map there
    assert unknown_values(values, "1.14.1") == [
        "settings.interruptionqueue: not a value of the karpenter chart 1.14.1 (its values.yaml); "
        "did you mean 'interruptionQueue'?",
        "podDisruptionBudget.minAvailable: not a value of the karpenter chart 1.14.1 (its values.yaml); "
        "did you mean 'maxUnavailable'?",
        "controller.metrics: the karpenter chart 1.14.1 takes a map here, not 8080",
    ]
    # a gate 1.14 added is refused for 1.13.1, with the version named
    gate = {"settings": {"featureGates": {"capacityBuffer": True}}}
    assert unknown_values(gate, "1.14.1") == []
    assert unknown_values(gate, "1.13.1") == [
        "settings.featureGates.capacityBuffer: not a value of the karpenter chart 1.13.1 (its values.yaml)"
    ]


def test_a_chart_that_is_not_kept_is_named():
    with pytest.raises(ChartError) as error:
        render("1.12.0")
    assert str(error.value) == (
        "no karpenter chart of Karpenter 1.12.0 in tooling/upstream/karpenter-1.12.0/charts/karpenter "
        "(kept: 1.13.1, 1.14.1)"
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_the_maps_the_walk_stops_at_are_passed_through_whole_by_the_chart(version):
    """Every map of PASS_THROUGH is one of the chart's values, every empty map of values.yaml is decided (a new
    chart's new map fails here until it is), and a key the chart cannot know, put under each, reaches a rendered
    object unchanged: the chart hands the map to Kubernetes whole (``toYaml``)."""
    defaults = chart_defaults(version)
    for path in PASS_THROUGH:
        node = defaults
        for key in path.split("."):
            node = node[key]
        assert isinstance(node, dict), path
    assert set(empty_maps(version)) <= PASS_THROUGH
    assert set(PASS_THROUGH) - set(empty_maps(version)) == {
        "strategy",
        "podSecurityContext",
        "nodeSelector",
        "affinity",
    }  # maps with defaults of the chart, passed through alike

    probes: dict = {"settings": {"clusterName": "probe"}, "serviceMonitor": {"enabled": True}}
    for path in sorted(PASS_THROUGH):
        node = probes
        *parents, leaf = path.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = {f"probe.example.com/{path}": path}
    text = json.dumps(render(version, values=probes, api_versions=["monitoring.coreos.com/v1"]))
    assert sorted(p for p in PASS_THROUGH if f'"probe.example.com/{p}": "{p}"' not in text) == []


# --- the rendered controller -------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_the_rendered_controller_carries_the_apps_settings(configuration, version, request):
    expected = EXPECTED[configuration]
    synthesized = _synth(request, configuration)
    assert synthesized.config.kubernetes_version == expected["kubernetes"]
    objects = _release(request, configuration, version)
    namespace = expected["namespace"]

    deployment = objects["Deployment/karpenter"]
    assert deployment["metadata"]["namespace"] == namespace
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]
    assert pod["metadata"]["annotations"] == expected["pod_annotations"]
    # the labels the app's own objects select the controller's pods by (names.py)
    assert pod["metadata"]["labels"] == {**CONTROLLER_POD_LABELS, "app.kubernetes.io/instance": "karpenter"}
    spec = pod["spec"]
    assert spec["serviceAccountName"] == expected["service_account"]
    assert spec["priorityClassName"] == "system-cluster-critical"
    assert spec["dnsPolicy"] == expected["dns_policy"]
    assert spec["tolerations"] == expected["tolerations"]
    (container,) = spec["containers"]
    assert container["image"].startswith(f"public.ecr.aws/karpenter/controller:{version}@sha256:")
    assert container["resources"] == expected["resources"]

    env = _env(container)
    gates = dict(g.split("=") for g in env["FEATURE_GATES"].split(","))
    assert list(gates) == list(GATES[version])
    assert {g for g, on in gates.items() if on == "true"} == expected["gates"]
    assert set(gates.values()) == {"true", "false"}
    assert env["CLUSTER_NAME"] == expected["cluster"]
    assert env["LOG_LEVEL"] == expected["log_level"]
    assert env["AWS_REGION"] == "${Ref:AWS::Region}"
    for name, value in expected.get("env", {}).items():
        assert env[name] == value, name
    if "env" not in expected:  # the chart's defaults stand
        assert (env["BATCH_MAX_DURATION"], env["BATCH_IDLE_DURATION"], "ENABLE_ZONAL_SHIFT" in env) == (
            "10s",
            "1s",
            False,
        )

    # the interruption queue: the name the Karpenter nested stack outputs, its one SQS queue's
    queue = env["INTERRUPTION_QUEUE"]
    match = re.fullmatch(r"\$\{GetAtt:(?P<stack>\w+)\.Outputs\.(?P<output>\w+)\}", queue, re.ASCII)
    assert match, queue
    assert synthesized.json["Resources"][match["stack"]]["Type"] == "AWS::CloudFormation::Stack"
    queue_id, _ = only(resources(synthesized.karpenter, "AWS::SQS::Queue"))
    assert synthesized.karpenter_json["Outputs"][match["output"]]["Value"] == {"Fn::GetAtt": [queue_id, "QueueName"]}

    account = objects[f"ServiceAccount/{expected['service_account']}"]
    assert account["metadata"]["namespace"] == namespace
    if expected["role"] is None:
        assert "annotations" not in account["metadata"]
    else:
        assert account["metadata"]["annotations"] == {
            "eks.amazonaws.com/role-arn": f"${{GetAtt:{expected['role']}.Arn}}"
        }
        assert synthesized.json["Resources"][expected["role"]]["Type"] == "AWS::IAM::Role"

    budget = objects["PodDisruptionBudget/karpenter"]
    assert budget["apiVersion"] == "policy/v1"
    assert budget["metadata"]["namespace"] == namespace
    assert budget["spec"] == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": deployment["spec"]["selector"]["matchLabels"]},
    }
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()


@pytest.mark.parametrize("version", VERSIONS)
def test_the_service_monitor_is_rendered_only_where_the_cluster_serves_its_api(operability, version):
    """serviceMonitor.enabled alone renders nothing: the chart also asks the cluster for monitoring.coreos.com/v1
    (the Prometheus operator's CRDs), which Helm learns from the cluster at install time."""
    without = render_release(operability.json, version, "1.36")
    served = render_release(operability.json, version, "1.36", api_versions=["monitoring.coreos.com/v1"])
    assert set(served) - set(without) == {"ServiceMonitor/karpenter"}
    monitor = served["ServiceMonitor/karpenter"]
    assert (monitor["metadata"]["namespace"], monitor["spec"]["endpoints"][0]["port"]) == (
        "kube-system",
        "http-metrics",
    )


# --- the CRD chart ------------------------------------------------------------------------------------------


CRDS = {
    "1.13.1": ["ec2nodeclasses.karpenter.k8s.aws", "nodeclaims.karpenter.sh", "nodeoverlays.karpenter.sh"]
    + ["nodepools.karpenter.sh"],
}
CRDS["1.14.1"] = sorted([*CRDS["1.13.1"], "capacitybuffers.autoscaling.x-k8s.io"])


@pytest.mark.parametrize("version", VERSIONS)
def test_the_crd_chart_renders_the_releases_crds(version):
    assert sorted(render_crds(version)) == CRDS[version]


def test_the_rendered_crds_are_the_ones_the_mirrors_were_taken_from():
    """tooling/upstream/karpenter-<version>/crds/ (pkg/apis/crds/ of the release, the source of the schema and CEL
    mirrors: tests/test_schema_mirror.py) and the CRD chart's templates differ in text: each template carries a
    ``{{- with .Values.additionalAnnotations }}`` block in its metadata.annotations, which the app's (empty)
    values render to nothing, and Helm prints each document after ``---`` and a ``# Source:`` line (the file
    starts with its own ``---``) and a blank line between documents. Parsed, they are the same objects; and with those two differences taken away,
    the same text. Every kept ``crds/`` folder is compared (1.13.1's once the import writes it)."""
    kept = each(sorted(p.parent.name.removeprefix("karpenter-") for p in UPSTREAM.glob("karpenter-*/crds")))
    assert "1.14.1" in kept
    for version in kept:
        folder = UPSTREAM / f"karpenter-{version}" / "crds"
        files = {p.name: p.read_text() for p in sorted(folder.glob("*.yaml"))}
        rendered = render_crds(version)
        parsed = {(doc := yaml_load.safe_load(text))["metadata"]["name"]: doc for text in files.values()}
        assert sorted(parsed) == sorted(rendered) == CRDS[version]
        for name, crd in parsed.items():
            assert rendered[name] == crd, f"{version}: {name} differs from {folder.name}/"

        text = render_text(version, "karpenter-crd")
        documents = re.split(r"^---\n# Source: karpenter-crd/templates/(\S+)\n", text, flags=re.MULTILINE | re.ASCII)
        assert documents[0] == ""
        by_file = dict(zip(documents[1::2], documents[2::2], strict=True))
        assert sorted(by_file) == sorted(files)
        for name, body in by_file.items():
            assert files[name].startswith("---\n")
            last = name == list(by_file)[-1]
            assert body == files[name].removeprefix("---\n") + ("" if last else "\n"), name  # + Helm's blank line


def _differences(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(a.keys() | b.keys()) for d in _differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _differences(x, y, f"{path}[{i}]")]
    return [path] if a != b else []


def test_the_1_13_crds_differ_from_1_14s_where_the_chart_diff_says():
    """`diff -r` of the two CRD charts' templates: 1.14 adds capacitybuffers and, in NodePool, the Balanced
    consolidation policy (its enum and description); the other three CRDs are unchanged."""
    old, new = render_crds("1.13.1"), render_crds("1.14.1")
    assert sorted(new.keys() - old.keys()) == ["capacitybuffers.autoscaling.x-k8s.io"]
    assert sorted(old.keys() - new.keys()) == []
    assert [n for n in sorted(old) if old[n] != new[n]] == ["nodepools.karpenter.sh"]
    policy = (
        ".spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.disruption.properties.consolidationPolicy"
    )
    assert _differences(old["nodepools.karpenter.sh"], new["nodepools.karpenter.sh"]) == [
        f"{policy}.description",
        f"{policy}.enum",
    ]
    path = policy.lstrip(".").replace("[0]", ".0").split(".")

    def at(crd: dict):
        node = crd
        for key in path:
            node = node[int(key)] if key.isdigit() else node[key]
        return node

    assert at(old["nodepools.karpenter.sh"])["enum"] == ["WhenEmpty", "WhenEmptyOrUnderutilized"]
    assert at(new["nodepools.karpenter.sh"])["enum"] == ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]


def test_renders_are_kept_for_the_session(default):
    """One helm process per (version, chart, values, namespace, Kubernetes version): a second render of the same
    release is the cached one, and the objects handed out are copies a test may change."""
    first = render_release(default.json, "1.14.1", "1.36")
    first["Deployment/karpenter"]["spec"]["replicas"] = 99
    calls = chart_render._render_text.cache_info().misses
    again = render_release(default.json, "1.14.1", "1.36")
    assert again["Deployment/karpenter"]["spec"]["replicas"] == 2
    assert chart_render._render_text.cache_info().misses == calls
    assert by_kind(render("1.14.1", values=release_values(default.json))) == again


def test_renders_are_kept_across_runs_by_all_they_depend_on(tmp_path, monkeypatch):
    """Helm's output is kept in .cache/helm/renders by Helm's version, every file of the chart, the options and the
    values: a later run reads it and runs no helm; a changed chart file, other values or another Helm render anew."""
    monkeypatch.setattr(helm, "RENDERS", tmp_path / "renders")
    chart = tmp_path / "chart"
    shutil.copytree(chart_render.chart_dir("1.14.1", "karpenter"), chart)
    values = json.dumps({"settings": {"clusterName": "kept"}})
    first = helm.template("karpenter", chart, "--namespace", "karpenter", values=values)
    assert "name: karpenter" in first and len(list((tmp_path / "renders").iterdir())) == 1
    ran = []
    monkeypatch.setattr(helm, "run", lambda *args, **kwargs: ran.append(args) or "rendered anew")
    assert helm.template("karpenter", chart, "--namespace", "karpenter", values=values) == first
    assert ran == []
    helm.template("karpenter", chart, "--namespace", "karpenter", values=json.dumps({"replicas": 1}))
    (chart / "values.yaml").write_text((chart / "values.yaml").read_text() + "\n# edited\n")
    helm.template("karpenter", chart, "--namespace", "karpenter", values=values)
    monkeypatch.setattr(helm, "layer_version", lambda: "0.0.0")
    helm.template("karpenter", chart, "--namespace", "karpenter", values=values)
    assert len(ran) == 3 and len(list((tmp_path / "renders").iterdir())) == 4


# --- the review's rule of what rolls the controller's pods, against the chart -------------------------------


def _leaves(values: dict, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    return [
        leaf
        for key, value in values.items()
        for leaf in (_leaves(value, (*path, key)) if isinstance(value, dict) else [(*path, key)])
    ]


def _changed(values: dict, path: tuple[str, ...]) -> dict:
    changed = copy.deepcopy(values)
    *parents, leaf = path
    node = changed
    for key in parents:
        node = node[key]
    value = node[leaf]
    if isinstance(value, bool):
        node[leaf] = not value
    elif isinstance(value, int):
        node[leaf] = value + 1
    elif isinstance(value, str):
        node[leaf] = f"{value}-changed"
    else:
        node[leaf] = [*value, {"key": "probe.example.com", "operator": "Exists"}]
    return changed


def test_the_values_the_review_says_roll_the_pods_change_the_rendered_pod_template(operability, alternative):
    """tooling/review's mirrored rule (a changed value rolls the controller's pods unless it is one of
    _OUTSIDE_POD_TEMPLATE) against the chart the app installs (1.14.1; 1.13.1's templates differ from it only in
    the FEATURE_GATES line): each value the app writes (the operability configuration's and the node-group
    hosting's toleration), changed alone, changes the rendered Deployment's pod template exactly when the rule says
    so -- but for serviceAccount.create, which the rule counts as rolling the pods and the chart does not (with a
    name set, the pods' serviceAccountName is that name either way): the review errs on the safe side, and the app
    always writes create: true."""
    version = "1.14.1"
    from tooling.review.kubernetes import _pod_template_changes

    values = {**release_values(operability.json), "tolerations": release_values(alternative.json)["tolerations"]}
    template = render(version, values=values)
    pods = by_kind(template)["Deployment/karpenter"]["spec"]["template"]
    kept, mismatches = [], []
    variants = {path: _changed(values, path) for path in each(_leaves(values))}
    with ThreadPoolExecutor(max_workers=4) as pool:  # one helm process each, side by side
        renders = dict(zip(variants, pool.map(lambda v: render(version, values=v), variants.values()), strict=True))
    for path, changed in variants.items():
        rendered = by_kind(renders[path])["Deployment/karpenter"]["spec"]["template"]
        rule = _pod_template_changes({"Values": json.dumps(values)}, {"Values": json.dumps(changed)})
        if (rendered != pods) != bool(rule):
            mismatches.append(f"{'.'.join(path)}: chart {rendered != pods}, review {bool(rule)}")
        if rendered == pods:
            kept.append(".".join(path))
    assert mismatches == ["serviceAccount.create: chart False, review True"]
    assert kept == [
        "serviceAccount.create",
        "serviceAccount.annotations.eks.amazonaws.com/role-arn",
        "replicas",
        "podDisruptionBudget.name",
        "podDisruptionBudget.maxUnavailable",
        "serviceMonitor.enabled",
    ]
