"""MLflowTracker against Accelerate's: the shared suite (``tracking_core.testing.accelerate_parity``) plus what
only MLflow has (params stringified and write-once, per-rank runs found by tag, figures always PNG, histograms
as summary metrics, any float CHW image)."""

from __future__ import annotations

import warnings

import pytest
import tracking_core
from tracking_core import TrackingWarning
from tracking_core.testing.accelerate_parity import AccelerateParity
from tracking_core.testing.ranks import per_rank_context
from tracking_mlflow import MLflowTracker

from .conftest import Reader

np = pytest.importorskip("numpy")


class TestMLflowAccelerateParity(AccelerateParity):
    backend_name = "mlflow"
    #: accelerate 1.15 ``accelerate/tracking.py``, class MLflowTracker: each method's positional parameters (ours
    #: may add positional ones after them, and keyword options); ``log_figure`` also takes ``**save_kwargs``
    accelerate_signatures = {
        "__init__": "self, experiment_name, logging_dir, run_id, tags, nested_run, run_name, description",
        "start": "self",
        "store_init_configuration": "self, values",
        "log": "self, values, step",
        "log_figure": "self, figure, artifact_file, **save_kwargs",
        "log_artifacts": "self, local_dir, artifact_path",
        "log_artifact": "self, local_path, artifact_path",
        "finish": "self",
    }
    exact_signatures = False
    sdk_attributes = ("tracker", "active_run")
    rank_port = 29642

    def read_metrics(self, tracker):
        return Reader.of(tracker).metrics()

    def read_config(self, tracker):
        return Reader.of(tracker).json("config.json")

    def run_names(self, trackers):
        return [Reader.of(tracker).run.info.run_name for tracker in trackers]


def _started(tmp_path, *args, **kwargs) -> MLflowTracker:
    tracker = MLflowTracker(*args, logging_dir=tmp_path, **kwargs)
    tracker.start()
    return tracker


def test_params_are_stringified_as_accelerate_logs_them(tmp_path, reader_of):
    tracker = MLflowTracker("exp", tmp_path, run_name="baseline")
    tracker.start()
    assert tracker.active_run.info.run_name == "baseline"
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
        tracker.run_context = per_rank_context(tmp_path, "ranks", "job-1", rank)
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


def test_random_float_chw_image_is_stored(tmp_path):
    tracker = _started(tmp_path, "chw-float")
    tracker.log_images({"noise": np.random.default_rng(0).random((3, 16, 24))}, step=0)
    tracker.finish()
    ((step, image),) = tracker.read_back_images()["noise"]
    assert step == 0 and image.shape == (16, 24, 3)
