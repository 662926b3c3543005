"""Subnet and security group selector terms read as EC2 reads them (issue 41, point 3): Karpenter sends each term as
EC2 describe filters, and EC2 reads '*' and '?' as wildcards anywhere in a filter value, a backslash making them
literal (constructs_lib/karpenter/specs/reach.py). The production profile refuses a term that reaches beyond what it names or
can match a public subnet's tag; the other profiles get a synth warning naming the setting. Typed settings and
nodeManifests files alike; each kind of term with hostile inputs of its own, and the valid neighbours accepted."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from constructs_lib.karpenter import yaml_load
from constructs_lib.karpenter.specs.reach import SECURITY_GROUP, SUBNET, is_pattern, pattern_matches, selector_reach
from karpenter_stack.config import ConfigError, load_config
from tests.conftest import ROOT, TODAY
from tooling.configurations import ADMINISTRATOR, PRODUCT_CONTEXT

PINNED = {"name": "default", "amiAlias": "al2023@v20260801"}
PRODUCTION = {**PRODUCT_CONTEXT, "profile": "production", "administrators": [ADMINISTRATOR]}
CLUSTER = "eks-karpenter"  # the default clusterName

EXACT = "name exact values ('\\*' is a literal '*', '\\?' a '?'), or select by id"
SUBNETS_BEYOND = "in every VPC of the region, the public ones among them"
GROUPS_BEYOND = "in every VPC of the region, other workloads' among them"


def _outcome(setting: str, term: dict, **config) -> tuple[str | None, tuple[str, ...]]:
    """The production profile's refusal of one extra term (None: accepted), and the standard profile's warnings."""
    try:
        load_config({**PRODUCTION, "nodeClasses": [{**PINNED, setting: [term]}], **config}, today=TODAY)
        refusal = None
    except ConfigError as err:
        refusal = str(err)
    standard = load_config({**PRODUCT_CONTEXT, "nodeClasses": [{**PINNED, setting: [term]}], **config}, today=TODAY)
    return refusal, standard.warnings


def _wild(setting: str, field: str, shown: str, reading: str) -> tuple[str, str]:
    """The refusal and the warning of a term that reaches beyond what it names."""
    at = f"nodeClasses[0].{setting}[0].{field} {shown}: {reading}"
    return (
        f"{at}, which the production profile refuses; {EXACT} (from cdk.json)",
        f"{at}; {EXACT} (the production profile refuses it)",
    )


def _value(kind: str, key: str, beyond: str) -> str:
    return (
        f"'*' and '?' are EC2 wildcards anywhere in a value: it selects every {kind} whose {key} tag matches, {beyond}"
    )


# --- subnets: hostile inputs of their own ---------------------------------------------------------------------
S = "extraSubnetSelectorTerms"
SUBNET_CASES = {
    "a wildcard at the end": ({"Name": "prod-*"}, "tags.Name", "'prod-*'", _value("subnet", "Name", SUBNETS_BEYOND)),
    "a wildcard at the start": (
        {"Name": "*-private"},
        "tags.Name",
        "'*-private'",
        _value("subnet", "Name", SUBNETS_BEYOND),
    ),
    "a wildcard in the middle": (
        {"tier": "pri*ate"},
        "tags.tier",
        "'pri*ate'",
        _value("subnet", "tier", SUBNETS_BEYOND),
    ),
    "a '?'": ({"tier": "privat?"}, "tags.tier", "'privat?'", _value("subnet", "tier", SUBNETS_BEYOND)),
    "any value of a key": (
        {"Name": "*"},
        "tags.Name",
        "'*'",
        f"'*' selects every subnet tagged Name, {SUBNETS_BEYOND}",
    ),
    "the discovery key with any value (every cluster's subnets)": (
        {"karpenter.sh/discovery": "*"},
        "tags.karpenter.sh/discovery",
        "'*'",
        f"'*' selects every subnet tagged karpenter.sh/discovery, {SUBNETS_BEYOND}",
    ),
    "a pattern of the cluster's own name is not its name": (
        {"karpenter.sh/discovery": f"{CLUSTER}*"},
        "tags.karpenter.sh/discovery",
        f"'{CLUSTER}*'",
        _value("subnet", "karpenter.sh/discovery", SUBNETS_BEYOND),
    ),
    "a wildcard in a key": (
        {"team-?": "data"},
        "tags",
        "key 'team-?'",
        f"'*' and '?' are EC2 wildcards in a tag key too: it selects every subnet with a key that matches, {SUBNETS_BEYOND}",
    ),
    "an escaped backslash before a wildcard": (
        {"Name": "prod\\\\*"},
        "tags.Name",
        "'prod\\\\\\\\*'",
        _value("subnet", "Name", SUBNETS_BEYOND),
    ),
}


@pytest.mark.parametrize("case", SUBNET_CASES)
def test_a_subnet_term_with_a_wildcard_anywhere_is_refused_in_production_and_a_warning_elsewhere(case):
    tags, field, shown, reading = SUBNET_CASES[case]
    refusal, warning = _wild(S, field, shown, reading)
    assert _outcome(S, {"tags": tags}) == (refusal, (warning,))


PUBLIC_CASES = {
    "the subnet type as written": ({"aws-cdk:subnet-type": "Public"}, "aws-cdk:subnet-type"),
    "the subnet type by a pattern": (
        {"aws-cdk:subnet-type": "Pub*"},
        "aws-cdk:subnet-type 'Pub*' (as EC2 reads it, aws-cdk:subnet-type: Public)",
    ),
    "the subnet type with any value": (
        {"aws-cdk:subnet-type": "*", "tier": "a"},
        "aws-cdk:subnet-type '*' (as EC2 reads it, aws-cdk:subnet-type: Public)",
    ),
    "the load balancer role by a key pattern": (
        {"kubernetes.io/role/*": "1"},
        "kubernetes.io/role/* '1' (as EC2 reads it, kubernetes.io/role/elb)",
    ),
    "a key that is only a wildcard": ({"*": "Public"}, "* 'Public' (as EC2 reads it, aws-cdk:subnet-type: Public)"),
    "public, ANDed with the cluster's discovery tag": (
        {"karpenter.sh/discovery": CLUSTER, "kubernetes.io/role/elb": "1"},
        "kubernetes.io/role/elb",
    ),
}


@pytest.mark.parametrize("case", PUBLIC_CASES)
def test_a_subnet_term_that_can_match_a_public_subnets_tag_is_refused_in_production(case):
    tags, marks = PUBLIC_CASES[case]
    at = f"nodeClasses[0].{S}[0].tags {json.dumps(tags)}: {marks} marks public subnets"
    assert _outcome(S, {"tags": tags}) == (
        f"{at}, which the production profile refuses for nodes; select private subnets (from cdk.json)",
        (f"{at}; select private subnets (the production profile refuses it)",),
    )


SUBNET_NEIGHBOURS = {
    "an id": {"id": "subnet-0123456789abcdef0"},
    "exact tags": {"tags": {"tier": "private", "example.com/zone": "eu-west-1a"}},
    "an escaped '*' is a literal '*'": {"tags": {"Name": "prod-\\*"}},
    "an escaped '?' is a literal '?'": {"tags": {"Name": "who\\?"}},
    "a trailing backslash is itself": {"tags": {"Name": "prod\\"}},
    # EC2 filter names and values are case-sensitive (EC2 API Reference, Filter): no public subnet carries these
    "the subnet type in another case": {"tags": {"aws-cdk:subnet-type": "public"}},
    "the subnet type's key in another case": {"tags": {"Aws-Cdk:Subnet-Type": "Public"}},
    "a wildcard ANDed with the cluster's own discovery tag": {
        "tags": {"karpenter.sh/discovery": CLUSTER, "Name": "*-private"}
    },
}


@pytest.mark.parametrize("case", SUBNET_NEIGHBOURS)
def test_a_subnet_term_that_names_what_it_selects_is_accepted(case):
    assert _outcome(S, SUBNET_NEIGHBOURS[case]) == (None, ())


# --- security groups: hostile inputs of their own -------------------------------------------------------------
G = "extraSecurityGroupSelectorTerms"
GROUP_CASES = {
    "every group in the region by name": (
        {"name": "*"},
        "name",
        "'*'",
        "'*' selects every security group in the region, other workloads' among them",
    ),
    "a name pattern": (
        {"name": "prod-*-nodes"},
        "name",
        "'prod-*-nodes'",
        f"'*' and '?' are EC2 wildcards anywhere in a name: it selects every security group whose name matches, "
        f"{GROUPS_BEYOND}",
    ),
    "a name of one unknown character": (
        {"name": "?"},
        "name",
        "'?'",
        f"'*' and '?' are EC2 wildcards anywhere in a name: it selects every security group whose name matches, "
        f"{GROUPS_BEYOND}",
    ),
    "any value of a tag": (
        {"tags": {"team": "*"}},
        "tags.team",
        "'*'",
        f"'*' selects every security group tagged team, {GROUPS_BEYOND}",
    ),
    "a tag value pattern": (
        {"tags": {"Name": "nodes-?"}},
        "tags.Name",
        "'nodes-?'",
        _value("security group", "Name", GROUPS_BEYOND),
    ),
    "any key": (
        {"tags": {"*": "nodes"}},
        "tags",
        "key '*'",
        "'*' and '?' are EC2 wildcards in a tag key too: it selects every security group with a key that matches, "
        f"{GROUPS_BEYOND}",
    ),
    "another cluster's discovery tag by pattern": (
        {"tags": {"karpenter.sh/discovery": "eks-*"}},
        "tags.karpenter.sh/discovery",
        "'eks-*'",
        _value("security group", "karpenter.sh/discovery", GROUPS_BEYOND),
    ),
}


@pytest.mark.parametrize("case", GROUP_CASES)
def test_a_security_group_term_with_a_wildcard_anywhere_is_refused_in_production_and_a_warning_elsewhere(case):
    term, field, shown, reading = GROUP_CASES[case]
    refusal, warning = _wild(G, field, shown, reading)
    assert _outcome(G, term) == (refusal, (warning,))


GROUP_NEIGHBOURS = {
    "an id": {"id": "sg-0123456789abcdef0"},
    "an exact name": {"name": "monitoring"},
    "an exact name in mixed case": {"name": "Prod-Nodes"},
    "a name with an escaped '*'": {"name": "web\\*"},
    "exact tags": {"tags": {"example.com/role": "nodes"}},
    "a pattern ANDed with the cluster's own discovery tag": {"tags": {"karpenter.sh/discovery": CLUSTER, "team": "*"}},
}


@pytest.mark.parametrize("case", GROUP_NEIGHBOURS)
def test_a_security_group_term_that_names_what_it_selects_is_accepted(case):
    assert _outcome(G, GROUP_NEIGHBOURS[case]) == (None, ())


def test_empty_values_stay_refused_as_the_crd_refuses_them():
    """The CRDs' rule ("empty tag keys or values aren't supported"; a name has 1-255 characters)."""
    with pytest.raises(ConfigError) as info:
        load_config({**PRODUCT_CONTEXT, "nodeClasses": [{S: [{"tags": {"Name": ""}}]}]}, today=TODAY)
    assert str(info.value) == (
        f"nodeClasses[0].{S}[0].tags: tag 'Name': empty keys and values select nothing (use '*' for any value) "
        "(from cdk.json)"
    )
    with pytest.raises(ConfigError) as info:
        load_config({**PRODUCT_CONTEXT, "nodeClasses": [{G: [{"name": ""}]}]}, today=TODAY)
    assert str(info.value).startswith(f"nodeClasses[0].{G}[0].name")
    assert "a security group name has 1 to 255 characters" in str(info.value)


