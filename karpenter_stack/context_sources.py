"""Where one run's settings come from, as the CDK CLI assembles them for ``app.py``: the lookups cached in
``cdk.context.json``, ``cdk.json``'s ``context``, then a ``CONTEXT_FILE``'s settings and ``-c`` flags (both
arrive as ``-c key=value``: the file's values as compact JSON text).

The make targets that synthesize (``synth``, ``cdk``, ``check``, ``review``, ``accept``) and the test suite's
gate of the user's configuration all build their command line or context here, so a setting reaches the app
the same way whichever of them runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def project_dir() -> Path:
    """The folder whose ``cdk.json`` and ``cdk.context.json`` are the project's: the working directory, where
    the CDK CLI runs ``app.py`` (the product's tests point it at their own fixture instead)."""
    return Path.cwd()


class ContextFileError(Exception):
    """A CONTEXT_FILE that cannot be used; ``str(err)`` is the one line to show."""


def read_context_file(path: str | Path) -> dict[str, Any]:
    """The settings of a JSON file of settings (``CONTEXT_FILE``), or ContextFileError naming what is wrong."""
    file = Path(path)
    name = json.dumps(str(path))
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ContextFileError(f"CONTEXT_FILE={name}: no such file") from None
    except IsADirectoryError:
        raise ContextFileError(f"CONTEXT_FILE={name}: is a directory, not a JSON file of settings") from None
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else type(err).__name__
        raise ContextFileError(f"CONTEXT_FILE={name}: cannot be read ({reason})") from None
    settings = _parsed(text, f"CONTEXT_FILE={name}")
    if not isinstance(settings, dict):
        raise ContextFileError(
            f'CONTEXT_FILE={name}: expected a JSON object of settings, e.g. {{"clusterName": "payments-dev"}}'
        )
    return settings


def _parsed(text: str, name: str) -> Any:
    """``text`` as JSON, or ContextFileError: ``<name>: not valid JSON (<why> at line L, column C)``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ContextFileError(f"{name}: not valid JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None


def flag_value(value: Any) -> str:
    """A setting's value as the text of ``-c key=<text>``: strings as they are, anything else as compact JSON."""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def as_flags(settings: Mapping[str, Any]) -> list[str]:
    """``-c key=value`` arguments for the CDK CLI, one pair per setting."""
    return [arg for key, value in settings.items() for arg in ("-c", f"{key}={flag_value(value)}")]


def parse_flags(args: Sequence[str]) -> dict[str, str]:
    """The ``-c key=value`` (``--context key=value``) settings among CLI arguments, as the CDK CLI reads them."""
    settings: dict[str, str] = {}
    items = iter(args)
    for arg in items:
        if arg in ("-c", "--context"):
            item = next(items, "")
        elif arg.startswith("--context="):
            item = arg.removeprefix("--context=")
        else:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ContextFileError(f"-c {json.dumps(item)}: expected -c key=value")
        settings[key] = value
    return settings


def _json_object(path: Path, key: str | None = None) -> dict[str, Any]:
    """A project file's JSON object (its ``key`` member), ``{}`` when the file is missing; ContextFileError
    naming the file when it is not a JSON object."""
    if not path.is_file():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ContextFileError(f"{path.name}: cannot be read ({type(err).__name__})") from None
    data = _parsed(text, path.name)
    value = data.get(key, {}) if key and isinstance(data, dict) else data
    if not isinstance(value, dict):
        where = f'"{key}" of {path.name}' if key else path.name
        raise ContextFileError(f"{where}: expected a JSON object")
    return dict(value)


def cached_lookups(root: Path | None = None) -> dict[str, Any]:
    """``cdk.context.json`` (in ``root``, by default :func:`project_dir`): the CLI's cache of lookups."""
    return _json_object((root or project_dir()) / "cdk.context.json")


def cdk_json_context(root: Path | None = None) -> dict[str, Any]:
    """The settings layer ``cdk.json`` holds (in ``root``, by default :func:`project_dir`)."""
    return _json_object((root or project_dir()) / "cdk.json", "context")


def working_context(
    context_file: str | Path | None = None, args: Sequence[str] = (), root: Path | None = None
) -> dict[str, Any]:
    """The context ``cdk synth`` gives ``app.py`` (in ``root``, by default :func:`project_dir`) with
    ``CONTEXT_FILE=context_file`` and these CLI arguments (their ``-c`` flags): later layers win."""
    root = root or project_dir()
    file_settings = read_context_file(context_file) if context_file else {}
    return {
        **cached_lookups(root),
        **cdk_json_context(root),
        **{key: flag_value(value) for key, value in file_settings.items()},
        **parse_flags(args),
    }
