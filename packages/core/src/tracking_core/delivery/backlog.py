"""Reading what a backend owes from its cursor: what a resumed run (a replay, a take-over) missed, then what
waited during an outage.

One :class:`~.spill.OwedReader` reads both, in ``seq`` order: the catch-up (:class:`~.catch_up.CatchUp`,
less what the backend's storage holds), then the run's journal and the spill, merged. It is delivered one
batch per tick through the live path; a failure sends the delivery back to spilling, and the next retry
reads again from the cursor.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..intake.record import Record
from ..notices import logger
from .recovery import LIVE, RECOVERING

if TYPE_CHECKING:
    from .engine import Delivery

MAX_BATCH = 1000


class Backlog:
    """The backlog of one :class:`~.engine.Delivery`, read batch by batch by its worker."""

    def __init__(self, delivery: Delivery) -> None:
        self.delivery = delivery

    def records(self) -> Iterator[Record]:
        """What a reopened run missed past the cursor, less what the backend's storage already holds
        (see ``CatchUp.missed``)."""
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
        """One batch of what the backend owes (the catch-up, then what waited during an outage)."""
        delivery = self.delivery
        reader = delivery.spill_reader
        records = reader.read(MAX_BATCH) if reader is not None else []
        if not records and reader is not None:
            delivery.spiller.settle()  # what the run's journal wrote meanwhile is left there: read it
            records = reader.read(MAX_BATCH)
        if not records:
            if delivery.spiller.awaiting_journal():
                return  # read again once the run's journal has written them (or they are copied to the spill)
            delivery.catch_up.read_to_the_end()
            delivery.outage.back_to_live()
            return
        delivery.mode = LIVE  # deliver through the live path; a failure switches to SPILLING
        index = 0
        while index < len(records) and delivery.mode == LIVE and not delivery.abandoned:
            record = records[index]
            if record.kind == "config":
                delivery.spiller.remember_config(record)
            end = index + 1
            if record.kind == "log":
                while end < len(records) and records[end].kind == "log":
                    end += 1
            delivery.take(records[index:end])
            index = end
        if delivery.mode == LIVE and not delivery.abandoned:
            delivery.mode = RECOVERING

    def leave_the_catch_up(self) -> None:
        """The end, with the catch-up not done (the backend down, or ``finish`` gave up on it): what it still
        owes stays in the run's journal and spill past the cursor, counted as waiting; what no file of the
        run holds is copied to the spill, in ``seq`` order ahead of the live records spilled meanwhile."""
        delivery = self.delivery
        kept, elsewhere = delivery.catch_up.left(delivery.positions.cursor)
        delivery.report.spilled += kept
        first = next(elsewhere, None)
        if first is not None:
            delivery.spiller.merge_in(itertools.chain([first], elsewhere), delivery.positions.cursor)
