"""Trackers that misbehave on purpose, for the isolation tests."""

from __future__ import annotations

import threading
import time

from tracking_core import GeneralTracker


class FailingTracker(GeneralTracker):
    """Raises on every delivery, like a backend whose server rejects everything."""

    name = "failing"
    requires_logging_directory = False

    def __init__(self, run_name: str = "failing", **kwargs) -> None:
        super().__init__()

    @property
    def tracker(self):
        return None

    def log(self, values, step=None, **kwargs):
        raise ConnectionError("server said no")

    def log_batch(self, entries):
        raise ConnectionError("server said no")

    def store_init_configuration(self, values):
        raise ConnectionError("server said no")


class PickyTracker(FailingTracker):
    """Takes everything but the key ``refused``, which it refuses (a value error, in its worker thread)."""

    name = "picky"

    def log(self, values, step=None, **kwargs):
        if "refused" in values:
            raise ValueError("this backend does not take 'refused'")

    log_batch = GeneralTracker.log_batch

    def store_init_configuration(self, values):
        pass


class HangingTracker(GeneralTracker):
    """Blocks forever in ``log`` (a backend stuck on a dead connection)."""

    name = "hanging"
    requires_logging_directory = False
    release = threading.Event()

    def __init__(self, run_name: str = "hanging", **kwargs) -> None:
        super().__init__()

    @property
    def tracker(self):
        return None

    def log(self, values, step=None, **kwargs):
        self.release.wait(600)

    def log_batch(self, entries):
        self.release.wait(600)


class SlowTracker(GeneralTracker):
    """Sleeps per call, like an SDK doing a synchronous round trip."""

    name = "slow"
    requires_logging_directory = False
    delay = 0.001

    def __init__(self, run_name: str = "slow", **kwargs) -> None:
        super().__init__()
        self.calls = 0

    @property
    def tracker(self):
        return None

    def log(self, values, step=None, **kwargs):
        time.sleep(self.delay)
        self.calls += 1


class StuckOnRetryTracker(GeneralTracker):
    """Takes part of a batch, then hangs on the single-record retry that follows.

    ``log_batch`` stores the first entry and fails the rest (``PartialDelivery``), with a connection
    error or, when ``refuses`` is set, with a refusal of a value; the retry of what is left
    (``log``) then blocks like a call stuck on a dead connection. ``start`` waits for ``go`` so that
    every record the test logs arrives in one batch.
    """

    name = "stuck-on-retry"
    requires_logging_directory = False
    go = threading.Event()
    release = threading.Event()
    refuses = False
    stored: list[int] = []

    def __init__(self, run_name: str = "stuck-on-retry", **kwargs) -> None:
        super().__init__()

    @property
    def tracker(self):
        return None

    def start(self) -> None:
        self.go.wait(60)

    def log(self, values, step=None, **kwargs):
        self.release.wait(600)

    def log_batch(self, entries):
        from tracking_core import PartialDelivery

        self.stored.append(entries[0][1])
        error = ValueError("value not accepted") if self.refuses else ConnectionError("connection reset")
        raise PartialDelivery(1) from error


def logged_without_waiting(run, steps: range, key: str = "x", timeout: float = 60, pause: float = 0.0) -> bool:
    """Log ``key`` at each of ``steps`` from another thread (``pause`` seconds of "training" between
    steps); True when that loop ended within ``timeout``.

    The thread is a daemon: a loop stuck in ``log()`` (the defect such tests look for) must not keep
    the test session from ending.
    """

    def loop() -> None:
        for step in steps:
            run.log({key: float(step)}, step=step)
            if pause:
                time.sleep(pause)

    looping = threading.Thread(target=loop, daemon=True)
    looping.start()
    looping.join(timeout)
    return not looping.is_alive()
