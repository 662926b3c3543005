"""The API endpoint's public CIDRs judged by the addresses they cover, not by their spelling (issue 33, point 2):
the whole internet in any spelling is refused in every profile, and the production profile opens the endpoint to
at most 65,536 public addresses in all."""

from __future__ import annotations

import ipaddress
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karpenter_stack.config import ConfigError, load_config
from karpenter_stack.config.addresses import NOT_PUBLIC, PRODUCTION_MAX_PUBLIC, PUBLIC_TOTAL, public_addresses
from karpenter_stack.config.cluster_rules import wide_public_access
from tooling.configurations import ADMINISTRATOR

PUBLIC = {"endpointAccess": "public-and-private"}
PRODUCTION = {
    **PUBLIC,
    "profile": "production",
    "nodeClasses": [{"name": "default", "amiAlias": "al2023@v20260801"}],
    "administrators": [ADMINISTRATOR],
}
PRODUCTION_PRIVATE = {k: v for k, v in PRODUCTION.items() if k != "endpointAccess"}


def _split(network: ipaddress.IPv4Network, cuts: list[bool]) -> list[ipaddress.IPv4Network]:
    """``network`` written as smaller CIDRs: each cut splits the next piece in two (a spelling of the same set)."""
    pieces, done = [network], []
    for cut in cuts:
        if not pieces:
            break
        piece = pieces.pop(0)
        if cut and piece.prefixlen < 24:
            pieces += list(piece.subnets(prefixlen_diff=1))
        else:
            done.append(piece)
    return done + pieces


def _refusal(settings_: dict) -> str | None:
    try:
        load_config(settings_)
    except ConfigError as err:
        return str(err)
    return None


@settings(max_examples=40, deadline=None)
@given(st.lists(st.booleans(), max_size=40), st.booleans())
def test_the_whole_internet_is_refused_in_any_spelling(cuts, public_only):
    spelled = _split(ipaddress.IPv4Network("0.0.0.0/0"), cuts)
    if public_only:  # the private, reserved and multicast blocks left out: still every public address
        spelled = [p for n in spelled for p in _without_non_public(n)]
    cidrs = [str(n) for n in spelled]
    assert public_addresses(cidrs) == PUBLIC_TOTAL
    refusal = _refusal({**PUBLIC, "publicAccessCidrs": cidrs})
    assert refusal is not None and (
        "opens the API endpoint to the whole internet; list your networks instead" in refusal
    ), refusal


def _without_non_public(network: ipaddress.IPv4Network) -> list[ipaddress.IPv4Network]:
    pieces = [network]
    for block in NOT_PUBLIC:
        pieces = [
            q
            for p in pieces
            for q in ([] if p.subnet_of(block) else (list(p.address_exclude(block)) if block.subnet_of(p) else [p]))
        ]
    return pieces


@settings(max_examples=40, deadline=None)
@given(st.lists(st.booleans(), max_size=40), st.integers(min_value=0, max_value=2**24 - 1))
def test_leaving_out_one_public_range_is_not_the_whole_internet(cuts, hole):
    """Every public address but one /24 (one chosen at random among the public ones) is accepted outside production."""
    missing = ipaddress.IPv4Network((hole << 8, 24))
    if any(missing.subnet_of(b) or b.subnet_of(missing) for b in NOT_PUBLIC):
        missing = ipaddress.IPv4Network("8.8.8.0/24")
    spelled = [p for n in _split(ipaddress.IPv4Network("0.0.0.0/0"), cuts) for p in _exclude(n, missing)]
    cidrs = [str(n) for n in spelled]
    assert public_addresses(cidrs) == PUBLIC_TOTAL - 256
    assert _refusal({**PUBLIC, "publicAccessCidrs": cidrs}) is None


