"""W&B-specific behaviour: embedded default, unreachable service, processes, media, artifacts, settings.

Everything is read back from the run's ``.wandb`` transaction log and media files. Tests that depend
on process-wide W&B state (environment variables read once, ``wandb-core``, exit) run in a fresh
interpreter with stdin closed and an empty HOME.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import tracking_core
from tracking_core.testing.reliability import waiting_steps
from tracking_wandb import WandBTracker
from tracking_wandb.older import v0_19
from tracking_wandb.reader import read_run
from tracking_wandb.transaction_log import ends_with_exit

#: wandb-core writes the .wandb file at flush() only from wandb 0.31 (x_transaction_log_flush_interval).
FLUSH_WRITES = v0_19.has_setting(__import__("wandb").Settings(), "x_transaction_log_flush_interval")
needs_flush_interval = pytest.mark.skipif(
    not FLUSH_WRITES,
    reason="wandb < 0.31 has no x_transaction_log_flush_interval: the .wandb file is written at finish",
)


@pytest.fixture(autouse=True)
def _no_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """No API key, no netrc, no W&B settings file: the embedded default applies."""
    for variable in ("WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE", "WANDB_MODE", "WANDB_PROJECT", "NETRC"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


def start(tmp_path: Path, project: str = "wandb-tests", config=None, **init_kwargs):
    run = tracking_core.init(
        project,
        log_with="wandb",
        logging_dir=tmp_path / "logs",
        config=config,
        init_kwargs={"wandb": init_kwargs},
        on_error="raise",
    )
    return run, run.get_tracker("wandb", unwrap=False)


def finish(run) -> tracking_core.FinishReport:
    report = run.finish(timeout=120)
    backend = report.backends["wandb"]
    assert backend.state == "finished" and backend.errors == 0 and backend.spilled == 0, str(report)
    return report


def run_script(code: str, tmp_path: Path, extra_env: dict | None = None, timeout: float = 150) -> dict:
    """Run ``code`` in a fresh interpreter (stdin closed, empty HOME); it prints one JSON line last."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("WANDB_")}
    env.update({"HOME": str(tmp_path / "home"), "PYTHONUNBUFFERED": "1", **(extra_env or {})})
    started = time.monotonic()
    process = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), str(tmp_path / "logs")],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert process.returncode == 0, process.stderr[-4000:]
    result = json.loads(process.stdout.strip().splitlines()[-1])
    result["stderr"], result["wall"], result["ended"] = process.stderr, time.monotonic() - started, time.monotonic()
    return result


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:  # gone since the kill(0)
        return False


