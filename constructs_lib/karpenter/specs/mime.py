"""Karpenter 1.14's MIME reader and writer for user data, mirrored line for line.

Karpenter reads a MIME archive with Go's standard library (``bootstrap/mime/mime.go`` ``NewArchive`` and
``eksbootstrap.go`` ``copyCustomUserDataParts``, aws/karpenter-provider-aws v1.14.1): ``net/mail.ReadMessage``
for the archive's headers, ``mime.ParseMediaType`` for its Content-Type, ``mime/multipart.Reader.NextPart`` for the
parts (``net/textproto`` for each part's headers). What this module mirrors, from the Go sources of the release
line Karpenter 1.14 is built with (Go 1.24; these functions are unchanged since Go 1.21):

- ``net/mail`` ``readHeader``: the first line may not start with a space or tab; a header line without a colon
  fails; keys are canonicalized (``content-type`` is ``Content-Type``) unless they hold a byte outside the token
  set, which keeps them as written (``Content Type`` is then not the Content-Type); headers that end at the end of
  the text are accepted.
- ``mime.ParseMediaType``: ``type/subtype`` tokens, then ``; name=value`` parameters whose value is a token or a
  quoted string (an unquoted ``//`` or ``==B==`` fails), no parameter twice; only a ``multipart/*`` type is an archive.
- ``mime/multipart``: lines before the first ``--boundary`` line are skipped; the first boundary line fixes the line
  ending (``\\n`` or ``\\r\\n``); a part's headers (``net/textproto.readMIMEHeader``: token keys, values without
  control bytes, no empty key) end at a blank line; its body ends before ``<newline>--boundary`` followed by ``--``,
  a space, a tab, a line end or the end of the text; a body that reaches the end of the text fails ("unexpected
  EOF"); after a part only a blank line and a boundary line may follow; ``--boundary--`` ends the archive, and
  so does the end of the text where a boundary line is expected (Go wraps io.EOF, Karpenter's ``errors.Is`` takes
  it as the end); a quoted-printable part is decoded.

:data:`serialize` writes an archive as ``Archive.Serialize`` does (boundary ``//``, carriage returns removed).
``tests/test_user_data_mime.py`` holds upstream's own MIME tests and test data and a table of inputs whose outcome
was recorded from Go's library (tooling/conformance/README.md says how).
"""

from __future__ import annotations

import quopri
from dataclasses import dataclass

# bootstrap/mime/mime.go
BOUNDARY = "//"
CONTENT_TYPE_SHELL = 'text/x-shellscript; charset="us-ascii"'
CONTENT_TYPE_NODE_CONFIG = "application/node.eks.aws"
CONTENT_TYPE_MULTIPART = f'multipart/mixed; boundary="{BOUNDARY}"'

# net/textproto isTokenTable (RFC 7230 tchar) and mime/grammar.go isTSpecial.
_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_TSPECIALS = frozenset('()<>@,;:\\"/[]?=')
# Go's unicode.IsSpace (strings.TrimSpace, TrimLeftFunc): Python's str.strip() also strips \x1c-\x1f.
GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


class MimeError(ValueError):
    """The text is not an archive Karpenter's reader takes; the message is Go's, as Karpenter would log it."""


@dataclass(frozen=True)
class Entry:
    content_type: str  # the part's Content-Type header as written ("" when it has none)
    content: str

    @property
    def media_type(self) -> str:
        """The media type, lower case, without parameters ("" when there is no readable one)."""
        try:
            return parse_media_type(self.content_type)[0]
        except MimeError:
            return ""


def is_mime(text: str) -> bool:
    """nodeadm.go parseUserData / eksbootstrap.go mimeify: MIME when the text, spaces trimmed, starts with
    ``MIME-Version:`` or ``Content-Type:`` exactly as written (Go's strings.HasPrefix: case matters)."""
    trimmed = text.strip(GO_SPACE)
    return trimmed.startswith(("MIME-Version:", "Content-Type:"))


def read_archive(text: str) -> list[Entry]:
    """mime.NewArchive: the parts of a multipart archive, or MimeError with Go's reason."""
    if text == "":
        return []
    lines = _Lines(text)
    headers = _mail_header(lines)
    media_type, params = parse_media_type(_get(headers, "Content-Type"))
    if not media_type.startswith("multipart/"):
        raise MimeError(f"archive is not in multipart format (Content-Type {media_type!r})")
    try:
        return _parts(lines, params.get("boundary", ""))
    except MimeError as err:  # mime.go: fmt.Errorf("parsing content, %w", err)
        raise MimeError(f"parsing content, {err}") from None


