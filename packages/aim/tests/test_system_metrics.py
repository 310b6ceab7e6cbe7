"""System metrics: Aim's own resource tracker as Aim defaults it, or the library's samples in its place.

Read back with ``aim.Repo`` (see ``aim_readback.py``); the settings are read from the ``Run``'s own resource tracker.
"""

from __future__ import annotations

import importlib.util
import logging
import warnings
from pathlib import Path

import pytest
import tracking_core
from tracking_aim import AimTracker
from tracking_aim.system import aim_series, by_context
from tracking_core import RunContext
from tracking_core.notices import reset_warnings

_spec = importlib.util.spec_from_file_location("_tracking_aim_readback", Path(__file__).with_name("aim_readback.py"))
readback = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readback)

SAMPLES = [
    {"system/cpu.percent": 12.5, "system/memory.rss_gb": 1.25, "system/gpu.0.utilization_percent": 40.0},
    {"system/cpu.percent": 50.0, "system/memory.rss_gb": 1.5, "system/gpu.0.utilization_percent": 60.0},
    {"system/cpu.percent": 75.0, "system/memory.rss_gb": 1.75, "system/gpu.0.utilization_percent": 80.0},
]
T0 = 1_700_000_000.0


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
    own = tracker.read_back_system()
    assert "__system__cpu" in own and "__system__memory_percent" in own, sorted(own)
    assert tracker.read_back_metrics() == {"loss": {0: 0.5}}  # the run's metrics stay the user's
    run = readback.get_run(tmp_path, tracker.run_hash)
    assert run.get("__system_params") is None  # Aim's default: no packages, environment or git calls
    assert readback.metrics(run) == {"loss": {0: 0.5}}


def test_samples_replace_aims_resource_tracker_on_their_own_axis(tmp_path: Path, caplog) -> None:
    tracker = _tracker(tmp_path, system_metrics=True)
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always")
        tracker.start()
        monitor = tracker.tracker._system_resource_tracker
        assert monitor is None or monitor._stat_capture_interval is None  # Aim samples nothing itself
        tracker.log({"loss": 1.0}, step=0)
        tracker.log_system_metrics(SAMPLES[0], 0, T0)  # index 0 while the user is at step 0
        for step in range(1, 5):
            tracker.log({"loss": 1.0 / (step + 1)}, step=step)
        tracker.log_system_metrics(SAMPLES[1], 1, T0 + 10)
        tracker.log_system_metrics(SAMPLES[2], 2, T0 + 20)
        tracker.finish()
    assert not caught, [str(w.message) for w in caught]
    assert not [r for r in caplog.records if r.name.startswith("aim")], caplog.text
    assert tracker.read_back_history() == {"loss": [(step, 1.0 / (step + 1)) for step in range(5)]}
    run = readback.get_run(tmp_path, tracker.run_hash)
    assert readback.metrics(run) == {"loss": {step: 1.0 / (step + 1) for step in range(5)}}
    stored = {}
    for metric in run.metrics():
        if metric.name.startswith("__system__"):
            steps, (values, _epochs, times) = metric.data.items_list()
            context = metric.context.to_dict()
            stored[metric.name, tuple(context.items())] = list(zip(steps, values, times))
    assert stored == {
        ("__system__cpu.percent", ()): [(i, SAMPLES[i]["system/cpu.percent"], T0 + 10 * i) for i in range(3)],
        ("__system__memory.rss_gb", ()): [(i, SAMPLES[i]["system/memory.rss_gb"], T0 + 10 * i) for i in range(3)],
        ("__system__gpu.utilization_percent", (("gpu", 0),)): [
            (i, SAMPLES[i]["system/gpu.0.utilization_percent"], T0 + 10 * i) for i in range(3)
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
    assert tracker.read_back_system() == {}


def test_init_with_system_metrics_delivers_samples_as_aim_system_series(tmp_path: Path) -> None:
    run = tracking_core.init("sampled", log_with=["aim"], logging_dir=tmp_path, system_metrics=True)
    for step in range(3):
        run.log({"loss": float(step)}, step=step)
    report = run.finish(timeout=120)
    assert report.ok, str(report)
    tracker = run.get_tracker("aim")
    assert tracker.run_context.system_metrics is True
    assert tracker.read_back_metrics() == {"loss": {0: 0.0, 1: 1.0, 2: 2.0}}
    system = tracker.read_back_system()
    assert system.get("__system__cpu.percent"), sorted(system)  # the run's last sample, at least
    assert system["__system__cpu.percent"][0][0] == 0  # on the samples' own axis, from index 0
    assert "__system__cpu" not in system  # Aim's own tracker was off
