"""Resuming an MLflow run from ``resume_state()`` in a later process, read back with ``MlflowClient``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest
from tracking_core import TrackingWarning
from tracking_core.testing.resume import log_loss, started_tracker
from tracking_mlflow import MLflowTracker


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    """One embedded store for the module: creating a sqlite store costs ~3 s. Tests use their own experiment."""
    return tmp_path_factory.mktemp("resume") / "logs"


def _tracker(project: str, logs: Path, state: dict | None = None, **kwargs) -> MLflowTracker:
    return started_tracker(MLflowTracker, logs, state, project=project, **kwargs)


def _runs(reader, experiment_id: str) -> list:
    from mlflow.entities import ViewType

    return reader.client.search_runs([experiment_id], run_view_type=ViewType.ALL)


def _tracking_warnings(caught: list) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]


def test_resume_in_process(logs, reader_of):
    first = _tracker("in-process", logs)
    first.store_init_configuration({"lr": 0.1, "model": {"depth": 2}})
    log_loss(first, range(10))
    first.finish()
    state = first.resume_state()
    assert state == {
        "run_id": first.active_run_id,
        "tracking_uri": f"sqlite:///{logs.resolve()}/mlflow.db",
        "experiment_id": first.tracker.info.experiment_id,
    }

    second = _tracker("in-process", logs, state)
    assert second.active_run_id == first.active_run_id
    assert reader_of(second).run.info.status == "RUNNING"  # reopened, not left FINISHED
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        second.store_init_configuration({"lr": 0.1, "model": {"depth": 2}})  # the same config again
    assert _tracking_warnings(caught) == []
    log_loss(second, range(10, 20))
    second.finish()

    reader = reader_of(second)
    assert [run.info.run_id for run in _runs(reader, state["experiment_id"])] == [state["run_id"]]
    assert reader.metrics() == {"loss": {step: 1.0 / (step + 1) for step in range(20)}}
    assert reader.run.info.status == "FINISHED"
    assert reader.run.data.params == {"lr": "0.1", "model/depth": "2"}
    assert second.resume_state() == state and second.report_notes() == []


def _run_python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "DO_NOT_TRACK"))}
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=timeout
    )


def test_resume_after_the_first_process_was_killed(logs, reader_of):
    result = _run_python(
        f"""
        import json, os, signal
        from tracking_mlflow import MLflowTracker
        tracker = MLflowTracker("killed", logging_dir={str(logs)!r})
        tracker.start()
        tracker.store_init_configuration({{"lr": 0.1}})
        for step in range(10):
            tracker.log({{"loss": 1.0 / (step + 1)}}, step=step)
        tracker.flush()
        print(json.dumps(tracker.resume_state()), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    assert result.returncode == -9, result.stderr[-3000:]
    state = json.loads(result.stdout.strip().splitlines()[-1])

    tracker = _tracker("killed", logs, state)
    assert tracker.active_run_id == state["run_id"]
    with pytest.warns(TrackingWarning, match="cannot change"):  # as for a run resumed with MLFLOW_RUN_ID
        tracker.store_init_configuration({"lr": 0.2})
    log_loss(tracker, range(10, 20))
    tracker.finish()

    reader = reader_of(tracker)
    assert [run.info.run_id for run in _runs(reader, state["experiment_id"])] == [state["run_id"]]
    assert reader.metrics() == {"loss": {step: 1.0 / (step + 1) for step in range(20)}}
    assert reader.run.info.status == "FINISHED" and reader.run.data.params == {"lr": "0.1"}
    assert reader.json("config.json") == {"lr": 0.2}
    assert tracker.report_notes() == ["param lr keeps its first value in MLflow; config.json has the new one"]


@pytest.mark.parametrize("case", ["unknown-run", "deleted-run", "store-gone"])
def test_a_run_that_cannot_be_reopened_gets_a_new_run_and_a_note(case, logs, tmp_path, reader_of):
    project = f"gone-{case}"
    state = {"run_id": "0" * 32, "tracking_uri": f"sqlite:///{logs.resolve()}/mlflow.db", "experiment_id": "0"}
    if case == "deleted-run":
        old = _tracker(project, logs)
        old.finish()
        old.client.delete_run(old.active_run_id)
        state = old.resume_state()
    elif case == "store-gone":
        state["tracking_uri"] = f"sqlite:///{tmp_path}/gone/mlflow.db"

    with pytest.warns(TrackingWarning, match="could not resume"):
        tracker = _tracker(project, logs, state)
    log_loss(tracker, range(3))
    tracker.finish()

    assert tracker.active_run_id != state["run_id"]
    assert tracker.tracking_uri == f"sqlite:///{logs.resolve()}/mlflow.db"  # where a new run goes today
    reason = {
        "unknown-run": "it is not in sqlite:///",
        "deleted-run": "it is deleted",
        "store-gone": "no longer exists",
    }
    (note,) = tracker.report_notes()
    assert note.startswith(f"could not resume MLflow run {state['run_id']} (") and reason[case] in note, note
    assert note.endswith(f"started a new run {tracker.active_run_id}"), note
    reader = reader_of(tracker)
    assert reader.metrics() == {"loss": {0: 1.0, 1: 0.5, 2: 1 / 3}} and reader.run.info.status == "FINISHED"
    assert not (tmp_path / "gone").exists(), "a store was created where the missing one was"
    if case == "deleted-run":
        assert reader.client.get_run(state["run_id"]).info.lifecycle_stage == "deleted"  # left as it was


@pytest.mark.parametrize("how", ["kwarg", "env"])
def test_explicit_run_id_wins_over_the_saved_run(how, logs, monkeypatch, reader_of):
    saved = _tracker(f"explicit-{how}", logs)
    saved.finish()
    chosen = _tracker(f"explicit-{how}", logs)
    chosen.finish()
    kwargs = {"run_id": chosen.active_run_id} if how == "kwarg" else {}
    if how == "env":
        monkeypatch.setenv("MLFLOW_RUN_ID", chosen.active_run_id)

    tracker = _tracker(f"explicit-{how}", logs, saved.resume_state(), **kwargs)
    tracker.log({"x": 1.0}, step=0)
    tracker.finish()

    assert tracker.active_run_id == chosen.active_run_id
    assert reader_of(tracker).metrics() == {"x": {0: 1.0}}
    assert reader_of(saved).metrics() == {}, "the saved run was written to"
    assert tracker.report_notes() == [
        f"MLflow run {chosen.active_run_id} was chosen explicitly; the saved run {saved.active_run_id} was not resumed"
    ]


def test_saved_store_is_used_when_logging_dir_moved(logs, tmp_path, reader_of):
    first = _tracker("moved", logs)
    first.finish()
    moved = tmp_path / "elsewhere"
    tracker = _tracker("moved", moved, first.resume_state())  # e.g. a relative logging_dir, another cwd
    tracker.log({"x": 2.0}, step=1)
    tracker.finish()
    assert tracker.active_run_id == first.active_run_id and tracker.tracking_uri == first.tracking_uri
    assert reader_of(tracker).metrics() == {"x": {1: 2.0}}
    assert not moved.exists(), "an empty store was created in the new logging_dir"


def test_saved_server_that_does_not_answer_falls_back_quickly(logs, reader_of):
    with socket.socket() as probe:  # a port nothing listens on: connections are refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    state = {"run_id": "a" * 32, "tracking_uri": f"http://127.0.0.1:{port}", "experiment_id": "1"}
    started = time.monotonic()
    with pytest.warns(TrackingWarning, match="could not resume"):
        tracker = _tracker("unreachable", logs, state)
    elapsed = time.monotonic() - started
    tracker.finish()
    assert elapsed < 30, f"giving up on the saved server took {elapsed:.1f} s"
    assert tracker.active_run_id != state["run_id"] and tracker.tracking_uri.startswith("sqlite:///")
    assert "MlflowException" in tracker.report_notes()[0] and reader_of(tracker).run.info.status == "FINISHED"


def test_resume_state_leaves_a_password_out():
    from tracking_mlflow.store import without_password

    assert without_password("postgresql://me:secret@db.example:5432/mlflow") == "postgresql://me@db.example:5432/mlflow"
    assert without_password("https://:token@host/") == "https://host/"
    assert without_password("sqlite:////abs/mlflow.db") == "sqlite:////abs/mlflow.db"


def test_a_server_that_does_not_answer_fails_start_once(logs, monkeypatch):
    from mlflow.exceptions import MlflowException

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        uri = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)  # the new run would go to the same dead server
    started = time.monotonic()
    with pytest.raises(MlflowException, match="runs/get"):  # the reopen's error, not a second attempt's
        _tracker("dead-server", logs, {"run_id": "b" * 32, "tracking_uri": uri, "experiment_id": "1"})
    assert time.monotonic() - started < 30
