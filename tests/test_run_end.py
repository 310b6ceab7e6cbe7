"""A run stopped by Ctrl-C, with the backend of this cell: every place that keeps the run's status says the
same (run.json, ``tracking runs``, ``tracking show``), the backend is finished (not abandoned) with what was
logged, and its ``finish()`` was told how the run ended (``run_end``), to end its SDK run in its own terms."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from tracking_core.testing.reliability import last_json_line

CELL = os.environ.get("TRACKING_BACKEND") or "jsonl"

INTERRUPTED = """
import atexit, json, sys, time

def told():  # registered before tracking_core: runs after the library's exit hook finished the run
    report = run.state.report
    tracker = run.get_tracker(sys.argv[1])
    print(json.dumps({"state": report.backends[sys.argv[1]].state, "delivered": report.backends[sys.argv[1]].delivered,
                      "logged": logged, "end": list(tracker.run_end)}), flush=True)

atexit.register(told)
import tracking_core
run = tracking_core.init("interrupted", log_with=[sys.argv[1], "jsonl"], logging_dir="runs")
logged = 0
for step in range(1_000_000):
    run.log({"train/loss": 1.0 / (step + 1)}, step=step)
    logged += 1
    if step == 10:
        run.flush(240)  # the backend is up and holds these: Ctrl-C lands mid-loop
        print("ready", flush=True)
    time.sleep(0.01)
"""


def _tracking(*args: str, cwd) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "tracking_core", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_an_interrupted_run_has_one_status_and_the_backend_is_told(tmp_path):
    env = {key: value for key, value in os.environ.items() if not key.startswith("WANDB_")}
    process = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, CELL],
        cwd=tmp_path,
        env={**env, "HOME": str(tmp_path / "home")},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:  # an SDK may print its own lines first (ClearML's task id)
            if line.strip() == "ready":
                break
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground group
        output, errors = process.communicate(timeout=240)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    out = last_json_line(output)
    assert out["state"] == "finished" and out["delivered"] == out["logged"], (out, errors[-3000:])
    assert out["end"][0] == "killed: KeyboardInterrupt" and out["end"][1] is not None, out

    (run_dir,) = (tmp_path / "runs" / "interrupted").iterdir()
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["status"] == "killed: KeyboardInterrupt" and manifest["ended"] == out["end"][1]
    (row,) = [line for line in _tracking("runs", cwd=tmp_path).splitlines() if run_dir.name in line]
    assert "killed: KeyboardInterrupt" in row, row
    header = _tracking("show", str(run_dir), cwd=tmp_path).splitlines()[1]
    assert header.endswith("killed: KeyboardInterrupt"), header
