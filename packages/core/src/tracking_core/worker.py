"""``BackendWorker``: one backend's queue, thread, failure isolation and spill journal.

The caller only appends to a queue. The worker thread starts the backend, delivers records in
order (metric records in batches), flushes on an interval, counts what it delivered, and routes
whatever the backend cannot take into ``spill-<backend>.jsonl`` so nothing is lost.
"""

from __future__ import annotations

import queue
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import TrackingError
from .notices import logger, warn_once
from .report import BackendReport
from .tracker import GeneralTracker
from .values import is_non_finite

# A record is (kind, payload, step, kwargs, timestamp). Kinds: log, config, images, table, figure,
# artifact, artifacts, flush (payload: threading.Event), finish. ``timestamp`` is the Unix time at
# which the caller logged a metric record (None for the other kinds).
Record = tuple[str, Any, "int | None", dict, "float | None"]

MAX_CONSECUTIVE_FAILURES = 5
MAX_BATCH = 1000
FLUSH_INTERVAL_SECONDS = 5.0
LINGER_SECONDS = 0.005
IMPORT_RETRIES = 2
IMPORT_RETRY_DELAY = 0.5
_CONTROL = ("flush", "finish")


def with_timestamp(tracker: GeneralTracker, record: Record) -> dict:
    """The record's kwargs, plus ``timestamp`` for trackers that asked for it (``wants_timestamps``)."""
    kwargs = record[3]
    if record[4] is not None and getattr(tracker, "wants_timestamps", False):
        return {**kwargs, "timestamp": record[4]}
    return kwargs


def deliver(tracker: GeneralTracker, record: Record, values: Any = None) -> None:
    """Hand one record to a tracker through the contract's methods."""
    kind, payload, step, kwargs, _ = record
    if kind == "log":
        tracker.log(payload if values is None else values, step=step, **with_timestamp(tracker, record))
    elif kind == "config":
        tracker.store_init_configuration(payload)
    elif kind == "images":
        tracker.log_images(payload, step=step, **kwargs)
    elif kind == "table":
        name, columns, data, dataframe = payload
        tracker.log_table(name, columns=columns, data=data, dataframe=dataframe, step=step, **kwargs)
    elif kind == "figure":
        from .figures import restore_figure

        figure, name = payload
        tracker.log_figure(restore_figure(figure), name, step=step, **kwargs)
    elif kind == "artifact":
        tracker.log_artifact(*payload)
    elif kind == "artifacts":
        tracker.log_artifacts(*payload)
    else:  # pragma: no cover - internal misuse
        raise ValueError(f"unknown record kind {kind!r}")


