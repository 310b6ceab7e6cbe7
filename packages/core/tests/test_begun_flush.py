"""A backend whose flush waits for its SDK's writer (W&B's periodic write) can begin one and be asked later
(``begin_flush``): delivery goes on meanwhile, and what the flush covers counts as delivered only once the
backend says it is durable."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from tracking_core import Dispatcher, GeneralTracker, register_tracker_class


class SlowWriter(GeneralTracker):
    """Buffers points until a writer the test controls has written them (``write_now``)."""

    name = "slow-writer"
    requires_logging_directory = False
    durable_on_return = False
    instance: SlowWriter | None = None

    def __init__(self, run_name: str = "slow-writer", **kwargs) -> None:
        super().__init__()
        SlowWriter.instance = self
        self.buffered: list[int] = []
        self.durable: list[int] = []
        self.begun: list[list[int]] = []  # what each begun flush covers
        self.writing: list[int] = []  # handed to the writer, not written yet
        self.write_now = threading.Event()
        self.fail_write = False
        self.full_flushes = 0

    @property
    def tracker(self):
        return None

    def log(self, values, step=None, **kwargs):
        self.buffered.append(step)

    def flush(self) -> None:
        self.full_flushes += 1  # waits for the writer: everything handed to it so far is written
        self.durable += [*self.writing, *self.buffered]
        self.writing, self.buffered = [], []

    def begin_flush(self) -> Callable[[], bool]:
        covered, self.buffered = self.buffered, []
        self.begun.append(covered)
        self.writing += covered

        def done() -> bool:
            if self.fail_write:
                raise OSError("the writer failed")
            if self.write_now.is_set():
                self.durable += [step for step in covered if step in self.writing]
                self.writing = [step for step in self.writing if step not in covered]
                return True
            return False

        return done

    def finish(self) -> None:
        self.flush()


def _until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


@pytest.fixture
def run(tmp_path):
    register_tracker_class(SlowWriter)
    run = Dispatcher(log_with=["slow-writer"], logging_dir=tmp_path, flush_interval=0.05)
    run.init_trackers("p")
    yield run
    SlowWriter.instance.write_now.set()
    run.finish(timeout=10)


def test_delivery_goes_on_while_a_begun_flush_waits_and_counts_it_once_durable(run):
    tracker = SlowWriter.instance
    report = run.state.workers[0].report
    for step in range(10):
        run.log({"x": float(step)}, step=step)
    _until(lambda: tracker.begun and tracker.begun[0])
    first = list(tracker.begun[0])
    for step in range(10, 20):
        run.log({"x": float(step)}, step=step)
    _until(lambda: 19 in tracker.buffered)  # delivered to the SDK while the first flush is still open
    time.sleep(0.2)  # several flush intervals: no second flush begins while one is open
    assert len(tracker.begun) == 1 and tracker.full_flushes == 0
    assert report.delivered == 0 and tracker.durable == []  # nothing counted before the writer wrote
    tracker.write_now.set()
    _until(lambda: report.delivered >= len(first))
    assert tracker.durable[: len(first)] == first
    done = run.finish(timeout=10)
    entry = done.backends["slow-writer"]
    assert entry.ok and entry.delivered == 20 and entry.spilled == 0, str(done)
    assert sorted(tracker.durable) == list(range(20))


def test_an_explicit_flush_waits_for_the_writer(run):
    tracker = SlowWriter.instance
    for step in range(5):
        run.log({"x": float(step)}, step=step)
    run.flush()
    assert tracker.full_flushes >= 1 and set(range(5)) <= set(tracker.durable)


def test_a_begun_flush_that_fails_spills_what_it_covered_and_nothing_is_lost(run):
    tracker = SlowWriter.instance
    report = run.state.workers[0].report
    tracker.fail_write = True
    for step in range(10):
        run.log({"x": float(step)}, step=step)
    _until(lambda: report.spilled == 10)
    assert report.delivered == 0 and report.errors > 0, str(report)
    tracker.fail_write = False
    tracker.write_now.set()
    done = run.finish(timeout=10)
    entry = done.backends["slow-writer"]
    assert entry.delivered == 10 and entry.spilled == 0 and entry.recovered == 10, str(done)
