"""What a shell part of user data runs, read as bash reads it: words, quotes, comments, command positions.

The node runs a ``text/x-shellscript`` part with bash (cloud-init). The rules of user_data.py ask two things of
it: which commands it runs (``/etc/eks/bootstrap.sh``, ``nodeadm init``) and which kubelet flags it writes
anywhere (``--max-pods=500``, ``--node-labels foo=bar``, ``--max_pods``: kubelet's flag parser takes ``_`` for
``-``, k8s.io/component-base ``cliflag.WordSepNormalizeFunc``), including inside a quoted argument such as
``--kubelet-extra-args '--max-pods=500'`` or ``KUBELET_EXTRA_ARGS="--node-labels=a=b"``.

bash's rules mirrored here (bash(1), "QUOTING", "COMMENTS", "SHELL GRAMMAR"): a word begins where an unquoted
blank or operator ends; ``#`` begins a comment only at the start of a word; single quotes keep everything to the
next single quote; double quotes and a backslash escape; a backslash before a newline joins lines; ``;``, ``&``,
``|``, ``(``, ``)`` and a newline end a command. Here-documents and command substitutions are read as words too
(what they write is checked as if run): a flag written into a file the kubelet reads is still the kubelet's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_OPERATORS = frozenset(";&|()\n")
_BLANKS = frozenset(" \t\r")
# Words that run the next word as the command (``sudo /etc/eks/bootstrap.sh``), and bash's reserved words that
# may open a command list (``then /etc/eks/bootstrap.sh``).
_PREFIXES = frozenset(
    {"sudo", "exec", "env", "nohup", "time", "command", "builtin", "if", "elif", "while", "until"}
    | {"then", "do", "else", "!", "{", "bash", "sh"}
)
_SOURCE = frozenset({"source", "."})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=", re.ASCII)


@dataclass(frozen=True)
class Word:
    text: str  # the word with quotes removed
    line: int  # 1-based line of the part where it starts
    command: bool  # the word is what a command runs (its first word, after prefixes and assignments)


def words(script: str) -> list[Word]:
    """The words of ``script`` in order; an unclosed quote runs to the end (bash would fail to run it)."""
    found: list[Word] = []
    current: list[str] = []
    started = False  # a word is open (also when it is an empty quoted word: '')
    line = start_line = 1
    at_command = True
    i = 0

    def close() -> None:
        nonlocal current, started, at_command
        if started:
            text = "".join(current)
            command = at_command and not _ASSIGNMENT.match(text)
            found.append(Word(text, start_line, command))
            if command and text not in _PREFIXES and text not in _SOURCE:
                at_command = False
            elif text in _SOURCE:
                at_command = True
        current, started = [], False

    while i < len(script):
        char = script[i]
        if char == "\\" and i + 1 < len(script):
            if script[i + 1] == "\n":
                line += 1
            else:
                if not started:
                    start_line, started = line, True
                current.append(script[i + 1])
            i += 2
            continue
        if char in ("'", '"'):
            if not started:
                start_line, started = line, True
            end = _closing(script, i)
            body = script[i + 1 : end]
            line += body.count("\n")
            current.append(body if char == "'" else re.sub(r'\\([$`"\\\n])', r"\1", body))
            i = end + 1
            continue
        if char == "#" and not started:
            end = script.find("\n", i)
            i = len(script) if end < 0 else end
            continue
        if char in _BLANKS:
            close()
        elif char in _OPERATORS:
            close()
            at_command = True
            if char == "\n":
                line += 1
        else:
            if not started:
                start_line, started = line, True
            current.append(char)
        i += 1
    close()
    return found


def _closing(script: str, start: int) -> int:
    """The index of the quote that closes the one at ``start`` (the end of the script when none does)."""
    quote, i = script[start], start + 1
    while i < len(script):
        if script[i] == "\\" and quote == '"':
            i += 2
            continue
        if script[i] == quote:
            return i
        i += 1
    return len(script)


_FLAG = re.compile(r"(?:^|(?<=[\s='\",]))--([A-Za-z][A-Za-z0-9_.-]*)(=\S*)?", re.ASCII)


def flags(word: str) -> list[tuple[str, str]]:
    """The ``--flag`` names in a word, normalized as kubelet normalizes them (``_`` is ``-``), each with how it was
    written; also inside a word that holds an argument list (``--kubelet-extra-args '--max-pods=5 --x'``) or an
    assignment (``KUBELET_EXTRA_ARGS=--max-pods=5``)."""
    return [(m.group(1).replace("_", "-"), m.group(0)) for m in _FLAG.finditer(word)]
