"""Every run writes its journal, whatever ``log_with`` says: the views and replay work on every run, and a
training process that dies before a backend started loses nothing that reached the journal."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tracking_core import init, register_tracker_class
from tracking_core.store.journal import read_journal

SLOW_START = textwrap.dedent(
    '''
    """A backend whose start-up takes seconds (MLflow's import and store set-up) and that appends each point to
    ``points.jsonl`` in the run folder: a file a later process can count."""
    import json
    import time
    from pathlib import Path

    from tracking_core import GeneralTracker


    class SlowStart(GeneralTracker):
        name = "slow-start"
        requires_logging_directory = False
        durable_on_return = True

        def __init__(self, project_name, **kwargs):
            super().__init__()

        @property
        def tracker(self):
            return None

        def start(self):
            time.sleep(3.0)

        def log(self, values, step=None, **kwargs):
            path = Path(self.run_context.run_dir) / "points.jsonl"
            with path.open("a") as handle:
                handle.write(json.dumps([step, values]) + "\\n")
    '''
)

DIES_DURING_START_UP = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    from slow_start_tracker import SlowStart
    from tracking_core import init, register_tracker_class

    register_tracker_class(SlowStart)
    run = init("p", log_with=["slow-start"], logging_dir=sys.argv[2])
    print(run.run_dir, flush=True)
    for step in range(200):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    time.sleep(1.0)
    os._exit(0)  # a Ray worker torn down, a scheduler's kill: no finish(), no exit hooks
    """
)


def _replayed_into_slow_start(tmp_path: Path, run_dir: Path) -> list:
    """``tracking replay`` of the run's journal into its slow-start backend; the points that backend then holds."""
    from tracking_core.cli.replay import replay

    sys.path.insert(0, str(tmp_path))
    try:
        from slow_start_tracker import SlowStart

        register_tracker_class(SlowStart)
        report = replay(run_dir / "journal.jsonl", "slow-start", progress=False)
    finally:
        sys.path.remove(str(tmp_path))
    assert report.ok, str(report)
    return [json.loads(line) for line in (run_dir / "points.jsonl").read_text().splitlines()]


