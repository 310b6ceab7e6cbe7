"""What an importer reads out of a backend's store, before it becomes a journal.

An importer is a function registered under the ``tracking.importers`` entry-point group, named after
the backend (``mlflow = "tracking_mlflow.importer:read_runs"``)::

    def read_runs(source: str, *, options: dict[str, str] | None = None) -> Iterator[SourceRun]: ...

``source`` is what the user typed after the backend's name (a folder, a file, a store URI, a run id);
``options`` carries the command's extra ``--option key=value`` pairs. It yields one ``SourceRun`` per
run it finds, reading lazily so a large store streams. It opens the source read-only and never writes
to it. A damaged source raises :class:`SourceError`; the runs already yielded stay imported.

Everything is plain data so an importer needs nothing from core but this module.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["Media", "Point", "SourceError", "SourceRun"]


class Point(NamedTuple):
    """One scalar (or text) value of a series, as the source stored it."""

    key: str
    step: int
    value: float | int | str
    time: float | None = None  # Unix seconds; None where the source keeps no time


class Media(NamedTuple):
    """One non-scalar record.

    ``kind`` and ``data``:

    * ``"image"`` -- ``data`` is PNG or JPEG bytes (or a path to such a file);
    * ``"table"`` -- ``data`` is ``{"columns": [...], "data": [[...], ...]}``;
    * ``"histogram"`` -- ``data`` is ``{"counts": [...], "edges": [...]}`` (edges one longer);
    * ``"text"`` -- ``data`` is a string (a logged text, not a scalar series);
    * ``"artifact"`` -- ``data`` is a local path (file or folder) to copy; ``key`` is the
      artifact path inside the run.
    """

    kind: str
    key: str
    step: int | None
    data: Any
    time: float | None = None


@dataclass
class SourceRun:
    """One run of a source store, as an importer read it."""

    backend: str  # the importer's name: "mlflow", "tensorboard", ...
    source_id: str  # stable identity of the run in its source: re-importing it is idempotent by this
    name: str | None = None
    project: str | None = None
    started: float | None = None  # Unix seconds
    ended: float | None = None
    status: str | None = None  # the source's own word ("FINISHED", "crashed", ...) if it keeps one
    config: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    points: Iterable[Point] = ()
    media: Iterable[Media] = ()
    not_carried: list[str] = field(default_factory=list)  # what the source holds that a journal cannot carry
    location: str = ""  # the file or folder this run was read from, for messages


class SourceError(Exception):
    """A source that cannot be read (truncated, corrupt, not the format named).

    ``path`` names the file; ``imported`` says what was read up to there (for the message).
    """

    def __init__(self, path: str, message: str, *, imported: str = "") -> None:
        detail = f"{path}: {message}"
        if imported:
            detail += f" (imported up to there: {imported})"
        super().__init__(detail)
        self.path = path
        self.imported = imported
