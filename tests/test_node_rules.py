"""The rules across Karpenter's objects run in the ``Karpenter`` construct itself: a CDK app of a user's own
that builds it with specs that do not fit together gets one error naming the object and the field, before
anything is added to its stack. The app's configuration runs the same rule functions (its messages, with where
each setting came from, are in tests/test_bad_configuration.py); no such rule lives in the app only."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.karpenter import Karpenter, KarpenterProps, NodeAuthorization, NodeSpecsError
from constructs_lib.karpenter.specs import rules
from constructs_lib.karpenter.specs.controller import ControllerSpec
from constructs_lib.karpenter.specs.node_class import NodeClassSpec
from constructs_lib.karpenter.specs.node_overlay import NodeOverlaySpec
from constructs_lib.karpenter.specs.node_pool import NodePoolSpec
from constructs_lib.karpenter.specs.selector_terms import CapacityReservationTermSpec
from karpenter_stack import versions
from tests.bare import CLUSTER_NAME, bare_stack, imported_cluster
from tests.sources import walked

ROOT = Path(__file__).resolve().parent.parent
GENERAL = NodeClassSpec(name="general")
RESERVED = NodeClassSpec(
    name="reserved", capacity_reservation_selector_terms=[CapacityReservationTermSpec(id="cr-0123456789abcdef0")]
)
OVERLAY = NodeOverlaySpec(name="cheap", price="0.5")


def _props(**options: Any) -> KarpenterProps:
    """Props as a user's own app writes them (the cluster is set by :func:`_build`)."""
    defaults: dict[str, Any] = {
        "node_classes": [GENERAL],
        "node_pools": [NodePoolSpec(name="general", node_class="general")],
    }
    return KarpenterProps(
        cluster=options.pop("cluster"),
        cluster_name=CLUSTER_NAME,
        version="1.14.1",
        template_file=versions.karpenter_template("1.14.1"),
        node_authorization=NodeAuthorization.ACCESS_ENTRY,
        **{**defaults, **options},
    )


def _build(**options: Any) -> tuple[Any, Karpenter]:
    stack = bare_stack()
    return stack, Karpenter(stack, "Karpenter", _props(cluster=imported_cluster(stack), **options))


