"""Resuming a W&B run from ``resume_state()`` in a later process: same run id, one offline folder per
process, every folder read back from its ``.wandb`` transaction log."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from tracking_core import TrackingWarning
from tracking_core.notices import reset_warnings
from tracking_core.testing.resume import finished_run, log_loss, loss, started_tracker, state_of_a_killed_run
from tracking_wandb import WandBTracker
from tracking_wandb.older import v0_19
from tracking_wandb.reader import find_log, read_run
from tracking_wandb.transaction_log import iter_records


@pytest.fixture(autouse=True)
def _no_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for variable in ("WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE", "WANDB_MODE", "WANDB_PROJECT", "WANDB_RUN_ID"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.delenv("WANDB_RESUME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    reset_warnings()


#: wandb-core writes the .wandb file at flush() only from wandb 0.31 (x_transaction_log_flush_interval).
FLUSH_WRITES = v0_19.has_setting(__import__("wandb").Settings(), "x_transaction_log_flush_interval")


def notes_of(tracker: WandBTracker) -> list[str]:
    """The tracker's report notes without those about settings an older W&B lacks (the floor cell's)."""
    return [note for note in tracker.report_notes() if f"wandb {v0_19.version()} has no setting" not in note]


def tracker_for(logs: Path, state: dict | None, **kwargs) -> WandBTracker:
    return started_tracker(WandBTracker, logs, state, **kwargs)


def run_record(folder: Path):
    return next(record.run for record in iter_records(find_log(folder)) if record.WhichOneof("record_type") == "run")


def test_resume_in_process(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    first = finished_run(WandBTracker, logs, range(10), config={"lr": 0.1})
    state = first.resume_state()
    assert state == {
        "id": first.run.id,
        "project": "resume",
        "entity": None,
        "mode": "offline",
        "run_dirs": [str(first.run_dir)],
    }

    second = finished_run(WandBTracker, logs, range(10, 20), state)

    assert second.run.id == first.run.id and second.run_dir != first.run_dir
    assert second.run_dirs == [first.run_dir, second.run_dir]
    assert second.resume_state()["run_dirs"] == [str(first.run_dir), str(second.run_dir)]
    # Each folder holds its own half; the later one is marked as continuing the run (what `wandb sync` needs).
    assert sorted(read_run(first.run_dir).metrics()["loss"]) == list(range(10))
    assert read_run(second.run_dir).metrics() == {"loss": {s: loss(s) for s in range(10, 20)}}
    if "resume" in type(run_record(first.run_dir)).DESCRIPTOR.fields_by_name:  # wandb >= 0.31's RunRecord field
        assert (run_record(first.run_dir).resume, run_record(second.run_dir).resume) == (False, True)
    assert run_record(second.run_dir).run_id == first.run.id
    assert second.read_back_metrics() == {"loss": {s: loss(s) for s in range(20)}}
    notes = notes_of(second)
    assert notes == [
        f"offline run {first.run.id} in 2 folders (upload together: wandb sync {first.run_dir} {second.run_dir})"
    ]

    third = tracker_for(logs, second.resume_state())  # a second restart keeps collecting the folders
    log_loss(third, range(20, 25))
    third.finish()
    assert third.run_dirs == [first.run_dir, second.run_dir, third.run_dir]
    assert third.read_back_metrics() == {"loss": {s: loss(s) for s in range(25)}}


def test_a_step_written_again_after_resume_shows_twice_in_the_history(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    first = finished_run(WandBTracker, logs, range(5))
    second = tracker_for(logs, first.resume_state())
    second.log({"loss": 0.5}, step=4)  # the resumed process repeats the last step
    log_loss(second, range(5, 7))
    second.finish()
    history = second.read_back_history()["loss"]
    assert history == [*((s, loss(s)) for s in range(5)), (4, 0.5), (5, loss(5)), (6, loss(6))]
    assert second.read_back_metrics()["loss"][4] == 0.5  # the later part wins at a step both hold


def test_resume_after_the_first_process_was_killed(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    env = {key: value for key, value in os.environ.items() if not key.startswith("WANDB_")}
    state = state_of_a_killed_run(WandBTracker, logs, cwd=tmp_path, env=env)

    tracker = finished_run(WandBTracker, logs, range(10, 20), state)

    assert tracker.run.id == state["id"] and tracker.earlier_run_dirs == [Path(state["run_dirs"][0])]
    # W&B keeps the latest step's row open until a later step or the end of the run commits it, so the killed
    # process's last step (9) never reached its transaction log; everything flushed before it did. Before
    # wandb 0.31, wandb-core buffers the file and a killed process leaves it empty (the note says so).
    durable = range(9) if FLUSH_WRITES else range(0)
    assert read_run(state["run_dirs"][0]).metrics() == ({"loss": {s: loss(s) for s in durable}} if durable else {})
    assert tracker.read_back_metrics() == {"loss": {s: loss(s) for s in [*durable, *range(10, 20)]}}
    assert not [note for note in notes_of(tracker) if note.startswith("could not resume")]


@pytest.mark.parametrize("case", ["folders-gone", "no-id"])
def test_a_run_that_cannot_be_reopened_gets_a_new_run_and_a_note(tmp_path: Path, case: str) -> None:
    logs = tmp_path / "logs"
    first = finished_run(WandBTracker, logs, range(3))
    state = first.resume_state()
    if case == "folders-gone":
        shutil.rmtree(first.run_dir)
    else:
        state = {"project": "resume"}

    with pytest.warns(TrackingWarning, match="could not resume"):
        tracker = tracker_for(logs, state)
    log_loss(tracker, range(3, 5))
    tracker.finish()

    assert tracker.run.id != first.run.id and tracker.earlier_run_dirs == []
    assert tracker.read_back_metrics() == {"loss": {3: loss(3), 4: loss(4)}}
    note = notes_of(tracker)[0]
    assert note.startswith("could not resume") and note.endswith("started a new run"), note
    if case == "folders-gone":
        assert f"W&B run {first.run.id} (its offline folders are gone: {first.run_dir})" in note


@pytest.mark.parametrize("explicit", [{"id": "chosen01"}, {"resume": "never"}])
def test_explicit_choice_in_init_kwargs_wins_over_the_saved_run(tmp_path: Path, explicit: dict) -> None:
    logs = tmp_path / "logs"
    first = finished_run(WandBTracker, logs, range(2))

    second = finished_run(WandBTracker, logs, range(2, 4), first.resume_state(), **explicit)

    assert second.run.id != first.run.id and second.run.id == explicit.get("id", second.run.id)
    assert second.read_back_metrics() == {"loss": {2: loss(2), 3: loss(3)}}
    assert notes_of(second)[0] == (
        f"the run chosen in init_kwargs/settings was used; the saved W&B run {first.run.id} was not"
    )
    assert read_run(first.run_dir).metrics() == {"loss": {0: loss(0), 1: loss(1)}}, "the saved run was written to"
