"""System metrics: TensorBoard records none by itself; the library's samples are scalars in a ``system`` sub-run.

Read back with TensorBoard's own accumulator (``EventReader`` in conftest.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tracking_core
from tracking_core import RunContext
from tracking_core.testing.samples import SAMPLES, T0, USER_HISTORY, run_steps_and_samples, sample_time, stored_samples
from tracking_tensorboard import TensorBoardTracker


def _tracker(tmp_path: Path) -> TensorBoardTracker:
    tracker = TensorBoardTracker("proj", tmp_path)
    tracker.run_context = RunContext("proj", "run-1", tmp_path / "proj" / "run-1", tmp_path, system_metrics=True)
    return tracker


def _wall_times(log_dir: Path, tag: str) -> list[tuple[int, float]]:
    from tensorboard.backend.event_processing import plugin_event_accumulator

    accumulator = plugin_event_accumulator.EventAccumulator(str(log_dir), size_guidance={"tensors": 0})
    accumulator.Reload()
    return [(event.step, event.wall_time) for event in accumulator.Tensors(tag)]


def test_samples_are_scalars_of_their_own_sub_run(tmp_path: Path, event_reader) -> None:
    tracker = _tracker(tmp_path)
    sampled = run_steps_and_samples(tracker, start=True)
    assert not sampled.caught, [str(w.message) for w in sampled.caught]
    assert sampled.warned(logger="tensorboard") == []
    expected_loss = [(step, pytest.approx(loss)) for step, loss in USER_HISTORY]
    assert tracker.read_back_history() == {"loss": expected_loss}
    assert event_reader(tracker.log_dir).scalars() == {
        "loss": {step: pytest.approx(loss) for step, loss in USER_HISTORY}
    }
    assert event_reader(tracker.log_dir / "system").scalars() == {
        name: {i: SAMPLES[i][name] for i in range(3)} for name in SAMPLES[0]
    }
    assert _wall_times(tracker.log_dir / "system", "system/cpu.percent") == [(i, sample_time(i)) for i in range(3)]
    assert tracker.read_back_system_metrics() == {name: stored_samples(name) for name in SAMPLES[0]}


def test_a_rewind_leaves_the_samples_alone(tmp_path: Path, event_reader) -> None:
    """A restart event drops a run's events at or after its step on every tag: not the samples' sub-run."""
    tracker = _tracker(tmp_path)
    tracker.start()
    for index in range(3):
        tracker.log({"loss": float(index)}, step=index)
        tracker.log_system_metrics(SAMPLES[index], index, T0 + index)
    tracker.rewind(1)
    tracker.finish()
    assert event_reader(tracker.log_dir).scalars() == {"loss": {0: 0.0}}
    assert sorted(event_reader(tracker.log_dir / "system").scalars()["system/cpu.percent"]) == [0, 1, 2]


def test_the_sdk_monitors_nothing_by_itself(tmp_path: Path) -> None:
    tracker = TensorBoardTracker("proj", tmp_path)
    tracker.start()
    tracker.log({"loss": 1.0}, step=0)
    tracker.finish()
    assert not (tracker.log_dir / "system").exists()
    assert tracker.read_back_system_metrics() == {}


def test_init_with_system_metrics_delivers_samples_to_the_system_sub_run(tmp_path: Path, event_reader) -> None:
    run = tracking_core.init("sampled", log_with=["tensorboard"], logging_dir=tmp_path, system_metrics=True)
    for step in range(3):
        run.log({"loss": float(step)}, step=step)
    report = run.finish(timeout=120)
    assert report.ok, str(report)
    tracker = run.get_tracker("tensorboard")
    assert tracker.run_context.system_metrics is True
    assert tracker.read_back_metrics() == {"loss": {0: 0.0, 1: 1.0, 2: 2.0}}
    samples = event_reader(tracker.log_dir / "system").scalars().get("system/cpu.percent")
    assert samples and min(samples) == 0  # on the samples' own axis, from index 0
