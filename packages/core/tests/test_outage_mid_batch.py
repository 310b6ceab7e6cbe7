"""An outage that begins in the middle of a batch: every record it did not store is owed, never skipped.

Only a value the backend says is invalid costs that value. A refused connection, a 5xx answer, a
timeout or a database error behind the server is an outage, on the first try, inside a batch or on
a retry: the records wait in the spill, reach the backend when it answers, and the report says what
is still owed (``ok`` is False until then). Each scenario counts sent / stored / duplicated / lost /
spilled.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from tracking_core import Dispatcher, GeneralTracker, PartialDelivery, register_tracker_class
from tracking_core.cli.replay import replay
from tracking_core.delivery.recovery import is_refusal
from tracking_core.testing.reliability import tally, waiting_steps

pytestmark = pytest.mark.reliability

STEPS = 300
FAILS_AT = 100


def _unavailable() -> ConnectionError:
    return ConnectionError("503 Service Unavailable")


class MidBatchOutage(GeneralTracker):
    """Stores a batch record by record; at step ``FAILS_AT`` the server goes down for ``down_for`` seconds.

    ``log_batch`` raises ``PartialDelivery(i) from ConnectionError("503 ...")`` on the record it was
    storing when the outage began; while down, every call fails the same way. ``start`` waits for
    ``gate``, so that every record the test logs arrives in one batch. What it stores lives on the
    class: a replay makes a new instance that stores into the same list (the same server).
    """

    name = "mid-batch-outage"
    requires_logging_directory = False
    gate = threading.Event()
    stored: list[int] = []
    down_for = 2.0
    down_until: float | None = None  # None: the outage has not begun
    up = threading.Event()  # set: the server is back, whatever ``down_until`` says
    refused_calls = 0  # calls that met the outage

    def __init__(self, run_name: str = "mid-batch-outage", **kwargs: Any) -> None:
        super().__init__()

    @property
    def tracker(self) -> None:
        return None

    def start(self) -> None:
        type(self).gate.wait(30)

    def _down(self) -> bool:
        cls = type(self)
        return cls.down_until is not None and time.monotonic() < cls.down_until and not cls.up.is_set()

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        cls = type(self)
        if cls.down_until is None and step == FAILS_AT:
            cls.down_until = time.monotonic() + cls.down_for
        if self._down():
            cls.refused_calls += 1
            raise _unavailable()
        assert step is not None
        cls.stored.append(step)

    def log_batch(self, entries: Any) -> None:
        for index, (values, step, kwargs) in enumerate(entries):
            try:
                self.log(values, step=step, **kwargs)
            except ConnectionError as error:
                raise PartialDelivery(index) from error


@pytest.fixture
def outage(monkeypatch: pytest.MonkeyPatch) -> type[MidBatchOutage]:
    monkeypatch.setattr(MidBatchOutage, "gate", threading.Event())
    monkeypatch.setattr(MidBatchOutage, "up", threading.Event())
    monkeypatch.setattr(MidBatchOutage, "stored", [])
    monkeypatch.setattr(MidBatchOutage, "down_until", None)
    monkeypatch.setattr(MidBatchOutage, "refused_calls", 0)
    register_tracker_class(MidBatchOutage)
    return MidBatchOutage


def _log_in_one_batch(run: Dispatcher, tracker: type[MidBatchOutage]) -> None:
    for step in range(STEPS):
        run.log({"loss": float(step), "acc": step / STEPS}, step=step)
    tracker.gate.set()


def test_an_outage_that_begins_mid_batch_is_delivered_when_the_backend_answers(outage, tmp_path):
    run = Dispatcher(log_with=[outage.name], logging_dir=tmp_path, retry_backoff=(0.05, 0.4))
    run.init_trackers("p")
    _log_in_one_batch(run, outage)
    deadline = time.monotonic() + 30
    while len(outage.stored) < STEPS and time.monotonic() < deadline:
        time.sleep(0.05)  # the outage lasts 2 s: the backend is retried until it answers
    report = run.finish()
    backend = report.backends[outage.name]
    figures = tally("outage begins mid-batch (503), back after 2 s", outage.name, range(STEPS), outage.stored)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert outage.stored == list(range(STEPS)), "in order, each once"
    assert waiting_steps(run.run_dir, outage.name) == [], "nothing is owed"
    assert backend.skipped_values == {} and backend.refused_points == [], str(report)
    assert backend.delivered == STEPS and backend.spilled == 0 and backend.recovered == STEPS - FAILS_AT, str(report)
    assert report.ok, str(report)


def test_an_outage_still_on_at_finish_is_owed_and_replay_delivers_it(outage, tmp_path):
    outage.down_for = 600.0  # down until the test brings it back
    run = Dispatcher(log_with=[outage.name], logging_dir=tmp_path, retry_backoff=(0.05, 0.4))
    run.init_trackers("p")
    _log_in_one_batch(run, outage)
    deadline = time.monotonic() + 30
    while outage.refused_calls < 3 and time.monotonic() < deadline:
        time.sleep(0.05)  # the outage has begun, and a few retries failed
    report = run.finish(timeout=5)
    backend = report.backends[outage.name]
    spilled = waiting_steps(run.run_dir, outage.name)  # in the run's journal (and any spill), past its cursor
    figures = tally(
        "outage begins mid-batch (503), still down at finish", outage.name, range(STEPS), outage.stored, spilled
    )
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert outage.stored == list(range(FAILS_AT)) and spilled == list(range(FAILS_AT, STEPS))
    assert backend.delivered == FAILS_AT and backend.spilled == STEPS - FAILS_AT, str(report)
    assert backend.refused_points == [] and not report.ok, str(report)

    outage.up.set()
    replayed = replay(run.run_dir, outage.name, progress=False)
    figures = tally("... then tracking replay of the run", outage.name, range(STEPS), outage.stored)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert outage.stored == list(range(STEPS)) and replayed.ok, str(replayed)


class RefusesOnePoint(MidBatchOutage):
    """Stores a batch record by record and refuses the value of ``bad`` (a ``ValueError``), wherever it comes."""

    name = "refuses-one-point"

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        if "bad" in values:
            raise ValueError(f"invalid value for 'bad' at step {step}")
        assert step is not None
        type(self).stored.append(step)

    def log_batch(self, entries: Any) -> None:
        for index, (values, step, kwargs) in enumerate(entries):
            try:
                self.log(values, step=step, **kwargs)
            except ValueError as error:
                raise PartialDelivery(index) from error


def test_each_refused_point_is_one_report_entry(monkeypatch, tmp_path):
    monkeypatch.setattr(RefusesOnePoint, "gate", threading.Event())
    monkeypatch.setattr(RefusesOnePoint, "stored", [])
    register_tracker_class(RefusesOnePoint)
    run = Dispatcher(log_with=[RefusesOnePoint.name], logging_dir=tmp_path)
    run.init_trackers("p")
    with pytest.warns(Warning, match="refused by the backend"):
        for step in range(50):
            values = {"loss": float(step)}
            if step in (10, 20, 30):
                values["bad"] = 1.0
            run.log(values, step=step)
        RefusesOnePoint.gate.set()
        report = run.finish()
    backend = report.backends[RefusesOnePoint.name]
    assert RefusesOnePoint.stored == list(range(50)), "the rest of each refused record is stored"
    assert [(key, step) for key, step, _ in backend.refused_points] == [("bad", 10), ("bad", 20), ("bad", 30)]
    assert "bad" in backend.skipped_values and backend.spilled == 0 and report.ok
    text = str(report)
    assert all(f"'bad' at step {step}" in text for step in (10, 20, 30)), text


class _ServerError(Exception):
    """An SDK's error for a server's answer, as MLflow's ``RestException`` carries it (``error_code``)."""

    def __init__(self, error_code: str, message: str) -> None:
        super().__init__(f"{error_code}: {message}")
        self.error_code = error_code