def serialize(entries: list[Entry]) -> str:
    """Archive.Serialize before base64: the MIME-Version and multipart headers, each part with its Content-Type,
    the closing boundary; Go's writer uses CRLF, which Karpenter removes."""
    out = [f"MIME-Version: 1.0\nContent-Type: {CONTENT_TYPE_MULTIPART}\n\n"]
    for number, entry in enumerate(entries):
        out.append(("\n" if number else "") + f"--{BOUNDARY}\nContent-Type: {entry.content_type}\n\n{entry.content}")
    out.append(f"\n--{BOUNDARY}--\n")
    return "".join(out)


def parse_media_type(value: str) -> tuple[str, dict[str, str]]:
    """mime.ParseMediaType (without RFC 2231 continuations): the lower-case media type and its parameters."""
    base = value.split(";", 1)[0]
    media_type = base.lower().strip(GO_SPACE)
    kind, rest = _token(media_type)
    if not kind:
        raise MimeError("mime: no media type")
    if rest:
        if not rest.startswith("/"):
            raise MimeError("mime: expected slash after first token")
        subtype, rest = _token(rest[1:])
        if not subtype:
            raise MimeError("mime: expected token after slash")
        if rest:
            raise MimeError("mime: unexpected content after media subtype")
    params: dict[str, str] = {}
    remaining = value[len(base) :]
    while remaining:
        remaining = remaining.lstrip(GO_SPACE)
        if not remaining:
            break
        key, param_value, rest = _media_param(remaining)
        if not key:
            if rest.strip(GO_SPACE) == ";":
                break  # a trailing semicolon is not an error
            raise MimeError("mime: invalid media parameter")
        if key in params:
            raise MimeError("mime: duplicate parameter name")
        params[key] = param_value
        remaining = rest
    return media_type, params


def _token(text: str) -> tuple[str, str]:
    for i, char in enumerate(text):
        if not (0x20 < ord(char) < 0x7F) or char in _TSPECIALS:
            return text[:i], text[i:]
    return text, ""


def _media_param(text: str) -> tuple[str, str, str]:
    rest = text.lstrip(GO_SPACE)
    if not rest.startswith(";"):
        return "", "", text
    name, rest = _token(rest[1:].lstrip(GO_SPACE))
    if not name:
        return "", "", text
    rest = rest.lstrip(GO_SPACE)
    if not rest.startswith("="):
        return "", "", text
    rest = rest[1:].lstrip(GO_SPACE)
    value, after = _value(rest)
    if value == "" and after == rest:
        return "", "", text
    return name.lower(), value, after


def _value(text: str) -> tuple[str, str]:
    if not text.startswith('"'):
        return _token(text)
    out: list[str] = []
    i = 1
    while i < len(text):
        char = text[i]
        if char == '"':
            return "".join(out), text[i + 1 :]
        if char == "\\" and i + 1 < len(text) and text[i + 1] in _TSPECIALS:
            out.append(text[i + 1])
            i += 2
            continue
        if char in "\r\n":
            return "", text
        out.append(char)
        i += 1
    return "", text  # no closing quote


