"""The ClearML task ends in ClearML's status for how the tracking run ended (``GeneralTracker.run_end``):
completed, failed with the run's status as the reason, or stopped with it as the message -- set through
``Task.mark_completed`` / ``mark_failed`` / ``mark_stopped`` after ``Task.close()``, whatever ClearML's own exit
hooks made of the end.

An offline session (the only store these tests have) keeps no status: the SDK sends the status calls to the
server only, so the session is read back for what it does keep, and the calls the tracker made on the real
``clearml.Task`` are recorded on their way to ClearML."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tracking_clearml.reader import OfflineSession
from tracking_core.testing.reliability import last_json_line

SCRIPT = """
import atexit, functools, json, sys, time

calls = []

def told():  # registered before tracking_core: runs after the library's exit hook finished the run
    print(json.dumps({"calls": calls}), flush=True)

atexit.register(told)

from clearml import Task

def recorded(name):
    method = getattr(Task, name)

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        calls.append([name, kwargs])
        return method(self, *args, **kwargs)

    return call

for name in ("mark_completed", "mark_failed", "mark_stopped"):
    setattr(Task, name, recorded(name))

import tracking_core

how = sys.argv[1]
if how == "with":  # the exception leaves the with block: the run ends before any exception hook sees it
    with tracking_core.init("ended", log_with="clearml", logging_dir="logs") as run:
        for step in range(11):
            run.log({"loss": 1.0 / (step + 1)}, step=step)
        print("ready", flush=True)
        raise ValueError("the training loop broke")
run = tracking_core.init("ended", log_with="clearml", logging_dir="logs")
for step in range(100_000):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    if step == 5:
        run.flush(120)  # the task is up: the end lands mid-loop
        print("ready", flush=True)
    if how == "raise" and step == 10:
        raise ValueError("the training loop broke")
    if how == "finish" and step == 10:
        break
    time.sleep(0.01)
run.finish()
"""


def _ended(tmp_path: Path, how: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    """Run the script until it ends ``how``; the process and the run's ``run.json``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CLEARML_", "TRAINS_"))}
    env.update(HOME=str(tmp_path / "home"), CLEARML_CONFIG_FILE=str(tmp_path / "no-clearml.conf"), PYTHONUNBUFFERED="1")
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
        for line in process.stdout:  # ClearML prints its own lines first
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
    ("how", "status", "call"),
    [
        ("finish", "finished", ["mark_completed", {"status_message": "finished", "force": True}]),
        (
            "sigint",
            "killed: KeyboardInterrupt",
            ["mark_stopped", {"force": True, "status_message": "killed: KeyboardInterrupt"}],
        ),
        ("raise", "crashed: ValueError", ["mark_failed", {"status_reason": "crashed: ValueError", "force": True}]),
        ("with", "crashed: ValueError", ["mark_failed", {"status_reason": "crashed: ValueError", "force": True}]),
    ],
)
def test_the_task_ends_in_clearmls_status_for_how_the_run_ended(tmp_path, how, status, call):
    (tmp_path / "home").mkdir()
    done, manifest = _ended(tmp_path, how)
    assert (done.returncode == 0) == (how == "finish"), done.stderr[-3000:]
    assert manifest["status"] == status

    # The last status ClearML was given is the run's own, forced over what Task.close() chose from its hooks.
    calls = last_json_line(done.stdout)["calls"]
    assert calls and calls[-1] == call, calls
    if how == "with":  # ClearML's hooks saw no exception: close() alone would have left the task completed
        assert calls[:-1] == [["mark_completed", {}]], calls

    (archive,) = (tmp_path / "logs" / "clearml" / "offline").glob("*.zip")
    session = OfflineSession(archive)
    loss = session.scalars()["loss"]
    assert loss[5] == pytest.approx(1 / 6)  # logged before the end, delivered before the task was closed
    if how != "sigint":
        assert max(loss) == 10, sorted(loss)[-3:]
    # Offline, ClearML keeps no status and no start or end time: the session's task is as Task.init wrote it
    # (Task.import_offline_session marks every imported task completed, stamped at the import).
    task = session.task
    kept = {name: task[name] for name in ("status", "status_reason", "started", "completed") if task.get(name)}
    assert kept in ({}, {"status": "created"}), kept
