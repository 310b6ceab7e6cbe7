"""Aim-specific behaviour, read back with ``aim.Repo`` (see ``aim_readback.py``)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import pytest
from tracking_aim import AimTracker
from tracking_aim.media import markdown_table
from tracking_core import Dispatcher, TrackingWarning
from tracking_core.notices import reset_warnings

_spec = importlib.util.spec_from_file_location("_tracking_aim_readback", Path(__file__).with_name("aim_readback.py"))
readback = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readback)

np = pytest.importorskip("numpy")


def _aim_has_artifacts() -> bool:
    from aim import Run

    return hasattr(Run, "log_artifact")  # added in Aim 3.19


needs_artifacts = pytest.mark.skipif(not _aim_has_artifacts(), reason="run artifacts need aim>=3.19")


@pytest.fixture(scope="module")
def repo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One repo for the direct-use tests: only the first run in a fresh repo pays Aim's ~2 s setup."""
    return tmp_path_factory.mktemp("aim")


@pytest.fixture(autouse=True)
def _fresh_warnings():
    reset_warnings()
    yield


def run_script(code: str, *args: str, returncode: int = 0) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == returncode, result.stdout + result.stderr
    return result


def test_many_steps_batched_and_queryable(tmp_path: Path) -> None:
    dispatcher = Dispatcher(log_with=["aim"], logging_dir=tmp_path, on_error="raise")
    dispatcher.init_trackers("many")
    for step in range(1500):
        dispatcher.log({"loss": 1.0 / (step + 1), "epoch_frac": step / 1500, "step_int": step}, step=step)
    report = dispatcher.finish(timeout=120)
    assert report.ok and report.backends["aim"].delivered == 1500, str(report)
    stored = readback.metrics(readback.get_run(tmp_path, dispatcher.trackers[0].run_hash))
    assert stored["loss"] == {step: 1.0 / (step + 1) for step in range(1500)}
    assert stored["step_int"] == {step: step for step in range(1500)}
    # Aim's query language sees the run too, once indexed.
    found = list(readback.open_repo(tmp_path).query_metrics("metric.name == 'loss'"))
    assert len(found) == 1 and len(found[0].data.items_list()[0]) == 1500


def test_name_experiment_tags_and_description(repo_dir: Path) -> None:
    tracker = AimTracker("proj", repo_dir, run_name="baseline", tags=["mlp", "small"], description="first try")
    before = set(threading.enumerate())
    tracker.start()
    tracker.store_init_configuration({"lr": 0.001, "model": {"depth": 2, "layers": [64, 32]}, "scheduler": None})
    tracker.log({"loss": 0.5, "note": "hello"}, step=0)
    tracker.flush()
    tracker.finish()
    tracker.finish()  # twice is harmless
    assert set(threading.enumerate()) <= before, "Aim threads left after finish()"
    assert tracker.read_back_metrics() == {"loss": {0: 0.5}}
    assert set(threading.enumerate()) <= before, "reading back started a thread"
    run = readback.get_run(repo_dir, tracker.run_hash)
    assert (run.name, run.experiment) == ("baseline", "proj")
    assert sorted(getattr(tag, "name", tag) for tag in run.props.tags) == ["mlp", "small"]
    assert run.description == "first try"
    assert run["hparams"] == {"lr": 0.001, "model": {"depth": 2, "layers": [64, 32]}, "scheduler": None}
    assert run.end_time is not None and not run.active
    assert run.get("__system_params") is None, "environment was captured"


def test_a_step_logged_twice_is_one_point_in_the_history(repo_dir: Path) -> None:
    tracker = AimTracker("proj", repo_dir)
    tracker.start()
    tracker.log({"a": 1.0}, step=3)
    tracker.log({"a": 2.0}, step=3)
    tracker.finish()
    # Aim keys a series by step: the second track overwrites the first, so a duplicate cannot be stored.
    assert tracker.read_back_history()["a"] == [(3, 2.0)]
    assert tracker.read_back_metrics()["a"] == {3: 2.0}


