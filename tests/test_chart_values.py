"""``controller.chartValues`` (constructs_lib/karpenter/chart_values.py): any value of the release's karpenter chart,
checked against the release's chart values schema, the app's own values refused naming the setting that writes them,
deep-merged into the HelmChart custom resource's Values and rendered through the real chart by the pinned Helm; and
the review's rule of which values roll the controller's pods, against a render of every key of the chart."""

from __future__ import annotations

import copy
import inspect
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from constructs_lib.karpenter import chart_values, releases
from constructs_lib.karpenter.release import app_values
from constructs_lib.karpenter.specs.controller import ControllerSpec
from karpenter_stack.config import ConfigError, load_config
from karpenter_stack.config.validate import CHART_VALUE_OWNERS
from tests.conftest import synth
from tooling.releases.chart_render import by_kind, release_values, render
from tooling.review.kubernetes import _helm_effects, _pod_template_changes

VERSION = "1.14.1"
# What a team sets that the typed settings do not offer (issue 43), on the node group hosting (the app writes a
# toleration there).
TEAM_VALUES = {
    "replicas": 3,
    "tolerations": [{"key": "team.example.com/system", "operator": "Exists", "effect": "NoSchedule"}],
    "podAnnotations": {"example.com/team": "platform"},
    "controller": {"env": [{"name": "HTTPS_PROXY", "value": "http://proxy.example.com:3128"}]},
    "settings": {"vmMemoryOverheadPercent": 0.1, "reservedENIs": "1"},
}


def refusal(chart: dict) -> str:
    with pytest.raises(ConfigError) as err:
        load_config({"controller": {"chartValues": chart}})
    return str(err.value)


@pytest.mark.parametrize(
    ("chart", "message"),
    [
        (
            {"replicas": "two"},
            'controller.chartValues.replicas: "two" is not an integer (karpenter 1.14.1 chart values)',
        ),
        (
            {"settings": {"reservedENIs": 1}},
            "controller.chartValues.settings.reservedENIs: 1 is not a string (karpenter 1.14.1 chart values)",
        ),
        (
            {"podDisruptionBudget": {"maxUnavailable": True}},
            "controller.chartValues.podDisruptionBudget.maxUnavailable: true is not an integer or a string "
            "(karpenter 1.14.1 chart values)",
        ),
        (
            {"settings": {"interruptionqueue": "q"}},
            "controller.chartValues.settings.interruptionqueue: not a value of the karpenter 1.14.1 chart; did you "
            "mean 'interruptionQueue'? (there: batchMaxDuration, batchIdleDuration, preferencePolicy, minValuesPolicy, "
            "clusterCABundle, clusterName, clusterEndpoint, isolatedVPC, eksControlPlane, vmMemoryOverheadPercent, "
            "interruptionQueue, enableZonalShift, reservedENIs, ignoreDRARequests, disableClusterStateObservability, "
            "disableDryRun, amiRefreshInterval, subnetRefreshInterval, featureGates)",
        ),
        (
            {"settings": {"clusterName": "other"}},
            "controller.chartValues.settings.clusterName: the app writes settings.clusterName from clusterName; set "
            "clusterName instead",
        ),
        (
            {"serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/x"}}},
            "controller.chartValues.serviceAccount.annotations.eks.amazonaws.com/role-arn: the app writes "
            "serviceAccount.annotations.eks.amazonaws.com/role-arn from controllerCredentials; set controllerCredentials "
            "instead",
        ),
        (
            {"settings": {"featureGates": {"nodeRepair": True}}},
            "controller.chartValues.settings.featureGates.nodeRepair: the app writes settings.featureGates.nodeRepair "
            "from controller.featureGates; set controller.featureGates instead",
        ),
        (
            {"controller": {"resources": {"limits": {"memory": "2Gi"}}}},
            "controller.chartValues.controller.resources.limits.memory: the app writes controller.resources.limits."
            "memory from controller.memory; set controller.memory instead",
        ),
        (
            {"logLevel": "debug"},
            "controller.chartValues.logLevel: the app writes logLevel from controller.logLevel; set controller.logLevel "
            "instead",
        ),
        (
            {"podAnnotations": {"karpenter-stack.cdk/kubernetes-version": "1.35"}},
            "controller.chartValues.podAnnotations.karpenter-stack.cdk/kubernetes-version: the app writes "
            "podAnnotations.karpenter-stack.cdk/kubernetes-version from controllerHosting; set controllerHosting instead",
        ),
        (
            {"serviceAccount": {"create": False}},
            "controller.chartValues.serviceAccount.create: the app writes serviceAccount.create = true; it is not a "
            "value to change",
        ),
        (
            {"controller": {"env": [{"name": "AWS_REGION", "value": "eu-west-1"}]}},
            "controller.chartValues.controller.env[0]: the app writes the entry named 'AWS_REGION'; use another name",
        ),
    ],
)
def test_a_value_the_chart_does_not_take_or_the_app_writes_is_refused_in_one_line(chart, message):
    assert refusal(chart) == f"{message} (from cdk.json)"


