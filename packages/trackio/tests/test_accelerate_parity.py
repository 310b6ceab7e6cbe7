"""TrackioTracker against Accelerate's: signatures, direct synchronous use, the ``run`` attribute, and what
this package adds on top (images in every layout, histograms, config after start, per-rank runs).

Everything is read back from Trackio's project database and media folder under ``logging_dir``.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import tracking_core
from tracking_core.testing.images import assert_read_back, image_layouts
from tracking_core.testing.ranks import launch_ranks, positional_signature
from tracking_core.tracker import RunContext
from tracking_trackio import TrackioTracker

from .test_contract import read_config, read_rows, trackio_db

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# accelerate 1.15.0, src/accelerate/tracking.py, class TrackioTracker: each method's positional parameters
# (with defaults) and its ``**kwargs``. Keyword-only options of ours are allowed on top.
ACCELERATE_SIGNATURES = {
    "__init__": "self, run_name, **kwargs",
    "start": "self",
    "store_init_configuration": "self, values",
    "log": "self, values, step=None, **kwargs",
    "finish": "self",
}


@pytest.mark.parametrize("method", sorted(ACCELERATE_SIGNATURES))
def test_signatures_match_accelerate(method: str):
    assert positional_signature(getattr(TrackioTracker, method)) == ACCELERATE_SIGNATURES[method]


def test_class_attributes_match_accelerate():
    assert TrackioTracker.name == "trackio"
    assert TrackioTracker.requires_logging_directory is False
    assert TrackioTracker.main_process_only is False  # as Accelerate; the dispatcher runs it on rank 0 only


def test_direct_use_is_synchronous_as_in_accelerate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """No dispatcher, no logging_dir, Accelerate's calls in Accelerate's order (Trackio's own TRACKIO_DIR)."""
    monkeypatch.setenv("TRACKIO_DIR", str(tmp_path / "store"))
    tracker = TrackioTracker("direct")
    assert tracker.run is None and tracker.tracker is None
    tracker.start()
    assert tracker.run is tracker.tracker and tracker.run.project == "direct"
    tracker.store_init_configuration({"lr": 0.1})
    tracker.log({"loss": 0.5}, step=0)
    tracker.log({"loss": 0.25}, step=1)
    tracker.finish()
    assert tracker.storage_dir == tmp_path / "store"
    with sqlite3.connect(tmp_path / "store" / "direct.db") as connection:
        rows = connection.execute("SELECT step, metrics FROM metrics ORDER BY id").fetchall()
        [(config,)] = connection.execute("SELECT config FROM configs").fetchall()
    connection.close()
    assert [(step, json.loads(metrics)) for step, metrics in rows] == [(0, {"loss": 0.5}), (1, {"loss": 0.25})]
    assert json.loads(config)["lr"] == 0.1


def test_log_kwargs_go_to_the_sdk_as_in_accelerate(tmp_path: Path):
    """Accelerate passes ``**kwargs`` on to ``run.log``; Trackio takes none, so an unknown one is its error."""
    tracker = TrackioTracker("kwargs", logging_dir=tmp_path / "runs")
    tracker.start()
    try:
        with pytest.raises(TypeError, match="unexpected keyword"):
            tracker.log({"loss": 0.5}, step=0, commit=True)
    finally:
        tracker.finish()


def test_managed_tracker_run_property_and_direct_calls(tmp_path: Path):
    """Through a dispatcher ``start()`` runs in the worker: ``run`` read right after init waits for it, and
    the tracker's own methods called from the script (as Accelerate users do) reach the run in order."""
    np = pytest.importorskip("numpy")
    run = tracking_core.init("managed", log_with="trackio", logging_dir=tmp_path / "runs", on_error="raise")
    tracker = run.get_tracker("trackio", unwrap=False)
    assert tracker.run is not None and tracker.run.project == "managed"
    tracker.store_init_configuration({"lr": 0.1})
    tracker.log({"loss": 0.5}, step=0)
    tracker.log_images({"picture": [np.zeros((4, 6, 3), np.uint8)]}, step=1)
    assert run.finish(timeout=120).ok
    assert read_config(tmp_path / "runs", "managed")["lr"] == 0.1
    assert tracker.read_back_metrics() == {"loss": {0: 0.5}}
    assert [step for step, _ in tracker.read_back_images()["picture"]] == [1]


# -- images --------------------------------------------------------------------------------------------
def test_every_image_layout_reads_back_pixel_for_pixel(tmp_path: Path):
    pytest.importorskip("numpy")
    pytest.importorskip("PIL")
    images = image_layouts()
    tracker = TrackioTracker("layouts", logging_dir=tmp_path / "runs")
    tracker.start()
    tracker.log_images(images, step=3)
    tracker.finish()
    assert_read_back(tracker.read_back_images(), images, step=3)
    assert [key for _, row in read_rows(tmp_path / "runs", "layouts") for key in row if key.startswith("nhwc")] == [
        "nhwc",
        "nhwc/1",
        "nhwc/2",
    ]


def test_figure_is_stored_as_png_and_reads_back(tmp_path: Path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from tracking_core.adapters import figure_to_array

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
        assert values["weights/count"] == (4, 6) and values["grads/max"] == (5, 0.9)
        assert sum("no trackio.Histogram" in note for note in report.backends["trackio"].notes) == 1, str(report)
        return
    assert values["weights"] == (4, {"_type": "trackio.histogram", "bins": [0.0, 0.5, 1.0, 1.5], "values": [1, 3, 2]})
    step, grads = values["grads"]
    assert step == 5 and sum(grads["values"]) == 4 and len(grads["bins"]) == 5
    assert "weights/count" not in values  # not the summary fallback


# -- config after start ---------------------------------------------------------------------------------
@pytest.mark.parametrize("then_log", [True, False], ids=["then-log", "then-finish"])
def test_config_logged_after_start_is_merged_and_a_changed_value_wins(tmp_path: Path, then_log: bool):
    """Trackio keeps the first config of a write batch: the merged one must still be what is stored."""
    run = tracking_core.init(
        "late-config", log_with="trackio", logging_dir=tmp_path / "runs", config={"lr": 0.1, "depth": 2}
    )
    run.log({"loss": 1.0}, step=0)
    run.log_config({"batch_size": 32, "lr": 0.05, "optimizer": {"name": "adam"}})
    if then_log:
        run.log({"loss": 0.5}, step=1)
    assert run.finish(timeout=120).ok
    stored = {k: v for k, v in read_config(tmp_path / "runs", "late-config").items() if not k.startswith("_")}
    assert stored == {"lr": 0.05, "depth": 2, "batch_size": 32, "optimizer": {"name": "adam"}}


# -- per-rank runs ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [None, "baseline"])
def test_per_rank_runs_are_named_by_rank_and_grouped(tmp_path: Path, name: str | None):
    logging_dir = tmp_path / "runs"
    trackers = []
    for rank in (0, 1):
        tracker = TrackioTracker("ranks", logging_dir=logging_dir, **({"name": name} if name else {}))
        tracker.run_context = RunContext(
            "ranks", "job-7", logging_dir / "ranks" / "job-7", logging_dir, rank=rank, world_size=2, group="job-7"
        )
        tracker.start()
        tracker.log({"loss": float(rank)}, step=0)
        trackers.append(tracker)
    for tracker in trackers:
        tracker.finish()
    with sqlite3.connect(trackio_db(logging_dir, "ranks")) as connection:
        configs = connection.execute("SELECT run_name, config FROM configs ORDER BY id").fetchall()
        metrics = connection.execute("SELECT run_name, metrics FROM metrics ORDER BY id").fetchall()
    connection.close()
    base = name or "job-7"
    # sorted: the two runs' writer threads may store their rows in either order (Trackio < 0.24)
    assert sorted((run, json.loads(config)["_Group"]) for run, config in configs) == [
        (f"{base}-rank0", "job-7"),
        (f"{base}-rank1", "job-7"),
    ]
    assert sorted(((run, json.loads(values)) for run, values in metrics), key=lambda row: row[0]) == [
        (f"{base}-rank0", {"loss": 0.0}),
        (f"{base}-rank1", {"loss": 1.0}),
    ]


RANK_SCRIPT = r"""
import json, sys, tracking_core
run = tracking_core.init("ranked", log_with="trackio", logging_dir=sys.argv[1], per_rank=True, on_error="raise")
tracker = run.get_tracker("trackio", unwrap=False)
run.log({"loss": float(tracker.run_context.rank)}, step=0)
assert run.finish(timeout=300).ok  # a cold `import trackio` before 0.24 imports gradio
print(json.dumps({"name": tracker.run.name, "group": tracker.run_context.group}))
"""


def test_per_rank_dispatchers_in_two_processes_give_two_grouped_runs(tmp_path: Path):
    results = launch_ranks(
        RANK_SCRIPT,
        str(tmp_path / "runs"),
        port=29632,
        cwd=tmp_path,
        drop_env=["TRACKIO_"],
        env={"HOME": str(tmp_path / "home")},
    )
    (group,) = {result["group"] for result in results}
    assert [result["name"] for result in results] == [f"{group}-rank0", f"{group}-rank1"]
    with sqlite3.connect(trackio_db(tmp_path / "runs", "ranked")) as connection:
        configs = dict(connection.execute("SELECT run_name, config FROM configs").fetchall())
        metrics = dict(connection.execute("SELECT run_name, metrics FROM metrics").fetchall())
    connection.close()
    assert {name: json.loads(config)["_Group"] for name, config in configs.items()} == {
        f"{group}-rank0": group,
        f"{group}-rank1": group,
    }
    assert {name: json.loads(values) for name, values in metrics.items()} == {
        f"{group}-rank0": {"loss": 0.0},
        f"{group}-rank1": {"loss": 1.0},
    }
