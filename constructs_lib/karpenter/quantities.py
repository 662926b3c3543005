"""Parsers for the Kubernetes value formats the configuration carries: resource quantities
(``cpu: "500m"``, ``memory: "64Gi"``) and Karpenter durations (``720h``, ``1h30m``, ``Never``).
They accept exactly what the API server / Karpenter CRDs accept, so a bad value fails at synth."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exponent>[eE][+-]?[0-9]+)|(?P<decimal>[numkMGTPE]?))$"
)
_DURATION = re.compile(r"^(?:[0-9]+[smh])+$")
_DURATION_PART = re.compile(r"([0-9]+)([smh])")
_SECONDS = {"s": 1, "m": 60, "h": 3600}

QUANTITY_HELP = "a Kubernetes quantity such as 100, 500m, 64Gi or 1.5"
DURATION_HELP = "a duration like 30s, 15m, 720h, 1h30m, or Never"


def parse_quantity(text: str) -> Decimal:
    """The value of a Kubernetes resource quantity, or ValueError."""
    match = _QUANTITY.fullmatch(text) if isinstance(text, str) else None
    if not match:
        raise ValueError(f"must be {QUANTITY_HELP}")
    try:
        number = Decimal(match["number"])
    except InvalidOperation:  # pragma: no cover - the pattern only admits valid decimals
        raise ValueError(f"must be {QUANTITY_HELP}") from None
    if match["binary"]:
        return number * _BINARY[match["binary"]]
    if match["exponent"]:
        return number * Decimal(10) ** int(match["exponent"][1:])
    return number * _DECIMAL[match["decimal"] or ""]


def parse_duration(text: str) -> int | None:
    """Seconds of a Karpenter duration (``None`` for ``Never``), or ValueError."""
    if text == "Never":
        return None
    if not isinstance(text, str) or not _DURATION.fullmatch(text):
        raise ValueError(f"must be {DURATION_HELP}")
    return sum(int(n) * _SECONDS[unit] for n, unit in _DURATION_PART.findall(text))


# A Go duration, as Karpenter's controller flags and kubelet settings parse it (10s, 1m30s, 500ms).
GO_DURATION = re.compile(r"([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+")
