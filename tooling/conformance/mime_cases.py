"""Inputs for the MIME conformance table (tests/data/mime_conformance.json): user data a team may write, valid and
not, each of which Karpenter 1.14's reader (Go's net/mail, mime, mime/multipart) was run on; see README.md here."""

from __future__ import annotations

H = 'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n'
SHELL = 'Content-Type: text/x-shellscript; charset="us-ascii"\n\n#!/bin/bash\necho hi\n'
NODE = "Content-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {}\n"

VALID = H + "--//\n" + SHELL + "\n--//--\n"


def cases() -> dict[str, str]:
    """Name -> user data text."""
    return _archive_cases() | _part_cases()


def _archive_cases() -> dict[str, str]:
    """The archive's headers and boundary."""
    valid = VALID
    eks_guide = (
        'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="==MYBOUNDARY=="\n\n--==MYBOUNDARY==\n'
        'Content-Type: text/x-shellscript; charset="us-ascii"\n\n#!/bin/bash\necho "Running custom user data script"\n'
        "\n--==MYBOUNDARY==--\n"
    )
    return {
        "valid": valid,
        "valid two parts": H + "--//\n" + NODE + "\n--//\n" + SHELL + "\n--//--\n",
        "EKS User Guide example (quoted ==MYBOUNDARY==)": eks_guide,
        "CRLF line ends": valid.replace("\n", "\r\n"),
        "Content-Type first, no MIME-Version": 'Content-Type: multipart/mixed; boundary="//"\n\n--//\n'
        + SHELL
        + "\n--//--\n",
        "leading blank line": "\n" + valid,
        "leading spaces before the headers": "  " + valid,
        "lower-case header names": valid.replace("MIME-Version", "mime-version").replace(
            "Content-Type: multipart", "content-type: multipart"
        ),
        "header with a space before the colon": valid.replace("Content-Type: multipart", "Content-Type : multipart"),
        "malformed top header line": "MIME-Version 1.0\n" + valid[len("MIME-Version: 1.0\n") :],
        "no blank line after the headers": valid.replace('"//"\n\n', '"//"\n'),
        "unquoted boundary //": valid.replace('boundary="//"', "boundary=//"),
        "unquoted token boundary": valid.replace('boundary="//"', "boundary=abc").replace("--//", "--abc"),
        "unquoted ==MYBOUNDARY==": eks_guide.replace('boundary="==MYBOUNDARY=="', "boundary===MYBOUNDARY=="),
        "boundary given twice": valid.replace('boundary="//"', 'boundary="//"; boundary="//"'),
        "empty boundary": valid.replace('boundary="//"', 'boundary=""'),
        "no boundary parameter": valid.replace('; boundary="//"', ""),
        "quoted boundary with spaces": valid.replace('boundary="//"', 'boundary="a b"').replace("--//", "--a b"),
        "escaped quote in boundary": valid.replace('boundary="//"', 'boundary="a\\"b"').replace("--//", '--a"b'),
        "upper-case MULTIPART/MIXED": valid.replace("multipart/mixed", "MULTIPART/MIXED"),
        "multipart/alternative": valid.replace("multipart/mixed", "multipart/alternative"),
        "text/plain archive": valid.replace("multipart/mixed", "text/plain"),
        "trailing semicolon": valid.replace('boundary="//"', 'boundary="//";'),
        "folded Content-Type header": valid.replace(
            'multipart/mixed; boundary="//"', 'multipart/mixed;\n boundary="//"'
        ),
    }


def _part_cases() -> dict[str, str]:
    """The parts: their headers, bodies and the lines between them."""
    valid = VALID
    return {
        "preamble before the first part": H + "This is a preamble.\n\n--//\n" + SHELL + "\n--//--\n",
        "epilogue after the last part": valid + "an epilogue\n",
        "part without headers (body right after the boundary)": H + "--//\n#!/bin/bash\necho hi\n\n--//--\n",
        "part with a blank line instead of headers": H + "--//\n\n#!/bin/bash\necho hi\n\n--//--\n",
        "part header key with a space": H + "--//\nContent Type: text/x-shellscript\n\necho hi\n\n--//--\n",
        "part header key with a space before the colon": H
        + "--//\nContent-Type : text/x-shellscript\n\necho hi\n\n--//--\n",
        "part header with an empty key": H + "--//\n: nothing\nContent-Type: text/x-shellscript\n\necho hi\n\n--//--\n",
        "part header value with a control byte": H
        + "--//\nContent-Type: text/x-shell\x01script\n\necho hi\n\n--//--\n",
        "part header key with a slash": H + "--//\nContent/Type: text/x-shellscript\n\necho hi\n\n--//--\n",
        "part header starting with a space": H + "--//\n Content-Type: text/x-shellscript\n\necho hi\n\n--//--\n",
        "lower-case part header": H + "--//\ncontent-type: text/x-shellscript\n\necho hi\n\n--//--\n",
        "folded part header": H + "--//\nContent-Type: text/x-shellscript;\n\tcharset=us-ascii\n\necho hi\n\n--//--\n",
        "no closing boundary, blank line at the end": H + "--//\n" + SHELL + "\n",
        "no closing boundary, body to the end": H + "--//\n" + SHELL,
        "boundary line at the end without --": H + "--//\n" + SHELL + "\n--//\n",
        "boundary line at the end, no newline": H + "--//\n" + SHELL + "\n--//",
        "closing boundary without newline": H + "--//\n" + SHELL + "\n--//--",
        "closing boundary with trailing spaces": H + "--//\n" + SHELL + "\n--//--   \n",
        "boundary line with trailing spaces": H + "--//  \n" + SHELL + "\n--//--\n",
        "boundary line with trailing text": H + "--//x\n" + SHELL + "\n--//--\n",
        "boundary-like line inside a body": H + "--//\n" + SHELL + "--//x is not a boundary\necho more\n\n--//--\n",
        "boundary with a space inside a body": H + "--//\n" + SHELL + "--// starts a boundary\necho more\n\n--//--\n",
        "no blank line before the closing boundary": H + "--//\n" + SHELL + "--//--\n",
        "text between parts": H + "--//\n" + SHELL + "\nstray text\n--//\n" + SHELL + "\n--//--\n",
        "two blank lines between parts": H + "--//\n" + SHELL + "\n\n--//\n" + SHELL + "\n--//--\n",
        "part headers end at the end of the text": H + "--//\nContent-Type: text/x-shellscript",
        "only a closing boundary": H + "--//--\n",
        "no parts at all": H,
        "headers only, no body": 'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"',
        "quoted-printable part": H
        + "--//\nContent-Type: text/x-shellscript\nContent-Transfer-Encoding: quoted-printable\n\necho caf=C3=A9 =\nlong\n\n--//--\n",
        "empty part body": H + "--//\nContent-Type: text/x-shellscript\n\n--//--\n",
        "CRLF header, LF parts": valid.replace(H, H.replace("\n", "\r\n")),
        "CRLF boundary line then LF lines": H + "--//\r\n" + SHELL + "\n--//--\n",
        "non-ASCII part header value": H
        + "--//\nContent-Type: text/x-shellscript; name=caf\u00e9\n\necho hi\n\n--//--\n",
        "MIME-Version only, no Content-Type": "MIME-Version: 1.0\n\n--//\n" + SHELL + "\n--//--\n",
        "two Content-Type headers": valid.replace(
            "MIME-Version: 1.0\n", "MIME-Version: 1.0\nContent-Type: text/plain\n"
        ),
    }
