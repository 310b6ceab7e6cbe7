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
import heapq
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple, cast

from . import rewind
from .config import merge_config
from .errors import PartialDelivery, TrackingError
from .mapping import BackendValues
from .missing import KIND_NAMES, missing_reason
from .notices import logger, warn_once
from .record import CONTROL_KINDS, Record, call_kwargs, deliver
from .report import BackendReport
from .session import CursorFile
from .spill import SpillJournal, SpillReader, backlog
from .tracker import GeneralTracker

MAX_CONSECUTIVE_FAILURES = 5
MAX_BATCH = 1000
IMPORT_RETRIES = 2
IMPORT_RETRY_DELAY = 0.5

LIVE, SPILLING, RECOVERING, CATCHING_UP = "live", "spilling", "recovering", "catching up"


#: Words in an SDK's error that blame the value, whatever the exception's type (MLflow wraps SQLite's
#: "Python int too large to convert to SQLite INTEGER" in an INTERNAL_ERROR, for one).
_VALUE_HINTS = ("too large to convert", "out of range", "overflow")


class RetryPolicy(NamedTuple):
    """When a failed backend is tried again: ``first`` seconds after the first failure, doubling up to ``longest``."""

    first: float = 1.0
    longest: float = 300.0

    def delay(self, failures: int) -> float:
        backoff: float = self.first * 2 ** max(0, failures - 1)
        return min(self.longest, backoff)


