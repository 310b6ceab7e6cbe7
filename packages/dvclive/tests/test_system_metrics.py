"""System metrics: DVCLive's own monitor as DVCLive defaults it (off), or the library's samples where it writes.

Read back with DVCLive's own reader (``dvclive.utils.parse_metrics``: every ``.tsv`` and ``metrics.json``).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
import tracking_core
from tracking_core import RunContext
from tracking_core.notices import reset_warnings
from tracking_core.testing.samples import SAMPLES, T0, USER_HISTORY, run_steps_and_samples, sample_time, stored_samples
from tracking_dvclive import DVCLiveTracker


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("DVCLIVE_", "DVC_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    reset_warnings()
    return tmp_path


def _tracker(tmp_path: Path, system_metrics: bool, **kwargs) -> DVCLiveTracker:
    tracker = DVCLiveTracker("proj", logging_dir=tmp_path, **kwargs)
    tracker.run_context = RunContext(
        "proj", "run-1", tmp_path / "proj" / "run-1", tmp_path, system_metrics=system_metrics
    )
    return tracker


def _read(tracker: DVCLiveTracker) -> tuple[dict[str, list[dict[str, str]]], dict]:
    """DVCLive's own reader, its history keyed by the metric's name in the folder."""
    from dvclive.utils import parse_metrics

    history, latest = parse_metrics(tracker.live)
    root = Path(tracker.live.plots_dir) / "metrics"
    return {Path(path).relative_to(root).with_suffix("").as_posix(): rows for path, rows in history.items()}, latest


def test_dvclives_monitor_stays_off_by_default_and_on_when_asked(tmp_path: Path) -> None:
    quiet = _tracker(tmp_path / "a", system_metrics=False)
    quiet.start()
    assert quiet.live._system_monitor is None  # DVCLive's default, as with accelerate's Live(**kwargs)
    quiet.finish()
    before = set(threading.enumerate())
    asked = _tracker(tmp_path / "b", system_metrics=False, monitor_system=True)
    asked.start()
    assert asked.live._system_monitor is not None
    asked.finish()
    for thread in set(threading.enumerate()) - before:  # DVCLive's monitor.end() does not wait for its thread
        thread.join()


def test_samples_replace_dvclives_monitor_on_their_own_axis(tmp_path: Path) -> None:
    tracker = _tracker(tmp_path, system_metrics=True, monitor_system=True)

    def dvclives_monitor_is_off() -> None:
        assert tracker.live._system_monitor is None  # off, monitor_system=True notwithstanding

    sampled = run_steps_and_samples(tracker, start=True, after_start=dvclives_monitor_is_off)
    assert not sampled.caught, [str(w.message) for w in sampled.caught]
    assert sampled.warned(logger="dvclive") == []
    assert any("monitor_system is off" in note for note in tracker.report_notes())
    assert tracker.live.step == 4  # the samples never moved DVCLive's step
    history, latest = _read(tracker)
    assert [(int(row["step"]), float(row["loss"])) for row in history["loss"]] == USER_HISTORY
    for key in SAMPLES[0]:
        rows = history[key]
        assert list(rows[0]) == ["timestamp", "step", key.rsplit("/", 1)[1]]  # DVCLive's monitor's columns
        assert [(int(row["timestamp"]), int(row["step"]), float(row[list(row)[2]])) for row in rows] == [
            (int(sample_time(i) * 1000), i, SAMPLES[i][key]) for i in range(3)
        ]
    assert latest["step"] == 4 and latest["loss"] == 0.2
    assert latest["system"] == {name.removeprefix("system/"): value for name, value in SAMPLES[2].items()}
    assert tracker.read_back_system_metrics() == {name: stored_samples(name) for name in SAMPLES[0]}


def test_a_rewind_keeps_the_samples(tmp_path: Path) -> None:
    tracker = _tracker(tmp_path, system_metrics=True)
    tracker.start()
    for index in range(3):
        tracker.log({"loss": float(index)}, step=index)
        tracker.log_system_metrics(SAMPLES[index], index, T0 + index)
    tracker.rewind(1)
    tracker.finish()
    history, _latest = _read(tracker)
    assert [row["step"] for row in history["loss"]] == ["0"]
    assert [row["step"] for row in history["system/cpu.percent"]] == ["0", "1", "2"]


def test_init_with_system_metrics_delivers_samples_to_dvclives_system_files(tmp_path: Path) -> None:
    run = tracking_core.init("sampled", log_with=["dvclive"], logging_dir=tmp_path, system_metrics=True)
    for step in range(3):
        run.log({"loss": float(step)}, step=step)
    report = run.finish(timeout=120)
    assert report.ok, str(report)
    tracker = run.get_tracker("dvclive")
    assert tracker.run_context.system_metrics is True
    history, _latest = _read(tracker)
    assert [int(row["step"]) for row in history["loss"]] == [0, 1, 2]
    assert history.get("system/cpu.percent") and history["system/cpu.percent"][0]["step"] == "0"