def test_every_reaching_term_of_a_class_is_one_line():
    terms = [{"tags": {"Name": "a*", "tier": "b?"}}, {"id": "subnet-0123456789abcdef0"}, {"tags": {"zone": "*"}}]
    refusal, warnings = _outcome(S, terms[0])
    assert refusal is not None and [line.split(":")[0] for line in refusal.splitlines()] == [
        f"nodeClasses[0].{S}[0].tags.Name 'a*'",
        f"nodeClasses[0].{S}[0].tags.tier 'b?'",
    ]
    assert len(warnings) == 2
    found = selector_reach(terms, [{"name": "x*"}], CLUSTER)
    assert [(kind, j, r.field) for kind, j, r in found] == [
        (SUBNET, 0, "tags.Name"),
        (SUBNET, 0, "tags.tier"),
        (SUBNET, 2, "tags.zone"),
        (SECURITY_GROUP, 0, "name"),
    ]


# --- EC2's reading of a filter value ---------------------------------------------------------------------------
def _instance(pattern: str, filler: str) -> str:
    """A text ``pattern`` matches: each wildcard replaced by ``filler`` (at most one character for '?')."""
    out, escaped = [], False
    for char in pattern:
        if escaped or char not in "\\*?":
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        else:
            out.append(filler if char == "*" else filler[:1])
    return "".join(out) + ("\\" if escaped else "")


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="ab*?\\", max_size=8))
def test_a_value_is_a_pattern_exactly_when_it_matches_more_than_one_text(value):
    short, long = _instance(value, ""), _instance(value, "xy")
    assert pattern_matches(value, short) and pattern_matches(value, long)
    assert (short != long) == is_pattern(value)
    assert is_pattern(value) or not pattern_matches(value, short + "z")  # an exact value matches itself only


