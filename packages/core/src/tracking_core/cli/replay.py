"""Push a journal (the run journal or a spill journal) into backends after the fact.

By default a replay completes the *original* run: each backend reopens the run it had (the state
``run.json`` kept) and gets exactly the records it does not hold yet (those past its cursor), so
replaying twice, or replaying after the backend recovered on its own, stores nothing twice.
``new_run=True`` copies the journal into a new run instead (marked ``replay_of``, which
``resume=True`` never picks).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from ..context import CONTEXT_SENT, send_context
from ..context.samples import SAMPLES_NAME
from ..delivery.spill import numbered
from ..delivery.worker import BackendWorker
from ..intake.config import merge_config
from ..intake.record import Record
from ..notices import notice
from ..report import FinishReport
from ..run.dispatcher import Dispatcher
from ..store.journal import (
    FOR_BACKEND,
    JOURNAL_NAME,
    journal_files,
    read_header,
    read_journal,
    record_from_entry,
    resolve_journal,
)
from ..store.manifest import MANIFEST_NAME, RunManifest
from ..store.rewind import current_entries


class Progress:
    """Progress of long work on stderr: a bar on a terminal, a line every few seconds in a log.

    Both show the rate and the time left, from what was really done (delivered), not queued.
    """

    def __init__(self, total: int, label: str, enabled: bool | None = None, every: float = 5.0, width: int = 30):
        self.total = max(total, 0)
        self.label = label
        self.enabled = True if enabled is None else enabled
        self.terminal = sys.stderr.isatty()
        self.every = every
        self.width = width
        self._began = time.monotonic()
        self._last_line = self._began
        self._last_percent = -1

    def update(self, done: int, final: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        elapsed = max(now - self._began, 1e-9)
        rate = done / elapsed
        left = (self.total - done) / rate if rate > 0 else float("inf")
        eta = "-" if left == float("inf") else f"{left:.0f} s"
        percent = min(100, done * 100 // self.total) if self.total else 100
        if self.total == 0:
            text = f"{self.label}: nothing to deliver (every record is already there)"
        else:
            text = f"{self.label}: {done}/{self.total} records delivered ({percent}%, {rate:,.0f}/s, ETA {eta})"
        if self.terminal:
            if percent == self._last_percent and not final:
                return
            self._last_percent = percent
            filled = self.width * percent // 100
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {text}" + ("\n" if final else ""))
        elif final or now - self._last_line >= self.every:
            self._last_line = now
            sys.stderr.write(text + "\n")
        sys.stderr.flush()


#: Kept for callers of the first release.
ProgressBar = Progress


def journal_config(journal: str | os.PathLike[str]) -> dict[str, Any]:
    """The configuration a journal recorded (what ``init_trackers`` of a replay should get)."""
    config: dict[str, Any] = {}
    for record in read_journal(resolve_journal(journal)):
        if record["type"] == "config":
            config = merge_config(config, record.get("values") or {})
    return config


def replay_into(
    run: Dispatcher, journal: str | os.PathLike[str], progress: bool | None = None, *, already: int = 0
) -> int:
    """Send the records of ``journal`` to an initialised dispatcher, as new records; returns how many.

    ``already``: records of the journal the run got before (the config given to ``init_trackers``), so
    that the progress counts what the finish report counts.
    """
    path = resolve_journal(journal)
    entries = [  # what a rewind superseded is left out: each step once (rewind.py)
        entry
        for entry in current_entries(list(read_journal(path)))
        if entry["type"] not in ("header", "config", "finish")
    ]
    bar = Progress(len(entries) + already, f"replay -> {','.join(t.name for t in run.trackers)}", enabled=progress)
    names = {tracker.name for tracker in run.trackers}
    for index, entry in enumerate(entries, 1 + already):
        record = record_from_entry(entry, path.parent)
        backend = entry.get(FOR_BACKEND)
        if record is not None and backend is None:
            _send(run, record, timestamp=record.timestamp)
        elif record is not None and backend in names:  # logged on that backend's own tracker: to it alone
            _send(run.get_tracker(backend), record)
        bar.update(index, final=index == len(entries) + already)
    if not entries:
        bar.update(already, final=True)
    return len(entries)


def _send(face: Any, record: Record, **extra: Any) -> None:
    """``record`` as a new call on ``face``: the run (every backend), or one backend's own tracker."""
    if record.kind == "log":
        face.log(record.payload, step=record.step, **extra)
    elif record.kind == "images":
        face.log_images(record.payload, step=record.step)
    elif record.kind == "table":
        name, columns, data, _ = record.payload
        face.log_table(name, columns=columns, data=data, step=record.step)
    elif record.kind == "histogram":
        name, histogram = record.payload
        face.log_histogram(name, histogram, step=record.step)
    elif record.kind == "artifact":
        face.log_artifact(*record.payload)
    elif record.kind == "artifacts":
        face.log_artifacts(*record.payload)


def _targets(to: str | Iterable[str] | None, header: dict[str, Any], path: Path) -> list[str]:
    if to is None:
        source = str(header.get("source", ""))
        if source.startswith("spill:"):
            return [source[len("spill:") :]]
        if path.name == JOURNAL_NAME and (path.parent / MANIFEST_NAME).is_file():
            # the run's own journal: into the backends the run had, each from its own cursor
            had = [name for name in RunManifest.load(path.parent).named if name != "jsonl"]
            if had:
                return had
        raise ValueError("replay: name the backends to replay into with --to (a spill journal names its own)")
    return [name.strip() for name in to.split(",") if name.strip()] if isinstance(to, str) else list(to)


