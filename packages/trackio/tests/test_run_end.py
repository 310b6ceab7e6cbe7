"""How a run ended, as Trackio keeps it: Trackio has no run status, no end time and no call that takes
either (``Run.finish()`` takes no argument), so a finished, crashed or Ctrl-C'd run looks the same there --
every row that was logged, the user's config, and nothing made up to stand for a status (no metric, config
key or alert). The start Trackio shows ("Created", config ``_Created``, where a release keeps it) is
Trackio's own stamp from ``trackio.init``, within the run's life. Read back in a fresh process with
Trackio's own readers pointed at the run's store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from datetime import datetime
from pathlib import Path

import pytest
from tracking_core.testing.reliability import last_json_line

SCRIPT = """
import atexit, json, sys, time

def told():  # registered before tracking_core: runs after the library's exit hook has finished the run
    print(json.dumps({"logged": logged}), flush=True)

atexit.register(told)
import tracking_core

how = sys.argv[1]
logged = 0
run = tracking_core.init("ended", log_with="trackio", logging_dir="logs", config={"lr": 0.1})
for step in range(100_000):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    logged += 1
    if step == 5:
        run.flush(240)  # Trackio is up: the end lands mid-loop
        print("ready", flush=True)
    if how == "raise" and step == 10:
        raise RuntimeError("the training loop broke")
    if how == "finish" and step == 10:
        break
    time.sleep(0.01)
run.finish()
"""

#: Reads the run back in its own process, through the installed release's own readers, pointed at the store.
READ = """
import json, sys
from pathlib import Path
import trackio, trackio.utils
from tracking_trackio import startup, store

startup.point_sdk_at(Path(sys.argv[1]))
(name,) = store.run_names("ended")
storage = store.sqlite_storage()
config = storage.get_run_config("ended", name) if hasattr(storage, "get_run_config") else None
alerts = storage.get_alerts("ended", run_name=name) if hasattr(storage, "get_alerts") else []
print(json.dumps({"logs": store.run_logs("ended", name), "config": config, "alerts": alerts}, default=str))
"""


def _ended(tmp_path: Path, how: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    """Run the script until it ends ``how``; the process and the run's ``run.json``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("TRACKIO_")}
    env.update({"HOME": str(tmp_path / "home"), "HF_HOME": str(tmp_path / "hf"), "PYTHONUNBUFFERED": "1"})
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


def _read_back(tmp_path: Path) -> dict[str, object]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("TRACKIO_")}
    env.update({"HOME": str(tmp_path / "home"), "HF_HOME": str(tmp_path / "hf")})
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(READ), str(tmp_path / "logs" / "trackio")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return last_json_line(result.stdout)


@pytest.mark.parametrize(
    ("how", "status"),
    [("finish", "finished"), ("sigint", "killed: KeyboardInterrupt"), ("raise", "crashed: RuntimeError")],
)
def test_trackio_keeps_every_row_and_no_status_however_the_run_ended(tmp_path, how, status):
    (tmp_path / "home").mkdir()
    done, manifest = _ended(tmp_path, how)
    assert (done.returncode == 0) == (how == "finish"), done.stderr[-3000:]
    assert manifest["status"] == status
    logged = last_json_line(done.stdout)["logged"]
    if how != "sigint":
        assert logged == 11

    stored = _read_back(tmp_path)
    logs = stored["logs"]
    # every row logged before the end is in Trackio, at its step, delivered before Trackio's run ended
    assert [row["step"] for row in logs] == list(range(logged)), (logs[-3:], done.stderr[-3000:])
    assert logs[5]["loss"] == pytest.approx(1 / 6)
    # nothing stands in for a status Trackio does not have: no extra metric, config key or alert
    assert {key for row in logs for key in row} <= {"loss", "step", "timestamp"}
    assert stored["alerts"] == []
    config = stored["config"]
    if config is None:  # a release whose store keeps no run config (0.0.17 to 0.3) or has no reader of it
        return
    assert {key: value for key, value in config.items() if not key.startswith("_")} == {"lr": 0.1}
    if "_Created" in config:  # Trackio's own start stamp: set by trackio.init, within the run's life
        created = datetime.fromisoformat(config["_Created"]).timestamp()
        assert manifest["started"] <= created <= manifest["ended"], (manifest, config["_Created"])
