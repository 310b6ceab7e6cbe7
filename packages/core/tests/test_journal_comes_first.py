"""The run's journal takes each record before any backend does: a backend never holds a record the journal
lacks, so resume and replay, which read the journal, can give every backend all it misses. A journal that
stalls holds the backends back for ``JOURNAL_FIRST_SECONDS`` at most."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from tracking_core import Dispatcher, register_tracker_class
from tracking_core.backends.jsonl import JsonlTracker
from tracking_core.delivery import run_journal
from tracking_core.store.journal import JOURNAL_NAME
from tracking_core.testing import MemoryTracker


def _journal_steps(run_dir: Path) -> set[int]:
    path = run_dir / JOURNAL_NAME
    if not path.exists():
        return set()
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {line["step"] for line in lines if "loss" in line.get("values", {})}


class JournalWatcher(MemoryTracker):
    """Notes each step it is given that the journal's file does not hold yet."""

    name = "journal-watcher"
    run_dir: Path | None = None
    ahead: list[int] = []

    def log(self, values, step=None, **kwargs):
        if (
            "loss" in values
            and JournalWatcher.run_dir is not None
            and step not in _journal_steps(JournalWatcher.run_dir)
        ):
            JournalWatcher.ahead.append(step)
        super().log(values, step, **kwargs)


class StallingJournal(JsonlTracker):
    """The run's journal on a disk whose first writes stall for ``seconds`` each."""

    stalls = 2
    seconds = 0.4

    def log_batch(self, entries):
        if StallingJournal.stalls > 0:
            StallingJournal.stalls -= 1
            time.sleep(StallingJournal.seconds)
        super().log_batch(entries)


def _log_in_bursts(run: Dispatcher, steps: int) -> None:
    for step in range(steps):
        run.log({"loss": float(step)}, step=step)
        if step % 50 == 49:
            time.sleep(0.05)


def _watched_run(tmp_path: Path, monkeypatch, stalls: int, seconds: float) -> Dispatcher:
    register_tracker_class(JournalWatcher)
    register_tracker_class(StallingJournal)
    monkeypatch.setattr(JournalWatcher, "ahead", [])
    monkeypatch.setattr(StallingJournal, "stalls", stalls)
    monkeypatch.setattr(StallingJournal, "seconds", seconds)
    run = Dispatcher(log_with=["journal-watcher", "jsonl"], logging_dir=tmp_path)
    run.init_trackers("p")
    monkeypatch.setattr(JournalWatcher, "run_dir", run.run_dir)
    return run


def test_no_backend_gets_a_record_before_the_journal_has_written_it(memory, tmp_path, monkeypatch):
    run = _watched_run(tmp_path, monkeypatch, stalls=3, seconds=0.3)
    _log_in_bursts(run, 300)
    report = run.finish()
    assert report.ok, str(report)
    assert [step for step, _ in MemoryTracker.runs[-1].metrics] == list(range(300))
    assert JournalWatcher.ahead == [], f"{len(JournalWatcher.ahead)} records reached the backend before the journal"


def test_a_journal_that_stalls_longer_lets_the_backends_go_on_and_says_so_once(memory, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(run_journal, "JOURNAL_FIRST_SECONDS", 0.2)
    run = _watched_run(tmp_path, monkeypatch, stalls=2, seconds=1.0)
    with caplog.at_level(logging.WARNING, logger="tracking"):
        _log_in_bursts(run, 300)
        report = run.finish()
    assert report.ok, str(report)
    assert [step for step, _ in MemoryTracker.runs[-1].metrics] == list(range(300))
    assert JournalWatcher.ahead, "the backend went on while the journal stalled"
    assert _journal_steps(run.run_dir) == set(range(300))
    stalled = [record for record in caplog.records if "has not written record" in record.getMessage()]
    assert len(stalled) == 1, [record.getMessage() for record in caplog.records]


def test_a_journal_that_caught_up_comes_first_again(memory, tmp_path, monkeypatch):
    """After a stall past the bound the backends went ahead of the journal; once it holds what they are
    given, they wait for it again."""
    monkeypatch.setattr(run_journal, "JOURNAL_FIRST_SECONDS", 0.2)
    run = _watched_run(tmp_path, monkeypatch, stalls=1, seconds=0.6)
    for step in range(100):
        run.log({"loss": float(step)}, step=step)
    run.flush()
    assert JournalWatcher.ahead, "the backend went on while the journal stalled"
    monkeypatch.setattr(JournalWatcher, "ahead", [])
    monkeypatch.setattr(StallingJournal, "stalls", 3)
    monkeypatch.setattr(StallingJournal, "seconds", 0.1)  # slow writes, within the bound
    for step in range(100, 300):
        run.log({"loss": float(step)}, step=step)
        if step % 50 == 49:
            time.sleep(0.05)
    report = run.finish()
    assert report.ok, str(report)
    assert [step for step, _ in MemoryTracker.runs[-1].metrics] == list(range(300))
    assert JournalWatcher.ahead == [], f"{len(JournalWatcher.ahead)} records reached the backend before the journal"


def test_delivering_in_the_caller_s_thread_the_journal_writes_each_record_first(memory, tmp_path, monkeypatch):
    """``blocking=True`` delivers in ``log()``'s own thread, backend after backend: the journal goes first,
    wherever ``log_with`` names it (here after the backend), for a call on the tracker itself too."""
    register_tracker_class(JournalWatcher)
    monkeypatch.setattr(JournalWatcher, "ahead", [])
    run = Dispatcher(log_with=["journal-watcher", "jsonl"], logging_dir=tmp_path, blocking=True)
    run.init_trackers("p")
    monkeypatch.setattr(JournalWatcher, "run_dir", run.run_dir)
    for step in range(50):
        run.log({"loss": float(step)}, step=step)
    run.get_tracker("journal-watcher").log({"loss": 50.0}, step=50)
    report = run.finish()
    assert report.ok, str(report)
    assert [step for step, _ in MemoryTracker.runs[-1].metrics] == list(range(51))
    assert JournalWatcher.ahead == [], f"{len(JournalWatcher.ahead)} records reached the backend before the journal"
