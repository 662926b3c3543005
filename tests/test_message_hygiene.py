"""Classes of mistakes closed as classes (issue 21, point 5): every pattern and digit test is ASCII, as
Kubernetes (Go RE2), CEL's int() and AWS are; every message that echoes a user's value escapes it, so one
problem stays one line; the EC2 instance-type list is read once, and only when a type must be checked."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from constructs_lib.karpenter.specs import ec2
from karpenter_stack.config import ConfigError, load_config
from tests.conftest import ROOT, TODAY
from tests.sources import walked

PACKAGES = ("constructs_lib", "karpenter_stack")
# Modules whose messages echo configuration values (README: one line per problem).
MESSAGE_MODULES = (
    *(
        f"constructs_lib/karpenter/specs/{m}.py"
        for m in (
            "base",
            "ec2",
            "ami",
            "kubelet",
            "node_class",
            "node_class_settings",
            "node_pool",
            "node_overlay",
            "rules",
        )
    ),
    "karpenter_stack/config/model.py",
    "karpenter_stack/config/cluster_settings.py",
    "karpenter_stack/config/existing_cluster.py",
    "karpenter_stack/config/forms.py",
    "karpenter_stack/config/errors.py",
    "karpenter_stack/config/parse.py",
    "karpenter_stack/config/merge.py",
    "karpenter_stack/config/validate.py",
    "karpenter_stack/config/cluster_rules.py",
    "karpenter_stack/config/node_rules.py",
    "karpenter_stack/config/pipeline_rules.py",
    "karpenter_stack/config/synth_warnings.py",
    "karpenter_stack/config/load.py",
)
_RE_FUNCTIONS = {"compile", "match", "fullmatch", "search", "findall", "finditer", "split", "sub", "subn"}
# Where each re function takes its flags, by position.
_FLAGS_AT = {"sub": 4, "subn": 4, "split": 3}
_CLASS_ESCAPE = re.compile(r"\\[dDwWsSbB]")
# str methods that accept Unicode digits and letters ('１', '٣', 'é') where Go, CEL and AWS take ASCII only.
_UNICODE_METHODS = {"isdigit", "isalnum", "isalpha", "isdecimal", "isnumeric"}


def _has_ascii_flag(node: ast.AST | None) -> bool:
    return node is not None and any(isinstance(n, ast.Attribute) and n.attr in ("ASCII", "A") for n in ast.walk(node))


def unicode_semantics(source: str, name: str = "<source>") -> list[str]:
    """Every regex with a class escape (\\d \\w \\s \\b) but no ASCII semantics, every pydantic
    Field(pattern=...) with one (pydantic's Rust regex is Unicode-aware too), every str.isdigit-like call."""
    found = []
    for node in walked(source):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        where = f"{name}:{node.lineno}"
        if isinstance(func, ast.Attribute) and func.attr in _UNICODE_METHODS:
            found.append(f"{where}: .{func.attr}() accepts Unicode digits/letters")
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "re":
            if func.attr not in _RE_FUNCTIONS or not node.args:
                continue
            pattern = node.args[0]
            at = _FLAGS_AT.get(func.attr, 2 if func.attr != "compile" else 1)
            flags = (
                node.args[at]
                if len(node.args) > at
                else next((k.value for k in node.keywords if k.arg == "flags"), None)
            )
            literal = pattern.value if isinstance(pattern, ast.Constant) and isinstance(pattern.value, str) else None
            needs = literal is None or (_CLASS_ESCAPE.search(literal) and "(?a" not in literal)
            if needs and not _has_ascii_flag(flags):
                found.append(f"{where}: re.{func.attr} without re.ASCII")
        if isinstance(func, ast.Name) and func.id == "Field":
            for keyword in node.keywords:
                value = keyword.value
                if (
                    keyword.arg == "pattern"
                    and isinstance(value, ast.Constant)
                    and _CLASS_ESCAPE.search(str(value.value))
                ):
                    found.append(f"{where}: Field(pattern=...) with a Unicode class escape; spell it [0-9A-Za-z_]")
    return found


def hand_quoted(source: str, name: str = "<source>") -> list[str]:
    """f-strings that quote an interpolated value by hand ('{x}') or with !r, instead of base.quoted."""
    found = []
    for node in walked(source):
        if not isinstance(node, ast.JoinedStr):
            continue
        parts = node.values
        for i, part in enumerate(parts):
            if not isinstance(part, ast.FormattedValue):
                continue
            before = parts[i - 1] if i else None
            after = parts[i + 1] if i + 1 < len(parts) else None
            around = [p.value for p in (before, after) if isinstance(p, ast.Constant) and isinstance(p.value, str)]
            if part.conversion == ord("r") or (
                len(around) == 2 and around[0][-1:] in ("'", '"') and around[1][:1] == around[0][-1:]
            ):
                found.append(f"{name}:{node.lineno}: {ast.unparse(part.value)} quoted by hand; use quoted()")
    return found


def _sources(paths: list[Path]) -> list[tuple[str, str]]:
    return [(str(p.relative_to(ROOT)), p.read_text()) for p in paths]


def test_every_pattern_and_digit_test_in_the_packages_is_ascii():
    paths = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    assert len(paths) > 20
    assert [f for name, source in _sources(paths) for f in unicode_semantics(source, name)] == []


def test_the_ascii_scan_catches_each_kind_of_mistake():
    assert unicode_semantics('import re\nre.compile(r"\\d+")\nre.fullmatch(r"\\w", v)\n"1".isdigit()') == [
        "<source>:2: re.compile without re.ASCII",
        "<source>:3: re.fullmatch without re.ASCII",
        "<source>:4: .isdigit() accepts Unicode digits/letters",
    ]
    assert unicode_semantics('Field(None, pattern=r"^\\s+$")') == [
        "<source>:1: Field(pattern=...) with a Unicode class escape; spell it [0-9A-Za-z_]"
    ]
    assert unicode_semantics('re.sub(r"\\s", "", v, 0, re.ASCII)\nre.compile(r"[0-9]+")\nre.compile(P, re.A)') == []
    assert unicode_semantics("re.compile(PATTERN)") == ["<source>:1: re.compile without re.ASCII"]


def test_messages_echo_values_through_one_helper():
    assert [
        f for name, source in _sources([ROOT / m for m in MESSAGE_MODULES]) for f in hand_quoted(source, name)
    ] == []
    assert hand_quoted("f\"x '{v}' y\"\nf'{v!r}'\nf'{quoted(v)} {n}'") == [
        "<source>:1: v quoted by hand; use quoted()",
        "<source>:2: v quoted by hand; use quoted()",
    ]


@pytest.mark.parametrize(
    "digits", ["\uff11\uff10", "\u0661\u0660", "\u0967\u0966"], ids=["fullwidth", "arabic", "devanagari"]
)
@pytest.mark.parametrize(
    "setting",
    [
        {"nodePools": [{"consolidateAfter": "{}m"}]},
        {"nodePools": [{"expireAfter": "{}h"}]},
        {"nodePools": [{"terminationGracePeriod": "{}m"}]},
        {"nodePools": [{"budgets": [{"nodes": "{}"}]}]},
        {"nodePools": [{"budgets": [{"nodes": "1", "schedule": "@daily", "duration": "{}h"}]}]},
        {"nodePools": [{"limits": {"cpu": "{}"}}]},
        {"nodePools": [{"labels": {"team": "a{}"}}]},
        {
            "nodePools": [
                {"requirements": [{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["{}"]}]}
            ]
        },
        {"nodeClasses": [{"kubelet": {"evictionHard": {"memory.available": "{}%"}}}]},
        {
            "nodeClasses": [
                {
                    "kubelet": {
                        "evictionSoft": {"memory.available": "{}Mi"},
                        "evictionSoftGracePeriod": {"memory.available": "1m"},
                    }
                }
            ]
        },
        {"nodeClasses": [{"kubelet": {"systemReserved": {"cpu": "{}m"}}}]},
        {"nodeClasses": [{"amiAlias": "al2023@v2026{}01"}]},
        {"account": "1111222233{}", "region": "eu-west-1"},
        {"controller": {"featureGates": {"nodeOverlay": True}}, "nodeOverlays": [{"name": "o", "price": "{}"}]},
        {
            "controller": {"featureGates": {"nodeOverlay": True}},
            "nodeOverlays": [{"name": "o", "priceAdjustment": "+{}%"}],
        },
    ],
    ids=lambda s: next(iter(s)) if len(s) == 1 else "+".join(s)[-40:],
)
def test_non_ascii_digits_are_refused_where_kubernetes_and_aws_take_ascii(setting, digits):
    """Each setting accepts the ASCII digits "10" and refuses the same number in other scripts."""
    import json

    def fill(text: str) -> dict:
        return json.loads(json.dumps(setting).replace("{}", text))

    assert load_config(fill("10"), today=TODAY) is not None
    with pytest.raises(ConfigError) as info:
        load_config(fill(digits), today=TODAY)
    assert len(str(info.value).splitlines()) == 1, str(info.value)


LINE_BREAKS = ["\n", "\r", "\u2028", "\x85", "\x1e", "\x0b"]
ECHOING = [
    {"clusterName": "a{}b"},
    {"region": "eu-west-1{}"},
    {"nodePools": [{"labels": {"team": "a{}b"}}]},
    {"nodePools": [{"labels": {"a{}b": "x"}}]},
    {"nodePools": [{"limits": {"cpu{}": "1"}}]},
    {"nodePools": [{"limits": {"cpu": "1{}"}}]},
    {
        "nodePools": [
            {"requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5{}.large"]}]}
        ]
    },
    {"nodeClasses": [{"tags": {"a{}": "b"}, "amiAlias": "al2023@latest"}]},
    {"nodeClasses": [{"kubelet": {"clusterDNS": ["10.0.0.1{}"]}}]},
    {"nodeClasses": [{"extraSubnetSelectorTerms": [{"id": "subnet-{}"}]}]},
    {"publicAccessCidrs": ["10.0.0.0/8{}"], "endpointAccess": "public-and-private"},
    {"addonVersions": {"coredns": "v1{}"}},
    {"administrators": ["arn:aws:iam::111122223333:role/a{}"]},
    {"nodePools{}": []},
    {"nodeClasses": [{"name{}": "x"}]},
    {"nodePools": "[{}"},
]


