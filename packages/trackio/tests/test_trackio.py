"""Trackio-specific behaviour: where the store goes, import-time traps, per-run state, media, artifacts."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import warnings
from pathlib import Path

import pytest
from tracking_core import Dispatcher, FinishReport, TrackingWarning
from tracking_core.intake.config import sanitize_config
from tracking_core.testing.contract import contract_config
from tracking_trackio import TrackioTracker
from tracking_trackio.older import before_v0_24 as legacy
from tracking_trackio.older import v0_0_3 as first
from tracking_trackio.store import media_file

from .test_contract import as_stored, keeps_no_config, read_config, read_rows, run_python, run_reader, trackio_db

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def finish_ok(dispatcher: Dispatcher) -> FinishReport:
    report = dispatcher.finish(timeout=120)
    assert report.ok and report.backends["trackio"].state == "finished", str(report)
    return report


# -- where the data goes --------------------------------------------------------------------------------


def test_fresh_process_home_untouched_stdout_clean_and_trackio_reader_agrees(tmp_path: Path) -> None:
    """The full path a user takes: data under logging_dir, nothing in ~, nothing on stdout, and the notice's
    command (TRACKIO_DIR=..., or HF_HOME=... for a release that ignores TRACKIO_DIR) makes Trackio's own API
    find the run, config and metrics."""
    result = run_python(
        """
        import numpy as np, tracking_core
        with tracking_core.init("home-check", log_with="trackio", logging_dir="runs", config={"lr": 0.1, "opt": {"name": "adam"}}) as run:
            for step in range(50):
                run.log({"loss": 1 / (step + 1), "phase": "warmup"}, step=step)
            run.log_images({"sample": np.zeros((8, 8, 3), "uint8")}, step=49)
            run.log_table("preds", columns=["x", "y"], data=[[1, "a"]], step=49)
        """,
        tmp_path,
    )
    assert result.stdout == "", f"trackio's banner reached stdout: {result.stdout!r}"
    notices = [line for line in result.stderr.splitlines() if "trackio show" in line]
    assert len(notices) == 1, result.stderr
    store = (tmp_path / "runs" / "trackio").resolve()
    if hasattr(__import__("trackio"), "show"):
        assert f"{legacy.store_setting(store)} trackio show --project home-check" in notices[0]
    else:  # trackio 0.0.3 to 0.0.5: no `trackio show`, a dashboard that reads ./.trackio (the reader below links it)
        assert f"in {store} ({first.NO_VIEW})" in notices[0]
    leftovers = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "home").rglob("*"))
    assert leftovers == [], f"written under HOME: {leftovers}"

    # Trackio's reader, pointed at the store the way the notice says (a fresh process, env set before import).
    check = run_reader(
        """
        import json, trackio
        from tracking_trackio import store
        from tracking_trackio.older import v0_0_3 as first
        runs = store.run_names("home-check")  # Trackio's own SQLiteStorage.get_runs (0.0.3: its dashboard's)
        logs = store.run_logs("home-check", runs[0])  # its get_logs (get_metrics before 0.2.9; 0.0.3: pandas)
        config = first.run_config("home-check", runs[0])  # its get_run_config (0.4+), or as 0.0.3 to 0.0.16 keep it
        print(json.dumps({"runs": len(runs), "config": config,
                          "steps": sorted({row["step"] for row in logs if "loss" in row}),
                          "phase": logs[0].get("phase"), "loss10": [r["loss"] for r in logs if r["step"] == 10]}))
        """,
        tmp_path,
        store,
    )
    seen = json.loads(check.stdout.strip().splitlines()[-1])
    assert seen["runs"] == 1 and seen["steps"] == list(range(50)) and seen["phase"] == "warmup"
    assert seen["loss10"] == [pytest.approx(1 / 11, rel=1e-15)]  # trackio 0.0.3's reader parses with pandas
    if seen["config"] is None:  # trackio before 0.4 keeps no run config
        assert not legacy.stores_config()
        return
    # the user's config exactly; the only extra keys are Trackio's own underscored ones
    assert {k: v for k, v in seen["config"].items() if not k.startswith("_")} == {"lr": 0.1, "opt": {"name": "adam"}}
    assert {k for k in seen["config"] if k.startswith("_")} <= {"_Created", "_Group", "_Username", "_Command"}


def test_trackio_imported_first_with_its_default_dir(tmp_path: Path) -> None:
    """trackio already imported (its dir fixed to $HF_HOME/trackio at import): the run still lands in logging_dir,
    and two consecutive runs with different logging_dirs each get their own store."""
    run_python(
        """
        from pathlib import Path
        import trackio, trackio.utils, tracking_core
        default = Path(trackio.utils.TRACKIO_DIR)  # a str before trackio 0.0.20
        for folder in ("first", "second"):
            with tracking_core.init("p", log_with="trackio", logging_dir=folder) as run:
                run.log({"only_" + folder: 1.0}, step=0)
        config = getattr(trackio, "config", {})  # trackio 0.0.3 has no module-global config
        assert config == {}, config  # the module-global was not rebound to our run's config
        assert not default.exists(), default
        """,
        tmp_path,
    )
    for folder in ("first", "second"):
        rows = read_rows(tmp_path / folder, "p")
        assert [metrics for _, metrics in rows] == [{f"only_{folder}": 1.0}], rows
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("*"))


def test_worker_start_while_main_thread_imports_trackio(tmp_path: Path) -> None:
    """Import-lock contention: the worker imports trackio in start() while the main thread imports it too."""
    run_python(
        """
        import threading, tracking_core
        dispatcher = tracking_core.Dispatcher(log_with=["trackio"], logging_dir="runs", on_error="raise")
        dispatcher.init_trackers("race")                      # worker thread starts importing trackio now
        import trackio                                        # ... and so does the main thread
        dispatcher.log({"loss": 0.5}, step=0)
        report = dispatcher.finish(timeout=60)
        assert report.ok, report
        assert dispatcher.get_tracker("trackio", unwrap=True) is not None
        """,
        tmp_path,
    )
    assert [metrics for _, metrics in read_rows(tmp_path / "runs", "race")] == [{"loss": 0.5}]


def test_trackio_dir_env_wins_over_logging_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    user_dir = tmp_path / "user" / "trackio"
    monkeypatch.setenv("TRACKIO_DIR", str(user_dir))  # set after trackio was imported: honoured all the same
    with caplog.at_level(logging.INFO, logger="tracking"):
        dispatcher = Dispatcher(log_with=["trackio"], logging_dir=tmp_path / "runs", on_error="raise")
        dispatcher.init_trackers("env-wins")
        dispatcher.log({"loss": 1.0}, step=0)
        finish_ok(dispatcher)
    assert [metrics for _, metrics in read_rows(tmp_path / "user", "env-wins")] == [{"loss": 1.0}]
    assert not (tmp_path / "runs" / "trackio").exists()
    notice = [r.getMessage() for r in caplog.records if "trackio show" in r.getMessage()]
    # a release that ignores TRACKIO_DIR (before 0.5.2) needs it said in the view command all the same
    view = "" if legacy.reads_trackio_dir() else legacy.store_setting(user_dir) + " "
    command = (
        f"view: {view}trackio show --project env-wins" if hasattr(__import__("trackio"), "show") else first.NO_VIEW
    )
    assert notice == [f"trackio: run {dispatcher.trackers[0].tracker.name!r} in {user_dir} ({command})"]


def test_overlapping_runs_share_one_store_and_say_so(tmp_path: Path) -> None:
    """Trackio's location is process-wide: a run started while another is active joins its directory, with a warning."""
    first = Dispatcher(log_with=["trackio"], logging_dir=tmp_path / "a", on_error="raise")
    first.init_trackers("overlap-a")
    first.log({"a": 1.0}, step=0)
    first.flush()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        second = Dispatcher(log_with=["trackio"], logging_dir=tmp_path / "b", on_error="raise", blocking=True)
        second.init_trackers("overlap-b")
        second.log({"b": 2.0}, step=0)
    messages = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]
    assert any("one storage directory per process" in m and str(tmp_path / "a") in m for m in messages), messages
    first.log({"a": 3.0}, step=1)
    finish_ok(second)
    finish_ok(first)
    assert [m for _, m in read_rows(tmp_path / "a", "overlap-a")] == [{"a": 1.0}, {"a": 3.0}]
    assert [m for _, m in read_rows(tmp_path / "a", "overlap-b")] == [{"b": 2.0}]
    assert not (tmp_path / "b" / "trackio").exists()
    # once both are finished, the next run gets its own logging_dir again
    third = Dispatcher(log_with=["trackio"], logging_dir=tmp_path / "b", on_error="raise")
    third.init_trackers("overlap-c")
    third.log({"c": 1.0}, step=0)
    finish_ok(third)
    assert [m for _, m in read_rows(tmp_path / "b", "overlap-c")] == [{"c": 1.0}]


