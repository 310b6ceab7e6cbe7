"""Resuming a Trackio run from ``resume_state()`` in a later tracker: same run, one series, config kept."""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path

import pytest
from tracking_core.testing.resume import loss, started_tracker
from tracking_trackio import TrackioTracker, store
from tracking_trackio.older import before_v0_24 as legacy
from tracking_trackio.older.v0_0_3 import STEPS_NOTE, numbers_rows, takes_resume

from .test_contract import as_stored, keeps_no_config, read_config, read_run_rows, run_python, run_reader, trackio_db

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def read_runs(logging_dir: Path, project: str) -> dict[tuple[str | None, str], dict[int, float]]:
    """``{(run_id or None, run_name): {step: loss}}`` from the project's store, decoded with Trackio's value decoder."""
    if numbers_rows():  # trackio 0.0.3 to 0.0.16: no run ids, and the rows numbered by Trackio
        rows = [(None, name, step, values) for name, step, values in read_run_rows(logging_dir, project)]
    else:
        with sqlite3.connect(trackio_db(logging_dir, project)) as connection:
            columns = {row[1] for row in connection.execute("PRAGMA table_info(metrics)")}
            run_id = "run_id" if "run_id" in columns else "NULL"  # Trackio < 0.24 keys rows by run name alone
            stored = connection.execute(f"SELECT {run_id}, run_name, step, metrics FROM metrics ORDER BY id").fetchall()
        connection.close()
        rows = [(run_id, name, step, store.decode(json.loads(metrics))) for run_id, name, step, metrics in stored]
    runs: dict[tuple[str | None, str], dict[int, float]] = {}
    for run_id, run_name, step, values in rows:
        series = runs.setdefault((run_id, run_name), {})
        value = values.get("loss")
        if value is not None:
            assert step not in series, f"step {step} stored twice"
            series[step] = value
    return runs


def own_notes() -> list[str]:
    """The report notes every run of this release has: the steps it cannot keep (0.0.3 to 0.0.16), or none."""
    return [STEPS_NOTE] if numbers_rows() else []


def test_resume_in_process_continues_the_same_run(tmp_path: Path) -> None:
    logs = tmp_path / "runs"
    first = TrackioTracker("resume", logging_dir=logs)
    first.start()
    first.store_init_configuration({"lr": 0.1, "opt": {"name": "adam"}})
    for step in range(10):
        first.log({"loss": loss(step)}, step=step)
    first.finish()
    state = first.resume_state()
    assert state == {
        "project": "resume",
        "name": first.tracker.name,
        "id": first.store_run[0],
        "storage_dir": str(logs.resolve() / "trackio"),
    }

    second = started_tracker(TrackioTracker, logs, state, project="resume")
    assert (second.tracker.name, second.store_run[0]) == (first.tracker.name, first.store_run[0])
    for step in range(10, 20):
        second.log({"loss": loss(step)}, step=step)
    second.finish()

    assert second.report_notes() == own_notes()
    assert read_runs(logs, "resume") == {(state["id"], state["name"]): {s: loss(s) for s in range(20)}}
    assert second.read_back_metrics() == {"loss": {s: loss(s) for s in range(20)}}
    if keeps_no_config(first.report_notes()):
        return
    config = read_config(logs, "resume")  # exactly one config row: the resumed run did not add or blank one
    assert config["lr"] == 0.1 and config["opt"] == {"name": "adam"}
    if "_Created" in first.tracker.config:  # trackio 0.0.3 to 0.0.16 keep no creation time
        assert config["_Created"] == first.tracker.config["_Created"]  # the run's creation time, not the resume's