def _exclude(network: ipaddress.IPv4Network, hole: ipaddress.IPv4Network) -> list[ipaddress.IPv4Network]:
    if hole.subnet_of(network):
        return list(network.address_exclude(hole))
    return [] if network.subnet_of(hole) else [network]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(min_value=1, max_value=223), st.integers(min_value=14, max_value=28)),
        min_size=1,
        max_size=4,
    )
)
def test_production_opens_the_endpoint_to_at_most_a_slash_16_of_public_addresses(ranges):
    cidrs = sorted({str(ipaddress.IPv4Network((first << 24, prefix), strict=False)) for first, prefix in ranges})
    covered = public_addresses(cidrs)
    refusal = _refusal({**PRODUCTION, "publicAccessCidrs": cidrs})
    if covered <= PRODUCTION_MAX_PUBLIC:
        assert refusal is None, refusal
    else:
        assert refusal == (
            f"publicAccessCidrs {cidrs!s}".replace("'", '"')
            + ": the production profile opens the public endpoint to at most 65,536 public addresses in all (a /16); "
            f"these cover {covered:,}; list narrower networks (your offices' or VPN's egress ranges), keep the "
            "endpoint private, or say why in widePublicAccessReason (make security-report lists it) (from cdk.json)"
        )
        # acknowledged with a reason: accepted, and the reason is what make security-report lists
        acknowledged = load_config({**PRODUCTION, "publicAccessCidrs": cidrs, "widePublicAccessReason": REASON})
        assert wide_public_access(acknowledged) == (
            f"the public endpoint reaches {covered:,} public addresses (production's bound: 65,536)"
        )
    # outside production the size is the user's choice
    assert _refusal({**PUBLIC, "publicAccessCidrs": cidrs}) is None


REASON = "Partner CI runners egress from these ranges (reviewed by security, ticket SEC-1234)."


def test_a_wide_endpoint_reason_must_be_checkable_and_is_said_when_it_acknowledges_nothing():
    refusal = _refusal({**PRODUCTION, "publicAccessCidrs": ["8.0.0.0/8"], "widePublicAccessReason": "ok"})
    assert refusal == ('widePublicAccessReason = "ok": String should have at least 20 characters (from cdk.json)')
    narrow = load_config({**PRODUCTION, "publicAccessCidrs": ["8.8.8.0/24"], "widePublicAccessReason": REASON})
    assert narrow.warnings == (
        "widePublicAccessReason acknowledges nothing: only the production profile's public endpoint beyond 65,536 "
        "public addresses needs it; remove it",
    )


def test_production_requires_administrators_instead_of_an_account_wide_admin_role():
    without = {k: v for k, v in PRODUCTION_PRIVATE.items() if k != "administrators"}
    assert _refusal(without) == (
        "administrators []: the production profile needs the IAM role ARNs of your cluster administrators; without "
        "them the stack would create ClusterAdminRole, which any principal of the account allowed sts:AssumeRole may "
        "assume, with system:masters (from built-in default)"
    )
    assert _refusal({**without, "administrators": [ADMINISTRATOR]}) is None
    assert _refusal({k: v for k, v in without.items() if k != "profile"}) is None  # the standard profile's role


@pytest.mark.parametrize(
    ("cidrs", "covered"),
    [
        (["203.0.113.0/24", "198.51.100.7/32"], 0),  # documentation ranges: nobody's addresses
        (["8.8.0.0/16", "8.8.8.0/24"], 65536),  # an overlap counts once
        (["10.0.0.0/8", "1.2.3.0/24"], 256),  # private ranges are not public addresses
    ],
)
def test_what_a_set_of_cidrs_covers(cidrs, covered):
    assert public_addresses(cidrs) == covered


# --- the node protections docs/security.md calls fixed, refused in production when weakened -----------------
PINNED = {"name": "default", "amiAlias": "al2023@v20260801"}


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=2, max_value=64))
def test_production_keeps_imds_at_hop_limit_1(hops):
    refusal = _refusal({"profile": "production", "nodeClasses": [{**PINNED, "metadataHopLimit": hops}]})
    assert refusal == (
        f"nodeClasses[0].metadataHopLimit {hops}: the production profile keeps IMDSv2 at hop limit 1, so pods cannot "
        "reach the node's credentials; use 1 (pods that need AWS credentials get their own through IRSA or Pod "
        "Identity) (from cdk.json)"
    )
    assert _refusal({"nodeClasses": [{**PINNED, "metadataHopLimit": hops}]}) is None  # the standard profile's choice


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(["extraSubnetSelectorTerms", "extraSecurityGroupSelectorTerms"]),
    st.dictionaries(st.sampled_from(["Name", "tier", "team", "zone"]), st.sampled_from(["*", "a"]), min_size=1),
)
def test_production_refuses_selector_terms_that_select_by_any_value(setting, tags):
    refusal = _refusal({**PRODUCTION_PRIVATE, "nodeClasses": [{**PINNED, setting: [{"tags": tags}]}]})
    wild = [k for k, v in tags.items() if v == "*"]
    if not wild:
        assert refusal is None, refusal
        return
    among = "the public ones among them" if "Subnet" in setting else "other workloads' among them"
    kind = "subnet" if "Subnet" in setting else "security group"
    assert refusal == "\n".join(
        f"nodeClasses[0].{setting}[0].tags.{key} '*': '*' selects every {kind} tagged {key}, in every VPC of the "
        f"region, {among}, which the production profile refuses; name exact values ('\\*' is a literal '*', '\\?' a "
        "'?'), or select by id (from cdk.json)"
        for key in wild
    )


