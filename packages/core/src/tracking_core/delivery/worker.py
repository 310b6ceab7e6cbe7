"""``BackendWorker``: one backend's queue and thread.

The caller only appends to a queue (the hot path: metric records arrive as plain tuples in
:class:`~tracking_core.intake.record.Record`'s field order); the worker thread drains it in batches, makes
them Records and hands them to the backend's :class:`~tracking_core.delivery.engine.Delivery`, which owns
what happens to each record. With ``blocking=True`` there is no thread: the caller delivers, under a lock.
"""

from __future__ import annotations

import functools
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..contract.tracker import GeneralTracker
from ..intake.record import CONTROL_KINDS, KINDS, Record, RecordTuple
from ..intake.record import new_record as as_record
from ..notices import logger, warn_once
from ..report import BackendReport
from .backlog import MAX_BATCH
from .engine import Delivery
from .pace import THREAD_ADVICE, LoopWaits

LINGER_SECONDS = 0.005
#: the longest the worker waits on its queue at a time while holding the handover lock
HANDOVER_SLICE = 0.2
#: how long ``abandon`` waits for the worker to let go of the handover lock
ABANDON_WAIT_SECONDS = 5.0
START_WAIT_SECONDS = 120.0
#: how long ``log()`` waits for room in a full queue before it says which backend it is waiting for
ROOM_WARNING_SECONDS = 30.0
#: a backend whose worker has been away from its queue this long, inside an SDK call (one, or several in a
#: row), with its queue full, has its records spilled instead of making ``log()`` wait (``Delivery.spill_over``)
SPILL_OVER_SECONDS = 5.0


def wait_for_room(
    full: Callable[[], bool], room: threading.Event, give_up: Callable[[], bool], what: Callable[[], str]
) -> float:
    """Wait while ``full()`` (until ``give_up()``), woken by ``room``; the seconds waited. A loop that stops
    must say why: after ``ROOM_WARNING_SECONDS`` one warning names ``what()`` it is waiting for."""
    began, warned = time.monotonic(), False
    while full() and not give_up():
        room.clear()
        if not full():
            break
        room.wait(0.05)
        if not warned and time.monotonic() - began > ROOM_WARNING_SECONDS:
            warned = True
            logger.warning(
                "log() has waited %.0f s for room in %s; on_full='spill' (or 'drop') lets the loop go on",
                time.monotonic() - began,
                what(),
            )
    return time.monotonic() - began


