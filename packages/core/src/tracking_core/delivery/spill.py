"""Spill journals: where a backend's records wait while the backend cannot take them and the run's journal
does not hold them (:mod:`.run_journal`), and the reader of what a backend owes after an outage.

``spill-<backend>.jsonl`` in the run folder is a journal (same format as ``journal.jsonl``) that
only its backend's delivery appends to (its worker, or the caller that found a stuck backend's
queue full, holding the delivery's handover lock). Records keep their ``seq``, so whoever delivers them later —
the worker itself once the backend answers again, a resumed run, or ``tracking replay`` — can skip
what the backend already holds (``run.json`` keeps that cursor) and deliver the rest exactly once.
"""

from __future__ import annotations

import heapq
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, cast

from ..backends.jsonl import JsonlTracker
from ..intake.record import Record, deliver
from ..store.journal import JournalWriter, is_for, record_from_entry

_DIGITS = re.compile(rb"\d+")


def line_seq(line: bytes) -> int | None:
    """The ``seq`` of one journal line without parsing it. A line's own ``seq`` follows its values (a key named
    ``seq`` among them comes first), so the last one is the line's."""
    at = line.rfind(b'"seq":')
    digits = _DIGITS.match(line, at + 6) if at >= 0 else None
    return int(digits.group()) if digits is not None else None


def numbered(path: Path) -> list[int]:
    """The ``seq`` of every record in a journal (one pass over the bytes, no JSON parsing)."""
    with open(path, "rb") as handle:
        return [seq for line in handle if (seq := line_seq(line)) is not None]


#: the suffix of the file a spill is merged into before it replaces the spill (``SpillJournal.merge_in``)
MERGING = ".merging"


def spill_name(backend: str) -> str:
    return f"spill-{backend}.jsonl"


class SpillJournal:
    """One backend's spill journal, created on the first record that needs it."""

    def __init__(self, factory: Callable[[], JsonlTracker]) -> None:
        self._factory = factory
        self._journal: JsonlTracker | None = None
        #: highest ``seq`` appended: records up to it are already in the file (no second copy)
        self.last_seq = -1
        #: lowest ``seq`` this process appended (records below it were spilled by an earlier process)
        self.first_seq = float("inf")
        self.path: Path | None = None

    def holds(self, record: Record) -> bool:
        return record.seq is not None and record.seq <= self.last_seq

    def append(self, record: Record, config: Record | None = None) -> None:
        """Write ``record``, after ``config`` when the spill starts with it (raises when it cannot write)."""
        if self._journal is None:
            journal = self._factory()
            journal.start()
            self._journal = journal
            self.path = Path(getattr(journal, "journal_path", ""))
            if config is not None and record.kind != "config":
                deliver(journal, config)  # a replay into another backend needs it; its seq keeps it out of recovery
        deliver(self._journal, record)
        if record.seq is not None:
            self.last_seq = record.seq
            self.first_seq = min(self.first_seq, record.seq)

    def merge_in(self, records: Iterable[Record], after: int, config: Record | None = None) -> int:
        """Spill numbered ``records`` (in ``seq`` order) into their places among what the file holds past ``after``.

        Whoever reads a spill reads it in file order and skips what the backend's cursor has passed,
        so a record appended after a higher ``seq`` would be skipped. The records a cut-short
        catch-up still owes are older than the live ones spilled while it ran: the file is rewritten
        as the merge of both (each ``seq`` once; what the cursor passed is left out), headed by the
        run's config, beside the spill and then renamed over it, so a crash leaves the old file whole.
        Returns how many records it holds now that this process had not counted as spilled.
        """
        merged = self._factory()
        final = Path(merged.journal_path)
        merged.journal_name = final.name + MERGING
        aside = Path(merged.journal_path)
        aside.unlink(missing_ok=True)  # left by a crash mid-merge: the spill itself is still whole
        self.close()
        self._journal = None
        kept = numbered_entries(final, after) if final.is_file() else iter(())
        merged.start()
        writer = cast(JournalWriter, merged.tracker)
        last, config_seq = after, None
        if config is not None:
            deliver(merged, config)  # a replay into another backend needs it; its seq keeps it out of recovery
            config_seq = config.seq
        added, counted_from = 0, self.first_seq  # what this process appended was counted then
        owed = ((record.seq, record) for record in records if record.seq is not None)
        # on equal seqs the copy already in the file comes first (merge is stable across its inputs)
        for seq, item in heapq.merge(kept, owed, key=lambda pair: pair[0]):
            if seq <= last or seq == config_seq:
                continue
            last = seq
            if isinstance(item, Record):
                deliver(merged, item)
            else:
                writer.write(cast(dict[str, Any], item))
            if isinstance(item, Record) or seq < counted_from:  # an earlier process's copy counts from now
                added += 1
            self.first_seq = min(self.first_seq, seq)
        writer.flush(durable=True)
        writer.close()
        os.replace(aside, final)
        self.last_seq = max(self.last_seq, last)
        self.path = final  # the next record appends to the merged file
        return added

    def flush(self) -> None:
        if self._journal is not None:
            self._journal.flush()

    def close(self) -> None:
        if self._journal is not None:
            try:
                self._journal.finish()
            except Exception:
                pass


