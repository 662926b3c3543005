"""IPv4 address ranges judged by the addresses they cover, not by how they are spelled: the API endpoint's
``publicAccessCidrs`` are refused when together they cover the whole internet (``0.0.0.0/0``, or its halves, or
every public /8 listed one by one), and the production profile bounds how much of it they may open."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

# The blocks no one on the internet connects from (IANA IPv4 Special-Purpose Address Registry, RFC 6890 and its
# updates: "Globally Reachable" false, multicast and the reserved 240/4). Disjoint.
NOT_PUBLIC = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
)
PUBLIC_TOTAL = 2**32 - sum(n.num_addresses for n in NOT_PUBLIC)
# The production profile opens a public endpoint to at most this many public addresses in all (a /16: an
# organization's egress ranges, a VPN's; docs/security.md).
PRODUCTION_MAX_PUBLIC = 2**16


def _overlap(a: ipaddress.IPv4Network, b: ipaddress.IPv4Network) -> int:
    if a.subnet_of(b):
        return a.num_addresses
    if b.subnet_of(a):
        return b.num_addresses
    return 0


def public_addresses(cidrs: Iterable[str]) -> int:
    """How many public IPv4 addresses the CIDRs cover together (overlaps counted once)."""
    union = list(ipaddress.collapse_addresses(ipaddress.IPv4Network(c) for c in cidrs))
    return sum(n.num_addresses - sum(_overlap(n, p) for p in NOT_PUBLIC) for n in union)


def whole_internet(cidrs: Iterable[str]) -> bool:
    """Whether the CIDRs together let every public address in."""
    return public_addresses(cidrs) == PUBLIC_TOTAL
