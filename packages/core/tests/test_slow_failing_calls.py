"""A backend whose calls each take seconds and then fail (an SDK retrying a dead server on its own) costs
the loop at most one wait of ``SPILL_OVER_SECONDS`` plus a margin, however many such calls it makes in a row.

The stuck check counts from when the backend's worker last looked at its queue, not from the start of
its current SDK call: a run of calls that each stay under the limit is as stuck, for the loop, as one
call that never returns.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from tracking_core import Dispatcher, GeneralTracker, PartialDelivery, register_tracker_class
from tracking_core.delivery import worker
from tracking_core.testing.reliability import tally

pytestmark = pytest.mark.reliability

#: what the longest log() may wait beyond SPILL_OVER_SECONDS: the worker's next SDK call, the handover
#: slice and writing the queue to the spill (tenths of a second on an idle machine)
MARGIN_SECONDS = 1.5


class SlowFailing(GeneralTracker):
    """While ``down`` is set, each call takes ``call_seconds`` and then fails with a 503, as MLflow's
    client does after its own HTTP retries; ``log_batch`` stores the first half of its batch first."""

    name = "slow-failing"
    requires_logging_directory = False
    call_seconds = 1.5
    down = threading.Event()
    stored: list[int] = []

    def __init__(self, run_name: str = "slow-failing", **kwargs: Any) -> None:
        super().__init__()

    @property
    def tracker(self) -> None:
        return None

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        self.log_batch([(values, step, kwargs)])

    def log_batch(self, entries: Any) -> None:
        cls = type(self)
        if not cls.down.is_set():
            cls.stored.extend(step for _, step, _ in entries)
            return
        half = len(entries) // 2
        cls.stored.extend(step for _, step, _ in entries[:half])
        time.sleep(cls.call_seconds)
        raise PartialDelivery(half) from ConnectionError("503 Service Unavailable")


def _log_timed(run: Dispatcher, seconds: float, key: str = "loss") -> tuple[int, float]:
    """Log one step a millisecond for ``seconds``; the steps logged and the longest single log() call."""
    longest, step = 0.0, 0
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        began = time.monotonic()
        run.log({key: float(step)}, step=step)
        longest = max(longest, time.monotonic() - began)
        step += 1
        time.sleep(0.001)
    return step, longest


def test_calls_that_each_take_seconds_and_fail_cost_the_loop_one_bounded_wait(monkeypatch, tmp_path):
    monkeypatch.setattr(SlowFailing, "down", threading.Event())
    monkeypatch.setattr(SlowFailing, "stored", [])
    register_tracker_class(SlowFailing)
    SlowFailing.down.set()
    run = Dispatcher(log_with=[SlowFailing.name], logging_dir=tmp_path, queue_size=200, retry_backoff=(0.5, 1.0))
    run.init_trackers("p")
    down = threading.Timer(8.0, SlowFailing.down.clear)  # the server answers again after 8 s
    down.start()
    try:
        steps, longest = _log_timed(run, 10.0)
    finally:
        down.cancel()
        SlowFailing.down.clear()
    report = run.finish(timeout=60)
    backend = report.backends[SlowFailing.name]
    figures = tally("calls take 1.5 s and fail (503) for 8 s", SlowFailing.name, range(steps), SlowFailing.stored)
    print(f"longest log() wait: {longest:.2f} s ({steps} steps)")
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert SlowFailing.stored == list(range(steps)), "in order"
    assert backend.ok and backend.refused_points == [], str(report)
    assert longest <= worker.SPILL_OVER_SECONDS + MARGIN_SECONDS, f"one log() waited {longest:.2f} s"


class SlowIsolating(GeneralTracker):
    """Answers, slowly: each call takes ``call_seconds``; a batch holding ``bad`` is refused (a ValueError),
    so the worker stores that batch record by record, one slow call each, before it looks at its queue again."""

    name = "slow-isolating"
    requires_logging_directory = False
    call_seconds = 0.2
    gate = threading.Event()
    stored: list[int] = []

    def __init__(self, run_name: str = "slow-isolating", **kwargs: Any) -> None:
        super().__init__()

    @property
    def tracker(self) -> None:
        return None

    def start(self) -> None:
        type(self).gate.wait(30)

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        time.sleep(type(self).call_seconds)
        if "bad" in values:
            raise ValueError("invalid value for bad")
        assert step is not None
        type(self).stored.append(step)

    def log_batch(self, entries: Any) -> None:
        if any("bad" in values for values, _, _ in entries):
            time.sleep(type(self).call_seconds)
            raise ValueError("invalid value for bad")
        type(self).stored.extend(step for _, step, _ in entries)


def test_many_short_calls_in_a_row_count_as_one_stuck_call(monkeypatch, tmp_path):
    """20 records isolated one slow call each (4 s in all, no call near the limit): with the limit at
    0.5 s, the loop that finds the queue full waits about that long, not for all 20 calls."""
    monkeypatch.setattr(SlowIsolating, "gate", threading.Event())
    monkeypatch.setattr(SlowIsolating, "stored", [])
    monkeypatch.setattr(worker, "SPILL_OVER_SECONDS", 0.5)
    register_tracker_class(SlowIsolating)
    run = Dispatcher(log_with=[SlowIsolating.name], logging_dir=tmp_path, queue_size=20, retry_backoff=(0.05, 0.2))
    run.init_trackers("p")
    for step in range(20):  # one batch of 20 records, one of them refused in part
        run.log({"loss": float(step), **({"bad": 1.0} if step == 3 else {})}, step=step)
    SlowIsolating.gate.set()
    time.sleep(0.1)  # the worker has taken the batch
    longest = 0.0
    with pytest.warns(Warning, match="refused by the backend"):
        for step in range(20, 200):
            began = time.monotonic()
            run.log({"loss": float(step)}, step=step)
            longest = max(longest, time.monotonic() - began)
        report = run.finish(timeout=60)
    backend = report.backends[SlowIsolating.name]
    print(f"longest log() wait: {longest:.2f} s (limit {worker.SPILL_OVER_SECONDS} s)")
    figures = tally(
        "20 slow calls in a row, refused value isolated", SlowIsolating.name, range(200), SlowIsolating.stored
    )
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert SlowIsolating.stored == list(range(200)) and backend.ok, str(report)
    assert [(key, step) for key, step, _ in backend.refused_points] == [("bad", 3)]
    assert longest < 2.5, f"one log() waited {longest:.2f} s for 20 calls in a row (4 s)"
