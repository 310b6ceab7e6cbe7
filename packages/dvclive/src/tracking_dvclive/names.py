"""Metric keys as names in DVCLive's folder: paths that stay inside it, and never both a value and a group.

DVCLive writes ``plots/metrics/<name>.tsv`` and nests ``metrics.json`` by ``/``, so a key is made a safe
relative path, and of ``a`` and ``a/b`` (a value and a group of values there) the later becomes ``a_b``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from tracking_core.kit import MAX_NAME_LENGTH

_UNSAFE = re.compile(r"[\\:\x00-\x1f\x7f]")


def _safe_segment(segment: str) -> str:
    """One folder or file name DVCLive can create inside its folder, whatever the key held."""
    segment = _UNSAFE.sub("_", segment)
    if segment in (".", ".."):
        segment = segment.replace(".", "_")
    # room for DVCLive's ".tsv"; a cut name keeps a digest so two long keys stay two files
    limit = MAX_NAME_LENGTH - 4
    if len(segment.encode()) > limit:
        digest = hashlib.sha1(segment.encode(), usedforsecurity=False).hexdigest()[:10]
        segment = segment.encode()[: limit - 11].decode(errors="ignore") + "-" + digest
    return segment


def safe_path(key: str) -> str:
    """``key`` as a relative ``/``-path that stays inside DVCLive's folder (``..``, ``/abs``, ``a//b`` cannot)."""
    parts = [_safe_segment(part) for part in str(key).split("/") if part]
    return "/".join(parts) or "_"


class MetricNames:
    """The run's key -> metric name map; a name once given is kept (a resumed folder's too)."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}  # key -> metric name in DVCLive's folder
        self._leaves: set[tuple[str, ...]] = set()
        self._prefixes: set[tuple[str, ...]] = set()

    def learn(self, root: Path) -> None:
        """The names of the ``.tsv`` files already under ``root`` (``plots/metrics``), which hold their places."""
        for path in root.rglob("*.tsv") if root.is_dir() else ():
            name = path.relative_to(root).with_suffix("").as_posix()
            self._claim(tuple(name.split("/")))
            self._names[name] = name

    def _claim(self, parts: tuple[str, ...]) -> None:
        self._leaves.add(parts)
        self._prefixes.update(parts[:end] for end in range(1, len(parts)))

    def _clashes(self, parts: tuple[str, ...]) -> bool:
        """DVCLive nests ``metrics.json`` by ``/``: ``a`` and ``a/b`` cannot both hold a value there."""
        return parts in self._prefixes or any(parts[:end] in self._leaves for end in range(1, len(parts)))

    def name(self, key: str) -> str:
        """The metric name of ``key``, the same every time."""
        name = self._names.get(key)
        if name is not None:
            return name
        name = safe_path(key)
        parts = tuple(name.split("/"))
        if parts not in self._leaves and self._clashes(parts):
            name = name.replace("/", "_")
            while (name,) in self._prefixes:  # a flat name already a leaf is this key's own series after a resume
                name += "_"
            parts = (name,)
        self._claim(parts)
        self._names[key] = self._names[name] = name
        return name
