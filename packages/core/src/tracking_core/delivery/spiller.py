"""Writing one backend's spill journal: the run's config at its head, each record once, in order.

The worker thread and (through ``spill_over`` / ``abandon``) another thread both write here, so every
use of the journal goes through :attr:`Spiller.lock`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, cast

from ..intake.config import merge_config
from ..intake.record import SIDE_KINDS, Record
from ..notices import warn_once
from ..report import BackendReport
from .spill import SpillJournal


class Spiller:
    def __init__(
        self, journal: SpillJournal, name: str, report: BackendReport, side_kinds: frozenset[str] = frozenset()
    ) -> None:
        self.journal = journal
        #: the side-record kinds the backend takes: one of those that ends up here is counted missed
        self.side_kinds = side_kinds
        self.lock = threading.Lock()
        self.name = name
        self.report = report
        #: the run's whole config so far, as one record: it heads the spill journal
        self.config: Any = None

    def remember_config(self, record: Record) -> None:
        """The run's whole config so far (init's, then each ``log_config``), to head a spill journal."""
        if self.config is not None and isinstance(self.config.payload, dict) and isinstance(record.payload, dict):
            record = record._replace(payload=merge_config(self.config.payload, record.payload))
        self.config = record

    def append(self, record: Record, cursor: int) -> None:
        """Spill ``record`` unless the spill or the backend (its ``cursor``) holds it already."""
        if record.kind in SIDE_KINDS:  # the run folder keeps samples and the context: counted, not spilled
            if record.kind in self.side_kinds:
                self.report.count_side(record.kind, stored=False)
            return
        with self.lock:
            if self.journal.holds(record) or (record.seq is not None and record.seq <= cursor):
                return  # already waiting in the spill, or already held by the backend
            try:
                self.journal.append(record, config=self.config)
                self.report.spilled += 1
                self.report.spill_path = str(self.journal.path)
            except Exception as error:
                self.report.dropped += 1
                warn_once(
                    self.name, "*", f"could not write the spill journal ({error!r}); a record was lost", reason="spill"
                )

    def merge_in(self, records: Iterable[Record], cursor: int) -> None:
        """Records owed from before the live ones already spilled (a catch-up cut short), merged in by ``seq``."""
        with self.lock:
            try:
                added = self.journal.merge_in(records, cursor, self.config)
            except Exception as error:
                warn_once(
                    self.name,
                    "*",
                    f"could not write the spill journal ({error!r}); records of the catch-up were lost",
                    reason="spill",
                )
                return
            self.report.spilled += added
            self.report.spill_path = str(self.journal.path)

    def last_seq(self) -> int:
        with self.lock:
            return self.journal.last_seq

    def flush(self) -> None:
        with self.lock:
            self.journal.flush()

    def close(self) -> None:
        with self.lock:
            self.journal.close()


def in_order(records: list[Record]) -> list[Record]:
    """``records`` once each, numbered ones in ``seq`` order, then the unnumbered ones."""
    owed = list({id(record): record for record in records}.values())
    numbered = sorted((record for record in owed if record.seq is not None), key=lambda record: cast(int, record.seq))
    return [*numbered, *(record for record in owed if record.seq is None)]
