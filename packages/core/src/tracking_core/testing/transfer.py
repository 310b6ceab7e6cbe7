"""The round-trip matrix, in two halves every backend's cell runs (no pytest needed here).

Every source x target pair goes through the journal: source -> journal (``tracking import``) and
journal -> target (``tracking replay``). So a backend's cell proves both of its halves against one
canonical content, and together the cells cover every pair without running N x N migrations:

* **import half**: a run written with the backend's own SDK (not through this library) holding
  :data:`CANONICAL_POINTS` and :data:`CANONICAL_CONFIG`, imported, is checked with
  :func:`check_imported` (every point once, steps, values, times to the millisecond, the config);
* **replay half**: :func:`canonical_journal` writes the same content as an imported journal, the
  cell replays it into its backend with ``tracking replay --to <backend>`` and reads it back with the
  backend's own reader, checked with :func:`check_points`.

``float32`` says a backend keeps values as float32 (TensorBoard): values then match to float32.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..transfer.model import Point, SourceRun

#: Unix time of step 0; each step is 1.5 s later, with a millisecond part that a seconds-only store would lose.
T0 = 1_764_500_000.25
CANONICAL_STEPS = range(0, 60, 3)
CANONICAL_CONFIG: dict[str, Any] = {"lr": 0.001, "batch_size": 32, "optimizer": "adam"}


def canonical_time(step: int) -> float:
    return T0 + step * 1.5 + 0.007


def _canonical() -> dict[str, dict[int, float]]:
    return {
        "train/loss": {step: 2.0 / (1 + step) for step in CANONICAL_STEPS},
        "val/acc": {step: 0.5 + step / 200 for step in CANONICAL_STEPS if step % 6 == 0},
    }


#: ``{key: {step: value}}``: two series, one logged every other step.
CANONICAL_POINTS = _canonical()


def canonical_points() -> Iterator[Point]:
    for key, points in CANONICAL_POINTS.items():
        for step, value in points.items():
            yield Point(key, step, value, canonical_time(step))


def canonical_journal(logging_dir: str | Path, project: str = "canonical") -> Path:
    """A journal with the canonical content, as ``tracking import`` writes one; returns its run folder."""
    from ..transfer.writer import write_run

    run = SourceRun(
        backend="canonical",
        source_id="canonical-run",
        name="canonical",
        project=project,
        started=T0,
        ended=canonical_time(max(CANONICAL_STEPS)),
        config=dict(CANONICAL_CONFIG),
        points=list(canonical_points()),
        location="tracking_core.testing.transfer",
    )
    return write_run(run, Path(logging_dir), project=project).run_dir


def _close(got: float, want: float, float32: bool) -> bool:
    if float32:
        return math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-30)
    return got == want


def check_points(
    got: Mapping[str, Mapping[int, Any] | list[tuple[int, Any]]],
    *,
    float32: bool = False,
    times: Mapping[str, Mapping[int, float]] | None = None,
) -> None:
    """Assert ``got`` (``{key: {step: value}}`` or ``{key: [(step, value), ...]}``) is the canonical content.

    A list form must hold each point once. ``times`` (Unix seconds per key and step), when the store keeps
    them, must match to the millisecond.
    """
    for key, want in CANONICAL_POINTS.items():
        assert key in got, f"{key!r} missing; got {sorted(got)}"
        series = got[key]
        if isinstance(series, list):
            steps = [step for step, _ in series]
            assert len(steps) == len(set(steps)), f"{key}: a step stored twice: {steps}"
            series = dict(series)
        assert sorted(series) == sorted(want), f"{key}: steps {sorted(series)} != {sorted(want)}"
        for step, value in want.items():
            assert _close(float(series[step]), value, float32), f"{key}@{step}: {series[step]} != {value}"
    if times is not None:
        for key, want in CANONICAL_POINTS.items():
            for step in want:
                got_ms, want_ms = round(times[key][step] * 1000), round(canonical_time(step) * 1000)
                assert got_ms == want_ms, f"{key}@{step}: time {times[key][step]} != {canonical_time(step)}"


def check_imported(run_dir: str | Path, *, float32: bool = False, config: Mapping[str, Any] | None = None) -> None:
    """Assert an imported run folder holds the canonical points (each once, with their times) and config."""
    from ..store.journal import JournalSummary, read_journal

    summary = JournalSummary(run_dir)
    times: dict[str, dict[int, float]] = {}
    for record in read_journal(summary.path):
        if record["type"] == "metrics" and "time" in record:
            for key in record["values"]:
                times.setdefault(key, {})[record["step"]] = record["time"]
    check_points({key: summary.metrics[key] for key in CANONICAL_POINTS}, float32=float32, times=times)  # type: ignore[misc]
    want = dict(CANONICAL_CONFIG if config is None else config)
    assert {key: summary.config.get(key) for key in want} == want, summary.config