# -- per-run objects, config, lifecycle ---------------------------------------------------------------


def test_config_round_trip_is_exact_with_no_framework_keys(tmp_path: Path) -> None:
    config = contract_config(tmp_path)
    dispatcher = Dispatcher(log_with=["trackio"], logging_dir=tmp_path / "runs", on_error="raise")
    dispatcher.init_trackers("cfg", config=config)
    dispatcher.log({"loss": 1.0}, step=0)
    if keeps_no_config(finish_ok(dispatcher).backends["trackio"].notes):
        return
    stored = read_config(tmp_path / "runs", "cfg")
    trackio_own = ("_Created", "_Group", "_Username", "_Command")  # what Trackio adds itself (_Command: 0.45 on)
    assert {k: v for k, v in stored.items() if k not in trackio_own} == sanitize_config(config)


def test_config_without_any_metrics_is_still_stored(tmp_path: Path) -> None:
    dispatcher = Dispatcher(log_with=["trackio"], logging_dir=tmp_path / "runs", on_error="raise")
    dispatcher.init_trackers("cfg-only", config={"lr": 0.5})
    if keeps_no_config(finish_ok(dispatcher).backends["trackio"].notes):
        assert not trackio_db(tmp_path / "runs", "cfg-only").exists()  # no row written to carry it
        return
    assert read_config(tmp_path / "runs", "cfg-only")["lr"] == 0.5
    # the one empty row that carries it; trackio 0.0.3 to 0.0.16 store the config itself
    assert [m for _, m in read_rows(tmp_path / "runs", "cfg-only")] == ([] if first.keeps_config() else [{}])