def test_user_kwargs_win(tmp_path: Path) -> None:
    own_repo = tmp_path / "elsewhere"
    logging_dir = tmp_path / "logs"
    # accelerate's AimTracker raised "multiple values for 'repo'" here.
    tracker = AimTracker("proj", logging_dir, repo=str(own_repo), experiment="mine", capture_terminal_logs=False)
    tracker.start()
    tracker.log({"x": 1.0}, step=3)
    print("captured by aim")
    tracker.finish()
    assert not logging_dir.exists(), "wrote under logging_dir although repo= was given"
    run = readback.get_run(own_repo, tracker.run_hash)
    assert run.experiment == "mine"
    assert readback.metrics(run) == {"x": {3: 1.0}}
    assert run.get_terminal_logs() is None, "capture_terminal_logs=False was overridden"


def test_text_numbers_nan_and_kind_switch(repo_dir: Path) -> None:
    tracker = AimTracker("proj", repo_dir)
    tracker.start()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tracker.log_batch(
            [
                ({"a": 1, "b": float("nan"), "c": float("inf"), "mixed": 1.0, "words": "one"}, 0, {}),
                ({"a": 2.5, "b": 0.0, "c": -float("inf"), "mixed": "now text", "words": 2.0}, 1, {}),
                ({"a": 3, "mixed": 3.0, "words": "three"}, 2, {}),
                ({"a": 4.0}, 3, {"context": {"subset": "val"}}),
            ]
        )
    tracker.finish()
    messages = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]
    assert sum("'mixed'" in m for m in messages) == 1 and sum("'words'" in m for m in messages) == 1, messages
    run = readback.get_run(repo_dir, tracker.run_hash)
    stored = readback.metrics(run)
    assert stored["a"] == {0: 1, 1: 2.5, 2: 3}
    assert np.isnan(stored["b"][0]) and stored["b"][1] == 0.0
    assert stored["c"] == {0: float("inf"), 1: -float("inf")}
    assert stored["mixed"] == {0: 1.0, 2: 3.0}
    assert {step: text.data for step, text in readback.sequence(run, "text", "words").items()} == {0: "one", 2: "three"}
    assert tracker.read_back_metrics()["a {'subset': 'val'}"] == {3: 4.0}, "context kwarg not passed to Run.track"


def test_values_aim_cannot_encode(repo_dir: Path) -> None:
    """A config Aim's encoder refuses (sets; ints beyond int64 the core did not turn into text when the
    tracker is used on its own) is stored flattened as strings: the run keeps its hparams."""
    tracker = AimTracker("proj", repo_dir)
    tracker.start()
    with pytest.warns(TrackingWarning, match="hparams"):
        tracker.store_init_configuration({"odd": {1, 2}, "seed": 2**70, "model": {"depth": 2}})
    tracker.finish()
    flat = readback.get_run(repo_dir, tracker.run_hash)["hparams"]
    assert flat["model/depth"] == "2" and "{1, 2}" in flat["odd"] and flat["seed"] == str(2**70), flat


def test_through_the_dispatcher_big_ints_and_empty_keys_never_reach_aim(tmp_path: Path) -> None:
    run = Dispatcher(log_with="aim", logging_dir=tmp_path, on_error="raise").init_trackers(
        "proj", config={"seed": 2**70}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrackingWarning)
        run.log({"tokens": 2**70, "": 1.0, "loss": 1.0}, step=0)
        assert run.finish().ok
    stored = readback.get_run(tmp_path, run.trackers[0].run_hash)
    assert stored["hparams"] == {"seed": str(2**70)} and readback.metrics(stored) == {"loss": {0: 1.0}}