def test_the_values_a_team_sets_are_accepted_and_reach_the_helm_charts_values():
    config = load_config({"controller": {"chartValues": TEAM_VALUES}, "controllerHosting": "nodegroup"})
    assert config.controller.chart_values == TEAM_VALUES
    values = release_values(synth(controller={"chartValues": TEAM_VALUES}, controllerHosting="nodegroup").json)
    assert values["replicas"] == 3
    # Lists the app writes keep its entries, the map's after them.
    assert values["tolerations"] == [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": "team.example.com/system", "operator": "Exists", "effect": "NoSchedule"},
    ]
    assert values["controller"]["env"] == [
        {"name": "AWS_REGION", "value": "${Ref:AWS::Region}"},
        {"name": "HTTPS_PROXY", "value": "http://proxy.example.com:3128"},
    ]
    assert values["podAnnotations"] == {
        "karpenter-stack.cdk/controller-credentials": "irsa",
        "example.com/team": "platform",
    }
    assert values["settings"]["vmMemoryOverheadPercent"] == 0.1 and values["settings"]["reservedENIs"] == "1"
    assert values["settings"]["clusterName"] == "eks-karpenter"  # the app's, beside the map's
    assert values["podDisruptionBudget"] == {"name": "karpenter", "maxUnavailable": 1}


