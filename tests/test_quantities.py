"""Property-based tests of the parsers behind NodePool limits and durations."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from constructs_lib.karpenter.quantities import parse_duration, parse_quantity

BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL = {
    "m": Decimal("0.001"),
    "": Decimal(1),
    "k": Decimal(1000),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(sorted(BINARY)))
def test_binary_suffixes_multiply_by_powers_of_two(n, suffix):
    assert parse_quantity(f"{n}{suffix}") == n * BINARY[suffix]


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(sorted(DECIMAL)))
def test_decimal_suffixes_multiply_by_powers_of_ten(n, suffix):
    assert parse_quantity(f"{n}{suffix}") == n * DECIMAL[suffix]


@given(st.decimals(min_value=0, max_value=10**6, places=3, allow_nan=False, allow_infinity=False))
def test_plain_decimals_are_their_value(value):
    assert parse_quantity(str(value)) == value


@given(st.integers(min_value=0, max_value=999), st.integers(min_value=-5, max_value=5))
def test_exponents(n, exponent):
    assert parse_quantity(f"{n}e{exponent}") == Decimal(n) * Decimal(10) ** exponent


@given(st.text(alphabet="0123456789.KMGTPEikmunxyz -", max_size=8))
def test_arbitrary_text_parses_or_fails_with_the_documented_message_only(text):
    try:
        value = parse_quantity(text)
    except ValueError as err:
        assert str(err) == "must be a Kubernetes quantity such as 100, 500m, 64Gi or 1.5"
    else:
        assert isinstance(value, Decimal)


@pytest.mark.parametrize("text", ["", "Gi", "1GiB", "1.2.3", "1 Gi", "ten", "1e", "--1"])
def test_malformed_quantities(text):
    with pytest.raises(ValueError, match="must be a Kubernetes quantity"):
        parse_quantity(text)


@given(st.lists(st.tuples(st.integers(min_value=0, max_value=10**4), st.sampled_from("smh")), min_size=1, max_size=4))
def test_durations_sum_their_parts(parts):
    text = "".join(f"{n}{unit}" for n, unit in parts)
    assert parse_duration(text) == sum(n * {"s": 1, "m": 60, "h": 3600}[unit] for n, unit in parts)


def test_never_is_no_expiry():
    assert parse_duration("Never") is None


@pytest.mark.parametrize("text", ["", "3d", "1h 30m", "never", "-1h", "1.5h", "h", "720"])
def test_malformed_durations(text):
    with pytest.raises(ValueError, match=r"must be a duration like 30s, 15m, 720h, 1h30m, or Never"):
        parse_duration(text)