def test_direct_use_config_update_after_logging(tmp_path: Path) -> None:
    """Without the dispatcher: step=None counts on, a config stored after logging is not lost, and the
    caller's own trackio state (current run, trackio.config) is left alone."""
    import trackio

    current_run = first.current_run(trackio)
    before_run, before_config = current_run.get(), getattr(trackio, "config", None)
    tracker = TrackioTracker("direct", logging_dir=tmp_path / "runs", name="my-run")
    tracker.start()
    # trackio before 0.27 has no CPU monitor at all
    assert tracker.tracker.name == "my-run" and getattr(tracker.tracker, "_cpu_monitor", None) is None
    tracker.log({"x": 1.0})
    tracker.log({"x": 2.0})
    tracker.flush()
    tracker.store_init_configuration({"late": True})
    tracker.log({"x": 3.0}, step=7)
    tracker.finish()
    tracker.finish()
    assert current_run.get() is before_run and getattr(trackio, "config", None) is before_config
    # the run's sender thread (< 0.18: its client thread; none before 0.0.20) has ended
    sender = getattr(tracker.tracker, "_local_sender_thread", None) or getattr(tracker.tracker, "_client_thread", None)
    assert sender is None or not sender.is_alive()
    assert read_rows(tmp_path / "runs", "direct") == list(
        zip(as_stored([0, 1, 7]), [{"x": 1.0}, {"x": 2.0}, {"x": 3.0}])
    )
    if not keeps_no_config(tracker.report_notes()):
        assert read_config(tmp_path / "runs", "direct")["late"] is True


def test_a_step_logged_twice_shows_twice_in_the_history(tmp_path: Path) -> None:
    tracker = TrackioTracker("twice", logging_dir=tmp_path / "runs")
    tracker.start()
    tracker.log({"a": 1.0}, step=3)
    tracker.log({"a": 2.0}, step=3)
    tracker.finish()
    if first.numbers_rows():  # two rows, numbered 0 and 1: the store cannot say at which steps they were logged
        with pytest.raises(RuntimeError, match="numbers the run's rows"):
            tracker.read_back_history()
        assert tracker.read_back_metrics()["a"] == {0: 1.0, 1: 2.0}
        return
    assert tracker.read_back_history()["a"] == [(3, 1.0), (3, 2.0)]
    assert tracker.read_back_metrics()["a"] == {3: 2.0}  # the last row at a step wins


def test_failed_init_raises_and_releases_the_store(tmp_path: Path) -> None:
    tracker = TrackioTracker("registry-reserved", logging_dir=tmp_path / "runs")  # a name Trackio refuses
    try:
        tracker.start()
    except ValueError as error:
        assert "reserved" in str(error)
    else:
        tracker.finish()
        pytest.skip("trackio before 0.35 accepts the project name 'registry-reserved'")
    # the autouse fixture checks that no storage claim is left behind


def test_flush_makes_rows_durable_before_finish(tmp_path: Path) -> None:
    dispatcher = Dispatcher(log_with=["trackio"], logging_dir=tmp_path / "runs", on_error="raise")
    dispatcher.init_trackers("flush")
    for step in range(300):
        dispatcher.log({"v": float(step)}, step=step)
    dispatcher.flush()
    assert len(read_rows(tmp_path / "runs", "flush")) == 300  # a second connection, as another process would read it
    finish_ok(dispatcher)