# -- embedded default, processes, files ------------------------------------------------------------
EMBEDDED_SCRIPT = """
    import json, os, sys, tracking_core
    run = tracking_core.init("from-arg", log_with="wandb", logging_dir=sys.argv[1], config={"lr": 0.1})
    for step in range(20):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    tracker = run.get_tracker("wandb", unwrap=False)
    run.flush()
    from tracking_core.testing.reliability import child_processes
    names = child_processes()
    report = run.finish()
    print(json.dumps({"ok": report.ok, "mode": tracker.mode, "run_dir": str(tracker.run_dir),
                      "children": names, "notes": report.backends["wandb"].notes}))
"""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="inspects /proc")
def test_embedded_default_keeps_everything_under_logging_dir_and_leaves_no_process(tmp_path: Path):
    (tmp_path / "home").mkdir()
    result = run_script(EMBEDDED_SCRIPT, tmp_path, {"WANDB_PROJECT": "from-env"})
    assert result["ok"] and result["mode"] == "offline"
    run_dir = Path(result["run_dir"])
    assert run_dir.parent == tmp_path / "logs" / "wandb" and run_dir.name.startswith("offline-run-")
    stored = read_run(run_dir)
    assert stored.run.project == "from-env"  # the SDK's own variable wins over project_name
    assert sorted(stored.metrics()["loss"]) == list(range(20))
    # One notice on stderr saying how to upload, nothing from W&B on stdout/stderr otherwise.
    assert result["stderr"].count(f"wandb sync {run_dir}") == 1, result["stderr"]
    assert "wandb:" not in result["stderr"].replace("tracking: wandb:", ""), result["stderr"]
    assert any("wandb sync" in note for note in result["notes"])
    # Nothing outside logging_dir: not in HOME, not in the working directory.
    assert list((tmp_path / "home").rglob("*")) == []
    assert sorted(path.name for path in tmp_path.iterdir()) == ["home", "logs"]
    # wandb-core ran (and no system-metrics sidecar), and it did not outlive the interpreter.
    assert "wandb-core" in result["children"].values() and "wandb-symon" not in result["children"].values()
    deadline = time.monotonic() + 10
    while any(pid_alive(int(pid)) for pid in result["children"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in result["children"] if pid_alive(int(pid))], result["children"]


# -- unreachable service with credentials ------------------------------------------------------------
UNREACHABLE_SCRIPT = """
    import json, sys, time, tracking_core
    run = tracking_core.init("unreachable", log_with="wandb", logging_dir=sys.argv[1],
                             init_kwargs={"wandb": {"settings": {"init_timeout": 2}}})
    costs = []
    for step in range(300):
        started = time.perf_counter()
        run.log({"loss": float(step), "note": f"step {step}"}, step=step)
        costs.append(time.perf_counter() - started)
    tracker = run.get_tracker("wandb", unwrap=False)
    report = run.finish()
    backend = report.backends["wandb"]
    print(json.dumps({"max_log_s": max(costs), "mode": tracker.mode, "reason": tracker.fallback_reason,
                      "run_dir": str(tracker.run_dir), "run_folder": str(run.run_dir), "state": backend.state,
                      "delivered": backend.delivered, "notes": backend.notes, "finished_at": time.monotonic()}))
"""


def _black_hole() -> tuple[int, socket.socket]:
    """A port that accepts connections and never answers (a firewall swallowing packets)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held = []

    def accept_forever() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept_forever, daemon=True).start()
    return server.getsockname()[1], server


def _refusing_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there any more: connections are refused
    return port


@pytest.mark.skipif(
    not FLUSH_WRITES,
    reason="wandb < 0.31 (seen on 0.19.10): after an online wandb.init times out, wandb-core stays busy with the "
    "unreachable server, the offline fallback times out too (records spill) and exit waits for wandb-core",
)
@pytest.mark.parametrize("service", ["black_hole", "refusing"])
def test_unreachable_service_never_holds_the_loop_and_falls_back_offline(tmp_path: Path, service: str):
    server = None
    if service == "black_hole":
        port, server = _black_hole()
    else:
        port = _refusing_port()
    try:
        result = run_script(
            UNREACHABLE_SCRIPT,
            tmp_path,
            {"WANDB_BASE_URL": f"http://127.0.0.1:{port}", "WANDB_API_KEY": "0123456789abcdef" * 2 + "01234567"},
        )
    finally:
        if server is not None:
            server.close()
    assert result["max_log_s"] < 0.005, result  # a queue append, while wandb.init waits for the service
    assert result["state"] == "finished" and result["mode"] == "offline" and result["reason"], result
    assert any("recorded offline" in note for note in result["notes"]), result["notes"]
    assert "running offline because W&B could not be used" in result["stderr"]
    stored = read_run(result["run_dir"])
    delivered = set(stored.metrics().get("loss", {}))
    spilled = set(waiting_steps(result["run_folder"], "wandb"))
    assert delivered | spilled == set(range(300)), (len(delivered), len(spilled))
    assert stored.of_type(str)["note"][299] == "step 299"
    # W&B's analytics exporters would hold the exit ~20 s probing a black hole; they are stopped.
    assert result["ended"] - result["finished_at"] < 8, result["ended"] - result["finished_at"]


CHOSEN_MODE_SCRIPT = """
    import json, sys, time, tracking_core
    started = time.monotonic()
    run = tracking_core.init("chosen", log_with="wandb", logging_dir=sys.argv[1])
    run.log({"loss": 1.0}, step=0)
    tracker = run.get_tracker("wandb", unwrap=True) and run.get_tracker("wandb", unwrap=False)
    report = run.finish()
    print(json.dumps({"mode": tracker.mode, "reason": tracker.fallback_reason, "ok": report.ok,
                      "run_dir": str(tracker.run_dir), "seconds": time.monotonic() - started}))
"""


SPAWN_SCRIPT = """
    import json, sys, tracking_core
    spawned = []
    sys.addaudithook(lambda event, args: event == "subprocess.Popen" and spawned.append([str(a) for a in args[1]]))
    run = tracking_core.init("spawn", log_with="wandb", logging_dir=sys.argv[1])
    run.log({"loss": 1.0}, step=0)
    report = run.finish()
    print(json.dumps({"ok": report.ok, "spawned": spawned}))
"""


@pytest.mark.parametrize("disable_git", [None, "true"])
def test_git_capture_is_as_wb_defaults_it_and_wandb_disable_git_turns_it_off(tmp_path: Path, disable_git):
    """W&B reads the checkout's git state (``git`` processes) unless told not to, as under Accelerate; no other
    tool is run for it (no package manager)."""
    repository = tmp_path / "cwd"
    repository.mkdir()
    subprocess.run(["git", "init", "-q", str(repository)], check=True)
    script = repository / "train.py"  # a script file: W&B then looks for its path inside the repository
    script.write_text(textwrap.dedent(SPAWN_SCRIPT), encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if not key.startswith("WANDB_")}
    if disable_git is not None:
        env["WANDB_DISABLE_GIT"] = disable_git
    process = subprocess.run(
        [sys.executable, str(script), str(repository / "logs")],
        cwd=repository,
        env={**env, "HOME": str(tmp_path / "home")},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert process.returncode == 0, process.stderr[-4000:]
    result = json.loads(process.stdout.strip().splitlines()[-1])
    assert result["ok"], result
    # `git version` is GitPython's check of its executable, run when wandb 0.19 imports it: it reads no repository.
    git = [command for command in result["spawned"] if Path(command[0]).name == "git" and command[1:] != ["version"]]
    assert bool(git) == (disable_git is None), result["spawned"]
    tools = {Path(command[0]).name for command in result["spawned"]} - {"git", "wandb-core", "wandb-symon", "gpu_stats"}
    assert not tools & {"pip", "pip3", "uv", "conda", "mamba", "pixi", "poetry"}, result["spawned"]


@pytest.mark.parametrize("mode", ["offline", "disabled"])
def test_mode_chosen_through_wandb_mode_wins_over_credentials(tmp_path: Path, mode: str):
    credentials = {"WANDB_API_KEY": "0123456789abcdef" * 2 + "01234567", "WANDB_MODE": mode}
    result = run_script(
        CHOSEN_MODE_SCRIPT, tmp_path, {"WANDB_BASE_URL": f"http://127.0.0.1:{_refusing_port()}", **credentials}
    )
    assert result["ok"] and result["mode"] == mode and result["reason"] is None, result
    assert "could not be used" not in result["stderr"]
    if mode == "offline":
        assert read_run(result["run_dir"]).metrics() == {"loss": {0: 1.0}}
    else:
        assert not list((tmp_path / "logs").rglob("*.wandb"))


# -- per-run state, settings, modes -------------------------------------------------------------------
def test_two_concurrent_runs_stay_apart_and_config_is_per_run(tmp_path: Path):
    first, first_tracker = start(tmp_path, project="first", config={"lr": 0.1, "model": {"depth": 2}})
    second, second_tracker = start(tmp_path, project="second", config={"lr": 0.2})
    first.log({"a": 1.0}, step=0)
    second.log({"b": 2.0}, step=0)
    finish(first)
    finish(second)
    one, two = read_run(first_tracker.run_dir), read_run(second_tracker.run_dir)
    assert one.directory != two.directory
    assert set(one.metrics()) == {"a"} and set(two.metrics()) == {"b"}
    assert one.user_config() == {"lr": 0.1, "model": {"depth": 2}}  # no keys of ours added
    assert two.user_config() == {"lr": 0.2}
    assert one.run.project == "first" and two.run.project == "second"


def test_explicit_kwargs_and_settings_win_without_duplicate_argument(tmp_path: Path):
    import wandb

    chosen = {"init_timeout": 7.0, **({"x_transaction_log_flush_interval": 3.0} if FLUSH_WRITES else {})}
    settings = wandb.Settings(**chosen)
    run, tracker = start(tmp_path, project="explicit", name="my-run", tags=["t"], settings=settings)
    run.log({"loss": 1.0}, step=0)
    finish(run)
    assert {field: getattr(tracker.run.settings, field) for field in chosen} == chosen
    assert tracker.run.settings.console == "off" and not tracker.run.settings.x_disable_stats  # ours; W&B's
    assert "console" not in settings.model_fields_set  # the user's object is not modified
    stored = read_run(tracker.run_dir)
    assert stored.run.project == "explicit" and stored.run.display_name == "my-run"


def test_online_requested_without_credentials_records_offline_without_prompting(tmp_path: Path):
    run, tracker = start(tmp_path, mode="online")
    run.log({"loss": 1.0}, step=0)
    report = finish(run)
    assert tracker.mode == "offline" and "credentials" in tracker.fallback_reason
    assert any("recorded offline" in note for note in report.backends["wandb"].notes)
    assert read_run(tracker.run_dir).metrics()["loss"] == {0: 1.0}


def test_disabled_mode_records_nothing_and_finishes(tmp_path: Path):
    run, tracker = start(tmp_path, mode="disabled")
    run.log({"loss": 1.0}, step=0)
    finish(run)
    assert tracker.mode == "disabled" and tracker.run_dir is None


# -- durability and the transaction log -------------------------------------------------------------
@needs_flush_interval
def test_flush_makes_logged_steps_readable_while_the_run_is_live(tmp_path: Path):
    run, tracker = start(tmp_path)
    for step in range(10):
        run.log({"loss": float(step)}, step=step)
    assert run.flush(timeout=30)
    live = read_run(tracker.run_dir)
    # W&B commits a step's row when a later step arrives: the last one is written at finish.
    assert sorted(live.metrics()["loss"]) == list(range(9))
    assert not ends_with_exit(next(tracker.run_dir.glob("run-*.wandb")))
    finish(run)
    assert sorted(read_run(tracker.run_dir).metrics()["loss"]) == list(range(10))


@needs_flush_interval
def test_the_periodic_flush_never_sleeps_in_the_worker_and_counts_only_what_is_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The worker begins a flush and goes on delivering; the records count as delivered once wandb-core's
    next write has them on disk (the run still live), and nothing waits for that write in the worker."""
    from tracking_wandb import flush_wait

    def no_waiting(self) -> bool:
        raise AssertionError("the periodic flush waited for wandb-core's write")

    monkeypatch.setattr(flush_wait.NextWrite, "wait", no_waiting)
    run, tracker = start(tmp_path)
    report = run.state.workers[0].report
    for step in range(10):
        run.log({"loss": float(step)}, step=step)
    deadline = time.monotonic() + 30
    while report.delivered < 10 and time.monotonic() < deadline:  # one flush interval (1 s), then one write
        time.sleep(0.01)
    assert report.delivered == 10 and report.errors == 0, str(report)
    live = read_run(tracker.run_dir)  # W&B commits a step's row when a later step arrives
    assert sorted(live.metrics()["loss"]) == list(range(9))
    assert not ends_with_exit(next(tracker.run_dir.glob("run-*.wandb")))
    finish(run)
    assert sorted(read_run(tracker.run_dir).metrics()["loss"]) == list(range(10))


@needs_flush_interval
def test_a_flush_after_a_begun_one_waits_for_the_write_it_began(tmp_path: Path):
    """Nothing logged between them: the explicit flush still waits for the write the begun one counts on."""
    tracker = WandBTracker("begun", logging_dir=tmp_path / "logs")
    tracker.start()
    for step in range(3):
        tracker.log({"loss": float(step)}, step=step)
    done = tracker.begin_flush()
    assert not done()  # wandb-core's write comes after the hand-off
    tracker.flush()
    assert done()
    assert sorted(read_run(tracker.run_dir).metrics()["loss"]) == [0, 1]  # the last row is written at finish
    tracker.finish()


@pytest.mark.skipif(FLUSH_WRITES, reason="wandb >= 0.31 has x_transaction_log_flush_interval")
def test_an_older_wandb_without_the_flush_interval_warns_once_and_notes_it(tmp_path: Path):
    from tracking_core import TrackingWarning
    from tracking_core.notices import reset_warnings
    from tracking_core.testing.resume import log_loss, started_tracker

    reset_warnings()
    with pytest.warns(TrackingWarning, match="x_transaction_log_flush_interval") as caught:
        first = started_tracker(WandBTracker, tmp_path / "logs", None)
        second = started_tracker(WandBTracker, tmp_path / "logs", None)
    log_loss(first, range(3))
    first.finish()
    second.finish()
    assert len([w for w in caught if "x_transaction_log_flush_interval" in str(w.message)]) == 1
    for tracker in (first, second):  # one warning per process, a note in every run's report
        note = f"wandb {v0_19.version()} has no setting 'x_transaction_log_flush_interval'"
        assert any(note in line for line in tracker.report_notes()), tracker.report_notes()
    assert sorted(read_run(first.run_dir).metrics()["loss"]) == [0, 1, 2]  # written at finish


def test_an_empty_transaction_log_reads_as_no_records(tmp_path: Path):
    """wandb-core creates the file before it writes anything (before 0.31, until the run ends)."""
    folder = tmp_path / "offline-run-20260101_000000-abc"
    folder.mkdir()
    (folder / "run-abc.wandb").write_bytes(b"")
    assert read_run(folder).metrics() == {} and read_run(folder).record_counts == {}


def test_many_steps_span_blocks_and_finish_waits_for_the_whole_file(tmp_path: Path):
    run, tracker = start(tmp_path)
    for step in range(3000):
        run.log({"train/loss": 1.0 / (step + 1), "train/acc": step / 3000, "lr": 0.001 * 0.999**step}, step=step)
    finish(run)
    log_file = next(tracker.run_dir.glob("run-*.wandb"))
    assert log_file.stat().st_size > 3 * 32 * 1024  # several blocks: records cross block boundaries
    assert ends_with_exit(log_file)
    metrics = read_run(tracker.run_dir).metrics()
    assert len(metrics["train/loss"]) == 3000 and metrics["train/loss"][2999] == 1.0 / 3000
    assert tracker.read_back_metrics()["lr"][10] == 0.001 * 0.999**10


def test_a_step_logged_twice_in_one_process_is_one_history_row(tmp_path: Path):
    tracker = WandBTracker("twice", logging_dir=tmp_path / "logs")
    tracker.start()
    tracker.log({"a": 1.0}, step=3)
    tracker.log({"a": 2.0}, step=3)
    tracker.finish()
    # W&B merges values logged at its current step into one history row: one point, the last value.
    assert tracker.read_back_history()["a"] == [(3, 2.0)]


def test_bad_keys_and_backward_steps(tmp_path: Path):
    run, tracker = start(tmp_path)
    with pytest.warns(tracking_core.TrackingWarning) as caught:
        run.log({"": 1.0, "ok": 1.0}, step=5)
        run.log({"ok": 2.0}, step=3)  # goes back: the dispatcher warns, W&B drops it
        finish(run)
    messages = [str(w.message) for w in caught]
    assert any("empty key" in message for message in messages) and any("went back" in message for message in messages)
    assert read_run(tracker.run_dir).metrics() == {"ok": {5: 1.0}}


# -- media and artifacts -------------------------------------------------------------------------------
def test_images_in_every_layout_become_pngs(tmp_path: Path):
    np = pytest.importorskip("numpy")
    image = pytest.importorskip("PIL.Image")
    run, tracker = start(tmp_path)
    hwc = (np.arange(32 * 48 * 3) % 255).astype("uint8").reshape(32, 48, 3)
    run.log_images(
        {
            "hwc": hwc,
            "chw": hwc.transpose(2, 0, 1),
            "gray": hwc[..., 0],
            "pil": image.fromarray(hwc),
            "floats": [hwc / 255.0, hwc / 255.0],
        },
        step=4,
    )
    finish(run)
    stored = read_run(tracker.run_dir)
    images = stored.of_type("images/separated")
    assert set(images) == {"hwc", "chw", "gray", "pil", "floats"} and all(set(s) == {4} for s in images.values())
    assert images["floats"][4]["count"] == 2
    for key, steps in images.items():
        for name in steps[4]["filenames"]:
            with image.open(stored.files / name) as png:
                assert png.size == (48, 32), (key, png.size)


def test_tables_from_rows_and_dataframes(tmp_path: Path):
    pandas = pytest.importorskip("pandas")
    run, tracker = start(tmp_path)
    run.log_table("rows", data=[["a", 1], ["b", None]], step=0)  # no columns given, a None cell
    run.log_table("frame", dataframe=pandas.DataFrame({"x": [1.5, 2.5], "y": ["p", "q"]}), step=1)
    finish(run)
    stored = read_run(tracker.run_dir)
    tables = {
        key: json.loads((stored.files / value["path"]).read_text())
        for key, steps in stored.of_type("table-file").items()
        for value in steps.values()
    }
    assert tables["rows"]["columns"] == ["col0", "col1"] and tables["rows"]["data"] == [["a", 1], ["b", None]]
    assert tables["frame"]["columns"] == ["x", "y"] and tables["frame"]["data"] == [[1.5, "p"], [2.5, "q"]]


def test_figure(tmp_path: Path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 1), dpi=50)
    figure.add_subplot().plot([0, 1], [1, 0])
    run, tracker = start(tmp_path)
    run.log_figure(figure, "curve", step=2)
    finish(run)
    stored = read_run(tracker.run_dir).of_type("image-file")
    assert 2 in stored["curve"] and stored["curve"][2]["width"] == 100


