"""ClearMLTracker against accelerate 1.15's ``ClearMLTracker``: the shared suite
(``tracking_core.testing.accelerate_parity``) plus what only ClearML has (Accelerate's title/series mapping,
JPEG or PNG image files, image history, table headers, hyperparameters, bar-chart histograms, per-rank task
names and tags), each read back from the offline session."""

from __future__ import annotations

from pathlib import Path

import pytest
from tracking_clearml import ClearMLTracker
from tracking_clearml.reader import OfflineSession
from tracking_core import Dispatcher, RunContext
from tracking_core.contract.histogram import histogram_of
from tracking_core.testing.accelerate_parity import AccelerateParity


def session_of(tracker: ClearMLTracker) -> OfflineSession:
    return OfflineSession(f"{tracker.offline_folder}.zip")


class TestClearMLAccelerateParity(AccelerateParity):
    backend_name = "clearml"
    #: accelerate 1.15's ``ClearMLTracker`` methods, copied from its ``accelerate/tracking.py``; ours may add
    #: keyword-only options
    accelerate_signatures = {
        "__init__": "self, run_name=None, **kwargs",
        "start": "self",
        "store_init_configuration": "self, values",
        "log": "self, values, step=None, **kwargs",
        "log_images": "self, values, step=None, **kwargs",
        "log_table": "self, table_name, columns=None, data=None, dataframe=None, step=None, **kwargs",
        "finish": "self",
    }
    sdk_attributes = ("tracker", "task")
    accelerate_requires_logging_directory = False
    image_layouts_extra = None  # JPEG by default: test_image_layouts_read_back checks the lossless option
    rank_port = 29632
    unset_env = ("CLEARML_", "TRAINS_")

    def env(self, tmp_path):
        return {"CLEARML_CONFIG_FILE": str(tmp_path / "no-clearml.conf")}

    def read_metrics(self, tracker):
        return session_of(tracker).scalars()

    def read_config(self, tracker):
        return session_of(tracker).configuration("General")


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CLEARML_CONFIG_FILE", str(tmp_path / "no-clearml.conf"))
    monkeypatch.chdir(tmp_path)


def test_accelerates_title_series_single_values_and_table_error(tmp_path: Path) -> None:
    tracker = ClearMLTracker("alone", logging_dir=tmp_path / "logs")
    tracker.start()
    tracker.store_init_configuration({"lr": 0.1})
    tracker.log({"eval_loss": 0.5, "test_acc": 0.9, "train_loss": 0.7, "loss": 0.6}, step=1)
    tracker.log({"final": 1.0})  # no step: a single value, as accelerate reports it
    with pytest.raises(ValueError, match="requires that `data` to be supplied if `dataframe` is `None`"):
        tracker.log_table("empty")
    tracker.finish()
    session = session_of(tracker)
    pairs = {(e["metric"], e["variant"], e["iter"]) for e in session.events("training_stats_scalar")}
    # accelerate's title/series: eval_/test_/train_ prefixes are the series, other keys the "train" series
    assert {("loss", "eval", 1), ("acc", "test", 1), ("loss", "train", 1)} <= pairs, pairs
    assert session.single_values() == {"final": 1.0}
    assert session.configuration("General") == {"lr": 0.1}  # the configuration object accelerate writes
    # "loss" and "train_loss" share accelerate's (loss, train): both points land there, as in accelerate
    assert sorted(
        v
        for (t, s), v in [((e["metric"], e["variant"]), e["value"]) for e in session.events("training_stats_scalar")]
        if (t, s) == ("loss", "train")
    ) == [0.6, 0.7]


