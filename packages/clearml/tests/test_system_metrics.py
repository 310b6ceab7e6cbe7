"""ClearML's resource monitor as ClearML defaults it, and the library's samples in its place, read back
from the offline session (``metrics.jsonl``) and from the task's own monitor object, never from timing."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest
from tracking_clearml import ClearMLTracker
from tracking_clearml.session import OfflineSession
from tracking_core import RunContext

SAMPLE = {"system/cpu.percent": 12.5, "system/memory.rss_gb": 0.75, "system/gpu.0.utilization_percent": 40.0}


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CLEARML_CONFIG_FILE", str(tmp_path / "no-clearml.conf"))
    monkeypatch.chdir(tmp_path)


def _tracker(tmp_path: Path, system_metrics: bool, **kwargs) -> ClearMLTracker:
    logging_dir = tmp_path / "logs"
    tracker = ClearMLTracker("sys", logging_dir=logging_dir, **kwargs)
    tracker.run_context = RunContext(
        "sys", "run-1", logging_dir / "sys" / "run-1", logging_dir, system_metrics=system_metrics
    )
    return tracker


def test_by_default_clearmls_resource_monitor_runs_and_a_short_run_holds_none_of_its_events(tmp_path):
    from clearml.utilities.resource_monitor import ResourceMonitor

    tracker = _tracker(tmp_path, system_metrics=False)
    tracker.start()
    try:
        assert isinstance(tracker.task._resource_monitor, ResourceMonitor)  # as ClearML's Task.init defaults it
        for step in range(6):
            tracker.log({"loss": float(step)}, step=step)
    finally:
        tracker.finish()
    session = OfflineSession(f"{tracker.offline_folder}.zip")
    assert len(list(session.events("training_stats_scalar"))) == 6  # as Accelerate's own test counts them
    assert session.system_scalars() == {}


def test_system_metrics_turn_clearmls_resource_monitor_off(tmp_path):
    tracker = _tracker(tmp_path, system_metrics=True)
    tracker.start()
    try:
        assert getattr(tracker.task, "_resource_monitor", None) is None
    finally:
        tracker.finish()


def test_samples_are_clearmls_monitor_scalars_on_their_own_axis(tmp_path, caplog):
    tracker = _tracker(tmp_path, system_metrics=True)
    tracker.start()
    caplog.clear()
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always")
        tracker.log({"loss": 1.0}, step=0)
        tracker.log_system_metrics(SAMPLE, 0, 1_700_000_000.0)  # index 0 while the user is at step 0
        for step in range(1, 5):
            tracker.log({"loss": 1.0 / (step + 1)}, step=step)
            if step % 2 == 0:
                tracker.log_system_metrics({**SAMPLE, "system/cpu.percent": float(step)}, step // 2, 1_700_000_002.0)
        tracker.finish()
    assert [str(w.message) for w in caught] == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert tracker.read_back_history() == {"loss": [(step, 1.0 / (step + 1)) for step in range(5)]}
    assert tracker.read_back_system_metrics() == {
        (":monitor:machine", "cpu.percent"): [(0, 12.5), (1, 2.0), (2, 4.0)],
        (":monitor:machine", "memory.rss_gb"): [(0, 0.75), (1, 0.75), (2, 0.75)],
        (":monitor:gpu", "gpu.0.utilization_percent"): [(0, 40.0), (1, 40.0), (2, 40.0)],
    }