def test_artifacts_are_logged_offline(tmp_path: Path):
    (tmp_path / "model.bin").write_bytes(b"weights")
    (tmp_path / "outputs").mkdir()
    (tmp_path / "outputs" / "a.txt").write_text("a")
    (tmp_path / "outputs" / "b.txt").write_text("b")
    run, tracker = start(tmp_path)
    run.log_artifact(tmp_path / "model.bin")
    run.log_artifacts(tmp_path / "outputs", artifact_path="eval outputs")
    finish(run)
    artifacts = {artifact.name: artifact for artifact in read_run(tracker.run_dir).artifacts}
    assert set(artifacts) == {"model.bin", "eval-outputs"}
    assert [entry.path for entry in artifacts["model.bin"].manifest.contents] == ["model.bin"]
    assert sorted(entry.path for entry in artifacts["eval-outputs"].manifest.contents) == ["a.txt", "b.txt"]
    for artifact in artifacts.values():  # staged copies that `wandb sync` uploads later
        assert all(Path(entry.local_path).is_file() for entry in artifact.manifest.contents)


def test_construction_imports_no_sdk(tmp_path: Path):
    code = textwrap.dedent(
        """
        import sys, tracking_wandb
        tracking_wandb.WandBTracker("p", logging_dir=sys.argv[1], project="x", mode="offline")
        print('{"wandb_imported": %s}' % str("wandb" in sys.modules).lower())
        """
    )
    result = run_script(code, tmp_path)
    assert result["wandb_imported"] is False
    assert not (tmp_path / "logs").exists()
    assert WandBTracker.main_process_only is False and WandBTracker.requires_logging_directory is False


def test_one_pixel_high_or_wide_images_are_stored(tmp_path: Path):
    """W&B squeezes size-1 axes of arrays, so a 1 x W x 3 image became a 2-D array and 1 x 1 x 2 a refused 1-D one."""
    np = pytest.importorskip("numpy")
    image = pytest.importorskip("PIL.Image")
    run, tracker = start(tmp_path)
    run.log_images({"row": np.zeros((1, 5, 3), dtype="uint8"), "chw": np.zeros((1, 1, 2), dtype="uint8")}, step=0)
    report = finish(run)
    stored = read_run(tracker.run_dir)
    images = stored.of_type("images/separated")
    assert set(images) == {"row", "chw"}, report
    sizes = {key: image.open(stored.files / steps[0]["filenames"][0]).size for key, steps in images.items()}
    assert sizes == {"row": (5, 1), "chw": (2, 1)}
