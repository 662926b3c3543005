"""Step 3 of 4, validate: one environment's layered settings into an :class:`AppConfig`, or a ConfigError naming
every problem and the layer its setting came from.

The model checks each setting on its own (type, form, range: ``model``). The rules across settings are the
topic validators of ``cluster_rules`` and ``node_rules``: small functions, each returning its problems (one line
each, naming the settings), registered in :data:`RULES`. Then the versions are checked against what this app
supports, and the warnings (what the user should know that does not stop the synth: ``synth_warnings``) are
collected. The delivery pipeline is checked against the environments in ``pipeline_rules``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from constructs_lib.karpenter import template_parity
from constructs_lib.karpenter.names import KUBERNETES_VERSION_POD_ANNOTATION
from constructs_lib.karpenter.node_manifests import ManifestError, read_node_manifests
from constructs_lib.karpenter.specs.rules import chart_value_problems, release_problems, role_name

from .. import versions
from .access_steps import kept_on_aws_auth, move_steps
from .cluster_rules import (
    administrators,
    alarm_topic,
    api_endpoint,
    controller,
    distinct_administrators,
    existing_cluster,
    nat_gateways,
    partitions,
    production_administrators,
    production_endpoint,
    vpc_environment,
)
from .errors import BUILT_IN, ConfigError, format_errors, with_origins
from .file_messages import in_file_terms
from .merge import Layered
from .model import AppConfig
from .node_rules import (
    default_class_left_out,
    delivery_fits,
    distinct_names,
    existing_node_roles,
    node_images,
    node_lists,
    own_roles_fit,
    pinned_amis,
    pools_fit_classes,
    production_nodes,
    user_data_fits,
)
from .synth_warnings import WARNINGS, _placed

Rule = Callable[[AppConfig], list[str]]


def validate(layered: Layered, today: date | None) -> AppConfig:
    """The environment's configuration, its warnings attached; ``today`` decides EKS support (default: the
    current date)."""
    prefix, origins = layered.prefix, layered.origins

    def fail(message: str) -> ConfigError:
        return ConfigError(with_origins(message, prefix, origins))

    try:
        config = AppConfig.model_validate(layered.settings)
    except ValidationError as err:
        raise fail(format_errors(err, prefix)) from None
    config, origins, file_warnings, file_notes = with_node_manifests(config, layered)
    problems = rule_problems(config)
    if problems:
        raise fail("\n".join(_in_files(line, config, layered) or prefix + line for line in problems))
    try:
        support = _check_versions(config, today)
    except versions.VersionError as err:
        raise fail(prefix + str(err)) from None
    released = chosen_release(config) or chart_values_fit(config)
    if released:  # what the chosen Karpenter release does not know (after the version checks: an imported one)
        raise fail("\n".join(_in_files(line, config, layered) or prefix + line for line in released))
    amis = node_images(config)
    if amis:  # after the version checks: a version this app supports
        raise fail("\n".join(_in_files(line, config, layered) or prefix + line for line in amis))
    warnings = [support] if support else []
    warnings += [w for warn in WARNINGS for w in warn(config, origins)]
    config._warnings = (*(_placed(w, prefix, origins) for w in warnings), *file_warnings)
    config._notes = tuple(file_notes)
    config._access_steps = tuple(move_steps(config)) if kept_on_aws_auth(config, origins) else ()
    return config


_NODE_LISTS = ("node_classes", "node_pools", "node_overlays")


def with_node_manifests(config: AppConfig, layered: Layered) -> tuple[AppConfig, dict[str, str], list[str], list[str]]:
    """The configuration with the objects of nodeManifests after the typed node classes, pools and overlays (a kind
    the files define and no layer sets loses its built-in default), the origins with the files' layer for the
    node settings they fill, the warnings about the files' objects (where one is not what the app recommends) and
    the notes (what the app left out); ConfigError with one line per file and object refused, naming nodeManifests' layer (the
    production profile refuses what its guarantees exclude)."""
    origins = dict(layered.origins)
    if not config.node_manifests:
        return config, origins, [], []
    try:
        files = read_node_manifests(
            config.node_manifests,
            cluster_name=config.cluster_name,
            kubernetes_version=config.kubernetes_version,
            variables=config.node_manifest_variables,
            role_names=config.node_manifest_roles,
            own_roles=[role_name(arn) for arn in config.existing_node_roles],
        )
        typed = {
            name: getattr(config, name) if name in config.model_fields_set or not getattr(files, name) else []
            for name in _NODE_LISTS
        }
        files.check_with(typed["node_classes"], typed["node_pools"], typed["node_overlays"])
    except ManifestError as err:
        raise ConfigError("\n".join(_from_files(line, layered) for line in err.problems)) from None
    for name in _NODE_LISTS:
        if getattr(files, name):
            origins.setdefault(to_camel(name), origins.get("nodeManifests", BUILT_IN))
    merged = config.model_copy(update={name: [*typed[name], *getattr(files, name)] for name in _NODE_LISTS})
    merged._node_sources = {
        to_camel(name): (*([""] * len(typed[name])), *(o.where for o in files.objects if o.kind == kind))
        for name, kind in zip(_NODE_LISTS, ("EC2NodeClass", "NodePool", "NodeOverlay"), strict=True)
    }
    production = config.profile == "production"
    refused = [
        _from_files(f"{o.where}: {p.path}: {p.message}; the production profile requires it", layered)
        for o in files.objects
        for p in o.opinions
        if production and p.guaranteed
    ]
    if refused:
        raise ConfigError("\n".join(refused))
    warnings = [
        _from_files(f"{o.where}: {p.path}: {p.message}", layered)
        for o in files.objects
        for p in o.opinions
        if not (production and p.guaranteed)
    ]
    notes = [_from_files(line, layered) for line in [*files.notes, *(n for o in files.objects for n in o.note_lines())]]
    return merged, origins, warnings, notes


def _in_files(line: str, config: AppConfig, layered: Layered) -> str | None:
    """A rule's problem of an object of nodeManifests, named in its file and its manifest's terms (file_messages);
    None for any other problem."""
    named = in_file_terms(line, config)
    return _from_files(named, layered) if named is not None else None


def _from_files(line: str, layered: Layered) -> str:
    """A problem of a file, ending with where nodeManifests was set (and the environment, when it is not there)."""
    layer, origin = layered.prefix.removesuffix("."), layered.origins.get("nodeManifests", BUILT_IN)
    where = origin if not layer or origin == layer else f"{origin}; environment {layer.split('.', 1)[1]}"
    return f"{line} (from {where})"


# Who writes each chart value the app writes, by the parameter of constructs_lib/karpenter/release.py app_values that
# writes it, as the settings name it ("": the app itself): controller.chartValues may not set them.
CHART_VALUE_OWNERS = {
    "cluster_name": "clusterName",
    "interruption_queue": "clusterName (the interruption queue's name)",
    "service_account": "karpenterServiceAccount",
    "role_arn": "controllerCredentials",
    "dns_policy": "controllerHosting",
    "tolerations": "controllerHosting",
    "service_monitor": "serviceMonitor",
    "pod_annotations": "controllerHosting",
    "": "the app",
}
# The pod annotations a hosting gives the controller (constructs_lib/controller_hosting.py: Fargate's).
HOSTING_POD_ANNOTATIONS = (KUBERNETES_VERSION_POD_ANNOTATION,)


def chosen_release(config: AppConfig) -> list[str]:
    """What the chosen Karpenter release does not know of the node objects and feature gates (specs.rules)."""
    return release_problems(
        config.node_classes,
        config.node_pools,
        config.node_overlays,
        config.controller.feature_gates,
        config.karpenter_version,
    )


def chart_values_fit(config: AppConfig) -> list[str]:
    """What the chosen release's chart or the app refuses of controller.chartValues (specs.rules)."""
    return chart_value_problems(
        config.controller.chart_values, config.karpenter_version, HOSTING_POD_ANNOTATIONS, CHART_VALUE_OWNERS
    )


