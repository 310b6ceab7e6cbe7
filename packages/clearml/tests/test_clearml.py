"""ClearML-specific behaviour: mapping, config, media, no child process, and servers that never answer."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pytest
from tracking_clearml import ClearMLTracker
from tracking_clearml.naming import key_of, text_line, title_series
from tracking_clearml.reader import OfflineSession
from tracking_core import Dispatcher, TrackingWarning
from tracking_core.kit.adapters import probe_http

ROOT_TIMEOUT = 120


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """No clearml.conf (and so no credentials) from the machine running the tests."""
    monkeypatch.setenv("CLEARML_CONFIG_FILE", str(tmp_path / "no-clearml.conf"))
    monkeypatch.chdir(tmp_path)


def run_clearml(tmp_path: Path, log, *, config=None, log_with_kwargs=None) -> tuple[Dispatcher, OfflineSession]:
    dispatcher = Dispatcher(log_with="clearml", logging_dir=tmp_path / "logs", on_error="raise")
    dispatcher.init_trackers("proj", config=config, init_kwargs={"clearml": log_with_kwargs or {}})
    log(dispatcher)
    report = dispatcher.finish(timeout=ROOT_TIMEOUT)
    backend = report.backends["clearml"]
    assert backend.state == "finished" and backend.errors == 0 and backend.spilled == 0, str(report)
    tracker = dispatcher.trackers[0]
    return dispatcher, OfflineSession(f"{tracker.offline_folder}.zip")


# -- pure mapping -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("key", "pair"),
    [
        ("loss", ("loss", "train")),  # accelerate's mapping for keys without "/"
        ("eval_loss", ("loss", "eval")),
        ("test_acc", ("acc", "test")),
        ("train/loss", ("train", "loss")),
        ("eval/top/k1", ("eval/top", "k1")),
        ("/lead", ("/lead", "train")),
        ("trail/", ("trail/", "train")),
    ],
)
def test_title_series_mapping(key: str, pair: tuple[str, str]) -> None:
    assert title_series(key) == pair
    assert key_of(*pair) == key


def test_keys_the_rule_cannot_spell_back_are_read_back_exactly(tmp_path: Path) -> None:
    assert title_series("train_loss") == ("loss", "train") and key_of("loss", "train") == "loss"
    assert title_series("loss/eval") == ("loss", "eval") and key_of("loss", "eval") == "eval_loss"

    def log(run: Dispatcher) -> None:
        for step in range(2):
            run.log({"train_loss": 1.0 + step, "loss/eval": 2.0 + step, "acc": 0.5}, step=step)

    dispatcher, session = run_clearml(tmp_path, log)
    assert session.scalars() == {"train_loss": {0: 1.0, 1: 2.0}, "loss/eval": {0: 2.0, 1: 3.0}, "acc": {0: 0.5, 1: 0.5}}
    assert dispatcher.trackers[0].read_back_metrics() == session.scalars()


def test_text_line_keeps_every_value_on_one_line() -> None:
    assert text_line("note", "words", 3) == "[step 3] note: words"
    assert text_line("note", "words", None) == "[summary] note: words"
    assert text_line("note", "two\nlines", 1) == '[step 1] note: "two\\nlines"'
    assert text_line("note", '"quoted"', 1) == '[step 1] note: "\\"quoted\\""'


# -- through the dispatcher, read back from the session zip --------------------------------------
def test_scalars_land_as_title_series(tmp_path: Path) -> None:
    def log(run: Dispatcher) -> None:
        for step in range(3):
            run.log({"train/loss": 1.0 / (step + 1), "eval/top/k1": 0.5, "lr": 0.1}, step=step)

    before = {name: os.environ.get(name) for name in ("CLEARML_PROC_MASTER_ID", "CLEARML_OFFLINE_MODE")}
    _, session = run_clearml(tmp_path, log)
    # ClearML leaves these in os.environ; child processes started later would inherit them.
    assert {name: os.environ.get(name) for name in before} == before
    pairs = {(e["metric"], e["variant"]) for e in session.events("training_stats_scalar")}
    assert pairs == {("train", "loss"), ("eval/top", "k1"), ("lr", "train")}
    assert session.scalars()["train/loss"] == {0: 1.0, 1: 0.5, 2: 1 / 3}


def test_flush_makes_the_session_files_complete(tmp_path: Path) -> None:
    dispatcher = Dispatcher(log_with="clearml", logging_dir=tmp_path / "logs", on_error="raise")
    dispatcher.init_trackers("proj")
    for step in range(120):
        dispatcher.log({"loss": float(step), "note": f"at {step}"}, step=step)
    assert dispatcher.flush(timeout=ROOT_TIMEOUT)
    session = OfflineSession(dispatcher.trackers[0].offline_folder)  # the live folder, before the zip
    assert sorted(session.scalars()["loss"]) == list(range(120))
    assert len(session.texts()["note"]) == 120
    assert dispatcher.finish(timeout=ROOT_TIMEOUT).ok


def test_keys_sharing_a_series_warn_once(tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_clearml(tmp_path, lambda run: [run.log({"x": 1.0, "train_x": 2.0}, step=s) for s in range(3)])
    messages = [
        str(w.message) for w in caught if issubclass(w.category, TrackingWarning) and "shares" in str(w.message)
    ]
    assert len(messages) == 1 and "'train_x'" in messages[0], messages


def test_single_values_and_text(tmp_path: Path) -> None:
    def log(run: Dispatcher) -> None:
        run.log({"note": "two\nlines", "quote": '"q"', "loss": 1.0}, step=4)
        run.log({"final/acc": 0.75}, log_kwargs={"clearml": {"single_value": True}})

    _, session = run_clearml(tmp_path, log)
    assert session.single_values() == {"final/acc": 0.75}
    assert "final/acc" not in session.scalars()
    texts = session.texts()
    assert texts["note"] == {4: "two\nlines"} and texts["quote"] == {4: '"q"'}, texts


def test_direct_log_without_step_is_a_single_value(tmp_path: Path) -> None:
    tracker = ClearMLTracker("direct", logging_dir=tmp_path / "logs")
    tracker.start()
    tracker.log({"acc": 0.5})
    tracker.log({"loss": 0.25}, step=7)
    tracker.finish()
    tracker.finish()  # twice: harmless
    session = OfflineSession(f"{tracker.offline_folder}.zip")
    assert session.single_values() == {"acc": 0.5}
    assert session.scalars() == {"loss": {7: 0.25}}


def test_a_step_logged_twice_shows_twice_in_the_history(tmp_path: Path) -> None:
    tracker = ClearMLTracker("twice", logging_dir=tmp_path / "logs")
    tracker.start()
    tracker.log({"a": 1.0}, step=3)
    tracker.log({"a": 2.0}, step=3)
    tracker.finish()
    assert tracker.read_back_history()["a"] == [(3, 1.0), (3, 2.0)]
    assert tracker.read_back_metrics()["a"] == {3: 2.0}  # the last event at a step wins


def test_config_in_hyperparameters_and_exact_json(tmp_path: Path) -> None:
    config = {"lr": 0.001, "none": None, "empty": {}, "a.b": 1, "odd key @%": "x", "nested": {"l": [1, None]}}
    _, session = run_clearml(tmp_path, lambda run: run.log({"loss": 1.0}, step=0), config=config)
    assert session.configuration("General") == config  # exact, though HOCON would refuse "a.b" and "@"
    hyper = session.hyperparameters("General")
    assert hyper["lr"] == "0.001" and hyper["none"] == "" and hyper["a.b"] == "1", hyper
    assert hyper["nested/l"] == "[1, null]", hyper
    assert session.task["name"] == "proj" and session.task["project_name"] == "proj"


def test_init_kwargs_and_env_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLEARML_PROJECT", "from-env")
    _, session = run_clearml(tmp_path, lambda run: None, log_with_kwargs={"task_name": "explicit", "tags": ["t1"]})
    assert session.task["name"] == "explicit" and session.task["project_name"] == "from-env", session.task


def test_images_tables_figures_artifacts(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    artifact = tmp_path / "weights.bin"
    artifact.write_bytes(b"\x00" * 64)
    folder = tmp_path / "outputs"
    folder.mkdir()
    (folder / "a.txt").write_text("a")
    figure, axes = plt.subplots()
    axes.plot([0, 1, 2], [1, 0, 1])
    gray = np.linspace(0, 1, 16 * 16).reshape(16, 16)  # float 0..1
    chw = np.zeros((3, 8, 12), dtype="uint8")
    pil = pytest.importorskip("PIL.Image").new("RGB", (8, 6), (10, 200, 30))

    def log(run: Dispatcher) -> None:
        run.log_images({"val/samples": [gray, chw, pil]}, step=2)
        run.log_table("preds", dataframe=pd.DataFrame({"input": ["a", "b"], "score": [0.5, float("nan")]}), step=1)
        run.log_table("rows", columns=["x", "y"], data=[[np.int64(1), float("inf")], [None, "t"]], step=1)
        run.log_figure(figure, "curves/loss", step=3)
        run.log_artifact(artifact, artifact_path="models")
        run.log_artifacts(folder)

    _, session = run_clearml(tmp_path, log)
    plt.close(figure)
    assert sorted((step, series) for step, series, _ in session.images()["val/samples"]) == [
        (2, "samples/0"),
        (2, "samples/1"),
        (2, "samples/2"),
    ]
    arrays = dict(session.image_arrays())["val/samples"]
    assert [array.shape for _, array in arrays] == [(16, 16), (8, 12, 3), (6, 8, 3)]
    # ClearML's JPEG, as accelerate stores images: close to the pixels logged (lossless_images=True: exact)
    assert np.abs(arrays[0][1].astype(float) - np.rint(gray * 255)).mean() < 6.0
    assert session.tables()["rows"] == [[1, "inf"], [None, "t"]] and session.table_headers()["rows"] == ["x", "y"]
    assert session.table_headers()["preds"] == ["input", "score"] and session.tables()["preds"][0] == ["a", 0.5]
    figures = session.image_arrays()["curves/loss"]
    assert figures[0][0] == 3 and figures[0][1].ndim == 3, "the figure is stored as a PNG debug sample"
    artifacts = session.artifacts()
    assert set(artifacts) == {"models/weights.bin", "outputs"}, artifacts
    names = session.names()
    assert any(name.endswith("weights.bin") for name in names) and any(name.endswith(".zip") for name in names), names


def test_reporter_is_a_thread_and_nothing_is_left(tmp_path: Path) -> None:
    """No forked reporter (it stalled a call ~5 s at the 100th event); no thread or child left after finish."""
    threads_before = set(threading.enumerate())
    timings: list[float] = []
    children: list[str] = []

    def log(run: Dispatcher) -> None:
        for step in range(150):
            started = time.perf_counter()
            run.log({"a": float(step), "b": 1.0}, step=step)
            timings.append(time.perf_counter() - started)
        children.extend(_children())

    dispatcher = Dispatcher(log_with="clearml", logging_dir=tmp_path / "logs", blocking=True, on_error="raise")
    dispatcher.init_trackers("proj")
    log(dispatcher)
    assert dispatcher.finish(timeout=ROOT_TIMEOUT).ok
    assert children == [], f"ClearML started child processes: {children}"
    assert max(timings) < 1.0, f"a blocking log call took {max(timings):.2f} s"
    time.sleep(0.2)
    left = [t for t in set(threading.enumerate()) - threads_before if t.is_alive() and not t.daemon]
    assert left == [], left
    assert len(OfflineSession(f"{dispatcher.trackers[0].offline_folder}.zip").scalars()["a"]) == 150


def test_an_application_task_is_reused_and_left_open(tmp_path: Path) -> None:
    from clearml import Task

    Task.set_offline(True)
    os.environ["CLEARML_CACHE_DIR"] = str(tmp_path / "app-cache")
    try:
        task = Task.init(
            "app",
            "app-task",
            reuse_last_task_id=False,
            auto_connect_frameworks=False,
            auto_resource_monitoring=False,
            auto_connect_streams=False,
            auto_connect_arg_parser=False,
        )
    finally:
        del os.environ["CLEARML_CACHE_DIR"]
    try:
        dispatcher = Dispatcher(log_with="clearml", logging_dir=tmp_path / "logs", on_error="raise")
        dispatcher.init_trackers("proj")
        dispatcher.log({"loss": 1.0}, step=0)
        assert dispatcher.finish(timeout=ROOT_TIMEOUT).ok
        assert dispatcher.trackers[0].tracker is task and dispatcher.trackers[0].mode == "external"
        assert Task.current_task() is task, "the application's task was closed"
        events = OfflineSession(task.get_offline_mode_folder()).scalars()
        assert events == {"loss": {0: 1.0}}
    finally:
        task.close()


# -- servers that do not answer (fresh processes: ClearML's offline switch is process-wide) -------
class BlackHole:
    """Accepts TCP connections and never answers, like a firewall that swallows packets."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.port = self.server.getsockname()[1]
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            self.held.append(connection)

    def close(self) -> None:
        self.server.close()
        for connection in self.held:
            connection.close()


