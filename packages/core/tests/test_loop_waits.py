"""A backend slower than the loop makes ``log()`` wait for room: the report says how long, and one notice
says, early in the run, what lets the loop go on (a process of its own with threads; not waiting in the
delivery process)."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from tracking_core import Dispatcher, register_tracker_class
from tracking_core.delivery import pace
from tracking_core.testing import MemoryTracker
from tracking_core.testing.faults import STUCK_FILE, SwitchedJournal

from .helpers import SlowTracker


@pytest.fixture
def early_advice(monkeypatch):
    monkeypatch.setattr(pace, "ADVICE_AFTER_SECONDS", 0.1)
    monkeypatch.setattr(pace, "ADVICE_SHARE", 0.01)


def _advice(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "the training loop has waited" in r.getMessage()]


def test_waits_for_a_slow_backend_with_threads_are_reported_and_advised_once(
    memory, tmp_path, caplog, early_advice, monkeypatch
):
    register_tracker_class(SlowTracker)
    monkeypatch.setattr(SlowTracker, "delay", 0.003)
    run = Dispatcher(log_with=["memory", "slow"], logging_dir=tmp_path, queue_size=5)
    run.init_trackers("p")
    with caplog.at_level(logging.WARNING, logger="tracking"):
        started = time.monotonic()
        for step in range(150):
            run.log({"x": float(step)}, step=step)
        loop = time.monotonic() - started
        report = run.finish(timeout=30)
    slow, fast = report.backends["slow"], report.backends["memory"]
    assert 0.1 < slow.loop_waited_seconds <= loop, (slow.loop_waited_seconds, loop)
    assert fast.loop_waited_seconds < pace.REPORTED_FROM_SECONDS and not fast.notes  # its own queue filled for moments
    assert any("the training loop waited" in note and "'slow'" in note for note in slow.notes), slow.notes
    assert "the training loop waited" in str(report)
    (advice,) = _advice(caplog)  # once, however long the loop goes on waiting
    assert "'slow'" in advice and "delivery='process'" in advice
    assert [step for step, _ in MemoryTracker.runs[-1].metrics] == list(range(150))  # waiting lost nothing


def test_a_loop_that_never_waits_gets_no_note_and_no_advice(memory, tmp_path, caplog, early_advice):
    run = Dispatcher(log_with=["memory"], logging_dir=tmp_path)
    run.init_trackers("p")
    with caplog.at_level(logging.WARNING, logger="tracking"):
        for step in range(200):
            run.log({"x": float(step)}, step=step)
        report = run.finish(timeout=30)
    assert report.backends["memory"].loop_waited_seconds == 0.0
    assert not report.notes and "the training loop waited" not in str(report) and not _advice(caplog)


def test_waits_for_the_delivery_process_are_reported_once_for_the_run(tmp_path, caplog, early_advice):
    register_tracker_class(SwitchedJournal)
    run = Dispatcher(log_with=["switched"], logging_dir=tmp_path, delivery="process", queue_size=20)
    run.init_trackers("p")
    stuck = run.run_dir / STUCK_FILE
    stuck.touch()  # the backend's calls hang until the file goes: the queues fill and log() waits
    threading.Timer(1.5, stuck.unlink).start()
    with caplog.at_level(logging.WARNING, logger="tracking"):
        step, until = 0, time.monotonic() + 2.5  # past the stuck call: more than every queue and the socket hold
        while time.monotonic() < until:
            run.log({"x": float(step)}, step=step)
            step += 1
        report = run.finish(timeout=60)
    entry = report.backends["switched"]
    assert entry.ok, str(report)
    assert entry.loop_waited_seconds > 0.2, entry.loop_waited_seconds
    (note,) = report.notes
    assert "queue to the delivery process" in note and note in str(report)
    (advice,) = _advice(caplog)
    assert "queue to the delivery process" in advice and "on_full='spill'" in advice