# Each rule of constructs_lib.karpenter.specs.rules, broken in a construct built directly: (props, the exact message).
CASES: dict[str, tuple[dict[str, Any], str]] = {
    "two classes of one name": (
        {"node_classes": [GENERAL, NodeClassSpec(name="general", ami_alias="bottlerocket@latest")]},
        "nodeClasses has duplicate names: general",
    ),
    "two pools of one name": (
        {"node_pools": [NodePoolSpec(name="p", node_class="general")] * 2},
        "nodePools has duplicate names: p",
    ),
    "two overlays of one name": (
        {"node_overlays": [OVERLAY, OVERLAY], "controller": ControllerSpec(feature_gates={"nodeOverlay": True})},
        "nodeOverlays has duplicate names: cheap",
    ),
    "a pool whose class is not given": (
        {
            "node_pools": [
                NodePoolSpec(name="general", node_class="general"),
                NodePoolSpec(name="gpu", node_class="gpu"),
            ]
        },
        "nodePools 'gpu' refers to nodeClass 'gpu', which is not in nodeClasses (general)",
    ),
    "reserved capacity without reservations": (
        {"node_pools": [NodePoolSpec(name="r", node_class="general", capacity_types=["reserved", "on-demand"])]},
        "nodePools 'r' allows the reserved capacity type, but its nodeClass 'general' has no "
        "capacityReservationSelectorTerms: it would launch nothing reserved",
    ),
    "reserved capacity with its gate off": (
        {
            "node_classes": [RESERVED],
            "node_pools": [NodePoolSpec(name="r", node_class="reserved", capacity_types=["reserved"])],
            "controller": ControllerSpec(feature_gates={"reservedCapacity": False}),
        },
        "nodePools 'r' allows the reserved capacity type, which Karpenter ignores while "
        "controller.featureGates.reservedCapacity is false",
    ),
    "a Windows pool that allows only arm64": (
        {
            "node_classes": [NodeClassSpec(name="win", ami_alias="windows2022@latest")],
            "node_pools": [NodePoolSpec(name="win", node_class="win", architectures=["arm64"])],
        },
        "nodePools 'win' uses the Windows nodeClass 'win' but allows only arm64: EKS's Windows AMIs are amd64 "
        "only, so it would launch nothing",
    ),
    "static capacity with its gate off": (
        {"node_pools": [NodePoolSpec(name="fixed", node_class="general", replicas=2)]},
        "nodePools 'fixed' set replicas (static capacity), which Karpenter ignores unless "
        "controller.featureGates.staticCapacity is true",
    ),
    "overlays with their gate off": (
        {"node_overlays": [OVERLAY]},
        "nodeOverlays 'cheap': Karpenter ignores node overlays unless controller.featureGates.nodeOverlay is true",
    ),
    "a pinned AMI older than the Kubernetes version": (
        {"node_classes": [NodeClassSpec(name="general", ami_alias="al2023@v20260301")], "kubernetes_version": "1.36"},
        "nodeClasses[0].amiAlias 'al2023@v20260301' has no AMI for Kubernetes 1.36: EKS-optimized AMIs for 1.36 "
        "start with its EKS release (2026-04-22 at the earliest); pin al2023@v20260422 or later, or al2023@latest",
    ),
    "Amazon Linux 2 after 1.32": (
        {"node_classes": [GENERAL, NodeClassSpec(name="old", ami_alias="al2@latest")], "kubernetes_version": "1.35"},
        "nodeClasses[1].amiAlias 'al2@latest': EKS publishes no Amazon Linux 2 AMIs for Kubernetes 1.35 (the last "
        "is 1.32); use al2023 or bottlerocket",
    ),
    "user data that outgrows EC2's limit with a pool's labels": (
        {
            "node_classes": [
                NodeClassSpec(name="general", user_data="#!/bin/bash\n" + "echo 0123456789abcdef\n" * 560)
            ],
            "node_pools": [
                NodePoolSpec(
                    name="labelled", node_class="general", labels={f"example.com/l{i:03}": "v" * 60 for i in range(40)}
                )
            ],
        },
        "nodeClasses 'general': the user data Karpenter would send to a node of nodePools 'labelled' is 17855 bytes "
        "(the class's userData, 12332 bytes, and Karpenter's al2023 part with the pool's labels, taints and the "
        "class's kubelet settings): EC2 takes at most 16384; shorten the user data or the pool's labels",
    ),
    "a Kubernetes version the AMI rule cannot read": (
        {"kubernetes_version": "1.x"},
        "kubernetesVersion '1.x' is not of the form 1.NN (e.g. 1.35)",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_the_construct_refuses_specs_that_do_not_fit_together_before_it_adds_anything(case):
    options, message = CASES[case]
    stack = bare_stack()
    cluster = imported_cluster(stack)
    children = [c.node.id for c in stack.node.children]
    with pytest.raises(NodeSpecsError) as refused:
        Karpenter(stack, "Karpenter", _props(cluster=cluster, **options))
    assert str(refused.value) == f"Bare/Karpenter: {message}"
    assert refused.value.problems == [message]
    assert [c.node.id for c in stack.node.children] == children  # nothing added: no Karpenter, no nested stack


def test_every_problem_of_the_first_rule_that_finds_any_is_named_one_per_line():
    stack = bare_stack()
    props = _props(
        cluster=imported_cluster(stack),
        node_pools=[NodePoolSpec(name="a", node_class="x"), NodePoolSpec(name="b", node_class="y")],
        node_classes=[NodeClassSpec(name="general", ami_alias="al2@latest")],  # the AMI rule runs after the pools'
        kubernetes_version="1.35",
    )
    with pytest.raises(ValueError) as refused:  # a NodeSpecsError is a ValueError, as the specs' own refusals
        Karpenter(stack, "Karpenter", props)
    assert str(refused.value).splitlines() == [
        "Bare/Karpenter: nodePools 'a' refers to nodeClass 'x', which is not in nodeClasses (general)",
        "Bare/Karpenter: nodePools 'b' refers to nodeClass 'y', which is not in nodeClasses (general)",
    ]


def test_without_a_kubernetes_version_the_aliases_are_not_checked_and_with_a_good_one_they_pass():
    _, karpenter = _build(node_classes=[NodeClassSpec(name="general", ami_alias="al2@latest")])
    assert sorted(karpenter.node_classes) == ["general"]
    _, karpenter = _build(
        node_classes=[NodeClassSpec(name="general", ami_alias="al2023@v20260422")], kubernetes_version="1.36"
    )
    assert sorted(karpenter.node_pools) == ["general"]


def _rule_functions() -> dict[str, Callable[..., list[str]]]:
    """The rules of constructs_lib.karpenter.specs.rules: every public function named ``*_problems``."""
    return {
        name: f
        for name, f in inspect.getmembers(rules, inspect.isfunction)
        if name.endswith("_problems") and f.__module__ == rules.__name__
    }


def test_the_construct_runs_every_rule_function(monkeypatch):
    """A rule added to constructs_lib.karpenter.specs.rules and not run by the construct fails here."""
    called: list[str] = []
    functions = _rule_functions()
    for name, function in functions.items():

        def spy(*args: Any, _name: str = name, _function: Any = function, **kwargs: Any) -> list[str]:
            called.append(_name)
            return list(_function(*args, **kwargs))

        monkeypatch.setattr(rules, name, spy)
    _build(kubernetes_version="1.35")
    assert (
        sorted(called)
        == sorted(functions)
        == [
            "ami_problems",
            "chart_value_problems",
            "delivery_problems",
            "name_problems",
            "pool_problems",
            "release_problems",
            "role_problems",
            "user_data_problems",
        ]
    )


# Functions of the app layer that read the node specs and are no rule the construct runs, with why.
APP_OWNED = {
    ("karpenter_stack/baseline.py", "_pool_refusals"): "the deployed baseline's pools: the construct sees no "
    "deployed state",
    ("karpenter_stack/baseline.py", "_node_role_refusals"): "the deployed baseline's Windows pools: the construct sees "
    "no deployed state",
    ("karpenter_stack/cluster_stack.py", "__init__"): "the construct's handles (the demo workload after the pools)",
    ("karpenter_stack/cluster_stack.py", "windows"): "what a created cluster adds for Windows classes, no refusal",
    ("karpenter_stack/cluster_stack.py", "public_subnet_terms"): "an existing VPC's lookup: the construct sees no VPC",
    ("karpenter_stack/config/node_rules.py", "pinned_amis"): "the production profile is the app's",
    ("karpenter_stack/config/node_rules.py", "production_nodes"): "the production profile is the app's",
    ("karpenter_stack/config/node_rules.py", "default_class_left_out"): "the app's own layering (nodeManifests "
    "replaces the built-in class): the construct has no built-in class",
    ("karpenter_stack/config/node_rules.py", "node_lists"): "an environment with nothing to launch is the app's "
    "refusal: the construct builds what it is given (no pool: a stack that adds them elsewhere)",
    ("karpenter_stack/config/node_rules.py", "_selector_reach"): "the production profile's refusals and their warnings",
    ("karpenter_stack/config/node_rules.py", "volume_key_settings"): "where each volume key is written, for the "
    "stack's region and partition (which the construct does not know) and the key owner's warning",
    ("karpenter_stack/config/synth_warnings.py", "_existing_cluster_warnings"): "warnings, not refusals",
    ("karpenter_stack/config/synth_warnings.py", "_production_warnings"): "warnings, not refusals",
    ("karpenter_stack/config/access_steps.py", "move_steps"): "the steps' text (a Windows node role's entry too), "
    "no refusal",
    ("karpenter_stack/config/reference.py", "_needs_release"): "the configuration reference's text, no refusal",
    ("karpenter_stack/config/reference.py", "takes"): "the configuration reference's text, no refusal",
}
_NODE_FIELDS = {"node_classes", "node_pools", "node_overlays", "feature_gates", "chart_values"}


def _node_functions(source: str) -> dict[str, ast.FunctionDef]:
    """The functions of a module that read the node specs (or the feature gates, or the controller's chart values)."""
    return {
        node.name: node
        for node in walked(source)
        if isinstance(node, ast.FunctionDef)
        and {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)} & _NODE_FIELDS
    }


def _delegated_rule(function: ast.FunctionDef) -> str | None:
    """The rule function ``function`` is, when its whole body (after a docstring) returns that rule's call."""
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    match body:
        case [ast.Return(value=ast.Call(func=ast.Name(id=name)))] if name in _rule_functions():
            return name
    return None


def _app_only_node_rules(modules: dict[str, str]) -> tuple[list[str], set[str]]:
    """The functions of ``modules`` (path -> source) that read the node specs, are not APP_OWNED and are not one
    of the construct's rules; and the rule functions the others delegate to."""
    app_only, delegated = [], set()
    for path, source in modules.items():
        for name, function in _node_functions(source).items():
            rule = _delegated_rule(function)
            if rule is not None:
                delegated.add(rule)
            elif (path, name) not in APP_OWNED:
                app_only.append(f"{path}: {name}")
    return app_only, delegated


def _app_modules() -> dict[str, str]:
    return {
        str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
        for p in sorted((ROOT / "karpenter_stack").rglob("*.py"))
    }


def test_the_app_layer_holds_no_node_rule_the_construct_does_not_run():
    """A rule across the node specs belongs in constructs_lib.karpenter.specs.rules (run by the construct); the app's
    configuration only calls it, so its messages can add where each setting came from."""
    modules = _app_modules()
    app_only, delegated = _app_only_node_rules(modules)
    assert app_only == [], (
        "move these rules into constructs_lib/karpenter/specs/rules.py, or list them in APP_OWNED with why"
    )
    assert delegated == set(_rule_functions())  # and every rule is the configuration's too (with its origins)
    for path, name in APP_OWNED:  # no stale exemption
        assert name in _node_functions(modules[path]), f"{path}: {name}"


def test_the_check_finds_a_node_rule_written_in_the_app_only():
    source = '''
def gpu_pools(config):
    """A pool of GPU instances needs a GPU class."""
    return [f"nodePools {p.name}: no GPU class" for p in config.node_pools if "g" in p.instance_categories]


def pools_fit_classes(config):
    return pool_problems(config.node_classes, config.node_pools, config.controller.feature_gates)


def pools_and_more(config):
    return pool_problems(config.node_classes, config.node_pools, {}) + ["nodePools: also this"]
'''
    app_only, delegated = _app_only_node_rules({"karpenter_stack/config/validate.py": source})
    assert app_only == [
        "karpenter_stack/config/validate.py: gpu_pools",
        "karpenter_stack/config/validate.py: pools_and_more",
    ]
    assert delegated == {"pool_problems"}
