"""SwanLabTracker against Accelerate's: signatures, direct synchronous use, the ``run`` attribute, and what
this package adds on top (images in every layout, config after start, per-rank runs).

Everything is read back with SwanLab's own record reader (:mod:`tracking_swanlab.reader`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import tracking_core
from tracking_core.adapters import image_list, to_hwc_uint8
from tracking_core.testing.ranks import launch_ranks, positional_signature
from tracking_core.tracker import RunContext
from tracking_swanlab import SwanLabTracker
from tracking_swanlab.reader import read_run

# accelerate 1.15.0, src/accelerate/tracking.py, class SwanLabTracker: each method's positional parameters
# (with defaults) and its ``**kwargs``. Keyword-only options of ours are allowed on top.
ACCELERATE_SIGNATURES = {
    "__init__": "self, run_name, **kwargs",
    "start": "self",
    "store_init_configuration": "self, values",
    "log": "self, values, step=None, **kwargs",
    "log_images": "self, values, step=None, **kwargs",
    "finish": "self",
}


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """CWD, HOME and SwanLab's root inside the test folder; no SwanLab variables from the outside."""
    for name in list(os.environ):
        if name.startswith("SWANLAB_"):
            monkeypatch.delenv(name)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SWANLAB_ROOT", str(tmp_path / "home" / ".swanlab"))
    return tmp_path


@pytest.mark.parametrize("method", sorted(ACCELERATE_SIGNATURES))
def test_signatures_match_accelerate(method: str):
    assert positional_signature(getattr(SwanLabTracker, method)) == ACCELERATE_SIGNATURES[method]


def test_class_attributes_match_accelerate():
    assert SwanLabTracker.name == "swanlab"
    assert SwanLabTracker.requires_logging_directory is False
    assert SwanLabTracker.main_process_only is False  # as Accelerate; the dispatcher runs it on rank 0 only


def test_direct_use_is_synchronous_as_in_accelerate(isolated: Path):
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


def test_managed_tracker_run_property_and_direct_calls(isolated: Path):
    """Through a dispatcher ``start()`` runs in the worker: ``run`` read right after init waits for it, and
    the tracker's own methods called from the script (as Accelerate users do) reach the run in order."""
    np = pytest.importorskip("numpy")
    run = tracking_core.init("managed", log_with="swanlab", logging_dir=isolated / "logs", on_error="raise")
    tracker = run.get_tracker("swanlab", unwrap=False)
    assert tracker.run is not None and tracker.run.alive
    tracker.store_init_configuration({"lr": 0.1})
    tracker.log({"loss": 0.5}, step=0)
    tracker.log_images({"picture": [np.zeros((4, 6, 3), np.uint8)]}, step=1)
    assert run.finish(timeout=120).ok
    data = read_run(tracker.run_dir)
    assert data.config == {"lr": 0.1} and data.scalars == {"loss": {0: 0.5}}
    assert [step for step, _ in tracker.read_back_images()["picture"]] == [1]


# -- images --------------------------------------------------------------------------------------------
def layouts():
    np = pytest.importorskip("numpy")
    image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(0)
    hwc = rng.integers(0, 256, size=(16, 24, 3), dtype=np.uint8)
    return {
        "hwc": hwc,
        "chw": hwc.transpose(2, 0, 1),
        "hw": hwc[..., 0],
        "hw1": hwc[..., :1],
        "rgba": np.concatenate([hwc, np.full((16, 24, 1), 128, np.uint8)], axis=-1),
        "float_chw": rng.random((3, 16, 24)),  # failed before the adapters: SwanLab clipped floats to black
        "nchw": np.stack([hwc.transpose(2, 0, 1)] * 2),
        "nhwc": np.stack([hwc, hwc[::-1], hwc[:, ::-1]]),
        "pil": image.fromarray(hwc),
        "pil_gray": image.fromarray(hwc[..., 0]),
    }


def test_every_image_layout_reads_back_pixel_for_pixel(isolated: Path):
    np = pytest.importorskip("numpy")
    images = layouts()
    tracker = SwanLabTracker("layouts", logging_dir=isolated / "logs")
    tracker.start()
    tracker.log_images(images, step=3)
    tracker.finish()
    stored = tracker.read_back_images()
    assert set(stored) == set(images)
    for key, value in images.items():
        expected = [to_hwc_uint8(item) for item in image_list(value)]
        assert [step for step, _ in stored[key]] == [3] * len(expected), key
        for (_, got), want in zip(stored[key], expected, strict=True):
            assert got.shape == want.shape and np.array_equal(got, want), key


def test_figure_is_stored_as_png_and_reads_back(isolated: Path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from tracking_core.adapters import figure_to_array

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


# -- config after start ---------------------------------------------------------------------------------
def test_config_logged_after_start_is_merged_and_a_changed_value_wins(isolated: Path):
    run = tracking_core.init(
        "late-config", log_with="swanlab", logging_dir=isolated / "logs", config={"lr": 0.1, "depth": 2}
    )
    tracker = run.get_tracker("swanlab", unwrap=False)
    run.log({"loss": 1.0}, step=0)
    run.log_config({"batch_size": 32, "lr": 0.05, "optimizer": {"name": "adam"}})
    assert run.finish(timeout=120).ok
    stored = read_run(tracker.run_dir).config
    assert stored == {"lr": 0.05, "depth": 2, "batch_size": 32, "optimizer": {"name": "adam"}}


# -- per-rank runs ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [None, "baseline"])
def test_per_rank_runs_are_named_by_rank_and_grouped(isolated: Path, name: str | None):
    logging_dir = isolated / "logs"
    folders = []
    for rank in (0, 1):
        tracker = SwanLabTracker("ranks", logging_dir=logging_dir, **({"experiment_name": name} if name else {}))
        tracker.run_context = RunContext(
            "ranks", "job-7", logging_dir / "ranks" / "job-7", logging_dir, rank=rank, world_size=2, group="job-7"
        )
        tracker.start()
        tracker.log({"loss": float(rank)}, step=0)
        tracker.finish()
        folders.append(tracker.run_dir)
    runs = [read_run(folder) for folder in folders]
    base = name or "job-7"
    assert folders[0] != folders[1]
    assert [(data.name, data.group) for data in runs] == [(f"{base}-rank0", "job-7"), (f"{base}-rank1", "job-7")]
    assert [data.scalars["loss"][0] for data in runs] == [0.0, 1.0]


RANK_SCRIPT = r"""
import json, sys, tracking_core
run = tracking_core.init("ranked", log_with="swanlab", logging_dir=sys.argv[1], per_rank=True, on_error="raise")
tracker = run.get_tracker("swanlab", unwrap=False)
run.log({"loss": float(tracker.run_context.rank)}, step=0)
assert run.finish(timeout=120).ok
print(json.dumps({"run_dir": str(tracker.run_dir), "group": tracker.run_context.group}))
"""


def test_per_rank_dispatchers_in_two_processes_give_two_grouped_runs(isolated: Path):
    results = launch_ranks(RANK_SCRIPT, str(isolated / "logs"), port=29633, cwd=isolated / "work")
    (group,) = {result["group"] for result in results}
    runs = [read_run(result["run_dir"]) for result in results]
    assert [(data.name, data.group) for data in runs] == [(f"{group}-rank0", group), (f"{group}-rank1", group)]
    assert [data.scalars["loss"] for data in runs] == [{0: 0.0}, {0: 1.0}]