def _tracking(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tracking_core", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_a_run_without_jsonl_has_its_journal_and_every_view_reads_it(tmp_path, memory):
    run = init("p", log_with=["memory"], logging_dir=tmp_path / "runs", config={"lr": 0.1})
    for step in range(5):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    report = run.finish()
    assert [tracker.name for tracker in run.trackers] == ["memory"]  # the journal is not one of the user's
    assert list(report.backends) == ["memory"] and report.ok
    with pytest.raises(ValueError, match="not a tracker of this run"):
        run.get_tracker("jsonl")
    entries = list(read_journal(Path(run.run_dir) / "journal.jsonl"))
    assert [e["step"] for e in entries if e["type"] == "metrics"] == [0, 1, 2, 3, 4]
    assert [e["values"] for e in entries if e["type"] == "config"] == [{"lr": 0.1}]

    shown = _tracking("show", str(run.run_dir), cwd=tmp_path)
    assert shown.returncode == 0 and "loss" in shown.stdout, shown.stderr
    exported = _tracking("export", str(run.run_dir), "--format", "json", "-o", str(tmp_path / "out.json"), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert len(json.loads((tmp_path / "out.json").read_text())["rows"]) == 5
    other = init("p", log_with=["memory"], logging_dir=tmp_path / "runs")
    other.log({"loss": 2.0}, step=0)
    other.finish()
    compared = _tracking("compare", str(run.run_dir), str(other.run_dir), "--json", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    assert "loss" in compared.stdout


@pytest.mark.reliability
def test_a_process_that_dies_while_a_backend_starts_is_delivered_by_replay(tmp_path, caplog):
    from tracking_core.testing.reliability import tally

    (tmp_path / "slow_start_tracker.py").write_text(SLOW_START)
    died = subprocess.run(
        [sys.executable, "-c", DIES_DURING_START_UP, str(tmp_path), str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert died.returncode == 0, died.stderr
    run_dir = Path(died.stdout.split()[0])
    assert not (run_dir / "points.jsonl").exists()  # the backend had stored nothing when the process died
    listed = _tracking("runs", str(tmp_path / "runs"), cwd=tmp_path)
    assert "killed" in listed.stdout and "slow-start (not started, 200 owed)" in listed.stdout, listed.stdout
    command = f"tracking replay {run_dir} --to slow-start"
    assert f"{run_dir.name}: {command} delivers what its backends lack" in listed.stdout
    with caplog.at_level(logging.WARNING, logger="tracking"):
        init("p", log_with=["jsonl"], logging_dir=tmp_path / "runs").finish()
    assert f"ended without finish() and its backends lack records of its journal (slow-start 200): {command}" in (
        caplog.text
    )
    points = _replayed_into_slow_start(tmp_path, run_dir)
    steps = [step for step, _ in points]
    figures = tally("os._exit during a backend's start-up, then replay", "slow-start", range(200), steps)
    assert (figures["lost"], figures["duplicated"]) == (0, 0) and steps == list(range(200))


def test_a_record_logged_on_one_tracker_is_in_the_journal_and_replays_to_that_backend_only(tmp_path, memory):
    """``run.get_tracker("memory").log(...)`` is the user's record too: the journal holds it, for its backend,
    so a replay (or a resumed run's catch-up) delivers it there and nowhere else."""
    from tracking_core.cli.replay import replay
    from tracking_core.testing import MemoryTracker

    class Second(MemoryTracker):
        name = "second"

    register_tracker_class(Second)
    run = init("p", log_with=["memory", "second"], logging_dir=tmp_path / "runs")
    run.log({"loss": 1.0}, step=0)
    run.get_tracker("memory").log({"only_memory": 2.0}, step=1)
    run.get_tracker("second").log_table("only_second", columns=["a"], data=[[1]], step=1)
    run.log({"loss": 0.5}, step=2)
    assert run.finish().ok
    entries = list(read_journal(Path(run.run_dir) / "journal.jsonl"))
    direct = [entry for entry in entries if "for" in entry]
    assert [(entry["type"], entry["for"]) for entry in direct] == [("metrics", "memory"), ("table", "second")]
    assert direct[0]["values"] == {"only_memory": 2.0}

    MemoryTracker.runs.clear()
    report = replay(Path(run.run_dir) / "journal.jsonl", ["memory", "second"], new_run=True, progress=False)
    assert report.ok, str(report)
    copies = {tracker.name: tracker for tracker in MemoryTracker.runs}
    assert copies["memory"].metrics == [(0, {"loss": 1.0}), (1, {"only_memory": 2.0}), (2, {"loss": 0.5})]
    assert copies["memory"].tables == []
    assert copies["second"].metrics == [(0, {"loss": 1.0}), (2, {"loss": 0.5})]
    assert [table[0] for table in copies["second"].tables] == ["only_second"]


DIES_AFTER_DIRECT_CALLS = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    from slow_start_tracker import SlowStart
    from tracking_core import init, register_tracker_class
    from tracking_core.testing import MemoryTracker

    register_tracker_class(SlowStart)
    register_tracker_class(MemoryTracker)
    run = init("p", log_with=["slow-start", "memory"], logging_dir=sys.argv[2])
    print(run.run_dir, flush=True)
    for step in range(5):
        run.log({"loss": 1.0}, step=step)
    run.get_tracker("memory").log({"only_memory": 1.0}, step=5)
    run.get_tracker("slow-start").log({"only_slow": 1.0}, step=6)
    run.log({"loss": 0.5}, step=7)
    time.sleep(1.0)
    os._exit(0)
    """
)


@pytest.mark.reliability
def test_a_replay_into_the_same_run_gives_a_record_logged_on_one_tracker_to_that_backend_only(tmp_path):

    (tmp_path / "slow_start_tracker.py").write_text(SLOW_START)
    died = subprocess.run(
        [sys.executable, "-c", DIES_AFTER_DIRECT_CALLS, str(tmp_path), str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert died.returncode == 0, died.stderr
    run_dir = Path(died.stdout.split()[0])
    assert not (run_dir / "points.jsonl").exists()
    points = _replayed_into_slow_start(tmp_path, run_dir)
    assert points == [[step, {"loss": 1.0}] for step in range(5)] + [[6, {"only_slow": 1.0}], [7, {"loss": 0.5}]]
