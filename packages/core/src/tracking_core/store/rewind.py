"""Rewinding a resumed run to a checkpoint: ``init(..., resume=True, resume_step=N)``.

A job restarted from a checkpoint at step ``N`` logs steps ``N, N+1, ...`` again; what the earlier
process logged from ``N`` on belongs to a timeline the checkpoint abandoned. A rewind is recorded
once, as ``RewindPoint(step=N, last_seq=S)``: every record numbered up to ``S`` (the earlier
processes' records) whose step is ``N`` or later is *superseded*. The point is kept in ``run.json``
(``rewinds``, a list: a run may be rewound more than once) and, when the journal is in ``log_with``,
as a journal record ``{"type": "rewind", "step": N, "last_seq": S, "time": ...}`` (older readers skip
it as an unknown type).

What reads the run honours it: ``tracking show`` and ``JournalSummary`` (each step once),
``tracking replay`` and a resumed backend's catch-up (superseded records are never delivered), and
the step a later resume carries on after. Each backend supersedes what it already stored as its SDK
allows, in :meth:`~tracking_core.GeneralTracker.rewind` (TensorBoard purges the orphaned steps,
others store a marker, ``tracking_core.contract.tracker.store_marker``); the finish report says what it did.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .journal import tail_entries


class RewindPoint(NamedTuple):
    """The run went back to ``step``: records numbered up to ``last_seq`` at ``step`` or later are superseded."""

    step: int
    last_seq: int
    time: float = 0.0

    def supersedes(self, step: Any, seq: Any) -> bool:
        return type(step) is int and step >= self.step and type(seq) is int and seq <= self.last_seq

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "last_seq": self.last_seq, "time": self.time}

    @classmethod
    def from_json(cls, data: Any) -> RewindPoint | None:
        """A point from ``run.json`` or a journal record; ``None`` for anything malformed."""
        if not isinstance(data, dict):
            return None
        step, last_seq = data.get("step"), data.get("last_seq")
        if type(step) is not int or type(last_seq) is not int:
            return None
        when = data.get("time")
        return cls(step, last_seq, float(when) if isinstance(when, (int, float)) else 0.0)


def new_point(step: int, last_seq: int) -> RewindPoint:
    return RewindPoint(step, last_seq, time.time())


def points_of(data: Iterable[Any] | None) -> tuple[RewindPoint, ...]:
    """The well-formed points of a ``run.json`` ``rewinds`` list."""
    return tuple(point for item in data or () if (point := RewindPoint.from_json(item)) is not None)


def superseded(step: Any, seq: Any, points: Sequence[RewindPoint]) -> bool:
    """Whether a record at ``step`` numbered ``seq`` belongs to a timeline a rewind abandoned."""
    return any(point.supersedes(step, seq) for point in points)


def journal_points(entries: Iterable[dict[str, Any]]) -> tuple[RewindPoint, ...]:
    """The rewinds a journal records."""
    return tuple(
        point
        for entry in entries
        if entry.get("type") == "rewind" and (point := RewindPoint.from_json(entry)) is not None
    )


def current_entries(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A journal's entries without the ones a rewind superseded, and without the rewind records."""
    points = journal_points(entries)
    if not points:
        return list(entries)
    return [
        entry
        for entry in entries
        if entry.get("type") != "rewind" and not superseded(entry.get("step"), entry.get("seq"), points)
    ]


def without_superseded(records: Iterator[Any], points: Sequence[RewindPoint]) -> Iterator[Any]:
    """Records (anything with ``step`` and ``seq``) a rewind did not supersede, in order."""
    if not points:
        return records
    return (record for record in records if not superseded(record.step, record.seq, points))


def due(context: Any) -> tuple[RewindPoint | None, tuple[RewindPoint, ...]]:
    """For a tracker's ``run_context``: the rewind to apply (only to a run reopened from an earlier
    process: a new backend run holds nothing to supersede) and every rewind whose records are skipped."""
    if context is None:
        return None, ()
    point = context.rewind if context.resume is not None else None
    return point, tuple(context.superseded)


def apply(tracker: Any, point: RewindPoint) -> str:
    """``tracker.rewind(step)``; its note for the finish report, or what went wrong (never raises)."""
    try:
        note = tracker.rewind(point.step)
    except Exception as error:
        from ..notices import logger

        logger.warning("backend %r: rewind to step %d failed: %r", tracker.name, point.step, error)
        return (
            f"rewind to step {point.step} failed ({type(error).__name__}: {error}); "
            f"the earlier process's points from step {point.step} on stay"
        )
    return str(note) if note else f"rewound to step {point.step}"


def cap_step(seq: int, step: int, points: Sequence[RewindPoint]) -> int:
    """A position (last ``seq`` and ``step`` something held) as it stands after the run's rewinds: a
    position reached before a rewind counts up to the step before the rewind point only."""
    for point in points:
        if seq <= point.last_seq:
            step = min(step, point.step - 1)
    return step


def last_step(
    manifest: Any, journals: Iterable[Path], cursor_files: Iterable[Path], points: Sequence[RewindPoint]
) -> int:
    """The step a rewound run stopped at: the furthest step of a record logged since the last rewind
    (the journals' tails, the backends' cursor files), or the step before it."""
    from .cursor import NOWHERE, CursorFile

    latest = points[-1]
    step = max(latest.step - 1, int(manifest.last_step))  # reset at the rewind, then moved on by this timeline
    for entry in manifest.progress.values():
        step = max(step, cap_step(int(entry.get("seq", -1)), int(entry.get("step", -1)), points))
    for path in cursor_files:
        _, _, handed_seq, handed_step = CursorFile.read(path) or NOWHERE
        step = max(step, cap_step(handed_seq, handed_step, points))
    for path in journals:
        step = max(step, _tail_step_after(path, latest.last_seq))
    return step


def _tail_step_after(path: Path, last_seq: int) -> int:
    """The furthest metric step among the last records of a journal numbered after ``last_seq``."""
    steps = [
        entry["step"]
        for entry in tail_entries(path)
        if entry.get("type") == "metrics"
        and type(entry.get("seq")) is int
        and entry["seq"] > last_seq
        and type(entry.get("step")) is int
    ]
    return max(steps, default=-1)
