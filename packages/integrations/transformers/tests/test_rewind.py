"""``Trainer.train(resume_from_checkpoint=...)`` from a checkpoint older than the run's last step: the run
goes on after the checkpoint's ``global_step`` and what the earlier training logged after it is superseded.
"""

from __future__ import annotations

import json

from tracking_core.store.journal import JournalSummary
from tracking_transformers import TrackingCallback

from .test_transformers import MAX_STEPS, trainer_with


def test_training_resumed_from_an_older_checkpoint_logs_each_step_once(tmp_path):
    out = tmp_path / "out"
    first = TrackingCallback(log_with=["jsonl", "tensorboard"], project="rewind")
    trainer_with(first, out, save_strategy="steps", save_steps=2).train()  # steps 1..6, checkpoints at 2, 4, 6
    again = TrackingCallback(log_with=["jsonl", "tensorboard"], project="rewind")
    trainer_with(again, out, save_strategy="steps", save_steps=2).train(
        resume_from_checkpoint=str(out / "checkpoint-2")
    )
    assert again.report is not None and again.report.ok, str(again.report)
    assert again.run_id == first.run_id
    run_dir = out / "runs" / "rewind" / first.run_id
    assert [point["step"] for point in json.loads((run_dir / "run.json").read_text())["rewinds"]] == [3]
    journal = JournalSummary(run_dir)
    tensorboard = next(tracker for tracker in again.trackers if tracker.name == "tensorboard")
    for points in (journal.metrics["train/loss"], tensorboard.read_back_history()["train/loss"]):
        assert [step for step, _ in points] == list(range(1, MAX_STEPS + 1)), points
    assert [step for step, _ in journal.metrics["eval/loss"]] == [3, 6]