# --- nodeManifests: the file's own fields, refused in production, a warning elsewhere ----------------------------
CLASS = """apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  amiSelectorTerms:
    - alias: al2023@v20260801
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: "${CLUSTER_NAME}"
    - tags:
        Name: "*-private"
    - id: subnet-0123456789abcdef0
    - tags:
        karpenter.sh/discovery: "${CLUSTER_NAME}"
        tier: "*"
    - tags:
        kubernetes.io/role/elb: "1"
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: "${CLUSTER_NAME}"
    - name: "*"
    - tags:
        aws-cdk:subnet-type: Public
"""  # the last: a security group's tag, exact (no public subnet behind it)


def test_a_files_terms_are_named_in_the_file_refused_in_production_and_warnings_elsewhere(tmp_path, monkeypatch):
    (tmp_path / "class.yaml").write_text(CLASS)
    monkeypatch.chdir(tmp_path)
    at = "class.yaml: EC2NodeClass/default: spec."
    lines = [
        f"{at}subnetSelectorTerms[1].tags.Name: '*-private': {_value('subnet', 'Name', SUBNETS_BEYOND)}; {EXACT}",
        f'{at}subnetSelectorTerms[4].tags: {{"kubernetes.io/role/elb": "1"}}: kubernetes.io/role/elb marks public '
        "subnets; select private subnets",
        f"{at}securityGroupSelectorTerms[1].name: '*': '*' selects every security group in the region, other "
        f"workloads' among them; {EXACT}",
    ]
    with pytest.raises(ConfigError) as info:
        load_config({**PRODUCTION, "nodeManifests": ["class.yaml"]}, today=TODAY)
    assert str(info.value) == "\n".join(f"{line}; the production profile requires it (from cdk.json)" for line in lines)
    config = load_config({**PRODUCT_CONTEXT, "nodeManifests": ["class.yaml"]}, today=TODAY)
    assert [w for w in config.warnings if "SelectorTerms" in w] == [f"{line} (from cdk.json)" for line in lines]


