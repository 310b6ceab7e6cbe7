"""The sampling thread: one system-metrics sample every interval, handed to the run as metrics.

It starts when the run starts and is stopped (a last sample taken, then joined) when the run
finishes, so even a run shorter than the interval gets one point. Sampling never runs on the
training thread: the thread hands each sample to ``emit`` (the dispatcher's queue append), which
is all the training loop ever shares with it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ..notices import logger

Emit = Callable[[dict[str, float], float], None]


class SamplerThread:
    """Calls ``emit(sample, unix_time)`` every ``interval`` seconds from a daemon thread."""

    def __init__(self, make_sampler: Callable[[], Any], emit: Emit, interval: float) -> None:
        self.make_sampler = make_sampler
        self.emit = emit
        self.interval = float(interval)
        self.samples = 0
        self.cost = 0.0  # seconds spent sampling, on this thread (for the docs' cost figure and tests)
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._sampler: Any = None
        self._thread = threading.Thread(target=self._run, name="tracking-system-metrics", daemon=True)

    def start(self) -> SamplerThread:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self._sampler = self.make_sampler()  # NVML's init and the first counter readings: off the caller
        except Exception as error:
            logger.warning("system metrics are off for this run: the sampler could not start (%r)", error)
            return
        finally:
            self._ready.set()
        while not self._stop.wait(self.interval):
            self._take()

    def _take(self) -> None:
        began = time.perf_counter()
        try:
            values = self._sampler.sample()
        except Exception as error:  # a sampler defect costs the samples, never the run
            logger.debug("system metrics sample failed: %r", error)
            return
        self.cost += time.perf_counter() - began
        self.samples += 1
        if values:
            self.emit(values, time.time())

    def stop(self, timeout: float = 5.0) -> None:
        """Take a last sample, stop the thread and wait for it (bounded)."""
        if not self._thread.is_alive() and not self._ready.is_set():
            return
        self._stop.set()
        self._thread.join(timeout)
        if self._sampler is not None and not self._thread.is_alive():
            self._take()
            try:
                self._sampler.close()
            except Exception:
                pass
