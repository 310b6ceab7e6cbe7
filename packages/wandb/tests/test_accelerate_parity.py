"""WandBTracker against Accelerate's: signatures, direct synchronous use, the ``run`` attribute, and what
this package adds on top (images in every layout, histograms, config after start, per-rank runs).

Every check reads the run back from its ``.wandb`` transaction log or the PNGs W&B wrote.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tracking_core
from tracking_core.adapters import to_hwc_uint8
from tracking_core.testing.ranks import launch_ranks, positional_signature
from tracking_core.tracker import RunContext
from tracking_wandb import WandBTracker
from tracking_wandb.transaction_log import read_run

# accelerate 1.15.0, src/accelerate/tracking.py, class WandBTracker: each method's positional parameters
# (with defaults) and its ``**kwargs``. Keyword-only options of ours are allowed on top.
ACCELERATE_SIGNATURES = {
    "__init__": "self, run_name, **kwargs",
    "start": "self",
    "store_init_configuration": "self, values",
    "log": "self, values, step=None, **kwargs",
    "log_images": "self, values, step=None, **kwargs",
    "log_table": "self, table_name, columns=None, data=None, dataframe=None, step=None, **kwargs",
    "finish": "self",
}


@pytest.fixture(autouse=True)
def _no_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for variable in ("WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE", "WANDB_MODE", "WANDB_PROJECT", "WANDB_NAME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("method", sorted(ACCELERATE_SIGNATURES))
def test_signatures_match_accelerate(method: str):
    assert positional_signature(getattr(WandBTracker, method)) == ACCELERATE_SIGNATURES[method]


def test_class_attributes_match_accelerate():
    assert WandBTracker.name == "wandb"
    assert WandBTracker.requires_logging_directory is False
    assert WandBTracker.main_process_only is False  # as Accelerate; the dispatcher runs it on rank 0 only


def test_direct_use_is_synchronous_as_in_accelerate(tmp_path: Path):
    """No dispatcher, Accelerate's calls in Accelerate's order: everything is in the run when they return."""
    tracker = WandBTracker("direct")  # no logging_dir: W&B's own default, ./wandb
    assert tracker.run is None and tracker.tracker is None
    tracker.start()
    assert tracker.run is tracker.tracker and tracker.run.project == "direct"
    tracker.store_init_configuration({"lr": 0.1})
    tracker.log({"loss": 0.5}, step=0)
    tracker.log({"loss": 0.25}, step=1)
    tracker.finish()
    assert tracker.run_dir.parent == tmp_path / "wandb"
    stored = read_run(tracker.run_dir)
    assert stored.user_config() == {"lr": 0.1}
    assert stored.metrics() == {"loss": {0: 0.5, 1: 0.25}}


def test_managed_tracker_run_property_and_direct_calls(tmp_path: Path):
    """Through a dispatcher ``start()`` runs in the worker: ``run`` read right after init waits for it, and
    the tracker's own methods called from the script (as Accelerate users do) reach the run in order."""
    np = pytest.importorskip("numpy")
    run = tracking_core.init("managed", log_with="wandb", logging_dir=tmp_path / "logs", on_error="raise")
    tracker = run.get_tracker("wandb", unwrap=False)
    assert tracker.run is not None and tracker.run.project == "managed"
    tracker.store_init_configuration({"lr": 0.1})
    tracker.log({"loss": 0.5}, step=0)
    tracker.log_images({"picture": [np.zeros((4, 6, 3), np.uint8)]}, step=1)
    assert run.finish(timeout=120).ok
    stored = read_run(tracker.run_dir)
    assert stored.user_config() == {"lr": 0.1} and stored.metrics() == {"loss": {0: 0.5}}
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
        "float_chw": rng.random((3, 16, 24)),
        "nchw": np.stack([hwc.transpose(2, 0, 1)] * 2),
        "nhwc": np.stack([hwc, hwc[::-1]]),
        "pil": image.fromarray(hwc),
        "pil_gray": image.fromarray(hwc[..., 0]),
        "row": hwc[:1],
    }


