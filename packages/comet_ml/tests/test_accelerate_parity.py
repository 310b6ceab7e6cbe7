"""CometMLTracker against accelerate 1.15's ``CometMLTracker``: the shared suite
(``tracking_core.testing.accelerate_parity``) plus what only Comet has (dicts as their inner metric keys, text as
``log_other`` and per-step text, figures as PNG, parameters with ``|``, 3-d histogram assets, per-rank tags and
archive folder), each read back from Comet's offline archive."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tracking_comet_ml import CometMLTracker
from tracking_comet_ml.reader import read_archive_images
from tracking_core import Dispatcher, RunContext
from tracking_core.contract.histogram import histogram_of
from tracking_core.testing.accelerate_parity import AccelerateParity

from .conftest import archive_of


class TestCometAccelerateParity(AccelerateParity):
    backend_name = "comet_ml"
    #: accelerate 1.15's ``CometMLTracker`` methods, copied from its ``accelerate/tracking.py``; ours may add
    #: keyword-only options after them
    accelerate_signatures = {
        "__init__": "self, run_name, **kwargs",
        "start": "self",
        "store_init_configuration": "self, values",
        "log": "self, values, step=None, **kwargs",
        "finish": "self",
    }
    sdk_attributes = ("tracker", "writer", "experiment")
    accelerate_requires_logging_directory = False
    rank_port = 29631

    def env(self, tmp_path):
        return {"COMET_API_KEY": ""}  # wins over a key in ~/.comet.config

    def read_metrics(self, tracker):
        return archive_of(tracker).metrics()

    def read_config(self, tracker):
        configs = [content for name, (_, _, content) in archive_of(tracker).assets().items() if name == "config.json"]
        return json.loads(configs[-1])

    def run_names(self, trackers):
        return [archive_of(tracker).others()["Name"] for tracker in trackers]


def test_dicts_text_and_parameters_go_where_accelerate_puts_them(tmp_path, monkeypatch, comet_archive):
    monkeypatch.chdir(tmp_path)
    tracker = CometMLTracker("alone", logging_dir=tmp_path / "logs")
    tracker.start()
    tracker.store_init_configuration({"lr": 0.1})
    tracker.log({"loss": 0.5, "note": "first", "group": {"a": 1.0, "b": 2.0}}, step=3)
    tracker.log({"note": "second"}, step=4)
    tracker.finish()
    archive = comet_archive(tracker)
    assert archive.metrics()["loss"] == {3: 0.5}
    # a dict goes to log_metrics as accelerate sends it (its inner keys)
    assert archive.metrics()["a"] == {3: 1.0} and archive.metrics()["b"] == {3: 2.0}
    assert archive.others()["note"] == "second"  # log_other, as accelerate: the last value
    assert archive.texts()["note"] == {3: "first", 4: "second"}  # and every step's text
    assert archive.parameters()["lr"] == 0.1


def test_figure_is_a_png(tmp_path, monkeypatch):
    pytest.importorskip("numpy")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    monkeypatch.chdir(tmp_path)
    figure = Figure(figsize=(2, 1), dpi=50)
    figure.add_subplot().plot([0, 1], [1, 0])
    tracker = CometMLTracker("figure", logging_dir=tmp_path / "logs")
    tracker.start()
    tracker.log_figure(figure, "curve", step=5, format="svg")  # a format asked for is still PNG
    tracker.finish()
    ((step, data),) = read_archive_images(tracker.archive_path)["curve"]
    assert step == 5 and data.startswith(b"\x89PNG")
    ((_, array),) = tracker.read_back_images()["curve"]
    assert array.shape[:2] == (50, 100)


def test_config_after_start_is_merged(tmp_path, monkeypatch, comet_archive):
    monkeypatch.chdir(tmp_path)
    dispatcher = Dispatcher(log_with="comet_ml", logging_dir=tmp_path / "logs", on_error="raise")
    dispatcher.init_trackers("config", config={"lr": 0.1, "model": {"depth": 2}})
    dispatcher.log({"loss": 1.0}, step=0)
    dispatcher.log_config({"batch_size": 32, "lr": 0.2})
    assert dispatcher.finish(timeout=120).ok
    archive = comet_archive(dispatcher.trackers[0])
    params = archive.parameters()
    assert params["lr"] == 0.2 and params["batch_size"] == 32 and params["model|depth"] == 2, params
    configs = [content for name, (_, _, content) in archive.assets().items() if name == "config.json"]
    assert json.loads(configs[-1]) == {"lr": 0.2, "model": {"depth": 2}, "batch_size": 32}


def test_histogram_is_a_3d_histogram_asset(tmp_path, monkeypatch, comet_archive):
    monkeypatch.chdir(tmp_path)
    histogram, _ = histogram_of([0.5] * 10 + [2.0] * 30 + [-1.0] * 5, bins=8)
    tracker = CometMLTracker("hist", logging_dir=tmp_path / "logs")
    tracker.start()
    tracker.log_histogram("weights", histogram, step=7)
    tracker.finish()
    archive = comet_archive(tracker)
    uploads = [u for u in archive.of_type("file_upload") if u["upload_type"] == "histogram3d"]
    assert len(uploads) == 1 and uploads[0]["additional_params"]["step"] == 7, uploads
    stored = json.loads(archive.content(uploads[0]))
    counts = [count for _, count in stored["index_values"]]  # comet_ml.Histogram.to_json: [bin index, count]
    assert sum(counts) == 45 and len(counts) == 3, stored  # three values, three of Comet's bins


def test_per_rank_runs_are_named_and_tagged(tmp_path, monkeypatch, comet_archive):
    monkeypatch.chdir(tmp_path)
    logging_dir = tmp_path / "logs"
    archives = []
    for rank in range(2):
        tracker = CometMLTracker("job", logging_dir=logging_dir)
        tracker.run_context = RunContext(  # as the dispatcher builds it with per_rank=True
            "job",
            f"run-7-rank{rank}",
            logging_dir / "job" / "run-7",
            logging_dir,
            rank=rank,
            world_size=2,
            group="run-7",
        )
        tracker.start()
        tracker.log({"loss": float(rank)}, step=0)
        tracker.finish()
        archives.append(comet_archive(tracker))
    names = [archive.others()["Name"] for archive in archives]
    assert names == ["run-7-rank0", "run-7-rank1"]
    assert [sorted(archive.experiment["tags"]) for archive in archives] == [
        ["group:run-7", "rank:0"],
        ["group:run-7", "rank:1"],
    ]
    assert archives[0].path.parent == archives[1].path.parent == Path(logging_dir / "job" / "run-7" / "comet_ml")
    assert [archive.metrics()["loss"] for archive in archives] == [{0: 0.0}, {0: 1.0}]