def refused_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now: connections are refused
    return port


CHILD = textwrap.dedent(
    """
    import json, os, sys, time
    from tracking_clearml import ClearMLTracker
    from tracking_core import Dispatcher
    from tracking_core.testing.reliability import waiting_steps

    def children():
        out = []
        for thread in os.listdir("/proc/self/task"):
            try:
                out += open(f"/proc/self/task/{thread}/children").read().split()
            except OSError:  # the thread ended meanwhile
                pass
        return out

    ClearMLTracker.server_timeout = 1.0  # keep the test short; the default is 5 s
    run = Dispatcher(log_with="clearml", logging_dir="logs")
    run.init_trackers("proj")
    costs = []
    for step in range(300):
        started = time.perf_counter()
        run.log({"loss": 1.0 / (step + 1)}, step=step)
        costs.append(time.perf_counter() - started)
        if step % 50 == 0:
            time.sleep(0.05)  # a training loop that is busy while ClearML starts
    report = run.finish(timeout=60).backends["clearml"]
    tracker = run.trackers[0]
    spilled = waiting_steps(run.run_dir, "clearml")
    folder = tracker.offline_folder if tracker.tracker is not None else None
    print(json.dumps({
        "max_ms": max(costs) * 1000, "state": report.state, "delivered": report.delivered, "spilled": report.spilled,
        "mode": tracker.mode, "notes": report.notes, "folder": str(folder) if folder else None, "spilled_steps": spilled,
        "children": children(),
    }))
    """
)