# --- another cluster's discovery tag (issue 43, point 6): dev's class selecting prod's subnets and groups ----------
OTHER = "the discovery tag of another cluster ('prod-eks'): it selects that cluster's {kind}s, not this one's"
MINE = "write this cluster's name ('eks-karpenter') or ${CLUSTER_NAME}, or select by id"


@pytest.mark.parametrize(("setting", "kind"), [(S, "subnet"), (G, "security group")])
def test_another_clusters_discovery_tag_is_refused_in_production_and_a_warning_elsewhere(setting, kind):
    at = f"nodeClasses[0].{setting}[0].tags.karpenter.sh/discovery 'prod-eks': {OTHER.format(kind=kind)}"
    assert _outcome(setting, {"tags": {"karpenter.sh/discovery": "prod-eks", "tier": "private"}}) == (
        f"{at}, which the production profile refuses; {MINE} (from cdk.json)",
        (f"{at}; {MINE} (the production profile refuses it)",),
    )
    # the cluster's own name, written out or as the files write it, is the cluster's own
    assert _outcome(setting, {"tags": {"karpenter.sh/discovery": CLUSTER, "tier": "private"}}) == (None, ())


def test_a_files_discovery_tag_of_another_cluster_is_named_in_the_file(tmp_path, monkeypatch):
    """The issue's case: a class file written for prod (karpenter.sh/discovery: prod-eks) used by dev's cluster, where
    it was kept as a selector term and dev's nodes could launch into prod's subnets, silently."""
    written = CLASS.replace('karpenter.sh/discovery: "${CLUSTER_NAME}"', "karpenter.sh/discovery: prod-eks", 1)
    (tmp_path / "class.yaml").write_text(written)
    monkeypatch.chdir(tmp_path)
    line = (
        "class.yaml: EC2NodeClass/default: spec.subnetSelectorTerms[0].tags.karpenter.sh/discovery: 'prod-eks': "
        f"{OTHER.format(kind='subnet')}; {MINE}"
    )
    config = load_config({**PRODUCT_CONTEXT, "nodeManifests": ["class.yaml"]}, today=TODAY)
    assert [w for w in config.warnings if "SelectorTerms" in w][0] == f"{line} (from cdk.json)"
    with pytest.raises(ConfigError) as info:
        load_config({**PRODUCTION, "nodeManifests": ["class.yaml"]}, today=TODAY)
    assert str(info.value).splitlines()[0] == f"{line}; the production profile requires it (from cdk.json)"
    # the same file in the cluster it was written for: its own discovery tag, nothing to say about it
    config = load_config({**PRODUCT_CONTEXT, "clusterName": "prod-eks", "nodeManifests": ["class.yaml"]}, today=TODAY)
    assert not [w for w in config.warnings if "discovery" in w]


