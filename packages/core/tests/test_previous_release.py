"""Runs written by the previous release (``data/previous_release``, made by tracking-core 0.1 before the
subpackage layout) resume and replay with this one: the on-disk formats (journal, spill, cursor files,
``run.json``) did not change with the code's layout.

The two runs: ``...-cf4302`` logged steps 0..49 (config, an image, a table, a histogram) to the journal
and finished; ``...-8a503a`` logged steps 0..39 to the journal and to a backend that refused every write
(``SwitchedJournal``), so its 40 records wait in ``spill-switched.jsonl``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import tracking_core
from tracking_core.cli import main
from tracking_core.contract.registry import register_tracker_class
from tracking_core.store.journal import JournalSummary, read_journal
from tracking_core.testing.faults import SwitchedJournal

DATA = Path(__file__).parent / "data" / "previous_release"
FINISHED = "20261202-023518-cf4302"
SPILLED = "20261202-023524-8a503a"


def _copy(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    shutil.copytree(DATA, runs)
    return runs


def test_a_run_of_the_previous_release_resumes_where_it_stopped(tmp_path: Path) -> None:
    runs = _copy(tmp_path)
    run = tracking_core.init("previous", log_with=["jsonl"], logging_dir=runs, resume=FINISHED)
    assert run.run_id == FINISHED
    for step in range(50, 60):
        run.log({"loss": 1.0 / (step + 1), "acc": step / 50}, step=step)
    assert run.finish().ok
    summary = JournalSummary(runs / "previous" / FINISHED)
    assert [step for step, _ in summary.metrics["loss"]] == list(range(60))
    assert summary.config == {"lr": 0.1, "model": {"depth": 2}}
    kinds = [entry["type"] for entry in read_journal(runs / "previous" / FINISHED / "journal.jsonl")]
    assert kinds.count("images") == kinds.count("table") == kinds.count("histogram") == 1
    assert kinds.count("resume") == 1


def test_a_spill_of_the_previous_release_replays_into_its_backend(tmp_path: Path, capsys) -> None:
    runs = _copy(tmp_path)
    run_dir = runs / "previous" / SPILLED
    register_tracker_class(SwitchedJournal)  # the conftest forgets it after the test
    assert main(["replay", str(run_dir / "spill-switched.jsonl")]) == 0, capsys.readouterr()
    stored = [entry for entry in read_journal(run_dir / "switched.jsonl") if entry["type"] == "metrics"]
    assert [entry["step"] for entry in stored] == list(range(40))
    assert main(["replay", str(run_dir / "spill-switched.jsonl")]) == 0  # nothing twice
    again = [entry for entry in read_journal(run_dir / "switched.jsonl") if entry["type"] == "metrics"]
    assert len(again) == 40