def replay(
    journal: str | os.PathLike[str],
    to: str | Iterable[str] | None = None,
    *,
    logging_dir: str | os.PathLike[str] | None = None,
    project: str | None = None,
    progress: bool | None = None,
    new_run: bool = False,
) -> FinishReport:
    """Deliver ``journal`` to the backends in ``to`` (default: a spill journal's own backend; for a run's own
    journal, the backends the run had, each from where it got to).

    Into the original run (its ``run.json`` next to the journal) unless ``new_run`` is set, a
    ``logging_dir`` other than the journal's is given, or the journal predates record numbering;
    then into a new run under ``logging_dir`` (default: the journal's own logging dir).
    """
    path = resolve_journal(journal)
    header = read_header(path)
    targets = _targets(to, header, path)
    run_dir = path.parent
    seqs = [seq for file in journal_files(path) for seq in numbered(file)]
    if logging_dir is not None and Path(logging_dir).resolve() != run_dir.parent.parent.resolve():
        new_run = True  # the original run lives where it is: another folder means a copy
    if not new_run and not (run_dir / MANIFEST_NAME).is_file():
        notice(f"replay: no {MANIFEST_NAME} next to {path}; replaying into a new run")
        new_run = True
    if not new_run and not seqs:
        notice(f"replay: {path} has no record numbers (written by an older tracking-core); replaying into a new run")
        new_run = True
    if new_run:
        return _replay_into_new_run(path, header, targets, logging_dir, project, progress)

    if "jsonl" in targets and path.name == JOURNAL_NAME:
        # the run's jsonl backend stores into this very journal: replaying into it would append every record again
        notice(f"replay: {path} is the run's own journal, where jsonl stores it: nothing to deliver to jsonl")
        targets = [name for name in targets if name != "jsonl"]
        if not targets:
            return FinishReport({}, str(run_dir))
    manifest = RunManifest.load(run_dir)
    run = Dispatcher(
        log_with=targets, logging_dir=run_dir.parent.parent, resume=manifest.run_id, system_metrics=False, context=False
    )
    run.state.replay_sources = journal_files(path)
    run.init_trackers(manifest.project)
    owed = {name: sum(seq > (manifest.cursor(name) or -1) for seq in seqs) for name in targets}
    label = f"replay {path.name} -> {','.join(targets)}"
    bar = Progress(max(owed.values(), default=0), label, enabled=progress)
    # a replay delivers in this process (never through a delivery process): every worker is a BackendWorker
    workers = [worker for worker in run.state.all_workers if isinstance(worker, BackendWorker)]
    for worker in workers:
        worker.started.wait()
    while not all(worker.delivery.mode == "live" or worker.delivery.finished for worker in workers):
        if all(worker.started.is_set() for worker in workers) and all(
            worker.delivery.mode == "spilling" for worker in workers
        ):
            break  # every target is down: finish() makes one more attempt, then reports
        bar.update(min(worker.report.delivered for worker in workers) if workers else 0)
        time.sleep(0.2)
    report = run.finish()
    bar.update(min((backend.delivered for backend in report.backends.values()), default=0), final=True)
    return report


def _carry_run_folder_records(source_dir: Path, manifest: RunManifest) -> dict[str, Any] | None:
    """A copy keeps what the original run recorded of its own: its context (run.json) and its samples.
    Returns the context when the original sent it to its backends (``context=True``), else ``None``."""
    try:
        extra = RunManifest.load(source_dir).extra
    except (OSError, ValueError, KeyError, TypeError):
        extra = {}
    context = extra.get("context")
    if context is not None:
        manifest.extra["context"] = context
        manifest.extra[CONTEXT_SENT] = bool(extra.get(CONTEXT_SENT))
    samples = source_dir / SAMPLES_NAME
    if samples.is_file():
        shutil.copyfile(samples, manifest.path.parent / SAMPLES_NAME)
    return context if isinstance(context, dict) and extra.get(CONTEXT_SENT) else None


def _source_started(path: Path, header: dict[str, Any]) -> float | None:
    """When the journal's run began: its run.json, else the journal header's ``created``."""
    try:
        return float(RunManifest.load(path.parent).started)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        return datetime.fromisoformat(str(header["created"])).timestamp()
    except (KeyError, TypeError, ValueError):
        return None


def _replay_into_new_run(
    path: Path,
    header: dict[str, Any],
    targets: list[str],
    logging_dir: str | os.PathLike[str] | None,
    project: str | None,
    progress: bool | None,
) -> FinishReport:
    if logging_dir is None:
        logging_dir = path.parent.parent.parent  # <logging_dir>/<project>/<run_id>/journal.jsonl
    # the copy carries the original run's context and samples, not this process's
    run = Dispatcher(log_with=targets, logging_dir=logging_dir, system_metrics=False, context=False)
    run.state.started = _source_started(path, header)  # the copy began when the original did (each backend's start)
    config = journal_config(path) or None
    run.init_trackers(project or header.get("project") or "replay", config=config)
    if run.state.session is not None and run.state.session.writes:
        manifest = run.state.session.manifest
        manifest.extra["replay_of"] = str(header.get("run_id") or path)
        sent = _carry_run_folder_records(path.parent, manifest)
        manifest.write()
        if sent is not None:  # the original's backends got its context: so do the copy's
            send_context(run, sent)
    replay_into(run, path, progress=progress, already=0 if config is None else 1)
    return run.finish()
