"""SwanLab's own monitor and probes as SwanLab defaults them, and the run's system samples in the monitor's place.

What the run uses is read from the settings SwanLab started it with (0.8+: the run's own settings; 0.5.8 to
0.7.x: the process's settings, which ``swanlab.init`` merges the given ones into); what was stored is read
back with SwanLab's own record reader (:mod:`tracking_swanlab.reader`) on every line this cell has.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import tracking_core
from tracking_core import RunContext
from tracking_core.notices import reset_warnings
from tracking_core.testing.samples import SAMPLES, T0, USER_HISTORY, run_steps_and_samples, stored_samples
from tracking_swanlab import SwanLabTracker
from tracking_swanlab.older import v0_6_2
from tracking_swanlab.reader import SYSTEM_KEY_PREFIX, SwanLabRunData, read_run, system_apart

from .conftest import isolate

EARLIER = v0_6_2.in_use()  # SwanLab 0.5.8 to 0.7.x: flat settings


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate(monkeypatch, tmp_path, cwd=tmp_path / "work")
    reset_warnings()
    return tmp_path


def _tracker(tmp_path: Path, system_metrics: bool, **kwargs: Any) -> SwanLabTracker:
    logging_dir = tmp_path / "logs"
    tracker = SwanLabTracker("sys", logging_dir=logging_dir, **kwargs)
    tracker.run_context = RunContext(
        "sys", "run-1", logging_dir / "sys" / "run-1", logging_dir, system_metrics=system_metrics
    )
    return tracker


#: SwanLab's own probes by this line's names: monitor, hardware snapshot, runtime/git snapshot, terminal
#: output, then the two that run a package manager.
SETTINGS = (
    (
        "hardware_monitor",
        "collect_hardware",
        "collect_runtime",
        "log_proxy_type",
        "requirements_collect",
        "conda_collect",
    )
    if EARLIER
    else ("probe.monitor", "probe.hardware", "probe.git", "terminal.proxy_type", "probe.requirements", "probe.conda")
)
MONITOR, *OWN_CAPTURE = SETTINGS[:4]
PACKAGE_MANAGERS = SETTINGS[4:]


def _value(settings: Any, path: str) -> Any:
    for part in path.split("."):
        settings = getattr(settings, part, None)
    return settings


def used_settings(tracker: SwanLabTracker) -> Any:
    """The settings the started run uses (read while it runs)."""
    if EARLIER:
        from swanlab.swanlab_settings import get_settings

        return get_settings()
    return tracker.run._ctx.config.settings


def default_settings() -> Any:
    import swanlab

    return swanlab.Settings()


def test_by_default_swanlabs_monitor_and_snapshots_are_as_swanlab_defaults_them(tmp_path: Path) -> None:
    """As with Accelerate's ``swanlab.init(project=...)``; only the probes that run pip/uv/pixi or conda stay off."""
    defaults = default_settings()
    tracker = _tracker(tmp_path, system_metrics=False)
    tracker.start()
    try:
        used = used_settings(tracker)
        for path in (MONITOR, *OWN_CAPTURE):
            if _value(defaults, path) is not None:  # log_proxy_type: 0.5.9 on
                assert _value(used, path) == _value(defaults, path), path
        assert _value(used, MONITOR) is True
        assert [_value(used, path) for path in PACKAGE_MANAGERS] == [False, False]
        tracker.log({"loss": 0.5}, step=0)
    finally:
        tracker.finish()
    assert tracker.read_back_history() == {"loss": [(0, 0.5)]}
    assert tracker.read_back_system_metrics() == {}  # SwanLab's first monitor sample comes later than this run's end


def test_system_metrics_turn_swanlabs_monitor_off_and_nothing_else(tmp_path: Path) -> None:
    defaults = default_settings()
    tracker = _tracker(tmp_path, system_metrics=True)
    tracker.start()
    try:
        used = used_settings(tracker)
        assert _value(used, MONITOR) is False
        for path in OWN_CAPTURE:
            assert _value(used, path) == _value(defaults, path), path
        assert [_value(used, path) for path in PACKAGE_MANAGERS] == [False, False]
    finally:
        tracker.finish()


def test_the_users_choice_wins_over_system_metrics_and_the_kept_off_probes(tmp_path: Path) -> None:
    import swanlab

    if EARLIER:
        chosen = swanlab.Settings(hardware_monitor=True, conda_collect=True)
    else:
        chosen = {"probe": {"monitor": True, "conda": True}}
    tracker = _tracker(tmp_path, system_metrics=True, settings=chosen)
    tracker.start()
    try:
        used = used_settings(tracker)
        assert (_value(used, MONITOR), _value(used, PACKAGE_MANAGERS[1])) == (True, True)
        assert _value(used, PACKAGE_MANAGERS[0]) is False  # not chosen: still off
    finally:
        tracker.finish()


