"""Reading a backlog: what a resumed run (a replay, a take-over) missed, then the spill after an outage.

:class:`~.catch_up.CatchUp` holds the catch-up's records; what waited during an outage is read with an
:class:`~.spill.OwedReader` (the run's journal and the spill, merged). Both are delivered one batch per tick
through the live path (a failure sends the delivery back to spilling), the catch-up first.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import TYPE_CHECKING

from ..intake.record import Record
from ..notices import logger
from .recovery import CATCHING_UP, LIVE, RECOVERING

if TYPE_CHECKING:
    from .engine import Delivery

MAX_BATCH = 1000


class Backlog:
    """The backlog of one :class:`~.engine.Delivery`, read batch by batch by its worker."""

    def __init__(self, delivery: Delivery) -> None:
        self.delivery = delivery

    def records(self) -> Iterator[Record]:
        """What a reopened run missed, less what the backend's storage already holds (see ``CatchUp.missed``)."""
        return self.delivery.catch_up.missed(
            self.delivery.positions.cursor,
            self.delivery.confirms_at_flush,
            self.last_stored_steps,
            self.delivery.tracker.sanitize_key,
        )

    def last_stored_steps(self) -> dict[str, int] | None:
        """The last step the backend's storage holds of each key; ``None`` when it cannot say."""
        try:
            with self.delivery.in_backend():
                history = self.delivery.tracker.read_back_history()
        except Exception as error:
            logger.info("backend %r cannot say how far its earlier run got (%r)", self.delivery.name, error)
            return None
        return {key: max(step for step, _ in points) for key, points in history.items() if points}

    def deliver_batch(self) -> None:
        """One batch of the backlog (resume, replay) or of the spill (recovery)."""
        if self.delivery.mode == CATCHING_UP:
            backlog = self.delivery.catch_up.backlog
            records = list(islice(backlog, MAX_BATCH)) if backlog is not None else []
            if not records:
                self.delivery.catch_up.backlog = None
                spiller = self.delivery.spiller
                if spiller.last_seq() > self.delivery.positions.cursor or spiller.awaiting_journal():
                    self.delivery.mode = RECOVERING
                    # past what the catch-up handed over: a backend that buffers confirms it at its next flush
                    # (or, if that fails, reads it again from its cursor after the retry)
                    positions = self.delivery.positions
                    self.delivery.spill_reader = self.delivery.owed_reader(max(positions.cursor, positions.handed_seq))
                else:
                    self.delivery.outage.back_to_live()
                return
        else:
            reader = self.delivery.spill_reader
            records = reader.read(MAX_BATCH) if reader is not None else []
            if not records and reader is not None:
                self.delivery.spiller.settle()  # what the run's journal wrote meanwhile is left there: read it
                records = reader.read(MAX_BATCH)
            if not records:
                if self.delivery.spiller.awaiting_journal():
                    return  # read again once the run's journal has written them (or they are copied to the spill)
                self.delivery.outage.back_to_live()
                return
        was = self.delivery.mode
        catching_up = was == CATCHING_UP
        if catching_up:
            self.delivery.catch_up.batch = records
        self.delivery.mode = LIVE  # deliver through the live path; a failure switches to SPILLING
        index = 0
        while index < len(records) and self.delivery.mode == LIVE and not self.delivery.abandoned:
            record = records[index]
            if record.kind == "config":
                self.delivery.spiller.remember_config(record)
            end = index + 1
            if record.kind == "log":
                while end < len(records) and records[end].kind == "log":
                    end += 1
            if catching_up:
                self.delivery.catch_up.next = end
            self.delivery.take(records[index:end])
            index = end
        if self.delivery.abandoned:
            return
        self.delivery.catch_up.untaken()  # a failure stopped the catch-up (_failed), or the batch is done
        if self.delivery.mode == LIVE:
            self.delivery.mode = was

    def stop_catching_up(self, untaken: list[Record]) -> None:
        """The catch-up cannot go on (the backend failed, or ``finish`` gave up on it): everything it
        still owes goes to the spill, in ``seq`` order ahead of the live records spilled meanwhile."""
        self.delivery.spiller.merge_in(self.delivery.catch_up.stop(untaken), self.delivery.positions.cursor)
