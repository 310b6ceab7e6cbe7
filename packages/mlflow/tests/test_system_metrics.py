"""System metrics: MLflow's own monitor as ``mlflow.start_run`` starts it, or the library's samples in its place.

Read back with ``MlflowClient`` (``Reader``); the monitor's settings are read from MLflow's ``SystemMetricsMonitor``.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import tracking_core
from tracking_core import RunContext
from tracking_core.testing.samples import SAMPLES, USER_HISTORY, run_steps_and_samples, sample_time, stored_samples
from tracking_mlflow import MLflowTracker


def _tracker(tmp_path: Path, system_metrics: bool, **kwargs) -> MLflowTracker:
    tracker = MLflowTracker("proj", tmp_path / "logs", **kwargs)
    tracker.run_context = RunContext(
        "proj", "run-1", tmp_path / "proj" / "run-1", tmp_path, system_metrics=system_metrics
    )
    return tracker


def _monitor_takes_a_uri() -> bool:
    from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

    return "tracking_uri" in inspect.signature(SystemMetricsMonitor).parameters


def test_by_default_mlflows_monitor_is_off_as_in_mlflow(tmp_path: Path) -> None:
    tracker = _tracker(tmp_path, system_metrics=False)
    tracker.start()
    assert tracker._sdk_monitor is None  # mlflow.start_run starts none unless its variable asks
    tracker.finish()


def test_mlflows_monitor_runs_when_its_variable_asks(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING", "true")
    if not _monitor_takes_a_uri():  # the floor's monitor writes to the global tracking URI: point it at the run
        monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'global.db'}")
    tracker = _tracker(tmp_path, system_metrics=False)
    tracker.start()
    monitor = tracker._sdk_monitor
    try:
        from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

        assert isinstance(monitor, SystemMetricsMonitor) and monitor._run_id == tracker.active_run_id
        assert getattr(monitor, "_tracking_uri", tracker.tracking_uri) == tracker.tracking_uri
        assert monitor._process is not None and monitor._process.is_alive()
    finally:
        tracker.finish()
    assert tracker._sdk_monitor is None and not monitor._process  # finished with the run, as mlflow.end_run does


@pytest.mark.skipif("_monitor_takes_a_uri()", reason="this MLflow's monitor takes the run's tracking URI")
def test_a_monitor_bound_to_the_global_uri_is_left_off_for_the_embedded_store(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING", "true")
    tracker = _tracker(tmp_path, system_metrics=False)
    with pytest.warns(tracking_core.TrackingWarning, match="global tracking URI"):
        tracker.start()
    tracker.finish()
    assert tracker._sdk_monitor is None
    assert any("global tracking URI" in note for note in tracker.report_notes())


def test_samples_replace_mlflows_monitor_on_their_own_axis(tmp_path: Path, monkeypatch, reader_of) -> None:
    monkeypatch.setenv("MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING", "true")  # the samples win over MLflow's variable
    tracker = _tracker(tmp_path, system_metrics=True)

    def no_mlflow_monitor() -> None:
        assert tracker._sdk_monitor is None

    sampled = run_steps_and_samples(tracker, start=True, after_start=no_mlflow_monitor)
    assert not sampled.caught, [str(w.message) for w in sampled.caught]
    assert sampled.warned(logger="mlflow") == []
    client = reader_of(tracker).client
    run_id = tracker.active_run_id
    assert [(m.step, m.value) for m in client.get_metric_history(run_id, "loss")] == USER_HISTORY
    for name in SAMPLES[0]:
        history = client.get_metric_history(run_id, name)
        assert [(m.step, m.value, m.timestamp) for m in history] == [
            (i, SAMPLES[i][name], int(sample_time(i) * 1000)) for i in range(3)
        ]
    assert sorted(client.get_run(run_id).data.metrics) == ["loss", *sorted(SAMPLES[0])]
    assert tracker.read_back_system_metrics() == {name: stored_samples(name) for name in SAMPLES[0]}


def test_init_with_system_metrics_delivers_samples_as_mlflow_system_metrics(tmp_path: Path) -> None:
    run = tracking_core.init("sampled", log_with=["mlflow"], logging_dir=tmp_path, system_metrics=True)
    for step in range(3):
        run.log({"loss": float(step)}, step=step)
    report = run.finish(timeout=120)
    assert report.ok, str(report)
    tracker = run.get_tracker("mlflow")
    assert tracker.run_context.system_metrics is True
    history = tracker.read_back_history()
    assert history["loss"] == [(0, 0.0), (1, 1.0), (2, 2.0)]
    samples = history.get("system/cpu.percent")
    assert samples and samples[0][0] == 0, sorted(history)  # on the samples' own axis, from index 0
