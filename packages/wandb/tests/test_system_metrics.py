"""W&B's own monitor as W&B defaults it, and the library's samples in its place, read back from the
run's ``.wandb`` file (its settings record and its stats records) and the run's own settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from tracking_core import RunContext
from tracking_core.testing.samples import (
    SAMPLES,
    USER_HISTORY,
    run_steps_and_samples,
    sample_time,
    stored_samples,
)
from tracking_wandb import WandBTracker
from tracking_wandb.reader import read_run


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for variable in ("WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE", "WANDB_MODE", "WANDB_PROJECT", "NETRC"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


def _tracker(tmp_path: Path, system_metrics: bool, **kwargs) -> WandBTracker:
    logging_dir = tmp_path / "logs"
    tracker = WandBTracker("sys", logging_dir=logging_dir, **kwargs)
    tracker.run_context = RunContext(
        "sys", "run-1", logging_dir / "sys" / "run-1", logging_dir, system_metrics=system_metrics
    )
    return tracker


def test_by_default_wbs_monitor_and_capture_are_as_wb_defaults_them(tmp_path):
    import wandb

    defaults = wandb.Settings()
    tracker = _tracker(tmp_path, system_metrics=False)
    tracker.start()
    try:
        settings = tracker.run.settings
        assert tracker.mode == "offline"
        for field in ("x_disable_stats", "x_disable_meta", "disable_git", "save_code"):
            assert getattr(settings, field) == getattr(defaults, field), field
        assert settings.x_disable_stats is False and settings.disable_git is False
        assert settings.console == "off"  # still not captured: the script's output is its own
    finally:
        tracker.finish()


def test_system_metrics_turn_wbs_monitor_off_and_nothing_else(tmp_path):
    tracker = _tracker(tmp_path, system_metrics=True)
    tracker.start()
    try:
        settings = tracker.run.settings
        assert settings.x_disable_stats is True
        assert settings.x_disable_meta is False and settings.disable_git is False
    finally:
        tracker.finish()


def test_the_users_choice_wins_over_system_metrics(tmp_path):
    tracker = _tracker(tmp_path, system_metrics=True, settings={"x_disable_stats": False})
    tracker.start()
    try:
        assert tracker.run.settings.x_disable_stats is False
    finally:
        tracker.finish()


def test_samples_are_wbs_system_metrics_off_the_history(tmp_path):
    tracker = _tracker(tmp_path, system_metrics=True)
    tracker.start()
    sampled = run_steps_and_samples(tracker)
    assert sampled.warned() == []
    history = tracker.read_back_history()
    assert history == {"loss": USER_HISTORY}  # nothing of the samples
    stored = read_run(tracker.run_dir)
    assert all(not key.startswith(("system", "cpu")) for _, row in stored.rows for key in row)
    assert stored.stats == [
        (sample_time(index), {name.removeprefix("system/"): value for name, value in sample.items()})
        for index, sample in enumerate(SAMPLES)
    ]
    assert tracker.read_back_system_metrics() == {name: stored_samples(name) for name in SAMPLES[0]}
