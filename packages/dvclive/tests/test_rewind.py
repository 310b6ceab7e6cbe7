"""A rewind (``resume_step``) cuts DVCLive's files back to the rewind step: the ``.tsv`` rows and the images
from that step on go, so ``dvc plots`` shows each step once after the resumed job logs them again."""

from __future__ import annotations

import numpy as np
from tracking_core.testing.resume import finished_run, loss, started_tracker
from tracking_dvclive import DVCLiveTracker


def test_a_rewind_removes_the_rows_and_images_from_its_step_on(tmp_path):
    first = finished_run(DVCLiveTracker, tmp_path, [])
    again = started_tracker(DVCLiveTracker, tmp_path, first.resume_state())
    for step in range(6):
        again.log({"loss": loss(step), "nested/acc": float(step)}, step=step)
        again.log_images({"sample": np.full((4, 4), step * 10, dtype=np.uint8)}, step=step)
    again.finish()
    later = started_tracker(DVCLiveTracker, tmp_path, again.resume_state())
    assert "6 rows and 3 images" in later.rewind(3)
    assert {key: [step for step, _ in points] for key, points in later.read_back_history().items()} == {
        "loss": [0, 1, 2],
        "nested/acc": [0, 1, 2],
    }
    assert [step for step, _ in later.read_back_images()["sample"]] == [0, 1, 2]
    later.log({"loss": 9.0}, step=3)
    later.finish()
    assert later.read_back_history()["loss"] == [(0, loss(0)), (1, loss(1)), (2, loss(2)), (3, 9.0)]