# --- ARNs of another account than the stack's: said, not silent (issue 33, point 3) ---------------------------
@settings(max_examples=25, deadline=None)
@given(st.from_regex(r"\A[0-9]{12}\Z"), st.from_regex(r"\A[0-9]{12}\Z"))
def test_an_administrator_of_another_account_is_named_in_a_warning(stack_account, role_account):
    arn = f"arn:aws:iam::{role_account}:role/platform-admins"
    config = load_config({"account": stack_account, "region": "eu-west-1", "administrators": [arn]})
    expected = (
        f"administrators[0] '{arn}' is in account {role_account}, the stack in account {stack_account}: intended for "
        "a cross-account setup, otherwise a typo that takes effect silently"
    )
    assert config.warnings == (() if role_account == stack_account else (expected,))


def test_the_security_report_lists_a_wide_endpoint_with_its_reason():
    import aws_cdk as cdk

    from tooling.scans.security_report import exceptions_section

    app = cdk.App()
    stack = cdk.Stack(app, "eks-karpenter")
    stack.config = load_config({**PRODUCTION, "publicAccessCidrs": ["8.0.0.0/12"], "widePublicAccessReason": REASON})  # type: ignore[attr-defined]
    lines = exceptions_section(app).splitlines()
    assert lines[0] == "Acknowledged beyond the product's bounds: 1" and lines[2].split() == ["stack", "what", "reason"]
    assert lines[4].split("  ")[0] == "eks-karpenter" and lines[4].endswith(REASON)
    assert (
        "widePublicAccessReason: the public endpoint reaches 1,048,576 public addresses (production's bound: 65,536)"
        in lines[4]
    )


@settings(max_examples=20, deadline=None)
@given(
    st.sampled_from(
        [("aws-cdk:subnet-type", "Public"), ("kubernetes.io/role/elb", "1"), ("kubernetes.io/role/elb", "true")]
    ),
    st.dictionaries(st.sampled_from(["team", "tier"]), st.sampled_from(["a", "b"]), max_size=2),
)
def test_production_refuses_public_subnets_and_public_ips_for_nodes(public_tag, others):
    key, value = public_tag
    tags = {**others, key: value}
    refusal = _refusal(
        {**PRODUCTION_PRIVATE, "nodeClasses": [{**PINNED, "extraSubnetSelectorTerms": [{"tags": tags}]}]}
    )
    assert refusal == (
        f"nodeClasses[0].extraSubnetSelectorTerms[0].tags {json.dumps(tags)}: {key} marks public subnets, which the "
        "production profile refuses for nodes; select private subnets (from cdk.json)"
    )
    assert _refusal({"nodeClasses": [{**PINNED, "extraSubnetSelectorTerms": [{"tags": tags}]}]}) is None  # standard
    public_ip = _refusal({**PRODUCTION_PRIVATE, "nodeClasses": [{**PINNED, "associatePublicIPAddress": True}]})
    assert public_ip == (
        "nodeClasses[0].associatePublicIPAddress true: the production profile launches nodes without public IP "
        "addresses (private subnets only); use false or leave it unset (from cdk.json)"
    )
    assert _refusal({**PRODUCTION_PRIVATE, "nodeClasses": [{**PINNED, "associatePublicIPAddress": False}]}) is None
