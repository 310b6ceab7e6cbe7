"""Comet-specific behaviour: config fidelity, quiet defaults, settings precedence, media, and start-up
against a Comet server that cannot be reached (read back from the offline archive)."""

from __future__ import annotations

import csv
import http.server
import io
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import pytest
from tracking_comet_ml import CometMLTracker
from tracking_comet_ml.startup import import_comet
from tracking_core import Dispatcher, TrackingWarning
from tracking_core.kit.png import decode_png

FAKE_KEY = "fakefakefakefakefakefake1"  # syntactically a Comet key; no server knows it


def start_run(tmp_path: Path, project: str = "comet", context: bool | None = None, **kwargs) -> Dispatcher:
    dispatcher = Dispatcher(log_with="comet_ml", logging_dir=tmp_path / "logs", on_error="raise", context=context)
    dispatcher.init_trackers(project, config=kwargs.pop("config", None), init_kwargs={"comet_ml": kwargs})
    return dispatcher


def finish(dispatcher: Dispatcher):
    report = dispatcher.finish(timeout=120)
    assert report.ok, str(report)
    return report


# -- config, values, media -----------------------------------------------------------------------


def test_config_parameters_and_exact_json(tmp_path, monkeypatch, comet_archive):
    monkeypatch.chdir(tmp_path)
    config = {
        "lr": 0.001,
        "layers": [64, 32],
        "optimizer": {"name": "adamw", "betas": [0.9, 0.999]},
        "scheduler": None,
        "use_amp": True,
        "api_token": "secret-value",
        "a|b": 1,
    }
    run = start_run(tmp_path, config=config)
    run.log({"loss": 1.0}, step=0)
    finish(run)
    archive = comet_archive(run.trackers[0])
    params = archive.parameters()
    assert params["lr"] == 0.001 and params["layers"] == [64, 32] and params["scheduler"] is None
    assert params["optimizer|name"] == "adamw" and params["optimizer|betas"] == [0.9, 0.999]
    assert params["use_amp"] is True
    assert params["api_token"] == "<redacted>"
    exact = json.loads(archive.assets()["config.json"][2])
    assert exact == {**config, "api_token": "<redacted>"}
    assert "secret-value" not in json.dumps(archive.messages)


def test_strings_metrics_and_merged_steps(tmp_path, monkeypatch, comet_archive):
    monkeypatch.chdir(tmp_path)
    run = start_run(tmp_path)
    for step in range(30):
        run.log({"train/loss": 1 / (step + 1)}, step=step)
        run.log({"lr": 0.1 * step}, step=step)  # same step, logged apart
        if step % 10 == 0:
            run.log({"sample": f"text at {step}"}, step=step)
    run.log({"lr": 99.0}, step=29)  # a second point at a step: kept, not merged away
    finish(run)
    archive = comet_archive(run.trackers[0])
    metrics = archive.metrics()
    assert metrics["train/loss"] == {step: 1 / (step + 1) for step in range(30)}
    assert sorted(metrics["lr"]) == list(range(30))
    assert [m["metric"]["metricValue"] for m in archive.of_type("metric_msg") if m["metric"]["metricName"] == "lr"][
        -2:
    ] == [0.1 * 29, 99.0]
    assert archive.texts()["sample"] == {0: "text at 0", 10: "text at 10", 20: "text at 20"}


