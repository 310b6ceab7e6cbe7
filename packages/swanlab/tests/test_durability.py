"""A flush that returned means every point logged before it survives a SIGKILL of the process."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from tracking_core import TrackingWarning
from tracking_core.notices import reset_warnings
from tracking_core.testing.resume import log_loss, loss, started_tracker, state_of_a_killed_run
from tracking_swanlab import SwanLabTracker, durability
from tracking_swanlab.older import v0_5_8, v0_6_2
from tracking_swanlab.reader import read_run

from .conftest import isolate


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate(monkeypatch, tmp_path)
    reset_warnings()
    return tmp_path


def test_every_step_flushed_before_a_sigkill_is_in_the_run_file(tmp_path: Path) -> None:
    """SwanLab's ``run.log`` only queues; its writer thread batches and its run file is buffered. The child
    logs 100 steps, flushes, and kills itself at once: every step must be read back from its folder."""
    steps = 100
    state = state_of_a_killed_run(SwanLabTracker, tmp_path / "logs", cwd=tmp_path, steps=steps)

    stored = read_run(Path(state["run_dirs"][0])).scalars.get("loss", {})

    missing = sorted(set(range(steps)) - stored.keys())
    assert not missing, f"{len(missing)} of {steps} flushed steps lost: {missing[:10]}..."
    assert stored == {step: loss(step) for step in range(steps)}


def test_a_flushed_run_file_holds_every_step_while_the_run_is_still_open(tmp_path: Path) -> None:
    tracker = started_tracker(SwanLabTracker, tmp_path / "logs")
    try:
        log_loss(tracker, range(250))  # more than one of SwanLab's batches
        tracker.flush()
        assert read_run(tracker.run_dir).scalars == {"loss": {step: loss(step) for step in range(250)}}
        log_loss(tracker, range(250, 260))
        tracker.flush()  # a second marker: the hook is installed once and keeps the order
        assert len(read_run(tracker.run_dir).scalar_history["loss"]) == 260
    finally:
        tracker.finish()
    tracker.flush()  # after finish: nothing to wait for


@pytest.mark.skipif(v0_6_2.in_use(), reason="SwanLab 0.8+'s writer thread; 0.6-0.7's is an executor SwanLab drains")
def test_a_writer_that_ended_fails_the_flush_instead_of_confirming(tmp_path: Path) -> None:
    tracker = started_tracker(SwanLabTracker, tmp_path / "logs")
    run = tracker.run
    run._components.consumer.stop()
    run._components.consumer.join()
    try:
        with pytest.raises(TimeoutError, match="not running"):
            tracker.flush()
    finally:
        tracker.finish()


def test_a_release_without_the_writer_hooks_warns_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if v0_5_8.in_use():
        from tracking_swanlab.older.v0_5_8 import durability as local_durability

        monkeypatch.setattr(local_durability, "_local_callback", lambda run: None)
    elif v0_6_2.in_use():
        from tracking_swanlab.older.v0_6_2 import durability as earlier_durability

        monkeypatch.setattr(earlier_durability, "writer_of", lambda run: None)
    else:
        monkeypatch.setattr(durability, "_consumer_of", lambda run: None)
    tracker = started_tracker(SwanLabTracker, tmp_path / "logs")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tracker.flush()
            tracker.flush()
    finally:
        tracker.finish()
    messages = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]
    assert len(messages) == 1 and "may be lost" in messages[0], messages