@pytest.mark.parametrize(
    "error",
    [
        ConnectionError("503 Service Unavailable"),
        TimeoutError("timed out"),
        _ServerError("TEMPORARILY_UNAVAILABLE", "(sqlalchemy.exc.OperationalError) connection refused"),
        _ServerError("INTERNAL_ERROR", "API request failed: Max retries exceeded (too many 503 error responses)"),
        # MLflow's server answers BAD_REQUEST for any SQLAlchemy error, the database being down included
        _ServerError(
            "BAD_REQUEST",
            "(psycopg2.OperationalError) server closed the connection unexpectedly. This probably means the "
            "server terminated abnormally",
        ),
        _ServerError("BAD_REQUEST", "Can't reconnect until invalid transaction is rolled back"),
        RuntimeError(
            "API request to endpoint /api/2.0/mlflow/runs/log-batch failed with error code 502 != 200. "
            "Response body: '<html><title>502 Bad Gateway</title></html>'"
        ),
        ValueError("HTTP 502 Bad Gateway"),
        RuntimeError("503 Service Unavailable"),
    ],
    ids=lambda error: f"{type(error).__name__}:{str(error)[:40]}",
)
def test_an_error_that_says_the_backend_is_down_is_not_a_refusal(error):
    assert not is_refusal(error)


@pytest.mark.parametrize(
    "error",
    [
        ValueError("invalid value for 'x'"),
        ValueError("invalid value for 'connection_timeout': must be a number"),
        _ServerError("INVALID_PARAMETER_VALUE", "Invalid value nan for metric 'x'"),
        _ServerError("BAD_REQUEST", "Python int too large to convert to SQLite INTEGER"),
        TypeError("unsupported type"),
    ],
    ids=lambda error: f"{type(error).__name__}:{str(error)[:40]}",
)
def test_an_error_that_blames_the_value_is_a_refusal(error):
    assert is_refusal(error)