def test_images_figures_and_tables(repo_dir: Path) -> None:
    pytest.importorskip("PIL")
    tracker = AimTracker("proj", repo_dir)
    tracker.start()
    chw = np.linspace(0.0, 1.0, 3 * 8 * 10).reshape(3, 8, 10)  # float CHW, as a tensor gives it
    grey = (np.arange(6 * 4) % 255).astype("uint8").reshape(6, 4)
    tracker.log_images({"single": (chw, "a caption"), "many": [grey, grey[..., None]]}, step=2)
    tracker.log_table("preds", columns=["text", "label"], data=[["a | b", 1], ["line\nbreak", 0]], step=1)
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axes = plt.subplots(figsize=(2, 1), dpi=50)
    axes.plot([0, 1], [1, 0])
    tracker.log_figure(figure, "curve", step=4, dpi=50)
    plt.close(figure)
    tracker.finish()
    run = readback.get_run(repo_dir, tracker.run_hash)
    single = readback.sequence(run, "image", "single")[2]
    assert single.caption == "a caption" and single.to_pil_image().size == (10, 8)
    assert [image.to_pil_image().size for image in readback.sequence(run, "image", "many")[2]] == [(4, 6), (4, 6)]
    assert readback.sequence(run, "image", "curve")[4].to_pil_image().size == (100, 50)
    table = readback.sequence(run, "text", "preds", {"type": "table"})[1].data
    assert readback.parse_markdown_table(table) == (["text", "label"], [["a | b", "1"], ["line break", "0"]])


def test_plotly_figure_is_native(repo_dir: Path) -> None:
    go = pytest.importorskip("plotly.graph_objects")
    tracker = AimTracker("proj", repo_dir)
    tracker.start()
    tracker.log_figure(go.Figure(data=[go.Scatter(x=[0, 1], y=[1, 0])]), "interactive", step=0)
    tracker.finish()
    run = readback.get_run(repo_dir, tracker.run_hash)
    assert readback.sequence(run, "figure", "interactive")[0].to_plotly_figure().data[0].y == (1, 0)


@needs_artifacts
def test_artifacts(repo_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "model.bin").write_bytes(b"\x00weights")
    (tmp_path / "ckpt" / "sub").mkdir(parents=True)
    (tmp_path / "ckpt" / "a.txt").write_text("a")
    (tmp_path / "ckpt" / "sub" / "b.txt").write_text("b")
    tracker = AimTracker("proj", repo_dir)
    tracker.start()
    tracker.log_artifact(tmp_path / "model.bin", artifact_path="models")
    tracker.log_artifacts(tmp_path / "ckpt")
    tracker.finish()
    stored = repo_dir / "aim-artifacts" / tracker.run_hash
    assert (stored / "models" / "model.bin").read_bytes() == b"\x00weights"
    assert (stored / "sub" / "b.txt").read_text() == "b" and (stored / "a.txt").read_text() == "a"
    run = readback.get_run(repo_dir, tracker.run_hash)
    assert sorted(run.artifacts) == ["a.txt", "models/model.bin", "sub/b.txt"]


@pytest.mark.skipif(_aim_has_artifacts(), reason="this Aim has run artifacts (3.19 and later)")
def test_artifacts_without_aim_support_warn_once_and_note(tmp_path: Path) -> None:
    (tmp_path / "model.bin").write_bytes(b"w")
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "a.txt").write_text("a")
    dispatcher = Dispatcher(log_with=["aim"], logging_dir=tmp_path / "runs", on_error="raise")
    dispatcher.init_trackers("no-artifacts", init_kwargs={"aim": {"artifacts_uri": (tmp_path / "store").as_uri()}})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dispatcher.log_artifact(tmp_path / "model.bin")
        dispatcher.log_artifacts(tmp_path / "ckpt")
        dispatcher.log({"loss": 1.0}, step=0)
        report = dispatcher.finish(timeout=120)
    assert report.ok, str(report)
    about = [w for w in caught if issubclass(w.category, TrackingWarning) and "no run artifacts" in str(w.message)]
    assert len(about) == 1, [str(w.message) for w in caught]
    assert any("no run artifacts" in note for note in report.backends["aim"].notes), str(report)
    assert not (tmp_path / "store").exists()
    assert readback.metrics(readback.get_run(tmp_path / "runs", dispatcher.trackers[0].run_hash)) == {"loss": {0: 1.0}}