def test_karpenters_own_examples_name_what_they_select():
    """Upstream's examples/v1 select by the cluster's discovery tag: bounded, whatever the profile."""
    upstream = ROOT / "tests" / "fixtures" / "karpenter-examples-v1.14.1"
    classes = [
        d
        for path in sorted(upstream.glob("*.yaml"))
        for d in yaml_load.safe_load_all(path.read_text().replace("${CLUSTER_NAME}", CLUSTER))
        if isinstance(d, dict) and d.get("kind") == "EC2NodeClass"
    ]
    assert len(classes) >= 20
    for node_class in classes:
        spec = node_class["spec"]
        assert selector_reach(spec["subnetSelectorTerms"], spec["securityGroupSelectorTerms"], CLUSTER) == []


# --- an existing VPC: its lookup says which subnets are public ----------------------------------------------------
def test_an_existing_vpcs_public_subnet_named_by_id_is_named_with_its_vpc(tmp_path, monkeypatch):
    from karpenter_stack.cluster_stack import public_subnet_terms

    public, private = "subnet-0bbbbbbbbbbbbbbb1", "subnet-0aaaaaaaaaaaaaaa1"
    (tmp_path / "class.yaml").write_text(CLASS.replace("subnet-0123456789abcdef0", public))
    monkeypatch.chdir(tmp_path)
    typed = [{"id": private}, {"tags": {"tier": "private"}}, {"id": public}]
    config = load_config(
        {**PRODUCT_CONTEXT, "nodeClasses": [{**PINNED, "name": "typed", S: typed}], "nodeManifests": ["class.yaml"]},
        today=TODAY,
    )
    assert public_subnet_terms(config, {public}, "vpc-0123456789abcdef0") == [
        f"nodeClasses[0].{S}[2].id '{public}': a public subnet of VPC vpc-0123456789abcdef0 (its lookup in "
        "cdk.context.json says so)",
        f"class.yaml: EC2NodeClass/default: spec.subnetSelectorTerms[2].id '{public}': a public subnet of VPC "
        "vpc-0123456789abcdef0 (its lookup in cdk.context.json says so)",
    ]
    assert public_subnet_terms(config, set(), "vpc-0123456789abcdef0") == []
