"""AimTracker against Accelerate's: the shared suite (``tracking_core.testing.accelerate_parity``) plus what only
Aim has (Accelerate's ``aim_image``/``track`` kwargs, histograms as Aim distributions, per-rank runs grouped by
experiment and tags, Accelerate's message for a missing logging_dir)."""

from __future__ import annotations

import importlib.util
import re
import warnings
from pathlib import Path

import pytest
import tracking_core
from tracking_aim import AimTracker
from tracking_core import TrackingWarning
from tracking_core.testing.accelerate_parity import AccelerateParity
from tracking_core.testing.ranks import per_rank_context

_spec = importlib.util.spec_from_file_location("_tracking_aim_readback", Path(__file__).with_name("aim_readback.py"))
readback = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readback)

np = pytest.importorskip("numpy")


class TestAimAccelerateParity(AccelerateParity):
    backend_name = "aim"
    #: accelerate 1.15 ``accelerate/tracking.py``, class AimTracker: each method's positional parameters
    accelerate_signatures = {
        "__init__": "self, run_name, logging_dir",
        "start": "self",
        "store_init_configuration": "self, values",
        "log": "self, values, step",
        "log_images": "self, values, step, kwargs",  # kwargs: a dict {"aim_image": {...}, "track": {...}}
        "finish": "self",
    }
    exact_signatures = False
    sdk_attributes = ("tracker", "writer")
    accelerate_requires_logging_directory = True
    rank_port = 29643

    def _run(self, tracker):
        return readback.get_run(tracker.logging_dir, tracker.run_hash)

    def read_metrics(self, tracker):
        return readback.metrics(self._run(tracker))

    def read_config(self, tracker):
        return self._run(tracker)["hparams"]

    def run_names(self, trackers):
        repo = readback.open_repo(trackers[0].logging_dir)
        return [repo.get_run(tracker.run_hash).name for tracker in trackers]


def test_accelerates_image_kwargs_reach_aim(tmp_path):
    tracker = AimTracker("proj", tmp_path)
    tracker.start()
    assert tracker.writer.hash == tracker.run_hash
    tracker.store_init_configuration({"lr": 0.1})
    tracker.log({"loss": 0.5}, step=1)
    image = np.zeros((4, 6, 3), np.uint8)
    tracker.log_images({"pic": (image, "cap")}, 1, {"aim_image": {"format": "png"}, "track": {"epoch": 2}})
    tracker.finish()
    run = readback.get_run(tmp_path, tracker.run_hash)
    assert run["hparams"] == {"lr": 0.1} and readback.metrics(run) == {"loss": {1: 0.5}}
    stored = readback.sequence(run, "image", "pic")[1]
    assert stored.caption == "cap" and stored.format == "png"


def test_histograms_are_aim_distributions(tmp_path):
    run = tracking_core.init("hist", log_with="aim", logging_dir=tmp_path, on_error="raise")
    run.log_histogram("weights", [0.0, 1.0, 1.0, 2.0, 3.0], step=2, bins=3)
    with pytest.warns(TrackingWarning, match="evenly"):
        run.log_histogram("uneven", counts=[1, 4], edges=[0.0, 0.5, 2.0], step=3)
        report = run.finish()
    assert report.ok
    stored = readback.get_run(tmp_path, run.trackers[0].run_hash)
    from aim.storage.context import Context

    steps, (values, *_rest) = stored.get_distribution_sequence("weights", Context({})).data.items_list()
    assert list(steps) == [2]
    assert values[0].weights.tolist() == [1, 2, 2] and values[0].ranges.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert "weights/mean" not in readback.metrics(stored)  # a real distribution, not the summary metrics


def test_per_rank_runs_share_the_experiment_and_carry_group_and_rank_tags(tmp_path):
    hashes = []
    for rank in (0, 1):
        tracker = AimTracker("ranks", tmp_path, name="train")
        tracker.run_context = per_rank_context(tmp_path, "ranks", "job-1", rank)
        tracker.start()
        tracker.log({"loss": float(rank)}, step=0)
        tracker.finish()
        hashes.append(tracker.run_hash)
    repo = readback.open_repo(tmp_path)
    found = []
    for run_hash in hashes:
        run = repo.get_run(run_hash)
        found.append((run.name, run.experiment, sorted(str(tag) for tag in run.props.tags)))
    assert found == [
        ("train-rank0", "ranks", ["group:job-1", "rank:0"]),
        ("train-rank1", "ranks", ["group:job-1", "rank:1"]),
    ]


def test_a_direct_batch_is_split_into_images(tmp_path):
    rgb = (np.arange(8 * 10 * 3) % 251).astype(np.uint8).reshape(8, 10, 3)
    tracker = AimTracker("proj", tmp_path)
    tracker.start()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about
        tracker.log_images({"batch": np.stack([rgb, rgb]).transpose(0, 3, 1, 2)}, step=0)
    tracker.finish()
    assert [image.shape for _, image in tracker.read_back_images()["batch"]] == [(8, 10, 3), (8, 10, 3)]


def test_missing_logging_dir_error_carries_accelerates_message():
    from tracking_core import Dispatcher

    with pytest.raises(ValueError, match=re.escape("Logging with `aim` requires a `logging_dir` to be passed in.")):
        Dispatcher(log_with="aim", logging_dir=None)
