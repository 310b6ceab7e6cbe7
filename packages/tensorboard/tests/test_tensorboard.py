"""TensorBoard-specific behaviour, read back with TensorBoard's own accumulator (see conftest.py)."""

from __future__ import annotations

import io
import json
import logging
import math
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import tracking_core
from tracking_core import Dispatcher, TrackingWarning, has_capability, sanitize_config
from tracking_core.testing.contract import contract_config
from tracking_tensorboard import TensorBoardTracker

np = pytest.importorskip("numpy")


def event_files(root: Path) -> list[Path]:
    return sorted(root.rglob("events.out.tfevents.*"))


def started(tmp_path: Path, **kwargs) -> TensorBoardTracker:
    tracker = TensorBoardTracker("direct", tmp_path / "logs", **kwargs)
    tracker.start()
    return tracker


def test_run_folder_notice_and_nothing_else_written(tmp_path, monkeypatch, caplog, event_reader):
    monkeypatch.chdir(tmp_path)
    caplog.set_level(logging.INFO, logger="tracking")
    run = tracking_core.init("proj", log_with="tensorboard", logging_dir=tmp_path / "logs", on_error="raise")
    run.log({"loss": 1.0}, step=0)
    run.finish()
    tracker = run.trackers[0]
    assert tracker.log_dir == tmp_path / "logs" / "proj" / run.run_id
    assert [path.parent for path in event_files(tmp_path)] == [tracker.log_dir]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs"], "something was written outside logging_dir"
    lines = [r.getMessage() for r in caplog.records if "tensorboard --logdir" in r.getMessage()]
    assert lines == [
        f"tensorboard: event files in {tracker.log_dir}; view with: tensorboard --logdir {tracker.log_dir.parent}"
    ]
    assert event_reader(tracker.log_dir).scalars() == {"loss": {0: 1.0}}


def test_config_goes_into_the_run_as_hparams_and_exact_json(tmp_path, event_reader):
    from tensorboard.plugins.hparams import api_pb2

    config = contract_config(tmp_path)
    config["empty"] = {}
    config["ratio"] = float("nan")
    run = tracking_core.init(
        "proj", log_with="tensorboard", logging_dir=tmp_path / "logs", config=config, on_error="raise"
    )
    run.log({"loss": 1.0}, step=3)
    assert run.finish().ok
    reader = event_reader(run.trackers[0].log_dir)
    hparams = reader.hparams()
    assert hparams["lr"] == 0.001 and hparams["batch_size"] == 32.0  # numbers stay numbers
    assert hparams["use_amp"] is True  # a bool stays a bool (not 1.0)
    assert hparams["scheduler"] == "None" and hparams["layers"] == "[64, 32]"
    assert hparams["optimizer/name"] == "adamw" and hparams["optimizer/betas"] == "[0.9, 0.999]"
    assert hparams["model/depth"] == 2.0 and hparams["output_dir"] == str(tmp_path / "out")
    assert hparams["callback"] == "<opaque object>" and hparams["hub_token"] == "<redacted>"
    assert hparams["empty"] == "{}" and hparams["ratio"] == "nan"
    expected = json.loads(json.dumps(sanitize_config(config)))  # NaN survives as NaN in both
    stored = reader.config_json()
    assert math.isnan(stored.pop("ratio")) and math.isnan(expected.pop("ratio"))
    assert stored == expected
    assert reader.session_end_status() == api_pb2.STATUS_SUCCESS
    assert len(event_files(tmp_path)) == 1, "the config must not create a second run directory"


def test_many_steps_in_batches_and_steps_going_back(tmp_path, event_reader):
    run = Dispatcher(log_with="tensorboard", logging_dir=tmp_path / "logs", on_error="raise").init_trackers("proj")
    for step in range(3000):
        run.log({"a": step * 0.5, "b": -step}, step=step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrackingWarning)
        run.log({"late": 1.0}, step=5000)
        run.log({"late": 2.0}, step=4000)  # TensorBoard's reader keeps it (file version 2: no purge)
    assert run.finish().ok
    scalars = event_reader(run.trackers[0].log_dir).scalars()
    assert scalars["a"] == {step: step * 0.5 for step in range(3000)}
    assert scalars["b"] == {step: float(-step) for step in range(3000)}
    assert scalars["late"] == {5000: 1.0, 4000: 2.0}


