"""Fidelity with accelerate's ``CometMLTracker`` (accelerate 1.15 ``accelerate/tracking.py``), the image layouts,
config merged after start, histograms and per-rank runs, each read back from Comet's offline archive."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from tracking_comet_ml import CometMLTracker
from tracking_comet_ml.archive import read_archive_images
from tracking_core import Dispatcher, RunContext
from tracking_core.histogram import histogram_of

#: Parameters of accelerate 1.15's ``CometMLTracker`` methods (name, kind, default), copied from its
#: ``accelerate/tracking.py``; ours may add keyword-only options after them.
ACCELERATE_SIGNATURES = {
    "__init__": [("run_name", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty), ("kwargs", "VAR_KEYWORD", None)],
    "start": [],
    "store_init_configuration": [("values", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty)],
    "log": [
        ("values", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty),
        ("step", "POSITIONAL_OR_KEYWORD", None),
        ("kwargs", "VAR_KEYWORD", None),
    ],
    "finish": [],
}


@pytest.mark.parametrize("method", sorted(ACCELERATE_SIGNATURES))
def test_signatures_match_accelerate(method: str) -> None:
    ours = list(inspect.signature(getattr(CometMLTracker, method)).parameters.values())[1:]  # without self
    expected = ACCELERATE_SIGNATURES[method]
    positional = [p for p in ours if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert [(p.name, p.kind.name) for p in positional] == [(n, k) for n, k, _ in expected if k != "VAR_KEYWORD"]
    for parameter, (_, _, default) in zip(positional, expected):
        if default is not None or parameter.default is not inspect.Parameter.empty:
            assert parameter.default == default, (method, parameter)
    if any(kind == "VAR_KEYWORD" for _, kind, _ in expected):
        assert ours[-1].kind is inspect.Parameter.VAR_KEYWORD, (method, ours)
    assert CometMLTracker.name == "comet_ml" and CometMLTracker.requires_logging_directory is False


def test_used_alone_it_is_synchronous_like_accelerate(tmp_path, monkeypatch, comet_archive):
    monkeypatch.chdir(tmp_path)
    tracker = CometMLTracker("alone", logging_dir=tmp_path / "logs")
    assert tracker.writer is None  # not started: nothing to wait for
    tracker.start()
    assert tracker.writer is tracker.tracker is tracker.experiment is not None
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


def test_writer_waits_for_a_managed_start(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dispatcher = Dispatcher(log_with="comet_ml", logging_dir=tmp_path / "logs", on_error="raise")
    dispatcher.init_trackers("managed")
    tracker = dispatcher.get_tracker("comet_ml")
    assert tracker.writer is not None and tracker.writer.alive  # read right after init_trackers
    assert dispatcher.finish(timeout=120).ok


def _layouts(np):
    base = (np.arange(12 * 20 * 3) % 251).astype("uint8").reshape(12, 20, 3)
    from PIL import Image

    return base, {
        "hwc": (base, [base]),
        "chw": (base.transpose(2, 0, 1), [base]),
        "hw": (base[..., 0], [base[..., 0]]),
        "nhwc": (np.stack([base, base[::-1]]), [base, base[::-1]]),
        "nchw": (np.stack([base, base[::-1]]).transpose(0, 3, 1, 2), [base, base[::-1]]),
        "pil": (Image.fromarray(base), [base]),
        "float": (base.astype("float32") / 255.0, [base]),
    }


def test_image_layouts_read_back(tmp_path, monkeypatch):
    np = pytest.importorskip("numpy")
    pytest.importorskip("PIL")
    monkeypatch.chdir(tmp_path)
    _, layouts = _layouts(np)
    tracker = CometMLTracker("images", logging_dir=tmp_path / "logs")
    tracker.start()
    tracker.log_images({name: value for name, (value, _) in layouts.items()}, step=2)
    tracker.finish()
    stored = tracker.read_back_images()
    for name, (_, expected) in layouts.items():
        assert [step for step, _ in stored[name]] == [2] * len(expected), name
        for (_, array), want in zip(stored[name], expected):
            assert array.shape == want.shape and (array == want).all(), name


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


RANK_SCRIPT = r"""
import json, sys
from tracking_core import init

run = init("job", log_with="comet_ml", logging_dir=sys.argv[2], per_rank=True)
run.log({"loss": float(sys.argv[1])}, step=0)
tracker = run.get_tracker("comet_ml")
run.finish()
print(json.dumps({"archive": str(tracker.archive_path), "group": tracker.run_context.group}))
"""


def test_per_rank_mode_gives_one_experiment_per_rank(tmp_path, comet_archive):
    import os
    import subprocess
    import sys
    from types import SimpleNamespace

    processes = []
    for rank in range(2):
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": "2", "MASTER_PORT": "29631", "COMET_API_KEY": ""}
        env.pop("TRACKING_RUN_ID", None)
        command = [sys.executable, "-c", RANK_SCRIPT, str(rank), str(tmp_path / "logs")]
        processes.append(
            subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    results = []
    for process in processes:
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    (group,) = {result["group"] for result in results}
    archives = [comet_archive(SimpleNamespace(archive_path=result["archive"], mode="offline")) for result in results]
    assert [archive.others()["Name"] for archive in archives] == [f"{group}-rank0", f"{group}-rank1"]
    assert [sorted(archive.experiment["tags"]) for archive in archives] == [
        [f"group:{group}", "rank:0"],
        [f"group:{group}", "rank:1"],
    ]
    assert {archive.experiment["project_name"] for archive in archives} == {"job"}
    assert [archive.metrics()["loss"] for archive in archives] == [{0: 0.0}, {0: 1.0}]