def run_child(tmp_path: Path, env: dict[str, str]) -> tuple[dict, float]:
    home, tmp = tmp_path / "home", tmp_path / "tmpdir"
    home.mkdir()
    tmp.mkdir()
    full_env = {key: value for key, value in os.environ.items() if not key.startswith(("CLEARML_", "TRAINS_"))}
    full_env.update(HOME=str(home), TMPDIR=str(tmp), CLEARML_CONFIG_FILE=str(tmp_path / "no-clearml.conf"), **env)
    started = time.monotonic()
    process = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=tmp_path, env=full_env, capture_output=True, text=True, timeout=150
    )
    elapsed = time.monotonic() - started
    assert process.returncode == 0, process.stderr[-3000:]
    return json.loads(process.stdout.strip().splitlines()[-1]), elapsed


def fake_credentials(port: int) -> dict[str, str]:
    return {
        "CLEARML_API_HOST": f"http://127.0.0.1:{port}",
        "CLEARML_API_ACCESS_KEY": "FAKEACCESSKEY",
        "CLEARML_API_SECRET_KEY": "fake-secret",
    }


def assert_files_only_under_logs(tmp_path: Path) -> None:
    outside = sorted(
        path.relative_to(tmp_path).as_posix()
        for path in tmp_path.rglob("*")
        if path.is_file() and not path.is_relative_to(tmp_path / "logs") and path.name != "no-clearml.conf"
    )
    # ~/.clearml/.session.json is hard-coded in the SDK (its documented cache folder).
    assert outside in ([], ["home/.clearml/.session.json"]), outside


