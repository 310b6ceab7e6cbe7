"""The end of one backend's delivery: ``finish`` (one last retry, the backlog, the SDK's finish), or
``abandon`` when it did not finish in time (everything it has not stored goes to its spill)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..intake.record import Record
from .recovery import LIVE, RECOVERING, SPILLING, enter
from .spiller import JOURNAL_POLL_SECONDS

if TYPE_CHECKING:
    from .engine import Delivery


class Ending:
    """How one :class:`~.engine.Delivery` ends, from its worker (``finish``) or another thread (``abandon``)."""

    def __init__(self, delivery: Delivery) -> None:
        self.delivery = delivery

    def finish(self) -> None:
        if self.delivery.mode == SPILLING and self.delivery.outage.retried:
            self.delivery.outage.retry_backend()  # one last try before closing: the backend may be back
        while self.delivery.mode == RECOVERING and not self.delivery.abandoned:
            self.delivery.backlog.deliver_batch()
            if self.delivery.spiller.awaiting_journal():
                time.sleep(JOURNAL_POLL_SECONDS)  # the run's journal is about to write the last of them
        if self.delivery.abandoned:
            return
        if self.delivery.mode == LIVE and self.delivery.started and self.delivery.rewind_due is not None:
            self.delivery.apply_rewind()  # nothing was logged after the rewind: it still says where the run went back to
        if self.delivery.mode == LIVE and self.delivery.started and self.delivery.flush_before_finish:
            self.delivery.flush()
        if self.delivery.mode == LIVE and self.delivery.started:
            _, error = self.delivery.live.attempt(self.delivery.tracker.finish)
            if error is None:
                moved, self.delivery.unconfirmed = self.delivery.unconfirmed, []
                self.delivery.confirm(moved)
                enter(self.delivery.report, "finished")
            else:
                self.delivery.outage.failed(error, "finish", [])
                enter(self.delivery.report, "finish_failed")
                moved, self.delivery.unconfirmed = self.delivery.unconfirmed, []
                for record in moved:
                    self.delivery.spill_record(record)
        elif self.delivery.started:
            enter(self.delivery.report, "quarantined")
        self.collect_notes()
        self.close_spill()
        self.delivery.publish_progress()
        self.delivery.finished = True

    def collect_notes(self) -> None:
        try:
            own = [str(note) for note in self.delivery.tracker.report_notes()]
        except Exception as error:
            own = [f"report_notes() failed: {error!r}"]
        self.delivery.report.notes.extend(own)

    def abandon(self, pending: list[Record]) -> None:
        """The backend did not finish in time: everything it has not stored goes to the spill."""
        self.delivery.abandoned = True
        enter(self.delivery.report, "timed_out")
        held = self.delivery.held[self.delivery.held_next :]
        # _spill_in_order takes each once
        owed = [*self.delivery.unconfirmed, *self.delivery.in_flight, *held, *pending]
        self.delivery.unconfirmed = []
        for record in owed:
            if record.kind == "flush":
                record.payload.set()  # nobody waits for a flush that cannot come
        self.delivery.spill_in_order(owed)
        self.collect_notes()
        # a call still in the SDK may yet store its records: the cursor file stays open to say so
        self.close_spill(keep_cursor=bool(self.delivery.in_flight))
        self.delivery.publish_progress()

    def close_spill(self, keep_cursor: bool = False) -> None:
        self.delivery.backlog.leave_the_catch_up()
        self.delivery.spiller.close()
        if not keep_cursor:
            self.delivery.positions.close()
