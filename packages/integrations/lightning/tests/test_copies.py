"""``TrackingLogger`` copies: pickle and ``copy.deepcopy`` before the start, while running and after the
end, as Lightning makes them (``ddp_spawn`` pickles the trainer, trainer state is deep-copied).

A copy logs into the run of the logger it was made from: in this process it shares the open run, in
another one it reopens the run by id. Every test reads the run back and counts the run folders.
"""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
import threading

import pytest
from tracking_lightning import TrackingLogger


def _pickled(logger: TrackingLogger) -> TrackingLogger:
    return pickle.loads(pickle.dumps(logger))


COPIES = {"pickle": _pickled, "deepcopy": copy.deepcopy}


def _runs(project_dir) -> list[str]:
    return sorted(path.parent.name for path in project_dir.glob("*/run.json"))


def _worker_threads() -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name.startswith("tracking-")]


@pytest.mark.parametrize("how", COPIES)
def test_copy_before_the_start_is_a_logger_of_its_own(tmp_path, read_back_of, how):
    logger = TrackingLogger(log_with="jsonl", project="copies", logging_dir=tmp_path, config={"seed": 1})
    twin = COPIES[how](logger)
    twin.log_metrics({"loss": 1.0}, step=0)
    twin.finalize("success")
    assert twin.report.ok and logger.version != twin.version  # the original starts its own run when used
    logger.finalize("success")
    (tracker,) = twin.trackers
    stored = read_back_of(tracker)
    assert stored.history["loss"] == [(0, 1.0)] and float(stored.config["seed"]) == 1
    assert _runs(tmp_path / "copies") == sorted([twin.version, logger.version])


@pytest.mark.parametrize("how", COPIES)
def test_copy_of_a_running_logger_logs_into_the_same_run(tmp_path, read_back_of, how):
    logger = TrackingLogger(log_with=["tensorboard", "jsonl"], project="copies", logging_dir=tmp_path)
    logger.experiment  # noqa: B018  # what Lightning touches first; the run holds SDK objects and threads
    logger.log_metrics({"loss": 1.0}, step=0)
    twin = COPIES[how](logger)
    assert twin.version == logger.version
    twin.log_metrics({"loss": 0.5}, step=1)
    assert twin.experiment is logger.experiment  # one open run in this process, not two writers
    logger.log_metrics({"loss": 0.25}, step=2)
    twin.finalize("success")
    assert twin.report.ok, str(twin.report)
    assert _worker_threads() == []
    for tracker in twin.trackers:
        assert tracker.read_back_history()["loss"] == [(0, 1.0), (1, 0.5), (2, 0.25)], tracker.name
    assert _runs(tmp_path / "copies") == [logger.version]
    logger.finalize("success")  # the run it held was finished by the copy: nothing more to do
    assert _runs(tmp_path / "copies") == [logger.version]


@pytest.mark.parametrize("how", COPIES)
def test_copy_of_a_finished_logger_reopens_the_run(tmp_path, read_back_of, how):
    logger = TrackingLogger(log_with="jsonl", project="copies", logging_dir=tmp_path)
    logger.log_metrics({"loss": 1.0}, step=0)
    logger.finalize("success")
    twin = COPIES[how](logger)
    assert twin.report is not None and twin.trackers == []  # the report travels, the SDK objects do not
    twin.log_metrics({"loss": 0.5}, step=1)
    twin.finalize("success")
    assert twin.version == logger.version and twin.report.ok
    (tracker,) = twin.trackers
    assert tracker.read_back_history()["loss"] == [(0, 1.0), (1, 0.5)]
    assert _runs(tmp_path / "copies") == [logger.version]


def test_a_spawned_process_logs_into_the_run_of_the_pickled_logger(tmp_path, read_back_of):
    """What ``ddp_spawn`` does: the running logger is pickled, a new interpreter unpickles it and logs."""
    logger = TrackingLogger(log_with=["mlflow", "jsonl"], project="spawn", logging_dir=tmp_path)
    logger.log_metrics({"loss": 1.0}, step=0)
    (tmp_path / "logger.pickle").write_bytes(pickle.dumps(logger))
    logger.close()  # the parent lets go while the child trains, as Lightning's launcher waits
    child = (
        "import pickle, sys\n"
        "logger = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "logger.log_metrics({'loss': 0.5}, step=1)\n"
        "logger.finalize('success')\n"
        "print(logger.version, logger.report.ok)\n"
    )
    output = subprocess.run(
        [sys.executable, "-c", child, str(tmp_path / "logger.pickle")],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.split()
    assert output == [logger.version, "True"]
    logger.log_metrics({"loss": 0.25}, step=2)  # the parent carries on in the same run afterwards
    logger.finalize("success")
    for tracker in logger.trackers:
        assert tracker.read_back_history()["loss"] == [(0, 1.0), (1, 0.5), (2, 0.25)], tracker.name
    assert _runs(tmp_path / "spawn") == [logger.version]


def test_close_and_the_runs_own_finish_join_the_worker_threads(tmp_path, read_back_of):
    logger = TrackingLogger(log_with="jsonl", project="threads", logging_dir=tmp_path)
    logger.log_metrics({"loss": 1.0}, step=0)
    assert "tracking-jsonl" in _worker_threads()  # with the run's system-metrics sampler and context capture
    logger.close()
    assert _worker_threads() == [] and logger.report.ok
    logger.log_metrics({"loss": 0.5}, step=1)  # the next use reopens the run
    logger.experiment.finish()  # whoever holds the run may end it
    assert _worker_threads() == []
    with logger:  # the next use reopens it again; leaving the block closes it
        logger.log_metrics({"loss": 0.25}, step=2)
    assert _worker_threads() == []
    (tracker,) = logger.trackers
    assert tracker.read_back_history()["loss"] == [(0, 1.0), (1, 0.5), (2, 0.25)]
    assert _runs(tmp_path / "threads") == [logger.version]
