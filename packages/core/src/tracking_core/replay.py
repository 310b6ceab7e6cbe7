"""Push a journal (the run journal or a spill journal) into other backends after the fact."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .dispatcher import Dispatcher
from .journal import read_header, read_journal, resolve_journal
from .report import FinishReport


class ProgressBar:
    """A one-line progress bar on stderr; silent when stderr is not a terminal unless forced."""

    def __init__(self, total: int, label: str, enabled: bool | None = None, width: int = 30) -> None:
        self.total = max(total, 1)
        self.label = label
        self.width = width
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._last = -1

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        percent = min(100, done * 100 // self.total)
        if percent == self._last and done != self.total:
            return
        self._last = percent
        filled = self.width * percent // 100
        sys.stderr.write(
            f"\r{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {percent:3d}% {done}/{self.total}"
        )
        if done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _load_image(path: Path) -> Any:
    from .png import load_png

    return load_png(path)


def journal_config(journal: str | os.PathLike) -> dict:
    """The configuration a journal recorded (what ``init_trackers`` of a replay should get)."""
    config: dict = {}
    for record in read_journal(resolve_journal(journal)):
        if record["type"] == "config":
            config.update(record.get("values") or {})
    return config


def replay_into(run: Dispatcher, journal: str | os.PathLike, progress: bool | None = None) -> int:
    """Send the records of ``journal`` to an initialised dispatcher; returns how many were sent."""
    path = resolve_journal(journal)
    records = [record for record in read_journal(path) if record["type"] not in ("header", "config", "finish")]
    bar = ProgressBar(len(records), f"replay -> {','.join(t.name for t in run.trackers)}", enabled=progress)
    base = path.parent
    for index, record in enumerate(records, 1):
        kind = record["type"]
        step = record.get("step")
        if kind == "metrics":
            run.log(record.get("values") or {}, step=step, timestamp=record.get("time"))
        elif kind == "images":
            images = {
                key: [_load_image(base / item) for item in items] for key, items in (record.get("images") or {}).items()
            }
            run.log_images(images, step=step)
        elif kind == "table":
            run.log_table(record["name"], columns=record.get("columns"), data=record.get("data"), step=step)
        elif kind == "figure":
            run.log_images({record["name"]: _load_image(base / record["path"])}, step=step)
        elif kind in ("artifact", "artifacts"):
            local = record.get("local_path")
            if local and os.path.exists(local):
                (run.log_artifact if kind == "artifact" else run.log_artifacts)(local, record.get("artifact_path"))
        bar.update(index)
    return len(records)


def replay(
    journal: str | os.PathLike,
    to: str | Iterable[str],
    *,
    logging_dir: str | os.PathLike | None = None,
    project: str | None = None,
    progress: bool | None = None,
) -> FinishReport:
    """Send every record of ``journal`` to the backends in ``to``; returns their finish report.

    The default ``logging_dir`` is the one the journal was written under, so embedded backends
    land next to the original run.
    """
    path = resolve_journal(journal)
    header = read_header(path)
    targets = [name.strip() for name in to.split(",")] if isinstance(to, str) else list(to)
    if logging_dir is None:
        logging_dir = path.parent.parent.parent  # <logging_dir>/<project>/<run_id>/journal.jsonl
    run = Dispatcher(log_with=targets, logging_dir=logging_dir)
    run.init_trackers(project or header.get("project") or "replay", config=journal_config(path) or None)
    replay_into(run, path, progress=progress)
    return run.finish()
