"""Review: what deploying the current synth over your accepted baseline would do.

For every stack (nested stacks included): resources added, removed and changed, and for each change
whether CloudFormation updates it in place, replaces it, or the deploy fails -- from the resource type's
own schema (its create-only properties, as shipped with cfn-lint) and, for aws-cdk's EKS custom resources,
from what their handlers do (aws-cdk-lib 2.275's cluster-resource and kubectl handlers; see
CUSTOM_RESOURCE_RULES). A logical-id change is a replacement. Replacing or removing a stateful or slow
resource (cluster, VPC, subnets, KMS keys, node role, queue, nested stacks, ...) is flagged and makes the
review fail unless the change acknowledges it (``acknowledged-replacements.yaml`` or ``--acknowledge``).
Kubernetes-level effects are named in plain words: Helm upgrades, NodePools whose nodes Karpenter replaces
by drift, objects deleted.

The baseline is yours: the templates of the configuration you last accepted (``make accept``, into
``baseline/``), committed with the configuration -- what is deployed. Before you have accepted one, the
review lists what a first deploy would create and passes.

    make review                                   # your configuration (cdk.json) against your baseline
    make review BASE=origin/main                  # against the baseline of another revision (CI: the PR's base)
    make review CONTEXT_FILE=examples/gpu.json    # what adopting an example's settings would do
    make accept                                   # after reviewing: the current synth becomes the baseline

One module per job: ``baseline`` (the accepted templates, from the working tree or a git revision; accept),
``synth`` (the user's configuration synthesized for the review), ``values`` (CloudFormation values: references,
paths, comparisons), ``diff`` (a template's resources added, removed, replaced or updated; create-only
properties; replacements through references), ``cluster`` (the EKS cluster's handler rules, Fargate evictions,
node groups and add-ons), ``kubernetes`` (manifests, Helm releases, drift, the CRDs' transition rules),
``stacks`` (stack by stack: nested, new, gone and renamed stacks; one-way changes), ``acknowledgments``,
``render`` (Markdown) and ``cli`` (the command); ``model`` holds what they share. ``freshness`` is the gate's check
in CI that the committed baseline is the synth of the configuration (tests/test_your_configuration.py).

Beside them, what the review relies on and what puts it to the test: CloudFormation's lifecycle semantics
(``lifecycle_model``), the deploy simulator (``simulator/``, with aws-cdk's real cluster handler as its oracle,
``simulator/handlers/``) and the transition matrix (``transitions``, ``make transitions``: its moves in
``transition_moves``, what each verdict must agree with in ``transition_checks``).
"""

# Karpenter's drift tables and the cluster's authentication-mode rule, as the review reads them.
from constructs_lib.karpenter.specs.node_class import CLASS_DYNAMIC
from constructs_lib.karpenter.specs.node_pool import POOL_BEHAVIORAL, POOL_DYNAMIC
from karpenter_stack.cluster_updates import auth_mode_refusal

from .acknowledgments import ACKNOWLEDGMENTS, acknowledgments
from .baseline import BASELINE, ROOT, accept, baseline_templates
from .cli import main
from .cluster import FARGATE_PROFILES, ONE_WAY, ONE_WAY_VERSION, _cluster_change, _rolling_effects
from .diff import _aws_change, compare_template, create_only_paths
from .kubernetes import (
    CONTROLLER_RESTARTS,
    _helm_effects,
    _objects,
    _pod_template_changes,
    crd_refusals,
    kubernetes_effects,
)
from .model import (
    CLUSTER,
    CUSTOM_RESOURCE_RULES,
    FARGATE,
    HELM,
    INTERRUPTING,
    MANIFEST,
    NODE_ROLE_IDS,
    ONE_WAY_MARK,
    PATCH,
    STATEFUL,
    Change,
    ReviewError,
    StackReport,
)
from .render import first_deploy, render
from .stacks import review, stack_names
from .synth import synthesized_templates
from .values import _at, references

# What the tests and transitions.py read of the review (the underscored ones are its rules, tested alone).
__all__ = [
    "ACKNOWLEDGMENTS",
    "BASELINE",
    "CLASS_DYNAMIC",
    "CONTROLLER_RESTARTS",
    "CLUSTER",
    "CUSTOM_RESOURCE_RULES",
    "FARGATE",
    "FARGATE_PROFILES",
    "HELM",
    "INTERRUPTING",
    "MANIFEST",
    "NODE_ROLE_IDS",
    "ONE_WAY",
    "ONE_WAY_MARK",
    "ONE_WAY_VERSION",
    "PATCH",
    "POOL_BEHAVIORAL",
    "POOL_DYNAMIC",
    "ROOT",
    "STATEFUL",
    "Change",
    "ReviewError",
    "StackReport",
    "_at",
    "_aws_change",
    "_cluster_change",
    "_helm_effects",
    "_objects",
    "_pod_template_changes",
    "_rolling_effects",
    "accept",
    "acknowledgments",
    "auth_mode_refusal",
    "baseline_templates",
    "compare_template",
    "crd_refusals",
    "create_only_paths",
    "first_deploy",
    "kubernetes_effects",
    "main",
    "references",
    "render",
    "review",
    "stack_names",
    "synthesized_templates",
]
