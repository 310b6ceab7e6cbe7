"""What each mode promises about the runs a job leaves, checked against what the backends hold.

Default mode: exactly one run per backend, holding rank 0's points and no other rank's. Per-rank mode:
``world`` runs per backend, one per rank, each with exactly its own rank's points, all in one group.
Every check also lands in :data:`ROWS` (printed at the end of the session by ``conftest.py``) and in
``tracking_core.testing.reliability``'s figures (sent, delivered, lost, duplicated per rank).
"""

from __future__ import annotations

from readback import StoredRun
from tracking_core.testing.reliability import tally

ROWS: list[dict] = []


#: Backends that do not yet name and group per-rank runs as the per-rank design says (TensorBoard: rank-N
#: subfolders of the run folder; MLflow and Aim: ``<run id>-rank<N>`` with group tags). Their per-rank runs
#: are still checked for separation and completeness; only naming and grouping are waived, and a backend
#: that starts to pass must leave this set (the test fails until it does).
GROUPING_PENDING: set[str] = set()


def check(
    scenario: str, runs: dict[str, list[StoredRun]], *, world: int, steps: int, per_rank: bool, seconds: float
) -> list[str]:
    """Problems found (empty when every backend holds what the mode promises); adds the rows of the table."""
    problems = []
    waived = []
    sum_of_ranks = float(world * (world + 1) // 2)  # all_reduce of (rank + 1) over every rank
    for backend, found in runs.items():
        with_points = [run for run in found if run.points]
        expected_runs = world if per_rank else 1
        writers = sorted(rank for run in with_points for rank in run.writers)
        per_rank_points = {}
        for run in with_points:
            if len(run.writers) != 1:
                problems.append(f"{backend}: run {run.name} mixes the points of ranks {sorted(run.writers)}")
                continue
            (rank,) = run.writers
            per_rank_points[rank] = run.points
            stored = [step for step, values in run.series["rank"].items() for _ in values]
            figures = tally(scenario, f"{backend} rank{rank}", range(steps), stored)
            if figures["lost"] or figures["duplicated"] or figures["delivered"] != steps:
                problems.append(f"{backend}: rank {rank} run {run.name}: {figures}")
            reduced = run.series.get("reduced", {})
            if any(values != [sum_of_ranks] for values in reduced.values()) or len(reduced) != steps:
                problems.append(f"{backend}: run {run.name}: all_reduce values {reduced}, expected {sum_of_ranks}")
        expected_writers = list(range(world)) if per_rank else [0]
        if len(with_points) != expected_runs or writers != expected_writers:
            problems.append(
                f"{backend}: {len(with_points)} runs with points from ranks {writers}, "
                f"expected {expected_runs} from ranks {expected_writers}"
            )
        grouping = grouped(backend, with_points) if per_rank else []
        if backend in GROUPING_PENDING and per_rank:
            waived += grouping
            if not grouping:
                problems.append(f"{backend}: names and groups per-rank runs now: remove it from GROUPING_PENDING")
        else:
            problems += grouping
        ROWS.append(
            {
                "job": scenario,
                "backend": backend,
                "runs": f"{len(with_points)}/{expected_runs}",
                "points per rank": " ".join(f"r{rank}:{count}" for rank, count in sorted(per_rank_points.items())),
                "expected": f"{'each rank' if per_rank else 'r0'}:{steps}",
                "job s": f"{seconds:.0f}",
                "result": "FAIL"
                if [p for p in problems if p.startswith(backend + ":")]
                else "ok, not grouped yet"
                if [p for p in waived if p.startswith(backend + ":")]
                else "ok",
            }
        )
    return problems


def grouped(backend: str, runs: list[StoredRun]) -> list[str]:
    """Per-rank runs are named after their rank and filed under one group, where the backend shows groups."""
    problems = []
    groups = {run.group for run in runs}
    if len(groups) != 1 or None in groups:
        problems.append(f"{backend}: per-rank runs are not in one group: {sorted(map(str, groups))}")
    for run in runs:
        (rank,) = run.writers or {-1}
        if not run.name.endswith((f"rank{rank}", f"rank-{rank}")):
            problems.append(f"{backend}: the run of rank {rank} is named {run.name!r}")
    return problems


def table(rows: list[dict]) -> str:
    columns = list(rows[0])
    cells = [columns] + [[str(row[column]) for column in columns] for row in rows]
    widths = [max(len(line[index]) for line in cells) for index in range(len(columns))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
