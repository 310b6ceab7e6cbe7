"""What only SwanLab 0.5.8 to 0.6.1 do (no offline mode: local mode, swanboard's store): the floor cell runs these.

A run folder holds ``logs/<column>/<n>.log`` and ``media/``; the ``runs.swanlab`` database beside it names
the project, the experiment and each column. Everything is read back with swanboard's own models and
log-file reader (:mod:`tracking_swanlab.older.v0_5_8.reader`). The rest of the package's tests run here too.
"""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import pytest
import tracking_core
from tracking_core import TrackingWarning
from tracking_core.notices import reset_warnings
from tracking_core.testing.resume import finished_run, log_loss, loss, started_tracker
from tracking_swanlab import SwanLabTracker
from tracking_swanlab.older import v0_5_8
from tracking_swanlab.older.v0_5_8 import DATABASE, dependencies
from tracking_swanlab.older.v0_5_8 import reader as local_reader
from tracking_swanlab.reader import read_run

from .conftest import isolate

pytestmark = pytest.mark.skipif(not v0_5_8.in_use(), reason="this SwanLab release has an offline mode")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate(monkeypatch, tmp_path, root=False)
    reset_warnings()
    return tmp_path


def test_the_run_is_in_swanboards_store_and_read_with_its_models(tmp_path: Path) -> None:
    tracker = finished_run(SwanLabTracker, tmp_path / "logs", range(3), config={"lr": 0.1}, experiment_name="exp")
    assert tracker.mode == "local" and tracker.run_dir.parent == tmp_path / "logs" / "swanlog"
    [experiment] = local_reader.experiments(tmp_path / "logs" / "swanlog" / DATABASE)
    assert (experiment.run_id, experiment.name, experiment.project) == (tracker.run_dir.name, "exp", "resume")
    assert experiment.status == local_reader.FINISHED and [c.kind for c in experiment.columns] == ["line"]
    before = sorted(path.name for path in (tmp_path / "logs" / "swanlog").iterdir())
    data = read_run(tracker.run_dir)
    assert data.scalars == {"loss": {s: loss(s) for s in range(3)}} and data.config == {"lr": 0.1}
    assert sorted(path.name for path in (tmp_path / "logs" / "swanlog").iterdir()) == before  # read-only


def test_the_training_process_output_is_recorded_as_swanlab_defaults_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SwanLab 0.5.8 copies what the process prints into the run's ``console/`` folder (no setting turns it
    off; 0.5.9 on have ``log_proxy_type``, ``"all"`` by default): as SwanLab defaults it, and the process
    still prints all of it."""
    import swanlab

    tracker = started_tracker(SwanLabTracker, tmp_path / "logs")
    try:
        print("a line of the training loop")
        log_loss(tracker, range(2))
    finally:
        tracker.finish()
    assert "a line of the training loop" in capsys.readouterr().out
    console = tracker.run_dir / "console"
    if "log_proxy_type" not in swanlab.Settings.model_fields:
        assert any("training loop" in file.read_text() for file in console.glob("*")), "SwanLab recorded nothing"


def test_a_missing_or_mismatched_swanboard_is_one_error_that_names_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """swanboard blocked from import: the start fails at once with the command (never retried), the records are
    spilled, and nothing is written under logging_dir by SwanLab."""
    monkeypatch.setitem(sys.modules, "swanboard", None)
    run = tracking_core.init("no-board", log_with="swanlab", logging_dir=tmp_path / "logs", on_error="warn")
    run.log({"loss": 1.0}, step=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = run.finish(timeout=60)
    backend = report.backends["swanlab"]
    assert backend.state == "start_failed" and backend.spilled == 1, str(report)
    assert "pip install 'swanboard==0.1.8b1' 'peewee<4'" in backend.last_error, backend.last_error
    assert not (tmp_path / "logs" / "swanlog").exists()


def test_peewee_4_is_named_before_swanboard_fails_on_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """swanboard 0.1.8b1 commits outside a transaction, which peewee 4 refuses on the first new column
    (checked by hand with peewee 4.5.3); the check names it first."""
    versions = {"swanboard": dependencies.wanted_swanboard(), "peewee": "4.5.3", "swanlab": "0.5.8"}
    monkeypatch.setattr(dependencies, "_version", versions.get)
    with pytest.raises(
        ImportError, match=r"peewee 4\.5\.3 is installed.*pip install 'swanboard==0\.1\.8b1' 'peewee<4'"
    ):
        dependencies.check()


def test_offline_mode_asked_for_is_local_mode(tmp_path: Path) -> None:
    tracker = finished_run(SwanLabTracker, tmp_path / "logs", range(2), mode="offline")
    assert tracker.mode == "local" and read_run(tracker.run_dir).scalars == {"loss": {0: loss(0), 1: loss(1)}}


def test_a_chosen_name_the_store_renames_warns_and_a_made_up_one_does_not(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    finished_run(SwanLabTracker, logs, range(1), experiment_name="same")
    with pytest.warns(TrackingWarning, match=r"this run is stored as 'same-\d+'"):
        again = finished_run(SwanLabTracker, logs, range(1), experiment_name="same")
    stored = read_run(again.run_dir).name
    assert again.experiment_name == "same" and re.fullmatch(r"same-\d+", stored), stored
    assert [note for note in again.report_notes() if f"stored as {stored!r}" in note]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made_up = [finished_run(SwanLabTracker, logs, range(1)) for _ in range(2)]
    assert not [w for w in caught if "stored as" in str(w.message)]
    for tracker in made_up:  # SwanLab's own name, as its store kept it
        assert tracker.experiment_name == read_run(tracker.run_dir).name and not tracker.report_notes()


def test_a_resumed_part_that_holds_nothing_yet_reads_as_the_earlier_history(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    first = finished_run(SwanLabTracker, logs, range(5))
    with pytest.warns(TrackingWarning, match="cannot continue run"):
        second = started_tracker(SwanLabTracker, logs, first.resume_state())
    try:
        assert second.read_back_history() == {"loss": [(s, loss(s)) for s in range(5)]}
        assert second.resume_state()["name"] == first.experiment_name  # a third process asks for the same name
    finally:
        second.finish()
