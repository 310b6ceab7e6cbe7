"""A backend's delivery states, when it is tried again, and which errors mean "refused" rather than "down".

One :class:`~.engine.Delivery` is in one :class:`Mode` at a time:

- ``LIVE``: records go to the backend as they come.
- ``SPILLING``: the backend failed (or sat in one SDK call while its queue filled up): its records wait,
  in the run's journal when it holds them and in its spill journal when it does not yet
  (:mod:`.spiller`), and the backend is tried again when :class:`RetryPolicy` says so.
- ``RECOVERING``: a retry got through, or a resumed run (a replay, a take-over after the delivery process
  died) starts with what the backend missed: what it owes is read from its cursor on (the catch-up, then
  the journal and the spill merged, :class:`~.spill.OwedReader`) and delivered one batch per tick, while
  new records keep waiting. Then ``LIVE`` again.

A failure in any mode goes to ``SPILLING``; :class:`Outage` handles failures and the way back. What
the finish report says of the backend (``BackendReport.state``) is a :data:`State`, written only by
:func:`enter`.
"""

from __future__ import annotations

import re
import shlex
import time
import traceback
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Literal, NamedTuple

from ..errors import TrackingError
from ..intake.record import CONTROL_KINDS, Record
from ..notices import logger
from ..report import BackendReport

if TYPE_CHECKING:
    from .engine import Delivery

MAX_CONSECUTIVE_FAILURES = 5

#: Words in an SDK's error that blame the value, whatever the exception's type (MLflow wraps SQLite's
#: "Python int too large to convert to SQLite INTEGER" in an INTERNAL_ERROR, for one).
_VALUE_HINTS = ("too large to convert", "out of range", "overflow")

#: Words in an error that say the backend, or what stands behind it, is down or overloaded, whatever the
#: exception's type or error code: MLflow's server answers BAD_REQUEST for any SQLAlchemy error, its
#: database being unreachable included, and wraps exhausted HTTP retries ("too many 503 error
#: responses") in an MlflowException. Matched outside a quoted word, where an SDK names the key or value.
_OUTAGE_HINTS = (
    "connection",
    "connect to",
    "reconnect",
    "unavailable",
    "timed out",
    "timeout",
    "bad gateway",
    "internal server error",
    "error responses",
    "max retries",
    "too many requests",
    "rate limit",
    "operationalerror",
    "interfaceerror",
    "terminated abnormally",
    "database is locked",
    "try again",
)
_HTTP_5XX = re.compile(r"\b(?:http|status(?: code)?|error code)[ :=]*5\d\d\b")
#: a quoted word (a key or a value an SDK names), not a quoted response body
_QUOTED = re.compile(r"'[^'\s]*'|\"[^\"\s]*\"")
#: error codes (MLflow's, gRPC's) of a server that could not take the request now, whatever it was
_OUTAGE_CODES = ("UNAVAILABLE", "INTERNAL", "DEADLINE", "EXHAUSTED", "LIMIT_EXCEEDED", "ABORTED")


class Mode(str, Enum):
    """Where a backend's records go now; each value equals the plain string it replaced (``"live"``, ...)."""

    LIVE = "live"
    SPILLING = "spilling"
    RECOVERING = "recovering"

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, format_spec: str) -> str:
        return format(str(self.value), format_spec)


# the modes by their plain names
LIVE, SPILLING, RECOVERING = Mode.LIVE, Mode.SPILLING, Mode.RECOVERING

#: What the finish report says of a backend (``BackendReport.state``, a plain string in ``run.json``):
#:
#: - ``pending``: not started yet (``BackendReport`` begins there);
#: - ``starting``: inside ``start()``; ``start_failed``: it failed (retried when it can come back);
#: - ``running``: delivering, or back after an outage;
#: - ``stuck``: inside one SDK call while its queue filled up (records go to the spill); ``running``
#:   once it answers;
#: - ``retrying``: down, its records wait in the spill; ``quarantined`` after
#:   :data:`MAX_CONSECUTIVE_FAILURES` failures in a row (still retried, at most every
#:   ``RetryPolicy.longest`` seconds), or when it ends while still down;
#: - at the end: ``finished``, ``finish_failed``, ``quarantined`` or ``timed_out`` (it did not finish in
#:   time: what it had not stored is in its spill).
State = Literal[
    "pending",
    "starting",
    "start_failed",
    "running",
    "stuck",
    "retrying",
    "quarantined",
    "finished",
    "finish_failed",
    "timed_out",
]


def enter(report: BackendReport, state: State) -> None:
    """The one place a backend's ``report.state`` is written."""
    report.state = state


