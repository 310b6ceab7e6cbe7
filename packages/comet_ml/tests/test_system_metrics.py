"""Comet's own monitor and capture as Comet defaults them, and the library's samples in their place.

Read back from the offline archive (``messages.json``, what ``comet upload`` sends) and from the
experiment's own settings, never from timing.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tracking_comet_ml import CometMLTracker
from tracking_comet_ml.reader import read_archive_history
from tracking_comet_ml.startup import CONDA_NOTE, MONITOR_FIELDS
from tracking_core import RunContext
from tracking_core.testing.samples import SAMPLES, USER_HISTORY, run_steps_and_samples, stored_samples


def _tracker(tmp_path: Path, system_metrics: bool, **kwargs) -> CometMLTracker:
    logging_dir = tmp_path / "logs"
    tracker = CometMLTracker("sys", logging_dir=logging_dir, **kwargs)
    tracker.run_context = RunContext(
        "sys", "run-1", logging_dir / "sys" / "run-1", logging_dir, system_metrics=system_metrics
    )
    return tracker


def test_by_default_comets_monitor_and_capture_are_as_comet_defaults_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tracker = _tracker(tmp_path, system_metrics=False)
    tracker.start()
    try:
        experiment = tracker.tracker
        assert experiment.log_env_details is True
        assert all(getattr(experiment, field) is True for field in MONITOR_FIELDS), MONITOR_FIELDS
        assert experiment.log_env_host is True
        assert experiment._log_code is True and experiment.log_git_metadata is True and experiment.log_git_patch
        assert experiment.auto_log_co2 is True  # Comet's default; it records only when codecarbon is installed
        assert not experiment.auto_output_logging  # still not captured: the script's output is its own
    finally:
        tracker.finish()
    assert CONDA_NOTE not in tracker.report_notes()


def test_system_metrics_turn_comets_monitor_off_and_nothing_else(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tracker = _tracker(tmp_path, system_metrics=True)
    tracker.start()
    try:
        experiment = tracker.tracker
        assert not any(getattr(experiment, field) for field in MONITOR_FIELDS), MONITOR_FIELDS
        assert experiment.log_env_details is True and experiment.log_env_host is True and experiment._log_code
    finally:
        tracker.finish()


def test_a_monitor_switch_the_user_chose_wins_over_system_metrics(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tracker = _tracker(tmp_path, system_metrics=True, log_env_cpu=True)
    tracker.start()
    try:
        assert tracker.tracker.log_env_cpu is True and tracker.tracker.log_env_disk is False
    finally:
        tracker.finish()


def test_in_a_conda_environment_the_details_that_run_conda_stay_off_with_a_note(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    prefix = tmp_path / "conda-env"
    (prefix / "conda-meta").mkdir(parents=True)
    (prefix / "conda-meta" / "history").write_text("")
    monkeypatch.setattr(sys, "prefix", str(prefix))
    tracker = _tracker(tmp_path, system_metrics=False)
    tracker.start()
    try:
        assert tracker.tracker.log_env_details is False
    finally:
        tracker.finish()
    assert CONDA_NOTE in tracker.report_notes()


def test_samples_are_comets_system_metrics_on_their_own_axis(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tracker = _tracker(tmp_path, system_metrics=True)
    tracker.start()  # Comet's start-up may warn of its own (no network here to find the host's address)
    sampled = run_steps_and_samples(tracker, finish=False)
    tracker.log({"note_free": 9.0})  # no step: Comet's current step is still the user's
    tracker.finish()
    assert sampled.warned(logger="comet_ml", file="comet") == []
    history = tracker.read_back_history()
    assert history["loss"] == USER_HISTORY
    assert history["note_free"] == [(4, 9.0)]
    assert not [name for name in history if name.startswith(("sys.", "system/"))]
    stored = read_archive_history(tracker.archive_path, system=True)  # the archive's own messages
    assert stored == {"sys." + name.removeprefix("system/"): stored_samples(name) for name in SAMPLES[0]}
    assert tracker.read_back_system_metrics() == {name: stored_samples(name) for name in SAMPLES[0]}


def test_comets_own_monitor_stays_out_of_the_users_history(tmp_path, monkeypatch):
    """Comet's monitor samples at once when the experiment starts, at the current step: those ``sys.*``
    points are Comet's system metrics, not a series the user logged."""
    monkeypatch.chdir(tmp_path)
    tracker = _tracker(tmp_path, system_metrics=False)
    tracker.start()
    tracker.log({"loss": 0.5}, step=0)
    tracker.finish()
    assert set(tracker.read_back_history()) <= {"loss", "process duration"}
    own = tracker.read_back_system_metrics()
    assert own and all(name.startswith("system/") for name in own), own
    assert set(read_archive_history(tracker.archive_path, system=True)) == {
        "sys." + name.removeprefix("system/") for name in own
    }