@pytest.mark.parametrize("line_break", LINE_BREAKS, ids=repr)
@pytest.mark.parametrize("context", ECHOING, ids=lambda c: str(c)[:50])
def test_a_line_break_in_a_value_or_key_never_splits_its_message(context, line_break):
    import json

    filled = json.loads(json.dumps(context).replace("{}", json.dumps(line_break)[1:-1]))
    with pytest.raises(ConfigError) as info:
        load_config(filled, today=TODAY)
    assert len(str(info.value).splitlines()) == 1, str(info.value)
    assert str(info.value).endswith("(from cdk.json)"), str(info.value)


def test_the_instance_type_list_is_read_once_and_only_when_a_type_is_checked():
    ec2.ec2_instance_types.cache_clear()
    load_config({"nodePools": [{"name": "p"}]}, today=TODAY)
    assert ec2.ec2_instance_types.cache_info().currsize == 0  # nothing to check: nothing read
    load_config({"systemNodeInstanceType": "m7g.large", "controllerHosting": "nodegroup"}, today=TODAY)
    load_config(
        {
            "nodePools": [
                {
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c7g.xlarge"]}
                    ]
                }
            ]
        },
        today=TODAY,
    )
    info = ec2.ec2_instance_types.cache_info()
    assert (info.misses, info.hits) == (1, 1)
    types, source = ec2.ec2_instance_types()
    assert source == "botocore 1.44.5's EC2 model"  # requirements.txt's pin
    assert {"t3.medium", "m7g.large", "u-6tb1.metal", "p4d.24xlarge"} <= types and "m5.huge" not in types
    assert ec2.INSTANCE_TYPE.pattern and all(ec2.INSTANCE_TYPE.fullmatch(t) for t in types)
