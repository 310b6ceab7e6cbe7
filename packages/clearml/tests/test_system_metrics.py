"""ClearML's resource monitor as ClearML defaults it, and the library's samples in its place, read back
from the offline session (``metrics.jsonl``) and from the task's own monitor object, never from timing."""

from __future__ import annotations

from pathlib import Path

import pytest
from tracking_clearml import ClearMLTracker
from tracking_clearml.reader import OfflineSession
from tracking_core import RunContext
from tracking_core.testing.samples import SAMPLES, USER_HISTORY, run_steps_and_samples, stored_samples


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


def test_samples_are_clearmls_monitor_scalars_on_their_own_axis(tmp_path):
    tracker = _tracker(tmp_path, system_metrics=True)
    tracker.start()
    sampled = run_steps_and_samples(tracker)
    assert sampled.warned() == []
    assert tracker.read_back_history() == {"loss": USER_HISTORY}
    session = OfflineSession(f"{tracker.offline_folder}.zip")
    assert session.system_scalars() == {
        (":monitor:machine", "cpu.percent"): stored_samples("system/cpu.percent"),
        (":monitor:machine", "memory.rss_gb"): stored_samples("system/memory.rss_gb"),
        (":monitor:gpu", "gpu.0.utilization_percent"): stored_samples("system/gpu.0.utilization_percent"),
    }
    assert tracker.read_back_system_metrics() == {name: stored_samples(name) for name in SAMPLES[0]}
