"""Run context: the system metrics of a run and what reproduces it, the same on every backend.

Map of this package:

* :mod:`.system` -- one sample of CPU, memory, disk, network and the job's GPUs (``/proc``, psutil,
  NVML, torch), under the documented ``system/...`` names;
* :mod:`.sampler` -- the daemon thread that takes a sample every interval and hands it to the run;
* :mod:`.repro` -- git state, command line, platform, packages and launcher variables, captured once;
* this module -- the options (``init(..., system_metrics=..., context=...)`` and their environment
  variables) and :class:`RunContextCapture`, which starts both when a run starts and stops them
  when it finishes.

How it reaches the backends: samples go through the normal metrics path (a ``log`` record at the
run's current step, with the sample's wall time, never moving the step); the captured context goes
as one config record ``{"run_context": {...}}``, which a backend overriding
:meth:`~tracking_core.GeneralTracker.log_run_context` puts in its native place, and every other
backend stores as configuration. The context is also kept in ``run.json`` under ``"context"``, and
the journal holds both. See docs/run-context.md.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..notices import logger

if TYPE_CHECKING:
    from ..run.dispatcher import Dispatcher
    from .sampler import SamplerThread

#: the ``format`` field of a captured context
FORMAT = "tracking-run-context"
#: the parts of the context; ``context={part: False}`` leaves one out
PARTS = ("git", "diff", "command", "platform", "packages", "launcher")
#: the config key the captured context travels under (and is stored under by backends without a place for it)
RUN_CONTEXT_KEY = "run_context"
DEFAULT_INTERVAL = 10.0
#: ``0``/``false``/``off`` turns system metrics off, a number sets the interval; the code's option wins
SYSTEM_METRICS_ENV = "TRACKING_SYSTEM_METRICS"
#: ``0``/``false``/``off`` turns the run-context capture off; the code's option wins
RUN_CONTEXT_ENV = "TRACKING_RUN_CONTEXT"
#: ``finish`` waits this long for a capture still running (a slow git) before going on without it
FINISH_WAIT = 5.0
_OFF = ("0", "false", "no", "off")

__all__ = [
    "DEFAULT_INTERVAL",
    "PARTS",
    "RUN_CONTEXT_KEY",
    "RunContextCapture",
    "context_parts",
    "is_run_context",
    "split_run_context",
    "system_metrics_interval",
]


def system_metrics_interval(option: bool | float | None) -> float | None:
    """Seconds between samples, or ``None`` for off; ``option`` ``None`` reads ``TRACKING_SYSTEM_METRICS``."""
    if option is None:
        text = os.environ.get(SYSTEM_METRICS_ENV, "").strip().lower()
        if not text or text in ("1", "true", "yes", "on"):
            return DEFAULT_INTERVAL
        if text in _OFF:
            return None
        try:
            option = float(text)
        except ValueError:
            raise ValueError(f"{SYSTEM_METRICS_ENV} must be 0 or a number of seconds, got {text!r}") from None
        if not option > 0:
            return None
        return option
    if isinstance(option, bool):
        return DEFAULT_INTERVAL if option else None
    if isinstance(option, (int, float)) and option > 0:
        return float(option)
    raise ValueError(f"system_metrics must be True, False or a positive number of seconds, got {option!r}")


def context_parts(option: bool | Mapping[str, bool] | None) -> dict[str, bool] | None:
    """Which parts to capture (:data:`PARTS`), or ``None`` for none; ``None`` reads ``TRACKING_RUN_CONTEXT``."""
    if option is None:
        option = os.environ.get(RUN_CONTEXT_ENV, "").strip().lower() not in _OFF
    if isinstance(option, bool):
        return dict.fromkeys(PARTS, True) if option else None
    if isinstance(option, Mapping):
        unknown = sorted(str(part) for part in option if part not in PARTS)
        if unknown:
            raise ValueError(f"context: unknown part(s) {unknown}; the parts are {list(PARTS)}")
        parts = {part: bool(option.get(part, True)) for part in PARTS}
        return parts if any(parts.values()) else None
    raise ValueError(f"context must be True, False or {{part: bool}} over {list(PARTS)}, got {option!r}")


def split_run_context(payload: Any) -> tuple[dict[str, Any] | None, Any]:
    """``(the captured context, the rest of the config)`` of a config record's payload; ``(None, payload)``
    when it holds none. A spill or a replay merges config records into one, the context among them."""
    if not isinstance(payload, dict):
        return None, payload
    context = payload.get(RUN_CONTEXT_KEY)
    if not (isinstance(context, dict) and context.get("format") == FORMAT):
        return None, payload
    return context, {key: value for key, value in payload.items() if key != RUN_CONTEXT_KEY}


def is_run_context(payload: Any) -> bool:
    """Whether a config record's payload is the captured context (``{"run_context": {...}}``)."""
    return (
        isinstance(payload, dict)
        and len(payload) == 1
        and isinstance(payload.get(RUN_CONTEXT_KEY), dict)
        and payload[RUN_CONTEXT_KEY].get("format") == FORMAT
    )


