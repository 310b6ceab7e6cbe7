"""The delivery process: hosts the backends' workers, so SDK work never takes the training loop's GIL.

Started with ``spawn`` by :mod:`.link` (never forked from a process holding threads). It
builds each backend's tracker and :class:`~.worker.BackendWorker` exactly as the dispatcher does in
thread mode, then reads batches of records from the pipe and hands each to its backends. What the
training process must know comes back as events: a backend started (and how to resume it), how far
each backend got (durably delivered or spilled: what the training process may forget), flush
acknowledgements, and each backend's report when it finished. When the pipe closes without a
finish (the training process was killed), every backend is finished with what it received.
"""

from __future__ import annotations

import importlib
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ..contract.selection import construct_tracker
from ..contract.tracker import GeneralTracker, RunContext, RunEnd, has_capability
from ..delivery.build import DeliveryOptions, DeliveryPlan, RunPlace, build_delivery
from ..delivery.engine import Delivery
from ..delivery.recovery import RetryPolicy
from ..delivery.resume import not_resumed_note, resume_state_of
from ..delivery.run_journal import RunJournal
from ..delivery.worker import BackendWorker
from ..errors import portable_cause
from ..intake.record import Record
from ..report import BackendReport
from ..store.cursor import CursorFile, cursor_name
from ..store.rewind import RewindPoint, points_of
from .protocol import (
    BackendSetup,
    Command,
    Error,
    Event,
    Finished,
    Flushed,
    Progress,
    Ready,
    RunSetup,
    Safe,
    Setup,
    Started,
)
from .remote_view import tracker_state

SAFE_EVERY = 0.2  # seconds between "how far is safe" events
#: the delivery process's niceness: background work yields the CPU to the training loop when both want it
NICE_ENV = "TRACKING_DELIVERY_NICE"
DEFAULT_NICE = 10
_EMPTY: dict[str, Any] = {}


def load_class(path: tuple[str, str]) -> type:
    module, qualname = path
    value: Any = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    cls: type = value  # a tracker class, named by the training process
    return cls


