"""What a full queue costs the training loop: the seconds its ``log()`` calls waited for room.

A backend slower than the loop fills its queue, and then ``log()`` waits (the lossless default).
Nothing is lost, but the loop pays, and nothing else tells the user so. :class:`LoopWaits` adds up
those waits for the finish report and, once they are a noticeable share of the run, says once what
lets the loop go on. The advice differs by delivery mode: with threads the backend's SDK work also
holds the interpreter lock the loop needs, so a process of its own is what helps (README, "A fast
loop"); in the delivery process it already has one, so only not waiting helps.
"""

from __future__ import annotations

import time

from ..notices import logger

#: the loop has waited at least this long in all ...
ADVICE_AFTER_SECONDS = 2.0
#: ... and for at least this share of the run so far, before the notice
ADVICE_SHARE = 0.05
#: shorter totals are left out of the finish report
REPORTED_FROM_SECONDS = 0.05

THREAD_ADVICE = (
    "with delivery='thread' its SDK's work also holds the interpreter lock the loop runs on: "
    "delivery='process' (or TRACKING_DELIVERY=process) gives it a process of its own; on_full='spill' lets "
    "the loop go on while it catches up"
)
PROCESS_ADVICE = "on_full='spill' lets the loop go on while it catches up (records wait in memory meanwhile)"


class LoopWaits:
    """The caller's waits for room in one queue: a backend's, or the one to the delivery process."""

    def __init__(self, where: str, advice: str, *, advise: bool = True) -> None:
        self.where = where
        self.advice = advice
        self.seconds = 0.0
        self._began = time.monotonic()
        #: in the delivery process the waiting thread is its reader, not the training loop: count, never advise
        self._advised = not advise

    def add(self, seconds: float) -> None:
        self.seconds += seconds
        if self._advised or self.seconds < ADVICE_AFTER_SECONDS:
            return
        elapsed = time.monotonic() - self._began
        if self.seconds >= ADVICE_SHARE * elapsed:
            self._advised = True
            logger.warning(
                "the training loop has waited %.1f s in all for room in %s (%.0f%% of the run's %.0f s so far): "
                "it takes records slower than the loop logs them; %s",
                self.seconds,
                self.where,
                100 * self.seconds / max(elapsed, 1e-9),
                elapsed,
                self.advice,
            )

    def note(self) -> str | None:
        """The finish report's line, when the loop waited long enough to matter."""
        if self.seconds < REPORTED_FROM_SECONDS:
            return None
        return f"the training loop waited {self.seconds:.2f} s in all for room in {self.where}"
