"""System metrics: Aim's own resource tracker as Aim defaults it, or the library's samples in its place.

Read back with ``aim.Repo`` (see ``aim_readback.py``); the settings are read from the ``Run``'s own resource tracker.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import tracking_core
from tracking_aim import AimTracker
from tracking_aim.system import aim_series, by_context, sample_key
from tracking_core import RunContext
from tracking_core.notices import reset_warnings
from tracking_core.testing.samples import SAMPLES, USER_HISTORY, run_steps_and_samples, sample_time, stored_samples

_spec = importlib.util.spec_from_file_location("_tracking_aim_readback", Path(__file__).with_name("aim_readback.py"))
readback = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readback)


@pytest.fixture(autouse=True)
def _fresh_warnings():
    reset_warnings()
    yield


def _tracker(tmp_path: Path, system_metrics: bool) -> AimTracker:
    tracker = AimTracker("proj", tmp_path)
    tracker.run_context = RunContext(
        "proj", "run-1", tmp_path / "proj" / "run-1", tmp_path, system_metrics=system_metrics
    )
    return tracker


def test_sample_names_follow_aims_own() -> None:
    assert aim_series("system/cpu.percent") == ("__system__cpu.percent", None)
    assert aim_series("system/gpu.1.memory_used_gb") == ("__system__gpu.memory_used_gb", {"gpu": 1})
    assert aim_series("system/network.recv_mb_s") == ("__system__network.recv_mb_s", None)
    for key in ("system/cpu.percent", "system/gpu.1.memory_used_gb", "system/network.recv_mb_s"):
        assert sample_key(*aim_series(key)) == key
    groups = by_context({"system/gpu.1.power_w": 1.0, "system/cpu.percent": 2.0, "system/gpu.0.power_w": 3.0})
    assert groups == [
        (None, {"__system__cpu.percent": 2.0}),
        ({"gpu": 0}, {"__system__gpu.power_w": 3.0}),
        ({"gpu": 1}, {"__system__gpu.power_w": 1.0}),
    ]


def test_by_default_aims_resource_tracker_runs_as_aim_defaults_it(tmp_path: Path) -> None:
    """As with accelerate's ``aim.Run(repo=...)``: system stats every 10 s, terminal logs, no system params."""
    from aim.ext.resource.configs import DEFAULT_SYSTEM_TRACKING_INT

    tracker = _tracker(tmp_path, system_metrics=False)
    tracker.start()
    monitor = tracker.tracker._system_resource_tracker
    assert monitor is not None and monitor._stat_capture_interval == DEFAULT_SYSTEM_TRACKING_INT
    assert monitor._capture_logs is True
    tracker.log({"loss": 0.5}, step=0)
    tracker.finish()
    # Aim's tracker stores its first stats when its thread starts; close() joins the thread.
    own = tracker.read_back_system_metrics()
    assert "system/cpu" in own and "system/memory_percent" in own, sorted(own)
    assert tracker.read_back_metrics() == {"loss": {0: 0.5}}  # the run's metrics stay the user's
    run = readback.get_run(tmp_path, tracker.run_hash)
    assert run.get("__system_params") is None  # Aim's default: no packages, environment or git calls
    assert readback.metrics(run) == {"loss": {0: 0.5}}


def test_samples_replace_aims_resource_tracker_on_their_own_axis(tmp_path: Path) -> None:
    tracker = _tracker(tmp_path, system_metrics=True)

    def aim_samples_nothing_itself() -> None:
        monitor = tracker.tracker._system_resource_tracker
        assert monitor is None or monitor._stat_capture_interval is None

    sampled = run_steps_and_samples(tracker, start=True, after_start=aim_samples_nothing_itself)
    assert not sampled.caught, [str(w.message) for w in sampled.caught]
    assert sampled.warned(logger="aim") == []
    assert tracker.read_back_history() == {"loss": USER_HISTORY}
    assert tracker.read_back_system_metrics() == {name: stored_samples(name) for name in SAMPLES[0]}
    run = readback.get_run(tmp_path, tracker.run_hash)
    assert readback.metrics(run) == {"loss": dict(USER_HISTORY)}
    stored = {}
    for metric in run.metrics():
        if metric.name.startswith("__system__"):
            steps, (values, _epochs, times) = metric.data.items_list()
            context = metric.context.to_dict()
            stored[metric.name, tuple(context.items())] = list(zip(steps, values, times))
    assert stored == {
        ("__system__cpu.percent", ()): [(i, SAMPLES[i]["system/cpu.percent"], sample_time(i)) for i in range(3)],
        ("__system__memory.rss_gb", ()): [(i, SAMPLES[i]["system/memory.rss_gb"], sample_time(i)) for i in range(3)],
        ("__system__gpu.utilization_percent", (("gpu", 0),)): [
            (i, SAMPLES[i]["system/gpu.0.utilization_percent"], sample_time(i)) for i in range(3)
        ],
    }


def test_an_explicit_tracking_interval_yields_to_the_samples_with_a_note(tmp_path: Path) -> None:
    tracker = AimTracker("proj", tmp_path, system_tracking_interval=5)
    tracker.run_context = RunContext("proj", "run-1", tmp_path / "proj" / "run-1", tmp_path, system_metrics=True)
    tracker.start()
    monitor = tracker.tracker._system_resource_tracker
    tracker.finish()
    assert monitor is None or monitor._stat_capture_interval is None
    assert any("system_tracking_interval=5" in note for note in tracker.report_notes())
    assert tracker.read_back_system_metrics() == {}


def test_init_with_system_metrics_delivers_samples_as_aim_system_series(tmp_path: Path) -> None:
    run = tracking_core.init("sampled", log_with=["aim"], logging_dir=tmp_path, system_metrics=True)
    for step in range(3):
        run.log({"loss": float(step)}, step=step)
    report = run.finish(timeout=120)
    assert report.ok, str(report)
    tracker = run.get_tracker("aim")
    assert tracker.run_context.system_metrics is True
    assert tracker.read_back_metrics() == {"loss": {0: 0.0, 1: 1.0, 2: 2.0}}
    system = tracker.read_back_system_metrics()
    assert system.get("system/cpu.percent"), sorted(system)  # the run's last sample, at least
    assert system["system/cpu.percent"][0][0] == 0  # on the samples' own axis, from index 0
    assert "system/cpu" not in system  # Aim's own tracker was off
