"""A backend that cannot take its records leaves them in the run's journal, which holds them already, and reads
them back from its cursor when it answers; only what the journal had not written yet is copied to its spill."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from tracking_core import Dispatcher, register_tracker_class
from tracking_core.backends.jsonl import JsonlTracker
from tracking_core.delivery.spill import numbered, spill_name
from tracking_core.store.journal import read_journal
from tracking_core.testing import MemoryTracker
from tracking_core.testing.reliability import tally, waiting_steps


class DownAtFirst(MemoryTracker):
    """Starts slowly (the journal is ahead by then), then refuses connections until ``up`` is set."""

    name = "down-at-first"
    up = threading.Event()

    def start(self) -> None:
        time.sleep(0.5)
        super().start()

    def log(self, values, step=None, **kwargs):
        if not DownAtFirst.up.is_set():
            raise ConnectionError("connection refused")
        super().log(values, step)


class SlowJournal(JsonlTracker):
    """The run's journal on a disk that stalls for its first writes (half a second each), then keeps up."""

    stalls = 2

    def log_batch(self, entries):
        if SlowJournal.stalls > 0:
            SlowJournal.stalls -= 1
            time.sleep(0.5)
        super().log_batch(entries)


def _steps(tracker: MemoryTracker) -> list[int]:
    return [step for step, values in tracker.metrics if "loss" in values]


def test_a_backend_down_while_the_journal_keeps_up_copies_nothing_and_gets_everything_back(memory, tmp_path):
    register_tracker_class(DownAtFirst)
    DownAtFirst.up.clear()
    run = Dispatcher(log_with=["down-at-first"], logging_dir=tmp_path, retry_backoff=(0.05, 0.2))
    run.init_trackers("p")
    for step in range(200):
        run.log({"loss": float(step)}, step=step)
    deadline = time.monotonic() + 30
    while run.state.all_workers[0].report.errors == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert waiting_steps(run.run_dir, "down-at-first") == list(range(200))  # in the journal, past its cursor
    DownAtFirst.up.set()
    report = run.finish()
    stored = _steps(MemoryTracker.runs[-1])
    figures = tally("backend down, the journal holds what it owes", "down-at-first", range(200), stored)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert stored == list(range(200))
    backend = report.backends["down-at-first"]
    assert backend.recovered == 200 and backend.spilled == 0 and report.ok, str(report)
    assert not (run.run_dir / spill_name("down-at-first")).exists()  # nothing was copied


def test_what_the_journal_had_not_written_is_spilled_and_read_back_in_order_with_it(memory, tmp_path, monkeypatch):
    register_tracker_class(DownAtFirst)
    register_tracker_class(SlowJournal)
    from tracking_core.delivery import spiller

    monkeypatch.setattr(DownAtFirst, "start", MemoryTracker.start)  # down at once: ahead of the slow journal
    monkeypatch.setattr(SlowJournal, "stalls", 2)
    monkeypatch.setattr(spiller, "JOURNAL_WAIT_SECONDS", 0.1)  # what waits longer for the journal is copied
    DownAtFirst.up.clear()
    run = Dispatcher(log_with=["down-at-first", "jsonl"], logging_dir=tmp_path, retry_backoff=(30.0, 30.0))
    run.init_trackers("p")
    for step in range(300):
        run.log({"loss": float(step)}, step=step)
        if step % 50 == 49:
            time.sleep(0.3)  # the journal catches up between bursts: later records are left in it
    run.flush()
    spill = run.run_dir / spill_name("down-at-first")
    copied = set(numbered(spill))
    assert copied and len(copied) < 300, len(copied)  # some were copied, the journal held the others
    DownAtFirst.up.set()
    report = run.finish()  # the last retry gets through: the journal and the spill, merged by seq
    stored = _steps(MemoryTracker.runs[-1])
    figures = tally("backend down ahead of a slow journal", "down-at-first", range(300), stored)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert stored == list(range(300)), "in order, each once"
    backend = report.backends["down-at-first"]
    assert backend.recovered == 300 and backend.spilled == 0 and report.ok, str(report)


def test_a_backend_still_down_at_the_end_is_owed_in_run_json_and_replay_delivers_from_its_cursor(memory, tmp_path):
    from tracking_core.cli.replay import replay
    from tracking_core.cli.runs import describe_run

    register_tracker_class(DownAtFirst)
    DownAtFirst.up.clear()
    run = Dispatcher(log_with=["memory", "down-at-first"], logging_dir=tmp_path, retry_backoff=(30.0, 30.0))
    run.init_trackers("p")
    for step in range(100):
        run.log({"loss": float(step)}, step=step)
    report = run.finish(timeout=5)
    assert report.backends["down-at-first"].spilled == 100 and report.backends["memory"].ok
    assert f"tracking replay {run.run_dir} --to down-at-first" in str(report)
    assert describe_run(run.run_dir).backends["down-at-first"].endswith(", 100 owed")
    DownAtFirst.up.set()
    replayed = replay(run.run_dir, "down-at-first", progress=False)
    assert replayed.ok, str(replayed)
    assert _steps(MemoryTracker.runs[-1]) == list(range(100))
    assert "owed" not in describe_run(run.run_dir).backends["down-at-first"]
    assert replay(run.run_dir, "down-at-first", progress=False).backends["down-at-first"].delivered == 0


def test_a_line_s_own_seq_is_read_past_a_value_named_seq(tmp_path):
    run = Dispatcher(log_with=["jsonl"], logging_dir=tmp_path)
    run.init_trackers("p")
    for step in range(3):
        run.log({"seq": 1000 + step, "loss": 1.0}, step=step)  # a metric named "seq"
    run.finish()
    journal = Path(run.run_dir) / "journal.jsonl"
    own = [entry["seq"] for entry in read_journal(journal) if "seq" in entry]
    assert numbered(journal) == own == [0, 1, 2]


def test_in_the_delivery_process_a_backend_down_leaves_its_records_in_the_journal_too(tmp_path):
    import json

    from tracking_core.testing.faults import DOWN_FILE, SwitchedPoints

    register_tracker_class(SwitchedPoints)
    run = Dispatcher(log_with=["switched-points"], logging_dir=tmp_path, delivery="process", retry_backoff=(0.05, 0.2))
    run.init_trackers("p")
    (run.run_dir / DOWN_FILE).touch()
    for step in range(200):
        run.log({"loss": float(step)}, step=step)
        time.sleep(0.001)
    run.flush()
    assert waiting_steps(run.run_dir, "switched-points") == list(range(200))
    (run.run_dir / DOWN_FILE).unlink()
    report = run.finish()
    points = [json.loads(line) for line in (run.run_dir / "points.jsonl").read_text().splitlines()]
    stored = [step for step, _ in points]
    figures = tally("backend down in the delivery process", "switched-points", range(200), stored)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert stored == list(range(200))
    backend = report.backends["switched-points"]
    assert backend.recovered == 200 and report.ok, str(report)
    copied = numbered(run.run_dir / spill_name("switched-points")) if backend.spill_path else []
    assert len(copied) < 20, copied  # only what reached it before the journal: the journal held the rest