class RetryPolicy(NamedTuple):
    """When a failed backend is tried again: ``first`` seconds after the first failure, doubling up to ``longest``."""

    first: float = 1.0
    longest: float = 300.0

    def delay(self, failures: int) -> float:
        backoff: float = self.first * 2 ** max(0, failures - 1)
        return min(self.longest, backoff)


def is_refusal(error: BaseException) -> bool:
    """True when the backend answered and refused the value it was given; False when it is down.

    Only a refusal costs a value (it is skipped); anything else is an outage, and the records wait in
    the spill until the backend answers. So an error that says the backend, its server or the database
    behind it is unreachable, overloaded or failing (a refused connection, a 5xx, a timeout) is never a
    refusal, whatever its type or error code.
    """
    if isinstance(error, (OSError, MemoryError, RecursionError)) or _caused_by_outage(error):
        return False
    text = str(error).lower()
    if any(hint in text for hint in _VALUE_HINTS):
        return True
    unquoted = _QUOTED.sub("", text)
    if any(hint in unquoted for hint in _OUTAGE_HINTS) or _HTTP_5XX.search(unquoted):
        return False
    status = getattr(error, "status_code", None)
    if isinstance(status, int) and (status >= 500 or status in (408, 429)):
        return False
    code = getattr(error, "error_code", None)  # MLflow's MlflowException, among others
    if isinstance(code, str) and code:
        if any(part in code for part in _OUTAGE_CODES):
            return False
        return "INVALID" in code or "BAD_REQUEST" in code
    return isinstance(error, (ValueError, TypeError, ArithmeticError, UnicodeError, KeyError, IndexError))


def _caused_by_outage(error: BaseException) -> bool:
    """An SDK's error raised while it met a connection that failed or timed out (its cause or context)."""
    seen = 0
    link = error.__cause__ or error.__context__
    while link is not None and seen < 8:
        if isinstance(link, (ConnectionError, TimeoutError)):
            return True
        link, seen = link.__cause__ or link.__context__, seen + 1
    return False