class OwedReader:
    """What a backend owes, from its cursor on: the catch-up's records (``earlier``, numbered up to
    ``earlier_through``), then the records it left in the run's journal and those in its spill journal,
    merged by ``seq``, while both may still grow.

    It reads in passes: each one up to the highest ``seq`` left or spilled when it began (``through``);
    records spilled meanwhile are read by the next pass. Empty once a pass has nothing past its start.
    The journal and the spill are read only past ``floor``: below it the catch-up reads them, less what the
    backend's storage holds already (``CatchUp.missed``).
    """

    def __init__(
        self,
        journal: Callable[[], list[Path]],
        spill: Callable[[], list[Path]],
        backend: str,
        after: int,
        through: Callable[[], int],
    ) -> None:
        self._journal = journal
        self._spill = spill
        self._backend = backend
        self._through = through
        self._floor: float = -1
        self._earlier: Iterator[Record] | None = None
        self._earlier_through: float = -1
        self._pass: Iterator[Record] | None = None
        self._after: float = after
        self._bound: float = after

    def after_the_catch_up(self, floor: float, earlier: Iterator[Record] | None, through: float) -> OwedReader:
        """Read ``earlier`` (a catch-up's records, up to ``through``) first; the journal and the spill past ``floor``."""
        self._floor, self._earlier, self._earlier_through = floor, earlier, through
        return self

    def read(self, limit: int) -> list[Record]:
        """Up to ``limit`` records past the last read, in ``seq`` order; ``[]`` once nothing more is owed."""
        records: list[Record] = []
        while len(records) < limit:
            if self._pass is None:
                bound: float = self._through()
                if self._earlier is not None:  # a replay's catch-up is unbounded (``inf``)
                    bound = max(bound, self._earlier_through)
                if bound <= self._after:
                    break
                self._pass, self._bound = self._read_pass(bound), bound
            record = next(self._pass, None)
            if record is None:  # the pass is done: what it did not yield up to its bound is not this backend's
                self._pass, self._after = None, self._bound
                continue
            self._after = cast(int, record.seq)
            records.append(record)
        return records

    def _read_pass(self, bound: float) -> Iterator[Record]:
        after = max(self._after, self._floor)
        streams: list[Iterator[Record]] = []
        if self._earlier is not None:
            streams.append(self._earlier)
            self._earlier = None  # read whole by this pass (its records are below the floor)
        if after < bound:
            files = [*self._spill(), *self._journal()]
            streams.append(backlog(files, int(after), bound + 1, backend=self._backend))
        last = self._after
        for record in heapq.merge(*streams, key=lambda record: cast(int, record.seq)):
            if cast(int, record.seq) > last:  # a record both hold is read once
                last = cast(int, record.seq)
                yield record


def numbered_entries(
    path: Path, after: int, before: float = float("inf"), backend: str | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """The entries of a journal with ``after < seq < before``, as written (no media is loaded); with ``backend``,
    only those that are its to receive."""
    with open(path, "rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break  # a line still being written, or torn by a kill: the end
            seq = line_seq(line)
            if seq is None or seq <= after:
                continue  # read from a cursor deep in a long journal: a scan, not a parse of every line
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            seq = entry.get("seq") if isinstance(entry, dict) else None
            if type(seq) is int and after < seq < before and (backend is None or is_for(entry, backend)):
                yield seq, entry


def _numbered_records(path: Path, after: int, before: float, backend: str | None) -> Iterator[tuple[int, Record]]:
    for seq, entry in numbered_entries(path, after, before, backend):  # lines of another backend's tracker skipped
        try:
            record = record_from_entry(entry, path.parent)
        except Exception:  # a media file that is gone: the rest of the journal still counts
            continue
        if record is not None:
            yield seq, record


def backlog(
    paths: Iterable[Path],
    after: int,
    before: float = float("inf"),
    records: Iterable[Record] = (),
    backend: str | None = None,
) -> Iterator[Record]:
    """The numbered records of several journals with ``after < seq < before``, in ``seq`` order, once each.

    A run's journal and a backend's spill journal may both hold a record; each journal is already
    in ``seq`` order, so a merge gives every record once and in the order it was logged. ``records``
    (in ``seq`` order) joins the merge: what a dead delivery process may not have delivered. With
    ``backend``, lines logged on another backend's own tracker are left out.
    """
    streams = [_numbered_records(path, after, before, backend) for path in paths if path.is_file()]
    streams.append((record.seq, record) for record in records if record.seq is not None and after < record.seq < before)
    last = after
    for seq, record in heapq.merge(*streams, key=lambda item: item[0]):
        if seq > last:
            last = seq
            yield record
