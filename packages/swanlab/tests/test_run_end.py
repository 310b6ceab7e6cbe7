"""The SwanLab run ends in SwanLab's own state as the tracking run ended (``GeneralTracker.run_end``): success
when it finished, aborted after Ctrl-C, crashed (with the run's status as the error) after an exception --
read back from the run's finish record with SwanLab's own reader (:func:`tracking_swanlab.reader.read_run`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tracking_swanlab.older import v0_5_8, v0_6_2
from tracking_swanlab.reader import read_run

#: The installed SwanLab is 0.5.8 to 0.7.x, whose runs end as success or crashed only.
EARLIER_LINE = v0_6_2.in_use()
#: The installed SwanLab has no offline mode (0.5.8 to 0.6.1): the run is written in local mode.
LOCAL_MODE = v0_5_8.in_use()

SCRIPT = """
import sys, time
import tracking_core

how = sys.argv[1]
run = tracking_core.init("ended", log_with="swanlab", logging_dir="logs")
for step in range(100_000):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    if step == 5:
        run.flush(120)  # SwanLab is up: the end lands mid-loop
        print("ready", flush=True)
    if how == "raise" and step == 10:
        raise RuntimeError("the training loop broke")
    if how == "finish" and step == 10:
        break
    time.sleep(0.01)
run.finish()
"""


def _ended(tmp_path: Path, how: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    """Run the script until it ends ``how``; the process and the run's ``run.json``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SWANLAB_")}
    env.update(
        {
            "HOME": str(tmp_path / "home"),
            "SWANLAB_ROOT": str(tmp_path / "home" / ".swanlab"),
            "PYTHONUNBUFFERED": "1",
        }
    )
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
        assert process.stdout is not None
        for line in process.stdout:  # SwanLab prints its own lines first
            if line.strip() == "ready":
                break
        if how == "sigint":
            os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground group
        output, errors = process.communicate(timeout=150)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    done = subprocess.CompletedProcess(process.args, process.returncode, output, errors)
    (manifest,) = (tmp_path / "logs" / "ended").glob("*/run.json")
    return done, json.loads(manifest.read_text())


@pytest.mark.parametrize(
    ("how", "status", "state"),
    [
        ("finish", "finished", "finished"),
        ("sigint", "killed: KeyboardInterrupt", "aborted"),
        ("raise", "crashed: RuntimeError", "crashed"),
    ],
)
def test_the_swanlab_run_ends_in_swanlabs_state_for_how_the_run_ended(tmp_path, how, status, state):
    (tmp_path / "home").mkdir(exist_ok=True)
    done, manifest = _ended(tmp_path, how)
    assert (done.returncode == 0) == (how == "finish"), done.stderr[-3000:]
    assert manifest["status"] == status

    (run_dir,) = (tmp_path / "logs" / "swanlog").glob("run-*")
    data = read_run(run_dir)
    if EARLIER_LINE:  # SwanLab 0.5.8 to 0.7.x: success or crashed, nothing else (see docs/backends/swanlab.md)
        state = "finished" if how == "finish" else "crashed"
    if LOCAL_MODE:  # SwanLab 0.5.8's local store marks every run it closes finished, whatever finish was told
        state = "finished"
    assert data.finished and data.state == state, (data.state, data.error, done.stderr[-3000:])
    assert data.scalars["loss"][5] == pytest.approx(1 / 6)  # logged before the end, delivered before the finish
    if how != "sigint":  # the last step logged, right before the end: delivered before SwanLab's run ended
        assert max(data.scalars["loss"]) == 10, sorted(data.scalars["loss"])[-3:]
    if EARLIER_LINE:
        return
    assert data.error == ("" if how == "finish" else status)  # the run's own words, not SwanLab's traceback
    # SwanLab stamps the start and the finish itself (its API takes no time): within the process's life.
    assert data.started_at is not None and data.finished_at is not None
    assert manifest["started"] <= data.started_at <= manifest["ended"] <= data.finished_at
