"""How a run ended, as Aim keeps it, read back in a fresh process with Aim's own reader.

Aim has no run status field: a run that finished reports its successful finish (Aim's ``finished``
check-in, what Aim's run-status watcher reads); a crashed or interrupted one does not, and its status is
the run's error message (Aim's log records). Aim has no killed state. Start and end are Aim's own stamps
(``creation_time``, ``end_time``), within the run's life; Aim's public API sets neither.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tracking_core.testing.reliability import last_json_line

SCRIPT = """
import atexit, json, sys, time

def told():  # registered before tracking_core: runs after the library's exit hook has finished the run
    tracker = run.get_tracker("aim")
    print(json.dumps({"logged": logged, "hash": tracker.run_hash, "repo": tracker.repo_path}), flush=True)

atexit.register(told)
import tracking_core

how = sys.argv[1]
logged = 0
run = tracking_core.init("ended", log_with="aim", logging_dir="logs", config={"lr": 0.1},
                         init_kwargs={"aim": {"system_tracking_interval": None}})
for step in range(100_000):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    logged += 1
    if step == 5:
        run.flush(240)  # Aim is up: the end lands mid-loop
        print("ready", flush=True)
    if how == "raise" and step == 10:
        raise RuntimeError("the training loop broke")
    if how == "finish" and step == 10:
        break
    time.sleep(0.01)
run.finish()
"""

READ = """
import json, sys
from tracking_aim import reader

print(json.dumps(reader.run_end(sys.argv[1], sys.argv[2])))
"""


def _ended(tmp_path: Path, how: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    """Run the script until it ends ``how``; the process and the run's ``run.json``."""
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SCRIPT), how],
        cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.strip() == "ready":
                break
        if how == "sigint":
            os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground group
        output, errors = process.communicate(timeout=240)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    done = subprocess.CompletedProcess(process.args, process.returncode, output, errors)
    (manifest,) = (tmp_path / "logs" / "ended").glob("*/run.json")
    return done, json.loads(manifest.read_text())


@pytest.mark.parametrize(
    ("how", "status"),
    [("finish", "finished"), ("raise", "crashed: RuntimeError"), ("sigint", "killed: KeyboardInterrupt")],
)
def test_aim_keeps_how_the_run_ended(tmp_path: Path, how: str, status: str) -> None:
    done, manifest = _ended(tmp_path, how)
    assert (done.returncode == 0) == (how == "finish"), done.stderr[-3000:]
    assert manifest["status"] == status
    told = last_json_line(done.stdout)
    read = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(READ), told["repo"], told["hash"]],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert read.returncode == 0, read.stderr[-3000:]
    end = last_json_line(read.stdout)
    if how == "finish":
        assert end["status"] == "finished" and end["errors"] == [], end
    else:  # no successful finish: the newest check-in the watcher reads is the run's start
        assert end["status"] == "starting" and end["errors"] == [status], end
    assert end["active"] is False, end
    # Aim's own stamps, within the run's life: from tracking_core.init until Run.close (after run.json's end).
    assert manifest["started"] <= end["created"] <= manifest["ended"] <= end["ended"], (manifest, end)