def test_non_finite_values_are_stored(tmp_path, event_reader):
    tracker = started(tmp_path)
    tracker.log({"nan": float("nan"), "inf": float("inf"), "np": np.float32(0.5), "n": np.int64(7)}, step=0)
    tracker.finish()
    scalars = event_reader(tracker.log_dir).scalars()
    assert math.isnan(scalars["nan"][0]) and scalars["inf"][0] == math.inf
    assert scalars["np"] == {0: 0.5} and scalars["n"] == {0: 7.0}


def test_each_call_reaches_the_file_and_flush_makes_it_durable(tmp_path, event_reader):
    tracker = started(tmp_path)
    (path,) = event_files(tmp_path)
    sizes = []
    for step in range(20):
        tracker.log({"x": float(step), "note": f"text {step}"}, step=step)
        sizes.append(path.stat().st_size)
    # in the file (a killed process keeps it) after every call, without an fsync per call
    assert sizes == sorted(set(sizes)) and sizes[0] > 0, sizes
    tracker.flush()
    reader = event_reader(tracker.log_dir)  # readable before finish()
    assert reader.scalars()["x"] == {step: float(step) for step in range(20)}
    assert reader.texts()["note"][19] == "text 19"
    tracker.finish()
    tracker.finish()  # twice: no-op


def test_flush_secs_is_honoured(tmp_path):
    tracker = started(tmp_path, flush_secs=0)
    tracker.log({"x": 1.0}, step=0)
    assert event_files(tmp_path)[0].stat().st_size > 0
    tracker.finish()


def test_direct_use_without_a_step_is_step_zero_as_in_summary_writer(tmp_path, event_reader):
    tracker = started(tmp_path)
    tracker.log({"auto": 1.0})
    tracker.log({"auto": 10.0}, step=10)
    tracker.log_images({"img": np.zeros((2, 2), dtype=np.uint8)})
    tracker.tracker.add_scalar("custom", 5.0, global_step=7)  # the SDK object is usable directly
    tracker.finish()
    reader = event_reader(tracker.log_dir)
    assert reader.scalars()["auto"] == {0: 1.0, 10: 10.0}
    assert reader.scalars()["custom"] == {7: 5.0}
    assert [step for step, _ in reader.images()["img"]] == [0]


def _decode(png: bytes):
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)))


def test_images_of_every_layout_round_trip(tmp_path, event_reader):
    from PIL import Image

    rgb = (np.arange(32 * 48 * 3) % 251).astype(np.uint8).reshape(32, 48, 3)
    gray = rgb[..., 0]
    rgba = np.dstack([rgb, np.full((32, 48), 200, np.uint8)])
    run = Dispatcher(log_with="tensorboard", logging_dir=tmp_path / "logs", on_error="raise").init_trackers("proj")
    run.log_images({"list": [rgb, gray, rgba, Image.fromarray(rgb)], "float": rgb / 255.0}, step=4)
    run.log_images({"chw": rgb.transpose(2, 0, 1)}, step=6, log_kwargs={"tensorboard": {"dataformats": "CHW"}})
    assert run.finish().ok
    images = event_reader(run.trackers[0].log_dir).images()
    direct = started(tmp_path)  # batches as accelerate passes them (the dispatcher takes single images)
    direct.log_images({"batch": np.stack([rgb, rgb])}, step=5)
    direct.log_images({"nchw": rgb.transpose(2, 0, 1)[None]}, step=6, dataformats="NCHW")
    direct.finish()
    images.update(event_reader(direct.log_dir).images())
    ((step, pngs),) = images["list"]
    assert step == 4 and len(pngs) == 4
    assert np.array_equal(_decode(pngs[0]), rgb) and np.array_equal(_decode(pngs[1]), gray)
    assert np.array_equal(_decode(pngs[2]), rgba) and np.array_equal(_decode(pngs[3]), rgb)
    assert np.abs(_decode(images["float"][0][1][0]).astype(int) - rgb).max() <= 1
    assert [len(p) for _, p in images["batch"]] == [2]
    for key in ("chw", "nchw"):
        assert np.array_equal(_decode(images[key][0][1][0]), rgb), key


