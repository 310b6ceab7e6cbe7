"""The runs the loggers of this process hold open, shared by a logger's copies, and their threads' ``stop()``."""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any

from tracking_core import GeneralTracker, TrackingError
from tracking_core.kit import notice

if TYPE_CHECKING:
    from tracking_core import Dispatcher

#: The runs loggers of this process hold open, by (logging dir, project, run id): a copy of a logger
#: made in this process (``copy.deepcopy``, pickle) logs into the open run instead of reopening it.
open_runs: weakref.WeakValueDictionary[tuple[str, str, str], Dispatcher] = weakref.WeakValueDictionary()
open_runs_lock = threading.Lock()


def is_open(run: Dispatcher) -> bool:
    """False once ``finish()`` started, by whichever holder of the run called it."""
    return not run.finished


class _FinishRun:
    """A run thread's ``stop()``: finish the run it serves (once; later calls find it finished)."""

    def __init__(self, run: Dispatcher) -> None:
        self.run = run

    def __call__(self) -> None:
        if not is_open(self.run):
            return
        try:
            self.run.finish()
        except TrackingError as error:  # on_error="raise": stopping a thread must not raise
            notice(f"lightning: finishing the run on stop() failed: {error}")


def stoppable_threads(run: Dispatcher, before: set[threading.Thread]) -> None:
    """Give the threads ``run`` started (its backends' workers, the system-metrics sampler, the context
    capture; all daemons named ``tracking-*``) a ``stop()`` that finishes the run."""
    stop = _FinishRun(run)
    for thread in threading.enumerate():
        if thread not in before and thread.daemon and thread.name.startswith("tracking-"):
            setattr(thread, "stop", stop)  # noqa: B010  # threading.Thread declares no such attribute


def by_name(log_with: Any) -> Any:
    """Tracker objects serve one run: a reopened run gets new ones of the same classes, built by name."""
    if isinstance(log_with, GeneralTracker):
        return log_with.name
    if isinstance(log_with, (list, tuple)):
        return [item.name if isinstance(item, GeneralTracker) else item for item in log_with]
    return log_with