def expected_images(value) -> list:
    from tracking_core.adapters import image_list

    return [to_hwc_uint8(item) for item in image_list(value)]


def test_every_image_layout_reads_back_pixel_for_pixel(tmp_path: Path):
    np = pytest.importorskip("numpy")
    images = layouts()
    tracker = WandBTracker("layouts", logging_dir=tmp_path / "logs")
    tracker.start()
    tracker.log_images(images, step=3)
    tracker.finish()
    stored = tracker.read_back_images()
    assert set(stored) == set(images)
    for key, value in images.items():
        expected = expected_images(value)
        assert [step for step, _ in stored[key]] == [3] * len(expected), key
        for (_, got), want in zip(stored[key], expected, strict=True):
            assert got.shape == want.shape and np.array_equal(got, want), key


def test_figure_is_stored_as_png_and_reads_back(tmp_path: Path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from tracking_core.adapters import figure_to_array

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


# -- config after start ---------------------------------------------------------------------------------
def test_config_logged_after_start_is_merged_and_a_changed_value_wins(tmp_path: Path):
    run = tracking_core.init(
        "late-config", log_with="wandb", logging_dir=tmp_path / "logs", config={"lr": 0.1, "depth": 2}
    )
    tracker = run.get_tracker("wandb", unwrap=False)
    run.log({"loss": 1.0}, step=0)
    run.log_config({"batch_size": 32, "lr": 0.05, "optimizer": {"name": "adam"}})
    assert run.finish(timeout=120).ok
    assert read_run(tracker.run_dir).user_config() == {
        "lr": 0.05,
        "depth": 2,
        "batch_size": 32,
        "optimizer": {"name": "adam"},
    }


# -- per-rank runs ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [None, "baseline"])
def test_per_rank_runs_are_named_by_rank_and_grouped(tmp_path: Path, name: str | None):
    logging_dir = tmp_path / "logs"
    trackers = []
    for rank in (0, 1):
        tracker = WandBTracker("ranks", logging_dir=logging_dir, **({"name": name} if name else {}))
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
    base = name or "job-7"
    assert [stored.run.display_name for stored in runs] == [f"{base}-rank0", f"{base}-rank1"]
    assert [stored.run.run_group for stored in runs] == ["job-7", "job-7"]
    assert [stored.metrics()["loss"][0] for stored in runs] == [0.0, 1.0]


def test_a_group_the_user_chose_wins(tmp_path: Path):
    logging_dir = tmp_path / "logs"
    tracker = WandBTracker("ranks", logging_dir=logging_dir, group="mine")
    tracker.run_context = RunContext("ranks", "job-8", logging_dir, logging_dir, rank=1, world_size=2, group="job-8")
    tracker.start()
    tracker.finish()
    stored = read_run(tracker.run_dir)
    assert stored.run.run_group == "mine" and stored.run.display_name == "job-8-rank1"


RANK_SCRIPT = r"""
import json, sys, tracking_core
run = tracking_core.init("ranked", log_with="wandb", logging_dir=sys.argv[1], per_rank=True, on_error="raise")
tracker = run.get_tracker("wandb", unwrap=False)
run.log({"loss": float(tracker.run_context.rank)}, step=0)
assert run.finish(timeout=120).ok
print(json.dumps({"run_dir": str(tracker.run_dir), "group": tracker.run_context.group}))
"""


def test_per_rank_dispatchers_in_two_processes_give_two_grouped_runs(tmp_path: Path):
    results = launch_ranks(
        RANK_SCRIPT,
        str(tmp_path / "logs"),
        port=29631,
        cwd=tmp_path,
        drop_env=["WANDB_"],
        env={"HOME": str(tmp_path / "home")},
    )
    (group,) = {result["group"] for result in results}
    runs = [read_run(result["run_dir"]) for result in results]
    assert [(stored.run.display_name, stored.run.run_group) for stored in runs] == [
        (f"{group}-rank0", group),
        (f"{group}-rank1", group),
    ]
    assert [stored.metrics()["loss"] for stored in runs] == [{0: 0.0}, {0: 1.0}]
