"""A run's system samples as the views (``show``, ``compare``, ``export``) show them: apart from its metrics.

The sampler's readings (``system/cpu.percent``, ``system/memory.used_gb``, ...) are not the user's
series: they are taken on a clock, not at the training's steps. A run keeps them in
``<run_dir>/system.jsonl``, one ``{"index": i, "time": unix_seconds, "values": {...}}`` a line; a
journal written before that file existed holds them as ``system/*`` metric records, which count as
samples too (their step was only the step current when the sample was taken). The views leave them
out unless asked (``--system``) and then show them on their own axis: the sample's index, or the
seconds since the run started, never the user's step.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..context.samples import SAMPLES_NAME, read_samples

__all__ = [
    "SAMPLES_NAME",
    "SYSTEM_PREFIX",
    "RunSamples",
    "count_file_samples",
    "is_system",
    "load_samples",
    "read_samples",
    "run_started",
]

SYSTEM_PREFIX = "system/"


def is_system(key: str) -> bool:
    """Whether ``key`` names a system sample's value rather than a series the user logged."""
    return key.startswith(SYSTEM_PREFIX)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass
class RunSamples:
    """One run's samples, per key: ``(index, time, value)`` in sampling order.

    ``started`` is where the elapsed-time axis begins (the run's start from ``run.json``, or its first
    sample's time where that is earlier: an imported run's folder may be younger than its samples);
    ``count`` is how many samples there are, whatever their keys.
    """

    started: float | None = None
    count: int = 0
    series: dict[str, list[tuple[int, float | None, float]]] = field(default_factory=dict)

    def add(self, index: int, moment: Any, values: dict[str, Any]) -> None:
        moment = float(moment) if _number(moment) else None
        kept = False
        for key, value in values.items():
            if _number(value):
                self.series.setdefault(key, []).append((index, moment, float(value)))
                kept = True
        self.count += kept

    @property
    def timed(self) -> bool:
        """Every sample has a time, so the elapsed-seconds axis can be drawn."""
        return all(moment is not None for points in self.series.values() for _, moment, _ in points)

    def axis(self) -> str:
        return "seconds since the run started" if self.timed else "sample"

    def points(self, key: str) -> list[tuple[float, float]]:
        """``(x, value)`` of ``key`` on this run's sample axis (see :meth:`axis`)."""
        points = self.series.get(key, [])
        if self.timed:
            first = min(
                (moment for pts in self.series.values() for _, moment, _ in pts if moment is not None), default=0.0
            )
            origin = first if self.started is None else min(self.started, first)  # no sample before the start
            return [(float(moment) - origin, value) for _, moment, value in points if moment is not None]
        return [(float(index), value) for index, _, value in points]

    def rows(self) -> list[tuple[int, float | None, str, float]]:
        """``(index, time, key, value)`` of every sampled value, by sample, in the order keys came."""
        rows = [(index, moment, key, value) for key, points in self.series.items() for index, moment, value in points]
        order = {key: position for position, key in enumerate(self.series)}
        return sorted(rows, key=lambda row: (row[0], order[row[2]]))

    def stats(self, key: str) -> dict[str, Any] | None:
        """Samples, last, min, mean and max of ``key``; there is no "best" for a machine's reading."""
        points = self.series.get(key)
        if not points:
            return None
        finite = [value for _, _, value in points if math.isfinite(value)]
        times = [moment for _, moment, _ in points if moment is not None]
        return {
            "samples": len(points),
            "last": points[-1][2],
            "min": min(finite) if finite else None,
            "mean": sum(finite) / len(finite) if finite else None,
            "max": max(finite) if finite else None,
            "first_time": times[0] if times else None,
            "last_time": times[-1] if times else None,
        }


def run_started(run_dir: str | os.PathLike[str]) -> float | None:
    """When the run started, from its ``run.json`` (``None`` for a bare journal)."""
    from ..store.manifest import MANIFEST_NAME

    try:
        started = json.loads((Path(run_dir) / MANIFEST_NAME).read_text(encoding="utf-8")).get("started")
    except (OSError, ValueError, AttributeError):
        return None
    return float(started) if _number(started) else None


def load_samples(
    run_dir: str | os.PathLike[str],
    journal_samples: Iterable[tuple[Any, dict[str, Any]]] = (),
    started: float | None = None,
) -> RunSamples:
    """The samples of ``run_dir/system.jsonl``, then ``journal_samples``: ``(time, {system key: value})``
    per journal record that held ``system/*`` values, numbered after the file's own."""
    run = RunSamples(started=started)
    last = -1
    for sample in read_samples(run_dir):
        given = sample.get("index")
        index = int(given) if isinstance(given, (int, float)) and not isinstance(given, bool) else last + 1
        values = sample.get("values")
        run.add(index, sample.get("time"), values if isinstance(values, dict) else {})
        last = max(last, index)
    for moment, values in journal_samples:
        last += 1
        run.add(last, moment, values)
    return run


def count_file_samples(run_dir: str | os.PathLike[str]) -> int:
    """How many samples ``system.jsonl`` holds, without decoding them (for the "not shown" line)."""
    try:
        with open(Path(run_dir) / SAMPLES_NAME, "rb") as handle:
            return sum(1 for line in handle if line.strip())
    except (FileNotFoundError, NotADirectoryError):
        return 0
