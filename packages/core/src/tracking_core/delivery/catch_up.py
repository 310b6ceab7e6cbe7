"""Catch-up: what a backend missed before this process, delivered before anything else.

A resumed run's backend missed the journal's records past its cursor (and, if it spilled, its
spill's); a replay delivers a journal into a fresh run; a take-over after the delivery process died
delivers what that process may not have stored. :class:`CatchUp` holds that backlog, the batch being
delivered from it, and the records a failure gave back meanwhile, which must reach the spill in
``seq`` order ahead of the live records spilled while it ran.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import cast

from ..intake.record import Record
from .spill import backlog


class CatchUp:
    def __init__(
        self, backend: str, paths: Iterable[Path], records: Iterable[Record], before: float, earlier_handed: int
    ) -> None:
        #: the backend it delivers to: lines logged on another backend's own tracker are not its
        self.backend = backend
        self.paths = list(paths)
        self.records = list(records)
        #: records numbered below this are the catch-up's; from it on they are live
        self.before = before
        #: the furthest record the earlier process handed to the backend (its cursor file says so)
        self.earlier_handed = earlier_handed
        #: the records still to deliver, read lazily; ``None`` when there is no catch-up (any more)
        self.backlog: Iterator[Record] | None = None
        #: the catch-up batch being delivered and where its untaken part starts (for ``abandon``)
        self.batch: list[Record] = []
        self.next = 0
        #: catch-up records a failure gave back while the catch-up runs: spilled in order when it stops
        self.owed: list[Record] = []

    def wanted(self) -> bool:
        return bool(self.paths or self.records)

    def running(self) -> bool:
        return self.backlog is not None

    def owns(self, record: Record) -> bool:
        """A record of the catch-up (not a live one) while the catch-up runs."""
        return self.backlog is not None and record.seq is not None and record.seq < self.before

    def untaken(self) -> list[Record]:
        """The part of the catch-up batch not handed to the backend yet; the batch is done with."""
        rest = self.batch[self.next :]
        self.batch, self.next = [], 0
        return rest

    def stop(self, untaken: list[Record]) -> Iterator[Record]:
        """The catch-up ends early: everything it still owes, in ``seq`` order (for the spill)."""
        owed = sorted(
            (record for record in [*self.owed, *untaken] if record.seq is not None),
            key=lambda record: cast(int, record.seq),
        )
        rest, self.backlog = self.backlog or iter(()), None
        self.owed = []
        return heapq.merge(owed, rest, key=lambda record: cast(int, record.seq))

    def missed(
        self,
        cursor: int,
        buffers: bool,
        last_stored_steps: Callable[[], dict[str, int] | None],
        sanitize: Callable[[str], str],
    ) -> Iterator[Record]:
        """What a reopened run missed: the backlog past the cursor, less what the backend already holds.

        A backend that stores on return holds exactly what its cursor says, unless the process died
        inside a call (the handed position is written just before each call): the records of that call
        may or may not be stored. One that buffers (W&B, Comet, ClearML, SwanLab, Trackio) may have
        written more, or less, of what it took before the process died. In both cases its own storage
        says how far it got, key by key (a writer may store a batch step by step, or key by key, as
        DVCLive's files are written), and only the points past the last step it holds of their key are
        delivered again. When it cannot say, records it took are not delivered again (at worst lost,
        never stored twice).
        """
        records = backlog(self.paths, cursor, self.before, self.records, self.backend)
        handed = self.earlier_handed
        if not buffers and handed <= cursor:
            return records  # no call was cut short: the backend holds exactly what its cursor says
        stored = last_stored_steps()
        if stored is None:
            return (record for record in records if record.seq is None or record.seq > handed)
        last = max(stored.values(), default=-1)

        def missing(record: Record) -> Record | None:
            if record.step is None or record.step > last:
                return record
            if not buffers and record.seq is not None and record.seq > handed:
                return record  # never handed over: a backend that stores on return cannot hold it
            if record.kind == "log":
                # The process died while the SDK was writing: of each key, deliver the points past the last
                # step its storage holds.
                rest = {
                    key: value
                    for key, value in record.payload.items()
                    if record.step > max(stored.get(key, -1), stored.get(sanitize(key), -1))
                }
                return record._replace(payload=rest) if rest else None
            return None

        return (kept for record in records if (kept := missing(record)) is not None)
