"""The training process's end of the delivery process (``delivery="process"``).

The hot path stays what it is in thread mode: ``log`` appends one record to a queue. One feeder
thread sends the queued records to the delivery process in batches (pickled over a socket pair:
one copy, no shared state); one reader thread takes its events. Records stay in a retention
buffer until the delivery process says every backend holds them durably or has spilled them, so
if that process dies the dispatcher can hand exactly what is missing to in-process workers.

The delivery process is a fresh interpreter (``python -m tracking_core.process.host``), never a
fork of a process that holds threads, and it does not re-run the training script the way
``multiprocessing``'s spawn re-imports ``__main__``.
"""

from __future__ import annotations

import collections
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any

from ..delivery.pace import PROCESS_ADVICE, LoopWaits
from ..delivery.worker import START_WAIT_SECONDS, wait_for_room
from ..intake.record import CONTROL_KINDS, Record
from ..intake.record import new_record as as_record
from ..notices import logger, warn_once
from .protocol import Event, Finish, Flush, Records, Setup
from .remote import RemoteWorker
from .remote_view import adopt

BATCH = 512
READY_TIMEOUT = 60.0
#: how long the feeder lets records gather after the first: one wake-up (and one moment holding the
#: GIL) per batch rather than per ``log`` call
LINGER_SECONDS = 0.02