def test_image_layouts_read_back(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    from PIL import Image

    base = (np.arange(12 * 20 * 3) % 251).astype("uint8").reshape(12, 20, 3)
    layouts = {
        "hwc": (base, [base]),
        "chw": (base.transpose(2, 0, 1), [base]),
        "hw": (base[..., 0], [base[..., 0]]),
        "nhwc": (np.stack([base, base[::-1]]), [base, base[::-1]]),
        "nchw": (np.stack([base, base[::-1]]).transpose(0, 3, 1, 2), [base, base[::-1]]),
        "pil": (Image.fromarray(base), [base]),
        "eval_float": (base.astype("float32") / 255.0, [base]),
    }
    tracker = ClearMLTracker("images", logging_dir=tmp_path / "logs", lossless_images=True)  # exact pixels
    tracker.start()
    tracker.log_images({name: value for name, (value, _) in layouts.items()}, step=2)
    tracker.finish()
    stored = tracker.read_back_images()
    for name, (_, expected) in layouts.items():
        assert [step for step, _ in stored[name]] == [2] * len(expected), (name, sorted(stored))
        for (_, array), want in zip(stored[name], expected):
            assert array.shape == want.shape and (array == want).all(), name
    # accelerate's mapping for one image per key: (title, series) of the key
    images = session_of(tracker).images()
    assert [series for _, series, _ in images["eval_float"]] == ["eval"]


def test_images_are_clearml_jpeg_files_as_accelerate_stores_them(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    gray = np.eye(64, 64, dtype="uint8") * 255  # accelerate's test images: HW and HWC
    rgb = np.concatenate((np.atleast_3d(gray), np.zeros((64, 64, 2), dtype="uint8")), axis=2)
    tracker = ClearMLTracker("jpeg", logging_dir=tmp_path / "logs")
    tracker.start()
    tracker.log_images({"base_image": gray, "eval_rgb": rgb}, step=1)
    tracker.finish()
    session = session_of(tracker)
    files = [name for name in session.names() if name.startswith("data/")]
    assert len(files) == 2 and all(name.endswith(".jpeg") for name in files), files
    assert {(key, series) for key, items in session.images().items() for _, series, _ in items} == {
        ("base_image", "train"),
        ("eval_rgb", "eval"),
    }
    stored = dict(tracker.read_back_images())
    for key, want in (("base_image", gray), ("eval_rgb", rgb)):
        (step, got), *_ = stored[key]
        assert step == 1 and got.shape == want.shape, key
        assert float(np.abs(got.astype(float) - want).mean()) < 8.0, key  # JPEG: close, not exact


def test_lossless_images_are_png_files(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    tracker = ClearMLTracker("png", logging_dir=tmp_path / "logs", lossless_images=True)
    tracker.start()
    tracker.log_images({"frame": np.full((4, 6), 7, dtype="uint8")}, step=0)
    tracker.finish()
    files = [name for name in session_of(tracker).names() if name.startswith("data/")]
    assert len(files) == 1 and files[0].endswith(".png"), files


def test_an_image_with_alpha_is_kept_as_png(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    rgba = (np.arange(8 * 8 * 4) % 251).astype("uint8").reshape(8, 8, 4)
    tracker = ClearMLTracker("alpha", logging_dir=tmp_path / "logs")
    tracker.start()
    tracker.log_images({"mask": rgba}, step=3)  # JPEG has no alpha: ClearML's uploader would drop it
    tracker.finish()
    ((step, stored),) = tracker.read_back_images()["mask"]
    assert step == 3 and (stored == rgba).all()


def test_a_table_without_columns_takes_its_header_from_its_first_row(tmp_path: Path) -> None:
    tracker = ClearMLTracker("tables", logging_dir=tmp_path / "logs")
    tracker.start()
    tracker.log_table("from lists", data=[["A2", "B2", "C2"], [7, 9, 11], [8, 10, 12]])  # accelerate's docstring
    tracker.log_table("with columns", columns=["A", "B"], data=[[1, 3], [2, 4]])
    tracker.finish()
    session = session_of(tracker)
    assert session.table_headers() == {"from lists": ["A2", "B2", "C2"], "with columns": ["A", "B"]}
    assert session.tables() == {"from lists": [[7, 9, 11], [8, 10, 12]], "with columns": [[1, 3], [2, 4]]}


def test_overwritten_image_files_are_not_read_back(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    tracker = ClearMLTracker("history", logging_dir=tmp_path / "logs", lossless_images=True)
    tracker.start()
    for step in range(7):  # ClearML keeps max_image_history files per title/series and reuses the oldest names
        tracker.log_images({"frame": np.full((4, 4), step * 10, dtype="uint8")}, step=step, max_image_history=5)
    tracker.finish()
    frames = tracker.read_back_images()["frame"]
    assert [step for step, _ in frames] == list(range(2, 7))  # steps 0 and 1 were overwritten: not read back
    # ClearML writes image files from a pool of uploader threads (4 by default), so the two writes to a reused
    # name race: steps 5 and 6 (reusing the names of 0 and 1) may still hold the frame they replaced. The
    # files written once are settled.
    values = {step: int(array[0, 0]) for step, array in frames}
    assert [values[step] for step in (2, 3, 4)] == [20, 30, 40]
    assert values[5] in (50, 0) and values[6] in (60, 10), values


def test_config_after_start_is_merged(tmp_path: Path) -> None:
    dispatcher = Dispatcher(log_with="clearml", logging_dir=tmp_path / "logs", on_error="raise")
    dispatcher.init_trackers("config", config={"lr": 0.1, "model": {"depth": 2}})
    dispatcher.log({"loss": 1.0}, step=0)
    dispatcher.log_config({"batch_size": 32, "lr": 0.2})
    assert dispatcher.finish(timeout=120).ok
    session = session_of(dispatcher.trackers[0])
    assert session.configuration("General") == {"lr": 0.2, "model": {"depth": 2}, "batch_size": 32}
    hyper = session.hyperparameters("General")
    assert hyper["lr"] == "0.2" and hyper["batch_size"] == "32" and hyper["model/depth"] == "2", hyper


def test_histogram_is_a_bar_chart_at_the_bins(tmp_path: Path) -> None:
    histogram, _ = histogram_of([0.5] * 10 + [2.0] * 30 + [-1.0] * 5, bins=4)
    tracker = ClearMLTracker("hist", logging_dir=tmp_path / "logs")
    tracker.start()
    tracker.log_histogram("weights/layer1", histogram, step=7)
    tracker.finish()
    ((step, plot),) = session_of(tracker).plots()["weights/layer1"]
    bars = plot["data"][0]
    assert step == 7 and bars["type"] == "bar"
    assert bars["y"] == list(histogram.counts) and len(bars["x"]) == len(histogram.counts)
    edges = histogram.edges
    assert bars["x"][0] == pytest.approx((edges[0] + edges[1]) / 2)


def test_per_rank_runs_are_named_and_tagged(tmp_path: Path) -> None:
    logging_dir = tmp_path / "logs"
    tasks = []
    for rank in range(2):  # one ClearML task per process: the ranks run one after the other here
        tracker = ClearMLTracker("job", logging_dir=logging_dir)
        tracker.run_context = RunContext(
            "job", "run-7", logging_dir / "job" / "run-7", logging_dir, rank=rank, world_size=2, group="run-7"
        )
        tracker.start()
        tracker.log({"loss": float(rank)}, step=0)
        tracker.finish()
        tasks.append(session_of(tracker))
    assert [session.task["name"] for session in tasks] == ["job-rank0", "job-rank1"]
    assert [sorted(session.task.get("tags", [])) for session in tasks] == [
        ["group:run-7", "rank:0"],
        ["group:run-7", "rank:1"],
    ]
    assert [session.task["project_name"] for session in tasks] == ["job", "job"]
    assert [session.scalars()["loss"] for session in tasks] == [{0: 0.0}, {0: 1.0}]
