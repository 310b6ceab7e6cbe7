"""SwanLabTracker against Accelerate's: the shared suite (``tracking_core.testing.accelerate_parity``) plus what
only SwanLab has (its default ./swanlog folder, a run kept after finish, figures as PNG, no histogram type,
the experiment name and group of per-rank runs).

Everything is read back with SwanLab's own record reader (:mod:`tracking_swanlab.reader`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tracking_core
from tracking_core import RunContext
from tracking_core.testing.accelerate_parity import AccelerateParity
from tracking_swanlab import SwanLabTracker
from tracking_swanlab.older import v0_6_2
from tracking_swanlab.reader import read_run

from .conftest import isolate


class TestSwanLabAccelerateParity(AccelerateParity):
    backend_name = "swanlab"
    # accelerate 1.15.0, src/accelerate/tracking.py, class SwanLabTracker: each method's positional parameters
    # (with defaults) and its ``**kwargs``. Keyword-only options of ours are allowed on top.
    accelerate_signatures = {
        "__init__": "self, run_name, **kwargs",
        "start": "self",
        "store_init_configuration": "self, values",
        "log": "self, values, step=None, **kwargs",
        "log_images": "self, values, step=None, **kwargs",
        "finish": "self",
    }
    sdk_attributes = ("tracker", "run")
    accelerate_requires_logging_directory = False
    accelerate_main_process_only = False  # as Accelerate; the dispatcher runs it on rank 0 only
    rank_port = 29633
    unset_env = ("SWANLAB_",)

    def env(self, tmp_path):
        return {"HOME": str(tmp_path / "home"), "SWANLAB_ROOT": str(tmp_path / "home" / ".swanlab")}

    def read_metrics(self, tracker):
        return read_run(tracker.run_dir).scalars

    def read_config(self, tracker):
        return read_run(tracker.run_dir).config

    def run_names(self, trackers):
        return [read_run(tracker.run_dir).name for tracker in trackers]


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """CWD, HOME and SwanLab's root inside the test folder; no SwanLab variables from the outside."""
    return isolate(monkeypatch, tmp_path, cwd=tmp_path / "work")


def test_direct_use_writes_swanlabs_default_folder_and_keeps_the_run(isolated: Path):
    """No dispatcher, no logging_dir (SwanLab's own ./swanlog), Accelerate's calls in Accelerate's order."""
    tracker = SwanLabTracker("direct")
    assert tracker.run is None and tracker.tracker is None
    tracker.start()
    assert tracker.run is tracker.tracker and tracker.run.alive
    tracker.store_init_configuration({"lr": 0.1})
    tracker.log({"loss": 0.5}, step=0)
    tracker.log({"loss": 0.25}, step=1)
    tracker.finish()
    assert tracker.run is not None and not tracker.run.alive  # kept after finish, as Accelerate's
    assert tracker.run_dir.parent == isolated / "work" / "swanlog"
    data = read_run(tracker.run_dir)
    assert data.finished and data.project == "direct"
    assert data.config == {"lr": 0.1} and data.scalars == {"loss": {0: 0.5, 1: 0.25}}


def test_figure_is_stored_as_png_and_reads_back(isolated: Path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from tracking_core.kit import figure_to_array

    figure = Figure(figsize=(2, 1), dpi=50)
    figure.add_subplot().plot([0, 1], [1, 0])
    tracker = SwanLabTracker("figure", logging_dir=isolated / "logs")
    tracker.start()
    tracker.log_figure(figure, "curve", step=2, format="jpg")  # a format given for savefig is still PNG
    tracker.finish()
    [(step, pixels)] = tracker.read_back_images()["curve"]
    assert step == 2 and pixels.shape == figure_to_array(figure).shape == (50, 100, 4)
    [point] = read_run(tracker.run_dir).media["curve"]
    assert point.files[0].read_bytes().startswith(b"\x89PNG")


# -- histograms: SwanLab has no histogram type, so the contract's summary is what is stored ------------------
def test_histogram_falls_back_to_summary_metrics(isolated: Path):
    run = tracking_core.init("hist", log_with="swanlab", logging_dir=isolated / "logs", on_error="raise")
    tracker = run.get_tracker("swanlab", unwrap=False)
    with pytest.warns(tracking_core.TrackingWarning, match="histogram"):
        run.log_histogram("weights", [1.0, 2.0, 3.0], step=4)
        assert run.finish(timeout=120).ok
    scalars = read_run(tracker.run_dir).scalars
    assert scalars["weights/count"] == {4: 3} and scalars["weights/mean"] == {4: 2.0}


# -- per-rank runs ---------------------------------------------------------------------------------------
def test_per_rank_runs_keep_a_chosen_experiment_name_and_join_the_jobs_group(isolated: Path):
    logging_dir = isolated / "logs"
    folders = []
    for rank in (0, 1):
        tracker = SwanLabTracker("ranks", logging_dir=logging_dir, experiment_name="baseline")
        tracker.run_context = RunContext(
            "ranks", "job-7", logging_dir / "ranks" / "job-7", logging_dir, rank=rank, world_size=2, group="job-7"
        )
        tracker.start()
        tracker.log({"loss": float(rank)}, step=0)
        tracker.finish()
        folders.append(tracker.run_dir)
    runs = [read_run(folder) for folder in folders]
    assert folders[0] != folders[1]
    group = "" if v0_6_2.in_use() else "job-7"  # SwanLab before 0.8 keeps no group in an offline run
    assert [(data.name, data.group) for data in runs] == [("baseline-rank0", group), ("baseline-rank1", group)]
    if v0_6_2.in_use():
        assert any("told apart by their names" in note for note in tracker.report_notes()), tracker.report_notes()
