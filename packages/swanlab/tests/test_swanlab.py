"""SwanLab-specific behaviour: embedded default, settings precedence, keys, media, and an unreachable service."""

from __future__ import annotations

import builtins
import io
import logging
import socket
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import tracking_core
from tracking_core.errors import TrackingWarning
from tracking_core.testing.reliability import waiting_steps
from tracking_swanlab import SwanLabTracker
from tracking_swanlab.older import v0_5_8, v0_6_2
from tracking_swanlab.reader import read_run

from .conftest import isolate

SDK_THREADS = ("SwanLab·Monitor", "SwanLab·TerminalProxy")
#: SwanLab 0.6.2 to 0.7.x (no ``swanlab.sdk``): the floor cell. What differs there is in test_earlier.py.
EARLIER = v0_6_2.in_use()
only_sdk_line = pytest.mark.skipif(EARLIER, reason="SwanLab 0.8+ settings and threads (test_earlier.py covers 0.6-0.7)")
#: SwanLab 0.5.8 to 0.6.1 have no offline mode: a run without an account is written in local mode (test_local.py).
LOCAL = v0_5_8.in_use()
WRITTEN, WRITTEN_HINT = ("local", "swanlab watch") if LOCAL else ("offline", "swanlab sync")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """CWD, HOME and SwanLab's root inside the test folder; no SwanLab variables from the outside."""
    isolate(monkeypatch, tmp_path, cwd=tmp_path / "work")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    return tmp_path


def files_under(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file()) if folder.exists() else []


def run_dispatcher(logging_dir: Path, init_kwargs: dict | None = None, **options) -> tracking_core.Dispatcher:
    options.setdefault("on_error", "raise")
    dispatcher = tracking_core.Dispatcher(log_with="swanlab", logging_dir=logging_dir, **options)
    return dispatcher.init_trackers("swan-test", init_kwargs={"swanlab": init_kwargs or {}})


# -- embedded default -----------------------------------------------------------------------------
def test_embedded_default_writes_only_under_logging_dir(isolated: Path, caplog: pytest.LogCaptureFixture) -> None:
    logs = isolated / "logs"
    stdout = sys.stdout
    with caplog.at_level(logging.INFO, logger="tracking"):
        run = run_dispatcher(logs)
        run.get_tracker("swanlab", unwrap=True)
        threads_during = {thread.name for thread in threading.enumerate()}
        assert sys.stdout is stdout, "SwanLab's terminal proxy replaced sys.stdout"
        for step in range(50):
            run.log({"loss": 1 / (step + 1)}, step=step)
        report = run.finish()
    assert report.ok, str(report)
    tracker = run.get_tracker("swanlab")
    assert tracker.mode == WRITTEN and tracker.fallback_reason is None
    assert tracker.run_dir.parent == logs / "swanlog"
    if not EARLIER:  # SwanLab's monitor runs as SwanLab defaults it (0.6-0.7 start none under pytest)
        assert set(SDK_THREADS) <= threads_during, threads_during
    notices = [r.getMessage() for r in caplog.records if r.getMessage().startswith("swanlab:")]
    shown = tracker.run_dir.parent if LOCAL else tracker.run_dir  # `swanlab watch` shows a log folder
    assert len(notices) == 1 and f"{WRITTEN_HINT} {shown}" in notices[0], notices
    assert read_run(tracker.run_dir).scalars["loss"][49] == pytest.approx(1 / 50)
    # nothing in the CWD, HOME or SwanLab's root; only SwanLab's run and the dispatcher's run folder
    assert files_under(isolated / "work") == [] and files_under(isolated / "home") == []
    assert {path.relative_to(logs).parts[0] for path in files_under(logs)} <= {"swanlog", "swan-test"}
    leftover = [t for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()]
    assert not leftover, leftover


def test_project_kwarg_wins_and_aliases_pass_through(isolated: Path) -> None:
    chosen = isolated / "chosen"
    run = run_dispatcher(isolated / "logs", {"project": "explicit", "logdir": str(chosen), "experiment_name": "exp-1"})
    run.log({"x": 1.0}, step=0)
    assert run.finish().ok
    tracker = run.get_tracker("swanlab")
    assert tracker.run_dir.parent == chosen
    data = read_run(tracker.run_dir)
    assert (data.project, data.name) == ("explicit", "exp-1")
    assert not (isolated / "logs" / "swanlog").exists()


