"""The run's journal as the other backends of this process see it: how far it holds the run's records.

The journal comes first: a backend's worker hands a batch to its SDK once the journal has written it
(:meth:`RunJournal.wait_until_held`), so no backend ever holds a record the journal lacks, and resume and
replay, which read the journal, can always give each backend all it misses. The wait is the journal's
batching (milliseconds); a journal that has not written a record within ``JOURNAL_FIRST_SECONDS`` (a disk
that stalls or is full) stops holding the backends back until it has caught up, and says so once.

Every record a backend gets, the journal gets too (``run.calls.receivers``), and its delivery moves its
cursor only past what it wrote. So a record at or below that cursor is in the journal: a backend that cannot
take it (down, stuck, finished in time) leaves it there instead of copying it to its spill journal, and
reads it back from its own cursor on when it answers again. Where the journal runs in another process (some
backends in the delivery process, some in threads), or no journal is written (a replay into the run its
journal came from), nothing is held and records are copied to the spill journal as before.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..notices import logger
from ..store.journal import journal_files
from .recovery import LIVE

if TYPE_CHECKING:
    from ..backends.jsonl import JsonlTracker
    from .engine import Delivery


#: the longest a backend waits for the journal to write a batch before it takes the batch anyway
JOURNAL_FIRST_SECONDS = 1.0
#: how often a waiting backend looks again whether it should stop waiting (finish gave up on it)
_WAIT_SLICE = 0.05


class RunJournal:
    def __init__(self) -> None:
        self._delivery: Delivery | None = None
        self._tracker: JsonlTracker | None = None
        self._written = threading.Condition()
        #: the record the journal had not written in time: nobody waits for it until it holds that one
        self._behind_at: int | None = None
        self._slow_seen = False

    def attach(self, delivery: Delivery, tracker: JsonlTracker) -> None:
        """``delivery`` writes the run's journal, through ``tracker``."""
        self._delivery, self._tracker = delivery, tracker
        delivery.positions.on_durable = self._wrote

    def _wrote(self) -> None:
        with self._written:
            self._written.notify_all()

    def may_take(self, seq: int | None) -> bool:
        """Whether a backend may take the record numbered ``seq`` now: the journal holds it, or nobody waits for
        the journal (it is not writing, or is behind: it has not yet written the record it was late with)."""
        if seq is None or self._delivery is None or self.holds(seq):
            return True
        if self._behind_at is not None:
            if not self.holds(self._behind_at):
                return True
            self._behind_at = None  # it caught up
        return not self._writing()

    def wait_until_held(self, seq: int, give_up: Callable[[], bool]) -> None:
        """Wait until a backend may take the record numbered ``seq``, ``JOURNAL_FIRST_SECONDS`` at most (then
        the journal is behind: nobody waits for it until it has caught up), or until ``give_up()``."""
        deadline = time.monotonic() + JOURNAL_FIRST_SECONDS
        with self._written:
            while not self.may_take(seq):
                left = deadline - time.monotonic()
                if left <= 0:
                    self._behind_at = seq
                    self._slow_seen, first = True, not self._slow_seen
                    (logger.warning if first else logger.debug)(
                        "the run's journal has not written record %d after %.0f s: the backends take "
                        "records before it until it has caught up",
                        seq,
                        JOURNAL_FIRST_SECONDS,
                    )
                    return
                if give_up():
                    return
                self._written.wait(min(left, _WAIT_SLICE))

    def _writing(self) -> bool:
        """Whether the journal takes records as they come (not down, given up on or finished)."""
        delivery = self._delivery
        return not (delivery is None or delivery.abandoned or delivery.finished or delivery.mode != LIVE)

    @property
    def attached(self) -> bool:
        """Whether the journal is written in this process (else nothing can be left in it from here)."""
        return self._delivery is not None

    def holds(self, seq: int | None) -> bool:
        """Whether the journal has written the record numbered ``seq``."""
        delivery = self._delivery
        return seq is not None and delivery is not None and seq <= delivery.positions.cursor

    def files(self) -> list[Path]:
        """The journal's files, oldest first (its segments, then ``journal.jsonl``); none before it started."""
        tracker = self._tracker
        if tracker is None or tracker.tracker is None:
            return []
        return journal_files(tracker.journal_path)