def test_a_step_logged_twice_shows_twice_in_the_history(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tracker = CometMLTracker("twice", logging_dir=tmp_path / "logs")
    tracker.start()
    tracker.log({"a": 1.0}, step=3)
    tracker.log({"a": 2.0}, step=3)
    tracker.finish()
    assert tracker.read_back_history()["a"] == [(3, 1.0), (3, 2.0)]
    assert tracker.read_back_metrics()["a"] == {3: 2.0}  # the last message at a step wins


def test_long_keys_are_cut_like_comet_and_reported(tmp_path, monkeypatch, comet_archive):
    monkeypatch.chdir(tmp_path)
    run = start_run(tmp_path)
    long_key = "k" * 150
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.log({long_key: 1.0, "nan": float("nan")}, step=0)
        report = run.finish(timeout=120)
    backend = report.backends["comet_ml"]
    (stored_as,) = backend.key_map.values()
    assert list(backend.key_map) == [long_key] and len(stored_as) == 100 and stored_as.startswith("k" * 91)
    assert "nan" in backend.skipped_values
    assert any("'nan'" in str(w.message) for w in caught if issubclass(w.category, TrackingWarning))
    metrics = comet_archive(run.trackers[0]).metrics()
    assert metrics[stored_as] == {0: 1.0} and "nan" not in metrics


def test_long_keys_with_one_start_or_control_characters_all_keep_their_points(tmp_path, monkeypatch, comet_archive):
    monkeypatch.chdir(tmp_path)
    run = start_run(tmp_path)
    start = "k" * 120  # longer than Comet's 100 characters: cut, they would all be one name
    keys = {f"{start}\x02": 1.0, f"{start}a": 2.0, f"{start}b": 3.0, "ctl\x01key": 4.0, "\x7f" + "q" * 150: 5.0}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.log(keys, step=0)
        report = run.finish(timeout=120)
    backend = report.backends["comet_ml"]
    stored = comet_archive(run.trackers[0]).metrics()
    names = {key: backend.key_map.get(key, key) for key in keys}
    assert len(set(names.values())) == len(keys), names  # distinct keys stay distinct
    assert all(len(name) <= 100 for name in names.values()), names
    for key, value in keys.items():
        assert stored[names[key]] == {0: value}, (key, sorted(stored))  # no point lost
    cut = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning) and "stored as" in str(w.message)]
    assert len(cut) == 4, cut  # each renamed key warned about, and in the report's key map
    assert set(backend.key_map) == {key for key in keys if len(key) > 100}


def test_images_figures_tables_artifacts(tmp_path, monkeypatch, comet_archive):
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    monkeypatch.chdir(tmp_path)
    Path("predictions.csv").write_text("not,the,data\n")  # comet's log_table would log this file instead
    artifacts = tmp_path / "ckpt"
    (artifacts / "sub").mkdir(parents=True)
    (artifacts / "model.bin").write_bytes(b"\x00\x01weights")
    (artifacts / "sub" / "opt.txt").write_text("state")
    figure = Figure()
    figure.add_subplot().plot([0, 1], [1, 0])

    run = start_run(tmp_path)
    constant = np.zeros((4, 6, 3), dtype="uint8")  # comet's own array conversion fails on this one
    chw = (np.arange(3 * 5 * 7) % 255).astype("uint8").reshape(3, 5, 7)
    run.log_images({"samples": [constant, chw], "single": np.full((2, 3), 0.5)}, step=3)
    run.log_table("predictions", columns=["input", "label"], data=[["a,b", 1], ["c", 0]], step=3)
    run.log_table("frame", dataframe=pd.DataFrame({"x": [1, 2], "y": ["u", "v"]}), step=4)
    run.log_figure(figure, "curve", step=4)
    run.log_artifact(artifacts / "model.bin", artifact_path="weights")
    run.log_artifacts(artifacts)
    run.log_artifacts(artifacts, artifact_path="copy")
    finish(run)

    archive = comet_archive(run.trackers[0])
    images = archive.images()
    assert [step for step, _ in images["samples"]] == [3, 3]
    sizes = [decode_png(data)[:2] for _, data in images["samples"]]
    assert sizes == [(4, 6), (5, 7)], sizes
    assert decode_png(images["single"][0][1])[:3] == (2, 3, 1)
    assert images["curve"][0][0] == 4 and images["curve"][0][1].lstrip().startswith((b"<?xml", b"<svg", b"\x89PNG"))
    assets = archive.assets()
    step, metadata, content = assets["predictions.csv"]
    assert step == 3 and metadata["table"] == "predictions"
    assert list(csv.reader(io.StringIO(content.decode()))) == [["input", "label"], ["a,b", "1"], ["c", "0"]]
    assert list(csv.reader(io.StringIO(assets["frame.csv"][2].decode()))) == [["x", "y"], ["1", "u"], ["2", "v"]]
    assert assets["weights/model.bin"][2] == b"\x00\x01weights"
    assert assets["ckpt/model.bin"][2] == b"\x00\x01weights" and assets["ckpt/sub/opt.txt"][2] == b"state"
    assert assets["copy/sub/opt.txt"][2] == b"state"


# -- defaults and precedence ----------------------------------------------------------------------


