"""``RunState``: what a run holds while it runs, in one object the dispatcher owns.

The ``Dispatcher`` is the run's face; its work is split by concern over ``run/`` (``setup``, ``calls``,
``closing``, ``managed``, ``process_mode``, ``lifecycle``) and the context capture. They all read and
change this one object, through its fields and the three methods that keep its invariants, never
through the dispatcher's private attributes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..delivery.run_journal import RunJournal

if TYPE_CHECKING:
    from ..context import Extras, RunContextCapture
    from ..contract.noop import NoOpTracker
    from ..contract.tracker import GeneralTracker
    from ..delivery.worker import ManagedMixin
    from ..errors import TrackingError
    from ..process.link import DeliveryLink
    from ..report import FinishReport
    from .session import RunSession


@dataclass(eq=False)
class RunState:
    #: the trackers ``log_with`` named, resolved (classes or instances)
    specs: list[type[GeneralTracker] | GeneralTracker]
    #: what the run records of its own and sends on (``context.extras_of``)
    context_options: Extras
    #: the workers that still take records (a held tracker finished alone leaves, ``finish`` empties it)
    workers: list[ManagedMixin] = field(default_factory=list)
    #: how ``log`` reaches them: each local worker's ``put``, one ``put_all`` for the delivery process
    puts: list[Callable[[Any], None]] = field(default_factory=list)
    #: every worker the run had, for ``trackers``, ``get_tracker`` and the report
    all_workers: list[ManagedMixin] = field(default_factory=list)
    #: trackers the run keeps for itself (the journal when ``log_with`` does not name ``jsonl``)
    internal: frozenset[str] = frozenset()
    #: the backend that writes the run's journal (``None``: a replay into the run its journal came from)
    journal: str | None = None
    #: how far the journal written in this process got: the other backends leave what it holds in it
    run_journal: RunJournal = field(default_factory=RunJournal)
    #: stand-ins on ranks that run no trackers
    skipped: dict[str, NoOpTracker] = field(default_factory=dict)
    #: the last step and record number given out; both only grow, under ``lock``
    step: int = -1
    seq: int = -1
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: a backend's failure under ``on_error="raise"``, raised by the caller's next call
    pending_error: TrackingError | None = None
    #: values refused at the call, by key, for the report
    rejected: dict[str, str] = field(default_factory=dict)
    initialized: bool = False
    in_forked_child: bool = False
    #: set once by ``finish``; a second ``finish`` returns it
    report: FinishReport | None = None
    finishing: bool = False
    #: finished by the exit hook: nobody will see the report unless it is logged
    at_exit: bool = False
    #: how a ``with`` block ended, when it raised (``run.json``'s status)
    ended_by: str | None = None
    session: RunSession | None = None
    #: the journal a ``tracking replay`` delivers, in place of this run's own records
    replay_sources: list[Path] | None = None
    #: when the run began, for a copy of an earlier run (``tracking replay --new-run``): its start, not now
    started: float | None = None
    #: a direct call on one managed tracker: the backend it is for (per thread)
    only: threading.local = field(default_factory=threading.local)
    #: the delivery process, when there is one
    link: DeliveryLink | None = None
    #: backend -> (class path, init kwargs), for the backends in the delivery process
    remote: dict[str, tuple[tuple[str, str], dict[str, Any] | None]] = field(default_factory=dict)
    context_capture: RunContextCapture | None = None

    def set_workers(
        self,
        open_workers: list[ManagedMixin],
        puts: list[Callable[[Any], None]] | None = None,
        every: list[ManagedMixin] | None = None,
    ) -> None:
        """The one place the worker lists change, always together (under ``lock`` once ``log`` may run).

        ``puts`` defaults to each worker's ``put``; ``every`` (the workers the run ever had) is kept unless given.
        """
        self.workers = open_workers
        self.puts = [worker.put for worker in self.journal_first(open_workers)] if puts is None else puts
        if every is not None:
            self.all_workers = every

    def journal_first(self, workers: list[ManagedMixin]) -> list[ManagedMixin]:
        """``workers``, the run's journal first: delivering in the caller's thread (``blocking=True``), the
        journal writes each record before any backend gets it, as the workers' wait makes it in threads."""
        return sorted(workers, key=lambda worker: worker.name != self.journal)

    def store_error(self, error: TrackingError) -> None:
        """Keep a backend's failure for the caller's next call (the first one wins)."""
        if self.pending_error is None:
            self.pending_error = error

    def raise_pending(self) -> None:
        error, self.pending_error = self.pending_error, None
        if error is not None:
            raise error