def test_no_sdk_threads_left_after_finish(tmp_path: Path) -> None:
    before = set(threading.enumerate())
    dispatcher = Dispatcher(log_with=["trackio"], logging_dir=tmp_path / "runs", on_error="raise")
    dispatcher.init_trackers("threads")
    dispatcher.log({"v": 1.0}, step=0)
    finish_ok(dispatcher)
    left = [t for t in set(threading.enumerate()) - before if t.is_alive()]
    assert left == [], left


def test_reserved_keys_are_renamed_once_and_reported(tmp_path: Path) -> None:
    dispatcher = Dispatcher(log_with=["trackio"], logging_dir=tmp_path / "runs", on_error="raise")
    dispatcher.init_trackers("keys")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(3):
            dispatcher.log({"step": step, "time": 1.5, "__private": 2.0, "loss": 0.1}, step=step)
        report = dispatcher.finish(timeout=60)
    assert not [w for w in caught if "Reserved keys renamed" in str(w.message)], "trackio's own per-call warning fired"
    assert report.backends["trackio"].key_map == {"step": "step_", "time": "time_", "__private": "_private"}
    rows = read_rows(tmp_path / "runs", "keys")
    assert rows[2] == (2, {"step_": 2, "time_": 1.5, "_private": 2.0, "loss": 0.1})


# -- media and artifacts -----------------------------------------------------------------------------


def test_images_tables_figures_and_artifacts(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure()
    figure.add_subplot().plot([0, 1, 4])
    model = tmp_path / "model.bin"
    model.write_bytes(b"weights")
    folder = tmp_path / "checkpoint"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "opt.bin").write_bytes(b"state")

    dispatcher = Dispatcher(log_with=["trackio"], logging_dir=tmp_path / "runs", on_error="raise")
    dispatcher.init_trackers("media")
    chw_float = np.linspace(0, 1, 3 * 5 * 7, dtype="float32").reshape(3, 5, 7)
    dispatcher.log_images({"grid": [np.zeros((5, 7, 3), "uint8"), chw_float]}, step=2)
    dispatcher.log_table("preds", columns=["text", "label"], data=[["a", 1], ["b", 0]], step=2)
    dispatcher.log_figure(figure, "curve", step=3)
    dispatcher.log_figure(figure, "curve_png", step=3, log_kwargs={"trackio": {"dpi": 30}})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dispatcher.log_artifact(model, "weights")
        dispatcher.log_artifacts(folder)
        report = finish_ok(dispatcher)

    import trackio

    store = tmp_path / "runs" / "trackio"
    if not hasattr(trackio, "Image"):  # trackio before 0.2.8 (no tables before 0.3.2 either): a note each
        notes = report.backends["trackio"].notes
        for lacking in ("has no trackio.Image", "has no trackio.Table", "has no artifacts"):
            assert sum(lacking in note for note in notes) == 1, notes
        return
    values = {
        key: (step, value) for step, metrics in read_rows(tmp_path / "runs", "media") for key, value in metrics.items()
    }
    from PIL import Image

    sizes = {}
    for key in ("grid", "grid/1", "curve", "curve_png"):
        assert values[key][0] == (3 if key.startswith("curve") else 2), values[key]
        assert values[key][1]["_type"] == "trackio.image", values[key]
        assert values[key][1]["file_path"].endswith(".png"), values[key]
        with Image.open(media_file(store, values[key][1]["file_path"])) as image:
            sizes[key] = image.size
    assert sizes["grid"] == sizes["grid/1"] == (7, 5)  # the CHW float image became HWC uint8
    assert sizes["curve"] == (640, 480)  # a figure is always a PNG, at matplotlib's default size
    assert sizes["curve_png"] == (192, 144)  # savefig kwargs (dpi=30) reached the PNG rendering
    if not hasattr(trackio, "Table"):
        assert sum("has no trackio.Table" in note for note in report.backends["trackio"].notes) == 1
    else:
        assert values["preds"] == (
            2,
            {"_type": "trackio.table", "_value": [{"text": "a", "label": 1}, {"text": "b", "label": 0}]},
        )

    if not hasattr(trackio, "Artifact"):  # trackio before 0.30: one warning and a report note instead
        notes = report.backends["trackio"].notes
        assert sum("has no artifacts" in note for note in notes) == 1, str(report)
        assert sum("has no artifacts" in str(w.message) for w in caught) == 1, [str(w.message) for w in caught]
        return
    with sqlite3.connect(trackio_db(tmp_path / "runs", "media")) as connection:
        rows = connection.execute(
            "SELECT a.name, v.manifest FROM artifacts a JOIN artifact_versions v ON v.artifact_id = a.id ORDER BY a.name"
        ).fetchall()
    connection.close()
    manifests = {name: sorted(entry["path"] for entry in json.loads(manifest)) for name, manifest in rows}
    assert manifests == {"checkpoint": ["sub/opt.bin"], "model.bin": ["weights/model.bin"]}
