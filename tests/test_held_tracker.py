"""A tracker held with ``get_tracker`` tells the truth in both delivery modes (the cell's backend).

With ``delivery="process"`` the backend runs in the delivery process; the object ``get_tracker``
returns in the training process must give the values that process knows (run folder, run id, ...),
so that its readers work, or say clearly that a value lives over there: never a stand-in.
"""

from __future__ import annotations

import os

import pytest
import tracking_core

CELL = os.environ.get("TRACKING_BACKEND") or "jsonl"


@pytest.mark.parametrize("delivery", ["thread", "process"])
def test_the_held_tracker_reads_back_what_the_run_logged(tmp_path, delivery):
    run = tracking_core.init("held", log_with=[CELL], logging_dir=tmp_path / "runs", delivery=delivery)
    for step in range(12):
        run.log({"train/loss": 1.0 / (step + 1)}, step=step)
    report = run.finish(timeout=180)
    assert report.backends[CELL].state == "finished", str(report)
    tracker = run.get_tracker(CELL)
    if CELL == "jsonl":
        assert tracker.run_dir == run.run_dir
    try:
        stored = tracker.read_back_metrics()
    except NotImplementedError:
        pytest.skip(f"{CELL} has no reader")
    assert sorted(stored["train/loss"]) == list(range(12))


def test_a_value_that_lives_in_the_delivery_process_is_an_error_not_a_stand_in(tmp_path):
    run = tracking_core.init("held", log_with=[CELL], logging_dir=tmp_path / "runs", delivery="process")
    run.log({"train/loss": 1.0}, step=0)
    run.flush(timeout=180)
    tracker = run.get_tracker(CELL)
    with pytest.raises(RuntimeError, match="delivery process"):
        tracker.tracker  # noqa: B018 - the SDK object cannot cross to this process
    run.finish(timeout=180)


def test_unwrapping_under_process_delivery_hands_the_backend_back_with_every_point_once(tmp_path):
    """``get_tracker(name, unwrap=True)`` with ``delivery="process"``: the SDK object comes to the training process
    (the backend reopens its run here); what was logged before and after reaches the backend once, in order."""
    from tracking_core.testing.reliability import tally

    run = tracking_core.init("handed", log_with=[CELL], logging_dir=tmp_path / "runs", delivery="process")
    for step in range(100):
        run.log({"train/loss": 1.0 / (step + 1)}, step=step)
    sdk_object = run.get_tracker(CELL, unwrap=True)
    assert sdk_object is not None and run.get_tracker(CELL).tracker is sdk_object
    for step in range(100, 200):
        run.log({"train/loss": 1.0 / (step + 1)}, step=step)
    report = run.finish(timeout=180)
    assert report.ok, str(report)
    if any(note.startswith(f"a new {CELL} run") or "started a new run" in note for note in report.backends[CELL].notes):
        pytest.skip(f"{CELL} cannot reopen a run: the points before the hand-back are in another SDK run")
    try:
        history = run.get_tracker(CELL).read_back_history()
    except NotImplementedError:
        pytest.skip(f"{CELL} has no reader")
    figures = tally("handed back by unwrap", CELL, range(200), [step for step, _ in history.get("train/loss", [])])
    assert figures["lost"] == 0 and figures["duplicated"] == 0, (figures, report.backends[CELL].notes)