class Outage:
    """One :class:`~.engine.Delivery`'s failures and the way back: it owns the failure count, when the
    next retry is due, and what has been warned about, and moves the delivery's mode and report state."""

    def __init__(
        self,
        delivery: Delivery,
        retry: RetryPolicy,
        on_error: str,
        error_sink: Callable[[TrackingError], None] | None,
    ) -> None:
        self.delivery = delivery
        self.retry = retry
        self.on_error = on_error
        self.error_sink = error_sink
        self.failures = 0
        self.can_retry_start = True
        self.next_retry = float("inf")
        self.reported_errors: set[type] = set()
        self.recovering_since_failures = 0
        self.spilled_over = False

    def spill_over(self, pending: list[Record], stuck: bool = True) -> list[Record]:
        """The backend has sat in one SDK call while its queue filled up (``stuck``), or its queue is full
        with ``on_full="spill"``: instead of ``log()`` waiting for that call, what the backend owes goes to
        its spill, and from there to the backend once the call returns, as after a failure (but retried
        at once).

        Run by the thread that found the queue full, holding ``handover`` (the worker lets go of it
        inside SDK calls); ``pending`` is what it took off the queue. The call in progress keeps its
        records: if it stores them, the cursor passes their spilled copies; if it fails, they are in
        the spill already. A resumed backend's catch-up stays with the worker (its records are never
        spilled: they are read again from the cursor). Returns the control records of ``pending``
        (flush, finish), which go back to the queue, behind what was spilled.
        """
        reading = self.delivery.spill_reader is not None  # what it owes, from its cursor
        in_call = [*self.delivery.unconfirmed, *self.delivery.in_flight]
        self.delivery.spill_in_order([*in_call, *self.delivery.held[self.delivery.held_next :], *pending])
        if not reading and self.delivery.mode != SPILLING:
            # The worker finishes its call and goes on in spilling mode: the retry that reads the spill is
            # due. (A worker already reading reaches what was appended, in order.)
            self.delivery.mode = SPILLING
            self.delivery.spill_reader = None
            self.next_retry = time.monotonic()
            if stuck and self.delivery.report.state in ("starting", "running"):
                enter(self.delivery.report, "stuck")
        if not self.spilled_over:
            self.spilled_over = True
            self.note_spill_over(stuck)
        return [record for record in pending if record.kind in CONTROL_KINDS]

    def note_spill_over(self, stuck: bool) -> None:
        if not stuck:
            self.delivery.report.notes.append(
                "its queue filled up (on_full='spill'): the records that found it full reached the backend "
                "after waiting (in the run's journal), in order"
            )
            return
        seconds = self.delivery.seconds_busy()
        logger.warning(
            "backend %r has been in calls into its SDK for %.1f s without taking records and its queue is "
            "full: its records wait (in the run's journal) until the call returns, then go to the backend, in order",
            self.delivery.name,
            seconds,
        )
        self.delivery.report.notes.append(
            f"its calls into its SDK kept it from its queue for {seconds:.1f} s (the last one did not return "
            "by then): the records logged meanwhile waited (in the run's journal) instead of making log() wait"
        )

    def failed(self, error: BaseException, what: str, records: list[Record]) -> None:
        """The backend is down (or broken): what it did not store, and everything after, waits in the spill."""
        report = self.delivery.report
        self.note_error(error, what)
        self.failures += 1
        if self.delivery.unconfirmed and what != "flush":
            self.settle_unconfirmed()
        for record in records:
            self.delivery.spill_record(record)  # a record of the catch-up is read again from the cursor
        self.delivery.positions.write()  # takes back what _hand_over announced: the spill holds those records
        self.delivery.mode = SPILLING
        self.delivery.spill_reader = None
        self.next_retry = time.monotonic() + self.retry.delay(self.failures) if self.retried else float("inf")
        if not self.delivery.started:
            enter(report, "start_failed")
        elif self.failures >= MAX_CONSECUTIVE_FAILURES:
            if report.state != "quarantined":
                logger.warning(
                    "backend %r is quarantined after %d failures in a row: retried every %.0f s at most",
                    self.delivery.name,
                    self.failures,
                    self.retry.longest,
                )
            enter(report, "quarantined")
        else:
            enter(report, "retrying")

    def note_error(self, error: BaseException, what: str) -> None:
        """Count the error, warn once per error type (with the traceback), and queue it for ``on_error='raise'``."""
        report = self.delivery.report
        report.errors += 1
        report.last_error = f"{what}: {type(error).__name__}: {error}"
        if type(error) not in self.reported_errors:
            self.reported_errors.add(type(error))
            logger.warning(
                "backend %r failed in %s (%s: %s); the run goes on, its records wait (in the run's journal) and %s\n%s",
                self.delivery.name,
                what,
                type(error).__name__,
                error,
                self._how_the_spill_is_delivered(),
                "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip(),
            )
        if self.error_sink is not None and self.on_error == "raise":
            wrapped = TrackingError(self.delivery.name, f"{what} failed: {type(error).__name__}: {error}")
            wrapped.__cause__ = error
            self.error_sink(wrapped)

    @property
    def retried(self) -> bool:
        """Whether the backend is tried again: not after a start that failed for a missing package."""
        return self.delivery.started or self.can_retry_start

    def _how_the_spill_is_delivered(self) -> str:
        if self.retried:
            return "are delivered when it answers again"
        # a start that failed for a missing package is not retried: only the user can bring the SDK back
        context = self.delivery.tracker.run_context
        folder = shlex.quote(str(context.run_dir)) if context is not None and context.run_dir else "<run folder>"
        return (
            "are not retried (a missing package does not come back by itself): install it, then "
            f"`tracking replay {folder} --to {self.delivery.name}` delivers them"
        )

    def settle_unconfirmed(self) -> None:
        """Before records go to the spill, find out whether the ones buffered before them were stored."""
        _, error = self.delivery.live.attempt(self.delivery.tracker.flush)
        moved, self.delivery.unconfirmed = self.delivery.unconfirmed, []
        if error is None:
            self.delivery.confirm(moved)
        else:
            for record in moved:
                self.delivery.spill_record(record)

    def retry_backend(self) -> None:
        if not self.delivery.started:
            _, error = self.delivery.live.attempt(self.delivery.tracker.start)
            if error is not None:
                self.failed(error, "start", [])
                return
            self.delivery.mark_started()
        if self.delivery.unconfirmed:
            # a call spill_over gave up on came back with its records: the cursor must pass them (or
            # the spill keep them) before the spill is read, or they would be delivered twice
            self.settle_unconfirmed()
        self.recovering_since_failures = self.failures
        self.delivery.spill_reader = self.delivery.owed_reader()  # the catch-up's rest first, if any
        self.delivery.mode = RECOVERING

    def back_to_live(self) -> None:
        self.delivery.mode = LIVE
        self.delivery.spill_reader = None
        if self.delivery.started and self.delivery.report.state == "stuck":
            enter(self.delivery.report, "running")
        elif self.delivery.started and self.delivery.report.state in ("retrying", "quarantined", "start_failed"):
            enter(self.delivery.report, "running")
            self.delivery.report.notes.append(
                f"recovered after {self.recovering_since_failures} failed attempt(s); "
                "the records that waited for it were delivered in order"
            )
            logger.warning("backend %r answers again; the records that waited were delivered", self.delivery.name)
