"""A backend's delivery states, when it is tried again, and which errors mean "refused" rather than "down".

One :class:`~.engine.Delivery` is in one :class:`Mode` at a time:

- ``LIVE``: records go to the backend as they come.
- ``SPILLING``: the backend failed (or sat in one SDK call while its queue filled up): records go to
  its spill journal, in order, and the backend is tried again when :class:`RetryPolicy` says so.
- ``RECOVERING``: a retry got through; the spill is delivered, from the backend's cursor on, one
  batch per tick, while new records keep going to the spill. Then ``LIVE`` again.
- ``CATCHING_UP``: a resumed run (or a replay, or a take-over after the delivery process died)
  delivers what the backend missed before anything spilled meanwhile; then ``RECOVERING`` when
  records wait in the spill, else ``LIVE``.

A failure in any mode goes to ``SPILLING``. The finish report's ``state`` follows: ``starting``,
``running``; ``retrying``, then ``quarantined`` after :data:`MAX_CONSECUTIVE_FAILURES` failures in a
row (still retried, at most every ``RetryPolicy.longest`` seconds); ``start_failed``; ``stuck`` (inside
one SDK call while its queue filled up); back to ``running`` once it answers; at the end ``finished``,
``finish_failed``, ``quarantined`` or ``timed_out``.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

MAX_CONSECUTIVE_FAILURES = 5

#: Words in an SDK's error that blame the value, whatever the exception's type (MLflow wraps SQLite's
#: "Python int too large to convert to SQLite INTEGER" in an INTERNAL_ERROR, for one).
_VALUE_HINTS = ("too large to convert", "out of range", "overflow")


class Mode(str, Enum):
    """Where a backend's records go now; each value equals the plain string it replaced (``"live"``, ...)."""

    LIVE = "live"
    SPILLING = "spilling"
    RECOVERING = "recovering"
    CATCHING_UP = "catching up"

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, format_spec: str) -> str:
        return format(str(self.value), format_spec)


class RetryPolicy(NamedTuple):
    """When a failed backend is tried again: ``first`` seconds after the first failure, doubling up to ``longest``."""

    first: float = 1.0
    longest: float = 300.0

    def delay(self, failures: int) -> float:
        backoff: float = self.first * 2 ** max(0, failures - 1)
        return min(self.longest, backoff)


def is_refusal(error: BaseException) -> bool:
    """True when the backend answered but refused what it was given (not when it is down)."""
    if isinstance(error, (OSError, MemoryError, RecursionError)):
        return False
    text = str(error).lower()
    if any(hint in text for hint in _VALUE_HINTS):
        return True
    code = getattr(error, "error_code", None)  # MLflow's MlflowException, among others
    if isinstance(code, str) and code:
        return "INVALID" in code or "BAD_REQUEST" in code
    return isinstance(error, (ValueError, TypeError, ArithmeticError, UnicodeError, KeyError, IndexError))
