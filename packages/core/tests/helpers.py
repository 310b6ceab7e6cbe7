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
