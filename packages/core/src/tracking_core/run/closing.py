"""The end of a run: ``Dispatcher.finish`` (drain and close every backend, then the report) and the
flush that waits for a set of workers (``Dispatcher.flush``, and a held tracker's own ``flush``)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contract.tracker import RunEnd
from ..delivery.worker import ManagedMixin
from ..intake.record import Record
from ..notices import logger
from ..report import FinishReport
from ..store.owed import replay_command
from . import lifecycle

if TYPE_CHECKING:
    from .dispatcher import Dispatcher

_EMPTY: dict[str, Any] = {}


def finish(run: Dispatcher, timeout: float | None) -> FinishReport:
    """Drain and close every backend; a backend that exceeds ``timeout`` is abandoned and spilled."""
    if run.state.report is not None:
        return run.state.report
    timeout = run.options.finish_timeout if timeout is None else timeout
    if run.state.context_capture is not None:  # its last sample and the context go before the finish marker
        run.state.context_capture.stop()
    with run.state.lock:  # no log() can slip in between the finish marker and closing the list
        workers = run.state.workers
        run.state.set_workers([], [])
        run.state.finishing = True
    end = run_end(run)
    for worker in workers:
        worker.tracker.run_end = end  # read by its finish(), in the worker, after the queue hands it the marker
        worker.put(Record("finish", None, None, _EMPTY, None, None))
    deadline = time.monotonic() + timeout
    for worker in workers:
        if not worker.join(max(0.0, deadline - time.monotonic())):
            worker.abandon()
            logger.warning(
                "backend %r did not finish within %.0f s; its pending records were spilled", worker.name, timeout
            )
    if run.state.link is not None:
        run.state.link.close(timeout=30.0)
    if run.state.session is not None:
        # the journal's own owed records are only in its spill (``tracking replay`` of that file)
        owed = {worker.name: worker.report.spilled for worker in run.state.all_workers if worker.name != "jsonl"}
        run.state.session.close(run.state.step, end.status, end.ended, owed)
    lifecycle.forget(run)
    run.state.report = FinishReport(
        backends={
            worker.name: worker.report for worker in run.state.all_workers if worker.name not in run.state.internal
        },
        run_dir=str(run.run_dir) if run.run_dir else None,
        rejected_values=dict(run.state.rejected),
        notes=_loop_waits(run) + _journal_notes(run),
    )
    report_file = _keep_report(run, run.state.report)
    if not run.state.report.ok:  # at exit nobody holds the report: the whole table; else one line
        table = f"\n{run.state.report}\n" if run.state.at_exit else ": "
        logger.warning("not everything was delivered%s%s", table, _what_to_do(run.state.report, report_file))
    if run.state.pending_error is not None:
        run.state.raise_pending()
    return run.state.report


def run_end(run: Dispatcher) -> RunEnd:
    """How the run ended, for run.json and each backend's ``finish()`` (``GeneralTracker.run_end``).

    A SIGTERM that unwound a ``with`` block is ``killed: SIGTERM``, not the ``SystemExit`` the block saw.
    A replay into the run's own folder ends the backends' runs as the run ended: its run.json status
    and end time (a run whose process died without one was killed).
    """
    if run.state.replay_sources is not None and run.state.session is not None:
        extra = run.state.session.manifest.extra
        status, ended = extra.get("status"), extra.get("ended")
        if not isinstance(status, str) or status in ("", "running"):
            status = "killed"
        return RunEnd(status, float(ended) if isinstance(ended, (int, float)) else None)
    return RunEnd(lifecycle.ending() or run.state.ended_by or "finished", time.time())


def _journal_notes(run: Dispatcher) -> list[str]:
    """The run's own journal is not one of the user's backends, but what it could not keep is said."""
    notes = []
    for worker in run.state.all_workers:
        report = worker.report
        if worker.name in run.state.internal and not report.ok:
            notes.append(
                f"the run's journal ({report.state}, {report.spilled} spilled, {report.dropped} dropped): "
                f"{report.last_error or 'not every record was written'}"
            )
    return notes


def _loop_waits(run: Dispatcher) -> list[str]:
    """What full queues cost the loop, into each backend's report: a note for a backend whose own queue it
    waited on (threads), one for the run when it waited on the queue to the delivery process."""
    shared = run.state.link.loop_waits if run.state.link is not None else None
    for worker in run.state.all_workers:
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
    if run.state.pending_error is not None:
        run.state.raise_pending()
    return done


#: the table of the run's last ``finish()``, in its folder: the report of a caller that did not keep it
REPORT_NAME = "report.txt"


def _keep_report(run: Dispatcher, report: FinishReport) -> Path | None:
    """Write the report's table into the run folder (``None``: this process writes no run folder)."""
    if run.state.session is None or not run.state.session.writes or run.run_dir is None:
        return None
    path = Path(run.run_dir) / REPORT_NAME
    try:
        path.write_text(f"{report}\n", encoding="utf-8")
    except OSError as error:
        logger.debug("could not write %s: %s", path, error)
        return None
    return path


def _what_to_do(report: FinishReport, report_file: Path | None) -> str:
    """Which backends lack what, where the table is, and the command that delivers what they are owed."""
    parts = [report.summary()]
    if report_file is not None:
        parts.append(f"the full report is in {report_file}")
    owing = [name for name in report.failed if report.backends[name].spilled]  # its spill: in the journal too
    if owing and report.run_dir is not None:
        parts.append(f"to deliver the rest: {replay_command(Path(report.run_dir), owing)}")
    return "; ".join(parts)
