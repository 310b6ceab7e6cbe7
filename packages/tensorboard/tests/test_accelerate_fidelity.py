"""Same signatures and SDK attributes as accelerate's ``TensorBoardTracker``; config merged after start;
per-rank sub-runs; images read back in every layout."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import tracking_core
from tracking_core import RunContext
from tracking_tensorboard import TensorBoardTracker

np = pytest.importorskip("numpy")

#: accelerate 1.15 ``accelerate/tracking.py``, class TensorBoardTracker: the positional parameters of each
#: method (ours may add keyword-only options and ``**kwargs``).
ACCELERATE_1_15 = {
    "__init__": ["self", "run_name", "logging_dir"],
    "start": ["self"],
    "store_init_configuration": ["self", "values"],
    "log": ["self", "values", "step"],
    "log_images": ["self", "values", "step"],
    "finish": ["self"],
}
POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@pytest.mark.parametrize("method", sorted(ACCELERATE_1_15))
def test_positional_parameters_match_accelerate(method):
    parameters = inspect.signature(getattr(TensorBoardTracker, method)).parameters.values()
    assert [p.name for p in parameters if p.kind in POSITIONAL] == ACCELERATE_1_15[method]
    if method in ("__init__", "log", "log_images"):  # accelerate passes **kwargs on to the SummaryWriter
        assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters) or method == "__init__"


def test_used_like_accelerate_without_a_dispatcher(tmp_path, event_reader):
    tracker = TensorBoardTracker("proj", tmp_path)
    assert tracker.writer is None and tracker.tracker is None  # nothing before start(), as accelerate
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


LAYOUTS = {
    "HW": lambda rgb: rgb[..., 0],
    "HWC": lambda rgb: rgb,
    "CHW": lambda rgb: rgb.transpose(2, 0, 1),
    "NHWC": lambda rgb: np.stack([rgb, rgb]),
    "NCHW": lambda rgb: np.stack([rgb, rgb]).transpose(0, 3, 1, 2),
    "float": lambda rgb: rgb / 255.0,
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_images_read_back_in_every_layout(tmp_path, layout):
    rgb = (np.arange(6 * 10 * 3) % 251).astype(np.uint8).reshape(6, 10, 3)
    run = tracking_core.init("proj", log_with="tensorboard", logging_dir=tmp_path, on_error="raise")
    run.log_images({"img": LAYOUTS[layout](rgb)}, step=3)
    assert run.finish().ok
    stored = run.trackers[0].read_back_images()["img"]
    expected = rgb[..., 0] if layout == "HW" else rgb
    assert [step for step, _ in stored] == [3] * (2 if layout.startswith("N") else 1)
    for _, image in stored:
        assert image.dtype == np.uint8 and image.shape == expected.shape
        assert np.abs(image.astype(int) - expected).max() <= 1


RANK_SCRIPT = r"""
import json, sys
from tracking_core import init

run = init("job", log_with="tensorboard", logging_dir=sys.argv[2], per_rank=True)
run.log({"loss": float(sys.argv[1])}, step=0)
tracker = run.get_tracker("tensorboard")
assert run.finish().ok
print(json.dumps({"log_dir": str(tracker.log_dir), "group": tracker.run_context.group}))
"""


def rank_processes(script: str, tmp_path, port: str) -> list[dict]:
    """Two processes as a launcher starts them (RANK / WORLD_SIZE), each printing a JSON line at the end."""
    import json
    import os
    import subprocess
    import sys

    processes = []
    for rank in range(2):
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": "2", "MASTER_PORT": port}
        env.pop("TRACKING_RUN_ID", None)
        command = [sys.executable, "-c", script, str(rank), str(tmp_path / "logs")]
        processes.append(
            subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    results = []
    for process in processes:
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def test_per_rank_mode_end_to_end(tmp_path, event_reader):
    results = rank_processes(RANK_SCRIPT, tmp_path, "29641")
    (group,) = {result["group"] for result in results}
    job = tmp_path / "logs" / "job" / group
    assert [Path(result["log_dir"]) for result in results] == [job / "rank-0", job / "rank-1"]
    for rank, result in enumerate(results):
        assert event_reader(result["log_dir"]).scalars() == {"loss": {0: float(rank)}}


def test_missing_logging_dir_error_carries_accelerates_message():
    from tracking_core import Dispatcher

    with pytest.raises(
        ValueError, match=re.escape("Logging with `tensorboard` requires a `logging_dir` to be passed in.")
    ):
        Dispatcher(log_with="tensorboard", logging_dir=None)
