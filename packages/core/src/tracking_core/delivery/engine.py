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
  backend is down: the records it did not store, and every record after them, go to its spill
  journal, in order.
* **coming back.** While records wait in the spill, the backend is retried with exponential
  backoff; when a retry gets through, the spill is delivered from the backend's cursor on, in
  order (new records keep going to the spill meanwhile, so the loop never waits), then live
  delivery resumes. The same reading delivers a resumed run's backlog and a replay.
* **progress.** After every flush the backend's cursor (the highest ``seq`` it holds durably)
  and its last durable step are published, for ``run.json``.
"""

from __future__ import annotations

import contextlib
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from ..contract.tracker import GeneralTracker
from ..errors import PartialDelivery, TrackingError
from ..intake.record import CONTROL_KINDS, Record, call_kwargs, deliver
from ..notices import logger, warn_once
from ..report import BackendReport
from ..store import rewind
from ..store.cursor import CursorFile
from .catch_up import CatchUp
from .handover import Handover
from .mapping import BackendValues
from .missing import KIND_NAMES, missing_reason
from .positions import Positions
from .recovery import MAX_CONSECUTIVE_FAILURES, Mode, RetryPolicy, is_refusal
from .spill import SpillJournal, SpillReader
from .spiller import Spiller, in_order

__all__ = [
    "CATCHING_UP",
    "IMPORT_RETRIES",
    "IMPORT_RETRY_DELAY",
    "LIVE",
    "MAX_BATCH",
    "MAX_CONSECUTIVE_FAILURES",
    "RECOVERING",
    "SPILLING",
    "Delivery",
    "Mode",
    "RetryPolicy",
    "is_refusal",
]

MAX_BATCH = 1000
IMPORT_RETRIES = 2
IMPORT_RETRY_DELAY = 0.5

# the modes by their plain names, as this module had them
LIVE, SPILLING, RECOVERING, CATCHING_UP = Mode.LIVE, Mode.SPILLING, Mode.RECOVERING, Mode.CATCHING_UP


class Delivery:
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
        handed: int = -1,
        backlog_paths: Iterable[Path] = (),
        backlog_before: float = float("inf"),
        backlog_records: Iterable[Record] = (),
    ) -> None:
        self.tracker = tracker
        self.name = tracker.name
        self.report = report
        self.values = BackendValues(tracker, report)
        #: the spill journal, the lock both threads take to write it, and the config that heads it
        self.spiller = Spiller(spill, self.name, report)
        self._on_error = on_error
        self._error_sink = error_sink
        self._flush_interval = flush_interval
        self._retry = retry
        self._on_started = on_started
        self._on_progress = on_progress
        durable = getattr(tracker, "durable_on_return", None)
        self._confirms_at_flush = (
            not durable if durable is not None else type(tracker).flush is not GeneralTracker.flush
        )
        # a backend whose finish() makes buffered records durable needs no flush just before it
        self._flush_before_finish = not (self._confirms_at_flush and getattr(tracker, "durable_at_finish", False))
        #: Held by the delivering thread except while it waits on the SDK: ``abandon`` takes it, so at
        #: that moment every record still owed sits in one of this object's lists (or the queue),
        #: never only in a thread's local variables.
        self._handover = Handover()
        self.handover = self._handover.lock
        self._spilled_over = False
        #: the batch the worker took off its queue, and how far into it delivery has got
        self._held: list[Record] = []
        self._held_next = 0
        self.mode: Mode = LIVE
        self.started = False
        self.abandoned = False
        #: record kinds this backend cannot store (a package they need is missing) -> why
        self.unavailable_kinds: dict[str, str] = {}
        self.finished = False
        #: how far the backend got (durable, handed over), and the cursor file that keeps it
        self.positions = Positions(cursor, cursor_step, cursor_file)
        self.in_flight: list[Record] = []
        self._unconfirmed: list[Record] = []
        self._dirty = False
        self._last_flush = time.monotonic()
        self._failures = 0
        self._can_retry_start = True
        self._next_retry = float("inf")
        self._reported_errors: set[type] = set()
        self._reader: SpillReader | None = None
        #: what the backend missed before this process (resume, replay, take-over), delivered first
        self.catch_up = CatchUp(backlog_paths, backlog_records, backlog_before, handed)
        self._recovering_since_failures = 0
        self._published: tuple[int, int] | None = None
        #: resume_step went back: the rewind applied before this process's first record (rewind.py), and
        #: the records every rewind of the run superseded (never delivered)
        self._rewind, self._superseded = rewind.due(tracker.run_context)

    # -- start-up ----------------------------------------------------------------------------
    def start(self) -> None:
        self.report.state = "starting"
        began = time.monotonic()
        try:
            self._start_with_import_retry()
        except BaseException as error:
            if isinstance(error, ImportError) and "partially initialized" not in str(error):
                self._can_retry_start = False  # a missing package does not come back by itself
            self._failed(error, "start", [])
        else:
            self._started()
        finally:
            self.report.ready_at = time.monotonic()
            self.report.start_seconds = self.report.ready_at - began

    def _started(self) -> None:
        self.started = True
        # The flush clock starts with the backend: records that waited for a long start-up (an SDK's
        # import) are delivered before the first flush, not held up by one.
        self._last_flush = time.monotonic()
        if self.mode == LIVE:
            self.report.state = "running"
        if self._on_started is not None:
            try:
                self._on_started()
            except Exception as error:  # bookkeeping must never stop a backend that started
                logger.warning("backend %r: after start-up: %r", self.name, error)
        if self.catch_up.wanted():
            # What the backend missed comes first: at once, or (after a start that failed and was
            # retried) before the records spilled meanwhile (_retry_backend).
            self.catch_up.backlog = self._catch_up_records()
            if self.mode == LIVE:
                self.mode = CATCHING_UP
            if self.abandoned:  # finish() gave up while the backend's storage was being read
                self._stop_catching_up([])

    def _catch_up_records(self) -> Iterator[Record]:
        """What a reopened run missed, less what the backend's storage already holds (see ``CatchUp.missed``)."""
        return self.catch_up.missed(
            self.positions.cursor, self._confirms_at_flush, self._last_stored_step, self.tracker.sanitize_key
        )

    def _last_stored_step(self) -> tuple[int, set[str]] | None:
        """The last step the backend's storage holds and the keys stored at it; ``None`` when it cannot say."""
        try:
            with self._in_backend():
                history = self.tracker.read_back_history()
        except Exception as error:
            logger.info("backend %r cannot say how far its earlier run got (%r)", self.name, error)
            return None
        last = max((step for points in history.values() for step, _ in points), default=-1)
        return last, {key for key, points in history.items() if any(step == last for step, _ in points)}

    def _start_with_import_retry(self) -> None:
        """``start()``, retried when it lost an import race with another thread.

        An SDK imported here while the training thread imports it (or a module it shares) can see
        a partially initialised module; once the other import has finished, a second try works.
        """
        for attempt in range(IMPORT_RETRIES + 1):
            try:
                with self._in_backend():
                    self.tracker.start()
                return
            except (ImportError, AttributeError) as error:
                text = str(error)
                racing = "partially initialized" in text or "circular import" in text
                if not racing or attempt == IMPORT_RETRIES:
                    raise
                logger.info("backend %r: start-up met a concurrent import (%s); retrying", self.name, text)
                time.sleep(IMPORT_RETRY_DELAY)

    # -- records -----------------------------------------------------------------------------
    def own(self) -> None:
        """The calling thread delivers from now on: it holds ``handover`` outside SDK calls."""
        self._handover.own()

    def disown(self) -> None:
        self._handover.disown()

    def _in_backend(self) -> contextlib.AbstractContextManager[None]:
        """Around a call into the SDK, which may hang: ``abandon`` and ``spill_over`` must not wait for it."""
        return self._handover.in_backend()

    def in_sdk(self) -> bool:
        """Whether the backend's thread is inside a call into the SDK (what a caller waiting for room is told)."""
        return self._handover.in_sdk()

    def seconds_in_sdk(self) -> float:
        """How long the backend's thread has been inside its current SDK call; 0 outside one."""
        return self._handover.seconds_in_sdk()

    def spill_over(self, pending: list[Record], stuck: bool = True) -> list[Record]:
        """The backend has sat in one SDK call while its queue filled up (``stuck``), or its queue is full
        with ``on_full="spill"``: instead of ``log()`` waiting for that call, what the backend owes goes to
        its spill, and from there to the backend once the call returns, as after a failure (but retried
        at once).

        Run by the thread that found the queue full, holding ``handover`` (the worker lets go of it
        inside SDK calls); ``pending`` is what it took off the queue. The call in progress keeps its
        records: if it stores them, the cursor passes their spilled copies; if it fails, they are in
        the spill already. While a resumed backend catches up, only the live records are spilled (the
        worker would spill them anyway); the catch-up stays with the worker. Returns the control
        records of ``pending`` (flush, finish), which go back to the queue, behind what was spilled.
        """
        reading = self._catching_up() or self._reader is not None  # its backlog, or its spill
        in_call = [] if self._catching_up() else [*self._unconfirmed, *self.in_flight]
        self._spill_in_order([*in_call, *self._held[self._held_next :], *pending])
        if not reading and self.mode != SPILLING:
            # The worker finishes its call and goes on in spilling mode: the retry that reads the spill is
            # due. (A worker already reading reaches what was appended, in order.)
            self.mode = SPILLING
            self._reader = None
            self._next_retry = time.monotonic()
            if stuck and self.report.state in ("starting", "running"):
                self.report.state = "stuck"
        if not self._spilled_over:
            self._spilled_over = True
            self._note_spill_over(stuck)
        return [record for record in pending if record.kind in CONTROL_KINDS]

    def _note_spill_over(self, stuck: bool) -> None:
        if not stuck:
            self.report.notes.append(
                "its queue filled up (on_full='spill'): the records that found it full reached the backend "
                "through its spill journal, in order"
            )
            return
        seconds = self.seconds_in_sdk()
        logger.warning(
            "backend %r has been inside one call into its SDK for %.1f s and its queue is full: its records "
            "go to its spill journal until the call returns, then to the backend, in order",
            self.name,
            seconds,
        )
        self.report.notes.append(
            f"a call into its SDK did not return for {seconds:.1f} s: the records logged meanwhile went to "
            "its spill journal instead of making log() wait for the call"
        )

    def hold(self, batch: list[Record]) -> None:
        """The worker took ``batch`` off its queue (it may still grow): owed until ``handle`` takes it."""
        self._held, self._held_next = batch, 0

    def handle(self, batch: list[Record]) -> None:
        """Deliver (or spill) a drained batch in order, grouping consecutive metric records."""
        self.hold(batch)
        index = 0
        while index < len(batch) and not self.abandoned:
            end = index + 1
            if batch[index].kind == "log":
                while end < len(batch) and batch[end].kind == "log":
                    end += 1
            self._held_next = end
            self.in_flight = batch[index:end]
            try:
                self._handle_group(self.in_flight)
            except Exception as error:
                self._internal_error(error)
            self.in_flight = []
            index = end
        if not self.abandoned:
            self._held, self._held_next = [], 0

    def _handle_group(self, records: list[Record]) -> None:
        """A run of metric records, or one record of another kind."""
        record = records[0]
        kind = record.kind
        if kind == "log":
            self._take(records)
        elif kind == "flush":
            self.flush()
            record.payload.set()
        elif kind == "finish":
            self.finish()
        else:
            if kind == "config":
                self._remember_config(record)
            self._take(records)

    def _internal_error(self, error: Exception) -> None:
        """A defect in this library's own delivery code, not the backend's: the worker must survive it
        (a dead worker would leave ``log()`` waiting for room in a full queue). What it was delivering
        goes to the spill and the backend is retried, as when the backend itself fails."""
        owed, self.in_flight = self.in_flight, []
        for record in owed:
            if record.kind == "flush":
                record.payload.set()  # nobody waits for a flush that cannot come
        self._failed(error, "delivery (a defect in tracking itself: please report it)", owed)

    def safe_seq(self) -> int:
        """The highest ``seq`` up to which every record is durable in the backend or in its spill.

        What a delivery process reports to the training process, which may then forget those records.
        """
        return max(self.positions.cursor, self.spiller.last_seq())

    def _remember_config(self, record: Record) -> None:
        self.spiller.remember_config(record)

    @property
    def config(self) -> Any:
        """The run's whole config so far, as one record (it heads a spill journal)."""
        return self.spiller.config

    def _take(self, records: list[Record]) -> None:
        if self._superseded:
            records = [record for record in records if not rewind.superseded(record.step, record.seq, self._superseded)]
            if not records:
                return
        if self._rewind is not None and self.mode == LIVE and (records[0].seq or 0) > self._rewind.last_seq:
            self._apply_rewind()  # before this process's first record; the earlier ones caught up first
        if self.mode == LIVE and records[0].kind in self.unavailable_kinds:
            self._skip_unavailable(records)  # in order only: while records wait in the spill, these wait too
            return
        if self.mode != LIVE:
            for record in records:
                self._spill_record(record)
        elif records[0].kind == "log":
            self._deliver_metrics(records)
        else:
            self._deliver_one(records[0])

    def _apply_rewind(self) -> None:
        point, self._rewind = self._rewind, None
        if point is not None:
            with self._in_backend():
                self.report.notes.append(rewind.apply(self.tracker, point))

    def _unseen(self, records: list[Record]) -> list[Record]:
        return self.positions.unseen(records)

    def _deliver_metrics(self, records: list[Record]) -> None:
        records = self._unseen(records)
        if not records:
            return
        tracker = self.tracker
        entries = [
            (self.values.prepare(record.payload), record.step, call_kwargs(tracker, record)) for record in records
        ]
        self.in_flight = records
        self._hand_over(records)
        if len(entries) == 1:
            values, step, kwargs = entries[0]
            done, error = self._attempt(tracker.log, values, step=step, **kwargs)
        else:
            done, error = self._attempt(tracker.log_batch, entries)
        if self.abandoned:
            self._stored_after_abandon(records if error is None else records[:done])
            return
        if error is None:
            self.in_flight = []
            self._stored(records)
            return
        self._stored(records[:done])
        rest = records[done:]
        # Owed until each is stored, skipped or spilled: a finish timeout during the retries below spills them.
        self.in_flight = rest
        if not is_refusal(error) and done and rest:
            # The backend stored what came before in this very call: retry at once from the record it failed on.
            self._note_error(error, "log_batch")
            self._retry_suspect(rest[0])
            self.in_flight = rest[1:]
            if len(rest) > 1 and self.mode == LIVE and not self.abandoned:
                self._deliver_metrics(rest[1:])
            self.in_flight = []
            return
        if isinstance(error, ImportError):
            self.in_flight = []
            self._kind_unavailable("log", error, rest)
            return
        if not is_refusal(error):
            self.in_flight = []
            self._failed(error, "log" if len(entries) == 1 else "log_batch", rest)
            return
        self._refusal_seen(error)
        for index, record in enumerate(rest):
            self.in_flight = rest[index:]
            remainder, failure = self._store_isolating(record)
            if self._abandoned_meanwhile():
                return
            if failure is not None:
                self.in_flight = []
                self._failed(failure, "log", [remainder, *rest[index + 1 :]])
                return
        self.in_flight = []

    def _abandoned_meanwhile(self) -> bool:
        """Read after calls into the backend: ``abandon`` runs on another thread while one is in the SDK."""
        return self.abandoned

    def _retry_suspect(self, record: Record) -> None:
        """One more try of a record the backend failed on right after storing the ones before it.

        A second failure makes it a record the backend cannot take (skipped, with a warning and a
        report entry) rather than an outage, so it cannot block everything behind it.
        """
        kwargs = call_kwargs(self.tracker, record)
        self._hand_over([record])
        _, error = self._attempt(self.tracker.log, self.values.prepare(record.payload), step=record.step, **kwargs)
        if self.abandoned:
            self._stored_after_abandon([record] if error is None else [])
            return
        if error is None:
            self._stored([record])
            return
        remainder, failure = self._store_isolating(record) if is_refusal(error) else (record, error)
        if self._abandoned_meanwhile():
            return
        if failure is not None:
            for key in remainder.payload:
                self._refuse(key, failure)
            self._stored([record])

    def _store_isolating(self, record: Record) -> tuple[Record, BaseException | None]:
        """Store one metric record, skipping only the keys the backend refuses (found by halving).

        A finish timeout that gives up on one of these calls has spilled the whole record: the spill
        then repeats the keys stored before that call (the rest would be lost otherwise).
        """
        payload = record.payload
        groups = [list(payload)]
        while groups:
            group = groups.pop(0)
            values = self.values.prepare({key: payload[key] for key in group})
            kwargs = call_kwargs(self.tracker, record)
            self._hand_over([record])
            _, error = self._attempt(self.tracker.log, values, step=record.step, **kwargs)
            if self.abandoned:
                if error is None and not groups:
                    self._stored_after_abandon([record])
                return record, None
            if error is None:
                continue
            if not is_refusal(error):
                rest = [key for part in (group, *groups) for key in part]
                return record._replace(payload={key: payload[key] for key in rest}), error
            if len(group) == 1:
                self._refuse(group[0], error)
            else:
                half = len(group) // 2
                groups[0:0] = [group[:half], group[half:]]
        self._stored([record])
        return record, None

    def _deliver_one(self, record: Record) -> None:
        if not self._unseen([record]):
            return
        self.in_flight = [record]
        self._hand_over([record])
        _, error = self._attempt(deliver, self.tracker, record)
        self.in_flight = []
        if self.abandoned:
            self._stored_after_abandon([record] if error is None else [])
            return
        if error is None:
            self._stored([record])
        elif isinstance(error, ImportError):
            self._kind_unavailable(record.kind, error, [record])
        elif is_refusal(error):
            self._refusal_seen(error)
            what = record.payload[0] if record.kind == "table" else record.kind
            self._refuse(str(what), error)
            self._stored([record])  # nothing of it can be stored: retrying would fail the same way
        else:
            self._failed(error, record.kind, [record])

    def _hand_over(self, records: list[Record]) -> None:
        self.positions.hand_over(records)

    def _attempt(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[int, BaseException | None]:
        """Call into the backend; returns (entries stored before a failure, the failure or None)."""
        try:
            with self._in_backend():
                function(*args, **kwargs)
        except PartialDelivery as partial:
            return partial.delivered, partial.__cause__ or partial
        except BaseException as error:
            if (
                isinstance(error, (KeyboardInterrupt, SystemExit))
                and threading.current_thread() is threading.main_thread()
            ):
                raise
            return 0, error
        return 0, None

    # -- accounting ----------------------------------------------------------------------------
    def _stored(self, records: list[Record]) -> None:
        if not records:
            return
        self._failures = 0
        self._dirty = True
        self._advance_handed(records)
        if self._confirms_at_flush:
            self._unconfirmed.extend(records)
            self._write_cursor()
        else:
            self._confirm(records)

    def _confirm(self, records: list[Record]) -> None:
        report, spilled_through = self.report, self.spiller.journal.last_seq
        report.delivered += len(records)
        for record in records:
            if record.seq is not None and self.spiller.journal.first_seq <= record.seq <= spilled_through:
                report.spilled -= 1
                report.recovered += 1
        self._advance_durable(records)
        self._write_cursor()

    def _advance_handed(self, records: list[Record]) -> None:
        self.positions.advance_handed(records)

    def _advance_durable(self, records: list[Record]) -> None:
        self.positions.advance_durable(records)

    def _stored_after_abandon(self, records: list[Record]) -> None:
        """A call ``abandon`` gave up on came back. What it stored is in the spill as well: the cursor
        says the backend holds it, so replaying the spill (or resuming) does not deliver it twice."""
        self._advance_handed(records)
        if not self._confirms_at_flush:
            self._advance_durable(records)
        if self.positions.file is not None:
            self._write_cursor()
            self.positions.close()

    def _write_cursor(self) -> None:
        self.positions.write()

    def _refuse(self, key: str, error: BaseException) -> None:
        reason = f"refused by the backend ({type(error).__name__}: {error})"[:300]
        warn_once(self.name, key, f"{reason}; only this value is skipped", reason="refused")
        self.report.skipped_values[key] = reason

    def _kind_unavailable(self, kind: str, error: ImportError, records: list[Record]) -> None:
        """A package ``kind`` needs is missing: never retried (it cannot come back by itself), never a
        failure of the backend; this kind is skipped from now on, with one warning and a report line."""
        reason = missing_reason(kind, error)
        self.unavailable_kinds[kind] = reason
        self.report.skipped_kinds[KIND_NAMES.get(kind, kind)] = reason
        logger.warning("backend %r: %s", self.name, reason)
        self._skip_unavailable(records)

    def _skip_unavailable(self, records: list[Record]) -> None:
        records = self._unseen(records)
        if not records:
            return
        name = KIND_NAMES.get(records[0].kind, records[0].kind)
        self.report.skipped_records[name] = self.report.skipped_records.get(name, 0) + len(records)
        self._stored(records)  # handled: nothing of them can be stored here, and nothing is retried

    def _refusal_seen(self, error: BaseException) -> None:
        logger.debug("backend %r refused a value (%r); isolating it", self.name, error)

    def _failed(self, error: BaseException, what: str, records: list[Record]) -> None:
        """The backend is down (or broken): what it did not store, and everything after, waits in the spill."""
        report = self.report
        self._note_error(error, what)
        self._failures += 1
        if self._unconfirmed and what != "flush":
            self._settle_unconfirmed()
        for record in records:
            self._spill_record(record)
        if self._catching_up():  # what the catch-up still owes, the batches not read yet included
            self._stop_catching_up(self._untaken_catch_up())
        self._write_cursor()  # takes back what _hand_over announced: the spill holds those records
        self.mode = SPILLING
        self._reader = None
        can_retry = self.started or self._can_retry_start
        self._next_retry = time.monotonic() + self._retry.delay(self._failures) if can_retry else float("inf")
        if not self.started:
            report.state = "start_failed"
        elif self._failures >= MAX_CONSECUTIVE_FAILURES:
            if report.state != "quarantined":
                logger.warning(
                    "backend %r is quarantined after %d failures in a row: retried every %.0f s at most",
                    self.name,
                    self._failures,
                    self._retry.longest,
                )
            report.state = "quarantined"
        else:
            report.state = "retrying"

    def _note_error(self, error: BaseException, what: str) -> None:
        """Count the error, warn once per error type (with the traceback), and queue it for ``on_error='raise'``."""
        report = self.report
        report.errors += 1
        report.last_error = f"{what}: {type(error).__name__}: {error}"
        if type(error) not in self._reported_errors:
            self._reported_errors.add(type(error))
            logger.warning(
                "backend %r failed in %s (%s: %s); the run goes on, its records wait in its spill journal "
                "and are delivered when it answers again\n%s",
                self.name,
                what,
                type(error).__name__,
                error,
                "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip(),
            )
        if self._error_sink is not None and self._on_error == "raise":
            wrapped = TrackingError(self.name, f"{what} failed: {type(error).__name__}: {error}")
            wrapped.__cause__ = error
            self._error_sink(wrapped)

    def _settle_unconfirmed(self) -> None:
        """Before records go to the spill, find out whether the ones buffered before them were stored."""
        _, error = self._attempt(self.tracker.flush)
        moved, self._unconfirmed = self._unconfirmed, []
        if error is None:
            self._confirm(moved)
        else:
            for record in moved:
                self._spill_record(record)

    def _spill_record(self, record: Record) -> None:
        if record.kind in CONTROL_KINDS:
            return
        if self.catch_up.owns(record):
            # a catch-up record: live ones with higher seqs may already be in the spill, so it waits
            # for _stop_catching_up, which puts the catch-up's records in the spill in order
            self.catch_up.owed.append(record)
            return
        self.spiller.append(record, self.positions.cursor)

    # -- time: flushes, retries, backlogs ----------------------------------------------------------
    def wait_time(self) -> float | None:
        """Seconds the worker may sleep on its queue before ``tick`` has work; ``None``: until a record comes."""
        if self.mode in (RECOVERING, CATCHING_UP):
            return 0.0
        now = time.monotonic()
        due = float("inf")
        if self._dirty:
            due = self._last_flush + self._flush_interval
        if self.mode == SPILLING:
            due = min(due, self._next_retry)
        return None if due == float("inf") else max(0.0, due - now)

    def tick(self) -> None:
        if self.abandoned or self.finished:
            return
        try:
            self._tick()
        except Exception as error:
            self._internal_error(error)

    def _tick(self) -> None:
        now = time.monotonic()
        if self.mode == SPILLING and now >= self._next_retry:
            self._retry_backend()
        if self.mode in (RECOVERING, CATCHING_UP):
            self._deliver_backlog()
        if self._dirty and now - self._last_flush >= self._flush_interval:
            self.flush()

    def _retry_backend(self) -> None:
        if not self.started:
            _, error = self._attempt(self.tracker.start)
            if error is not None:
                self._failed(error, "start", [])
                return
            self._started()
        if self._unconfirmed:
            # a call spill_over gave up on came back with its records: the cursor must pass them (or
            # the spill keep them) before the spill is read, or they would be delivered twice
            self._settle_unconfirmed()
        self._recovering_since_failures = self._failures
        if self._catching_up():  # started only now: the catch-up comes before the spill
            self._reader = None
            self.mode = CATCHING_UP
            return
        spill_path = self.spiller.journal.path
        self._reader = SpillReader(spill_path) if spill_path is not None else None
        self.mode = RECOVERING

    def _deliver_backlog(self) -> None:
        """One batch of the backlog (resume, replay) or of the spill (recovery)."""
        if self.mode == CATCHING_UP:
            backlog = self.catch_up.backlog
            records = list(islice(backlog, MAX_BATCH)) if backlog is not None else []
            if not records:
                self.catch_up.backlog = None
                if self.spiller.journal.path is not None and self.report.spilled > 0:
                    self.mode = RECOVERING
                    self._reader = SpillReader(self.spiller.journal.path)
                else:
                    self._back_to_live()
                return
        else:
            records = self._reader.read(MAX_BATCH) if self._reader is not None else []
            if not records:
                self._back_to_live()
                return
        was = self.mode
        catching_up = was == CATCHING_UP
        if catching_up:
            self.catch_up.batch = records
        self.mode = LIVE  # deliver through the live path; a failure switches to SPILLING
        index = 0
        while index < len(records) and self.mode == LIVE and not self.abandoned:
            record = records[index]
            if record.kind == "config":
                self._remember_config(record)
            end = index + 1
            if record.kind == "log":
                while end < len(records) and records[end].kind == "log":
                    end += 1
            if catching_up:
                self.catch_up.next = end
            self._take(records[index:end])
            index = end
        if self.abandoned:
            return
        self._untaken_catch_up()  # a failure stopped the catch-up (_failed), or the batch is done
        if self.mode == LIVE:
            self.mode = was

    def _catching_up(self) -> bool:
        return self.catch_up.running()

    def _untaken_catch_up(self) -> list[Record]:
        """The part of the catch-up batch not handed to ``_take`` yet; the batch is done with."""
        return self.catch_up.untaken()

    def _stop_catching_up(self, untaken: list[Record]) -> None:
        """The catch-up cannot go on (the backend failed, or ``finish`` gave up on it): everything it
        still owes goes to the spill, in ``seq`` order ahead of the live records spilled meanwhile."""
        self.spiller.merge_in(self.catch_up.stop(untaken), self.positions.cursor)

    def _back_to_live(self) -> None:
        self.mode = LIVE
        self._reader = None
        if self.started and self.report.state == "stuck":
            self.report.state = "running"
        elif self.started and self.report.state in ("retrying", "quarantined", "start_failed"):
            self.report.state = "running"
            self.report.notes.append(
                f"recovered after {self._recovering_since_failures} failed attempt(s); "
                "the records that waited in its spill journal were delivered in order"
            )
            logger.warning("backend %r answers again; its spilled records were delivered", self.name)

    def flush(self) -> None:
        """Flush the backend (counting what it buffered as delivered) and the spill."""
        if self.started and self.mode != SPILLING and (self._dirty or self._unconfirmed):
            _, error = self._attempt(self.tracker.flush)
            if self.abandoned:
                return
            if error is None:
                moved, self._unconfirmed = self._unconfirmed, []
                self._confirm(moved)
            else:
                moved, self._unconfirmed = self._unconfirmed, []
                self._failed(error, "flush", moved)
        try:
            self.spiller.flush()
        except Exception as error:
            logger.warning("backend %r: flushing its spill journal failed: %r", self.name, error)
        self._dirty = False
        self._last_flush = time.monotonic()
        self.publish_progress()

    def publish_progress(self) -> None:
        if self._on_progress is None:
            return
        progress = (self.positions.cursor, self.positions.durable_step)
        if progress != self._published:
            self._published = progress
            try:
                self._on_progress(self.name, *progress)
            except Exception as error:  # run.json is bookkeeping: never stop delivery for it
                logger.warning("backend %r: could not record its progress: %r", self.name, error)

    # -- the end -----------------------------------------------------------------------------------
    def finish(self) -> None:
        if self.mode == SPILLING and (self.started or self._can_retry_start):
            self._retry_backend()  # one last try before closing: the backend may be back
        while self.mode in (RECOVERING, CATCHING_UP) and not self.abandoned:
            self._deliver_backlog()
        if self.abandoned:
            return
        if self.mode == LIVE and self.started and self._rewind is not None:
            self._apply_rewind()  # nothing was logged after the rewind: it still says where the run went back to
        if self.mode == LIVE and self.started and self._flush_before_finish:
            self.flush()
        if self.mode == LIVE and self.started:
            _, error = self._attempt(self.tracker.finish)
            if error is None:
                moved, self._unconfirmed = self._unconfirmed, []
                self._confirm(moved)
                self.report.state = "finished"
            else:
                self._failed(error, "finish", [])
                self.report.state = "finish_failed"
                moved, self._unconfirmed = self._unconfirmed, []
                for record in moved:
                    self._spill_record(record)
        elif self.started:
            self.report.state = "quarantined"
        self._collect_notes()
        self._close_spill()
        self.publish_progress()
        self.finished = True

    def _collect_notes(self) -> None:
        try:
            own = [str(note) for note in self.tracker.report_notes()]
        except Exception as error:
            own = [f"report_notes() failed: {error!r}"]
        self.report.notes.extend(own)

    def abandon(self, pending: list[Record]) -> None:
        """The backend did not finish in time: everything it has not stored goes to the spill."""
        self.abandoned = True
        self.report.state = "timed_out"
        held = self._held[self._held_next :]
        owed = [*self._unconfirmed, *self.in_flight, *held, *pending]  # _spill_in_order takes each once
        self._unconfirmed = []
        if self._catching_up():
            before = self.catch_up.before
            earlier = [record for record in owed if record.seq is not None and record.seq < before]
            owed = [record for record in owed if record.seq is None or record.seq >= before]
            self._stop_catching_up([*earlier, *self._untaken_catch_up()])
        for record in owed:
            if record.kind == "flush":
                record.payload.set()  # nobody waits for a flush that cannot come
        self._spill_in_order(owed)
        self._collect_notes()
        # a call still in the SDK may yet store its records: the cursor file stays open to say so
        self._close_spill(keep_cursor=bool(self.in_flight))
        self.publish_progress()

    def _spill_in_order(self, records: list[Record]) -> None:
        """Spill ``records`` once each, numbered ones in ``seq`` order (control records and what the
        spill already holds are skipped by ``_spill_record``)."""
        for record in in_order(records):
            self._spill_record(record)

    def _close_spill(self, keep_cursor: bool = False) -> None:
        self.spiller.close()
        if not keep_cursor:
            self.positions.close()
