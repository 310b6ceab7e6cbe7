"""When one backend's stored records become durable: the periodic flush, a flush the backend began and is
asked about later (``begin_flush``), and the progress published after each, for ``run.json``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..contract.tracker import has_capability
from ..intake.record import Record
from ..notices import logger
from .recovery import SPILLING

if TYPE_CHECKING:
    from .engine import Delivery

#: How often a worker with nothing else to do asks whether a flush its backend began is done (seconds).
PENDING_FLUSH_POLL = 0.05


class Flushes:
    """The flush clock of one :class:`~.engine.Delivery`: it owns what is dirty, what a begun flush covers, and
    the last progress published."""

    def __init__(
        self, delivery: Delivery, interval: float, on_progress: Callable[[str, int, int], None] | None
    ) -> None:
        self.delivery = delivery
        self.interval = interval
        #: records were stored since the last flush
        self.dirty = False
        self.last = time.monotonic()
        #: a flush the backend began: whether it is done, and the last record it covers
        self.pending: tuple[Callable[[], bool], Record] | None = None
        tracker = delivery.tracker
        self._begin: Callable[[], Callable[[], bool]] | None = (
            tracker.begin_flush if delivery.confirms_at_flush and has_capability(tracker, "begin_flush") else None
        )
        self._on_progress = on_progress
        self._published: tuple[int, int] | None = None

    def due_at(self, now: float) -> float:
        """When the next flush (or the next look at a begun one) is due; infinity when none is."""
        due = self.last + self.interval if self.dirty else float("inf")
        return now + PENDING_FLUSH_POLL if self.pending is not None else due

    def tick(self, now: float) -> None:
        if self.pending is not None:
            self._settle_pending()
        if self.dirty and now - self.last >= self.interval:
            if self._begin is not None:
                self._begin_flush(self._begin)
            else:
                self.flush()

    def _begin_flush(self, begin: Callable[[], Callable[[], bool]]) -> None:
        delivery = self.delivery
        if self.pending is not None:
            return  # one at a time: what came since waits for the next
        if delivery.started and delivery.mode != SPILLING and delivery.unconfirmed:
            began: list[Callable[[], bool]] = []
            _, error = delivery.live.attempt(lambda: began.append(begin()))
            if delivery.abandoned:
                return
            if error is None:
                self.pending = (began[0], delivery.unconfirmed[-1])
            else:
                self._failed(error)
        self._flush_spill()

    def _settle_pending(self) -> None:
        """Confirm what a begun flush covers once the backend says it is durable."""
        delivery = self.delivery
        done, last = self.pending  # type: ignore[misc]
        answer: list[bool] = []
        _, error = delivery.live.attempt(lambda: answer.append(bool(done())))
        if error is None and not answer[0]:
            return
        self.pending = None
        # the records it covers lead the unconfirmed ones, unless another path settled them meanwhile
        covered = next((index for index, record in enumerate(delivery.unconfirmed) if record is last), None)
        if covered is None:
            return
        if error is None:
            moved, delivery.unconfirmed = delivery.unconfirmed[: covered + 1], delivery.unconfirmed[covered + 1 :]
            delivery.confirm(moved)
            self.publish_progress()
        else:
            self._failed(error)

    def flush(self) -> None:
        """Flush the backend (counting what it buffered as delivered) and the spill."""
        delivery = self.delivery
        if delivery.started and delivery.mode != SPILLING and (self.dirty or delivery.unconfirmed):
            _, error = delivery.live.attempt(delivery.tracker.flush)
            if delivery.abandoned:
                return
            if error is None:
                moved, delivery.unconfirmed = delivery.unconfirmed, []
                delivery.confirm(moved)
            else:
                self._failed(error)
        self.pending = None  # what it covered was confirmed (or spilled) just now
        self._flush_spill()

    def _failed(self, error: BaseException) -> None:
        """Every record the backend may still only buffer goes to the spill, as with any failure."""
        delivery = self.delivery
        moved, delivery.unconfirmed = delivery.unconfirmed, []
        delivery.outage.failed(error, "flush", moved)

    def _flush_spill(self) -> None:
        try:
            self.delivery.spiller.flush()
        except Exception as error:
            logger.warning("backend %r: flushing its spill journal failed: %r", self.delivery.name, error)
        self.dirty = False
        self.last = time.monotonic()
        self.publish_progress()

    def publish_progress(self) -> None:
        if self._on_progress is None:
            return
        positions = self.delivery.positions
        progress = (positions.cursor, positions.durable_step)
        if progress != self._published:
            self._published = progress
            try:
                self._on_progress(self.delivery.name, *progress)
            except Exception as error:  # run.json is bookkeeping: never stop delivery for it
                logger.warning("backend %r: could not record its progress: %r", self.delivery.name, error)
