"""No thread outlives a test that pickles ``TrackingLogger``, unpickles it or never starts it.

Lightning's test suite fails a test that leaves a thread running, unless the thread is a daemon with a
``stop()`` that ends it (what TensorBoard's event writer thread has). Its logger test pickles a running
logger inside a ``Trainer``, logs from the unpickled copy and ends without finishing the run; the same
conditions are built here with a ``TrackingLogger`` built as that test builds it (no arguments), then
the same rule is applied to the threads that appeared during the test.
"""

from __future__ import annotations

import pickle
import threading

import pytest
from tracking_lightning import TrackingLogger

pl = pytest.importorskip("lightning.pytorch")


def _left_running(before: set[threading.Thread]) -> list[threading.Thread]:
    """The threads started since ``before`` that are still running, once every one of them that is a daemon
    with a ``stop()`` was stopped (a stoppable thread must be over when ``stop()`` returns)."""
    left = []
    for thread in [thread for thread in threading.enumerate() if thread not in before]:
        stop = getattr(thread, "stop", None)
        if thread.daemon and callable(stop):
            stop()
            assert not thread.is_alive(), f"{thread} is still running after its stop()"
        else:
            left.append(thread)
    return left


@pytest.fixture
def threads_before(tmp_path, monkeypatch) -> set[threading.Thread]:
    monkeypatch.chdir(tmp_path)  # TrackingLogger() writes under ./runs
    return set(threading.enumerate())


def _trainer(logger: TrackingLogger):
    return pl.Trainer(max_epochs=1, logger=logger, enable_progress_bar=False, enable_model_summary=False)


def test_a_pickled_running_logger_and_its_unpickled_copy_leave_no_thread(threads_before):
    logger = TrackingLogger()
    logger.experiment  # noqa: B018  # the run starts: its workers, sampler and context capture
    logger.log_metrics({"a": 1})
    logger.save()
    pickle.dumps(logger)
    copy = pickle.loads(pickle.dumps(_trainer(logger))).logger
    copy.log_metrics({"acc": 1.0})
    assert copy.experiment is logger.experiment  # one open run in this process
    assert copy.name == logger.name and copy.save_dir == logger.save_dir

    assert _left_running(threads_before) == []
    # stop() finished the run: everything logged, by the logger and by its copy, was delivered
    (tracker,) = logger.trackers
    history = tracker.read_back_history()
    assert history["a"] == [(0, 1)] and history["acc"] == [(1, 1.0)]


def test_a_logger_whose_threads_were_stopped_reopens_its_run(threads_before):
    logger = TrackingLogger()
    logger.log_metrics({"loss": 1.0}, step=0)
    run_id = logger.version
    assert _left_running(threads_before) == []
    logger.log_metrics({"loss": 0.5}, step=1)  # the next use reopens the same run
    assert logger.version == run_id
    logger.finalize("success")
    assert logger.report is not None and logger.report.ok, str(logger.report)
    (tracker,) = logger.trackers
    assert tracker.read_back_history()["loss"] == [(0, 1.0), (1, 0.5)]
    assert _left_running(threads_before) == []


def test_a_never_started_logger_starts_no_thread_when_pickled_with_its_trainer(threads_before):
    logger = TrackingLogger()
    pickle.dumps(logger)
    copy = pickle.loads(pickle.dumps(_trainer(logger))).logger
    assert (copy.name, copy.save_dir) == (logger.name, logger.save_dir)
    new = [thread for thread in threading.enumerate() if thread not in threads_before]
    assert new == [] and logger.trackers == [] and copy.trackers == []