class RunContextCapture:
    """The sampling thread and the one-off capture of a started run; :meth:`stop` at the run's finish.

    It talks to the dispatcher through its queue only: a sample is one metrics record at the
    dispatcher's current step (the step is never moved: ``log(step=None)`` still counts from the
    script's own steps), the context one config record. Both take the dispatcher's lock as ``log`` does.
    """

    def __init__(self, dispatcher: Dispatcher, interval: float | None, parts: dict[str, bool] | None) -> None:
        self.dispatcher = dispatcher
        self.sampler: SamplerThread | None = None
        self.context: dict[str, Any] | None = None
        self._capture: threading.Thread | None = None
        self._gpu_names: list[str] | None = None
        run_dir = Path(str(dispatcher.run_dir))
        if interval is not None:
            from .sampler import SamplerThread

            self.sampler = SamplerThread(self._make_sampler, self._emit_sample, interval).start()
        if parts is not None:
            self._capture = threading.Thread(
                target=self._capture_context, args=(run_dir, parts), name="tracking-run-context", daemon=True
            )
            self._capture.start()

    # -- system metrics ----------------------------------------------------------------------
    def _make_sampler(self) -> Any:
        from .system import SystemSampler

        sampler = SystemSampler(self.dispatcher.logging_dir or ".", per_rank=self.dispatcher.per_rank)
        if sampler.gpu is not None:
            try:
                self._gpu_names = sampler.gpu.names()
            except Exception:
                pass
        return sampler

    def _emit_sample(self, values: dict[str, float], timestamp: float) -> None:
        dispatcher = self.dispatcher
        with dispatcher._lock:
            puts = dispatcher._puts
            if not puts:
                return
            dispatcher._seq = seq = dispatcher._seq + 1
            record: tuple[Any, ...] = ("log", values, max(dispatcher._step, 0), {}, timestamp, seq)
            for put in puts:
                put(record)

    # -- what reproduces the run -------------------------------------------------------------
    def _capture_context(self, run_dir: Path, parts: dict[str, bool]) -> None:
        from .repro import capture

        try:
            context = capture(run_dir, parts, gpu_names=self._gpu_names)
        except Exception as error:  # capture() never raises; a defect here must not either
            logger.warning("run context not captured: %r", error)
            return
        self.context = context
        self._deliver_context(context)

    def _deliver_context(self, context: dict[str, Any]) -> None:
        from ..intake.record import Record

        dispatcher = self.dispatcher
        session = dispatcher._session
        if session is not None and session.writes:
            session.manifest.set_extra("context", context)
        with dispatcher._lock:
            workers = list(dispatcher._workers)
            if not workers or dispatcher._finishing:
                return
            dispatcher._seq = seq = dispatcher._seq + 1
            for worker in workers:
                worker.put(Record("config", {RUN_CONTEXT_KEY: copy.deepcopy(context)}, None, {}, None, seq))

    def stop(self) -> None:
        """At the run's finish, before its backends close: the capture (bounded wait) and a last sample."""
        if self._capture is not None:
            self._capture.join(FINISH_WAIT)
            if self._capture.is_alive():
                logger.warning(
                    "the run context was not captured within %.0f s; the run finishes without it", FINISH_WAIT
                )
        if self.sampler is not None:
            self.sampler.stop()

    @classmethod
    def start(
        cls, dispatcher: Dispatcher, options: tuple[float | None, dict[str, bool] | None]
    ) -> RunContextCapture | None:
        """Start both (``options``: the checked interval and parts) for a run with backends in this process;
        ``None`` when both are off or the run has no backend here. Never raises."""
        interval, parts = options
        if (interval is None and parts is None) or not dispatcher._workers:
            return None
        try:
            return cls(dispatcher, interval, parts)
        except Exception as error:
            logger.warning("run context and system metrics are off for this run: %r", error)
            return None