def test_defaults_record_what_was_logged_and_what_comet_records_itself(tmp_path, monkeypatch, comet_archive):
    monkeypatch.chdir(tmp_path)
    run = start_run(tmp_path, context=False)  # Comet's own probes; the run context's panels: test_context_panels.py
    print("this line belongs to the training script")  # must not be captured
    run.log({"loss": 1.0}, step=0)
    finish(run)
    archive = comet_archive(run.trackers[0])
    kinds = {message["type"] for message in archive.messages}
    assert "standard_output" not in kinds, kinds
    # Comet's environment details and source file, as Comet records them under Accelerate (no git here)
    assert {"installed_packages", "os_packages", "system_details", "file_name"} <= kinds, kinds
    assert archive.experiment["project_name"] == "comet"
    assert archive.others()["Name"] == run.run_id
    assert {name for name in archive.metrics() if not name.startswith("sys.")} <= {"loss", "process duration"}


def test_user_settings_win_over_defaults(tmp_path, monkeypatch, comet_archive):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COMET_AUTO_LOG_ENV_HOST", "true")
    monkeypatch.setenv("COMET_PROJECT_NAME", "from-env")
    monkeypatch.setenv("COMET_OFFLINE_DIRECTORY", str(tmp_path / "comet-env"))
    tracker = CometMLTracker(
        "ignored", logging_dir=tmp_path / "logs", auto_output_logging="simple", name="mine", tags=["a"]
    )
    tracker.start()
    try:
        experiment = tracker.tracker
        assert experiment.auto_output_logging == "simple"  # kwarg
        assert experiment.log_env_host is True  # Comet's environment variable
        assert experiment._log_code is True and experiment.log_env_gpu is True  # Comet's defaults
        assert experiment.parse_args is False  # a quiet default
    finally:
        tracker.finish()
    archive = comet_archive(tracker)
    assert tracker.archive_path.parent == tmp_path / "comet-env"
    assert archive.experiment["project_name"] == "from-env" and archive.experiment["tags"] == ["a"]
    assert archive.others()["Name"] == "mine"

    explicit = CometMLTracker("ignored", logging_dir=tmp_path / "logs", project_name="explicit", online=False)
    explicit.start()
    explicit.finish()
    assert comet_archive(explicit).experiment["project_name"] == "explicit"


def test_experiment_config_object_is_respected(tmp_path, monkeypatch):
    comet_ml = import_comet()
    monkeypatch.chdir(tmp_path)
    user_config = comet_ml.ExperimentConfig(offline_directory=str(tmp_path / "mine"), log_code=True)
    tracker = CometMLTracker("proj", logging_dir=tmp_path / "logs", online=False, experiment_config=user_config)
    tracker.start()
    try:
        assert tracker.tracker._log_code is True  # chosen by the user
        assert not tracker.tracker.auto_output_logging  # left at its default, so quiet
    finally:
        tracker.finish()
    assert tracker.archive_path.parent == tmp_path / "mine"
    assert user_config.auto_output_logging != False  # noqa: E712 - the user's object is not modified


def test_unknown_keyword_and_online_without_key_fail_clearly(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError, match="no_such_option"):
        CometMLTracker("proj", logging_dir=tmp_path, no_such_option=1).start()
    with pytest.raises(ValueError, match="no API key"):
        CometMLTracker("proj", logging_dir=tmp_path, online=True).start()


def test_two_live_runs_in_one_process(tmp_path, monkeypatch, comet_archive):
    monkeypatch.chdir(tmp_path)
    first, second = start_run(tmp_path, project="same"), start_run(tmp_path, project="same")
    for step in range(20):
        first.log({"a": float(step)}, step=step)
        second.log({"b": float(step)}, step=step)
    finish(first)
    finish(second)
    one, two = comet_archive(first.trackers[0]), comet_archive(second.trackers[0])
    assert one.experiment["offline_id"] != two.experiment["offline_id"]
    assert sorted(one.metrics()["a"]) == list(range(20)) and "b" not in one.metrics()
    assert sorted(two.metrics()["b"]) == list(range(20)) and "a" not in two.metrics()


