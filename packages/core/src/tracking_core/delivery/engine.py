"""``Delivery``: how one backend's records reach it exactly once, whatever the backend does.

One instance per backend, driven by its worker thread (or, with ``blocking=True``, by the caller
under a lock). It decides, record by record:

* **stored or not.** A call that returned stored its records; with backends that buffer them
  until ``flush`` (see ``GeneralTracker.durable_on_return``), they count as delivered only once
  ``flush`` returned. ``PartialDelivery``
  tells how much of a failed batch was stored.
* **refused values vs. a backend that is down.** A value error (the SDK refuses a key or a value)
  costs only what it refuses: the batch is retried record by record, a record key by key (halving),
  and the refused keys are skipped with one warning and a report entry. Any other error means the
  backend is down: the records it did not store, and every record after them, wait, in the run's
  journal when it holds them (nothing is copied), else in the backend's spill journal.
* **coming back.** While records wait, the backend is retried with exponential backoff; when a retry
  gets through, the journal and the spill are read from the backend's cursor on, merged in order
  (new records keep waiting meanwhile, so the loop never waits), then live delivery resumes. A
  resumed run's backlog and a replay are read the same way, from the same cursor.
* **progress.** After every flush the backend's cursor (the highest ``seq`` it holds durably)
  and its last durable step are published, for ``run.json``.

``Delivery`` holds the state and routes each batch; the parts that act on it are objects it owns, one
per concern (each reads and moves the same state, under the same ``handover`` rule): :class:`~.live.Live`
(every call into the SDK; the live path and refusal isolation), :class:`~.recovery.Outage` (failures,
retries, spill-over and the way back), :class:`~.backlog.Backlog` (catch-up and spill reading) and
:class:`~.flushing.Flushes` (the flush clock and the progress it publishes) and :class:`~.ending.Ending` (finish,
abandon).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contract.tracker import GeneralTracker, has_capability
from ..errors import TrackingError
from ..intake.record import CONTROL_KINDS, SIDE_KINDS, Record
from ..notices import logger, warn_once
from ..report import BackendReport
from ..store import rewind
from ..store.cursor import CursorFile
from .backlog import Backlog
from .catch_up import CatchUp, kept_in
from .ending import Ending
from .flushing import Flushes
from .handover import Handover
from .import_race import start_retrying_import_races
from .live import Live
from .mapping import BackendValues
from .missing import lacking_kinds
from .positions import Positions
from .recovery import (
    LIVE,
    RECOVERING,
    SPILLING,
    Mode,
    Outage,
    RetryPolicy,
    enter,
)
from .spill import OwedReader, SpillJournal
from .spiller import JOURNAL_POLL_SECONDS, Spiller, in_order

if TYPE_CHECKING:
    from .run_journal import RunJournal

__all__ = ["Delivery"]


class Delivery:
    """One backend's records, delivered exactly once and in order; driven by one thread at a time."""

    def __init__(
        self,
        tracker: GeneralTracker,
        report: BackendReport,
        *,
        spill: SpillJournal,
        on_error: str = "warn",
        error_sink: Callable[[TrackingError], None] | None = None,
        flush_interval: float = 1.0,
        retry: RetryPolicy = RetryPolicy(),  # noqa: B008 - immutable
        on_started: Callable[[], None] | None = None,
        on_progress: Callable[[str, int, int], None] | None = None,
        cursor_file: CursorFile | None = None,
        cursor: int = -1,
        cursor_step: int = -1,
        handed: tuple[int, int] = (-1, -1),
        backlog_paths: Iterable[Path] = (),
        backlog_before: float = float("inf"),
        backlog_records: Iterable[Record] = (),
        run_journal: RunJournal | None = None,
        run_dir: Path | None = None,
    ) -> None:
        self.tracker = tracker
        self.name = tracker.name
        self.report = report
        self.values = BackendValues(tracker, report)
        #: the spill journal, the lock both threads take to write it, and the config that heads it
        #: the side-record kinds this tracker declares it takes (intake.record.SIDE_KINDS); others never reach it
        self.side_kinds = frozenset(kind for kind, method in SIDE_KINDS.items() if has_capability(tracker, method))
        self.spiller = Spiller(spill, self.name, report, self.side_kinds, run_journal)
        #: the run's journal written in this process, which takes each record before this backend does
        self.run_journal = run_journal
        self._on_started = on_started
        durable = tracker.durable_on_return
        self.confirms_at_flush = not durable if durable is not None else type(tracker).flush is not GeneralTracker.flush
        # a backend whose finish() makes buffered records durable needs no flush just before it
        self.flush_before_finish = not (self.confirms_at_flush and tracker.durable_at_finish)
        #: Held by the delivering thread except while it waits on the SDK: ``abandon`` takes it, so at
        #: that moment every record still owed sits in one of this object's lists (or the queue),
        #: never only in a thread's local variables.
        self._handover = Handover()
        self.handover = self._handover.lock
        #: the batch the worker took off its queue, and how far into it delivery has got
        self.held: list[Record] = []
        self.held_next = 0
        self.mode: Mode = LIVE
        self.started = False
        self.abandoned = False
        #: record kinds this backend cannot store (a package they need is missing) -> why
        self.unavailable_kinds: dict[str, str] = {}
        #: record kinds this backend has no method for -> why; only a journal caught up from holds them
        self.lacking_kinds = lacking_kinds(tracker)
        self.finished = False
        #: how far the backend got (durable, handed over), and the cursor file that keeps it
        self.positions = Positions(cursor, cursor_step, cursor_file, handed)
        self.in_flight: list[Record] = []
        self.unconfirmed: list[Record] = []
        #: when the worker last looked at its queue (took records, or found none): ``seconds_busy`` counts from it
        self._at_queue = time.monotonic()
        #: what the backend owes after an outage, read while it recovers (``recovery.Outage.retry_backend``)
        self.spill_reader: OwedReader | None = None
        #: what the backend missed before this process (resume, replay, take-over), delivered first
        self.catch_up = CatchUp(
            self.name, backlog_paths, backlog_records, backlog_before, handed[0], kept_in(run_dir, self.name)
        )
        #: resume_step went back: the rewind applied before this process's first record (rewind.py), and
        #: the records every rewind of the run superseded (never delivered)
        self.rewind_due, self._superseded = rewind.due(tracker.run_context)
        #: the parts that act on this state: calls into the SDK as records come (refused values
        #: isolated), the backend being down and coming back, the backlog, and the end
        self.live = Live(self)
        self.flushes = Flushes(self, flush_interval, on_progress)
        self.outage = Outage(self, retry, on_error, error_sink)
        self.backlog = Backlog(self)
        self.ending = Ending(self)

    # -- start-up ----------------------------------------------------------------------------
    def start(self) -> None:
        enter(self.report, "starting")
        began = time.monotonic()
        try:
            start_retrying_import_races(self.name, self.tracker.start, self.in_backend)
        except BaseException as error:
            if isinstance(error, ImportError) and "partially initialized" not in str(error):
                self.outage.can_retry_start = False  # a missing package does not come back by itself
            self.outage.failed(error, "start", [])
        else:
            self.mark_started()
        finally:
            self.report.ready_at = time.monotonic()
            self.report.start_seconds = self.report.ready_at - began

    def mark_started(self) -> None:
        self.started = True
        # The flush clock starts with the backend: records that waited for a long start-up (an SDK's
        # import) are delivered before the first flush, not held up by one.
        self.flushes.last = time.monotonic()
        if self.mode == LIVE:
            enter(self.report, "running")
        if self._on_started is not None:
            try:
                self._on_started()
            except Exception as error:  # bookkeeping must never stop a backend that started
                logger.warning("backend %r: after start-up: %r", self.name, error)
        if self.catch_up.wanted() and self.mode == LIVE:
            # What the backend missed comes first, read from its cursor with what waits meanwhile (after a
            # start that failed and was retried, ``Outage.retry_backend`` reads it the same way)
            self.spill_reader = self.owed_reader()
            self.mode = RECOVERING

    # -- records -----------------------------------------------------------------------------
    def own(self) -> None:
        """The calling thread delivers from now on: it holds ``handover`` outside SDK calls."""
        self._handover.own()

    def disown(self) -> None:
        self._handover.disown()

    def in_backend(self) -> contextlib.AbstractContextManager[None]:
        """Around a call into the SDK, which may hang: ``abandon`` and ``spill_over`` must not wait for it."""
        return self._handover.in_backend()

    def in_sdk(self) -> bool:
        """Whether the backend's thread is inside a call into the SDK (what a caller waiting for room is told)."""
        return self._handover.in_sdk()

    def seconds_in_sdk(self) -> float:
        """How long the backend's thread has been inside its current SDK call; 0 outside one."""
        return self._handover.seconds_in_sdk()

    def at_queue(self) -> None:
        """The worker looks at its queue: whatever it did since, it is ready to take records."""
        self._at_queue = time.monotonic()

    def seconds_busy(self) -> float:
        """How long since the worker last looked at its queue: what a full queue has waited for.

        One SDK call that hangs, or calls that each take seconds and fail (an SDK's own HTTP retries: the
        batch, the flush after it, the spill's retry), count alike: the loop waits for all of them.
        """
        return time.monotonic() - self._at_queue

    def spill_over(self, pending: list[Record], stuck: bool = True) -> list[Record]:
        """The backend sat in one SDK call while its queue filled up, or ``on_full="spill"``: see ``Outage.spill_over``."""
        return self.outage.spill_over(pending, stuck)

    def hold(self, batch: list[Record]) -> None:
        """The worker took ``batch`` off its queue (it may still grow): owed until ``handle`` takes it."""
        self.held, self.held_next = batch, 0

    def wait_for_the_journal(self, batch: list[Record]) -> None:
        """The journal first: ``batch`` (held) goes to the SDK once the run's journal has written it.

        The handover lock is let go meanwhile; ``abandon`` finds the batch held."""
        run_journal = self.run_journal
        if run_journal is None or self.mode != LIVE:
            return
        last = max((record.seq for record in batch if record.seq is not None), default=None)
        if last is None or run_journal.may_take(last):
            return
        self.disown()
        try:
            run_journal.wait_until_held(last, lambda: self.abandoned or self.finished)
        finally:
            self.own()

    def handle(self, batch: list[Record]) -> None:
        """Deliver (or spill) a drained batch in order, grouping consecutive metric records."""
        self.hold(batch)
        index = 0
        while index < len(batch) and not self.abandoned:
            end = index + 1
            if batch[index].kind == "log":
                while end < len(batch) and batch[end].kind == "log":
                    end += 1
            self.held_next = end
            self.in_flight = batch[index:end]
            try:
                self._handle_group(self.in_flight)
            except Exception as error:
                self._internal_error(error)
            self.in_flight = []
            index = end
        if not self.abandoned:
            self.held, self.held_next = [], 0

    def _handle_group(self, records: list[Record]) -> None:
        """A run of metric records, or one record of another kind."""
        record = records[0]
        kind = record.kind
        if kind == "log":
            self.take(records)
        elif kind == "flush":
            self.flush()
            record.payload.set()
        elif kind == "finish":
            self.finish()
        elif kind in SIDE_KINDS:
            self._deliver_side(record)
        else:
            if kind == "config":
                self.spiller.remember_config(record)
            self.take(records)

    def _deliver_side(self, record: Record) -> None:
        """A sample or the run context: only to a tracker that declares it, only while it is live (they stay
        in the run folder), counted on their own line of the report, never as the user's records."""
        if record.kind not in self.side_kinds:
            return
        stored = False
        if self.mode == LIVE:
            try:
                with self.in_backend():
                    if record.kind == "system":
                        self.tracker.log_system_metrics(record.payload, record.step or 0, record.timestamp or 0.0)
                    else:
                        self.tracker.log_run_context(record.payload)
                stored = True
            except Exception as error:
                method = SIDE_KINDS[record.kind]
                warn_once(self.name, method, f"{method} failed ({error!r}); the run folder keeps it", reason="side")
        self.report.count_side(record.kind, stored)

    def _internal_error(self, error: Exception) -> None:
        """A defect in this library's own delivery code, not the backend's: the worker must survive it
        (a dead worker would leave ``log()`` waiting for room in a full queue). What it was delivering
        goes to the spill and the backend is retried, as when the backend itself fails."""
        owed, self.in_flight = self.in_flight, []
        for record in owed:
            if record.kind == "flush":
                record.payload.set()  # nobody waits for a flush that cannot come
        self.outage.failed(error, "delivery (a defect in tracking itself: please report it)", owed)

    def owed_reader(self) -> OwedReader:
        """A reader of what the backend owes past its cursor: what a resumed run missed (less what the
        backend's storage holds), then the run's journal and its spill, merged."""
        cursor, catch_up, spiller = self.positions.cursor, self.catch_up, self.spiller
        earlier = self.backlog.records() if catch_up.owes_past(cursor) else None
        reader = OwedReader(spiller.journal_files, spiller.spill_files, self.name, cursor, spiller.last_seq)
        return reader.after_the_catch_up(catch_up.floor(), earlier, catch_up.before - 1)

    def safe_seq(self) -> int:
        """The highest ``seq`` up to which every record is durable in the backend or in its spill.

        What a delivery process reports to the training process, which may then forget those records.
        """
        return max(self.positions.cursor, self.spiller.last_seq())

    @property
    def config(self) -> Any:
        """The run's whole config so far, as one record (it heads a spill journal)."""
        return self.spiller.config

    def take(self, records: list[Record]) -> None:
        if self._superseded:
            records = [record for record in records if not rewind.superseded(record.step, record.seq, self._superseded)]
            if not records:
                return
        if self.rewind_due is not None and self.mode == LIVE and (records[0].seq or 0) > self.rewind_due.last_seq:
            self.apply_rewind()  # before this process's first record; the earlier ones caught up first
        if self.mode == LIVE and records[0].kind in self.unavailable_kinds:
            self.live.skip_unavailable(records)  # in order only: while records wait in the spill, these wait too
            return
        if self.mode == LIVE and records[0].kind in self.lacking_kinds:
            self.live.skip_lacking(records)
            return
        if self.mode != LIVE:
            for record in records:
                self.spill_record(record)
        elif records[0].kind == "log":
            self.live.deliver_metrics(records)
        else:
            self.live.deliver_one(records[0])

    def apply_rewind(self) -> None:
        point, self.rewind_due = self.rewind_due, None
        if point is not None:
            with self.in_backend():
                self.report.notes.append(rewind.apply(self.tracker, point))

    # -- accounting ----------------------------------------------------------------------------
    def mark_stored(self, records: list[Record]) -> None:
        if not records:
            return
        self.outage.failures = 0
        self.flushes.dirty = True
        self.positions.advance_handed(records)
        if self.confirms_at_flush:
            self.unconfirmed.extend(records)
            self.positions.write()
        else:
            self.confirm(records)

    def confirm(self, records: list[Record]) -> None:
        report = self.report
        report.delivered += len(records)
        for record in records:
            if self.spiller.waited(record.seq):
                report.spilled -= 1
                report.recovered += 1
        self.positions.advance_durable(records)
        self.positions.write()

    def mark_stored_after_abandon(self, records: list[Record]) -> None:
        """A call ``abandon`` gave up on came back. What it stored is in the spill as well: the cursor
        says the backend holds it, so replaying the spill (or resuming) does not deliver it twice."""
        self.positions.advance_handed(records)
        if not self.confirms_at_flush:
            self.positions.advance_durable(records)
        if self.positions.file is not None:
            self.positions.write()
            self.positions.close()

    def spill_record(self, record: Record) -> None:
        if record.kind in CONTROL_KINDS:
            return
        if self.catch_up.owns(record):
            self.catch_up.failed()  # read again from the cursor by the next owed reader; at the end it stays put
            return
        self.spiller.append(record, self.positions.cursor)

    # -- time: flushes, retries, backlogs ----------------------------------------------------------
    def wait_time(self) -> float | None:
        """Seconds the worker may sleep on its queue before ``tick`` has work; ``None``: until a record comes."""
        if self.mode == RECOVERING:
            # a recovery that has read everything but what the run's journal is about to write waits a little
            return JOURNAL_POLL_SECONDS if self.spiller.awaiting_journal() else 0.0
        now = time.monotonic()
        due = self.flushes.due_at(now)
        if self.mode == SPILLING:
            due = min(due, self.outage.next_retry)
        return None if due == float("inf") else max(0.0, due - now)

    def tick(self) -> None:
        if self.abandoned or self.finished:
            return
        try:
            now = time.monotonic()
            if self.mode != LIVE:
                self.spiller.settle()  # left in the run's journal once it wrote them, or copied after a while
            if self.mode == SPILLING and now >= self.outage.next_retry:
                self.outage.retry_backend()
            if self.mode == RECOVERING:
                self.backlog.deliver_batch()
            self.flushes.tick(now)
        except Exception as error:
            self._internal_error(error)

    def flush(self) -> None:
        """Flush the backend (counting what it buffered as delivered) and the spill."""
        self.flushes.flush()

    def publish_progress(self) -> None:
        self.flushes.publish_progress()

    # -- the end -----------------------------------------------------------------------------------
    def finish(self) -> None:
        self.ending.finish()

    def abandon(self, pending: list[Record]) -> None:
        """The backend did not finish in time: everything it has not stored goes to the spill."""
        self.ending.abandon(pending)

    def spill_in_order(self, records: list[Record]) -> None:
        """Spill ``records`` once each, numbered ones in ``seq`` order (control records and what the
        spill already holds are skipped by ``_spill_record``)."""
        for record in in_order(records):
            self.spill_record(record)