def test_samples_are_system_scalars_each_on_its_own_steps(tmp_path: Path, capfd) -> None:
    """Index 0 while the user is at step 0, later samples behind the user's steps: nothing dropped or warned."""
    tracker = _tracker(tmp_path, system_metrics=True)
    tracker.start()
    capfd.readouterr()
    sampled = run_steps_and_samples(tracker, finish=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tracker.log({"loss": 1.0 / 6}, step=5)  # the user's step after the samples is kept too
        tracker.finish()
    output = capfd.readouterr()
    # SwanLab 0.7.x leaves its run's config.yaml open (a ResourceWarning, which Python shows only when asked)
    assert [str(w.message) for w in sampled.caught + caught if not issubclass(w.category, ResourceWarning)] == []
    assert [r.getMessage() for r in sampled.records] == []
    said = (output.out + output.err).lower()
    assert "warn" not in said and "error" not in said, said  # SwanLab prints its own warnings
    loss = [*USER_HISTORY, (5, 1.0 / 6)]
    assert tracker.read_back_history() == {"loss": loss}
    expected = {name: stored_samples(name) for name in SAMPLES[0]}
    assert tracker.read_back_system_metrics() == expected
    stored = read_run(tracker.run_dir)  # SwanLab's reader: the samples are scalars of their own keys
    assert stored.scalar_history == {"loss": loss, **expected}
    assert stored.system_history == {}  # SwanLab's own monitor was off


def test_samples_after_finish_or_in_disabled_mode_store_nothing(tmp_path: Path, monkeypatch) -> None:
    tracker = _tracker(tmp_path, system_metrics=True)
    tracker.start()
    tracker.log_system_metrics(SAMPLES[0], 0, T0)
    tracker.finish()
    tracker.log_system_metrics(SAMPLES[1], 1, T0 + 10)  # the dispatcher never does; no error either
    assert tracker.read_back_system_metrics()["system/cpu.percent"] == [(0, 12.5)]
    monkeypatch.setenv("SWANLAB_MODE", "disabled")
    disabled = _tracker(tmp_path / "off", system_metrics=True)
    disabled.start()
    disabled.log_system_metrics(SAMPLES[0], 0, T0)
    disabled.finish()
    assert disabled.mode == "disabled" and not (tmp_path / "off" / "logs" / "swanlog").exists()


def test_swanlabs_own_system_series_are_kept_apart_from_the_users() -> None:
    data = SwanLabRunData(Path("."))
    data.scalar_history = {"loss": [(0, 1.0)], f"{SYSTEM_KEY_PREFIX}cpu.pct": [(1, 3.0)], "system/cpu": [(0, 2.0)]}
    system_apart(data)
    assert data.scalar_history == {"loss": [(0, 1.0)], "system/cpu": [(0, 2.0)]}  # the user's own system/...
    assert data.system_history == {f"{SYSTEM_KEY_PREFIX}cpu.pct": [(1, 3.0)]}


def test_run_context_is_the_runs_config_under_run_context(tmp_path: Path) -> None:
    context = {"git": {"commit": "abc123", "remote_url": "https://example.com/org/proj.git", "dirty": True}}
    tracker = _tracker(tmp_path, system_metrics=False)
    tracker.start()
    tracker.store_init_configuration({"lr": 0.1})
    tracker.log_run_context(context)
    tracker.finish()
    config = read_run(tracker.run_dir).config
    assert config["lr"] == 0.1
    assert config["run_context"]["git"] == context["git"]


def test_init_with_system_metrics_delivers_samples_as_system_scalars(tmp_path: Path) -> None:
    run = tracking_core.init("sampled", log_with=["swanlab"], logging_dir=tmp_path / "logs", system_metrics=True)
    for step in range(3):
        run.log({"loss": float(step)}, step=step)
    report = run.finish(timeout=120)
    assert report.ok, str(report)
    tracker = run.get_tracker("swanlab")
    assert tracker.run_context.system_metrics is True
    assert report.backends["swanlab"].samples >= 1, str(report)  # the run's last sample, at least
    assert tracker.read_back_metrics() == {"loss": {0: 0.0, 1: 1.0, 2: 2.0}}
    system = tracker.read_back_system_metrics()
    assert system["system/cpu.percent"][0][0] == 0, system  # on the samples' own axis, from index 0
    assert not [key for key in system if key.startswith(SYSTEM_KEY_PREFIX)]  # SwanLab's own monitor was off


def _monitor_sample(run: Any, step: int, value: float) -> None:
    """One sample written the way SwanLab 0.8+'s own monitor writes it (its column, then its scalar record)."""
    from google.protobuf.timestamp_pb2 import Timestamp
    from swanlab.sdk.internal.probe_python.monitor import builder
    from swanlab.sdk.internal.probe_python.typings import SystemScalar

    scalar = SystemScalar(key="cpu.pct", name="CPU", chart_name="CPU Utilization (%)")
    stamp = Timestamp()
    stamp.GetCurrentTime()
    run._core.upsert_columns([builder.build_probe_column(scalar, chart_index="cpu00000")])
    run._core.upsert_scalars([builder.build_probe_scalar("cpu.pct", value=value, step=step, timestamp=stamp)])


@pytest.mark.skipif(EARLIER, reason="SwanLab 0.8+'s monitor records (test_earlier.py covers the earlier line)")
def test_swanlabs_own_monitor_series_stay_out_of_the_history_and_the_import(tmp_path: Path) -> None:
    from tracking_swanlab.importer import read_runs

    tracker = _tracker(tmp_path, system_metrics=False)
    tracker.start()
    tracker.log({"loss": 0.5}, step=0)
    _monitor_sample(tracker.run, 1, 7.0)
    tracker.finish()
    own = f"{SYSTEM_KEY_PREFIX}cpu.pct"
    assert read_run(tracker.run_dir).system_history == {own: [(1, 7.0)]}
    assert tracker.read_back_history() == {"loss": [(0, 0.5)]}
    assert tracker.read_back_system_metrics() == {own: [(1, 7.0)]}
    [imported] = list(read_runs(str(tracker.run_dir)))
    assert [(point.key, point.step) for point in imported.points] == [("loss", 0)]
    assert any("__swanlab__" in what for what in imported.not_carried), imported.not_carried