def rule_problems(config: AppConfig) -> list[str]:
    """The problems of the first rule that finds any (one line each; empty: the settings fit together)."""
    return next((problems for rule in RULES if (problems := rule(config))), [])


def _check_versions(config: AppConfig, today: date | None) -> str | None:
    """VersionError for a version this app cannot build; the EKS support warning, if any."""
    versions.eks_kubernetes_version(config.kubernetes_version)
    warning = versions.check_eks_support(config.kubernetes_version, today or date.today())
    widened = template_parity.widening_problems(versions.karpenter_template(config.karpenter_version))
    if widened:  # the template's own problems, not a setting's: one line
        raise versions.VersionError("; ".join(widened))
    versions.check_compatibility(config.karpenter_version, config.kubernetes_version)
    versions.KubectlLayer.for_version(config.kubernetes_version).load()
    versions.addon_versions(config.kubernetes_version, config.pinned_addon_versions)
    return warning


# The rules across settings, in the order they run: a configuration is told the problems of the first rule
# that finds any (the order in which these messages have always come).
RULES: tuple[Rule, ...] = (
    existing_cluster,
    existing_node_roles,
    own_roles_fit,
    api_endpoint,
    production_endpoint,
    alarm_topic,
    vpc_environment,
    controller,
    administrators,
    partitions,
    distinct_administrators,
    nat_gateways,
    pinned_amis,
    production_nodes,
    node_lists,
    distinct_names,
    default_class_left_out,
    pools_fit_classes,
    user_data_fits,
    delivery_fits,
    production_administrators,  # last: what else a production configuration needs is said first
)
