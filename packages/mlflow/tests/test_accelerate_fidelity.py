"""Same signatures and SDK attributes as accelerate's ``MLflowTracker``; config merged after start;
per-rank runs grouped by tags; figures always PNG; images read back in every layout."""

from __future__ import annotations

import inspect
import warnings

import pytest
import tracking_core
from tracking_core import RunContext, TrackingWarning
from tracking_mlflow import MLflowTracker

np = pytest.importorskip("numpy")

#: accelerate 1.15 ``accelerate/tracking.py``, class MLflowTracker: each method's positional parameters
#: (ours may add keyword options); ``log_figure`` also takes accelerate's ``**save_kwargs``.
ACCELERATE_1_15 = {
    "__init__": [
        "self", "experiment_name", "logging_dir", "run_id", "tags", "nested_run", "run_name", "description",
    ],
    "start": ["self"],
    "store_init_configuration": ["self", "values"],
    "log": ["self", "values", "step"],
    "log_figure": ["self", "figure", "artifact_file"],
    "log_artifacts": ["self", "local_dir", "artifact_path"],
    "log_artifact": ["self", "local_path", "artifact_path"],
    "finish": ["self"],
}  # fmt: skip
POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@pytest.mark.parametrize("method", sorted(ACCELERATE_1_15))
def test_positional_parameters_match_accelerate(method):
    parameters = list(inspect.signature(getattr(MLflowTracker, method)).parameters.values())
    expected = ACCELERATE_1_15[method]
    # our extra positional parameters (``step``) come after accelerate's, so accelerate's calls bind the same
    assert [p.name for p in parameters if p.kind in POSITIONAL][: len(expected)] == expected
    if method == "log_figure":
        assert parameters[-1].kind is inspect.Parameter.VAR_KEYWORD and parameters[-1].name == "save_kwargs"


def _started(tmp_path, *args, **kwargs) -> MLflowTracker:
    tracker = MLflowTracker(*args, logging_dir=tmp_path, **kwargs)
    tracker.start()
    return tracker


def test_used_like_accelerate_without_a_dispatcher(tmp_path, reader_of):
    tracker = MLflowTracker("exp", tmp_path, run_name="baseline")
    assert tracker.active_run is None and tracker.tracker is None  # nothing before start()
    tracker.start()
    assert tracker.active_run is tracker.tracker and tracker.active_run.info.run_name == "baseline"
    tracker.store_init_configuration({"lr": 0.1})
    tracker.log({"loss": 0.5}, step=1)
    tracker.finish()
    reader = reader_of(tracker)
    assert reader.run.data.params == {"lr": "0.1"} and reader.metrics() == {"loss": {1: 0.5}}


def test_config_logged_after_start_adds_params_and_merges_config_json(tmp_path, reader_of):
    run = tracking_core.init(
        "late", log_with="mlflow", logging_dir=tmp_path, config={"lr": 0.1, "model": {"depth": 2}}, on_error="raise"
    )
    run.log({"loss": 1.0}, step=0)
    run.log_config({"batch_size": 32, "model": {"width": 64}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrackingWarning)
        run.log_config({"lr": 0.2})  # MLflow params are write-once: noted, not a crash
        report = run.finish()
    assert report.ok
    tracker = run.trackers[0]
    reader = reader_of(tracker)
    assert reader.run.data.params == {"lr": "0.1", "model/depth": "2", "model/width": "64", "batch_size": "32"}
    assert reader.json("config.json") == {"lr": 0.2, "model": {"depth": 2, "width": 64}, "batch_size": 32}
    assert any("param lr keeps its first value" in note for note in tracker.report_notes())


def test_per_rank_runs_are_named_and_tagged_by_rank(tmp_path, reader_of):
    from mlflow import MlflowClient

    trackers = []
    for rank in (0, 1):
        tracker = MLflowTracker("ranks", tmp_path, run_name="train")
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
        trackers.append(tracker)
    client = MlflowClient(tracking_uri=trackers[0].tracking_uri)
    runs = client.search_runs([trackers[0].tracker.info.experiment_id], "tags.`tracking.group` = 'job-1'")
    assert sorted((r.info.run_name, r.data.tags["tracking.rank"], r.data.metrics["loss"]) for r in runs) == [
        ("train-rank0", "0", 0.0),
        ("train-rank1", "1", 1.0),
    ]


def test_a_figure_is_always_png(tmp_path, reader_of):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 1), dpi=50)
    figure.add_subplot().plot([0, 1], [1, 0])
    tracker = _started(tmp_path, "figures")
    tracker.log_figure(figure, "plain")
    with pytest.warns(TrackingWarning, match="PNG"):
        tracker.log_figure(figure, "vector.svg", save_kwargs={"dpi": 100})  # mlflow.log_figure's own form
    tracker.log_figure(figure, "dir/kw.png", dpi=25)  # accelerate's **save_kwargs
    tracker.finish()
    reader = reader_of(tracker)
    assert sorted(reader.files()) == ["dir/kw.png", "plain.png", "vector.png"]
    from PIL import Image

    sizes = {}
    for name in ("plain.png", "vector.png", "dir/kw.png"):
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            with Image.open(reader.client.download_artifacts(reader.run_id, name, folder)) as image:
                assert image.format == "PNG"
                sizes[name] = image.size
    assert sizes == {"plain.png": (100, 50), "vector.png": (200, 100), "dir/kw.png": (50, 25)}


