"""Resuming a SwanLab run from ``resume_state()`` in a later process: same run id and name, one offline
folder per process, every folder read back with SwanLab's own record reader.

SwanLab 0.6.2 to 0.7.x cannot continue a run offline: there the later folder is a new SwanLab run under
the same name, the state keeps the first run's id, and the report says so and how to upload both.
SwanLab 0.5.8 to 0.6.1 write in local mode, whose store renames the later part ``<name>-1``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from tracking_core import TrackingWarning
from tracking_core.notices import reset_warnings
from tracking_core.testing.resume import finished_run, log_loss, loss, started_tracker, state_of_a_killed_run
from tracking_swanlab import SwanLabTracker
from tracking_swanlab.older import v0_5_8
from tracking_swanlab.older.v0_6_2 import in_use as earlier_line
from tracking_swanlab.reader import read_run

from .conftest import isolate

LOCAL = v0_5_8.in_use()
WRITTEN = "local" if LOCAL else "offline"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate(monkeypatch, tmp_path)
    reset_warnings()
    return tmp_path


def tracker_for(logs: Path, state: dict | None, **kwargs) -> SwanLabTracker:
    return started_tracker(SwanLabTracker, logs, state, **kwargs)


def test_resume_in_process(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    first = finished_run(SwanLabTracker, logs, range(10))
    state = first.resume_state()
    assert state == {
        "id": first.run_id,
        "project": "resume",
        "name": first.experiment_name,
        "mode": WRITTEN,
        "run_dirs": [str(first.run_dir)],
    }

    second = finished_run(SwanLabTracker, logs, range(10, 20), state)

    assert (second.run_id, second.experiment_name) == (first.run_id, first.experiment_name)
    assert second.run_dirs == [first.run_dir, second.run_dir] and second.run_dir != first.run_dir
    assert second.resume_state()["run_dirs"] == [str(first.run_dir), str(second.run_dir)]
    earlier, later = read_run(first.run_dir), read_run(second.run_dir)
    stored_name = state["name"]
    if LOCAL:  # local mode's store renames a taken name: <name>-1, or -2 when that name is a prefix of another
        stored_name = later.name
        assert re.fullmatch(re.escape(state["name"]) + r"-\d+", stored_name), stored_name
    assert (earlier.name, later.name, earlier.project, later.project) == (state["name"], stored_name) + ("resume",) * 2
    assert earlier.scalars == {"loss": {s: loss(s) for s in range(10)}}
    assert later.scalars == {"loss": {s: loss(s) for s in range(10, 20)}} and later.finished
    assert second.read_back_metrics() == {"loss": {s: loss(s) for s in range(20)}}
    if not earlier_line():
        commands = f"swanlab sync {first.run_dir}; swanlab sync {second.run_dir}"
        assert second.report_notes() == [f"offline run {first.run_id} in 2 folders (upload in this order: {commands})"]
        return
    if LOCAL:
        cannot, renamed, folders = second.report_notes()
        assert cannot.startswith(f"this SwanLab release cannot continue run {first.run_id} in local mode"), cannot
        assert f"this run is stored as '{stored_name}'" in renamed, renamed
        assert folders == f"local run {first.run_id} in 2 folders, oldest first: {first.run_dir}, {second.run_dir}"
        return
    cannot, upload = second.report_notes()
    assert cannot.startswith(f"this SwanLab release cannot continue run {first.run_id} offline"), cannot
    assert upload.startswith(f"offline run {first.run_id} in 2 folders (upload in this order: swanlab sync"), upload
    assert str(first.run_dir) in upload and str(second.run_dir) in upload


def test_a_step_written_again_after_resume_shows_twice_in_the_history(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    first = finished_run(SwanLabTracker, logs, range(5))
    second = tracker_for(logs, first.resume_state())
    second.log({"loss": 0.5}, step=4)  # the resumed process repeats the last step, in its own folder
    log_loss(second, range(5, 7))
    second.finish()
    history = second.read_back_history()["loss"]
    assert history == [*((s, loss(s)) for s in range(5)), (4, 0.5), (5, loss(5)), (6, loss(6))]
    assert second.read_back_metrics()["loss"][4] == 0.5  # the later part wins at a step both hold


@pytest.mark.skipif(earlier_line(), reason="SwanLab 0.8+ records; 0.6-0.7 cannot resume offline (test_earlier.py)")
def test_the_later_folder_asks_swanlab_sync_to_resume(tmp_path: Path) -> None:
    """What `swanlab sync` reads: the start record of the later folder carries the same id and a resume mode."""
    from swanlab.proto.swanlab.record.v1 import record_pb2
    from swanlab.sdk.internal.core_python.store import DataStoreReader
    from tracking_swanlab.reader import find_run_file

    def start_record(folder: Path):
        reader = DataStoreReader()
        reader.open(str(find_run_file(folder)))
        try:
            for raw in reader:
                record = record_pb2.Record()
                record.ParseFromString(raw)
                if record.WhichOneof(record.DESCRIPTOR.oneofs[0].name) == "start":
                    return record.start
        finally:
            reader.close()

    logs = tmp_path / "logs"
    first = tracker_for(logs, None)
    first.finish()
    second = tracker_for(logs, first.resume_state())
    second.finish()
    earlier, later = start_record(first.run_dir), start_record(second.run_dir)
    assert earlier.id == later.id == first.run_id
    resume_mode = type(later).DESCRIPTOR.fields_by_name["resume"].enum_type.values_by_number[later.resume].name
    assert resume_mode.endswith("ALLOW"), resume_mode


def test_resume_after_the_first_process_was_killed(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    state = state_of_a_killed_run(SwanLabTracker, logs, cwd=tmp_path)

    tracker = finished_run(SwanLabTracker, logs, range(10, 20), state)

    assert tracker.run_id == state["id"] and tracker.earlier_run_dirs == [Path(state["run_dirs"][0])]
    assert read_run(tracker.run_dir).scalars == {"loss": {s: loss(s) for s in range(10, 20)}}
    # SwanLab 0.10.3 writes its run file unflushed until finish() (its own comment: an abnormal exit may lose
    # data), so the killed part may hold nothing; whatever it holds is read back, with the resumed part.
    points = tracker.read_back_metrics()["loss"]
    assert {s: points[s] for s in range(10, 20)} == {s: loss(s) for s in range(10, 20)}
    assert all(points[s] == loss(s) for s in points)
    assert not [note for note in tracker.report_notes() if note.startswith("could not resume")]


@pytest.mark.parametrize("case", ["folders-gone", "no-id"])
def test_a_run_that_cannot_be_reopened_gets_a_new_run_and_a_note(tmp_path: Path, case: str) -> None:
    logs = tmp_path / "logs"
    first = finished_run(SwanLabTracker, logs, range(3))
    state = first.resume_state()
    if case == "folders-gone":
        shutil.rmtree(first.run_dir)
    else:
        state = {"project": "resume"}

    with pytest.warns(TrackingWarning, match="could not resume"):
        tracker = tracker_for(logs, state)
    log_loss(tracker, range(3, 5))
    tracker.finish()

    assert tracker.run_id != first.run_id and tracker.earlier_run_dirs == []
    assert tracker.read_back_metrics() == {"loss": {3: loss(3), 4: loss(4)}}
    note = tracker.report_notes()[0]
    assert note.startswith("could not resume") and note.endswith("started a new run"), note
    if case == "folders-gone":
        assert f"SwanLab run {first.run_id} (its {WRITTEN} folders are gone: {first.run_dir})" in note


@pytest.mark.parametrize(
    "explicit",
    [
        pytest.param(
            {"id": "chosen0000000000000000"},
            marks=pytest.mark.skipif(earlier_line(), reason="SwanLab 0.6-0.7 take no run id offline (test_earlier.py)"),
        ),
        {"resume": "never"},
    ],
)
def test_explicit_choice_in_init_kwargs_wins_over_the_saved_run(tmp_path: Path, explicit: dict) -> None:
    logs = tmp_path / "logs"
    first = finished_run(SwanLabTracker, logs, range(2))

    second = finished_run(SwanLabTracker, logs, range(2, 4), first.resume_state(), **explicit)

    assert second.run_id != first.run_id and second.run_id == explicit.get("id", second.run_id)
    assert second.read_back_metrics() == {"loss": {2: loss(2), 3: loss(3)}}
    assert second.report_notes()[0] == (
        f"the run chosen in init_kwargs/settings was used; the saved SwanLab run {first.run_id} was not"
    )
    assert read_run(first.run_dir).scalars == {"loss": {0: loss(0), 1: loss(1)}}, "the saved run was written to"
