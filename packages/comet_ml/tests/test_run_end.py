"""The offline experiment ends as the run did, in the fields Comet's own crash handling fills: a crashed or
interrupted run has ``customer_error_reported`` and the run's status as ``customer_error_message`` in the
archive's ``experiment.json`` (what ``comet upload`` reports as the experiment's error), a finished run has
none; its ``start_time`` is when ``init()`` was called and its ``stop_time`` when the run ended (``run.json``'s
``started`` and ``ended``), not when the worker had Comet up or got through its queue. Read back from the
archive, checked with Comet's own schema for it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import tracking_core

SCRIPT = """
import sys, time
import tracking_core

how, delivery = sys.argv[1], sys.argv[2]
run = tracking_core.init("ended", log_with="comet_ml", logging_dir="runs", delivery=delivery)


def loop():
    for step in range(100_000):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
        if step == 20:
            run.flush(120)  # Comet is up and holds these: the end lands mid-loop
            print("ready", flush=True)
        if step == 40 and how == "raise":
            raise ValueError("the training loop broke")
        if step == 40 and how == "finish":
            run.finish()
            break
        time.sleep(0.01)


if how == "with":
    with run:
        loop()
else:
    loop()
"""


def _archive(read, run_dir: Path):
    (path,) = (run_dir / "comet_ml").glob("*.zip")
    archive = read(SimpleNamespace(archive_path=path))
    from comet_ml.schemas import get_experiment_file_validator

    get_experiment_file_validator().validate(archive.experiment)  # what `comet upload` checks first
    return archive


def _tracking(*args: str, cwd: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "tracking_core", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize(
    ("how", "delivery", "signal_number", "status"),
    [
        ("finish", "thread", None, "finished"),
        ("raise", "thread", None, "crashed: ValueError"),
        ("with", "thread", signal.SIGINT, "killed: KeyboardInterrupt"),
        ("plain", "thread", signal.SIGINT, "killed: KeyboardInterrupt"),
        ("plain", "process", signal.SIGINT, "killed: KeyboardInterrupt"),
        ("raise", "process", None, "crashed: ValueError"),
    ],
)
def test_the_archive_says_how_and_when_the_run_ended(tmp_path, comet_archive, how, delivery, signal_number, status):
    env = {key: value for key, value in os.environ.items() if not key.startswith("COMET_")}
    env.update(HOME=str(tmp_path / "home"), COMET_API_KEY="")
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SCRIPT), how, delivery],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    assert process.stdout is not None
    try:
        for line in process.stdout:  # Comet may print its own lines first
            if line.strip() == "ready":
                break
        if signal_number is not None:
            os.killpg(process.pid, signal_number)  # Ctrl-C reaches the whole foreground group
        _, errors = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert (process.returncode == 0) == (status == "finished"), errors[-3000:]

    (run_dir,) = (tmp_path / "runs" / "ended").iterdir()
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["status"] == status, errors[-3000:]
    archive = _archive(comet_archive, run_dir)
    meta = archive.experiment
    assert len(archive.metrics()["loss"]) > 20
    if status == "finished":
        assert not meta["customer_error_reported"] and meta["customer_error_message"] is None, meta
    else:
        assert meta["customer_error_reported"] is True and meta["customer_error_message"] == status, meta
    assert meta["start_time"] == int(manifest["started"] * 1000), meta
    assert meta["stop_time"] == int(manifest["ended"] * 1000), meta
    loss = [payload for payload in archive.of_type("metric_msg") if payload["metric"]["metricName"] == "loss"]
    assert meta["start_time"] <= min(payload["local_timestamp"] for payload in loss)  # Comet stamps on delivery

    (row,) = [line for line in _tracking("runs", cwd=tmp_path).splitlines() if run_dir.name in line]
    assert status in row, row


def test_a_tracker_used_on_its_own_ends_finished_with_comets_own_times(tmp_path, comet_archive):
    from tracking_comet_ml import CometMLTracker

    tracker = CometMLTracker("alone", logging_dir=tmp_path)
    tracker.start()
    tracker.log({"loss": 1.0}, step=0)
    tracker.finish()
    meta = comet_archive(tracker).experiment
    assert not meta["customer_error_reported"]
    assert 0 < meta["start_time"] <= meta["stop_time"]


def test_a_run_that_crashed_in_its_with_block_is_reported_as_crashed(tmp_path, comet_archive):
    with pytest.raises(KeyError), tracking_core.init("block", log_with="comet_ml", logging_dir=tmp_path) as run:
        run.log({"loss": 1.0}, step=0)
        raise KeyError("missing")
    archive = _archive(comet_archive, Path(run.run_dir))
    manifest = json.loads((Path(run.run_dir) / "run.json").read_text())
    assert archive.experiment["customer_error_message"] == manifest["status"] == "crashed: KeyError"
    assert archive.experiment["stop_time"] == int(manifest["ended"] * 1000)
