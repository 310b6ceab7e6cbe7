"""Resuming a Comet experiment from ``resume_state()`` in a later process: one offline archive per process,
the later ones marked to append to the same experiment key, all read back from their ``messages.json``."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest
from tracking_comet_ml import CometMLTracker
from tracking_comet_ml.reader import read_archive_metrics
from tracking_core import TrackingWarning
from tracking_core.notices import reset_warnings
from tracking_core.testing.resume import finished_run, log_loss, loss, started_tracker, state_of_a_killed_run


@pytest.fixture(autouse=True)
def _fresh_warnings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    reset_warnings()


def tracker_for(logs: Path, state: dict | None, **kwargs) -> CometMLTracker:
    return started_tracker(CometMLTracker, logs, state, **kwargs)


def experiment_json(archive: Path) -> dict:
    with zipfile.ZipFile(archive) as opened:
        return json.loads(opened.read("experiment.json"))


def test_resume_in_process(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    first = tracker_for(logs, None)
    log_loss(first, range(10))
    key = first.tracker.get_key()
    state = first.resume_state()
    first.finish()
    assert state["experiment_key"] == key and state["mode"] == "offline"
    assert state["offline_directory"] == str(first.archive_path.parent)

    second = finished_run(CometMLTracker, logs, range(10, 20), state)

    assert second.tracker.get_key() == key
    assert second.archives() == [first.archive_path, second.archive_path]
    assert read_archive_metrics(first.archive_path) == {"loss": {s: loss(s) for s in range(10)}}
    assert read_archive_metrics(second.archive_path) == {"loss": {s: loss(s) for s in range(10, 20)}}
    # What `comet upload` reads: the later archive appends to the experiment of the same key.
    later = experiment_json(second.archive_path)
    assert (later["offline_id"], later["resume_strategy"]) == (key, "get")
    assert second.read_back_metrics() == {"loss": {s: loss(s) for s in range(20)}}
    assert second.report_notes() == [
        f"offline experiment {key} in 2 archives (upload in this order: comet upload "
        f"{first.archive_path} {second.archive_path})"
    ]


def test_resume_after_the_first_process_was_killed(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    env = {key: value for key, value in os.environ.items() if not key.startswith("COMET_")}
    env["COMET_API_KEY"] = ""
    state = state_of_a_killed_run(CometMLTracker, logs, cwd=tmp_path, env=env)
    assert Path(state["data_dir"], "messages.json").is_file()  # Comet's data of the killed process, not archived

    tracker = finished_run(CometMLTracker, logs, range(10, 20), state)

    earlier = Path(state["offline_directory"]) / state["archive_name"]
    assert tracker.tracker.get_key() == state["experiment_key"]
    assert tracker.archives() == [earlier, tracker.archive_path]
    assert read_archive_metrics(earlier) == {"loss": {s: loss(s) for s in range(10)}}
    assert tracker.read_back_metrics() == {"loss": {s: loss(s) for s in range(20)}}
    assert not Path(state["data_dir"]).exists()
    assert tracker.report_notes()[0] == f"archived the killed process's Comet data as {earlier}"


@pytest.mark.parametrize("case", ["archives-gone", "no-key"])
def test_an_experiment_that_cannot_be_reopened_gets_a_new_one_and_a_note(tmp_path: Path, case: str) -> None:
    logs = tmp_path / "logs"
    first = tracker_for(logs, None)
    log_loss(first, range(3))
    state = first.resume_state()
    first.finish()
    if case == "archives-gone":
        first.archive_path.unlink()
    else:
        state = {"mode": "offline"}

    with pytest.warns(TrackingWarning, match="could not resume"):
        tracker = tracker_for(logs, state)
    log_loss(tracker, range(3, 5))
    tracker.finish()

    assert tracker.tracker.get_key() != first.tracker.get_key()
    assert tracker.read_back_metrics() == {"loss": {3: loss(3), 4: loss(4)}}
    note = tracker.report_notes()[0]
    assert note.startswith("could not resume") and note.endswith("started a new one"), note
    if case == "archives-gone":
        assert f"Comet experiment {first.tracker.get_key()} (no archive of it in" in note


def test_explicit_experiment_key_wins_over_the_saved_experiment(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    first = tracker_for(logs, None)
    log_loss(first, range(2))
    state = first.resume_state()
    first.finish()

    chosen = "c" * 32
    second = finished_run(CometMLTracker, logs, range(2, 4), state, experiment_key=chosen)

    assert second.tracker.get_key() == chosen
    assert second.read_back_metrics() == {"loss": {2: loss(2), 3: loss(3)}}
    assert second.report_notes()[0] == (
        "the experiment chosen in init_kwargs/COMET_EXPERIMENT_KEY was used; "
        f"the saved Comet experiment {first.tracker.get_key()} was not"
    )
    assert read_archive_metrics(first.archive_path) == {"loss": {0: loss(0), 1: loss(1)}}
