"""How far one backend got, and the cursor file that keeps it across a kill.

Two positions, each a ``seq`` and a metric step: ``cursor`` / ``durable_step``, what the backend holds
durably; ``handed_seq`` / ``handed_step``, the furthest record it took (a call returned; an SDK that
buffers may or may not have written it yet). The cursor file (:mod:`tracking_core.store.cursor`) is
rewritten with both just before each call into the SDK and after each confirmation.
"""

from __future__ import annotations

from collections.abc import Callable

from ..intake.record import Record
from ..store.cursor import CursorFile


class Positions:
    def __init__(
        self, cursor: int, cursor_step: int, cursor_file: CursorFile | None, handed: tuple[int, int] = (-1, -1)
    ) -> None:
        self.cursor = cursor
        self.durable_step = cursor_step
        #: the furthest record the backend took (a call returned), confirmed by a flush or not yet; an earlier
        #: process's carries over until the cursor passes it: a catch-up that found its records in the
        #: backend's storage delivers none of them, and the next process must ask the storage again
        self.handed_seq, self.handed_step = max((cursor, cursor_step), handed)
        self.file = cursor_file
        #: called after ``cursor`` moved (the run's journal wakes the backends waiting for it: ``RunJournal``)
        self.on_durable: Callable[[], None] | None = None

    def unseen(self, records: list[Record]) -> list[Record]:
        cursor = self.cursor
        return [record for record in records if record.seq is None or record.seq > cursor]

    def hand_over(self, records: list[Record]) -> None:
        """Just before ``records`` go into the SDK: should the process die inside that call, after the SDK
        stored them, the cursor file already says the backend may hold them, and a resumed run (or a
        replay) asks the backend's storage instead of delivering them twice. A call that fails puts the
        file back (``Delivery._failed``)."""
        if self.file is not None:
            seq, step = highest(records, self.handed_seq, self.handed_step)
            if seq > self.handed_seq:
                try:
                    self.file.write(self.cursor, self.durable_step, seq, step)
                except OSError:
                    pass

    def advance_handed(self, records: list[Record]) -> None:
        """What the backend may hold from now on, even before it confirms."""
        self.handed_seq, self.handed_step = highest(records, self.handed_seq, self.handed_step)

    def advance_durable(self, records: list[Record]) -> None:
        """What the backend holds where a dead training process cannot lose it."""
        self.cursor, self.durable_step = highest(records, self.cursor, self.durable_step)
        if self.on_durable is not None:
            self.on_durable()

    def write(self) -> None:
        if self.file is not None:
            try:
                self.file.write(self.cursor, self.durable_step, self.handed_seq, self.handed_step)
            except OSError:
                pass  # run.json still gets the progress at the next flush

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


def highest(records: list[Record], seq: int, step: int) -> tuple[int, int]:
    """The highest record number and metric step among ``records``, and ``seq`` / ``step`` themselves."""
    for record in records:
        if record.seq is not None and record.seq > seq:
            seq = record.seq
        if record.kind == "log" and record.step is not None and record.step > step:
            step = record.step
    return seq, step