def test_resume_after_the_first_process_was_killed(tmp_path: Path) -> None:
    code = """
        import json, os, signal
        from tracking_trackio import TrackioTracker
        tracker = TrackioTracker("killed", logging_dir="runs")
        tracker.start()
        tracker.store_init_configuration({"lr": 0.1})
        for step in range(10):
            tracker.log({"loss": 1 / (step + 1)}, step=step)
        tracker.flush()
        print(json.dumps(tracker.resume_state()), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """
    killed = run_python(code, tmp_path, returncode=-signal.SIGKILL)
    state = json.loads(killed.stdout.strip().splitlines()[-1])

    tracker = started_tracker(TrackioTracker, tmp_path / "runs", state, project="killed")
    assert tracker.store_run[0] == state["id"]
    for step in range(10, 20):
        tracker.log({"loss": loss(step)})  # no step: Trackio counts on from the stored run's last step
    tracker.finish()
    assert tracker.report_notes() == own_notes()
    assert read_runs(tmp_path / "runs", "killed") == {(state["id"], state["name"]): {s: loss(s) for s in range(20)}}

    # Trackio's own API in a fresh process sees one run with all 20 points and its config.
    check = """
        import json, trackio
        from tracking_trackio import store
        from tracking_trackio.older import v0_0_3 as first
        runs = store.run_names("killed")  # Trackio's own SQLiteStorage.get_runs (0.0.3: its dashboard's)
        logs = store.run_logs("killed", runs[0])  # its get_logs (get_metrics before 0.2.9; 0.0.3: pandas)
        config = first.run_config("killed", runs[0]) or {}  # get_run_config (0.4+), or as 0.0.3 to 0.0.16 keep it
        print(json.dumps({"runs": runs, "lr": config.get("lr"),
                          "steps": sorted(row["step"] for row in logs if "loss" in row)}))
    """
    seen = run_reader(check, tmp_path, Path(state["storage_dir"]))
    assert json.loads(seen.stdout.strip().splitlines()[-1]) == {
        "runs": [state["name"]],
        "lr": 0.1 if legacy.stores_config() else None,  # trackio before 0.4 keeps no run config
        "steps": list(range(20)),
    }


@pytest.mark.parametrize("case", ["run-gone", "store-gone", "other-project", "no-name"])
def test_unknown_saved_run_starts_a_new_run_with_a_note(tmp_path: Path, case: str) -> None:
    logs = tmp_path / "runs"
    if case == "run-gone":  # the store and project exist, the run does not
        existing = TrackioTracker("lost", logging_dir=logs, name="someone-else")
        existing.start()
        existing.log({"loss": 9.0}, step=0)
        existing.finish()
    state = {"project": "lost", "name": "ghost", "id": "0" * 32, "storage_dir": str(logs.resolve() / "trackio")}
    if case == "store-gone":
        state["storage_dir"] = str(tmp_path / "deleted" / "trackio")
    elif case == "other-project":
        state["project"] = "another-project"
    elif case == "no-name":
        state = {}

    tracker = started_tracker(TrackioTracker, logs, state, project="lost")
    tracker.log({"loss": loss(0)}, step=0)
    tracker.finish()

    assert tracker.tracker.name != "ghost" and tracker.store_run[0] != "0" * 32
    notes = [note for note in tracker.report_notes() if note not in own_notes()]
    assert len(notes) == 1 and notes[0].startswith("could not resume Trackio run"), notes
    assert notes[0].endswith("; started a new run")
    if case != "no-name":
        assert "'ghost'" in notes[0]
    if case == "store-gone":
        assert "is gone" in notes[0]
    runs = read_runs(logs, "lost")  # the new run lands in logging_dir as usual
    assert runs[(tracker.store_run[0], tracker.tracker.name)] == {0: loss(0)}
    assert not (tmp_path / "deleted").exists()


@pytest.mark.parametrize("explicit", [{"name": "chosen"}, {"resume": "never"}])
def test_explicit_choice_in_kwargs_wins_over_the_saved_run(tmp_path: Path, explicit: dict) -> None:
    logs = tmp_path / "runs"
    first = TrackioTracker("choice", logging_dir=logs)
    first.start()
    first.log({"loss": loss(0)}, step=0)
    first.finish()

    second = started_tracker(TrackioTracker, logs, first.resume_state(), project="choice", **explicit)
    second.log({"loss": loss(1)}, step=1)
    second.finish()

    assert second.store_run != first.store_run
    assert second.tracker.name == explicit.get("name", second.tracker.name)
    notes = [note for note in second.report_notes() if note not in own_notes()]
    if "resume" in explicit and not takes_resume(__import__("trackio").init):  # before 0.0.16: one note says so
        assert len(notes) == 1 and notes[0].startswith("this trackio release has no resume="), notes
    else:
        assert notes == []
    assert read_runs(logs, "choice") == {
        (first.store_run[0], first.tracker.name): {0: loss(0)},
        (second.store_run[0], second.tracker.name): {as_stored([1])[0]: loss(1)},  # the second run's first row
    }
