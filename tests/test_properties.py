"""Property-based: Hypothesis generates node pools and classes, valid and not. Every configuration the
model accepts emits objects that pass the mirrored schemas and every CEL rule; every one it refuses
fails with one ConfigError, one line per problem naming its setting and layer, and builds nothing."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from karpenter_stack.application import build, new_app
from karpenter_stack.config import ConfigError, load_config
from tests.conftest import TODAY
from tooling.cel_rules import evaluate
from tooling.configurations import PRODUCT_CONTEXT
from tooling.kubernetes_schemas import config_objects, object_violations

KEYS = [
    "topology.kubernetes.io/zone",
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-cpu",
    "karpenter.k8s.aws/instance-size",
    "example.com/team",
    "karpenter.sh/capacity-type",
    "kubernetes.io/arch",
    "karpenter.sh/nodepool",
    "kubernetes.io/hostname",
    "team.karpenter.sh/x",
    "karpenter.k8s.aws/colour",
    "Bad Key",
]
VALUES = st.lists(st.sampled_from(["a", "m7g", "c7i", "4", "16", "-1", "us-east-1a", ""]), max_size=3)
DURATIONS = st.sampled_from(["30s", "5m", "1h30m", "720h", "Never", "0s", "soon", "12m", "13m", "-5m"])

requirement = st.fixed_dictionaries(
    {
        "key": st.sampled_from(KEYS),
        "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte", "Has"]),
        "values": VALUES,
    },
    optional={"minValues": st.integers(min_value=0, max_value=4)},
)
budget = st.fixed_dictionaries(
    {"nodes": st.sampled_from(["10%", "0", "3", "100%", "101%", "ten"])},
    optional={
        "reasons": st.lists(st.sampled_from(["Underutilized", "Empty", "Drifted", "Expired"]), max_size=2),
        "schedule": st.sampled_from(["0 9 * * mon-fri", "@daily", "every day"]),
        "duration": st.sampled_from(["8h", "30m", "1h30m", "1d"]),
    },
)
pool = st.fixed_dictionaries(
    {"name": st.sampled_from(["default", "batch", "gpu.pool", "Bad_Name"])},
    optional={
        "capacityTypes": st.lists(st.sampled_from(["spot", "on-demand", "reserved", "preemptible"]), max_size=3),
        "architectures": st.lists(st.sampled_from(["amd64", "arm64", "riscv"]), max_size=2),
        "nodeClass": st.sampled_from(["default", "windows"]),
        "instanceCategories": st.lists(st.sampled_from(["c", "m", "r", "g"]), max_size=3),
        "minInstanceGeneration": st.integers(min_value=-1, max_value=8),
        "requirements": st.lists(requirement, max_size=3),
        "limits": st.dictionaries(
            st.sampled_from(["cpu", "memory", "nodes"]),
            st.sampled_from(["100", "500m", "64Gi", "1.5", "-1", "1TB"]),
            max_size=2,
        ),
        "weight": st.integers(min_value=0, max_value=101),
        "expireAfter": DURATIONS,
        "terminationGracePeriod": DURATIONS,
        "consolidationPolicy": st.sampled_from(["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced", "Always"]),
        "consolidateAfter": DURATIONS,
        "budgets": st.lists(budget, max_size=2),
        "labels": st.dictionaries(st.sampled_from(KEYS), st.sampled_from(["a", "", "x" * 64]), max_size=2),
        "taints": st.lists(
            st.fixed_dictionaries(
                {
                    "key": st.sampled_from(["dedicated", "example.com/gpu", "bad key"]),
                    "effect": st.sampled_from(["NoSchedule", "NoExecute", "Sometimes"]),
                },
                optional={"value": st.sampled_from(["gpu", "batch"])},
            ),
            max_size=2,
        ),
    },
)
node_class = st.fixed_dictionaries(
    {"name": st.just("default")},
    optional={
        "amiAlias": st.sampled_from(
            [
                "al2023@latest",
                "al2023@v20260801",
                "bottlerocket@latest",
                "al2@latest",
                "windows2022@latest",
                "windows2022@v20260801",
                "ubuntu@latest",
                "al2023",
            ]
        ),
        "rootVolumeSizeGib": st.integers(min_value=0, max_value=20000),
        "rootVolumeType": st.sampled_from(["gp3", "gp2", "io2", "st1"]),
        "metadataHopLimit": st.integers(min_value=0, max_value=65),
        "tags": st.dictionaries(
            st.sampled_from(["team", "aws:owner", "karpenter.sh/nodeclaim", "kubernetes.io/cluster/x", ""]),
            st.just("a"),
            max_size=2,
        ),
        "dataVolumes": st.lists(
            st.fixed_dictionaries(
                {"deviceName": st.sampled_from(["/dev/xvdb", "/dev/sdf", "/dev/xvdf", "/dev/nvme1n1"])},
                optional={
                    "sizeGib": st.integers(min_value=0, max_value=200),
                    "volumeType": st.sampled_from(["gp3", "st1", "io2", "sc9"]),
                    "iops": st.sampled_from([100, 3000, 20000]),
                    "snapshotID": st.sampled_from(["snap-0123456789abcdef0", "snap-1"]),
                },
            ),
            max_size=2,
        ),
        "extraSubnetSelectorTerms": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "id": st.sampled_from(["subnet-0123456789abcdef0", "subnet-x"]),
                    "tags": st.dictionaries(
                        st.sampled_from(["tier", ""]), st.sampled_from(["*", "private", ""]), max_size=2
                    ),
                },
            ),
            max_size=2,
        ),
        "capacityReservationSelectorTerms": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "id": st.sampled_from(["cr-0123456789abcdef0", "cr-1"]),
                    "tags": st.just({"team": "ml"}),
                    "ownerID": st.sampled_from(["111122223333", "me"]),
                    "instanceMatchCriteria": st.sampled_from(["open", "targeted", "any"]),
                },
            ),
            max_size=2,
        ),
    },
)


# Only values each field accepts on its own: most combinations are valid configurations, and what is
# refused is refused for how fields combine (minValues above the values, a schedule without duration).
valid_requirement = st.one_of(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(KEYS[:5]),
            "operator": st.sampled_from(["In", "NotIn"]),
            "values": st.lists(st.sampled_from(["m7g", "c7i", "us-east-1a"]), min_size=1, max_size=3),
        },
        optional={"minValues": st.integers(min_value=1, max_value=3)},
    ),
    st.fixed_dictionaries({"key": st.sampled_from(KEYS[:5]), "operator": st.sampled_from(["Exists", "DoesNotExist"])}),
    st.fixed_dictionaries(
        {
            "key": st.just("karpenter.k8s.aws/instance-cpu"),
            "operator": st.sampled_from(["Gt", "Lt", "Gte", "Lte"]),
            "values": st.sampled_from([["4"], ["16"]]),
        }
    ),
)
VALID_DURATIONS = st.sampled_from(["30s", "5m", "1h30m", "12m"])
valid_pool = st.fixed_dictionaries(
    {"name": st.sampled_from(["default", "batch", "gpu.pool"])},
    optional={
        "capacityTypes": st.lists(
            st.sampled_from(["spot", "on-demand", "reserved"]), min_size=1, max_size=2, unique=True
        ),
        "architectures": st.lists(st.sampled_from(["amd64", "arm64"]), min_size=1, max_size=2, unique=True),
        "instanceCategories": st.lists(st.sampled_from(["c", "m", "r", "g"]), min_size=1, max_size=3, unique=True),
        "minInstanceGeneration": st.integers(min_value=0, max_value=8),
        "requirements": st.lists(valid_requirement, max_size=3, unique_by=lambda r: r["key"]),
        "limits": st.dictionaries(
            st.sampled_from(["cpu", "memory", "nodes"]), st.sampled_from(["100", "500m", "64Gi"]), max_size=2
        ),
        "weight": st.integers(min_value=1, max_value=100),
        "expireAfter": st.sampled_from(["720h", "Never", "30m"]),
        "terminationGracePeriod": VALID_DURATIONS,
        "consolidationPolicy": st.sampled_from(["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]),
        "consolidateAfter": VALID_DURATIONS,
        "budgets": st.lists(
            st.fixed_dictionaries(
                {"nodes": st.sampled_from(["10%", "0", "3"])},
                optional={
                    "reasons": st.lists(
                        st.sampled_from(["Underutilized", "Empty", "Drifted"]), min_size=1, max_size=2, unique=True
                    ),
                    "schedule": st.just("0 9 * * mon-fri"),
                    "duration": st.just("8h"),
                },
            ),
            max_size=2,
        ),
        "labels": st.dictionaries(
            st.sampled_from(["example.com/team", "karpenter.sh/capacity-type", "tier"]),
            st.sampled_from(["a", "web", ""]),
            max_size=2,
        ),
        "taints": st.lists(
            st.fixed_dictionaries(
                {
                    "key": st.sampled_from(["dedicated", "example.com/gpu"]),
                    "effect": st.sampled_from(["NoSchedule", "NoExecute"]),
                },
                optional={"value": st.sampled_from(["gpu", "batch"])},
            ),
            max_size=2,
            unique_by=lambda t: t["key"],
        ),
    },
)
valid_class = st.fixed_dictionaries(
    {"name": st.just("default")},
    optional={
        "amiAlias": st.sampled_from(
            ["al2023@latest", "al2023@v20260801", "bottlerocket@latest", "bottlerocket@v1.50.0", "windows2022@latest"]
        ),
        "rootVolumeSizeGib": st.integers(min_value=20, max_value=16384),
        "rootVolumeType": st.sampled_from(["gp3", "gp2"]),
        "metadataHopLimit": st.integers(min_value=1, max_value=2),
        "tags": st.dictionaries(st.sampled_from(["team", "cost-center"]), st.just("a"), max_size=2),
        "dataVolumes": st.lists(
            st.fixed_dictionaries(
                {
                    "deviceName": st.sampled_from(["/dev/sdf", "/dev/xvdg"]),
                    "sizeGib": st.integers(min_value=125, max_value=1000),
                },
                optional={"volumeType": st.sampled_from(["gp3", "st1", "sc1"])},
            ),
            max_size=2,
            unique_by=lambda v: v["deviceName"],
        ),
        "extraSecurityGroupSelectorTerms": st.lists(
            st.one_of(
                st.fixed_dictionaries({"id": st.just("sg-0123456789abcdef0")}),
                st.fixed_dictionaries({"name": st.just("monitoring")}),
                st.fixed_dictionaries({"tags": st.just({"example.com/role": "*"})}),
            ),
            max_size=2,
        ),
        "capacityReservationSelectorTerms": st.lists(
            st.one_of(
                st.fixed_dictionaries({"id": st.just("cr-0123456789abcdef0")}),
                st.fixed_dictionaries(
                    {"tags": st.just({"team": "ml"})},
                    optional={"instanceMatchCriteria": st.sampled_from(["open", "targeted"])},
                ),
            ),
            max_size=2,
        ),
    },
)


_objects = config_objects


PROPERTY = settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(pools=st.lists(pool, min_size=1, max_size=2), classes=st.lists(node_class, min_size=1, max_size=1))
def test_any_configuration_is_either_refused_cleanly_or_emits_valid_objects(pools, classes):
    _check({"nodePools": pools, "nodeClasses": classes})


@PROPERTY
@given(
    pools=st.lists(valid_pool, min_size=1, max_size=2, unique_by=lambda p: p["name"]),
    classes=st.lists(valid_class, min_size=1, max_size=1),
)
def test_valid_field_values_mostly_make_valid_configurations_that_emit_valid_objects(pools, classes):
    _check({"nodePools": pools, "nodeClasses": classes})


def _check(context: dict[str, Any]) -> None:
    try:
        config = load_config(context, today=TODAY)
    except ConfigError as error:
        event("refused")
        lines = str(error).split("\n")
        # one line per problem, each naming a setting of the generated part and the layer it came from
        assert all(line.startswith(("nodePools", "nodeClasses")) and line.endswith(")") for line in lines), lines
        assert all(" (from " in line for line in lines), lines
        app = new_app(context={**PRODUCT_CONTEXT, **context})
        try:
            build(app, today=TODAY)
        except ConfigError as again:
            assert str(again).replace("(from -c)", "(from cdk.json)") == str(error)
        else:
            raise AssertionError(f"the app built what the model refused: {error}")
        assert app.node.children == []  # nothing built
        return
    event("accepted")
    for obj in _objects(config):
        assert object_violations(obj, config.karpenter_version, config.kubernetes_version) == []
        assert evaluate(obj, config.karpenter_version).violations == []
