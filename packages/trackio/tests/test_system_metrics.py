"""System metrics: Trackio's own monitors as ``trackio.init`` defaults them, or the library's samples in their place.

Read back with Trackio's own reader (``SQLiteStorage.get_system_logs``); the monitors are read from the ``Run``.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import tracking_core
from tracking_core import RunContext
from tracking_core.notices import reset_warnings
from tracking_core.testing.samples import SAMPLES, USER_HISTORY, run_steps_and_samples, stored_samples
from tracking_trackio import TrackioTracker


def _init_takes(name: str) -> bool:
    import trackio

    return name in inspect.signature(trackio.init).parameters


def _has_system_metrics() -> bool:
    from trackio.run import Run

    return hasattr(Run, "log_system")  # trackio 0.14 and later


needs_system = pytest.mark.skipif("not _has_system_metrics()", reason="trackio before 0.14 has no system metrics")


@pytest.fixture(autouse=True)
def _fresh_warnings():
    reset_warnings()
    yield


def _tracker(tmp_path: Path, system_metrics: bool, **kwargs) -> TrackioTracker:
    tracker = TrackioTracker("proj", logging_dir=tmp_path / "runs", **kwargs)
    tracker.run_context = RunContext(
        "proj", "run-1", tmp_path / "proj" / "run-1", tmp_path, system_metrics=system_metrics
    )
    return tracker


def _system_logs(tracker: TrackioTracker) -> list[dict]:
    from trackio.sqlite_storage import SQLiteStorage

    run_id, name = tracker.store_run
    return SQLiteStorage.get_system_logs("proj", name, run_id=run_id)


@pytest.mark.skipif("not _init_takes('auto_log_cpu')", reason="trackio before 0.27 has no CPU monitor")
def test_trackios_cpu_monitor_runs_as_trackio_defaults_it(tmp_path: Path) -> None:
    tracker = _tracker(tmp_path, system_metrics=False)
    tracker.start()
    try:
        from trackio.cpu import cpu_available

        assert (tracker.run._cpu_monitor is not None) == cpu_available()  # on when psutil is there, as in Trackio
    finally:
        tracker.finish()


@needs_system
def test_samples_replace_trackios_monitors_as_its_system_metrics(tmp_path: Path) -> None:
    tracker = _tracker(tmp_path, system_metrics=True, auto_log_gpu=True)

    def trackio_monitors_nothing() -> None:
        assert getattr(tracker.run, "_cpu_monitor", None) is None and tracker.run._gpu_monitor is None

    sampled = run_steps_and_samples(tracker, start=True, after_start=trackio_monitors_nothing)
    assert not sampled.caught, [str(w.message) for w in sampled.caught]
    assert sampled.warned(logger="trackio") == []
    assert any("auto_log_cpu/auto_log_gpu are off" in note for note in tracker.report_notes())
    assert tracker.read_back_history() == {"loss": USER_HISTORY}
    logs = _system_logs(tracker)
    assert [{key: row[key] for key in SAMPLES[0]} for row in logs] == SAMPLES
    assert all(row["timestamp"] for row in logs)  # Trackio's time axis
    assert tracker.read_back_system_metrics() == {name: stored_samples(name) for name in SAMPLES[0]}


@pytest.mark.skipif("_has_system_metrics()", reason="this trackio has system metrics")
def test_a_trackio_without_system_metrics_refuses_samples_with_a_note(tmp_path: Path) -> None:
    tracker = _tracker(tmp_path, system_metrics=True)
    tracker.start()
    tracker.log({"loss": 1.0}, step=0)
    with pytest.warns(tracking_core.TrackingWarning), pytest.raises(RuntimeError, match="no system metrics"):
        tracker.log_system_metrics(SAMPLES[0], 0, 0.0)
    tracker.finish()
    assert any("no system metrics" in note for note in tracker.report_notes())
    assert tracker.read_back_metrics() == {"loss": {0: 1.0}}


@needs_system
def test_init_with_system_metrics_delivers_samples_to_trackios_system_metrics(tmp_path: Path) -> None:
    run = tracking_core.init("proj", log_with=["trackio"], logging_dir=tmp_path / "runs", system_metrics=True)
    for step in range(3):
        run.log({"loss": float(step)}, step=step)
    report = run.finish(timeout=120)
    assert report.ok, str(report)
    tracker = run.get_tracker("trackio")
    assert tracker.run_context.system_metrics is True
    assert tracker.read_back_metrics() == {"loss": {0: 0.0, 1: 1.0, 2: 2.0}}
    logs = _system_logs(tracker)
    assert logs and "system/cpu.percent" in logs[0], logs
