"""What a backend that started tells the run about resuming: its resume state, or why it was not resumed.

Both delivery modes call these where a backend comes up (the dispatcher in thread mode, the delivery
process in process mode), so the bookkeeping is one behaviour.
"""

from __future__ import annotations

from typing import Any

from ..contract.tracker import GeneralTracker
from ..notices import logger


def not_resumed_note(tracker: GeneralTracker, resumed: bool) -> str | None:
    """The report note for a backend the resumed run had no state for: it starts a new run of its own."""
    if resumed and tracker.run_context is not None and tracker.run_context.resume is None:
        return f"not resumed: the earlier run left no {tracker.name} state; this is a new {tracker.name} run"
    return None


def resume_state_of(tracker: GeneralTracker) -> Any:
    """``tracker.resume_state()``, or ``None`` (with a warning) when it fails: a backend that cannot say how
    to reopen its run still runs, it just cannot be resumed."""
    try:
        return tracker.resume_state()
    except Exception as error:
        logger.warning("backend %r: resume_state() failed (%r); this run cannot resume it", tracker.name, error)
        return None
