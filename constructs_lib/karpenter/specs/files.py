"""The project's own files (``userDataFile``, ``nodeManifests``): a path relative to the project folder (where cdk.json
is, the synth's working directory) that names a regular file inside it after every symlink is resolved, read once
and bounded. Their bytes go into templates, node user data and the review a CI job posts, so a symlink to a file
elsewhere on the machine, a FIFO or a device (which would hang the synth or fill its memory) is refused, each in one
line naming the path."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath

from .base import quoted

# The largest file read: a Karpenter manifest of many objects fits many times over; EC2 takes 16 KB of user data.
MAX_PROJECT_FILE_BYTES = 1024 * 1024


def project_path(path: str) -> str:
    """``path`` when it is relative to the project folder and stays inside it (no absolute path, no '..'); else
    ValueError naming it."""
    if PurePosixPath(path).is_absolute() or Path(path).is_absolute() or ".." in PurePosixPath(path).parts:
        raise ValueError(f"{quoted(path)} must be a path inside the project folder, relative to it (where cdk.json is)")
    return path


def inside(path: str, root: Path | None = None) -> Path:
    """The file ``path`` names, every symlink resolved, when it is a regular file inside the project folder; else
    ValueError naming the path and why."""
    project_path(path)
    base = (root or Path()).resolve()
    try:
        resolved = (base / path).resolve(strict=True)
    except FileNotFoundError:
        raise ValueError(f"{quoted(path)}: no such file (paths are relative to the project folder)") from None
    except RuntimeError:  # a symlink loop (Python 3.11's resolve)
        raise ValueError(f"{quoted(path)}: cannot resolve it (a symlink loop)") from None
    except OSError as err:  # ELOOP (a symlink loop, later Pythons), permissions
        reason = "a symlink loop" if err.errno == errno.ELOOP else _reason(err)
        raise ValueError(f"{quoted(path)}: cannot resolve it ({reason})") from None
    if not resolved.is_relative_to(base):
        raise ValueError(
            f"{quoted(path)} resolves to a file outside the project folder (a symlink): project files stay in the "
            "repository, whose review shows them"
        )
    kind = stat.S_IFMT(resolved.stat().st_mode)
    if kind != stat.S_IFREG:
        what = "a directory" if kind == stat.S_IFDIR else "not a regular file (a FIFO, socket or device)"
        raise ValueError(f"{quoted(path)} is {what}: name a file")
    return resolved


def read_project_file(path: str, root: Path | None = None) -> str:
    """The text of a file of the project (:func:`inside`), read once and at most MAX_PROJECT_FILE_BYTES; ValueError
    naming the path: outside the project, not a regular file, too large, missing or unreadable."""
    resolved = inside(path, root)
    try:
        # O_NONBLOCK: should the file become a FIFO between the check and the open, the open does not wait
        fd = os.open(resolved, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise ValueError(f"{quoted(path)} is not a regular file (a FIFO, socket or device): name a file")
            data = handle.read(MAX_PROJECT_FILE_BYTES + 1)
    except OSError as err:
        raise ValueError(f"{quoted(path)}: cannot read it ({_reason(err)})") from None
    if len(data) > MAX_PROJECT_FILE_BYTES:
        raise ValueError(
            f"{quoted(path)} is larger than {MAX_PROJECT_FILE_BYTES // 1024} KiB, the most a project file may be"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{quoted(path)}: cannot read it (not UTF-8 text)") from None


def _reason(err: BaseException) -> str:
    return err.strerror if isinstance(err, OSError) and err.strerror else type(err).__name__