def test_the_team_values_render_through_the_real_chart():
    values = release_values(synth(controller={"chartValues": TEAM_VALUES}, controllerHosting="nodegroup").json)
    deployment = by_kind(render(VERSION, values=values))["Deployment/karpenter"]
    pod = deployment["spec"]["template"]
    container = pod["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert deployment["spec"]["replicas"] == 3
    assert pod["spec"]["tolerations"] == values["tolerations"]
    assert pod["metadata"]["annotations"]["example.com/team"] == "platform"
    assert env["HTTPS_PROXY"] == "http://proxy.example.com:3128" and env["AWS_REGION"] == "${Ref:AWS::Region}"
    assert env["VM_MEMORY_OVERHEAD_PERCENT"] == "0.1" and env["RESERVED_ENIS"] == "1"
    assert env["CLUSTER_NAME"] == "eks-karpenter"


def test_what_the_app_owns_is_found_where_it_builds_the_values():
    owned = {
        ".".join(p): o for p, o in chart_values.ownership(frozenset({"karpenter-stack.cdk/kubernetes-version"})).items()
    }
    assert owned == {
        "serviceAccount.create": "",
        "serviceAccount.name": "service_account",
        "serviceAccount.annotations.eks.amazonaws.com/role-arn": "role_arn",
        "settings.clusterName": "cluster_name",
        "settings.interruptionQueue": "interruption_queue",
        **{f"settings.featureGates.{gate}": "controller.featureGates" for gate in releases.feature_gates(VERSION)},
        "settings.batchMaxDuration": "controller.batchMaxDuration",
        "settings.batchIdleDuration": "controller.batchIdleDuration",
        "settings.enableZonalShift": "controller.zonalShift",
        "podAnnotations.karpenter-stack.cdk/controller-credentials": "role_arn",
        "podAnnotations.karpenter-stack.cdk/kubernetes-version": "pod_annotations",
        "dnsPolicy": "dns_policy",
        **{
            f"controller.resources.{k}.{r}": f"controller.{r}"
            for k in ("requests", "limits")
            for r in ("cpu", "memory")
        },
        "controller.env": "",
        "tolerations": "tolerations",
        "serviceMonitor.enabled": "service_monitor",
        "logLevel": "controller.logLevel",
    }
    # Every parameter of app_values and every typed field of the controller is probed, and named by the construct
    # and by the app.
    parameters = set(inspect.signature(app_values).parameters) - {"controller"}
    assert parameters == set(chart_values._PROBES) | {"pod_annotations"}
    assert set(ControllerSpec.model_fields) - {"chart_values"} == set(chart_values._CONTROLLER_PROBES)
    assert set(chart_values.PROP_OWNERS) == set(CHART_VALUE_OWNERS) == parameters | {""}


def test_the_construct_refuses_them_naming_its_props():
    spec = ControllerSpec.model_validate({"chartValues": {"settings": {"clusterName": "x"}, "replicas": 5}})
    assert chart_values.problems(spec.chart_values, VERSION) == [
        "controller.chartValues.settings.clusterName: the app writes settings.clusterName from cluster_name; set "
        "cluster_name instead"
    ]
    assert chart_values.problems({"podAnnotations": {"a": "b"}}, VERSION, pod_annotations=["a"]) == [
        "controller.chartValues.podAnnotations.a: the app writes podAnnotations.a from controller_pod_annotations; set "
        "controller_pod_annotations instead"
    ]
    assert chart_values.problems({"replica": 1}, "9.9.9") == []  # a release not imported: its chart is unknown here


def test_the_count_of_chart_values_now_reachable():
    """Every key of the chart values schema (a leaf, or a map the chart passes through whole) but those the app
    writes from a setting of its own or keeps: the closing note's count."""

    def keys(node: dict, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
        props = node.get("properties")
        return [k for key, child in props.items() for k in keys(child, (*path, key))] if props else [path]

    schema = keys(releases.chart_values_schema(VERSION))
    owned = chart_values.ownership(frozenset({"karpenter-stack.cdk/kubernetes-version"}))
    taken = {p for p in schema if any(p[: len(o)] == o or o[: len(p)] == p for o in owned)}
    # (Maps and lists that take the map's entries beside the app's.)
    shared = {("podAnnotations",), ("tolerations",), ("controller", "env"), ("controller", "resources")}
    shared.add(("serviceAccount", "annotations"))
    assert len(schema) == 77
    assert sorted(".".join(p) for p in taken - shared) == [
        "dnsPolicy",
        "logLevel",
        "serviceAccount.create",
        "serviceAccount.name",
        "serviceMonitor.enabled",
        *[f"settings.{k}" for k in ("batchIdleDuration", "batchMaxDuration", "clusterName", "enableZonalShift")],
        *[f"settings.featureGates.{g}" for g in sorted(releases.feature_gates(VERSION))],
        "settings.interruptionQueue",
    ]
    assert len(schema) - len(taken - shared) == 61


# --- which changed values roll the controller's pods: the review's rule against the chart ---------------------------


# The chart renders only these keys of controller.securityContext (appArmorProfile, seLinuxOptions, seccompProfile).
SECURITY_CONTEXT = {"seccompProfile": {"type": "RuntimeDefault"}}


def _probe(node: dict, default: object, path: tuple[str, ...]) -> object:
    """Another value of a key of the chart values schema."""
    if path == ("controller", "securityContext"):
        return SECURITY_CONTEXT
    kind = node.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "boolean":
        return not default
    if kind == "integer":
        return int(default or 0) + 1  # type: ignore[call-overload]
    if kind == "number":
        return 0.5
    if kind == "string":
        return f"{default or ''}probe"
    if kind == "array":
        return [{"name": "probe", "key": "probe", "operator": "Exists", "mountPath": "/probe"}]
    if kind == "object":
        return {"probe": "probe"}
    return 30  # no type: terminationGracePeriodSeconds, sampleLimit


def test_the_values_the_review_says_roll_the_pods_are_the_ones_in_the_rendered_pod_template(default):
    """Each key of the chart values schema, changed alone from the app's values (with a sidecar container, so that
    sidecarVolumeMounts render), changes the rendered Deployment's pod template exactly when the review's rule says
    it rolls the pods -- but serviceAccount.create (the rule errs on the safe side; the app writes it)."""
    base = release_values(default.json)
    base["controller"]["sidecarContainer"] = [{"name": "sidecar", "image": "public.ecr.aws/docker/library/busybox"}]
    schema = releases.chart_values_schema(VERSION)

    def keys(node: dict, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], dict]]:
        props = node.get("properties")
        return [k for key, child in props.items() for k in keys(child, (*path, key))] if props else [(path, node)]

    variants = {}
    for path, node in keys(schema):
        changed, holder = copy.deepcopy(base), None
        holder = changed
        for key in path[:-1]:
            holder = holder.setdefault(key, {})
        holder[path[-1]] = _probe(node, holder.get(path[-1], node.get("default")), path)
        variants[path] = changed
    with ThreadPoolExecutor(max_workers=4) as pool:
        renders = dict(zip(variants, pool.map(lambda v: render(VERSION, values=v), variants.values()), strict=True))

    def pod_template(rendered: str) -> dict:
        (deployment,) = [o for name, o in by_kind(rendered).items() if name.startswith("Deployment/")]
        return deployment["spec"]["template"]  # (nameOverride renames it)

    pods = pod_template(render(VERSION, values=base))
    mismatches, outside = [], []
    for path, changed in variants.items():
        rendered = pod_template(renders[path])
        rule = _pod_template_changes({"Values": json.dumps(base)}, {"Values": json.dumps(changed)})
        if (rendered != pods) != bool(rule):
            mismatches.append(f"{'.'.join(path)}: chart {rendered != pods}, review {bool(rule)}")
        if rendered == pods:
            outside.append(".".join(path))
    assert mismatches == ["serviceAccount.create: chart False, review True"]
    assert outside == [
        "additionalLabels",
        "additionalAnnotations",
        "service.annotations",
        "serviceAccount.create",
        "serviceAccount.annotations",
        "additionalClusterRoleRules",
        "serviceMonitor.enabled",
        "serviceMonitor.additionalLabels",
        "serviceMonitor.relabelings",
        "serviceMonitor.metricRelabelings",
        "serviceMonitor.endpointConfig",
        "serviceMonitor.sampleLimit",
        "replicas",
        "revisionHistoryLimit",
        "strategy",
        "podDisruptionBudget.name",
        "podDisruptionBudget.maxUnavailable",
    ]


def test_the_review_names_the_changed_values_that_roll_the_pods():
    old = {
        "Release": "karpenter",
        "Namespace": "kube-system",
        "Version": VERSION,
        "Values": json.dumps({"replicas": 2}),
    }
    new = {
        **old,
        "Values": json.dumps({"replicas": 3, "podAnnotations": {"a": "b"}, "settings": {"reservedENIs": "1"}}),
    }
    effects = _helm_effects(old, new, set())[2]
    assert effects[-1] == (
        "the Karpenter controller pods restart one at a time (PodDisruptionBudget maxUnavailable 1); provisioning "
        "pauses during the leader handover; the values in their pod template that change: podAnnotations.a, "
        "settings.reservedENIs"
    )
    scaled = {**old, "Values": json.dumps({"replicas": 3, "strategy": {"type": "Recreate"}})}
    assert _helm_effects(old, scaled, set())[2][-1].startswith("the controller's pod template is unchanged")