def test_a_user_experiment_is_neither_reused_nor_ended(tmp_path, monkeypatch):
    comet_ml = import_comet()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "user").mkdir()
    users = comet_ml.start(
        project_name="comet",
        online=False,
        experiment_config=comet_ml.ExperimentConfig(
            offline_directory=str(tmp_path / "user"), auto_output_logging=False, log_code=False, display_summary_level=0
        ),
    )
    try:
        run = start_run(tmp_path, project="comet")
        run.log({"ours": 1.0}, step=0)
        finish(run)
        assert run.trackers[0].tracker is not users
        assert users.alive and not users.ended
        assert comet_ml.get_running_experiment() is users
    finally:
        users.end()


# -- a Comet server that cannot be reached -----------------------------------------------------------


@contextmanager
def black_hole():
    """A port that accepts connections and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    held, stop = [], threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        server.close()


def refused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again: connecting is refused


def log_while_comet_hangs(run: Dispatcher, steps: int, pause: float) -> list[float]:
    costs = []
    for step in range(steps):
        began = time.perf_counter()
        run.log({"loss": 1.0 / (step + 1), "step_note": f"s{step}" if step % 25 == 0 else step}, step=step)
        costs.append(time.perf_counter() - began)
        time.sleep(pause)
    return costs


@pytest.mark.parametrize("server", ["black_hole", "refused"])
def test_unreachable_server_falls_back_to_offline_without_holding_the_loop(
    tmp_path, monkeypatch, comet_archive, server
):
    import_comet()  # the import itself holds the GIL for a while; that is not what is measured here
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COMET_API_KEY", FAKE_KEY)
    with black_hole() if server == "black_hole" else _nothing(refused_port()) as port:
        monkeypatch.setenv("COMET_URL_OVERRIDE", f"http://127.0.0.1:{port}/clientlib/")
        began = time.monotonic()
        run = start_run(tmp_path, start_timeout=1.5)
        costs = log_while_comet_hangs(run, steps=100, pause=0.02)
        report = finish(run)
        elapsed = time.monotonic() - began
    tracker = run.trackers[0]
    assert tracker.mode == "offline-fallback", tracker.fallback_reason
    assert f"127.0.0.1:{port}" in tracker.fallback_reason
    # the hanging start never held the loop: no wait for queue room, no call anywhere near the start timeout
    assert report.backends["comet_ml"].loop_waited_seconds == 0.0
    assert max(costs) < 0.5, f"slowest log() took {max(costs) * 1000:.1f} ms"
    assert elapsed < 30, elapsed
    assert report.backends["comet_ml"].delivered == 100 and report.backends["comet_ml"].spilled == 0
    assert any(note.startswith("recorded offline because") for note in report.backends["comet_ml"].notes)
    assert "recorded offline because" in str(report)
    archive = comet_archive(tracker)
    assert sorted(archive.metrics()["loss"]) == list(range(100))
    assert archive.texts()["step_note"] == {step: f"s{step}" for step in range(0, 100, 25)}


@contextmanager
def _nothing(value):
    yield value


_SLOW_SERVER_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from tracking_core import Dispatcher

    run = Dispatcher(log_with="comet_ml", logging_dir=sys.argv[1], on_error="raise")
    began = time.monotonic()
    run.init_trackers("slow", init_kwargs={"comet_ml": {"start_timeout": 3}})
    costs = []
    for step in range(60):
        t = time.perf_counter()
        run.log({"loss": float(step)}, step=step)
        costs.append(time.perf_counter() - t)
        time.sleep(0.05)
    report = run.finish(timeout=60)
    tracker = run.trackers[0]
    print(json.dumps({"mode": tracker.mode, "reason": tracker.fallback_reason, "ok": report.ok,
                      "archive": str(tracker.archive_path), "delivered": report.backends["comet_ml"].delivered,
                      "run_s": time.monotonic() - began, "max_log_ms": max(costs) * 1000}))
    """
)


