"""The replay half of the round-trip matrix, on the cell's backend.

Every source -> target migration goes through the journal: each backend's own cell proves its import
half (a run written with its SDK, imported: ``packages/<backend>/tests/test_import*.py``) and, here, its
replay half: the canonical imported journal (``tracking_core.testing.transfer``) replayed into the
backend with ``tracking replay`` and read back with the backend's own reader, every point once. Together
the cells cover every source x target pair (docs/moving-runs.md).
"""

from __future__ import annotations

import os

import tracking_core
from tracking_core.cli import main
from tracking_core.testing.transfer import CANONICAL_POINTS, canonical_journal, check_points

CELL = os.environ.get("TRACKING_BACKEND") or "jsonl"
#: keeps values as float32
FLOAT32 = {"tensorboard"}


def test_the_canonical_journal_replays_into_this_backend_with_every_point_once(tmp_path):
    runs = tmp_path / "runs"
    run_dir = canonical_journal(runs)
    assert main(["replay", str(run_dir), "--to", CELL, "--quiet"]) == 0
    assert main(["replay", str(run_dir), "--to", CELL, "--quiet"]) == 0  # again: nothing is sent twice
    # the replayed run reopened, to read what the backend stored through its own reader
    run = tracking_core.init(run_dir.parent.name, log_with=[CELL], logging_dir=runs, resume=run_dir.name)
    assert run.finish().ok
    history = run.get_tracker(CELL).read_back_history()
    check_points({key: history.get(key, []) for key in CANONICAL_POINTS}, float32=CELL in FLOAT32)
