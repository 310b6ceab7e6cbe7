"""After ``finish()`` the process holds nothing of the run's storage open: another process reopens the run at once.

This is what ``get_tracker("aim", unwrap=True)`` under ``delivery="process"`` needs: the delivery process
finishes the tracker and lives on for the other backends, while the training process reopens the same Aim
run (RocksDB allows one writer per database, and its ``LOCK`` stays held while any handle is open).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tracking_aim import AimTracker

REOPEN = """
import json, sys
from aim import Repo, Run

run = Run(run_hash=sys.argv[2], repo=sys.argv[1])
run.track(99.0, name="loss", step=99)
run.close()
"""

READ = """
import json, sys
from aim import Repo
from aim.sdk.index_manager import RepoIndexManager

repo = Repo(sys.argv[1])
manager = RepoIndexManager(repo)
if getattr(manager, "run_needs_indexing", lambda run_hash: True)(sys.argv[2]):
    manager.index(sys.argv[2])
for container in list(repo.container_pool.values()):
    container.close()
run = Repo(sys.argv[1]).get_run(sys.argv[2])
(metric,) = [metric for metric in run.metrics() if metric.name == "loss"]
steps, (values, _epochs, _times) = metric.data.items_list()
print(json.dumps([int(step) for step in steps]))
"""


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True, timeout=120
    )


def test_another_process_reopens_the_run_right_after_finish(tmp_path: Path) -> None:
    tracker = AimTracker("released", logging_dir=tmp_path, system_tracking_interval=None)
    tracker.start()
    for step in range(5):
        tracker.log({"loss": 1.0 / (step + 1), "note": f"step {step}"}, step=step)
    tracker.store_init_configuration({"lr": 0.1})
    tracker.flush()
    tracker.finish()
    run_hash = str(tracker.run_hash)
    # This process lives on with the finished tracker, as the delivery process does for its other backends.
    reopened = _python(REOPEN, tracker.repo_path, run_hash)
    assert reopened.returncode == 0, reopened.stderr[-3000:]
    read = _python(READ, tracker.repo_path, run_hash)
    assert read.returncode == 0, read.stderr[-3000:]
    assert read.stdout.strip().splitlines()[-1] == "[0, 1, 2, 3, 4, 99]"


def test_finish_twice_and_flush_after_finish_are_harmless(tmp_path: Path) -> None:
    tracker = AimTracker("released", logging_dir=tmp_path, system_tracking_interval=None)
    tracker.start()
    tracker.log({"loss": 1.0}, step=0)
    tracker.finish()
    tracker.finish()
    tracker.flush()
    assert tracker.read_back_metrics() == {"loss": {0: 1.0}}
