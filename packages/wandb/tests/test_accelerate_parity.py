"""WandBTracker against Accelerate's: the shared suite (``tracking_core.testing.accelerate_parity``) plus what
only W&B has (its default folder, figures as PNG, W&B histograms, a group the user chose, a run name per rank).

Every check reads the run back from its ``.wandb`` transaction log or the PNGs W&B wrote.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tracking_core
from tracking_core import RunContext
from tracking_core.testing.accelerate_parity import AccelerateParity
from tracking_wandb import WandBTracker
from tracking_wandb.reader import read_run


class TestWandBAccelerateParity(AccelerateParity):
    backend_name = "wandb"
    # accelerate 1.15.0, src/accelerate/tracking.py, class WandBTracker: each method's positional parameters
    # (with defaults) and its ``**kwargs``. Keyword-only options of ours are allowed on top.
    accelerate_signatures = {
        "__init__": "self, run_name, **kwargs",
        "start": "self",
        "store_init_configuration": "self, values",
        "log": "self, values, step=None, **kwargs",
        "log_images": "self, values, step=None, **kwargs",
        "log_table": "self, table_name, columns=None, data=None, dataframe=None, step=None, **kwargs",
        "finish": "self",
    }
    sdk_attributes = ("tracker", "run")
    accelerate_requires_logging_directory = False
    accelerate_main_process_only = False  # as Accelerate; the dispatcher runs it on rank 0 only
    image_layouts_extra = True
    rank_port = 29631
    unset_env = ("WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE", "WANDB_MODE", "WANDB_PROJECT", "WANDB_NAME")
    rank_unset_env = ("WANDB_",)

    def env(self, tmp_path):
        return {"HOME": str(tmp_path / "home")}

    def read_metrics(self, tracker):
        return read_run(tracker.run_dir).metrics()

    def read_config(self, tracker):
        return read_run(tracker.run_dir).user_config()

    def run_names(self, trackers):
        return [read_run(tracker.run_dir).run.display_name for tracker in trackers]


@pytest.fixture(autouse=True)
def _no_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for variable in ("WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE", "WANDB_MODE", "WANDB_PROJECT", "WANDB_NAME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


def test_direct_use_without_logging_dir_writes_wandbs_default_folder(tmp_path: Path):
    tracker = WandBTracker("direct")  # no logging_dir: W&B's own default, ./wandb
    tracker.start()
    assert tracker.run.project == "direct"
    tracker.log({"loss": 0.5}, step=0)
    tracker.finish()
    # ./wandb of the directory W&B was first set up in (it keeps its process settings): not under logging_dir
    assert tracker.run_dir.parent.name == "wandb" and tracker.run_dir.parent.parent.name in (tmp_path.name, "work")
    assert read_run(tracker.run_dir).metrics() == {"loss": {0: 0.5}}


# -- images --------------------------------------------------------------------------------------------
def test_figure_is_stored_as_png_and_reads_back(tmp_path: Path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from tracking_core.kit import figure_to_array

    figure = Figure(figsize=(2, 1), dpi=50)
    figure.add_subplot().plot([0, 1], [1, 0])
    tracker = WandBTracker("figure", logging_dir=tmp_path / "logs")
    tracker.start()
    tracker.log_figure(figure, "curve", step=2, format="svg")  # a format given for savefig is still PNG
    tracker.finish()
    [(step, pixels)] = tracker.read_back_images()["curve"]
    assert step == 2 and pixels.shape == figure_to_array(figure).shape == (50, 100, 4)
    stored = read_run(tracker.run_dir).of_type("image-file")["curve"][2]
    assert stored["format"] == "png" and stored["path"].endswith(".png")


# -- histograms -----------------------------------------------------------------------------------------
def test_histogram_is_a_wandb_histogram_with_the_same_bins(tmp_path: Path):
    run = tracking_core.init("hist", log_with="wandb", logging_dir=tmp_path / "logs", on_error="raise")
    tracker = run.get_tracker("wandb", unwrap=False)
    run.log_histogram("weights", counts=[1, 3, 2], edges=[0.0, 0.5, 1.0, 1.5], step=4)
    run.log_histogram("grads", [0.1, 0.2, 0.2, 0.9], bins=4, step=5)
    assert run.finish(timeout=120).ok
    stored = read_run(tracker.run_dir).of_type("histogram")
    assert stored["weights"][4]["bins"] == [0.0, 0.5, 1.0, 1.5] and stored["weights"][4]["values"] == [1, 3, 2]
    assert sum(stored["grads"][5]["values"]) == 4 and len(stored["grads"][5]["bins"]) == 5
    assert "weights/count" not in read_run(tracker.run_dir).metrics()  # not the summary fallback


# -- per-rank runs ---------------------------------------------------------------------------------------
def test_per_rank_runs_keep_a_chosen_name_and_join_the_jobs_group(tmp_path: Path):
    logging_dir = tmp_path / "logs"
    trackers = []
    for rank in (0, 1):
        tracker = WandBTracker("ranks", logging_dir=logging_dir, name="baseline")
        tracker.run_context = RunContext(
            "ranks", "job-7", logging_dir / "ranks" / "job-7", logging_dir, rank=rank, world_size=2, group="job-7"
        )
        tracker.start()
        tracker.log({"loss": float(rank)}, step=0)
        trackers.append(tracker)
    for tracker in trackers:
        tracker.finish()
    runs = [read_run(tracker.run_dir) for tracker in trackers]
    assert runs[0].directory != runs[1].directory and runs[0].run.run_id != runs[1].run.run_id
    assert [stored.run.display_name for stored in runs] == ["baseline-rank0", "baseline-rank1"]
    assert [stored.run.run_group for stored in runs] == ["job-7", "job-7"]


def test_a_group_the_user_chose_wins(tmp_path: Path):
    logging_dir = tmp_path / "logs"
    tracker = WandBTracker("ranks", logging_dir=logging_dir, group="mine")
    tracker.run_context = RunContext("ranks", "job-8", logging_dir, logging_dir, rank=1, world_size=2, group="job-8")
    tracker.start()
    tracker.finish()
    stored = read_run(tracker.run_dir)
    assert stored.run.run_group == "mine" and stored.run.display_name == "job-8-rank1"
