"""Resuming a ClearML task from ``resume_state()`` in a later process: the same offline session folder
continued with ``Task.init(reuse_last_task_id=..., continue_last_task=0)``, read back from its zip."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from tracking_clearml import ClearMLTracker
from tracking_clearml.reader import OfflineSession
from tracking_core import TrackingWarning
from tracking_core.notices import reset_warnings
from tracking_core.testing.resume import finished_run, log_loss, loss, started_tracker, state_of_a_killed_run


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CLEARML_CONFIG_FILE", str(tmp_path / "no-clearml.conf"))
    monkeypatch.chdir(tmp_path)
    reset_warnings()


def tracker_for(logs: Path, state: dict | None, **kwargs) -> ClearMLTracker:
    return started_tracker(ClearMLTracker, logs, state, **kwargs)


def test_resume_in_process(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    first = finished_run(ClearMLTracker, logs, range(10), config={"lr": 0.1})
    state = first.resume_state()
    assert state == {"task_id": first.tracker.id, "mode": "offline", "session_dir": str(first.offline_folder)}
    assert state["task_id"].startswith("offline-")

    second = finished_run(ClearMLTracker, logs, range(10, 20), state)

    assert second.tracker.id == first.tracker.id and second.offline_folder == first.offline_folder
    assert second.report_notes() == [
        f"offline session {first.offline_folder}.zip: upload with `clearml-task --import-offline-session`"
    ]
    # The zip written at the second finish holds both halves at the steps logged (no +1 offset).
    session = OfflineSession(f"{second.offline_folder}.zip")
    assert session.scalars() == {"loss": {s: loss(s) for s in range(20)}}
    assert second.read_back_metrics() == {"loss": {s: loss(s) for s in range(20)}}
    assert json.loads(session.task["configuration"]["General"]["value"]) == {"lr": 0.1}
    assert second.resume_state() == state


def test_resume_after_the_first_process_was_killed(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CLEARML_", "TRAINS_"))}
    env["CLEARML_CONFIG_FILE"] = str(tmp_path / "no-clearml.conf")
    state = state_of_a_killed_run(ClearMLTracker, logs, cwd=tmp_path, env=env)
    assert not Path(f"{state['session_dir']}.zip").exists()  # killed before ClearML zipped the session

    tracker = finished_run(ClearMLTracker, logs, range(10, 20), state)

    assert tracker.tracker.id == state["task_id"]
    assert OfflineSession(f"{state['session_dir']}.zip").scalars() == {"loss": {s: loss(s) for s in range(20)}}
    assert not [note for note in tracker.report_notes() if note.startswith("could not resume")]


@pytest.mark.parametrize("case", ["session-gone", "no-task", "was-online"])
def test_a_task_that_cannot_be_reopened_gets_a_new_task_and_a_note(tmp_path: Path, case: str) -> None:
    logs = tmp_path / "logs"
    first = finished_run(ClearMLTracker, logs, range(3))
    state = first.resume_state()
    if case == "session-gone":
        shutil.rmtree(first.offline_folder)
        Path(f"{first.offline_folder}.zip").unlink()
    elif case == "no-task":
        state = {"mode": "offline"}
    else:
        state = {"task_id": "0123456789abcdef0123456789abcdef", "mode": "online", "session_dir": None}

    with pytest.warns(TrackingWarning, match="could not resume"):
        tracker = tracker_for(logs, state)
    log_loss(tracker, range(3, 5))
    tracker.finish()

    assert tracker.tracker.id != first.tracker.id and tracker.tracker.id != state.get("task_id")
    assert tracker.read_back_metrics() == {"loss": {3: loss(3), 4: loss(4)}}
    note = tracker.report_notes()[0]
    assert note.startswith("could not resume") and note.endswith("started a new task"), note
    if case == "session-gone":
        assert f"ClearML task {first.tracker.id} (its offline session {first.offline_folder} is gone)" in note
        assert not first.offline_folder.exists(), "ClearML recreated the missing session"
    elif case == "was-online":
        assert "it was recorded online, this run is offline" in note


def test_explicit_task_in_init_kwargs_wins_over_the_saved_task(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    first = finished_run(ClearMLTracker, logs, range(2))

    second = finished_run(
        ClearMLTracker, logs, range(2, 4), first.resume_state(), reuse_last_task_id=False, continue_last_task=False
    )

    assert second.tracker.id != first.tracker.id
    assert second.read_back_metrics() == {"loss": {2: loss(2), 3: loss(3)}}
    assert second.report_notes()[0] == (
        f"the task chosen in init_kwargs was used; the saved ClearML task {first.tracker.id} was not"
    )
    assert OfflineSession(f"{first.offline_folder}.zip").scalars() == {"loss": {0: loss(0), 1: loss(1)}}