class Host:
    """The delivery process's state: its workers and the pipe back to the training process."""

    def __init__(self, connection: Connection, setup: Setup) -> None:
        self.connection = connection
        self.setup = setup
        self._send_lock = threading.RLock()
        self.workers: dict[str, BackendWorker] = {}
        self._last_safe: dict[str, int] = {}
        self._finished: set[str] = set()
        self._finishing: set[str] = set()
        self._closers: list[threading.Thread] = []
        #: the run's journal, when it is one of this process's backends
        self.run_journal = RunJournal()
        context = setup.context
        self.run_dir = Path(context.run_dir)
        for backend in setup.backends:
            self._add(backend, context)

    def send(self, event: Event) -> None:
        with self._send_lock:
            try:
                self.connection.send(event)
            except (OSError, EOFError, BrokenPipeError):
                pass  # the training process is gone; the backends still finish

    def _add(self, backend: BackendSetup, context: RunSetup) -> None:
        cls = load_class(backend.class_path)
        tracker = construct_tracker(cls, context.project, context.tracker_logging_dir, backend.init_kwargs)
        tracker.run_context = RunContext(
            context.project,
            context.run_id,
            self.run_dir,
            Path(context.logging_dir),
            resume=backend.resume,
            rank=context.rank,
            world_size=context.world_size,
            group=context.group,
            rewind=RewindPoint.from_json(context.rewind),
            superseded=points_of(context.superseded),
            system_metrics=context.system_metrics and has_capability(tracker, "log_system_metrics"),
            started=context.started,
        )
        name = tracker.name
        options = self.setup.options

        plan = DeliveryPlan(
            cursor=backend.cursor,
            cursor_step=backend.cursor_step,
            handed=backend.handed,
            backlog_paths=[Path(path) for path in backend.backlog],
            backlog_before=backend.backlog_before,
        )

        def delivery_for(tracker: GeneralTracker, report: BackendReport) -> Delivery:
            return build_delivery(
                tracker,
                report,
                place=RunPlace(context.project, context.run_id, self.run_dir),
                options=DeliveryOptions(options.on_error, options.flush_interval, RetryPolicy(*options.retry)),
                plan=plan,
                cursor_file=CursorFile(self.run_dir / cursor_name(name)),
                on_started=lambda: self._started(tracker, report),
                on_progress=lambda backend, seq, step: self.send(Progress("progress", backend, seq, step)),
                error_sink=lambda error: self.send(Error("error", name, str(error), portable_cause(error))),
                run_journal=self.run_journal,
            )

        self.workers[name] = BackendWorker(
            tracker, delivery_for, queue_size=options.queue_size, on_full=options.on_full, in_training_process=False
        )

    def _started(self, tracker: GeneralTracker, report: BackendReport) -> None:
        note = not_resumed_note(tracker, self.setup.context.resumed)
        if note is not None:
            report.notes.append(note)
        self.send(
            Started("started", tracker.name, resume_state_of(tracker), report.start_seconds, tracker_state(tracker))
        )

    # -- the loop ----------------------------------------------------------------------------
    def serve(self) -> None:
        for worker in self.workers.values():
            worker.launch()
        watcher = threading.Thread(target=self._report_safe, name="tracking-host-safe", daemon=True)
        watcher.start()
        while len(self._finishing) < len(self.workers):
            try:
                message = self.connection.recv()
            except (EOFError, OSError):
                self._finish(
                    [name for name in self.workers if name not in self._finishing], RunEnd("killed"), orphaned=True
                )
                break
            self._handle(message)
        for closer in self._closers:
            closer.join()

    def _handle(self, message: Command) -> None:
        if message.kind == "records":  # (record, targets): targets None = every backend
            for record, targets in message.items:
                for name in targets if targets is not None else self.workers:
                    worker = self.workers.get(name)
                    if worker is not None and name not in self._finishing:
                        worker.put(record)
        elif message.kind == "flush":
            events = []
            for name in message.names:
                if name in self.workers and name not in self._finishing:
                    event = threading.Event()
                    self.workers[name].put(Record("flush", event, None, _EMPTY, None, None))
                    events.append(event)
            threading.Thread(target=self._ack_flush, args=(message.token, events), daemon=True).start()
        elif message.kind == "finish":
            names = [name for name in message.names if name in self.workers and name not in self._finishing]
            self._finish(names, RunEnd(*message.end))

    def _ack_flush(self, token: int, events: list[threading.Event]) -> None:
        for event in events:
            event.wait()
        self._report_safe_once()
        self.send(Flushed("flushed", token))

    def _finish(self, names: list[str], end: RunEnd, orphaned: bool = False) -> None:
        """Close the named backends together, as the run ended (``end``); each reports when done (or abandoned
        at the timeout)."""
        deadline = time.monotonic() + self.setup.options.finish_timeout
        for name in names:
            self._finishing.add(name)
            self.workers[name].tracker.run_end = end
            self.workers[name].put(Record("finish", None, None, _EMPTY, None, None))
        for name in names:
            thread = threading.Thread(target=self._close, args=(name, deadline, orphaned), daemon=True)
            thread.start()
            self._closers.append(thread)

    def _close(self, name: str, deadline: float, orphaned: bool) -> None:
        worker = self.workers[name]
        if not worker.join(max(0.0, deadline - time.monotonic())):
            worker.abandon()
        if orphaned:
            worker.report.notes.append("the training process died; what it had sent was delivered and the run closed")
        self._report_safe_once()
        self.send(Finished("finished", name, worker.report, tracker_state(worker.tracker)))
        with self._send_lock:
            self._finished.add(name)

    def _report_safe(self) -> None:
        while len(self._finished) < len(self.workers):
            time.sleep(SAFE_EVERY)
            self._report_safe_once()

    def _report_safe_once(self) -> None:
        with self._send_lock:
            for name, worker in self.workers.items():
                safe = worker.delivery.safe_seq()
                if safe != self._last_safe.get(name):
                    self._last_safe[name] = safe
                    self.send(Safe("safe", name, safe))


def lower_priority() -> None:
    """Yield the CPU to the training loop: SDK imports and encoding never compete with it as equals."""
    import os

    try:
        nice = int(os.environ.get(NICE_ENV, DEFAULT_NICE))
    except ValueError:
        nice = DEFAULT_NICE
    if nice > 0 and hasattr(os, "nice"):
        try:
            os.nice(nice)
        except OSError:
            pass


def main(connection: Connection, setup: Setup) -> None:
    """Entry point of the delivery process."""
    import sys

    lower_priority()

    sys.path[:] = [*setup.sys_path, *[path for path in sys.path if path not in setup.sys_path]]
    for module in setup.modules:
        try:
            importlib.import_module(module)  # where the training process's registered trackers live
        except Exception:
            pass
    host = Host(connection, setup)
    connection.send(Ready("ready"))
    host.serve()
    connection.close()


__all__ = ["Host", "main"]

if __name__ == "__main__":  # python -m tracking_core.process.host <fd of the socket to the training process>
    import sys

    _connection = Connection(int(sys.argv[1]))
    main(_connection, _connection.recv())
