"""The path rule: a name the library turns into a file or folder name stays inside ``logging_dir``.

A project name, a run id, a ``resume`` id, a name a backend turns into a folder (TensorBoard's
``run_id``, Trackio's ``name``, ...) and an ``artifact_path`` come from the caller, often from a
command line or a config file. Joined to ``logging_dir`` as they are, ``".."``, ``"/abs"`` or
``"a/../../b"`` would write outside it. So every such name is checked where it enters the library and
refused with a ``ValueError`` that names the parameter: a silent rewrite would scatter a run under
a name nobody asked for, and resuming it later would not find it.

A *name* (one path component) must be non-empty, at most ``MAX_NAME_LENGTH`` characters, valid
UTF-8 (no lone surrogates), and hold no ``/``, ``\\``, ``:`` or control character (NUL, newline,
tab, ...); it must not be ``.`` or ``..``, start or end with whitespace, end with a dot, or be a
name Windows reserves for devices (``CON``, ``NUL``, ``COM1``, ... with or without an extension).
An *artifact path* is a relative path of such names joined by ``/`` (a trailing ``/`` is ignored).

Symlinks: ``log_artifact(path)`` logs the content of the file ``path`` points to, under the link's
name: the caller named that file. ``log_artifacts(folder)`` hands the folder to each SDK, which reads
linked files through their links; links that lead outside the folder (``secrets -> ~/.ssh``) are
named in one ``TrackingWarning`` at the call (:func:`warn_links_leaving`), so nothing is copied out of
a place the caller did not look at without a word.

Explicit directories (``logging_dir``, TensorBoard's ``log_dir``, W&B's ``dir``, Aim's ``repo``)
are the caller's choice of where to write and are not checked.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, cast

MAX_NAME_LENGTH = 128
MAX_ARTIFACT_PATH_LENGTH = 1024

_FORBIDDEN = re.compile(r"[/\\:\x00-\x1f\x7f]")
_WINDOWS_DEVICES = frozenset(
    ["con", "prn", "aux", "nul"] + [f"com{i}" for i in range(10)] + [f"lpt{i}" for i in range(10)]
)


def name_problem(name: Any) -> str | None:
    """Why ``name`` cannot be one file or folder name, or ``None`` when it can."""
    if not isinstance(name, str):
        return f"must be a str, got {type(name).__name__}"
    if not name:
        return "must not be empty"
    if name in (".", ".."):
        return f"{name!r} names a folder relative to its parent, not a new one"
    if len(name) > MAX_NAME_LENGTH:
        return f"is {len(name)} characters long; at most {MAX_NAME_LENGTH} are allowed"
    found = _FORBIDDEN.search(name)
    if found:
        return f"must not contain {found.group()!r} (path separators, ':' and control characters are refused)"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid UTF-8 text (it holds a lone surrogate)"
    if name != name.strip():
        return "must not start or end with whitespace"
    if name.endswith("."):
        return "must not end with '.'"
    if name.split(".", 1)[0].lower() in _WINDOWS_DEVICES:
        return f"{name!r} is a device name on Windows"
    return None


def check_name(name: Any, parameter: str) -> str:
    """``name`` if it can be one file or folder name under ``logging_dir``, else a ``ValueError``."""
    problem = name_problem(name)
    if problem:
        raise ValueError(f"{parameter}={_shown(name)} {problem}; it becomes a folder or file name under logging_dir")
    return cast(str, name)  # name_problem refuses anything but a str


def check_optional_name(name: Any, parameter: str) -> Any:
    """:func:`check_name` for a keyword that may be ``None`` (the backend then picks the name)."""
    return None if name is None else check_name(name, parameter)


def check_artifact_path(path: Any, parameter: str = "artifact_path") -> str | None:
    """A relative ``a/b/c`` path inside a run's artifacts, or ``None``; else a ``ValueError``.

    Returns the path without a trailing ``/``; ``""`` and ``"/"`` count as no path (``None``).
    """
    if path is None:
        return None
    if not isinstance(path, str):
        raise ValueError(f"{parameter}={_shown(path)} must be a str of '/'-separated names")
    if path.startswith("/") and path.strip("/"):
        raise ValueError(f"{parameter}={_shown(path)} must be relative to the run's artifacts, not absolute")
    trimmed = path.rstrip("/")
    if not trimmed:
        return None
    if len(trimmed) > MAX_ARTIFACT_PATH_LENGTH:
        raise ValueError(f"{parameter} is {len(trimmed)} characters long; at most {MAX_ARTIFACT_PATH_LENGTH}")
    for part in trimmed.split("/"):
        problem = name_problem(part)
        if problem:
            raise ValueError(
                f"{parameter}={_shown(path)}: the part {_shown(part)} {problem}; "
                "an artifact path is a relative path of names joined by '/'"
            )
    return trimmed


def links_leaving(folder: str | os.PathLike[str], limit: int = 10_000) -> list[str]:
    """Symlinks under ``folder`` whose target lies outside it (relative paths), without following linked folders.

    Stops after ``limit`` entries so a huge folder costs the caller a bounded walk.
    """
    root = Path(folder).resolve()
    leaving: list[str] = []
    seen = 0
    for directory, folders, files in os.walk(root):
        for name in folders + files:
            seen += 1
            path = Path(directory, name)
            if path.is_symlink():
                target = path.resolve()
                if target != root and root not in target.parents:
                    leaving.append(path.relative_to(root).as_posix())
        if seen >= limit:
            break
    return leaving


def warn_links_leaving(folder: str | os.PathLike[str]) -> None:
    """One ``TrackingWarning`` naming the links under ``folder`` that lead outside it (their content is logged)."""
    leaving = links_leaving(folder)
    if leaving:
        from ..notices import warn_once

        shown = ", ".join(leaving[:5]) + (f" and {len(leaving) - 5} more" if len(leaving) > 5 else "")
        warn_once(
            "all backends",
            os.fspath(folder),
            f"log_artifacts: symlinks leading outside the folder are logged with their targets' content: {shown}",
            reason="links-leaving",
            stacklevel=4,
        )


def _shown(value: Any) -> str:
    """The value for an error message: repr, cut short (a 10,000-character name need not be quoted whole)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:60] + "...'" + f" ({len(value) if isinstance(value, str) else '?'} chars)"
