"""A failing or hanging backend never takes the loop or the other backends down, and loses nothing."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from tracking_core import Dispatcher, TrackingError, register_tracker_class
from tracking_core.cli.replay import replay
from tracking_core.store.journal import read_journal
from tracking_core.testing import MemoryTracker
from tracking_core.testing.faults import DOWN_FILE, STUCK_FILE, SwitchedJournal
from tracking_core.testing.reliability import waiting_steps

from .helpers import FailingTracker, HangingTracker, logged_without_waiting


@pytest.fixture
def failing(memory):
    register_tracker_class(FailingTracker)


def test_failing_backend_is_quarantined_spilled_and_replayable(failing, tmp_path, caplog):
    run = Dispatcher(log_with=["memory", "failing"], logging_dir=tmp_path)
    with caplog.at_level(logging.WARNING, logger="tracking"):
        run.init_trackers("p", config={"lr": 0.1})
        for step in range(50):
            run.log({"loss": 1.0 / (step + 1)}, step=step)
            if step % 5 == 4:
                run.flush()  # separate deliveries, so the failures are consecutive calls
        report = run.finish()
    healthy, broken = report.backends["memory"], report.backends["failing"]
    assert healthy.ok and healthy.delivered == 51  # config + 50 metric records
    assert len(MemoryTracker.runs[-1].metrics) == 50
    assert broken.state == "quarantined" and not broken.ok and report.failed == ["failing"]
    assert broken.delivered == 0 and broken.spilled == 51
    # one traceback per error type, not one per record
    tracebacks = [r for r in caplog.records if "failed in" in r.getMessage()]
    assert len(tracebacks) == 1 and "ConnectionError: server said no" in tracebacks[0].getMessage()
    assert "quarantined" in str(report) and "tracking replay" in str(report)

    assert waiting_steps(run.run_dir, "failing") == list(range(50))  # in the run's journal, past its cursor

    replayed = replay(run.run_dir, "memory", logging_dir=tmp_path / "replayed", progress=False)
    assert replayed.ok
    target = MemoryTracker.runs[-1]
    assert target.config == {"lr": 0.1}
    assert [step for step, _ in target.metrics] == list(range(50))
    assert target.series("loss")[49] == pytest.approx(1 / 50)


def test_hanging_backend_is_abandoned_at_the_finish_timeout(memory, tmp_path):
    register_tracker_class(HangingTracker)
    run = Dispatcher(log_with=["memory", "hanging"], logging_dir=tmp_path)
    run.init_trackers("p")
    started = time.perf_counter()
    for step in range(20):
        run.log({"x": step}, step=step)
    loop_seconds = time.perf_counter() - started
    finish_started = time.perf_counter()
    report = run.finish(timeout=1.0)
    finish_seconds = time.perf_counter() - finish_started
    assert finish_seconds < 3.0, finish_seconds
    assert loop_seconds < 1.0  # the loop never waited on the stuck backend
    hanging = report.backends["hanging"]
    assert hanging.state == "timed_out" and hanging.spilled == 20 and not report.ok
    assert report.backends["memory"].ok
    steps = waiting_steps(run.run_dir, "hanging")
    assert steps == list(range(20))  # the in-flight batch waits too: nothing lost
    HangingTracker.release.set()


def test_on_error_raise_surfaces_at_the_next_call(failing, tmp_path):
    run = Dispatcher(log_with=["memory", "failing"], logging_dir=tmp_path, on_error="raise")
    run.init_trackers("p")
    run.log({"a": 1}, step=0)
    with pytest.raises(TrackingError, match=r"\[failing\] log failed: ConnectionError") as caught:
        run.flush()
    assert isinstance(caught.value.__cause__, ConnectionError)
    assert caught.value.backend == "failing"
    run.log({"a": 2}, step=1)
    with pytest.raises(TrackingError):
        run.finish()
    # finish still finished the healthy backend before raising
    assert MemoryTracker.runs[-1].finished == 1
    assert [s for s, _ in MemoryTracker.runs[-1].metrics] == [0, 1]


def test_start_failure_spills_everything(memory, tmp_path):
    class BrokenStart(MemoryTracker):
        name = "broken_start"

        def start(self):
            raise RuntimeError("no credentials")

    register_tracker_class(BrokenStart)
    run = Dispatcher(log_with="broken_start", logging_dir=tmp_path)
    run.init_trackers("p")
    run.log({"a": 1}, step=0)
    report = run.finish()
    backend = report.backends["broken_start"]
    assert backend.state == "start_failed" and backend.spilled == 1
    assert "no credentials" in backend.last_error


def test_failing_finish_is_reported(memory, tmp_path):
    class BadFinish(MemoryTracker):
        name = "bad_finish"

        def finish(self):
            raise OSError("disk full")

    register_tracker_class(BadFinish)
    run = Dispatcher(log_with="bad_finish", logging_dir=tmp_path)
    run.init_trackers("p")
    run.log({"a": 1}, step=0)
    report = run.finish()
    assert report.backends["bad_finish"].state == "finish_failed" and report.failed == ["bad_finish"]


def test_blocking_mode_isolates_failures_too(failing, tmp_path):
    run = Dispatcher(log_with=["memory", "failing"], logging_dir=tmp_path, blocking=True)
    run.init_trackers("p")
    for step in range(10):
        run.log({"a": step}, step=step)
    assert len(MemoryTracker.runs[-1].metrics) == 10  # synchronous: delivered before log() returned
    report = run.finish()
    assert report.backends["failing"].spilled == 10 and report.backends["memory"].ok


@pytest.mark.parametrize(
    "race",
    [
        ImportError("cannot import name 'Run' from partially initialized module 'sdk'"),
        # told that an installed module does not exist: seen in the delivery process as SwanLab's
        # "No module named 'rich._unicode_data.unicode17-0-0'" while other SDKs imported beside it
        ModuleNotFoundError("No module named 'json.decoder'", name="json.decoder"),
    ],
    ids=["partially-initialized", "installed-module-not-found"],
)
def test_start_up_that_lost_an_import_race_is_retried(memory, tmp_path, monkeypatch, race):
    from tracking_core.delivery import import_race

    monkeypatch.setattr(import_race, "IMPORT_RETRY_DELAY", 0.01)

    class Racy(MemoryTracker):
        name = "racy"
        attempts = 0

        def start(self):
            Racy.attempts += 1
            if Racy.attempts == 1:
                raise race
            super().start()

    class Broken(MemoryTracker):
        name = "broken_import"

        def start(self):
            raise ImportError("No module named 'sdk'")  # a real missing dependency is not retried

    register_tracker_class(Racy)
    register_tracker_class(Broken)
    run = Dispatcher(log_with=["racy", "broken_import"], logging_dir=tmp_path)
    run.init_trackers("p")
    run.log({"a": 1}, step=0)
    report = run.finish()
    assert Racy.attempts == 2 and report.backends["racy"].ok
    assert [values for run in MemoryTracker.runs if isinstance(run, Racy) for _, values in run.metrics] == [{"a": 1}]
    assert report.backends["broken_import"].state == "start_failed"


def test_an_unexpected_error_in_the_worker_neither_hangs_the_loop_nor_loses_records(memory, tmp_path, monkeypatch):
    # A defect in the delivery code itself (not the backend's): the worker thread must survive it, or the
    # bounded queue fills and log() waits forever for room.
    from tracking_core.delivery.engine import Delivery

    take = Delivery.take
    calls = []

    def take_with_a_bug(self, records):
        if self.name == "memory":  # the run's journal has a worker too
            calls.append(len(records))
            if len(calls) == 2:
                raise RuntimeError("a bug in the delivery code")
        return take(self, records)

    monkeypatch.setattr(Delivery, "take", take_with_a_bug)
    run = Dispatcher(log_with=["memory"], logging_dir=tmp_path, queue_size=20)
    run.init_trackers("p")
    done = threading.Event()

    def loop():
        for step in range(200):
            run.log({"x": float(step)}, step=step)
        done.set()

    threading.Thread(target=loop, daemon=True).start()
    assert done.wait(30), "log() hung: the worker thread died"
    report = run.finish(timeout=10)
    entry = report.backends["memory"]
    stored = [step for step, _ in MemoryTracker.runs[-1].metrics]
    assert stored == list(range(200)) and entry.spilled == 0, str(report)  # spilled, then recovered in order
    assert entry.errors == 1 and "a bug in the delivery code" in (entry.last_error or "")


def test_a_loop_waiting_on_a_stuck_backend_says_which_one(memory, tmp_path, monkeypatch, caplog):
    from tracking_core.delivery import worker

    register_tracker_class(HangingTracker)
    monkeypatch.setattr(HangingTracker, "release", threading.Event())
    monkeypatch.setattr(worker, "ROOM_WARNING_SECONDS", 0.2)
    run = Dispatcher(log_with=["memory", "hanging"], logging_dir=tmp_path, queue_size=5)
    run.init_trackers("p")
    with caplog.at_level(logging.WARNING, logger="tracking"):
        waiting = threading.Thread(target=lambda: [run.log({"x": float(step)}, step=step) for step in range(20)])
        waiting.start()
        deadline = time.monotonic() + 10
        while "waited" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.05)
        HangingTracker.release.set()
        waiting.join(10)
    assert "room in backend 'hanging'" in caplog.text and "stuck in a call into its SDK" in caplog.text
    assert run.finish(timeout=10).backends["memory"].ok


class BufferingSwitchedJournal(SwitchedJournal):
    """The switched journal, counted as holding records only once its ``flush`` returned (as W&B's are)."""

    name = "switched-buffering"
    durable_on_return = False


@pytest.mark.parametrize("buffering", [False, True], ids=["stores-on-return", "stores-at-flush"])
@pytest.mark.parametrize("outcome", ["returns", "fails", "never-returns"])
def test_a_backend_stuck_in_one_sdk_call_does_not_hold_up_the_loop(tmp_path, monkeypatch, outcome, buffering):
    """The backend's first call hangs (a dead connection) while the loop logs far more than its queue holds:
    log() spills the queue instead of waiting for the call. The call then stores its records, fails, or
    never returns (the finish timeout gives up on it); every record ends up stored or spilled, once."""
    from tracking_core.delivery import worker
    from tracking_core.testing.reliability import tally

    tracker_class = BufferingSwitchedJournal if buffering else SwitchedJournal
    register_tracker_class(tracker_class)
    monkeypatch.setattr(worker, "SPILL_OVER_SECONDS", 0.2)
    steps = 1000
    run = Dispatcher(log_with=[tracker_class.name], logging_dir=tmp_path, queue_size=50, retry_backoff=(0.05, 0.2))
    run.init_trackers("p")
    (run.run_dir / STUCK_FILE).touch()
    if outcome == "fails":
        (run.run_dir / DOWN_FILE).touch()
    assert logged_without_waiting(run, range(steps)), "log() waited for the stuck call"
    assert (run.run_dir / STUCK_FILE).exists()  # the loop ended while the call was still stuck
    if outcome != "never-returns":
        (run.run_dir / STUCK_FILE).unlink()
    if outcome == "fails":
        deadline = time.monotonic() + 30
        while run.state.workers[0].report.errors == 0 and time.monotonic() < deadline:  # the call failed
            time.sleep(0.01)
        (run.run_dir / DOWN_FILE).unlink()
    report = run.finish(timeout=30 if outcome != "never-returns" else 1)
    entry = report.backends[tracker_class.name]
    # read before the abandoned call may return: once let go, it stores what the spill holds too,
    # which its cursor accounts for (a replay skips it) but a count of the two files calls a duplicate
    stored = [r["step"] for r in read_journal(run.run_dir / "switched.jsonl") if r["type"] == "metrics"]
    spilled = (
        [r["step"] for r in read_journal(entry.spill_path) if r["type"] == "metrics"]
        if outcome == "never-returns"
        else []
    )
    (run.run_dir / STUCK_FILE).unlink(missing_ok=True)  # lets the abandoned call return
    figures = tally(
        f"backend stuck in one SDK call, which {outcome.replace('-', ' ')}",
        tracker_class.name,
        range(steps),
        stored,
        spilled,
    )
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert any("did not return" in note for note in entry.notes), str(report)
    if outcome == "never-returns":
        assert entry.state == "timed_out" and stored == [] and spilled == list(range(steps)), str(report)
    else:
        assert entry.ok and stored == list(range(steps)) and entry.recovered > 0, str(report)  # in order


def test_a_backend_stuck_in_its_start_up_does_not_hold_up_the_loop(tmp_path, monkeypatch, request):
    """``start()`` hangs (an SDK's login on a dead connection) while the loop logs 20x the queue: the
    records wait in the spill, and the backend gets them in order once it has started."""
    from tracking_core.delivery import worker
    from tracking_core.testing.faults import SwitchedJournal
    from tracking_core.testing.reliability import tally

    class SlowStart(SwitchedJournal):
        name = "slow-start"
        go = threading.Event()

        def start(self) -> None:
            self.go.wait(60)
            super().start()

    register_tracker_class(SlowStart)
    request.addfinalizer(SlowStart.go.set)
    monkeypatch.setattr(worker, "SPILL_OVER_SECONDS", 0.2)
    steps = 1000
    run = Dispatcher(log_with=["slow-start"], logging_dir=tmp_path, queue_size=50)
    run.init_trackers("p")
    assert logged_without_waiting(run, range(steps)), "log() waited for the stuck start-up"
    SlowStart.go.set()
    report = run.finish(timeout=30)
    entry = report.backends["slow-start"]
    stored = [r["step"] for r in read_journal(run.run_dir / "switched.jsonl") if r["type"] == "metrics"]
    figures = tally("backend stuck in its start-up", "slow-start", range(steps), stored)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert entry.ok and stored == list(range(steps)), str(report)
    assert any("did not return" in note for note in entry.notes), str(report)


class SlowSwitchedJournal(SwitchedJournal):
    """The switched journal at 1 ms a record: slower than the loop, never stuck."""

    name = "switched-slow"

    def log_batch(self, entries):
        time.sleep(0.001 * len(entries))
        super().log_batch(entries)


@pytest.mark.parametrize("backend", ["hung", "slow"])
def test_on_full_spill_never_makes_the_loop_wait(tmp_path, monkeypatch, backend):
    """``on_full="spill"``: a full queue goes to the backend's spill at once, whether the backend hangs in
    a call (here for longer than the loop, with the stuck-call delay out of reach) or is only slower than
    the loop; the backend then gets every record once, in order."""
    from tracking_core.delivery import engine as delivery
    from tracking_core.delivery import spill, worker
    from tracking_core.testing.reliability import tally

    readings = []  # each OwedReader reads what is owed from the backend's cursor

    class CountedReader(spill.OwedReader):
        def __init__(self, *args):
            super().__init__(*args)
            readings.append(args)

    monkeypatch.setattr(delivery, "OwedReader", CountedReader)
    tracker_class = SwitchedJournal if backend == "hung" else SlowSwitchedJournal
    register_tracker_class(tracker_class)
    monkeypatch.setattr(worker, "SPILL_OVER_SECONDS", 600.0)
    steps = 4000
    run = Dispatcher(log_with=[tracker_class.name], logging_dir=tmp_path, queue_size=50, on_full="spill")
    run.init_trackers("p")
    if backend == "hung":
        (run.run_dir / STUCK_FILE).touch()
    # the slow backend's loop "trains" between steps: it is still logging while the spill is delivered
    pause = 0.0003 if backend == "slow" else 0.0
    assert logged_without_waiting(run, range(steps), pause=pause), "log() waited for room"
    (run.run_dir / STUCK_FILE).unlink(missing_ok=True)
    report = run.finish(timeout=60)
    entry = report.backends[tracker_class.name]
    stored = [r["step"] for r in read_journal(run.run_dir / "switched.jsonl") if r["type"] == "metrics"]
    figures = tally(f"on_full='spill', backend {backend}", tracker_class.name, range(steps), stored)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert entry.ok and stored == list(range(steps)) and entry.recovered > 0, str(report)
    assert any("on_full='spill'" in note for note in entry.notes), str(report)
    # a queue spilled while the spill is being delivered joins its end: the reading goes on, not over
    assert len(readings) <= 2, len(readings)
