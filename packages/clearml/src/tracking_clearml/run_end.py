"""How the run ended (``tracker.run_end``) in ClearML's task statuses.

ClearML's server keeps a task's status: ``completed``, ``failed`` (with a ``status_reason``) or ``stopped``
(aborted, with a ``status_message``). ``Task.close()`` sets one from ClearML's own exit hooks, which under a
dispatcher see neither an exception that left the ``with`` block nor a run ended by a delivery process; the
status the run really ended with is therefore set after ``close()``, with ``force=True`` so that the
server's state machine takes it from whatever ``close()`` chose. An offline session keeps no status (the
SDK sends nothing offline and ``Task.import_offline_session`` marks every imported task completed), nor do
start and end times, which the server stamps itself and no public call sets.
"""

from __future__ import annotations

from typing import Any

from tracking_core import RunEnd

#: ``run_end.outcome`` -> ClearML's ``Task.TaskStatusEnum`` value.
CLEARML_STATUS = {"finished": "completed", "failed": "failed", "killed": "stopped"}


def end_task(task: Any, end: RunEnd) -> None:
    """Give the closed ``task`` the status the run ended with: completed, failed with the run's status as the
    reason (``crashed: ValueError``), or stopped with it as the message (``killed: KeyboardInterrupt``)."""
    if end.outcome == "failed":
        task.mark_failed(status_reason=end.status, force=True)
    elif end.outcome == "killed":
        task.mark_stopped(force=True, status_message=end.status)
    elif task.get_status() != CLEARML_STATUS["finished"]:  # left as close() made it (and published it if asked)
        task.mark_completed(status_message=end.status, force=True)
