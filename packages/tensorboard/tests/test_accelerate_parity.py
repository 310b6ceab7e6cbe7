"""TensorBoardTracker against Accelerate's: the shared suite (``tracking_core.testing.accelerate_parity``) plus
what only TensorBoard has (SummaryWriter's shapes: text, dicts as ``add_scalars``, hparams; config as JSON
text; per-rank runs as sub-runs of the job's folder; Accelerate's message for a missing logging_dir)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tracking_core
from tracking_core import RunContext
from tracking_core.testing.accelerate_parity import AccelerateParity
from tracking_tensorboard import TensorBoardTracker

from .conftest import EventReader

np = pytest.importorskip("numpy")


class TestTensorBoardAccelerateParity(AccelerateParity):
    backend_name = "tensorboard"
    #: accelerate 1.15 ``accelerate/tracking.py``, class TensorBoardTracker: the positional parameters of each
    #: method (ours may add keyword-only options; accelerate passes ``**kwargs`` on to the SummaryWriter)
    accelerate_signatures = {
        "__init__": "self, run_name, logging_dir",
        "start": "self",
        "store_init_configuration": "self, values",
        "log": "self, values, step, **kwargs",
        "log_images": "self, values, step, **kwargs",
        "finish": "self",
    }
    exact_signatures = False
    sdk_attributes = ("tracker", "writer")
    accelerate_requires_logging_directory = True
    rank_port = 29641

    def read_metrics(self, tracker):
        return EventReader(tracker.log_dir).scalars()

    def read_config(self, tracker):
        return EventReader(tracker.log_dir).config_json()


def test_direct_use_keeps_summarywriters_shapes(tmp_path, event_reader):
    tracker = TensorBoardTracker("proj", tmp_path)
    tracker.start()
    tracker.store_init_configuration({"lr": 0.1, "name": "baseline"})
    tracker.log({"loss": 0.5, "note": "hi", "pair": {"a": 1.0, "b": 2.0}}, step=1)
    tracker.log_images({"batch": np.zeros((2, 3, 4, 4), np.uint8)}, step=1)  # accelerate's NCHW batch
    tracker.finish()
    reader = event_reader(tracker.log_dir)
    assert reader.scalars() == {"loss": {1: 0.5}} and reader.texts()["note"] == {1: "hi"}
    assert reader.hparams() == {"lr": 0.1, "name": "baseline"}
    assert [len(pngs) for _, pngs in reader.images()["batch"]] == [2]
    assert event_reader(tracker.log_dir / "pair_a").scalars() == {"pair": {1: 1.0}}  # dicts: add_scalars


def test_config_logged_after_start_is_merged(tmp_path, event_reader):
    run = tracking_core.init(
        "proj",
        log_with="tensorboard",
        logging_dir=tmp_path,
        config={"lr": 0.1, "model": {"depth": 2}},
        on_error="raise",
    )
    run.log({"loss": 1.0}, step=0)
    run.log_config({"batch_size": 32, "model": {"width": 64}, "lr": 0.2})
    assert run.finish().ok
    reader = event_reader(run.trackers[0].log_dir)
    assert reader.texts()["config/json"].keys() == {0}  # the merged config is the last text at step 0
    assert reader.config_json() == {"lr": 0.2, "model": {"depth": 2, "width": 64}, "batch_size": 32}
    # the hparams dashboard keeps a run's first session_start_info: it is written once the config settled
    assert reader.hparams() == {"lr": 0.2, "model/depth": 2.0, "model/width": 64.0, "batch_size": 32.0}
    assert run.trackers[0].report_notes() == []


def test_hparams_are_written_at_a_flush_once_the_config_settled(tmp_path, event_reader, monkeypatch):
    import tracking_tensorboard.tracker as module

    monkeypatch.setattr(module, "HPARAMS_SETTLE_SECONDS", 0.0)
    tracker = TensorBoardTracker("proj", tmp_path)
    tracker.start()
    tracker.store_init_configuration({"lr": 0.1})
    tracker.flush()  # a run killed after this keeps its hparams
    assert event_reader(tracker.log_dir).hparams() == {"lr": 0.1}
    tracker.store_init_configuration({"lr": 0.2, "seed": 1})
    tracker.finish()
    reader = event_reader(tracker.log_dir)
    assert reader.hparams() == {"lr": 0.1} and reader.config_json() == {"lr": 0.2, "seed": 1}
    (note,) = tracker.report_notes()
    assert "lr, seed" in note and "config/json" in note


def test_per_rank_runs_are_sub_runs_of_the_job_folder(tmp_path, event_reader):
    trackers = []
    for rank in (0, 1):
        tracker = TensorBoardTracker("proj", tmp_path)
        run_dir = tmp_path / "proj" / "job-1" / f"rank-{rank}"  # as the dispatcher sets it in per-rank mode
        tracker.run_context = RunContext(
            "proj", f"job-1-rank{rank}", run_dir, tmp_path, rank=rank, world_size=2, group="job-1"
        )
        tracker.start()
        tracker.log({"loss": float(rank)}, step=0)
        tracker.finish()
        trackers.append(tracker)
    assert [t.log_dir for t in trackers] == [tmp_path / "proj" / "job-1" / f"rank-{n}" for n in (0, 1)]
    for rank, tracker in enumerate(trackers):
        assert event_reader(tracker.log_dir).scalars() == {"loss": {0: float(rank)}}
    # TensorBoard shows them as two runs of one folder
    from tensorboard.backend.event_processing import plugin_event_multiplexer

    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(str(tmp_path / "proj" / "job-1"))
    multiplexer.Reload()
    assert sorted(multiplexer.Runs()) == ["rank-0", "rank-1"]


def test_the_default_mode_has_no_rank_folder(tmp_path):
    tracker = TensorBoardTracker("proj", tmp_path)
    tracker.run_context = RunContext("proj", "job-1", tmp_path / "proj" / "job-1", tmp_path, rank=0, world_size=2)
    tracker.start()
    tracker.finish()
    assert tracker.log_dir == Path(tmp_path / "proj" / "job-1")


def test_missing_logging_dir_error_carries_accelerates_message():
    from tracking_core import Dispatcher

    with pytest.raises(
        ValueError, match=re.escape("Logging with `tensorboard` requires a `logging_dir` to be passed in.")
    ):
        Dispatcher(log_with="tensorboard", logging_dir=None)
