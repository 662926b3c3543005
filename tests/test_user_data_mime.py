"""The app's MIME mirror (constructs_lib/karpenter/specs/mime.py) against Karpenter 1.14.1's own MIME tests and against Go.

- Upstream's ``bootstrap/mime/suite_test.go`` has three cases; each runs here on its own test data
  (tests/data/karpenter-mime/, unmodified): a malformed header fails, the valid archive gives its two entries with
  their exact content, and serializing those entries gives the valid archive byte for byte.
- tests/data/mime_conformance.json: 60 inputs (tooling/conformance/mime_cases.py) with the outcome Go's library
  gave for them when called as Karpenter calls it (tooling/conformance/README.md); the mirror must give the same
  outcome and, when Go accepts, the same parts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from constructs_lib.karpenter.specs import mime
from tooling.conformance.mime_cases import cases

DATA = Path(__file__).parent / "data"
UPSTREAM = DATA / "karpenter-mime"
TABLE = json.loads((DATA / "mime_conformance.json").read_text())["cases"]


def _upstream(name: str) -> str:
    return (UPSTREAM / name).read_text()


def test_upstream_should_fail_to_parse_mime_archive_with_a_malformed_header() -> None:
    with pytest.raises(mime.MimeError, match=r"^malformed header line: MIME_VERSION = 1.0$"):
        mime.read_archive(_upstream("mime_bad_header.txt"))


def test_upstream_should_successfully_parse_a_valid_mime_archive() -> None:
    archive = mime.read_archive(_upstream("mime_valid.txt"))
    assert len(archive) == 2
    for content_type, name in (
        (mime.CONTENT_TYPE_NODE_CONFIG, "nodeconfig.txt"),
        (mime.CONTENT_TYPE_SHELL, "shell.txt"),
    ):
        entry = next(e for e in archive if e.content_type == content_type)
        assert entry.content == _upstream(name)


def test_upstream_should_successfully_serialize_a_mime_archive() -> None:
    entries = [
        mime.Entry(mime.CONTENT_TYPE_NODE_CONFIG, _upstream("nodeconfig.txt")),
        mime.Entry(mime.CONTENT_TYPE_SHELL, _upstream("shell.txt")),
    ]
    assert mime.serialize(entries) == _upstream("mime_valid.txt")


def test_the_conformance_table_is_recorded_for_exactly_the_listed_inputs() -> None:
    assert [(row["name"], row["input"]) for row in TABLE] == list(cases().items())
    assert len(TABLE) == 60
    assert sum(row["ok"] for row in TABLE) == 38


def _outcome(text: str) -> object:
    """What the mirror makes of ``text``, in the table's terms: the parts, or a refusal."""
    try:
        return [[e.content_type, e.content] for e in mime.read_archive(text)]
    except mime.MimeError:
        return "refused"


def test_the_mirror_reads_every_input_as_go_does() -> None:
    disagree = [
        row["name"] for row in TABLE if _outcome(str(row["input"])) != (row["entries"] if row["ok"] else "refused")
    ]
    assert disagree == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("MIME-Version: 1.0\n", True),
        ("\n\t Content-Type: multipart/mixed\n", True),
        ("mime-version: 1.0\n", False),
        ("content-type: multipart/mixed\n", False),
        ("#!/bin/bash\nContent-Type: x\n", False),
    ],
)
def test_karpenter_takes_user_data_as_mime_only_by_its_exact_first_header(text: str, expected: bool) -> None:
    assert mime.is_mime(text) is expected


def test_media_types_are_parsed_as_go_parses_them() -> None:
    assert mime.parse_media_type('Multipart/Mixed; Boundary="a b"; x=y') == (
        "multipart/mixed",
        {"boundary": "a b", "x": "y"},
    )
    for bad, reason in (
        ("", "mime: no media type"),
        ("multipart/", "mime: expected token after slash"),
        ("multipart mixed", "mime: expected slash after first token"),
        ("multipart/mixed x", "mime: unexpected content after media subtype"),
        ("multipart/mixed; boundary=//", "mime: invalid media parameter"),
        ("multipart/mixed; boundary=a; BOUNDARY=b", "mime: duplicate parameter name"),
        ('multipart/mixed; boundary="open', "mime: invalid media parameter"),
    ):
        with pytest.raises(mime.MimeError, match=f"^{reason}$"):
            mime.parse_media_type(bad)
