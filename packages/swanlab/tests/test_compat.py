"""SwanLab 0.8.0 to 0.9.0 differences (``tracking_swanlab.older.v0_8_0``): the ``sdk-path.swanlab-0.8.0`` cell runs these at 0.8.0.

The floor cell (0.6.2, the earlier SDK line) runs only the last one: its run starts off the main thread too.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest
from tracking_swanlab.older import v0_6_2, v0_8_0

from .conftest import isolate

only_sdk_line = pytest.mark.skipif(v0_6_2.in_use(), reason="tracking_swanlab.older.v0_8_0 is for SwanLab 0.8 and later")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(monkeypatch, tmp_path)


@only_sdk_line
def test_release_is_read_from_the_installed_distribution() -> None:
    found = v0_8_0.release()
    assert len(found) >= 3 and found >= (0, 8, 0), found


@only_sdk_line
def test_older_releases_get_signal_handlers_on_the_main_thread_only() -> None:
    from swanlab.sdk.internal import run as run_module

    shimmed = v0_8_0.main_thread_only_signals()
    assert shimmed == (v0_8_0.release() < v0_8_0.SIGNALS_ON_MAIN_THREAD_ONLY)
    if not shimmed:
        assert run_module.signal is signal  # a release that guards the call itself is left alone
        return
    shim = run_module.signal
    assert shim.SIGINT == signal.SIGINT and shim.getsignal is signal.getsignal
    before = signal.getsignal(signal.SIGINT)
    outcome: list[object] = []

    def off_the_main_thread() -> None:
        outcome.append(shim.signal(signal.SIGINT, signal.SIG_IGN))  # the real call raises ValueError here

    worker = threading.Thread(target=off_the_main_thread)
    worker.start()
    worker.join()
    assert outcome == [before] and signal.getsignal(signal.SIGINT) is before
    try:  # on the main thread it is the real call
        shim.signal(signal.SIGINT, signal.SIG_IGN)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
    assert v0_8_0.main_thread_only_signals() and run_module.signal is shim  # applied once


def test_a_run_started_and_finished_off_the_main_thread(tmp_path: Path) -> None:
    """What the backend's worker thread does: SwanLab < 0.9.1 raised ValueError in ``swanlab.init``."""
    from tracking_core.testing.resume import finished_run
    from tracking_swanlab import SwanLabTracker

    errors: list[BaseException] = []
    trackers: list[SwanLabTracker] = []

    def work() -> None:
        try:
            trackers.append(finished_run(SwanLabTracker, tmp_path / "logs", range(3)))
        except BaseException as error:
            errors.append(error)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    assert errors == [] and trackers[0].read_back_metrics() == {"loss": {s: 1.0 / (s + 1) for s in range(3)}}
