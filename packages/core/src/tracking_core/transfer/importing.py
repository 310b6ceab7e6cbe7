"""``tracking import``: find the backend's importer, stream its runs into journals, report.

Importers come from the ``tracking.importers`` entry-point group (each backend package registers
its own); :func:`register_importer` adds one in-process, for tests and for code that has its own.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..contract.registry import install_command
from .model import SourceError, SourceRun
from .writer import ImportedRun, imported_runs, write_run

__all__ = ["ENTRY_POINT_GROUP", "ImportReport", "import_runs", "importer_for", "register_importer"]

ENTRY_POINT_GROUP = "tracking.importers"
Importer = Callable[..., Iterable[SourceRun]]
_registered: dict[str, Importer] = {}
T = TypeVar("T")


def register_importer(name: str, importer: Importer) -> None:
    """Make ``importer`` the one ``tracking import <name>`` uses in this process."""
    _registered[name] = importer


def _installed() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {entry.name: entry for entry in entry_points(group=ENTRY_POINT_GROUP)}


def importer_for(backend: str) -> Importer:
    """The importer registered for ``backend``; an ``ImportError`` naming what is installed otherwise."""
    if backend in _registered:
        return _registered[backend]
    installed = _installed()
    if backend not in installed:
        names = sorted(set(installed) | set(_registered))
        raise ImportError(
            f"no importer for {backend!r} (installed: {', '.join(names) or 'none'}); "
            f"install the backend's package: {install_command(backend)}"
        )
    loaded: Importer = installed[backend].load()
    return loaded


class _Progress:
    """A running count and rate on stderr, shown once an import has taken a second."""

    def __init__(self, label: str, enabled: bool) -> None:
        self.label, self.enabled = label, enabled
        self.terminal = sys.stderr.isatty()
        self.began = time.monotonic()
        self.last = self.began
        self.shown = False
        self.points = 0
        self.runs = 0

    def tick(self, final: bool = False) -> None:
        now = time.monotonic()
        every = 0.5 if self.terminal else 5.0
        if not self.enabled or now - self.began < 1.0 or (not final and now - self.last < every):
            return
        self.last, self.shown = now, True
        rate = self.points / max(now - self.began, 1e-9)
        text = f"{self.label}: {self.runs} runs, {self.points:,} points ({rate:,.0f} points/s)"
        sys.stderr.write(("\r" + text if self.terminal else text + "\n") + ("\n" if final and self.terminal else ""))
        sys.stderr.flush()

    def count(self, items: Iterable[T]) -> Iterator[T]:
        for item in items:
            self.points += 1
            if not self.points & 0x3FF:
                self.tick()
            yield item


@dataclass
class ImportReport:
    """What ``tracking import`` did: the runs written, and the error that stopped it, if one did."""

    backend: str
    source: str
    runs: list[ImportedRun] = field(default_factory=list)
    error: SourceError | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    def __str__(self) -> str:
        points = sum(run.points for run in self.runs)
        lines = [
            f"imported {len(self.runs)} run(s), {points:,} points from {self.backend} {self.source} "
            f"in {self.seconds:.1f} s"
        ]
        lines += [run.describe() for run in self.runs]
        if self.error is not None:
            lines.append(f"stopped: {self.error}")
            lines.append(
                f"the {len(self.runs)} run(s) above were imported before it; the run being read was not written"
            )
        elif self.runs:
            lines.append(f"next: tracking replay {self.runs[0].run_dir} --to <backend>")
        return "\n".join(lines)


def import_runs(
    backend: str,
    source: str,
    *,
    logging_dir: str | os.PathLike[str] = "runs",
    project: str | None = None,
    options: dict[str, str] | None = None,
    progress: bool | None = None,
) -> ImportReport:
    """Import every run ``source`` holds into journals under ``logging_dir``.

    A :class:`SourceError` stops the import; the runs written before it stay, and the report says so.
    """
    importer = importer_for(backend)
    report = ImportReport(backend, source)
    bar = _Progress(f"import {backend}", enabled=progress is not False)
    began = time.monotonic()
    known = imported_runs(Path(logging_dir))
    try:
        for run in importer(source, options=dict(options or {})):
            run.points = bar.count(run.points)
            report.runs.append(write_run(run, Path(logging_dir), project=project, known=known))
            bar.runs += 1
            bar.tick()
    except SourceError as error:
        report.error = error
    finally:
        _drop_partial(Path(logging_dir))
        report.seconds = time.monotonic() - began
        bar.tick(final=True)
    return report


def _drop_partial(logging_dir: Path) -> None:
    """Remove the folder of a run an error interrupted (``write_run`` builds it aside)."""
    import shutil

    for partial in logging_dir.glob("*/.*.importing"):
        shutil.rmtree(partial, ignore_errors=True)
