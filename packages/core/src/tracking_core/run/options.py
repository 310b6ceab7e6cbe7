"""A run's options, checked once where ``init`` / ``Dispatcher`` receives them.

Each mistake fails at that call with a message naming the option, before anything is set up.
``delivery`` not given is read from ``TRACKING_DELIVERY``, so a script run under a framework can still
choose it from outside.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, cast

from ..delivery.build import DeliveryOptions
from ..delivery.recovery import RetryPolicy

DEFAULT_FINISH_TIMEOUT = 120.0
DEFAULT_FLUSH_INTERVAL = 1.0
#: chooses ``delivery`` when the code does not pass it
DELIVERY_ENV = "TRACKING_DELIVERY"
MAX_STEP = 2**63 - 1  # every backend stores steps as signed 64-bit integers


@dataclass(frozen=True)
class RunOptions:
    blocking: bool
    queue_size: int
    on_full: str
    on_error: str
    finish_timeout: float
    flush_interval: float
    retry: RetryPolicy
    per_rank: bool
    #: ``"thread"`` or ``"process"``; always ``"thread"`` with ``blocking=True``
    delivery: str

    @classmethod
    def checked(
        cls,
        *,
        blocking: bool,
        queue_size: int,
        on_full: str,
        on_error: str,
        finish_timeout: float,
        flush_interval: float,
        retry_backoff: tuple[float, float],
        per_rank: bool,
        delivery: str | None,
    ) -> RunOptions:
        if delivery is None:  # a script run under a framework can still choose, from outside
            delivery = os.environ.get(DELIVERY_ENV, "").strip() or "thread"
            if delivery not in ("thread", "process"):
                raise ValueError(f"{DELIVERY_ENV} must be 'thread' or 'process', got {delivery!r}")
        if on_full not in ("block", "drop", "spill"):
            raise ValueError(f"on_full must be 'block', 'drop' or 'spill', got {on_full!r}")
        if on_error not in ("warn", "raise"):
            raise ValueError(f"on_error must be 'warn' or 'raise', got {on_error!r}")
        if delivery not in ("thread", "process"):
            raise ValueError(f"delivery must be 'thread' or 'process', got {delivery!r}")
        if not (isinstance(flush_interval, (int, float)) and flush_interval > 0):
            raise ValueError(f"flush_interval must be a positive number of seconds, got {flush_interval!r}")
        first, longest = retry_backoff
        if not (0 < first <= longest):
            raise ValueError(
                f"retry_backoff must be (first, longest) seconds with 0 < first <= longest, got {retry_backoff!r}"
            )
        return cls(
            blocking=blocking,
            queue_size=queue_size,
            on_full=on_full,
            on_error=on_error,
            finish_timeout=finish_timeout,
            flush_interval=float(flush_interval),
            retry=RetryPolicy(float(first), float(longest)),
            per_rank=bool(per_rank),
            delivery="thread" if blocking else delivery,
        )

    def for_delivery(self) -> DeliveryOptions:
        """What every backend's ``Delivery`` follows."""
        return DeliveryOptions(self.on_error, self.flush_interval, self.retry)


def checked_resume(resume: Any) -> bool | str:
    """``resume`` as given, or an error naming it: ``True``, ``False`` or a run id."""
    if not isinstance(resume, (bool, str)) or resume == "":
        raise ValueError(f"resume must be True, False or a run id, got {resume!r}")
    return resume


def checked_step(step: Any) -> int:
    """``step`` as an int, or an error naming it: a step is a whole number from 0 to 2**63 - 1."""
    if isinstance(step, float) and step.is_integer():
        step = int(step)
    elif isinstance(step, bool) or not hasattr(step, "__index__"):
        raise TypeError(f"step must be a whole number (or None for the next step), got {step!r}")
    step = step.__index__()
    if not 0 <= step <= MAX_STEP:
        raise ValueError(f"step must be between 0 and 2**63 - 1, got {step}")
    return cast(int, step)  # __index__ returns an int