#: the contract's methods a training script may call on a tracker the dispatcher manages
MANAGED_METHODS = (*(kind.method for kind in KINDS.values()), "flush", "finish")
#: route(worker, method name, the tracker's own bound method, args, kwargs) -> what the call returns
Router = Callable[["ManagedMixin", str, Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]


def direct_arguments(own: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments by parameter name, in order (defaults filled, ``**kwargs`` under ``"**"``).

    Raises the ``TypeError`` the method itself would raise for a wrong call, at the call.
    """
    import inspect

    signature = inspect.signature(own)
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    arguments: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            arguments["**"] = dict(value)
        elif kind is not inspect.Parameter.VAR_POSITIONAL:
            arguments[name] = value
    return arguments


class ManagedMixin:
    """What the dispatcher needs of a backend's worker, in this process (:class:`BackendWorker`) or
    standing for one in the delivery process; and what it does for the tracker object the script holds."""

    tracker: GeneralTracker
    name: str
    report: BackendReport
    started: threading.Event
    #: the caller's enqueue (the hot path)
    put: Callable[[Any], None]

    def launch(self) -> None:
        raise NotImplementedError

    def join(self, timeout: float | None) -> bool:
        """True when the backend finished within ``timeout``."""
        raise NotImplementedError

    def abandon(self) -> None:
        raise NotImplementedError

    def manage(self, route: Router) -> None:
        """Send the tracker's own methods, called from outside this worker, through ``route``.

        Accelerate users call ``tracker.log(...)`` on the object ``get_tracker`` returns; run
        directly, that call would race the worker on the SDK (or hit it before ``start()``). The
        wrappers are instance attributes: inside the worker the tracker's own method runs.
        """
        tracker = self.tracker
        tracker.__dict__["_manager"] = self
        for name in MANAGED_METHODS:
            tracker.__dict__[name] = self._routed(name, getattr(tracker, name), route)

    def _routed(self, name: str, own: Callable[..., Any], route: Router) -> Callable[..., Any]:
        inside = self.inside

        @functools.wraps(own)
        def method(*args: Any, **kwargs: Any) -> Any:
            if inside():
                return own(*args, **kwargs)
            return route(self, name, own, args, kwargs)

        return method

    def inside(self) -> bool:
        """Whether the current thread is the one delivering to this backend."""
        raise NotImplementedError

    def wait_started(self, timeout: float = START_WAIT_SECONDS) -> None:
        """Wait (bounded) until ``start()`` ran, unless called from the delivering thread itself."""
        if self.started.is_set() or self.inside():
            return
        if not self.started.wait(timeout):
            logger.warning("backend %r has not started after %.0f s", self.name, timeout)


class BackendWorker(ManagedMixin):
    def __init__(
        self,
        tracker: GeneralTracker,
        delivery_for: Callable[[GeneralTracker, BackendReport], Delivery],
        *,
        queue_size: int = 10_000,
        on_full: str = "block",
        blocking: bool = False,
        in_training_process: bool = True,
    ) -> None:
        self.tracker = tracker
        self.name = tracker.name
        self.report = BackendReport(self.name)
        self.delivery = delivery_for(tracker, self.report)
        self._queue: queue.SimpleQueue[RecordTuple] = queue.SimpleQueue()
        self._maxsize = queue_size
        self._drop_when_full = on_full == "drop"
        self._spill_when_full = on_full == "spill"
        self._room = threading.Event()
        self._blocking = blocking
        self._inline_lock = threading.Lock()
        self.started = threading.Event()
        self._thread: threading.Thread | None = None
        self._thread_id: int | None = None
        self._inline = threading.local()  # blocking mode: set while the caller delivers
        #: how long the caller waited for room in this queue (in the delivery process, its reader did)
        self.loop_waits = LoopWaits(
            f"backend {self.name!r}'s queue", f"{self.name!r} {THREAD_ADVICE}", advise=in_training_process
        )
        self.put = self._make_put()

    def inside(self) -> bool:
        return threading.get_ident() == self._thread_id or getattr(self._inline, "active", False)

    # -- caller side -----------------------------------------------------------------------
    def launch(self) -> None:
        if self._blocking:
            with self._inline_lock:
                self._inline.active = True
                try:
                    self._start()
                finally:
                    self._inline.active = False
            return
        self._thread = threading.Thread(target=self._run, name=f"tracking-{self.name}", daemon=True)
        self._thread.start()

    def _make_put(self) -> Callable[[RecordTuple], None]:
        """The caller's enqueue, as a closure: the hot path pays no attribute lookups."""
        if self._blocking:
            delivery = self.delivery

            inline = self._inline

            def put_inline(record: RecordTuple) -> None:
                with self._inline_lock:
                    inline.active = True
                    try:
                        delivery.handle([as_record(Record, record)])
                        delivery.tick()
                    finally:
                        inline.active = False

            return put_inline
        queue_size, queue_put, maxsize = self._queue.qsize, self._queue.put, self._maxsize
        put_when_full = self._put_when_full

        def put(record: RecordTuple) -> None:
            if queue_size() >= maxsize:
                put_when_full(record)
            else:
                queue_put(record)

        return put

    def _put_when_full(self, record: RecordTuple) -> None:
        if record[0] not in CONTROL_KINDS:
            if self._drop_when_full:
                self.report.dropped += 1
                warn_once(self.name, "*", "queue full: records are being dropped (on_full='drop')", reason="queue-full")
                return
            # Room comes when the worker takes records; while it sits in SDK calls (at once with
            # on_full="spill", once it has not looked at its queue for SPILL_OVER_SECONDS otherwise) the
            # queue goes to the spill instead. That clock does not start again for each call, nor for each
            # round of this loop: one log() waits about SPILL_OVER_SECONDS at most.
            spilling, delivery = self._spill_when_full, self.delivery
            while True:
                self.loop_waits.add(self._wait_for_room(0.0 if spilling else SPILL_OVER_SECONDS))
                if self._queue.qsize() < self._maxsize or delivery.abandoned or delivery.finished:
                    break
                if self._spill_over(stuck=not spilling):
                    break
        self._queue.put(record)

    def _spill_over(self, stuck: bool) -> bool:
        """Move the full queue to the backend's spill: it is ``stuck`` in its SDK, or ``on_full="spill"``.

        Needs the handover lock, which the worker lets go of inside SDK calls; False when the worker
        came back from its call first (it is taking records again).
        """
        delivery = self.delivery
        if not delivery.handover.acquire(timeout=HANDOVER_SLICE):
            return False  # the worker is taking records (again)
        try:
            if delivery.abandoned or delivery.finished:
                return False  # finish() gave up on the backend meanwhile: its spill is closed
            for record in delivery.spill_over(self._take_queue(), stuck):
                self._queue.put(record)
            return True
        finally:
            delivery.handover.release()

    def _wait_for_room(self, stuck_after: float) -> float:
        """Until there is room, or the worker is inside an SDK call and has not looked at its queue for
        ``stuck_after`` seconds (one call, or several in a row)."""
        delivery = self.delivery
        return wait_for_room(
            lambda: self._queue.qsize() >= self._maxsize,
            self._room,
            lambda: (
                delivery.abandoned
                or delivery.finished
                or (delivery.in_sdk() and delivery.seconds_busy() >= stuck_after)
            ),
            lambda: (
                f"backend {self.name!r}'s queue ({self._maxsize} records): the backend is not taking records "
                f"({'stuck in a call into its SDK' if delivery.in_sdk() else delivery.mode})"
            ),
        )

    def join(self, timeout: float | None) -> bool:
        """True when the worker finished within ``timeout``."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def abandon(self) -> None:
        """Give up on a backend that did not finish in time; spill what it still holds."""
        # The worker lets go of the lock within a slice, or at once when it is inside the SDK.
        owned = self.delivery.handover.acquire(timeout=ABANDON_WAIT_SECONDS)
        try:
            self.delivery.abandon(self._take_queue())
        finally:
            if owned:
                self.delivery.handover.release()
        self._room.set()

    def _take_queue(self) -> list[Record]:
        """Everything in the queue, for a thread other than the worker (holding the handover lock)."""
        taken = []
        while True:
            try:
                taken.append(as_record(Record, self._queue.get_nowait()))
            except queue.Empty:
                return taken

    def add_note(self, note: str) -> None:
        """A line for this backend's entry in the finish report (beside the tracker's own notes)."""
        self.report.notes.append(note)

    @property
    def spill_path(self) -> Path | None:
        return Path(self.report.spill_path) if self.report.spill_path else None

    # -- worker side -----------------------------------------------------------------------
    def _start(self) -> None:
        try:
            self.delivery.start()
        finally:
            self.started.set()

    def _run(self) -> None:
        self._thread_id = threading.get_ident()
        delivery, get, size = self.delivery, self._queue.get, self._queue.qsize
        gather_below = min(MAX_BATCH, self._maxsize // 2)  # a queue filling up has gathered enough
        # Outside SDK calls this thread holds the delivery's handover lock, waiting on the queue
        # included (in short slices): a record it took is always where abandon() looks for it.
        delivery.own()
        try:
            delivery.at_queue()
            self._start()
            while not (delivery.finished or delivery.abandoned):
                delivery.at_queue()
                wait = delivery.wait_time()
                try:
                    if wait is not None and wait <= 0:
                        first = self._queue.get_nowait()
                    else:
                        first = get(timeout=HANDOVER_SLICE if wait is None else min(wait, HANDOVER_SLICE))
                except queue.Empty:
                    first = None
                if first is not None:
                    batch = [as_record(Record, first)]
                    delivery.hold(batch)
                    if first[0] == "log" and size() < gather_below and delivery.mode == "live":
                        # Let a few records gather: one batch per wake-up instead of one per record keeps
                        # this thread off the GIL while the training loop is logging.
                        time.sleep(LINGER_SECONDS)
                    while len(batch) < MAX_BATCH and size():
                        batch.append(as_record(Record, get()))
                    delivery.wait_for_the_journal(batch)
                    delivery.handle(batch)
                    self._room.set()
                delivery.tick()
        finally:
            delivery.disown()
            self._thread_id = None  # the id may be reused by a later thread, which is not this worker