@pytest.mark.parametrize("server", ["black_hole", "refused", "no_credentials"])
def test_unreachable_server_falls_back_to_offline(tmp_path: Path, server: str) -> None:
    hole = BlackHole() if server == "black_hole" else None
    try:
        env = {} if server == "no_credentials" else fake_credentials(hole.port if hole else refused_port())
        result, elapsed = run_child(tmp_path, env)
    finally:
        if hole:
            hole.close()
    assert result["max_ms"] < 5.0, f"log() cost up to {result['max_ms']:.1f} ms while ClearML started"
    assert result["state"] == "finished" and result["mode"] == "offline" and result["spilled"] == 0, result
    folder = Path(result["folder"])
    assert folder.is_relative_to(tmp_path / "logs"), folder
    fell_back = [note for note in result["notes"] if note.startswith("fell back to an offline session")]
    assert len(fell_back) == (0 if server == "no_credentials" else 1), result["notes"]
    assert any("--import-offline-session" in note for note in result["notes"]), result["notes"]
    assert sorted(OfflineSession(f"{folder}.zip").scalars()["loss"]) == list(range(300))
    assert result["children"] == [], result["children"]
    assert_files_only_under_logs(tmp_path)
    assert elapsed < 60, elapsed


def test_a_master_id_inherited_from_a_clearml_parent_does_not_give_a_stub(tmp_path: Path) -> None:
    result, _ = run_child(tmp_path, {"CLEARML_PROC_MASTER_ID": f"{os.getpid()}:offline-0123456789abcdef"})
    assert result["state"] == "finished" and result["mode"] == "offline", result
    assert len(OfflineSession(f"{result['folder']}.zip").scalars()["loss"]) == 300


