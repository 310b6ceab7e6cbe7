"""The MLflow run spans the tracking run and ends with its status: ``start_time`` is when ``init()`` was
called (not when the worker had MLflow up), ``end_time`` when the run ended, and the status says how it
ended (``FINISHED``, ``FAILED``, ``KILLED``) as ``tracking runs`` and ``tracking show`` say it. Read back
with ``MlflowClient``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import tracking_core


def _mlflow_run(run_dir: Path):
    from mlflow import MlflowClient

    state = json.loads((run_dir / "run.json").read_text())["backends"]["mlflow"]
    client = MlflowClient(tracking_uri=state["tracking_uri"])
    return client, client.get_run(state["run_id"])


def _metric_times(client, run) -> list[int]:
    return sorted(
        point.timestamp for key in run.data.metrics for point in client.get_metric_history(run.info.run_id, key)
    )


def test_the_mlflow_run_starts_when_init_was_called_and_ends_when_the_run_did(tmp_path):
    before = time.time()
    run = tracking_core.init("times", log_with="mlflow", logging_dir=tmp_path / "runs")
    run.log({"loss": 1.0}, step=0)  # before MLflow is up in the worker
    for step in range(1, 5):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    report = run.finish()
    after = time.time()
    assert report.ok, str(report)

    manifest = json.loads((Path(run.run_dir) / "run.json").read_text())
    client, stored = _mlflow_run(Path(run.run_dir))
    times = _metric_times(client, stored)
    info = stored.info
    assert len(times) == 5
    assert info.start_time == int(manifest["started"] * 1000)
    assert info.end_time == int(manifest["ended"] * 1000)
    assert int(before * 1000) <= info.start_time <= times[0]
    assert times[-1] <= info.end_time <= after * 1000
    assert info.status == "FINISHED"


def test_a_tracker_used_on_its_own_ends_its_run_finished(tmp_path):
    from tracking_mlflow import MLflowTracker

    tracker = MLflowTracker("alone", logging_dir=tmp_path)
    tracker.start()
    tracker.log({"loss": 1.0}, step=0)
    tracker.finish()
    stored = tracker.client.get_run(tracker.active_run_id).info
    assert stored.status == "FINISHED" and stored.end_time >= stored.start_time


INTERRUPTED = """
import os, sys, time
import tracking_core

how, delivery = sys.argv[1], sys.argv[2]
run = tracking_core.init("ended", log_with="mlflow", logging_dir="runs", delivery=delivery)


def loop():
    for step in range(100_000):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
        if step == 20:
            run.flush(120)  # MLflow is up and holds these: the end lands mid-loop
            print("ready", flush=True)
        if step == 40 and how == "raise":
            raise RuntimeError("the training loop broke")
        time.sleep(0.01)


if how == "with":
    with run:
        loop()
else:
    loop()
"""


def _tracking(*args: str, cwd: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "tracking_core", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize(
    ("how", "delivery", "signal_number", "status", "mlflow_status"),
    [
        ("plain", "thread", signal.SIGINT, "killed: KeyboardInterrupt", "KILLED"),
        ("plain", "process", signal.SIGINT, "killed: KeyboardInterrupt", "KILLED"),
        ("with", "thread", signal.SIGINT, "killed: KeyboardInterrupt", "KILLED"),
        ("with", "thread", signal.SIGTERM, "killed: SIGTERM", "KILLED"),
        ("raise", "thread", None, "crashed: RuntimeError", "FAILED"),
    ],
)
def test_an_interrupted_run_has_one_status_in_run_json_runs_show_and_mlflow(
    tmp_path, how, delivery, signal_number, status, mlflow_status
):
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(INTERRUPTED), how, delivery],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    assert process.stdout is not None
    try:
        assert process.stdout.readline().strip() == "ready", process.stderr.read() if process.stderr else ""
        if signal_number is not None:
            os.killpg(process.pid, signal_number)  # Ctrl-C reaches the whole foreground group
        _, errors = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode != 0, errors

    (run_dir,) = (tmp_path / "runs" / "ended").iterdir()
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["status"] == status, errors
    client, stored = _mlflow_run(run_dir)
    times = _metric_times(client, stored)
    assert len(times) > 20
    assert stored.info.status == mlflow_status
    assert stored.info.end_time == int(manifest["ended"] * 1000)
    assert stored.info.start_time <= times[0] and times[-1] <= stored.info.end_time

    (row,) = [line for line in _tracking("runs", cwd=tmp_path).splitlines() if run_dir.name in line]
    assert status in row, row
    header = _tracking("show", str(run_dir), cwd=tmp_path).splitlines()[1]
    assert header.endswith(status) and "finished" not in header, header
