"""How the run ended, in Aim's own terms.

Aim keeps no run status: a run is *active* until ``Run.close`` stamps its ``end_time``, however it ended.
What Aim has is its check-ins (``.aim/check_ins``, what Aim's run-status watcher reads): the SDK's
``Run.report_successful_finish()`` marks a run that finished without error, and a run without that mark
"can potentially be considered as failed" (Aim's words). A run's error messages are Aim's log records
(``Run.log_error``: the run page's messages, and the watcher's notifications). Aim has no killed or
aborted state: an interrupted run is left as a failed one, its status as the message.

The start (``creation_time``) and end (``end_time``) are Aim's own stamps, taken when the ``aim.Run`` is
created and closed; no public call sets either, so they are left as Aim takes them.
"""

from __future__ import annotations

from typing import Any

from tracking_core import RunEnd


def record_end(run: Any, end: RunEnd) -> None:
    """Before ``Run.close``: Aim's successful-finish check-in for a finished run, else the status
    (``crashed: ValueError``, ``killed: KeyboardInterrupt``, ...) as the run's error message."""
    if end.outcome == "finished":
        run.report_successful_finish()
    else:
        run.log_error(end.status)
