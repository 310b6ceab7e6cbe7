"""Names MLflow takes and gives: metric and param keys, artifact paths, the files ``log_image`` writes.

MLflow refuses some keys outright (``@ % ( )``, ``..``, ``//``, too long) and names image files after
their key, step and timestamp; the tracker and the reader agree on both through this module.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

# One character MLflow accepts in a metric/param name (its rule on Linux/macOS; Windows also refuses ":").
_FALLBACK_KEY_CHAR = re.compile(r"[/\w.\- :]")
# log_image(key=...) is stricter than metric names.
_IMAGE_KEY_CHAR = re.compile(r"[a-zA-Z0-9_\-./ ]")
_UNSAFE_PATH_CHARS = re.compile(r"[^\w.\- ]")
# MLflow 2.x separates the parts with "%" and writes "/" in keys as "#"; MLflow 3 uses "+" and "~".
IMAGE_FILE = re.compile(
    r"^images/(?P<key>.+)(?P<sep>[+%])step(?P=sep)(?P<step>\d+)(?P=sep)timestamp(?P=sep)(?P<time>\d+)(?P=sep)[0-9a-f-]+\.png$"
)


def sanitized_key(key: str, key_ok: Callable[[str], bool] | None, limit: int) -> str:
    """``key`` rewritten so MLflow takes it: refused characters as ``_``, no empty or dot-only parts, at most
    ``limit`` characters (a long key keeps its start and ends in a digest, so distinct keys stay distinct).

    ``key_ok`` is the installed MLflow's own check (``None``: the fallback character rule)."""
    if key_ok is not None and key and len(key) <= limit and key_ok(key):
        return key
    char_ok = (lambda c: key_ok(c) or c == "/") if key_ok is not None else _FALLBACK_KEY_CHAR.fullmatch
    text = "".join(c if char_ok(c) else "_" for c in key)
    parts = [part if part.strip(".") else "_" * len(part) for part in text.split("/") if part]
    text = "/".join(parts) or "_"
    if text.startswith(".."):
        text = "_" + text
    if len(text) > limit:  # keep the start readable, keep distinct long keys distinct
        digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:8]
        text = text[: limit - 9].rstrip("/") + "-" + digest
    return text


def image_key(key: str) -> str:
    """A (sanitized) key as ``log_image(key=...)`` takes it: its stricter characters, the others as ``_``."""
    return "".join(c if _IMAGE_KEY_CHAR.fullmatch(c) else "_" for c in key)


def png_name(artifact_file: str) -> str:
    """``artifact_file`` with the ``.png`` suffix: figures are always stored as PNG."""
    stem, suffix = os.path.splitext(artifact_file)
    return artifact_file if suffix.lower() == ".png" else f"{stem if suffix else artifact_file}.png"


def artifact_path(key: str) -> str:
    """A run-relative artifact path for a metric/table key: ``/`` kept as folders, nothing that escapes."""
    parts = []
    for part in key.split("/"):
        part = _UNSAFE_PATH_CHARS.sub("_", part)
        if part.strip("."):
            parts.append(part)
        elif part:
            parts.append("_" * len(part))  # "." and ".." would resolve to another path
    return "/".join(parts) or "_"


def chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    """``items`` in lists of at most ``size``: MLflow's per-request limits."""
    for start in range(0, len(items), max(1, size)):
        yield items[start : start + size]


def sdk_image_separator() -> str:
    """What MLflow's ``log_image(key=, step=)`` puts between the parts of a file name: ``%`` (MLflow 2.x) or ``+``.

    A tracking server URL-decodes the ``%`` names (``%29`` becomes ``)``), so such images reach a server's
    artifact store under altered names that MLflow's own image view no longer parses.
    """
    import inspect

    from mlflow import MlflowClient

    try:
        source = inspect.getsource(MlflowClient.log_image)
    except (OSError, TypeError):
        return "+"
    return "%" if "%step%" in source else "+"