def test_markdown_table_escapes() -> None:
    text = markdown_table(["x|y", "z"], [["back\\slash", None]])
    assert readback.parse_markdown_table(text) == (["x|y", "z"], [["back\\slash", "None"]])


def test_construction_imports_no_sdk(tmp_path: Path) -> None:
    run_script(
        """
        import sys
        from tracking_aim import AimTracker
        tracker = AimTracker("p", sys.argv[1], run_name="r")
        assert tracker.tracker is None and tracker.display_name == "r" and tracker.project_name == "p"
        assert "aim" not in sys.modules, "constructing the tracker imported aim"
    """,
        str(tmp_path / "logs"),
    )
    assert not (tmp_path / "logs").exists()


def test_start_in_worker_while_main_thread_imports_aim(tmp_path: Path) -> None:
    """The worker imports aim in start() while the main thread imports it too (import-lock contention)."""
    result = run_script(
        """
        import sys, threading
        import tracking_core
        assert "aim" not in sys.modules
        run = tracking_core.init("contention", log_with="aim", logging_dir=sys.argv[1], on_error="raise")
        importer = threading.Thread(target=lambda: __import__("aim").Image)
        importer.start()
        import aim
        from aim import Repo, Run, Text
        importer.join()
        run.log({"x": 1.0, "t": "text"}, step=0)
        report = run.finish(timeout=90)
        print(report.backends["aim"].state, report.backends["aim"].delivered, report.ok)
        print(run.trackers[0].run_hash)
    """,
        str(tmp_path),
    )
    state, run_hash = result.stdout.splitlines()
    assert state.split() == ["finished", "1", "True"], result.stdout + result.stderr
    assert readback.metrics(readback.get_run(tmp_path, run_hash)) == {"x": {0: 1.0}}
    assert "aim up --repo" in result.stderr and result.stderr.count("tracking: aim:") == 1, result.stderr


def test_flushed_data_survives_a_kill(tmp_path: Path) -> None:
    """After ``flush()`` returns the points are on disk: a SIGKILL right after loses none."""
    result = run_script(
        """
        import os, signal, sys
        import tracking_core
        run = tracking_core.init("killed", log_with="aim", logging_dir=sys.argv[1])
        for step in range(100):
            run.log({"loss": float(step)}, step=step)
        assert run.flush(timeout=60)
        print(run.get_tracker("aim", unwrap=True).hash, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """,
        str(tmp_path),
        returncode=-9,
    )
    stored = readback.metrics(readback.get_run(tmp_path, result.stdout.strip()))
    assert stored["loss"] == {step: float(step) for step in range(100)}


def test_aim_tracking_thread_uses_run_track(tmp_path: Path) -> None:
    """With Aim's tracking thread on, points go through ``Run.track`` (the batched route needs a synchronous run),
    and ``finish`` waits for that thread: ``Run.close`` alone leaves it writing to a closed run, hanging the exit.
    """
    result = run_script(
        """
        import os, sys
        os.environ["__AIM_ENABLE_TRACKING_THREAD__"] = "1"
        from tracking_aim import AimTracker
        tracker = AimTracker("threaded", sys.argv[1])
        tracker.start()
        assert tracker._writer is None, "the batched route was used with Aim's tracking thread"
        tracker.log_batch([({"loss": float(step), "note": "t"}, step, {"timestamp": 1.0}) for step in range(30)])
        tracker.finish()
        print(tracker.run_hash)
    """,
        str(tmp_path),
    )
    run = readback.get_run(tmp_path, result.stdout.strip().splitlines()[-1])
    assert readback.metrics(run) == {"loss": {step: float(step) for step in range(30)}}
    assert sorted(readback.sequence(run, "text", "note")) == list(range(30))
