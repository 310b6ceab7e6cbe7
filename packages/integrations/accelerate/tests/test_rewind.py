"""``load_state`` of a checkpoint written by ``save_state``, before ``init_trackers``: the run that wrote the
checkpoint goes on after the checkpoint's step, and what the earlier process logged after it is superseded."""

from __future__ import annotations

import json

from tracking_accelerate import Accelerator
from tracking_core.store.journal import JournalSummary


def test_load_state_before_init_trackers_rewinds_the_checkpoints_run(tmp_path):
    first = Accelerator(log_with="jsonl", project_dir=tmp_path)
    first.init_trackers("rewind")
    for step in range(6):
        first.log({"loss": float(step)}, step=step)
        if step == 2:
            first.save_state(str(tmp_path / "ckpt"))
    first.end_training()

    again = Accelerator(log_with="jsonl", project_dir=tmp_path)
    again.load_state(str(tmp_path / "ckpt"))
    again.init_trackers("rewind")
    assert again.tracking.run_id == first.tracking.run_id
    for step in range(3, 8):
        again.log({"loss": step + 100.0}, step=step)
    assert again.end_training().ok
    run_dir = again.tracking.run_dir
    assert [point["step"] for point in json.loads((run_dir / "run.json").read_text())["rewinds"]] == [3]
    points = JournalSummary(run_dir).metrics["loss"]
    assert [step for step, _ in points] == list(range(8))
    assert [value > 100 for _, value in points] == [step >= 3 for step in range(8)]


def test_load_state_after_init_trackers_says_the_run_was_opened_already(tmp_path):
    import pytest
    from tracking_core import TrackingWarning

    first = Accelerator(log_with="jsonl", project_dir=tmp_path)
    first.init_trackers("rewind")
    first.log({"loss": 1.0}, step=5)
    first.save_state(str(tmp_path / "ckpt"))
    first.log({"loss": 1.0}, step=6)
    first.end_training()
    late = Accelerator(log_with="jsonl", project_dir=tmp_path)
    late.init_trackers("rewind")  # a new run: load_state comes too late to choose one
    with pytest.warns(TrackingWarning, match="call load_state before init_trackers"):
        late.load_state(str(tmp_path / "ckpt"))
    late.end_training()
