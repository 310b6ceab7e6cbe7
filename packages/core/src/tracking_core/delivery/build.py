"""The one place a :class:`~.engine.Delivery` is built: in thread mode, in the delivery process, and when
the training process takes over from a delivery process that died.

The callers differ only in what they pass: the run's options, where the backend starts
(:class:`DeliveryPlan`, read from its cursor file and ``run.json``) and whom the delivery tells about
its start, its progress and its errors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from ..backends.jsonl import JsonlTracker
from ..contract.tracker import GeneralTracker
from ..errors import TrackingError
from ..intake.record import Record
from ..report import BackendReport
from ..store.cursor import CursorFile
from ..store.journal import JOURNAL_NAME
from .engine import Delivery
from .recovery import RetryPolicy
from .run_journal import RunJournal
from .spill import SpillJournal, spill_name


class DeliveryOptions(NamedTuple):
    """The run's options every backend's delivery follows (``init``'s arguments of the same names)."""

    on_error: str = "warn"
    flush_interval: float = 1.0
    retry: RetryPolicy = RetryPolicy()


class DeliveryPlan(NamedTuple):
    """Where a backend's delivery starts, and what it catches up on before the records to come."""

    #: the highest ``seq`` (and metric step) the backend holds durably
    cursor: int = -1
    cursor_step: int = -1
    #: the furthest ``seq`` it took, durable or not, and its step (a kill inside a call leaves it past the cursor)
    handed: tuple[int, int] = (-1, -1)
    #: journals whose records past the cursor it missed (a resumed run, a replay), read up to ``backlog_before``
    backlog_paths: Sequence[Path] = ()
    backlog_before: float = float("inf")
    #: records it missed that are in no journal (taken back from a delivery process that died)
    backlog_records: Sequence[Record] = ()


class RunPlace(NamedTuple):
    """Where the run's files are: a backend's spill journal and cursor file go in ``run_dir``."""

    project: str
    run_id: str | None
    run_dir: Path


def build_delivery(
    tracker: GeneralTracker,
    report: BackendReport,
    *,
    place: RunPlace,
    options: DeliveryOptions,
    plan: DeliveryPlan,
    cursor_file: CursorFile | None,
    on_started: Callable[[], None],
    on_progress: Callable[[str, int, int], None],
    error_sink: Callable[[TrackingError], None],
    run_journal: RunJournal | None = None,
) -> Delivery:
    """The delivery of ``tracker``; ``run_journal`` is this process's view of the run's journal: attached to
    the journal's own delivery, and where the other backends leave what the journal holds already."""
    name = tracker.name
    writes_the_journal = isinstance(tracker, JsonlTracker) and tracker.journal_name == JOURNAL_NAME
    delivery = Delivery(
        tracker,
        report,
        # a spill journal is written by the jsonl backend, opened at the first record that needs it
        spill=SpillJournal(
            lambda: JsonlTracker(
                place.project, run_dir=place.run_dir, run_id=place.run_id, journal_name=spill_name(name)
            )
        ),
        on_error=options.on_error,
        error_sink=error_sink,
        flush_interval=options.flush_interval,
        retry=options.retry,
        on_started=on_started,
        on_progress=on_progress,
        cursor_file=cursor_file,
        cursor=plan.cursor,
        cursor_step=plan.cursor_step,
        handed=plan.handed,
        backlog_paths=plan.backlog_paths,
        backlog_before=plan.backlog_before,
        backlog_records=plan.backlog_records,
        run_journal=None if writes_the_journal else run_journal,
        run_dir=place.run_dir,
    )
    if isinstance(tracker, JsonlTracker) and writes_the_journal and run_journal is not None:
        run_journal.attach(delivery, tracker)
    return delivery