class _AnswersOnlyThePing(http.server.BaseHTTPRequestHandler):
    """Answers Comet's liveness probe at once; every other request waits until the test ends."""

    stop = threading.Event()

    def do_GET(self) -> None:
        if self.path.endswith("isAlive/ver"):
            body = json.dumps({"version": "3.50.0"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.stop.wait(120)

    do_POST = do_GET

    def log_message(self, *args) -> None:
        pass


def test_a_server_that_stalls_after_answering_is_abandoned_at_the_deadline(tmp_path, comet_archive):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _AnswersOnlyThePing)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    script = tmp_path / "slow.py"
    script.write_text(_SLOW_SERVER_SCRIPT)
    env = {key: value for key, value in os.environ.items() if not key.startswith("COMET_")}
    env.update(
        COMET_API_KEY=FAKE_KEY,
        COMET_URL_OVERRIDE=f"http://127.0.0.1:{server.server_address[1]}/clientlib/",
        HOME=str(tmp_path / "home"),
    )
    try:
        began = time.monotonic()
        process = subprocess.run(
            [sys.executable, str(script), str(tmp_path / "logs")],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        wall = time.monotonic() - began
    finally:
        _AnswersOnlyThePing.stop.set()
        server.shutdown()
        server.server_close()
    assert process.returncode == 0, process.stderr[-3000:]
    result = json.loads(process.stdout.strip().splitlines()[-1])
    assert result["mode"] == "offline-fallback" and "within 3 s" in result["reason"], result
    assert result["ok"] and result["delivered"] == 60, result
    assert result["max_log_ms"] < 5, result
    assert wall - result["run_s"] < 20, f"the process took {wall - result['run_s']:.1f} s to exit after finish"
    assert sorted(
        comet_archive(type("T", (), {"archive_path": Path(result["archive"]), "mode": "?"})).metrics()["loss"]
    ) == list(range(60))


# -- the process around the run ----------------------------------------------------------------------

_ISOLATION_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, threading
    import numpy as np
    from tracking_core import Dispatcher

    hook = sys.excepthook
    run = Dispatcher(log_with="comet_ml", logging_dir=sys.argv[1], on_error="raise")
    run.init_trackers("iso", config={"lr": 0.1})
    for step in range(50):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    run.log_images({"img": np.zeros((4, 4, 3), dtype="uint8")}, step=1)
    report = run.finish()
    from tracking_core.testing.reliability import child_processes
    children = [str(pid) for pid in child_processes()]
    print(json.dumps({"ok": report.ok, "threads": sorted(t.name for t in threading.enumerate() if t is not threading.main_thread()),
                      "children": children, "excepthook_kept": sys.excepthook is hook,
                      "matplotlib": "matplotlib" in sys.modules}))
    """
)


def test_a_run_writes_only_under_logging_dir_and_leaves_nothing_running(tmp_path):
    home, scratch, cwd = tmp_path / "home", tmp_path / "tmp", tmp_path / "cwd"
    for folder in (home, scratch, cwd):
        folder.mkdir()
    script = tmp_path / "iso.py"
    script.write_text(_ISOLATION_SCRIPT)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("COMET_", "MPLCONFIGDIR", "XDG_"))}
    env.update(HOME=str(home), TMPDIR=str(scratch), COMET_API_KEY="")
    process = subprocess.run(
        [sys.executable, str(script), str(cwd / "logs")],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    lines = process.stdout.strip().splitlines()
    assert len(lines) == 1, f"something besides the script printed to stdout: {lines[:-1]}"
    result = json.loads(lines[0])
    assert result["ok"] and result["excepthook_kept"], result
    assert result["threads"] == [] and result["children"] == [], result
    assert not result["matplotlib"], "importing comet_ml should not load matplotlib"
    stray = [str(path) for folder in (home, scratch) for path in folder.rglob("*")]
    stray += [str(path) for path in cwd.rglob("*") if not path.is_relative_to(cwd / "logs")]
    assert stray == [], stray
    assert "comet upload" in process.stderr  # the notice says how to upload the archive
    assert list((cwd / "logs" / "iso").glob("*/comet_ml/*.zip"))


def test_a_tls_complaint_counts_as_an_answer():
    """The probe before an online start (probe_http) treats a TLS failure as a server that answered, as the
    requests-based probe with Comet's ``verify`` setting did: Comet's own TLS settings decide the rest."""
    from tracking_core.kit.adapters import probe_http

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _AnswersOnlyThePing)  # plain HTTP only
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        assert probe_http(f"https://127.0.0.1:{port}/clientlib/isAlive/ver", 2.0) is None  # TLS fails: answered
        assert probe_http(f"http://127.0.0.1:{port}/clientlib/isAlive/ver", 2.0) is None
    finally:
        server.shutdown()
        server.server_close()
    assert probe_http(f"https://127.0.0.1:{refused_port()}/clientlib/isAlive/ver", 1.0) is not None
