"""The Python the project's virtual environments are made with (make's ``PYTHON``, ``python3`` by default) must be
3.11.5 or newer: checkov's pinned dependencies need it (requirements-checkov.txt: soupsieve 4.1 requires Python
>= 3.11.5; on 3.11.2, Debian 12's own, pip failed with a page of versions). make runs this file with that Python
before it makes a venv: nothing is imported but ``sys``, so an older Python gets one line and exit 1."""

from __future__ import annotations

import sys

FLOOR = (3, 11, 5)


def problem(version: tuple[int, ...] = tuple(sys.version_info[:3]), executable: str = sys.executable) -> str | None:
    """The line an older Python gets, or None."""
    if tuple(version[:3]) >= FLOOR:
        return None
    found, needed = ".".join(map(str, version[:3])), ".".join(map(str, FLOOR))
    return (
        f"make: {executable} is Python {found}; this project needs Python {needed} or newer: install one and name it "
        "with PYTHON (e.g. make test PYTHON=python3.12), or put it first on PATH as python3"
    )


if __name__ == "__main__":
    message = problem()
    if message:
        sys.exit(message)