class _Lines:
    """The text as Go's bufio reader hands it out: ReadSlice('\\n') keeps the line end, ReadLine drops it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def read_slice(self) -> tuple[str, bool]:
        """The next line with its '\\n'; True when the text ended before a '\\n' (Go's io.EOF)."""
        end = self.text.find("\n", self.pos)
        if end < 0:
            line, self.pos = self.text[self.pos :], len(self.text)
            return line, True
        line, self.pos = self.text[self.pos : end + 1], end + 1
        return line, False

    def read_line(self) -> str | None:
        """The next line without its line end; None at the end of the text."""
        if self.at_end():
            return None
        line, _ = self.read_slice()
        line = line[:-1] if line.endswith("\n") else line
        return line[:-1] if line.endswith("\r") else line

    def continued(self, need_colon: bool) -> str | None:
        """textproto readContinuedLineSlice: a header line with its continuation lines joined by one space."""
        line = self.read_line()
        if line is None or line == "":
            return line
        if need_colon and ":" not in line:
            raise MimeError(f"malformed MIME header: missing colon: {line!r}")
        joined = line.strip(" \t")
        while self.peek() in (" ", "\t") and self.peek():
            while self.peek() in (" ", "\t") and self.peek():
                self.pos += 1
            more = self.read_line()
            if more is None:
                break
            joined += " " + more.strip(" \t")
        return joined


def _canonical(key: str) -> str:
    """textproto CanonicalMIMEHeaderKey: upper case first and after '-', else lower; unchanged if not a token."""
    if any(char not in _TCHAR for char in key):
        return key
    out, upper = [], True
    for char in key:
        out.append(char.upper() if upper else char.lower())
        upper = char == "-"
    return "".join(out)


def _get(headers: dict[str, list[str]], key: str) -> str:
    return headers.get(key, [""])[0]


def _mail_header(lines: _Lines) -> dict[str, list[str]]:
    """net/mail readHeader (RFC 5322: keys and values not validated; an empty key is skipped)."""
    headers: dict[str, list[str]] = {}
    if lines.peek() in (" ", "\t") and lines.peek():
        raise MimeError(f"malformed initial line: {lines.read_line()}")
    while True:
        kv = lines.continued(need_colon=False)
        if not kv:
            if kv is None and not headers:
                raise MimeError("EOF")
            return headers
        key, colon, value = kv.partition(":")
        if not colon:
            raise MimeError(f"malformed header line: {kv}")
        key = _canonical(key)
        if key:
            headers.setdefault(key, []).append(value.lstrip(" \t"))


def _part_header(lines: _Lines) -> dict[str, list[str]] | None:
    """net/textproto readMIMEHeader (RFC 7230: token keys, a space only before the colon, values without control
    bytes); None when the text ends before the headers do (Go's io.EOF)."""
    headers: dict[str, list[str]] = {}
    if lines.peek() in (" ", "\t") and lines.peek():
        raise MimeError(f"malformed MIME header initial line: {lines.read_line()}")
    while True:
        kv = lines.continued(need_colon=True)
        if kv is None:
            return None
        if kv == "":
            return headers
        key, _, value = kv.partition(":")
        if not key or any(char not in _TCHAR and char != " " for char in key):
            raise MimeError(f"malformed MIME header line: {kv}")
        if any(not (char == "\t" or 0x20 <= ord(char) < 0x7F or ord(char) >= 0x80) for char in value):
            raise MimeError(f"malformed MIME header line: {kv}")
        name = key if " " in key else _canonical(key)
        headers.setdefault(name, []).append(value.lstrip(" \t"))


def _parts(lines: _Lines, boundary: str) -> list[Entry]:
    """mime/multipart Reader.NextPart and io.ReadAll of each part, until io.EOF."""
    if boundary == "":
        raise MimeError("multipart: boundary is empty")
    dash = f"--{boundary}"
    newline = "\r\n"
    entries: list[Entry] = []
    parts_read = 0
    while True:
        expect_new_part = False
        while True:
            line, eof = lines.read_slice()
            if eof and _final(line, dash, newline):
                return entries
            if eof:
                return entries  # "multipart: NextPart: %w" io.EOF: Karpenter's errors.Is takes it as the end
            if line.startswith(dash):  # isBoundaryDelimiterLine
                rest = line[len(dash) :].lstrip(" \t")
                if parts_read == 0 and rest == "\n":
                    newline = "\n"  # the first boundary line ends in LF only: so do all lines
                if rest == newline:
                    break
            if _final(line, dash, newline):
                return entries
            if expect_new_part:
                raise MimeError(f"multipart: expecting a new Part; got line {line!r}")
            if parts_read == 0:
                continue  # the preamble
            if line == newline:
                expect_new_part = True
                continue
            raise MimeError(f"multipart: unexpected line in Next(): {line!r}")
        parts_read += 1
        headers = _part_header(lines)
        if headers is None:
            return entries  # the text ends before the part's headers do: io.EOF
        body = _body(lines, newline + dash, dash)
        content_type = _get(headers, "Content-Type")
        if _get(headers, "Content-Transfer-Encoding").lower() == "quoted-printable":
            body = quopri.decodestring(body.encode()).decode(errors="replace")
        entries.append(Entry(content_type, body))


def _final(line: str, dash: str, newline: str) -> bool:
    """isFinalBoundary: ``--boundary--`` then only spaces or tabs and the line end (or the end of the text)."""
    if not line.startswith(dash + "--"):
        return False
    rest = line[len(dash) + 2 :].lstrip(" \t")
    return rest == "" or rest == newline


def _body(lines: _Lines, nl_dash: str, dash: str) -> str:
    """The part's body up to the next boundary (scanUntilBoundary); MimeError when the text ends first."""
    text, start = lines.text, lines.pos
    if text.startswith(dash, start) and _boundary_follows(text, start + len(dash)):
        return ""
    search = start
    while True:
        found = text.find(nl_dash, search)
        if found < 0:
            raise MimeError("unexpected EOF")
        if _boundary_follows(text, found + len(nl_dash)):
            lines.pos = found
            return text[start:found]
        search = found + 1


def _boundary_follows(text: str, index: int) -> bool:
    """matchAfterPrefix: after ``<newline>--boundary`` comes the end of the text, a space, tab, CR, LF or ``--``."""
    if index >= len(text):
        return True
    char = text[index]
    return char in " \t\r\n" or text.startswith("--", index)
