"""System samples for a backend's own tests of ``log_system_metrics``, and the run that delivers them.

Every backend's test drives the same sequence -- the user's step 0, sample 0 while the user is still at
step 0, the user's steps 1-4, samples 1 and 2 -- so that a backend which puts the samples on the user's
step axis (or drops a step after a sample) fails the same way everywhere. The test then reads back with
the SDK's own reader; :func:`run_steps_and_samples` only says what was logged and what was warned.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: The sample's time of sample 0 (Unix seconds); sample ``i`` is taken at ``T0 + 10 * i``.
T0 = 1_700_000_000.0

#: Three samples of the library's sampler: CPU and memory of the process, one GPU.
SAMPLES: list[dict[str, float]] = [
    {"system/cpu.percent": 12.5, "system/memory.rss_gb": 1.25, "system/gpu.0.utilization_percent": 40.0},
    {"system/cpu.percent": 50.0, "system/memory.rss_gb": 1.5, "system/gpu.0.utilization_percent": 60.0},
    {"system/cpu.percent": 75.0, "system/memory.rss_gb": 1.75, "system/gpu.0.utilization_percent": 80.0},
]

#: What the user logged in :func:`run_steps_and_samples`: ``loss`` as ``(step, value)``.
USER_HISTORY: list[tuple[int, float]] = [(step, 1.0 / (step + 1)) for step in range(5)]


def sample_time(index: int) -> float:
    """When sample ``index`` of :data:`SAMPLES` was taken."""
    return T0 + 10 * index


def stored_samples(name: str) -> list[tuple[int, float]]:
    """``(sample index, value)`` of one ``system/...`` name, as ``read_back_system_metrics`` should return it."""
    return [(index, sample[name]) for index, sample in enumerate(SAMPLES)]


@dataclass
class SampledRun:
    """What happened while the sequence ran: Python warnings and log records at WARNING or above."""

    caught: list[warnings.WarningMessage] = field(default_factory=list)
    records: list[logging.LogRecord] = field(default_factory=list)

    def warned(self, logger: str = "", file: str = "") -> list[str]:
        """The warnings and the warning log records, as text: those of loggers named ``logger...`` and
        those raised from a file whose path has ``file`` in it (all of them by default)."""
        found = [str(w.message) for w in self.caught if file in str(w.filename).lower()]
        found += [r.getMessage() for r in self.records if r.name.startswith(logger)]
        return found


class _Collect(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.WARNING)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def run_steps_and_samples(
    tracker: Any, *, start: bool = False, after_start: Callable[[], None] | None = None, finish: bool = True
) -> SampledRun:
    """Log the user's steps 0-4 (:data:`USER_HISTORY`) and :data:`SAMPLES` at indexes 0-2 (sample 0 at
    the user's step 0, samples 1 and 2 after step 4), then ``finish()``, recording every warning.

    The tracker is started already, unless ``start``: then ``start()`` (and ``after_start``, to look at
    what it set up) run while warnings are recorded too.
    """
    run = SampledRun()
    root = logging.getLogger()
    handler = _Collect(run.records)
    level = root.level
    root.addHandler(handler)
    root.setLevel(min(level, logging.WARNING) if level else logging.WARNING)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if start:
                tracker.start()
                if after_start is not None:
                    after_start()
            (step, loss), *rest = USER_HISTORY
            tracker.log({"loss": loss}, step=step)
            tracker.log_system_metrics(SAMPLES[0], 0, sample_time(0))  # index 0 while the user is at step 0
            for step, loss in rest:
                tracker.log({"loss": loss}, step=step)
            for index in (1, 2):
                tracker.log_system_metrics(SAMPLES[index], index, sample_time(index))
            if finish:
                tracker.finish()
        run.caught.extend(caught)
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    return run
