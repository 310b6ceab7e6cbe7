"""Every run writes its journal, whatever ``log_with`` says: a run logged to the cell's backend alone can be
shown, exported and compared from its folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tracking_core

CELL = os.environ.get("TRACKING_BACKEND") or "jsonl"


def _tracking(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracking_core", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_a_run_logged_to_the_cell_backend_alone_is_shown_exported_and_compared(tmp_path):
    runs = []
    for scale in (1.0, 2.0):
        run = tracking_core.init("alone", log_with=[CELL], logging_dir=tmp_path / "runs", config={"scale": scale})
        for step in range(5):
            run.log({"loss": scale / (step + 1)}, step=step)
        report = run.finish(timeout=120)
        assert report.ok and list(report.backends) == [CELL], str(report)
        runs.append(str(run.run_dir))
    shown = _tracking("show", runs[0], cwd=tmp_path)
    assert shown.returncode == 0 and "loss" in shown.stdout, shown.stderr
    out = tmp_path / "out.json"
    exported = _tracking("export", runs[0], "--format", "json", "-o", str(out), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert [row["step"] for row in json.loads(out.read_text())["rows"]] == [0, 1, 2, 3, 4]
    compared = _tracking("compare", *runs, "--json", cwd=tmp_path)
    assert compared.returncode == 0 and "loss" in compared.stdout, compared.stderr


KILLED = """
import sys, time, tracking_core
backends = sys.argv[1].split(",")
run = tracking_core.init("killed", log_with=backends, logging_dir="runs")
print("run_dir", run.run_dir, flush=True)
for name in backends:
    run.get_tracker(name, unwrap=True)  # every backend is up: the kill lands mid-delivery, not mid-start-up
for step in range(1_000_000):
    run.log({"train/loss": 1.0 / (step + 1)}, step=step)
    print(step, flush=True)
    time.sleep(0.002)
"""

READ = """
import json, sys, tracking_core
backends = sys.argv[1].split(",")
run = tracking_core.init("killed", log_with=backends, logging_dir="runs", resume=True)
report = run.finish()
out = {name: {"delivered": report.backends[name].delivered,
              "points": [s for s, _ in run.get_tracker(name).read_back_history().get("train/loss", [])]}
       for name in backends}
print(json.dumps(out), flush=True)
"""


def test_a_sigkilled_run_logged_without_jsonl_is_completed_by_replay(tmp_path):
    """The training process logs to the cell's backend alone and is SIGKILLed mid-run: its journal (written
    first, whatever ``log_with`` says) holds every point up to its last durable batch, and ``tracking replay``
    delivers to the backend exactly those it lacks. ``TRACKING_BACKEND=tensorboard,mlflow`` runs it with both."""
    if CELL == "jsonl":
        pytest.skip("the journal is the source replay reads: there is no backend to complete")
    from tracking_core.store.journal import journal_ends
    from tracking_core.testing.reliability import last_json_line, run_script, start_in_own_session, tally

    backends = CELL.split(",")
    process = start_in_own_session(KILLED, CELL, cwd=tmp_path)
    assert process.stdout is not None
    run_dir, last = None, -1
    while last < 300:
        line = process.stdout.readline()
        assert line, "the training process died"
        if line.startswith("run_dir "):
            run_dir = tmp_path / line.split(" ", 1)[1].strip()
        last = int(line) if line.strip().isdigit() else last  # SDKs print their own lines too
    time.sleep(0.6)  # the kill lands at a random point of the journal's flush cycle
    os.killpg(process.pid, signal.SIGKILL)  # the job and every process it started (an SDK's service too)
    last = max([last, *(int(word) for word in process.stdout.read().split() if word.isdigit())])
    process.wait(60)
    assert run_dir is not None
    _, tail = journal_ends(run_dir / "journal.jsonl")
    assert tail is not None and isinstance(tail.get("step"), int), tail
    durable = tail["step"]  # the journal's last whole record: what a SIGKILL cannot take back
    assert 300 <= durable <= last, (durable, last)

    replayed = _tracking("replay", str(run_dir), cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    out = last_json_line(run_script(READ, CELL, cwd=tmp_path).stdout)
    for name in backends:
        assert out[name]["delivered"] == 0, out[name]  # replay left nothing owed for the next run to catch up
        figures = tally("SIGKILL without jsonl, then replay", name, range(durable + 1), out[name]["points"])
        assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
        # the journal comes first: no backend got a point the journal had not written
        assert max(out[name]["points"]) <= durable, (name, max(out[name]["points"]), durable)


EXITS_EARLY = """
import os, sys, time, tracking_core
backends = sys.argv[1].split(",")
run = tracking_core.init("early", log_with=backends, logging_dir="runs")
print("run_dir", run.run_dir, flush=True)
for step in range(200):
    run.log({"train/loss": 1.0 / (step + 1)}, step=step)
time.sleep(1.0)  # the journal's batch is durable within a second; a slow SDK may still be starting
os._exit(0)
"""

READ_EARLY = READ.replace('"killed"', '"early"')


def test_a_process_gone_while_its_backends_start_is_completed_by_replay(tmp_path):
    """``os._exit`` 1 s after logging 200 steps, before a slow SDK (MLflow's import alone takes longer) is up:
    the journal holds all 200, and ``tracking replay`` of the run folder delivers 200 of 200, once each."""
    if CELL == "jsonl":
        pytest.skip("the journal is the source replay reads: there is no backend to complete")
    from tracking_core.testing.reliability import last_json_line, run_script, tally

    result = run_script(EXITS_EARLY, CELL, cwd=tmp_path)
    run_dir = tmp_path / next(
        line.split(" ", 1)[1].strip() for line in result.stdout.splitlines() if line.startswith("run_dir ")
    )
    replayed = _tracking("replay", str(run_dir), cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    out = last_json_line(run_script(READ_EARLY, CELL, cwd=tmp_path).stdout)
    for name in CELL.split(","):
        assert out[name]["delivered"] == 0, out[name]
        figures = tally("os._exit while starting, then replay", name, range(200), out[name]["points"])
        assert figures["lost"] == 0 and figures["duplicated"] == 0, figures


def test_a_journal_in_segments_drops_only_what_the_backend_holds(tmp_path):
    """``segment_mb``: the cell's backend gets every point, and no segment it lacked at its last reported cursor
    is gone (what is left of the journal is its tail, in order)."""
    if CELL == "jsonl":
        pytest.skip("with the journal alone nothing else holds its records: no segment is dropped")
    from tracking_core.store.journal import journal_segments, read_journal
    from tracking_core.store.manifest import RunManifest

    run = tracking_core.init(
        "segments", log_with=[CELL], logging_dir=tmp_path / "runs", init_kwargs={"jsonl": {"segment_mb": 0.002}}
    )
    for step in range(300):
        run.log({"train/loss": 1.0 / (step + 1)}, step=step)
        time.sleep(0.002)  # a few records a batch: a segment seals every ~30 steps
    report = run.finish(timeout=120)
    assert report.ok, str(report)
    held = [step for step, _ in run.get_tracker(CELL).read_back_history().get("train/loss", [])]
    assert held == list(range(300))
    cursor = RunManifest.load(run.run_dir).cursor(CELL)
    journal = run.run_dir / "journal.jsonl"
    assert all(int(segment.stem.split("-")[1]) > cursor for segment in journal_segments(journal)), cursor
    kept = [record["step"] for record in read_journal(journal) if record["type"] == "metrics"]
    assert kept == list(range(300 - len(kept), 300))
