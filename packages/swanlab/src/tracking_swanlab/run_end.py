"""How the SwanLab run ends: the state ``run.finish`` is given, and who gets to end it.

SwanLab 0.8+ ends a run as ``"success"``, ``"crashed"`` (with an error text) or ``"aborted"``
(``Run.finish(state=..., error=...)``); its finish record keeps the state, the error and its own finish
time. The run's end as the library saw it (``GeneralTracker.run_end``) maps onto them: finished ->
success, crashed -> crashed, killed (Ctrl-C, SIGTERM, a dead process) -> aborted, the error being the
run's status (``crashed: ValueError``). SwanLab stamps the start and finish times itself when
``swanlab.init`` and ``finish`` run; its API takes no time of ours.

Left to itself, ``swanlab.init`` installs an exception hook (and, on the main thread, a SIGINT handler)
that finishes the run the moment the script dies -- before the dispatcher has delivered what the run
logged last, which SwanLab then refuses. Under a dispatcher (``run_context`` set), which finishes every
backend once the queues are drained and says how the run ended, the hooks the process had are kept
instead (:func:`run_ended_by_dispatcher`); used on its own, the tracker leaves SwanLab's hooks in place.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

from tracking_core import RunEnd

#: ``RunEnd.outcome`` -> the state ``Run.finish`` takes (``swanlab.sdk.typings.run.FinishType``).
FINISH_STATES = {"finished": "success", "failed": "crashed", "killed": "aborted"}


def finish_arguments(end: RunEnd) -> dict[str, Any]:
    """``run.finish`` keyword arguments for a run that ended as ``end``: its state, and the run's status as the error."""
    state = FINISH_STATES[end.outcome]
    return {"state": state, "error": None if state == "success" else end.status}


@contextlib.contextmanager
def run_ended_by_dispatcher(dispatched: bool) -> Iterator[None]:
    """Around ``swanlab.init`` of a ``dispatched`` run: the process's exception hook and SIGINT handler stay."""
    if not dispatched:
        yield
        return
    excepthook = sys.excepthook
    main = threading.current_thread() is threading.main_thread()
    sigint = signal.getsignal(signal.SIGINT) if main else None
    try:
        yield
    finally:
        sys.excepthook = excepthook
        # None: a handler set outside Python, which cannot be put back from here
        if main and sigint is not None and signal.getsignal(signal.SIGINT) is not sigint:
            signal.signal(signal.SIGINT, sigint)
