"""Where a backend's records wait while it cannot take them: left in the run's journal when it holds them
already, else written to the backend's spill journal (the run's config at its head, each record once, in order).

The worker thread and (through ``spill_over`` / ``abandon``) another thread both write here, so every
use of the journal goes through :attr:`Spiller.lock`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..intake.config import merge_config
from ..intake.record import SIDE_KINDS, Record
from ..notices import warn_once
from ..report import BackendReport
from .spill import SpillJournal

if TYPE_CHECKING:
    from .run_journal import RunJournal


#: how long, and how many, records may wait in memory for the run's journal to write them before they are
#: copied to the spill instead (a journal that is down, or far behind)
JOURNAL_WAIT_SECONDS = 2.0
JOURNAL_WAIT_RECORDS = 10_000
#: how often a recovery that has read all but what the run's journal is about to write looks again
JOURNAL_POLL_SECONDS = 0.005


class Spiller:
    def __init__(
        self,
        journal: SpillJournal,
        name: str,
        report: BackendReport,
        side_kinds: frozenset[str] = frozenset(),
        run_journal: RunJournal | None = None,
    ) -> None:
        self.journal = journal
        #: the run's journal, where a record it already holds is left instead of copied (``None``: every record
        #: is copied, as for the journal's own delivery)
        self.run_journal = run_journal
        #: records the run's journal has been given but not written yet (it writes them within milliseconds):
        #: left there once it has, copied to the spill if it has not within ``JOURNAL_WAIT_SECONDS``
        self.for_the_journal: list[Record] = []
        self._waiting_since = 0.0
        #: the lowest ``seq`` that waited in this process; the highest left in the run's journal; the highest
        #: offered (left, copied, or still waiting for the journal)
        self.first_seq: float = float("inf")
        self.left_through = -1
        self.offered_through = -1
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
        """``record`` waits, unless it waits already or the backend (its ``cursor``) holds it: in the run's
        journal when the journal has it (nothing is copied), else in the spill."""
        if record.kind in SIDE_KINDS:  # the run folder keeps samples and the context: counted, not spilled
            if record.kind in self.side_kinds:
                self.report.count_side(record.kind, stored=False)
            return
        with self.lock:
            seq = record.seq
            if seq is not None and seq <= max(cursor, self.offered_through, self.journal.last_seq):
                return  # already waiting, or already held by the backend
            if seq is None or self.run_journal is None or not self.run_journal.attached:
                self._copy([record])
                return
            if not self.for_the_journal:
                self._waiting_since = time.monotonic()
            self.for_the_journal.append(record)
            self.offered_through, self.first_seq = seq, min(self.first_seq, seq)
            self.report.spilled += 1
            self._settle()

    def settle(self) -> None:
        """Leave in the run's journal what it has written meanwhile; copy to the spill what it has not written
        for too long."""
        with self.lock:
            self._settle()

    def awaiting_journal(self) -> bool:
        """Whether some records still wait for the run's journal to write them."""
        return bool(self.for_the_journal)

    def _settle(self, give_up: bool = False) -> None:
        waiting, run_journal = self.for_the_journal, self.run_journal
        if not waiting or run_journal is None:
            return
        held = 0
        while held < len(waiting) and run_journal.holds(waiting[held].seq):
            held += 1  # the journal writes in seq order: what it holds is a prefix
        if held:
            self.left_through = cast(int, waiting[held - 1].seq)
            del waiting[:held]
            self._waiting_since = time.monotonic()
        too_long = time.monotonic() - self._waiting_since > JOURNAL_WAIT_SECONDS
        if waiting and (give_up or too_long or len(waiting) > JOURNAL_WAIT_RECORDS):
            copied, self.for_the_journal = waiting, []
            self.report.spilled -= len(copied)  # counted again as they are copied
            self._copy(copied)

    def _copy(self, records: list[Record]) -> None:
        for record in records:
            try:
                self.journal.append(record, config=self.config)
            except Exception as error:
                self.report.dropped += 1
                warn_once(
                    self.name, "*", f"could not write the spill journal ({error!r}); a record was lost", reason="spill"
                )
                continue
            if record.seq is not None:
                self.offered_through = max(self.offered_through, record.seq)
                self.first_seq = min(self.first_seq, record.seq)
            self.report.spilled += 1
            self.report.spill_path = str(self.journal.path)

    def merge_in(self, records: Iterable[Record], cursor: int) -> None:
        """Records owed from before the live ones already spilled (what a catch-up cut short owes that no file
        of the run holds), merged in by ``seq``."""
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
            self.first_seq = min(self.first_seq, self.journal.first_seq)
            self.offered_through = max(self.offered_through, self.journal.last_seq)

    def last_seq(self) -> int:
        """The highest ``seq`` waiting durably for the backend: in the run's journal or in the spill (not the
        records the journal has yet to write)."""
        with self.lock:
            return max(self.journal.last_seq, self.left_through)

    def waited(self, seq: int | None) -> bool:
        """Whether this process counted the record numbered ``seq`` as waiting."""
        return seq is not None and self.first_seq <= seq <= self.offered_through

    def journal_files(self) -> list[Path]:
        """The run's journal, where the records left there wait."""
        return self.run_journal.files() if self.run_journal is not None else []

    def spill_files(self) -> list[Path]:
        """The spill journal, once written."""
        return [self.journal.path] if self.journal.path is not None else []

    def flush(self) -> None:
        with self.lock:
            self._settle()
            self.journal.flush()

    def close(self) -> None:
        """The end: what the run's journal has written by now is left there, the rest copied to the spill."""
        with self.lock:
            self._settle(give_up=True)
            self.journal.close()


def in_order(records: list[Record]) -> list[Record]:
    """``records`` once each, numbered ones in ``seq`` order, then the unnumbered ones."""
    owed = list({id(record): record for record in records}.values())
    numbered = sorted((record for record in owed if record.seq is not None), key=lambda record: cast(int, record.seq))
    return [*numbered, *(record for record in owed if record.seq is None)]
