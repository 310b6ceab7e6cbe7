"""Same signatures and SDK attributes as accelerate's ``AimTracker``; config merged after start; histograms
as Aim distributions; per-rank runs grouped by experiment and tags; images read back in every layout."""

from __future__ import annotations

import importlib.util
import inspect
import re
import warnings
from pathlib import Path

import pytest
import tracking_core
from tracking_aim import AimTracker
from tracking_core import RunContext, TrackingWarning

_spec = importlib.util.spec_from_file_location("_tracking_aim_readback", Path(__file__).with_name("aim_readback.py"))
readback = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readback)

np = pytest.importorskip("numpy")

#: accelerate 1.15 ``accelerate/tracking.py``, class AimTracker: each method's positional parameters.
ACCELERATE_1_15 = {
    "__init__": ["self", "run_name", "logging_dir"],
    "start": ["self"],
    "store_init_configuration": ["self", "values"],
    "log": ["self", "values", "step"],
    "log_images": ["self", "values", "step", "kwargs"],  # kwargs: a dict {"aim_image": {...}, "track": {...}}
    "finish": ["self"],
}
POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@pytest.mark.parametrize("method", sorted(ACCELERATE_1_15))
def test_positional_parameters_match_accelerate(method):
    parameters = inspect.signature(getattr(AimTracker, method)).parameters.values()
    assert [p.name for p in parameters if p.kind in POSITIONAL] == ACCELERATE_1_15[method]


def test_used_like_accelerate_without_a_dispatcher(tmp_path):
    tracker = AimTracker("proj", tmp_path)
    assert tracker.writer is None and tracker.tracker is None  # nothing before start()
    tracker.start()
    assert tracker.writer is tracker.tracker and tracker.writer.hash == tracker.run_hash
    tracker.store_init_configuration({"lr": 0.1})
    tracker.log({"loss": 0.5}, step=1)
    image = np.zeros((4, 6, 3), np.uint8)
    tracker.log_images({"pic": (image, "cap")}, 1, {"aim_image": {"format": "png"}, "track": {"epoch": 2}})
    tracker.finish()
    run = readback.get_run(tmp_path, tracker.run_hash)
    assert run["hparams"] == {"lr": 0.1} and readback.metrics(run) == {"loss": {1: 0.5}}
    stored = readback.sequence(run, "image", "pic")[1]
    assert stored.caption == "cap" and stored.format == "png"


def test_config_logged_after_start_is_merged(tmp_path):
    run = tracking_core.init(
        "late", log_with="aim", logging_dir=tmp_path, config={"lr": 0.1, "model": {"depth": 2}}, on_error="raise"
    )
    run.log({"loss": 1.0}, step=0)
    run.log_config({"batch_size": 32, "model": {"width": 64}, "lr": 0.2})
    assert run.finish().ok
    stored = readback.get_run(tmp_path, run.trackers[0].run_hash)
    assert stored["hparams"] == {"lr": 0.2, "model": {"depth": 2, "width": 64}, "batch_size": 32}


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
        tracker.run_context = RunContext(
            "ranks",
            f"job-1-rank{rank}",  # as the dispatcher sets it in per-rank mode
            tmp_path / "ranks" / "job-1" / f"rank-{rank}",
            tmp_path,
            rank=rank,
            world_size=2,
            group="job-1",
        )
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


LAYOUTS = {
    "HW": lambda rgb: rgb[..., 0],
    "HWC": lambda rgb: rgb,
    "CHW": lambda rgb: rgb.transpose(2, 0, 1),
    "CHW-float": lambda rgb: rgb.transpose(2, 0, 1) / 255.0,
    "NHWC": lambda rgb: np.stack([rgb, rgb[::-1]]),
    "NCHW": lambda rgb: np.stack([rgb, rgb[::-1]]).transpose(0, 3, 1, 2),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_images_read_back_in_every_layout(tmp_path, layout):
    rgb = (np.arange(16 * 24 * 3) % 251).astype(np.uint8).reshape(16, 24, 3)
    run = tracking_core.init("img", log_with="aim", logging_dir=tmp_path, on_error="raise")
    run.log_images({"img": LAYOUTS[layout](rgb)}, step=3)
    assert run.finish().ok
    stored = run.trackers[0].read_back_images()["img"]
    expected = [rgb[..., 0]] if layout == "HW" else [rgb, rgb[::-1]] if layout.startswith("N") else [rgb]
    assert [step for step, _ in stored] == [3] * len(expected)
    for (_, image), want in zip(stored, expected):
        assert image.dtype == np.uint8 and image.shape == want.shape
        assert np.abs(image.astype(int) - want).max() <= 1


def test_a_direct_batch_is_split_into_images(tmp_path):
    rgb = (np.arange(8 * 10 * 3) % 251).astype(np.uint8).reshape(8, 10, 3)
    tracker = AimTracker("proj", tmp_path)
    tracker.start()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about
        tracker.log_images({"batch": np.stack([rgb, rgb]).transpose(0, 3, 1, 2)}, step=0)
    tracker.finish()
    assert [image.shape for _, image in tracker.read_back_images()["batch"]] == [(8, 10, 3), (8, 10, 3)]


RANK_SCRIPT = r"""
import json, sys
from tracking_core import init

run = init("job", log_with="aim", logging_dir=sys.argv[2], per_rank=True)
run.log({"loss": float(sys.argv[1])}, step=0)
tracker = run.get_tracker("aim")
assert run.finish().ok
print(json.dumps({"hash": tracker.run_hash, "group": tracker.run_context.group}))
"""


def test_per_rank_mode_end_to_end(tmp_path):
    import json
    import os
    import subprocess
    import sys

    processes = []
    for rank in range(2):
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": "2", "MASTER_PORT": "29643"}
        env.pop("TRACKING_RUN_ID", None)
        command = [sys.executable, "-c", RANK_SCRIPT, str(rank), str(tmp_path / "logs")]
        processes.append(
            subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    results = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    (group,) = {result["group"] for result in results}
    repo = readback.open_repo(tmp_path / "logs")
    runs = [repo.get_run(result["hash"]) for result in results]
    assert [(run.name, run.experiment, sorted(str(tag) for tag in run.props.tags)) for run in runs] == [
        (f"{group}-rank0", "job", [f"group:{group}", "rank:0"]),
        (f"{group}-rank1", "job", [f"group:{group}", "rank:1"]),
    ]
    assert [readback.metrics(run) for run in runs] == [{"loss": {0: 0.0}}, {"loss": {0: 1.0}}]


def test_missing_logging_dir_error_carries_accelerates_message():
    from tracking_core import Dispatcher

    with pytest.raises(ValueError, match=re.escape("Logging with `aim` requires a `logging_dir` to be passed in.")):
        Dispatcher(log_with="aim", logging_dir=None)
