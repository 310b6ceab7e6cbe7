"""TrackioTracker against Accelerate's: the shared suite (``tracking_core.testing.accelerate_parity``) plus what
only Trackio has (``**kwargs`` to its ``log``, NHWC batches as numbered keys, figures as PNG, Trackio histograms,
its config write batches, the ``_Group`` of per-rank runs).

Everything is read back from Trackio's project database and media folder under ``logging_dir``.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import tracking_core
from tracking_core import RunContext
from tracking_core.testing.accelerate_parity import AccelerateParity
from tracking_core.testing.images import assert_read_back, expected_images, image_layouts
from tracking_trackio import TrackioTracker
from tracking_trackio.older import before_v0_24 as legacy

from .test_contract import as_stored, keeps_no_config, read_config, read_rows, read_run_rows, trackio_db

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class TestTrackioAccelerateParity(AccelerateParity):
    backend_name = "trackio"
    # accelerate 1.15.0, src/accelerate/tracking.py, class TrackioTracker: each method's positional parameters
    # (with defaults) and its ``**kwargs``. Keyword-only options of ours are allowed on top.
    accelerate_signatures = {
        "__init__": "self, run_name, **kwargs",
        "start": "self",
        "store_init_configuration": "self, values",
        "log": "self, values, step=None, **kwargs",
        "finish": "self",
    }
    sdk_attributes = ("tracker", "run")
    accelerate_requires_logging_directory = False
    accelerate_main_process_only = False  # as Accelerate; the dispatcher runs it on rank 0 only
    rank_port = 29632
    unset_env = ("TRACKIO_",)

    def env(self, tmp_path):
        return {"HOME": str(tmp_path / "home")}

    def test_every_image_layout_reads_back_pixel_for_pixel(self, tmp_path):
        np = pytest.importorskip("numpy")
        if not hasattr(__import__("trackio"), "Image"):
            pytest.skip("trackio before 0.2.8 has no images (test_trackio checks the note)")
        images = image_layouts(extra=bool(self.image_layouts_extra))
        tracker = self.direct_tracker(tmp_path, "layouts")
        tracker.start()
        tracker.log_images(images, step=3)
        tracker.finish()
        if legacy.RGBA_NOTE not in tracker.report_notes():
            assert_read_back(tracker.read_back_images(), images, step=3)
            return
        # trackio 0.2.8 to 0.3.3 store every image as RGBA: the same pixels with an opaque alpha channel
        from PIL import Image

        def rgba(picture):
            return np.asarray(
                Image.fromarray(picture[..., 0] if picture.shape[-1:] == (1,) else picture).convert("RGBA")
            )

        as_rgba = {key: [rgba(picture) for picture in expected_images(value)] for key, value in images.items()}
        assert_read_back(tracker.read_back_images(), as_rgba, step=3)

    def read_config(self, tracker):
        if keeps_no_config(tracker.report_notes()):
            raise NotImplementedError("this trackio release keeps no run config")  # the suite skips the check
        return read_config(Path(tracker.logging_dir), tracker.run_name)

    def run_names(self, trackers):
        return [tracker.run.name for tracker in trackers]


def test_log_kwargs_go_to_the_sdk_as_in_accelerate(tmp_path: Path):
    """Accelerate passes ``**kwargs`` on to ``run.log``; Trackio takes none, so an unknown one is its error."""
    tracker = TrackioTracker("kwargs", logging_dir=tmp_path / "runs")
    tracker.start()
    try:
        with pytest.raises(TypeError, match="unexpected keyword"):
            tracker.log({"loss": 0.5}, step=0, commit=True)
    finally:
        tracker.finish()


def test_a_batch_is_stored_as_numbered_keys(tmp_path: Path):
    pytest.importorskip("numpy")
    if not hasattr(__import__("trackio"), "Image"):
        pytest.skip("trackio before 0.2.8 has no images (test_trackio checks the note)")
    tracker = TrackioTracker("layouts", logging_dir=tmp_path / "runs")
    tracker.start()
    tracker.log_images({"nhwc": image_layouts(with_pil=False)["nhwc"]}, step=3)
    tracker.finish()
    assert [key for _, row in read_rows(tmp_path / "runs", "layouts") for key in row] == ["nhwc", "nhwc/1", "nhwc/2"]


def test_figure_is_stored_as_png_and_reads_back(tmp_path: Path):
    matplotlib = pytest.importorskip("matplotlib")
    if not hasattr(__import__("trackio"), "Image"):
        pytest.skip("trackio before 0.2.8 has no images (test_trackio checks the note)")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from tracking_core.kit import figure_to_array

    figure = Figure(figsize=(2, 1), dpi=50)
    figure.add_subplot().plot([0, 1], [1, 0])
    tracker = TrackioTracker("figure", logging_dir=tmp_path / "runs")
    tracker.start()
    tracker.log_figure(figure, "curve", step=2, format="svg")  # a format given for savefig is still PNG
    tracker.finish()
    [(step, pixels)] = tracker.read_back_images()["curve"]
    assert step == 2 and pixels.shape == figure_to_array(figure).shape == (50, 100, 4)


# -- histograms -----------------------------------------------------------------------------------------
def test_histogram_is_a_trackio_histogram_with_the_same_bins(tmp_path: Path):
    run = tracking_core.init("hist", log_with="trackio", logging_dir=tmp_path / "runs", on_error="raise")
    run.log_histogram("weights", counts=[1, 3, 2], edges=[0.0, 0.5, 1.0, 1.5], step=4)
    run.log_histogram("grads", [0.1, 0.2, 0.2, 0.9], bins=4, step=5)
    report = run.finish(timeout=120)
    assert report.ok
    values = {key: (step, value) for step, row in read_rows(tmp_path / "runs", "hist") for key, value in row.items()}
    if not hasattr(__import__("trackio"), "Histogram"):  # Trackio 0.5: the summary, with one note saying why
        weights_at, grads_at = as_stored([4, 5])
        assert values["weights/count"] == (weights_at, 6) and values["grads/max"] == (grads_at, 0.9)
        assert sum("no trackio.Histogram" in note for note in report.backends["trackio"].notes) == 1, str(report)
        return
    assert values["weights"] == (4, {"_type": "trackio.histogram", "bins": [0.0, 0.5, 1.0, 1.5], "values": [1, 3, 2]})
    step, grads = values["grads"]
    assert step == 5 and sum(grads["values"]) == 4 and len(grads["bins"]) == 5
    assert "weights/count" not in values  # not the summary fallback


# -- config after start ---------------------------------------------------------------------------------
@pytest.mark.parametrize("then_log", [True, False], ids=["then-log", "then-finish"])
def test_the_merged_config_is_stored_whatever_trackio_batches(tmp_path: Path, then_log: bool):
    """Trackio keeps the first config of a write batch: the merged one must still be what is stored."""
    run = tracking_core.init(
        "late-config", log_with="trackio", logging_dir=tmp_path / "runs", config={"lr": 0.1, "depth": 2}
    )
    run.log({"loss": 1.0}, step=0)
    run.log_config({"batch_size": 32, "lr": 0.05, "optimizer": {"name": "adam"}})
    if then_log:
        run.log({"loss": 0.5}, step=1)
    report = run.finish(timeout=120)
    assert report.ok
    if keeps_no_config(report.backends["trackio"].notes):
        return
    stored = {k: v for k, v in read_config(tmp_path / "runs", "late-config").items() if not k.startswith("_")}
    assert stored == {"lr": 0.05, "depth": 2, "batch_size": 32, "optimizer": {"name": "adam"}}


# -- per-rank runs ---------------------------------------------------------------------------------------
def test_per_rank_runs_keep_a_chosen_name_and_join_the_jobs_group(tmp_path: Path):
    logging_dir = tmp_path / "runs"
    trackers = []
    for rank in (0, 1):
        tracker = TrackioTracker("ranks", logging_dir=logging_dir, name="baseline")
        tracker.run_context = RunContext(
            "ranks", "job-7", logging_dir / "ranks" / "job-7", logging_dir, rank=rank, world_size=2, group="job-7"
        )
        tracker.start()
        tracker.log({"loss": float(rank)}, step=0)
        trackers.append(tracker)
    for tracker in trackers:
        tracker.finish()
    # sorted: the two runs' writer threads may store their rows in either order (Trackio < 0.24)
    assert sorted(
        ((run, values) for run, _, values in read_run_rows(logging_dir, "ranks")), key=lambda row: row[0]
    ) == [
        ("baseline-rank0", {"loss": 0.0}),
        ("baseline-rank1", {"loss": 1.0}),
    ]
    if [note for tracker in trackers for note in tracker.report_notes() if "has no run groups" in note]:
        # trackio before 0.5: each rank's run says so in its report
        assert [sum("has no run groups" in note for note in tracker.report_notes()) for tracker in trackers] == [1, 1]
        return
    with sqlite3.connect(trackio_db(logging_dir, "ranks")) as connection:
        configs = connection.execute("SELECT run_name, config FROM configs ORDER BY id").fetchall()
    connection.close()
    assert sorted((run, json.loads(config)["_Group"]) for run, config in configs) == [
        ("baseline-rank0", "job-7"),
        ("baseline-rank1", "job-7"),
    ]