def test_tables_keep_cells_exactly(tmp_path, event_reader):
    tracker = started(tmp_path)
    tracker.log_table(
        "preds", columns=["input", "label"], data=[["a | b", 1], ["line\nbreak", None], ["short"]], step=2
    )
    tracker.log_table("nocols", data=[[1.5, True]])
    tracker.finish()
    tables = event_reader(tracker.log_dir).tables()
    assert tables["preds"] == [["input", "label"], ["a | b", "1"], ["line\nbreak", "None"], ["short", ""]]
    assert tables["nocols"] == [["col0", "col1"], ["1.5", "True"]]


def test_figure_becomes_an_image(tmp_path, event_reader):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 1), dpi=50)
    figure.add_subplot().plot([0, 1], [1, 0])
    run = Dispatcher(log_with="tensorboard", logging_dir=tmp_path / "logs", on_error="raise").init_trackers("proj")
    run.log_figure(figure, "curve", step=3)
    assert run.finish().ok
    ((step, (png,)),) = event_reader(run.trackers[0].log_dir).images()["curve"]
    assert step == 3 and _decode(png).shape[:2] == (50, 100)


def test_artifacts_are_not_claimed(tmp_path):
    assert not has_capability(TensorBoardTracker, "log_artifact")
    (tmp_path / "model.bin").write_bytes(b"weights")
    run = Dispatcher(log_with="tensorboard", logging_dir=tmp_path / "logs", on_error="raise").init_trackers("proj")
    with pytest.warns(TrackingWarning, match="log_artifact is not supported by tensorboard"):
        run.log_artifact(tmp_path / "model.bin")
    assert run.finish().ok


def test_constructor_options(tmp_path):
    exact = TensorBoardTracker("p", tmp_path, log_dir=tmp_path / "exact", filename_suffix=".v2")
    exact.start()
    exact.finish()
    assert [p.parent for p in event_files(tmp_path)] == [tmp_path / "exact"]
    assert event_files(tmp_path)[0].name.endswith(".v2")
    named = TensorBoardTracker("p", tmp_path, run_id="r1", comment="-lr0.1")
    assert named.log_dir == tmp_path / "p" / "r1-lr0.1"
    first, second = TensorBoardTracker("p", tmp_path), TensorBoardTracker("p", tmp_path)
    assert first.log_dir != second.log_dir
    TensorBoardTracker("p", tmp_path, max_queue=10)  # SummaryWriter's option: accepted, nothing to size
    with pytest.raises(TypeError):
        TensorBoardTracker("p", tmp_path, "r1")  # run_id is keyword-only, as in accelerate
    with pytest.raises(TypeError):
        TensorBoardTracker("p", tmp_path, max_queues=10)


def test_a_run_id_named_twice_is_refused_unless_resumed(tmp_path, event_reader):
    """``run_id`` names the run: one folder for its journal and event files. A second run under it would add
    an event file that TensorBoard merges into the first run (two values at step 0): it is refused."""
    named = {"tensorboard": {"run_id": "baseline"}}
    with tracking_core.init("proj", log_with="tensorboard", logging_dir=tmp_path, init_kwargs=named) as run:
        run.log({"loss": 1.0}, step=0)
    folder = tmp_path / "proj" / "baseline"
    assert run.run_dir == folder and run.trackers[0].log_dir == folder
    with pytest.raises(FileExistsError, match="resume='baseline'"):
        tracking_core.init("proj", log_with="tensorboard", logging_dir=tmp_path, init_kwargs=named)
    assert len(event_files(tmp_path)) == 1
    assert event_reader(folder).scalars() == {"loss": {0: 1.0}}

    with tracking_core.init(
        "proj", log_with="tensorboard", logging_dir=tmp_path, init_kwargs=named, resume="baseline"
    ) as resumed:
        resumed.log({"loss": 2.0})
    assert resumed.run_dir == folder
    assert event_reader(folder).scalars() == {"loss": {0: 1.0, 1: 2.0}}, "the resumed run carries on at step 1"


def _run_python(code: str, tmp_path: Path, extra_path: Path | None = None) -> str:
    env = dict(os.environ)
    if extra_path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(extra_path), env.get("PYTHONPATH", "")])
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_start_imports_neither_torch_nor_tensorflow(tmp_path):
    # Stand-ins for installed frameworks: importable, so any attempt to import them shows in sys.modules.
    fakes = tmp_path / "fakes"
    for name in ("torch", "tensorflow", "tensorboardX"):
        (fakes / name).mkdir(parents=True)
        (fakes / name / "__init__.py").write_text("")
    out = _run_python(
        """
        import sys
        import numpy as np
        import tracking_tensorboard, tracking_core
        run = tracking_core.init("p", log_with="tensorboard", logging_dir="logs", config={"a": [1]}, on_error="raise")
        run.log({"x": 1.0, "s": "text"}, step=0)
        run.log_images({"i": np.zeros((2, 2), np.uint8)})
        run.log_table("t", data=[[1]])
        assert run.finish().ok
        print(sorted(m for m in ("torch", "tensorflow", "tensorboardX") if m in sys.modules))
        """,
        tmp_path,
        fakes,
    )
    assert out.strip() == "[]"