@only_sdk_line
def test_sdk_environment_wins_over_defaults(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWANLAB_LOG_DIR", str(isolated / "env-dir"))
    monkeypatch.setenv("SWANLAB_PROBE_MONITOR", "false")
    monkeypatch.setenv("SWANLAB_PROBE_CONDA", "true")
    run = run_dispatcher(isolated / "logs")
    sdk_run = run.get_tracker("swanlab", unwrap=True)  # SwanLab's run, once started
    assert "SwanLab·Monitor" not in {thread.name for thread in threading.enumerate()}
    assert sdk_run._ctx.config.settings.probe.conda is True  # over this package's default
    run.log({"x": 1.0}, step=0)
    assert run.finish().ok
    tracker = run.get_tracker("swanlab")
    assert tracker.run_dir.parent == isolated / "env-dir"
    assert read_run(tracker.run_dir).scalars == {"x": {0: 1.0}}


def test_disabled_mode_from_environment(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWANLAB_MODE", "disabled")
    run = run_dispatcher(isolated / "logs")
    run.log({"x": 1.0}, step=0)
    report = run.finish()
    assert report.ok and run.get_tracker("swanlab").mode == "disabled"
    assert not (isolated / "logs" / "swanlog").exists()


def test_direct_use_step_none_and_finish_twice(isolated: Path) -> None:
    tracker = SwanLabTracker("direct", logging_dir=isolated / "logs")
    assert not (isolated / "logs").exists()
    tracker.start()
    tracker.store_init_configuration({"lr": 0.1})
    tracker.log({"a": 1.0})
    tracker.log({"a": 2.0})
    tracker.log({"a": 5.0}, step=7)
    tracker.finish()
    tracker.finish()
    data = read_run(tracker.run_dir)
    assert data.scalars["a"][7] == 5.0 and sorted(data.scalars["a"].values()) == [1.0, 2.0, 5.0]
    assert data.config == {"lr": 0.1}


# -- values, keys, config -------------------------------------------------------------------------
def test_keys_swanlab_would_rewrite_are_mapped_explicitly(isolated: Path) -> None:
    long_key, cut = "k" * 600, 255 if EARLIER else 512  # SwanLab's own limit in each SDK line
    run = run_dispatcher(isolated / "logs")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(3):
            run.log({"/lead": 1.0, "trail/": 2.0, "../up": 3.0, "a//b": 4.0, "tab\tin": 5.0, long_key: 6.0}, step=step)
        report = run.finish()
    expected = {"/lead": "lead", "trail/": "trail", "../up": "up", "tab\tin": "tab_in", long_key: "k" * cut}
    assert report.backends["swanlab"].key_map == expected
    renamed = [
        str(w.message) for w in caught if issubclass(w.category, TrackingWarning) and "stored as" in str(w.message)
    ]
    assert len(renamed) == len(expected), renamed
    scalars = read_run(run.get_tracker("swanlab").run_dir).scalars
    for stored, value in [("lead", 1.0), ("trail", 2.0), ("up", 3.0), ("a//b", 4.0), ("tab_in", 5.0), ("k" * cut, 6.0)]:
        assert scalars[stored] == {0: value, 1: value, 2: value}, stored


def test_type_change_and_repeated_step_warn_once(isolated: Path) -> None:
    run = run_dispatcher(isolated / "logs")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.log({"metric": 1.0}, step=0)
        run.log({"metric": "not a number"}, step=1)
        run.log({"metric": "still not"}, step=2)
        run.log({"metric": 3.0}, step=3)
        run.log({"metric": 4.0}, step=3)
        run.log({"metric": 5.0}, step=4)
        assert run.finish().ok
    messages = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]
    assert sum("one type per key" in m for m in messages) == 1, messages
    assert sum("repeat at step 3" in m for m in messages) == 1, messages
    data = read_run(run.get_tracker("swanlab").run_dir)
    assert data.scalars["metric"] == {0: 1.0, 3: 3.0, 4: 5.0}
    assert "metric" not in data.media


def test_a_step_logged_twice_in_one_process_is_one_point_in_the_history(isolated: Path) -> None:
    tracker = SwanLabTracker("twice", logging_dir=isolated / "logs")
    tracker.start()
    tracker.log({"a": 1.0}, step=3)
    with pytest.warns(TrackingWarning, match="repeat at step 3"):
        tracker.log({"a": 2.0}, step=3)
    tracker.finish()
    # SwanLab keeps the first value at a step and drops a repeat, so the tracker skips it (with the warning).
    assert tracker.read_back_history()["a"] == [(3, 1.0)]


def test_config_round_trip(isolated: Path) -> None:
    config = {
        "lr": 0.001,
        "flag": True,
        "none": None,
        "layers": [64, 32],
        "model": {"name": "mlp", "depth": 2, "nothing": None},
        "api_key": "secret-value",
    }
    run = tracking_core.Dispatcher(log_with="swanlab", logging_dir=isolated / "logs", on_error="raise")
    run.init_trackers("swan-test", config=config)
    assert run.finish().ok
    stored = read_run(run.get_tracker("swanlab").run_dir).config
    assert stored["lr"] == 0.001 and stored["layers"] == [64, 32]
    if LOCAL:  # SwanLab before 0.6.2 stores a boolean as a number: one warning and a note
        notes = run.get_tracker("swanlab").report_notes()
        assert stored["flag"] == 1 and any("boolean config value as a number" in note for note in notes), notes
    else:
        assert stored["flag"] is True
    assert stored["model"] == {"name": "mlp", "depth": 2, "nothing": None}
    assert stored["none"] == "None"  # SwanLab itself would store {} here
    assert "secret-value" not in repr(stored)


# -- media -----------------------------------------------------------------------------------------
def test_images_tables_figures_artifacts(isolated: Path) -> None:
    np = pytest.importorskip("numpy")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 2))
    figure.add_subplot().plot([0, 1], [1, 0])
    artifact = isolated / "model.txt"
    artifact.write_text("weights")
    folder = isolated / "outputs"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.json").write_text("{}")
    (folder / "b.txt").write_text("b")

    import swanlab

    has_tables = getattr(getattr(swanlab, "echarts", None), "Table", None) is not None
    has_saves = not EARLIER or hasattr(swanlab, "save")
    run = run_dispatcher(isolated / "logs")
    image = np.zeros((8, 12, 3), dtype=np.uint8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.log_images({"single": image, "pair": [image, image[..., 0]]}, step=3)
        run.log_table("scores", columns=["name", "score"], data=[["a", np.int64(1)], ["b", np.float32(0.5)]], step=3)
        run.log_figure(figure, "curve", step=4)
        run.log_artifact(artifact)
        run.log_artifacts(folder)
        report = run.finish()
    assert report.ok, str(report)
    missing = [str(w.message) for w in caught if "this SwanLab release has no" in str(w.message)]
    notes = "\n".join(run.get_tracker("swanlab").report_notes())
    # SwanLab 0.6.2-0.6.4 have no tables, releases before 0.7.15 no saved files: one warning and a note each
    assert len(missing) == (not has_tables) + (not has_saves), missing
    assert ("has no tables" in notes) != has_tables and ("has no saved files" in notes) != has_saves, notes
    data = read_run(run.get_tracker("swanlab").run_dir)
    assert [(p.step, p.kind, len(p.files)) for p in data.media["single"]] == [(3, "image", 1)]
    assert [(p.step, p.kind, len(p.files)) for p in data.media["pair"]] == [(3, "image", 2)]
    assert [(p.step, p.kind) for p in data.media["curve"]] == [(4, "image")]
    assert data.media["curve"][0].files[0].read_bytes().startswith(b"\x89PNG")
    assert data.tables() == ({"scores": [["a", 1], ["b", 0.5]]} if has_tables else {})
    if not has_saves:
        assert data.saved_files == []
        return
    # SwanLab adds its own "requirements" snapshot where `pip` is importable (not in uv-made cells)
    logged = sorted(name for name in data.saved_files if name != "requirements")
    assert logged == ["b.txt", "model.txt", "sub/a.json"], data.saved_files
    assert (data.run_dir / "files" / "sub" / "a.json").read_text() == "{}"
    assert (data.run_dir / "files" / "model.txt").read_text() == "weights"


# -- no account, no network ------------------------------------------------------------------------
@pytest.fixture
def blackhole() -> Iterator[int]:
    """A loopback port that accepts connections and never answers (a firewall that swallows packets)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            held.append(connection)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(2)
    for connection in held:
        connection.close()
    server.close()


@pytest.fixture
def refused_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now: connections are refused
    return port


def log_while_starting(run: tracking_core.Dispatcher, points: int) -> list[float]:
    costs = []
    for step in range(points):
        started = time.perf_counter()
        run.log({"loss": 1.0 / (step + 1), "step_value": float(step)}, step=step)
        costs.append(time.perf_counter() - started)
    return costs


def test_unanswering_service_falls_back_to_offline(isolated: Path, blackhole: int, monkeypatch, caplog) -> None:
    monkeypatch.setenv("SWANLAB_API_KEY", "fake-key-" + "x" * 20)
    monkeypatch.setenv("SWANLAB_API_HOST", f"http://127.0.0.1:{blackhole}")
    began = time.monotonic()
    with caplog.at_level(logging.INFO, logger="tracking"):
        run = run_dispatcher(isolated / "logs", {"online_check_timeout": 1.0}, on_error="warn")
        costs = log_while_starting(run, 200)
        report = run.finish(timeout=60)
    # the start-up (seconds against an unanswering service) never held the loop: no wait for queue room, and
    # no call anywhere near that long (a bound a loaded machine cannot reach by scheduling alone)
    assert report.backends["swanlab"].loop_waited_seconds == 0.0
    assert max(costs) < 0.5, f"log() was held: max {max(costs) * 1000:.1f} ms"
    assert time.monotonic() - began < 30
    tracker = run.get_tracker("swanlab")
    assert report.ok, str(report)
    assert tracker.mode == WRITTEN and "127.0.0.1" in tracker.fallback_reason, tracker.fallback_reason
    assert f"swanlab: fell back to {'a local' if LOCAL else 'an offline'} run because SwanLab service at" in str(report)
    notice = [r.getMessage() for r in caplog.records if r.getMessage().startswith("swanlab:")]
    assert len(notice) == 1 and "because SwanLab service at" in notice[0] and WRITTEN_HINT in notice[0], notice
    scalars = read_run(tracker.run_dir).scalars
    assert sorted(scalars["loss"]) == list(range(200))


@pytest.mark.parametrize("explicit", [False, True], ids=["auto-offline", "explicit-online-spills"])
def test_refused_service(isolated: Path, refused_port: int, monkeypatch, explicit: bool) -> None:
    monkeypatch.setenv("SWANLAB_API_KEY", "fake-key-" + "x" * 20)
    monkeypatch.setenv("SWANLAB_API_HOST", f"http://127.0.0.1:{refused_port}")
    if explicit:
        monkeypatch.setenv("SWANLAB_MODE", "online")
    run = run_dispatcher(isolated / "logs", on_error="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        costs = log_while_starting(run, 100)
        report = run.finish(timeout=60)
    # the start-up (seconds against an unanswering service) never held the loop: no wait for queue room, and
    # no call anywhere near that long (a bound a loaded machine cannot reach by scheduling alone)
    assert report.backends["swanlab"].loop_waited_seconds == 0.0
    assert max(costs) < 0.5, f"log() was held: max {max(costs) * 1000:.1f} ms"
    backend = report.backends["swanlab"]
    tracker = run.get_tracker("swanlab")
    if not explicit:
        assert report.ok and tracker.mode == WRITTEN and "refused" in tracker.fallback_reason
        assert sorted(read_run(tracker.run_dir).scalars["loss"]) == list(range(100))
        return
    assert backend.state == "start_failed" and "unreachable" in backend.last_error, str(report)
    assert backend.spilled == 100 and backend.delivered == 0
    assert waiting_steps(run.run_dir, "swanlab") == list(range(100))  # each waits for `tracking replay`
    assert not (isolated / "logs" / "swanlog").exists()


def test_online_without_key_never_prompts_even_on_a_tty(isolated: Path, monkeypatch) -> None:
    class TTY(io.StringIO):
        def isatty(self) -> bool:
            return True

        def fileno(self) -> int:
            raise io.UnsupportedOperation("fileno")  # SwanLab counts this as interactive

    asked: list[str] = []
    monkeypatch.setattr(sys, "stdin", TTY())
    monkeypatch.setattr(builtins, "input", lambda prompt="": asked.append(prompt) or "3")
    monkeypatch.setenv("SWANLAB_MODE", "online")
    run = run_dispatcher(isolated / "logs", on_error="warn")
    run.log({"x": 1.0}, step=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = run.finish(timeout=30)
    assert asked == []
    backend = report.backends["swanlab"]
    assert backend.state == "start_failed" and "no API key" in backend.last_error, str(report)
    assert backend.spilled == 1


@pytest.mark.parametrize("explicit", [False, True], ids=["auto-offline", "explicit-online-fails"])
def test_rejected_credentials_fall_back_to_offline(isolated: Path, monkeypatch, explicit: bool) -> None:
    """A host that answers but refuses the key: the online start fails fast and the run goes offline, or,
    with ``SWANLAB_MODE=online`` chosen, fails with the SDK's own login error (spilled, not offline)."""
    import http.server

    class Unauthorized(http.server.BaseHTTPRequestHandler):
        def answer(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            body = b'{"message": "invalid api key"}'
            self.send_response(401)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_HEAD = answer

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Unauthorized)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("SWANLAB_API_KEY", "a" * 21)  # SwanLab 0.6 checks a key's form (21 letters) before it asks
        monkeypatch.setenv("SWANLAB_API_HOST", f"http://127.0.0.1:{server.server_address[1]}")
        if explicit:
            monkeypatch.setenv("SWANLAB_MODE", "online")
        run = run_dispatcher(isolated / "logs", on_error="warn")
        run.log({"x": 1.0}, step=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = run.finish(timeout=60)
    finally:
        server.shutdown()
        server.server_close()
    tracker = run.get_tracker("swanlab")
    refused = "Login failed" if EARLIER else "AuthenticationError"  # each SDK line's own error for a 401
    if explicit:
        backend = report.backends["swanlab"]
        assert backend.state == "start_failed" and refused in backend.last_error, str(report)
        assert backend.spilled == 1
        return
    assert report.ok and tracker.mode == WRITTEN, str(report)
    assert refused in tracker.fallback_reason, tracker.fallback_reason
    assert read_run(tracker.run_dir).scalars == {"x": {0: 1.0}}


@only_sdk_line
def test_user_settings_object_wins_over_the_packages_defaults(isolated: Path) -> None:
    import swanlab

    settings = swanlab.Settings(probe=swanlab.Settings.Probe(monitor=False, conda=True))
    run = run_dispatcher(isolated / "logs", {"settings": settings})
    sdk_run = run.get_tracker("swanlab", unwrap=True)  # SwanLab's run, once started
    assert "SwanLab·Monitor" not in {thread.name for thread in threading.enumerate()}
    probe = sdk_run._ctx.config.settings.probe
    assert (probe.monitor, probe.conda, probe.requirements) == (False, True, False)
    run.log({"x": 1.0}, step=0)
    assert run.finish().ok


def test_chw_and_one_channel_images_are_stored(isolated: Path) -> None:
    """The core accepts HW, HWC (1, 3, 4 channels) and CHW; SwanLab reads only HW and HWC with 3 or 4."""
    np = pytest.importorskip("numpy")
    run = run_dispatcher(isolated / "logs")
    run.log_images({"chw": np.zeros((3, 5, 6), dtype=np.uint8), "gray": np.zeros((5, 6, 1), dtype=np.uint8)}, step=0)
    assert run.finish().ok
    data = read_run(run.get_tracker("swanlab").run_dir)
    assert [(p.step, len(p.files)) for p in data.media["chw"]] == [(0, 1)]
    assert [(p.step, len(p.files)) for p in data.media["gray"]] == [(0, 1)]
