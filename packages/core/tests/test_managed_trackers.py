"""A tracker the dispatcher manages, called directly as Accelerate users do: through its worker."""

from __future__ import annotations

import threading
import time

import pytest
from tracking_core import Dispatcher, register_tracker_class
from tracking_core.testing import MemoryTracker

from .helpers import FailingTracker


class SlowStart(MemoryTracker):
    """An SDK object that exists only once ``start()`` ran (after a while), like MLflow's active run."""

    name = "slowstart"

    def __init__(self, run_name: str = "slowstart", **kwargs) -> None:
        super().__init__(run_name, **kwargs)
        self.sdk_run = None

    def start(self) -> None:
        time.sleep(0.3)
        self.sdk_run = object()
        super().start()

    @property
    def run(self):
        self._wait_for_start()
        return self.sdk_run

    def log(self, values, step=None, **kwargs):
        assert self.sdk_run is not None, "log before start"
        super().log(values, step, **kwargs)


@pytest.fixture
def slow(memory):
    register_tracker_class(SlowStart)
    return SlowStart


@pytest.mark.parametrize("blocking", [False, True])
def test_direct_calls_go_through_the_worker_in_order(slow, tmp_path, blocking):
    run = Dispatcher(log_with=["slowstart"], logging_dir=tmp_path, blocking=blocking)
    run.init_trackers("p")
    tracker = run.get_tracker("slowstart")
    tracker.log({"direct": 1.0}, step=0)  # before start() finished: queued, not run on a missing SDK object
    run.log({"shared": 2.0}, step=1)
    tracker.log({"direct": 3.0}, step=2)
    tracker.store_init_configuration({"lr": 0.1})
    tracker.flush()
    assert tracker.metrics == [(0, {"direct": 1.0}), (1, {"shared": 2.0}), (2, {"direct": 3.0})]
    assert tracker.config == {"lr": 0.1}
    if not blocking:
        assert tracker.threads == {"tracking-slowstart"}
    run.finish()


def test_sdk_attributes_wait_for_start(slow, tmp_path):
    run = Dispatcher(log_with=["slowstart"], logging_dir=tmp_path)
    run.init_trackers("p")
    assert run.get_tracker("slowstart").run is not None  # waited for the worker's start()
    run.finish()


def test_a_tracker_used_on_its_own_is_synchronous(memory):
    tracker = MemoryTracker("alone")
    tracker.start()
    tracker.log({"a": 1.0}, step=4)
    assert tracker.metrics == [(4, {"a": 1.0})]
    assert tracker.threads == {threading.current_thread().name}


def test_a_direct_call_that_fails_stays_in_its_worker(memory, tmp_path):
    register_tracker_class(FailingTracker)
    run = Dispatcher(log_with=["failing", "memory"], logging_dir=tmp_path, retry_backoff=(60.0, 60.0))
    run.init_trackers("p")
    run.get_tracker("failing").log({"a": 1.0}, step=0)  # no exception here
    run.log({"b": 2.0}, step=1)
    report = run.finish()
    assert MemoryTracker.runs[-1].metrics == [(1, {"b": 2.0})]
    assert report.backends["failing"].spilled >= 1


def test_direct_media_histogram_and_a_wrong_call(memory, tmp_path):
    import numpy as np

    run = Dispatcher(log_with=["memory", "jsonl"], logging_dir=tmp_path)
    run.init_trackers("p")
    tracker = run.get_tracker("memory")
    tracker.log_images({"img": np.zeros((4, 4, 3), dtype=np.uint8)}, step=3)
    tracker.log_table("t", columns=["a"], data=[[1]], step=3)
    tracker.log_histogram("h", [1.0, 2.0], step=3)
    with pytest.raises(TypeError):
        tracker.log()  # missing `values`: the method's own error, at the call
    run.finish()
    memory_run = MemoryTracker.runs[-1]
    assert [step for step, _ in memory_run.images] == [3]
    assert memory_run.tables == [("t", ["a"], [[1]], 3)]
    assert ("h/count" in memory_run.metrics[-1][1]) and memory_run.metrics[-1][0] == 3
    from tracking_core.store.journal import read_journal

    # the journal holds the direct calls too, each naming the one backend it was for
    journaled = [(entry["type"], entry.get("for")) for entry in read_journal(run.run_dir) if entry.get("step") == 3]
    assert journaled == [("images", "memory"), ("table", "memory"), ("histogram", "memory")]


def test_finish_on_one_tracker_closes_it_and_the_run_goes_on(memory, tmp_path):
    run = Dispatcher(log_with=["memory", "jsonl"], logging_dir=tmp_path)
    run.init_trackers("p")
    tracker = run.get_tracker("memory")
    tracker.finish()
    assert tracker.finished == 1
    run.log({"a": 1.0}, step=0)
    with pytest.warns(Warning, match="after finish"):
        tracker.log({"late": 1.0})
    report = run.finish()
    assert tracker.finished == 1 and tracker.metrics == []
    assert report.backends["jsonl"].delivered == 1