def test_start_in_worker_while_main_thread_imports_the_sdk(tmp_path):
    out = _run_python(
        """
        import tracking_core
        run = tracking_core.init("p", log_with="tensorboard", logging_dir="logs", on_error="raise")
        # the worker thread is importing tensorboard right now; import it here too, concurrently
        from tensorboard.backend.event_processing import plugin_event_accumulator
        from tensorboard.compat.proto import summary_pb2
        from tensorboard.plugins.hparams import metadata
        run.log({"x": 1.0}, step=0)
        report = run.finish()
        assert report.ok, report
        acc = plugin_event_accumulator.EventAccumulator(str(run.trackers[0].log_dir))
        acc.Reload()
        print(acc.Tags()["tensors"])
        """,
        tmp_path,
    )
    assert out.strip() == "['x']"


def test_wall_time_is_when_log_was_called_not_when_it_was_written(tmp_path, event_reader):
    import time

    run = tracking_core.init("proj", log_with="tensorboard", logging_dir=tmp_path / "logs", on_error="raise")
    before = time.time()
    run.log({"loss": 1.0}, step=0)  # queued while the writer starts in its worker
    after = time.time()
    time.sleep(0.3)
    run.log({"loss": 2.0}, step=1)
    run.finish()
    events = event_reader(run.trackers[0].log_dir).accumulator.Tensors("loss")
    assert before <= events[0].wall_time <= after + 1e-3
    assert events[1].wall_time - events[0].wall_time >= 0.29


def test_a_step_logged_twice_shows_twice_in_the_history(tmp_path):
    tracker = started(tmp_path)
    tracker.log({"a": 1.0}, step=3)
    tracker.log({"a": 2.0}, step=3)
    tracker.finish()
    assert tracker.read_back_history()["a"] == [(3, 1.0), (3, 2.0)]
    assert tracker.read_back_metrics()["a"] == {3: 2.0}  # the last point at a step wins


def test_history_follows_the_event_files_of_a_resumed_run(tmp_path):
    first = started(tmp_path)
    first.log({"a": 1.0}, step=0)
    first.log({"a": 2.0}, step=1)
    first.finish()
    # A second event file in the same folder, as a resumed run writes.
    second = TensorBoardTracker("direct", tmp_path / "logs", log_dir=first.log_dir)
    second.start()
    second.log({"a": 3.0}, step=1)
    second.finish()
    assert len(event_files(tmp_path)) == 2
    assert second.read_back_history()["a"] == [(0, 1.0), (1, 2.0), (1, 3.0)]


def test_a_finite_value_beyond_float32_is_not_stored_as_inf(tmp_path):
    tracker = started(tmp_path)
    with pytest.warns(TrackingWarning, match="float32"):
        tracker.log({"big": 1e39, "ok": 1.0}, step=0)
    tracker.log({"big": 2.0}, step=1)
    tracker.finish()
    stored = tracker.read_back_metrics()
    assert stored["big"] == {1: 2.0} and stored["ok"] == {0: 1.0}
    assert any("float32" in note for note in tracker.report_notes())


def test_read_back_survives_a_key_logged_as_number_and_as_text(tmp_path):
    tracker = started(tmp_path)
    tracker.log({"mixed": 1.0}, step=0)
    tracker.log({"mixed": "text now"}, step=1)
    tracker.log({"mixed": 3.0}, step=2)
    tracker.finish()
    assert tracker.read_back_metrics()["mixed"] == {0: 1.0, 2: 3.0}


@pytest.mark.parametrize("keyword", ["run_id", "comment", "filename_suffix"])
def test_names_that_become_paths_are_checked(tmp_path, keyword):
    with pytest.raises(ValueError, match=keyword):
        TensorBoardTracker("direct", tmp_path / "logs", **{keyword: "../../x"})
