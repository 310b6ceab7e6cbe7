"""How a run ended reaches every tracker before its ``finish()`` (``GeneralTracker.run_end``), matches
run.json's status and ``tracking show``'s, and when the run began reaches it before ``start()``
(``run_context.started``)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tracking_core
from tracking_core import RunEnd
from tracking_core.cli.show import show
from tracking_core.testing import MemoryTracker


@pytest.mark.parametrize(
    ("status", "outcome", "exit_code"),
    [
        ("finished", "finished", 0),
        ("crashed: RuntimeError", "failed", 1),
        ("crashed: SystemExit", "failed", 1),
        ("killed: KeyboardInterrupt", "killed", 130),
        ("killed: SIGTERM", "killed", 143),
        ("killed", "killed", 137),
    ],
)
def test_run_end_says_the_outcome_and_exit_code_of_each_status(status, outcome, exit_code):
    end = RunEnd(status, 1.5)
    assert (end.outcome, end.exit_code, end.ended) == (outcome, exit_code, 1.5)


def test_a_tracker_used_on_its_own_ends_finished():
    assert MemoryTracker().run_end == RunEnd("finished", None)


class EndSeen(MemoryTracker):
    """Keeps what ``run_end`` says when ``finish()`` runs, in the worker."""

    def finish(self) -> None:
        self.seen_end = self.run_end
        super().finish()


def _ended_with(tmp_path: Path, error: type[BaseException] | None) -> tuple[EndSeen, dict]:
    tracker = EndSeen()
    run = tracking_core.init("ends", log_with=[tracker], logging_dir=tmp_path)
    try:
        with run:
            run.log({"loss": 1.0}, step=0)
            if error is not None:
                raise error()
    except BaseException as caught:
        assert error is not None and isinstance(caught, error)
    manifest = json.loads((Path(run.run_dir) / "run.json").read_text())
    return tracker, manifest


@pytest.mark.parametrize(
    ("error", "status"),
    [(None, "finished"), (RuntimeError, "crashed: RuntimeError"), (KeyboardInterrupt, "killed: KeyboardInterrupt")],
)
def test_the_tracker_gets_the_status_and_end_time_run_json_keeps(tmp_path, error, status):
    tracker, manifest = _ended_with(tmp_path, error)
    assert manifest["status"] == status
    assert tracker.seen_end == RunEnd(status, manifest["ended"])
    assert tracker.run_context is not None
    assert tracker.run_context.started == manifest["started"] <= manifest["ended"]


UNCAUGHT = """
import os, signal, sys, time
import tracking_core

run = tracking_core.init("uncaught", log_with="jsonl", logging_dir="runs", delivery=sys.argv[1])
for step in range(100_000):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    if step == 5:
        run.flush(60)
        print("ready", flush=True)
    time.sleep(0.01)
"""


@pytest.mark.parametrize("delivery", ["thread", "process"])
def test_ctrl_c_ends_the_run_killed_in_run_json_runs_and_show(tmp_path, delivery):
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(UNCAUGHT), delivery],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGINT, errors  # Python's own end after an uncaught KeyboardInterrupt
    (run_dir,) = (tmp_path / "runs" / "uncaught").iterdir()
    assert json.loads((run_dir / "run.json").read_text())["status"] == "killed: KeyboardInterrupt"
    listed = subprocess.run(
        [sys.executable, "-m", "tracking_core", "runs"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert "killed: KeyboardInterrupt" in listed.stdout, listed.stdout + listed.stderr
    header = show(run_dir).splitlines()[1]
    assert header.endswith("killed: KeyboardInterrupt"), header


def test_show_says_a_run_still_running_is_not_finished(tmp_path):
    run = tracking_core.init("open", log_with="jsonl", logging_dir=tmp_path)
    run.log({"loss": 1.0}, step=0)
    run.flush()
    try:
        assert show(run.run_dir).splitlines()[1].endswith("running, not finished")
    finally:
        run.finish()
    assert show(run.run_dir).splitlines()[1].endswith("finished")


def test_show_of_a_journal_without_run_json_says_what_the_journal_says(tmp_path):
    run = tracking_core.init("alone", log_with="jsonl", logging_dir=tmp_path)
    run.log({"loss": 1.0}, step=0)
    run.finish()
    (Path(run.run_dir) / "run.json").unlink()
    assert show(run.run_dir).splitlines()[1].endswith("   finished")


def test_a_copy_made_by_replay_new_run_starts_each_backend_when_the_original_began(tmp_path, memory):
    """``tracking replay --new-run``: the backends' run starts at the original's start (``run_context.started``),
    so a copy's duration is the original's, not the seconds the copy took."""
    from tracking_core.cli.replay import replay

    original = tracking_core.init("copied", log_with=["jsonl"], logging_dir=tmp_path / "runs")
    original.log({"loss": 1.0}, step=0)
    original.finish()
    began = json.loads((original.run_dir / "run.json").read_text())["started"]
    replay(original.run_dir / "journal.jsonl", ["memory"], new_run=True, progress=False)
    copy = MemoryTracker.runs[-1]
    assert copy.run_context is not None and copy.run_context.started == began
