"""``Dispatcher.log_config``: configuration added after ``init_trackers`` reaches every backend."""

from __future__ import annotations

import warnings

import pytest
from tracking_core import Dispatcher, TrackingWarning
from tracking_core.store.journal import JournalSummary
from tracking_core.testing import MemoryTracker

from .helpers import FailingTracker


def test_later_config_is_merged_sanitised_and_redacted(memory, tmp_path):
    run = Dispatcher(log_with=["memory", "jsonl"], logging_dir=tmp_path)
    run.init_trackers("p", config={"lr": 0.1, "batch": 8})
    run.log({"loss": 1.0})
    run.log_config({"lr": 0.05, "optimizer": {"name": "adam", "betas": (0.9, 0.99)}, "hub_token": "hf_secret"})
    run.finish()
    tracker = MemoryTracker.runs[-1]
    assert tracker.config == {
        "lr": 0.05,
        "batch": 8,
        "optimizer": {"name": "adam", "betas": [0.9, 0.99]},
        "hub_token": "<redacted>",
    }
    assert tracker.config_calls == 2
    summary = JournalSummary(run.run_dir)
    assert summary.config["lr"] == 0.05 and summary.config["batch"] == 8
    assert summary.config["hub_token"] == "<redacted>"


def test_config_after_start_without_init_config(memory, tmp_path):
    run = Dispatcher(log_with="memory", logging_dir=tmp_path)
    run.init_trackers("p")
    run.log_config({"epochs": 3})
    run.finish()
    assert MemoryTracker.runs[-1].config == {"epochs": 3}


def test_log_config_before_init_raises_and_after_finish_warns(memory, tmp_path):
    run = Dispatcher(log_with="memory", logging_dir=tmp_path)
    with pytest.raises(RuntimeError, match="init_trackers"):
        run.log_config({"a": 1})
    run.init_trackers("p")
    run.finish()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.log_config({"a": 1})
    assert any(issubclass(w.category, TrackingWarning) and "after finish" in str(w.message) for w in caught)


def test_a_spill_starts_with_the_whole_config(tmp_path, monkeypatch):
    from tracking_core import register_tracker_class
    from tracking_core.delivery.run_journal import RunJournal
    from tracking_core.store.journal import read_journal

    # a backend whose run's journal is written in another process copies what it owes to its spill
    monkeypatch.setattr(RunJournal, "attached", property(lambda self: False))
    register_tracker_class(FailingTracker)
    run = Dispatcher(log_with="failing", logging_dir=tmp_path, retry_backoff=(60.0, 60.0))
    run.init_trackers("p", config={"a": 1})
    run.log_config({"b": 2})
    run.log({"loss": 1.0})
    report = run.finish()
    spill = report.backends["failing"].spill_path
    configs = [entry["values"] for entry in read_journal(spill) if entry["type"] == "config"]
    merged: dict = {}
    for values in configs:
        merged.update(values)
    assert merged == {"a": 1, "b": 2}
