"""Spill journals: where a backend's records wait while the backend cannot take them.

``spill-<backend>.jsonl`` in the run folder is a journal (same format as ``journal.jsonl``) that
only its backend's worker appends to. Records keep their ``seq``, so whoever delivers them later —
the worker itself once the backend answers again, a resumed run, or ``tracking replay`` — can skip
what the backend already holds (``run.json`` keeps that cursor) and deliver the rest exactly once.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from .record import Record, deliver, record_from_entry
from .tracker import GeneralTracker

_SEQ = re.compile(rb'"seq":(\d+)')


def numbered(path: Path) -> list[int]:
    """The ``seq`` of every record in a journal (one pass over the bytes, no JSON parsing)."""
    with open(path, "rb") as handle:
        return [int(match.group(1)) for line in handle if (match := _SEQ.search(line))]


def spill_name(backend: str) -> str:
    return f"spill-{backend}.jsonl"


class SpillJournal:
    """One backend's spill journal, created on the first record that needs it."""

    def __init__(self, factory: Callable[[], GeneralTracker]) -> None:
        self._factory = factory
        self._journal: GeneralTracker | None = None
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

    def flush(self) -> None:
        if self._journal is not None:
            self._journal.flush()

    def close(self) -> None:
        if self._journal is not None:
            try:
                self._journal.finish()
            except Exception:
                pass


class SpillReader:
    """Reads a spill journal from where it left off, while its worker may still append to it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0

    def read(self, limit: int) -> list[Record]:
        """Up to ``limit`` whole records past the last read; ``[]`` at the current end of the file."""
        records: list[Record] = []
        with open(self.path, "rb") as handle:
            handle.seek(self._offset)
            while len(records) < limit:
                line = handle.readline()
                if not line.endswith(b"\n"):
                    break  # end of file, or a line still being written
                self._offset += len(line)
                record = _parse(line, self.path.parent)
                if record is not None:
                    records.append(record)
        return records


def _parse(line: bytes, base: Path) -> Record | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    if not isinstance(entry, dict):
        return None
    try:
        return record_from_entry(entry, base)
    except Exception:  # a media file that is gone: the rest of the journal still counts
        return None


def _numbered_records(path: Path, after: int, before: float) -> Iterator[tuple[int, Record]]:
    with open(path, "rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break
            if b'"seq"' not in line:
                continue
            record = _parse(line, path.parent)
            if record is not None and record.seq is not None and after < record.seq < before:
                yield record.seq, record


def backlog(
    paths: Iterable[Path], after: int, before: float = float("inf"), records: Iterable[Record] = ()
) -> Iterator[Record]:
    """The numbered records of several journals with ``after < seq < before``, in ``seq`` order, once each.

    A run's journal and a backend's spill journal may both hold a record; each journal is already
    in ``seq`` order, so a merge gives every record once and in the order it was logged. ``records``
    (in ``seq`` order) joins the merge: what a dead delivery process may not have delivered.
    """
    streams = [_numbered_records(path, after, before) for path in paths if path.is_file()]
    streams.append((record.seq, record) for record in records if record.seq is not None and after < record.seq < before)
    last = after
    for seq, record in heapq.merge(*streams, key=lambda item: item[0]):
        if seq > last:
            last = seq
            yield record


def journal_tail(path: Path, size: int = 1 << 18) -> tuple[int, int]:
    """``(last seq, last step)`` among the last records of a journal; ``(-1, -1)`` when it has none."""
    last_seq = last_step = -1
    try:
        with open(path, "rb") as handle:
            end = handle.seek(0, 2)
            handle.seek(max(0, end - size))
            lines = handle.read().split(b"\n")[1 if end > size else 0 : -1]
    except OSError:
        return last_seq, last_step
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("seq"), int):
            last_seq = max(last_seq, entry["seq"])
        if entry.get("type") == "metrics" and isinstance(entry.get("step"), int):
            last_step = max(last_step, entry["step"])
    return last_seq, last_step