class Unauthorized(http.server.BaseHTTPRequestHandler):
    """A server that answers every request with 401, as ClearML does for bad credentials."""

    def answer(self) -> None:
        body = b'{"meta": {"result_code": 401, "result_msg": "Unauthorized"}}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = answer

    def log_message(self, *args) -> None:
        pass


def serve_unauthorized() -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Unauthorized)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_server_probe_is_bounded() -> None:
    server = serve_unauthorized()  # any HTTP answer means a server is there
    hole = BlackHole()
    try:
        assert probe_http(f"http://127.0.0.1:{server.server_address[1]}/debug.ping", 2.0) is None
        started = time.monotonic()
        assert probe_http(f"http://127.0.0.1:{hole.port}/debug.ping", 0.5) is not None
        assert time.monotonic() - started < 2.0
        assert probe_http(f"http://127.0.0.1:{refused_port()}/debug.ping", 0.5) is not None
    finally:
        server.shutdown()
        server.server_close()
        hole.close()


def test_a_server_that_refuses_the_credentials_fails_start_and_spills(tmp_path: Path) -> None:
    """The server answers, so the run goes online; ClearML's login error then fails start-up at once."""
    server = serve_unauthorized()
    try:
        result, elapsed = run_child(tmp_path, fake_credentials(server.server_address[1]))
    finally:
        server.shutdown()
        server.server_close()
    assert result["mode"] == "online" and result["state"] == "start_failed", result
    assert result["spilled_steps"] == list(range(300)) and result["max_ms"] < 5.0, result
    assert elapsed < 60, elapsed


def test_unreachable_server_with_online_demanded_fails_start_and_spills(tmp_path: Path) -> None:
    hole = BlackHole()
    try:
        result, elapsed = run_child(tmp_path, {**fake_credentials(hole.port), "CLEARML_OFFLINE_MODE": "0"})
    finally:
        hole.close()
    assert result["max_ms"] < 5.0, result["max_ms"]
    assert result["state"] == "start_failed" and result["delivered"] == 0, result
    assert any(note.startswith("not started:") for note in result["notes"]), result["notes"]
    assert result["spilled_steps"] == list(range(300)), "every point must wait for `tracking replay`"
    assert elapsed < 60, elapsed


def _children() -> list[str]:
    out = []
    for task in os.listdir("/proc/self/task"):
        try:
            out += Path(f"/proc/self/task/{task}/children").read_text().split()
        except OSError:
            pass
    return out


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_no_repository_detection_thread(tmp_path: Path) -> None:
    """Repository detection (git subprocesses in a thread that Task.close() joins for 300 s) stays off."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "train.py").write_text("print('hi')\n")
    tracker = ClearMLTracker("repo", logging_dir=tmp_path / "logs")
    tracker.start()
    try:
        names = [thread.name for thread in threading.enumerate()]
        assert not any("_update_repository" in name for name in names), names
    finally:
        tracker.finish()