def test_histograms_are_the_summary_metrics(tmp_path, reader_of):
    run = tracking_core.init("hist", log_with="mlflow", logging_dir=tmp_path, on_error="raise")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrackingWarning)
        run.log_histogram("w", [1.0, 2.0, 3.0], step=4)
        assert run.finish().ok
    metrics = reader_of(run.trackers[0]).metrics()
    assert metrics["w/count"] == {4: 3.0} and metrics["w/mean"] == {4: 2.0}
    assert metrics["w/min"] == {4: 1.0} and metrics["w/max"] == {4: 3.0}


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
    run = tracking_core.init("img", log_with="mlflow", logging_dir=tmp_path, on_error="raise")
    run.log_images({"val/img": LAYOUTS[layout](rgb)}, step=3)
    assert run.finish().ok
    stored = run.trackers[0].read_back_images()["val/img"]
    expected = [rgb[..., 0]] if layout == "HW" else [rgb, rgb[::-1]] if layout.startswith("N") else [rgb]
    assert [step for step, _ in stored] == [3] * len(expected)
    for (_, image), want in zip(stored, expected):
        assert image.dtype == np.uint8 and image.shape == want.shape
        assert np.abs(image.astype(int) - want).max() <= 1


def test_random_float_chw_image_is_stored(tmp_path):
    tracker = _started(tmp_path, "chw-float")
    tracker.log_images({"noise": np.random.default_rng(0).random((3, 16, 24))}, step=0)
    tracker.finish()
    ((step, image),) = tracker.read_back_images()["noise"]
    assert step == 0 and image.shape == (16, 24, 3)


RANK_SCRIPT = r"""
import json, sys
from tracking_core import init

run = init("job", log_with="mlflow", logging_dir=sys.argv[2], per_rank=True)
run.log({"loss": float(sys.argv[1])}, step=0)
tracker = run.get_tracker("mlflow")
assert run.finish().ok
print(json.dumps({"uri": tracker.tracking_uri, "run_id": tracker.active_run_id, "group": tracker.run_context.group}))
"""


def test_per_rank_mode_end_to_end(tmp_path):
    import json
    import os
    import subprocess
    import sys

    from mlflow import MlflowClient

    processes = []
    for rank in range(2):
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": "2", "MASTER_PORT": "29642"}
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
    client = MlflowClient(tracking_uri=results[0]["uri"])
    runs = [client.get_run(result["run_id"]) for result in results]
    assert [(r.info.run_name, r.data.tags["tracking.group"], r.data.tags["tracking.rank"]) for r in runs] == [
        (f"{group}-rank0", group, "0"),
        (f"{group}-rank1", group, "1"),
    ]
    assert runs[0].info.experiment_id == runs[1].info.experiment_id
    assert [r.data.metrics["loss"] for r in runs] == [0.0, 1.0]
