"""The run's journal as the other backends of this process see it: how far it holds the run's records.

Every record a backend gets, the journal gets too (``run.calls.receivers``), and its delivery moves its
cursor only past what it wrote. So a record at or below that cursor is in the journal: a backend that cannot
take it (down, stuck, finished in time) leaves it there instead of copying it to its spill journal, and
reads it back from its own cursor on when it answers again. Where the journal runs in another process (some
backends in the delivery process, some in threads), or no journal is written (a replay into the run its
journal came from), nothing is held and records are copied to the spill journal as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..store.journal import journal_files

if TYPE_CHECKING:
    from ..backends.jsonl import JsonlTracker
    from .engine import Delivery


class RunJournal:
    def __init__(self) -> None:
        self._delivery: Delivery | None = None
        self._tracker: JsonlTracker | None = None

    def attach(self, delivery: Delivery, tracker: JsonlTracker) -> None:
        """``delivery`` writes the run's journal, through ``tracker``."""
        self._delivery, self._tracker = delivery, tracker

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