def is_refusal(error: BaseException) -> bool:
    """True when the backend answered but refused what it was given (not when it is down)."""
    if isinstance(error, (OSError, MemoryError, RecursionError)):
        return False
    text = str(error).lower()
    if any(hint in text for hint in _VALUE_HINTS):
        return True
    code = getattr(error, "error_code", None)  # MLflow's MlflowException, among others
    if isinstance(code, str) and code:
        return "INVALID" in code or "BAD_REQUEST" in code
    return isinstance(error, (ValueError, TypeError, ArithmeticError, UnicodeError, KeyError, IndexError))


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
        self._spill = spill
        self._spill_lock = threading.Lock()
        self._on_error = on_error
        self._error_sink = error_sink
        self._flush_interval = flush_interval
        self._retry = retry
        self._on_started = on_started
        self._on_progress = on_progress
        self._cursor_file = cursor_file
        durable = getattr(tracker, "durable_on_return", None)
        self._confirms_at_flush = (
            not durable if durable is not None else type(tracker).flush is not GeneralTracker.flush
        )
        # a backend whose finish() makes buffered records durable needs no flush just before it
        self._flush_before_finish = not (self._confirms_at_flush and getattr(tracker, "durable_at_finish", False))
        #: Held by the delivering thread except while it waits on the SDK: ``abandon`` takes it, so at
        #: that moment every record still owed sits in one of this object's lists (or the queue),
        #: never only in a thread's local variables.
        self.handover = threading.Lock()
        self._owner: int | None = None
        self._inside_sdk = False
        self._call_began = 0.0
        self._spilled_over = False
        #: the batch the worker took off its queue, and how far into it delivery has got
        self._held: list[Record] = []
        self._held_next = 0
        self.mode = LIVE
        self.started = False
        self.abandoned = False
        #: record kinds this backend cannot store (a package they need is missing) -> why
        self.unavailable_kinds: dict[str, str] = {}
        self.finished = False
        self.cursor = cursor
        self.durable_step = cursor_step
        #: the furthest record the backend took (a call returned), confirmed by a flush or not yet
        self.handed_seq = cursor
        self.handed_step = cursor_step
        self.config: Any = None
        self.in_flight: list[Record] = []
        self._unconfirmed: list[Record] = []
        self._dirty = False
        self._last_flush = time.monotonic()
        self._failures = 0
        self._can_retry_start = True
        self._next_retry = float("inf")
        self._reported_errors: set[type] = set()
        self._reader: SpillReader | None = None
        self._backlog_paths = list(backlog_paths)
        self._backlog_records = list(backlog_records)
        self._earlier_handed = handed
        self._backlog_before = backlog_before
        self._backlog: Iterator[Record] | None = None
        #: the catch-up batch being delivered and where its untaken part starts (for ``abandon``)
        self._catch_up_batch: list[Record] = []
        self._catch_up_next = 0
        #: catch-up records a failure gave back while the catch-up runs: spilled in order when it stops
        self._catch_up_owed: list[Record] = []
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
        if self._backlog_paths or self._backlog_records:
            # What the backend missed comes first: at once, or (after a start that failed and was
            # retried) before the records spilled meanwhile (_retry_backend).
            self._backlog = self._catch_up_records()
            if self.mode == LIVE:
                self.mode = CATCHING_UP
            if self.abandoned:  # finish() gave up while the backend's storage was being read
                self._stop_catching_up([])

    def _catch_up_records(self) -> Iterator[Record]:
        """What a reopened run missed: the backlog past the cursor, less what the backend already holds.

        A backend that stores on return holds exactly what its cursor says, unless the process died
        inside a call (the handed position is written just before each call): the records of that call
        may or may not be stored. One that buffers (W&B, Comet, ClearML, SwanLab, Trackio) may have
        written more, or less, of what it took before the process died. In both cases its own storage
        says how far it got (the last stored step), and only records past that step are delivered
        again. When it cannot say, records it took are not delivered again (at worst lost, never
        stored twice).
        """
        records = backlog(self._backlog_paths, self.cursor, self._backlog_before, self._backlog_records)
        handed, buffers = self._earlier_handed, self._confirms_at_flush
        if not buffers and handed <= self.cursor:
            return records  # no call was cut short: the backend holds exactly what its cursor says
        stored = self._last_stored_step()
        if stored is None:
            return (record for record in records if record.seq is None or record.seq > handed)
        last, keys_at_last = stored
        sanitize = self.tracker.sanitize_key

        def missing(record: Record) -> Record | None:
            if record.step is None or record.step > last:
                return record
            if not buffers and record.seq is not None and record.seq > handed:
                return record  # never handed over: a backend that stores on return cannot hold it
            if record.step == last and record.kind == "log":
                # The process died while the SDK was writing this step: some of its keys may be
                # stored, others not. Deliver only the ones its storage does not have.
                rest = {
                    key: value
                    for key, value in record.payload.items()
                    if key not in keys_at_last and sanitize(key) not in keys_at_last
                }
                return record._replace(payload=rest) if rest else None
            return None

        return (kept for record in records if (kept := missing(record)) is not None)

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
        self.handover.acquire()
        self._owner = threading.get_ident()

    def disown(self) -> None:
        self._owner = None
        self.handover.release()

    @contextlib.contextmanager
    def _in_backend(self) -> Iterator[None]:
        """Around a call into the SDK, which may hang: ``abandon`` and ``spill_over`` must not wait for it."""
        self._call_began = time.monotonic()
        self._inside_sdk = True
        try:
            if self._owner != threading.get_ident():
                yield
                return
            self.disown()
            try:
                yield
            finally:
                self.own()
        finally:
            self._inside_sdk = False

    def in_sdk(self) -> bool:
        """Whether the backend's thread is inside a call into the SDK (what a caller waiting for room is told)."""
        return self._inside_sdk

    def seconds_in_sdk(self) -> float:
        """How long the backend's thread has been inside its current SDK call; 0 outside one."""
        return time.monotonic() - self._call_began if self._inside_sdk else 0.0

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
        with self._spill_lock:
            spilled = self._spill.last_seq
        return max(self.cursor, spilled)

    def _remember_config(self, record: Record) -> None:
        """The run's whole config so far (init's, then each ``log_config``), to head a spill journal."""
        if self.config is not None and isinstance(self.config.payload, dict) and isinstance(record.payload, dict):
            record = record._replace(payload=merge_config(self.config.payload, record.payload))
        self.config = record

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
        cursor = self.cursor
        return [record for record in records if record.seq is None or record.seq > cursor]

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
        """Just before ``records`` go into the SDK: should the process die inside that call, after the SDK
        stored them, the cursor file already says the backend may hold them, and a resumed run (or a
        replay) asks the backend's storage instead of delivering them twice. A call that fails puts the
        file back (``_failed``)."""
        if self._cursor_file is not None:
            seq, step = _highest(records, self.handed_seq, self.handed_step)
            if seq > self.handed_seq:
                try:
                    self._cursor_file.write(self.cursor, self.durable_step, seq, step)
                except OSError:
                    pass

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
        report, spilled_through = self.report, self._spill.last_seq
        report.delivered += len(records)
        for record in records:
            if record.seq is not None and self._spill.first_seq <= record.seq <= spilled_through:
                report.spilled -= 1
                report.recovered += 1
        self._advance_durable(records)
        self._write_cursor()

    def _advance_handed(self, records: list[Record]) -> None:
        """What the backend may hold from now on, even before it confirms."""
        self.handed_seq, self.handed_step = _highest(records, self.handed_seq, self.handed_step)

    def _advance_durable(self, records: list[Record]) -> None:
        """What the backend holds where a dead training process cannot lose it."""
        self.cursor, self.durable_step = _highest(records, self.cursor, self.durable_step)

    def _stored_after_abandon(self, records: list[Record]) -> None:
        """A call ``abandon`` gave up on came back. What it stored is in the spill as well: the cursor
        says the backend holds it, so replaying the spill (or resuming) does not deliver it twice."""
        self._advance_handed(records)
        if not self._confirms_at_flush:
            self._advance_durable(records)
        if self._cursor_file is not None:
            self._write_cursor()
            self._cursor_file.close()
            self._cursor_file = None

    def _write_cursor(self) -> None:
        if self._cursor_file is not None:
            try:
                self._cursor_file.write(self.cursor, self.durable_step, self.handed_seq, self.handed_step)
            except OSError:
                pass  # run.json still gets the progress at the next flush

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
        if self._catching_up() and record.seq is not None and record.seq < self._backlog_before:
            # a catch-up record: live ones with higher seqs may already be in the spill, so it waits
            # for _stop_catching_up, which puts the catch-up's records in the spill in order
            self._catch_up_owed.append(record)
            return
        with self._spill_lock:
            if self._spill.holds(record) or (record.seq is not None and record.seq <= self.cursor):
                return  # already waiting in the spill, or already held by the backend
            try:
                self._spill.append(record, config=self.config)
                self.report.spilled += 1
                self.report.spill_path = str(self._spill.path)
            except Exception as error:
                self.report.dropped += 1
                warn_once(
                    self.name, "*", f"could not write the spill journal ({error!r}); a record was lost", reason="spill"
                )

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
        self._reader = SpillReader(self._spill.path) if self._spill.path is not None else None
        self.mode = RECOVERING

    def _deliver_backlog(self) -> None:
        """One batch of the backlog (resume, replay) or of the spill (recovery)."""
        if self.mode == CATCHING_UP:
            records = list(islice(self._backlog, MAX_BATCH)) if self._backlog is not None else []
            if not records:
                self._backlog = None
                if self._spill.path is not None and self.report.spilled > 0:
                    self.mode = RECOVERING
                    self._reader = SpillReader(self._spill.path)
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
            self._catch_up_batch = records
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
                self._catch_up_next = end
            self._take(records[index:end])
            index = end
        if self.abandoned:
            return
        self._untaken_catch_up()  # a failure stopped the catch-up (_failed), or the batch is done
        if self.mode == LIVE:
            self.mode = was

    def _catching_up(self) -> bool:
        return self._backlog is not None

    def _untaken_catch_up(self) -> list[Record]:
        """The part of the catch-up batch not handed to ``_take`` yet; the batch is done with."""
        rest = self._catch_up_batch[self._catch_up_next :]
        self._catch_up_batch, self._catch_up_next = [], 0
        return rest

    def _stop_catching_up(self, untaken: list[Record]) -> None:
        """The catch-up cannot go on (the backend failed, or ``finish`` gave up on it): everything it
        still owes goes to the spill, in ``seq`` order ahead of the live records spilled meanwhile."""
        owed = sorted(
            (record for record in [*self._catch_up_owed, *untaken] if record.seq is not None),
            key=lambda record: cast(int, record.seq),
        )
        rest, self._backlog = self._backlog or iter(()), None
        self._catch_up_owed = []
        with self._spill_lock:
            try:
                added = self._spill.merge_in(
                    heapq.merge(owed, rest, key=lambda record: cast(int, record.seq)), self.cursor, self.config
                )
            except Exception as error:
                warn_once(
                    self.name,
                    "*",
                    f"could not write the spill journal ({error!r}); records of the catch-up were lost",
                    reason="spill",
                )
                return
            self.report.spilled += added
            self.report.spill_path = str(self._spill.path)

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
        with self._spill_lock:
            try:
                self._spill.flush()
            except Exception as error:
                logger.warning("backend %r: flushing its spill journal failed: %r", self.name, error)
        self._dirty = False
        self._last_flush = time.monotonic()
        self.publish_progress()

    def publish_progress(self) -> None:
        if self._on_progress is None:
            return
        progress = (self.cursor, self.durable_step)
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
            before = self._backlog_before
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
        owed = list({id(record): record for record in records}.values())
        numbered = sorted(
            (record for record in owed if record.seq is not None), key=lambda record: cast(int, record.seq)
        )
        for record in [*numbered, *(record for record in owed if record.seq is None)]:
            self._spill_record(record)

    def _close_spill(self, keep_cursor: bool = False) -> None:
        with self._spill_lock:
            self._spill.close()
        if self._cursor_file is not None and not keep_cursor:
            self._cursor_file.close()
            self._cursor_file = None


def _highest(records: list[Record], seq: int, step: int) -> tuple[int, int]:
    """The highest record number and metric step among ``records``, and ``seq`` / ``step`` themselves."""
    for record in records:
        if record.seq is not None and record.seq > seq:
            seq = record.seq
        if record.kind == "log" and record.step is not None and record.step > step:
            step = record.step
    return seq, step
