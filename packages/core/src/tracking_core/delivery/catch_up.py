"""Catch-up: what a backend missed before this process, read from its cursor before anything after it.

A resumed run's backend missed the journal's records past its cursor (and, if it spilled, its spill's); a
replay delivers a journal into a fresh run; a take-over after the delivery process died delivers what that
process may not have stored. Those records are numbered below ``before`` (the first of this process); the
backend's storage may hold some of them already, so they are read again from the cursor, through
:meth:`CatchUp.missed`, every time the backend's owed records are read (``Delivery.owed_reader``), and never
spilled. At the end, what the backend still lacks of them stays where it is: in the run's own journal or
spill, past its cursor, for the next process or ``tracking replay``; only what no file of the run holds
(a take-over's records, another run's journal) is copied to the spill (:meth:`CatchUp.left`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from fnmatch import fnmatch
from pathlib import Path

from ..intake.record import Record
from ..store.journal import JOURNAL_NAME, SEGMENT_GLOB
from .spill import backlog, numbered_entries, spill_name


def kept_in(run_dir: Path | None, backend: str) -> Callable[[Path], bool]:
    """Whether a file is one ``run_dir`` keeps for ``backend``: the run's journal (and its segments) or its spill."""
    home = run_dir.resolve() if run_dir is not None else None

    def kept(path: Path) -> bool:
        name = path.name
        if name not in (JOURNAL_NAME, spill_name(backend)) and not fnmatch(name, SEGMENT_GLOB):
            return False
        return home is not None and path.parent.resolve() == home

    return kept


class CatchUp:
    def __init__(
        self,
        backend: str,
        paths: Iterable[Path],
        records: Iterable[Record],
        before: float,
        earlier_handed: int,
        kept_by_the_run: Callable[[Path], bool] = lambda path: False,
    ) -> None:
        #: the backend it delivers to: lines logged on another backend's own tracker are not its
        self.backend = backend
        self.paths = list(paths)
        self.records = list(records)
        #: records numbered below this are the catch-up's; from it on they are live
        self.before = before
        #: the furthest record the earlier process handed to the backend (its cursor file says so)
        self.earlier_handed = earlier_handed
        #: whether a file is the run's own journal or this backend's spill (what it keeps, nothing copies)
        self.kept_by_the_run = kept_by_the_run
        #: records of the catch-up that the backend's storage was found to hold: never owed again
        self.stored: set[int] = set()
        #: whether the backend took all of it: a reader read it to the end, and nothing of it failed since
        self.done = not self.wanted()

    def wanted(self) -> bool:
        return bool(self.paths or self.records)

    def owns(self, record: Record) -> bool:
        """A record of the catch-up (not a live one): read again from the cursor, never spilled."""
        return record.seq is not None and record.seq < self.before and self.wanted()

    def failed(self) -> None:
        """A record of it did not reach the backend's storage: the next reader reads it again from the cursor."""
        self.done = False

    def read_to_the_end(self) -> None:
        """A reader read all of it and the backend took it (until a record of it fails)."""
        self.done = True

    def floor(self) -> float:
        """The journal and the spill are read for live records only past this: below it the catch-up reads."""
        return self.before - 1 if self.wanted() else -1

    def owes_past(self, cursor: int) -> bool:
        """Whether records of the catch-up past ``cursor`` may still be owed (it is read with the owed records)."""
        return not self.done and cursor < self.before - 1

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
            return (record for record in records if record.seq not in self.stored)
        stored = last_stored_steps()
        if stored is None:
            return (record for record in records if record.seq is None or record.seq > handed or self._held(record))
        last = max(stored.values(), default=-1)

        def missing(record: Record) -> Record | None:
            if record.seq in self.stored:
                return None
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
                if rest:
                    return record._replace(payload=rest)
            self._held(record)
            return None

        return (kept for record in records if (kept := missing(record)) is not None)

    def _held(self, record: Record) -> bool:
        """The backend holds ``record`` (or may, and it is not delivered again): never owed again. False."""
        if record.seq is not None:
            self.stored.add(record.seq)
        return False

    def left(self, cursor: int) -> tuple[int, Iterator[Record]]:
        """At the end, what the backend still lacks of the catch-up past ``cursor``: how many records the run's
        own files keep for it (they stay there), and the records no file of the run holds (for the spill)."""
        if not self.owes_past(cursor):
            return 0, iter(())
        kept = [path for path in self.paths if self.kept_by_the_run(path)]
        held = {
            seq
            for path in kept
            if path.is_file()
            for seq, _ in numbered_entries(path, cursor, self.before, self.backend)
            if seq not in self.stored
        }
        elsewhere = [path for path in self.paths if not self.kept_by_the_run(path)]
        rest = backlog(elsewhere, cursor, self.before, self.records, self.backend)
        return len(held), (record for record in rest if record.seq not in held and record.seq not in self.stored)