class DeliveryLink:
    """Starts the delivery process, feeds it, listens to it, and notices when it dies."""

    def __init__(
        self,
        setup: Setup,
        *,
        queue_size: int,
        on_started: Callable[[str, Any], None],
        on_progress: Callable[[str, int, int], None],
        on_error: Callable[..., None],
        on_death: Callable[[DeliveryLink, str], None],
        on_full: str = "block",
    ) -> None:
        self.workers: dict[str, RemoteWorker] = {}
        #: where a record for every backend goes: ``None`` (all of them) until one is handed back to the
        #: training process, then the others by name
        self._everyone: tuple[str, ...] | None = None
        self._queue: queue.SimpleQueue[Any] = (
            queue.SimpleQueue()
        )  # (record or control message, targets) pairs; None: stop
        self._maxsize = queue_size
        #: what a full queue to the delivery process does, as a full backend queue does there: wait
        #: ("block"), drop and count ("drop"), or take the record anyway ("spill": it waits in memory
        #: here, as every record the delivery process has not confirmed already does)
        self._on_full = on_full
        #: per backend, records dropped because that queue was full (on_full="drop")
        self._dropped_full: collections.Counter[str] = collections.Counter()
        self.loop_waits = LoopWaits("the queue to the delivery process", f"a backend there {PROCESS_ADVICE}")
        self._room = threading.Event()
        self._retained: collections.deque[tuple[Record, tuple[str, ...] | None]] = collections.deque()
        self._retained_lock = threading.Lock()
        self._safe: dict[str, int] = {}
        #: records the feeder took from the queue after its stop marker: never sent, still owed
        self._retained_after_stop: list[tuple[Record, tuple[str, ...] | None]] = []
        self._flushes: dict[int, threading.Event] = {}
        self._next_token = 0
        #: per backend, records that could not be sent (they do not pickle): counted as dropped in its report
        self._not_sent: collections.Counter[str] = collections.Counter()
        self._on_started, self._on_progress, self._on_error, self._on_death = (
            on_started,
            on_progress,
            on_error,
            on_death,
        )
        self.dead = False
        self.closed = False
        parent, child = socket.socketpair()
        self._connection = Connection(os.dup(parent.fileno()))
        parent.close()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tracking_core.process.host", str(child.fileno())],
            pass_fds=(child.fileno(),),
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C meant for the training loop does not cut delivery short
        )
        child.close()
        self._connection.send(setup)
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, name="tracking-delivery-events", daemon=True)
        self._reader.start()
        self._feeder = threading.Thread(target=self._feed, name="tracking-delivery-feeder", daemon=True)
        self._feeder.start()

    # -- the caller's side -------------------------------------------------------------------
    def enqueue(self, record: Any, targets: tuple[str, ...] | None) -> None:
        if self._queue.qsize() >= self._maxsize and record[0] not in CONTROL_KINDS and self._on_full != "spill":
            if self._on_full == "drop":
                self._dropped_full.update(targets or tuple(self.workers))
                return
            waited = wait_for_room(
                lambda: self._queue.qsize() >= self._maxsize,
                self._room,
                lambda: self.dead,
                lambda: (
                    f"the queue to the delivery process ({self._maxsize} records): a backend there is not "
                    "taking records (see its warnings)"
                ),
            )
            self.loop_waits.add(waited)
        self._queue.put((record, targets))

    def put_all(self, record: Any) -> None:
        """The hot path: one record for every backend in the delivery process."""
        targets = self._everyone
        if self._queue.qsize() >= self._maxsize:
            self.enqueue(record, targets)
        else:
            self._queue.put((record, targets))

    def hand_back(self, name: str, end: tuple[str, float | None]) -> None:
        """Finish ``name`` in the delivery process, after everything sent to it so far; nothing sent later
        goes to it (the training process runs that backend from now on). Under the run's lock, as ``log``."""
        kept = self.workers if self._everyone is None else self._everyone
        self._everyone = tuple(other for other in kept if other != name)
        self.finish([name], end)

    def flush_async(self, event: threading.Event, names: list[str]) -> None:
        """Set ``event`` once the named backends made everything sent before it durable."""
        if self.dead:
            event.set()
            return
        with self._retained_lock:
            self._next_token += 1
            token = self._next_token
            self._flushes[token] = event
        self._queue.put((Flush("flush", token, tuple(names)), "control"))

    def finish(self, names: list[str], end: tuple[str, float | None] = ("finished", None)) -> None:
        """Finish the named backends; ``end`` is how the run ended (``GeneralTracker.run_end``)."""
        self._queue.put((Finish("finish", tuple(names), end), "control"))

    # -- feeder thread -----------------------------------------------------------------------
    def _feed(self) -> None:
        get, size = self._queue.get, self._queue.qsize
        gather_below = min(BATCH, self._maxsize // 2)  # a queue filling up has gathered enough: send at once
        stopping = False
        while not stopping:
            items = [get()]
            if items[0] is not None and items[0][1] != "control" and size() < gather_below:
                time.sleep(LINGER_SECONDS)
            while len(items) < BATCH and size():
                items.append(get())
            if None in items:  # the stop marker: what came before it is still sent, what came after waits
                stopping = True
                after = [(as_record(Record, r), t) for r, t in items[items.index(None) + 1 :] if t != "control"]
                items = items[: items.index(None)]
                with self._retained_lock:
                    self._retained_after_stop = after
            self._room.set()
            chunks: list[tuple[str, Any]] = []
            for record, targets in items:
                if targets == "control":
                    chunks.append(("control", record))
                elif chunks and chunks[-1][0] == "records":
                    chunks[-1][1].append((as_record(Record, record), targets))
                else:
                    chunks.append(("records", [(as_record(Record, record), targets)]))
            for index, (what, payload) in enumerate(chunks):
                try:
                    if what == "records":
                        self._send_records(payload)
                    else:
                        self._connection.send(payload)  # a Flush or Finish command
                except (OSError, EOFError, ValueError):
                    # The delivery process is gone: what was not sent waits, in order, for whoever takes over.
                    with self._retained_lock:
                        for later_what, later in chunks[index + 1 :]:
                            if later_what == "records":
                                self._retained.extend(item for item in later if item[0].seq is not None)
                    return

    def _send_records(self, records: list[tuple[Record, tuple[str, ...] | None]]) -> None:
        with self._retained_lock:  # kept until the delivery process says it is safe, sent or not
            self._retained.extend(item for item in records if item[0].seq is not None)
        try:
            message = ForkingPickler.dumps(Records("records", records))
        except Exception:  # something in a record cannot be pickled; the original stays retained
            sendable = []
            for item in records:
                fit = _sendable(item)
                if fit is not None:
                    sendable.append(fit)
                else:
                    self._not_sent.update(item[1] or tuple(self.workers))
            message = ForkingPickler.dumps(Records("records", sendable))
        self._connection.send_bytes(message)

    # -- reader thread -----------------------------------------------------------------------
    def _read(self) -> None:
        while True:
            try:
                event = self._connection.recv()
            except (EOFError, OSError):
                break
            try:
                self._handle_event(event)
            except Exception as error:  # bookkeeping here (run.json on a full disk) must not stop the reader
                logger.warning("could not handle %r from the delivery process: %r", event[0], error)
        self.closed = True
        if not all(worker.finished.is_set() for worker in self.workers.values()):
            self.dead = True
            self._queue.put(None)  # stop the feeder, and wait until what it held is back in the buffer
            self._feeder.join()
            code = self.process.wait()
            self._on_death(self, f"exit code {code}")
        for event in self._flushes.values():
            event.set()

    def _handle_event(self, event: Event) -> None:
        if event.kind == "ready":
            self._ready.set()
        elif event.kind == "started":
            worker = self.workers[event.name]
            worker.resume_state = event.state
            worker.report.start_seconds = event.start_seconds
            adopt(worker.tracker, event.view)
            try:
                self._on_started(event.name, event.state)
            finally:
                worker.started.set()
        elif event.kind == "progress":
            self._on_progress(event.name, event.seq, event.step)
        elif event.kind == "safe":
            self._safe[event.name] = event.seq
            self._trim()
        elif event.kind == "flushed":
            flushed = self._flushes.pop(event.token, None)
            if flushed is not None:
                flushed.set()
        elif event.kind == "error":
            self._on_error(event.name, event.message, event.cause)
        elif event.kind == "finished":
            name, report = event.name, event.report
            view = event.view
            if self._not_sent[name]:
                report.dropped += self._not_sent[name]
                report.notes.append(f"{self._not_sent[name]} record(s) could not be sent to the delivery process")
            if self._dropped_full[name]:
                report.dropped += self._dropped_full[name]
                report.notes.append(
                    f"{self._dropped_full[name]} record(s) dropped: the queue to the delivery process was full "
                    "(on_full='drop')"
                )
            worker = self.workers[name]
            worker.report = report
            adopt(worker.tracker, view)
            worker.finished.set()

    def _trim(self) -> None:
        open_names = [name for name, worker in self.workers.items() if not worker.finished.is_set()]
        if not open_names:
            return
        safe = min(self._safe.get(name, -1) for name in open_names)
        with self._retained_lock:
            while self._retained and self._retained[0][0].seq is not None and self._retained[0][0].seq <= safe:
                self._retained.popleft()

    def take_over(self) -> list[tuple[Record, tuple[str, ...] | None]]:
        """After a death: every record the delivery process may not hold, in order (retained, then unsent)."""
        pending = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None and item[1] != "control":
                pending.append((as_record(Record, item[0]), item[1]))
        with self._retained_lock:
            taken = [*self._retained, *self._retained_after_stop, *pending]
            self._retained.clear()
            self._retained_after_stop = []
        self._room.set()
        return taken

    def wait_ready(self) -> bool:
        return self._ready.wait(READY_TIMEOUT)

    def close(self, timeout: float) -> None:
        """After finish: let the delivery process exit, without waiting for it here.

        By now each backend there has reported finished (what it was given is durable) or was
        abandoned at the finish timeout; what is left is that interpreter's teardown (about a second
        once MLflow's modules are loaded), which the caller of ``finish()`` need not wait for. A thread
        waits instead and kills the process if it overstays; it is not a daemon, so this interpreter's
        exit still waits for the delivery process (bounded by ``timeout``).
        """
        self._queue.put(None)
        threading.Thread(target=self._await_exit, args=(timeout,), name="tracking-delivery-exit", daemon=False).start()

    def _await_exit(self, timeout: float) -> None:
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            logger.warning("the delivery process did not exit; killing it")
            self.process.kill()
            self.process.wait()
        self._connection.close()


__all__ = ["START_WAIT_SECONDS", "DeliveryLink", "RemoteWorker"]


def _sendable(item: tuple[Record, tuple[str, ...] | None]) -> tuple[Record, tuple[str, ...] | None] | None:
    """A record as the delivery process can receive it: ``log_kwargs`` pickle cannot send are left out;
    a record whose data itself cannot be sent is not delivered. Either way with one warning."""
    record, targets = item
    where = ", ".join(targets) if targets else "the delivery process"
    if _pickles(record):
        return item
    kept = {}
    for name, value in record.kwargs.items():
        if _pickles(value):
            kept[name] = value
        else:
            warn_once(
                where,
                name,
                f"log_kwargs value {type(value).__name__} cannot be sent to the delivery process; "
                "left out (delivery='thread' keeps it)",
                reason="unpicklable-kwarg",
            )
    record = record._replace(kwargs=kept)
    if _pickles(record):
        return record, targets
    warn_once(
        where,
        record.kind,
        f"a {record.kind} record cannot be sent to the delivery process (it does not "
        "pickle); not delivered (delivery='thread' keeps it)",
        reason="unpicklable-record",
    )
    return None


def _pickles(value: Any) -> bool:
    try:
        ForkingPickler.dumps(value)
    except Exception:
        return False
    return True
