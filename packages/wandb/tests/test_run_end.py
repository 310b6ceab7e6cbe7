"""The W&B run ends with the process's exit code as the tracking run ended (``GeneralTracker.run_end``): 0 when it
finished, 130 after Ctrl-C, 1 after an exception, read back from the run's ``exit`` record in its ``.wandb`` file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tracking_wandb.transaction_log import iter_records

SCRIPT = """
import sys, time
import tracking_core

how = sys.argv[1]
run = tracking_core.init("ended", log_with="wandb", logging_dir="logs")
for step in range(100_000):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    if step == 5:
        run.flush(120)  # W&B is up: the end lands mid-loop
        print("ready", flush=True)
    if how == "raise" and step == 10:
        raise RuntimeError("the training loop broke")
    if how == "finish" and step == 10:
        break
    time.sleep(0.01)
run.finish()
"""


def _exit_code(logs: Path) -> int:
    (log,) = logs.rglob("*.wandb")
    exits = [record.exit for record in iter_records(log) if record.WhichOneof("record_type") == "exit"]
    assert len(exits) == 1, exits
    return int(exits[0].exit_code)


@pytest.mark.parametrize(
    ("how", "status", "exit_code"),
    [("finish", "finished", 0), ("sigint", "killed: KeyboardInterrupt", 130), ("raise", "crashed: RuntimeError", 1)],
)
def test_the_wandb_run_ends_with_the_exit_code_of_the_run(tmp_path, how, status, exit_code):
    env = {key: value for key, value in os.environ.items() if not key.startswith("WANDB_")}
    env.update({"HOME": str(tmp_path / "home"), "PYTHONUNBUFFERED": "1"})
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SCRIPT), how],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        if how == "sigint":
            os.killpg(process.pid, signal.SIGINT)  # Ctrl-C reaches the foreground group, wandb-core too
        _, errors = process.communicate(timeout=150)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert (process.returncode == 0) == (how == "finish"), errors[-3000:]
    (manifest,) = (tmp_path / "logs" / "ended").glob("*/run.json")
    assert json.loads(manifest.read_text())["status"] == status
    assert _exit_code(tmp_path / "logs") == exit_code
