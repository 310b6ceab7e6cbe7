"""The end of a run: ``Dispatcher.finish`` (drain and close every backend, then the report) and the
flush that waits for a set of workers (``Dispatcher.flush``, and a held tracker's own ``flush``)."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from ..delivery.worker import ManagedMixin
from ..intake.record import Record
from ..notices import logger
from ..report import FinishReport
from . import lifecycle

if TYPE_CHECKING:
    from .dispatcher import Dispatcher

_EMPTY: dict[str, Any] = {}


def finish(run: Dispatcher, timeout: float | None) -> FinishReport:
    """Drain and close every backend; a backend that exceeds ``timeout`` is abandoned and spilled."""
    if run._report is not None:
        return run._report
    timeout = run.finish_timeout if timeout is None else timeout
    if run._context_capture is not None:  # its last sample and the context go before the finish marker
        run._context_capture.stop()
    with run._lock:  # no log() can slip in between the finish marker and closing the list
        workers = run._workers
        run._set_workers([], [])
        run._finishing = True
    for worker in workers:
        worker.put(Record("finish", None, None, _EMPTY, None, None))
    deadline = time.monotonic() + timeout
    for worker in workers:
        if not worker.join(max(0.0, deadline - time.monotonic())):
            worker.abandon()
            logger.warning(
                "backend %r did not finish within %.0f s; its pending records were spilled", worker.name, timeout
            )
    if run._link is not None:
        run._link.close(timeout=30.0)
    if run._session is not None:
        run._session.close(run._step, run._ended_by or lifecycle.ending() or "finished")
    lifecycle.forget(run)
    run._report = FinishReport(
        backends={worker.name: worker.report for worker in run._all_workers if worker.name not in run._internal},
        run_dir=str(run.run_dir) if run.run_dir else None,
        rejected_values=dict(run._rejected),
        notes=_loop_waits(run) + _journal_notes(run),
    )
    if not run._report.ok and run._at_exit:  # nobody holds the report: the whole table
        logger.warning("not everything was delivered\n%s", run._report)
    elif not run._report.ok:  # one line: the caller holds the report and prints it if it wants the table
        logger.warning("not everything was delivered: %s (see the report finish() returns)", run._report.summary())
    if run._pending_error is not None:
        run._raise_pending()
    return run._report


def _journal_notes(run: Dispatcher) -> list[str]:
    """The run's own journal is not one of the user's backends, but what it could not keep is said."""
    notes = []
    for worker in run._all_workers:
        report = worker.report
        if worker.name in run._internal and not report.ok:
            notes.append(
                f"the run's journal ({report.state}, {report.spilled} spilled, {report.dropped} dropped): "
                f"{report.last_error or 'not every record was written'}"
            )
    return notes


def _loop_waits(run: Dispatcher) -> list[str]:
    """What full queues cost the loop, into each backend's report: a note for a backend whose own queue it
    waited on (threads), one for the run when it waited on the queue to the delivery process."""
    shared = run._link.loop_waits if run._link is not None else None
    for worker in run._all_workers:
        own = getattr(worker, "loop_waits", None)  # a backend in this process (threads, or taken over)
        waits = own if own is not None else shared
        if waits is None:
            continue
        worker.report.loop_waited_seconds = waits.seconds
        note = waits.note() if own is not None else None
        if note is not None:
            worker.report.notes.append(note)
    note = shared.note() if shared is not None else None
    return [note] if note is not None else []


def flush_workers(run: Dispatcher, workers: list[ManagedMixin], timeout: float | None) -> bool:
    """Wait until what ``workers`` were given so far is durable in each backend (or in its spill)."""
    events = []
    for worker in workers:
        event = threading.Event()
        worker.put(Record("flush", event, None, _EMPTY, None, None))
        events.append(event)
    deadline = None if timeout is None else time.monotonic() + timeout
    done = all(event.wait(None if deadline is None else max(0.0, deadline - time.monotonic())) for event in events)
    if run._pending_error is not None:
        run._raise_pending()
    return done