class BackendWorker:
    def __init__(
        self,
        tracker: GeneralTracker,
        *,
        spill_factory: Callable[[str], GeneralTracker],
        on_error: str = "warn",
        error_sink: Callable[[TrackingError], None] | None = None,
        queue_size: int = 10_000,
        on_full: str = "block",
        blocking: bool = False,
        flush_interval: float = FLUSH_INTERVAL_SECONDS,
        on_started: Callable[[BackendWorker], None] | None = None,
    ) -> None:
        self.tracker = tracker
        self._on_started = on_started
        self._notes: list[str] = []
        self.name = tracker.name
        self.report = BackendReport(self.name)
        self._spill_factory = spill_factory
        self._spill: GeneralTracker | None = None
        self._spill_lock = threading.Lock()
        self._on_error = on_error
        self._error_sink = error_sink
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._maxsize = queue_size
        self._drop_when_full = on_full == "drop"
        self._room = threading.Event()
        self._blocking = blocking
        self._inline_lock = threading.Lock()
        self._flush_interval = flush_interval
        self.started = threading.Event()
        self._thread: threading.Thread | None = None
        self._quarantined = False
        self._abandoned = False
        self._finished = False
        self._consecutive_failures = 0
        self._reported_errors: set[type] = set()
        self._in_flight: list[Record] = []
        self._config: Any = None
        cls = type(tracker)
        self._renames_keys = cls.sanitize_key is not GeneralTracker.sanitize_key
        self._filters_non_finite = not getattr(cls, "accepts_non_finite", True)
        self._key_map: dict[str, str] = {}
        self.put = self._make_put()

    # -- caller side -----------------------------------------------------------------------
    def launch(self) -> None:
        if self._blocking:
            self._start_backend()
            return
        self._thread = threading.Thread(target=self._run, name=f"tracking-{self.name}", daemon=True)
        self._thread.start()

    def _make_put(self) -> Callable[[Record], None]:
        """The caller's enqueue, as a closure: the hot path pays no attribute lookups."""
        if self._blocking:

            def put_inline(record: Record) -> None:
                with self._inline_lock:
                    self._process([record])

            return put_inline
        queue_size, queue_put, maxsize = self._queue.qsize, self._queue.put, self._maxsize
        put_when_full = self._put_when_full

        def put(record: Record) -> None:
            if queue_size() >= maxsize:
                put_when_full(record)
            else:
                queue_put(record)

        return put

    def _put_when_full(self, record: Record) -> None:
        if record[0] not in _CONTROL:
            if self._drop_when_full:
                self.report.dropped += 1
                warn_once(self.name, "*", "queue full: records are being dropped (on_full='drop')", reason="queue-full")
                return
            self._wait_for_room()
        self._queue.put(record)

    def _wait_for_room(self) -> None:
        while self._queue.qsize() >= self._maxsize and not (self._abandoned or self._finished):
            self._room.clear()
            if self._queue.qsize() < self._maxsize:
                break
            self._room.wait(0.05)

    def join(self, timeout: float | None) -> bool:
        """True when the worker finished within ``timeout``."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def abandon(self) -> None:
        """Give up on a backend that did not finish in time; spill what it still holds."""
        self._abandoned = True
        self.report.state = "timed_out"
        pending = list(self._in_flight)
        while True:
            try:
                pending.append(self._queue.get_nowait())
            except queue.Empty:
                break
        for record in pending:
            if record[0] == "flush":
                record[1].set()
            elif record[0] != "finish":
                self._spill_record(record)
        self._close_spill()
        self._room.set()

    # -- worker side -----------------------------------------------------------------------
    def _run(self) -> None:
        self._start_backend()
        dirty = False
        last_flush = time.monotonic()
        while not self._finished and not self._abandoned:
            try:
                first = self._queue.get(timeout=self._flush_interval) if dirty else self._queue.get()
            except queue.Empty:
                first = None
            if first is not None:
                if first[0] == "log" and self._queue.qsize() < MAX_BATCH:
                    # Let a few records gather: one batch per wake-up instead of one per record keeps
                    # this thread off the GIL while the training loop is logging.
                    time.sleep(LINGER_SECONDS)
                batch = [first]
                while len(batch) < MAX_BATCH and self._queue.qsize():
                    batch.append(self._queue.get())
                self._process(batch)
                dirty = True
                self._room.set()
            if dirty and time.monotonic() - last_flush >= self._flush_interval and not self._finished:
                self._call("flush", self.tracker.flush, [])
                dirty, last_flush = False, time.monotonic()

    def _start_backend(self) -> None:
        self.report.state = "starting"
        began = time.monotonic()
        try:
            self._start_with_import_retry()
        except BaseException as error:
            self._failure(error, "start", [])
            self._quarantine("start_failed")
        else:
            self.report.state = "running"
            if self._on_started is not None:
                try:
                    self._on_started(self)
                except Exception as error:  # bookkeeping must never stop a backend that started
                    logger.warning("backend %r: after start-up: %r", self.name, error)
        finally:
            self.report.ready_at = time.monotonic()
            self.report.start_seconds = self.report.ready_at - began
            self.started.set()

    def _start_with_import_retry(self) -> None:
        """``start()``, retried when it lost an import race with another thread.

        An SDK imported here while the training thread imports it (or a module it shares) can see
        a partially initialised module; once the other import has finished, a second try works.
        """
        for attempt in range(IMPORT_RETRIES + 1):
            try:
                self.tracker.start()
                return
            except (ImportError, AttributeError) as error:
                text = str(error)
                racing = "partially initialized" in text or "circular import" in text
                if not racing or attempt == IMPORT_RETRIES:
                    raise
                logger.info("backend %r: start-up met a concurrent import (%s); retrying", self.name, text)
                time.sleep(IMPORT_RETRY_DELAY)

    def _process(self, batch: list[Record]) -> None:
        """Deliver a drained batch in order, grouping consecutive metric records."""
        index = 0
        while index < len(batch) and not self._abandoned:
            record = batch[index]
            kind = record[0]
            if kind == "log":
                end = index + 1
                while end < len(batch) and batch[end][0] == "log":
                    end += 1
                self._deliver_metrics(batch[index:end])
                index = end
                continue
            index += 1
            if kind == "flush":
                if not self._quarantined:
                    self._call("flush", self.tracker.flush, [])
                self._flush_spill()
                record[1].set()
            elif kind == "finish":
                self._finish_backend()
            elif kind == "config":
                self._config = record[1]
                self._deliver_one(record)
            else:
                self._deliver_one(record)

    def _deliver_metrics(self, records: list[Record]) -> None:
        if self._quarantined:
            for record in records:
                self._spill_record(record)
            return
        tracker = self.tracker
        entries = [(self._prepare(record[1]), record[2], with_timestamp(tracker, record)) for record in records]
        self._in_flight = records
        if len(entries) == 1:
            values, step, kwargs = entries[0]
            ok = self._call("log", lambda: self.tracker.log(values, step=step, **kwargs), records)
        else:
            ok = self._call("log_batch", lambda: self.tracker.log_batch(entries), records)
        self._in_flight = []
        if ok:
            self.report.delivered += len(records)

    def _deliver_one(self, record: Record) -> None:
        if self._quarantined:
            self._spill_record(record)
            return
        self._in_flight = [record]
        if self._call(record[0], lambda: deliver(self.tracker, record), [record]):
            self.report.delivered += 1
        self._in_flight = []

    def _prepare(self, values: dict) -> dict:
        """This backend's copy of a metric record: keys it accepts, values it stores faithfully."""
        if not (self._renames_keys or self._filters_non_finite):
            return dict(values)
        out = {}
        for key, value in values.items():
            if self._filters_non_finite and is_non_finite(value):
                warn_once(
                    self.name,
                    key,
                    f"{value!r} is not stored by this backend; the point is skipped",
                    reason="non-finite",
                )
                self.report.skipped_values[key] = "non-finite value"
                continue
            if self._renames_keys:
                mapped = self._key_map.get(key)
                if mapped is None:
                    mapped = self._map_key(key)
                key = mapped
            out[key] = value
        return out

    def _map_key(self, key: str) -> str:
        try:
            mapped = self.tracker.sanitize_key(key)
        except Exception as error:
            mapped = key
            warn_once(self.name, key, f"sanitize_key failed ({error!r}); key passed on unchanged", reason="sanitize")
        if mapped != key:
            clash = [original for original, other in self._key_map.items() if other == mapped and original != key]
            note = f" (also the name of {clash[0]!r}: their points share one series)" if clash else ""
            warn_once(
                self.name, key, f"stored as {mapped!r}: the backend refuses the original key{note}", reason="renamed"
            )
            self.report.key_map[key] = mapped
        self._key_map[key] = mapped
        return mapped

    def _call(self, what: str, function: Callable[[], Any], records: list[Record]) -> bool:
        try:
            function()
        except BaseException as error:
            if (
                isinstance(error, (KeyboardInterrupt, SystemExit))
                and threading.current_thread() is threading.main_thread()
            ):
                raise
            if self._abandoned:
                return False
            self._failure(error, what, records)
            return False
        if records:  # a delivery went through (a successful flush proves nothing about the data path)
            self._consecutive_failures = 0
        return True

    def _failure(self, error: BaseException, what: str, records: list[Record]) -> None:
        report = self.report
        report.errors += 1
        report.last_error = f"{what}: {type(error).__name__}: {error}"
        self._consecutive_failures += 1
        if type(error) not in self._reported_errors:
            self._reported_errors.add(type(error))
            logger.warning(
                "backend %r failed in %s (%s: %s); the run goes on, undelivered records are kept in its spill journal\n%s",
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
        for record in records:
            self._spill_record(record)
        if self._consecutive_failures >= MAX_CONSECUTIVE_FAILURES and not self._quarantined:
            self._quarantine("quarantined")

    def _quarantine(self, state: str) -> None:
        self._quarantined = True
        self.report.state = state
        logger.warning(
            "backend %r is %s: its records now go to its spill journal (replay later with `tracking replay`)",
            self.name,
            state.replace("_", " "),
        )

    def _finish_backend(self) -> None:
        if not self._quarantined:
            ok = self._call("finish", self.tracker.finish, [])
            self.report.state = "finished" if ok else "finish_failed"
        self._collect_notes()
        self._close_spill()
        self._finished = True

    def add_note(self, note: str) -> None:
        """A line for this backend's entry in the finish report (beside the tracker's own notes)."""
        self._notes.append(note)

    def _collect_notes(self) -> None:
        try:
            own = [str(note) for note in self.tracker.report_notes()]
        except Exception as error:
            own = [f"report_notes() failed: {error!r}"]
        self.report.notes = [*self._notes, *own]

    # -- spill -------------------------------------------------------------------------------
    def _spill_record(self, record: Record) -> None:
        with self._spill_lock:
            try:
                if self._spill is None:
                    self._spill = self._spill_factory(self.name)
                    self._spill.start()
                    self.report.spill_path = str(getattr(self._spill, "journal_path", ""))
                    if self._config is not None and record[0] != "config":
                        deliver(self._spill, ("config", self._config, None, {}, None))
                deliver(self._spill, record)
                self.report.spilled += 1
            except Exception as error:
                self.report.dropped += 1
                warn_once(
                    self.name,
                    "*",
                    f"could not write the spill journal ({error!r}); a record was lost",
                    reason="spill-failed",
                )

    def _flush_spill(self) -> None:
        with self._spill_lock:
            if self._spill is not None:
                self._spill.flush()

    def _close_spill(self) -> None:
        with self._spill_lock:
            if self._spill is not None:
                try:
                    self._spill.finish()
                except Exception:
                    pass

    @property
    def spill_path(self) -> Path | None:
        return Path(self.report.spill_path) if self.report.spill_path else None
