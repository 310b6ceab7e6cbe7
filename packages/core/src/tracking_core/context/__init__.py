"""Run context: the system metrics of a run and what reproduces it, kept in the run's folder.

Map of this package:

* :mod:`.system` -- one sample of CPU, memory, disk, network and the job's GPUs (``/proc``, psutil,
  NVML, torch), under the documented ``system/...`` names;
* :mod:`.sampler` -- the daemon thread that takes a sample every interval and hands it to the run;
* :mod:`.samples` -- the run folder's ``system.jsonl``, where every sample is kept;
* :mod:`.repro` -- git state, command line, platform, packages and launcher variables, captured once;
* this module -- the options (``init(..., system_metrics=..., context=...)`` and their environment
  variables) and :class:`RunContextCapture`, which starts both when a run starts and stops them
  when it finishes.

Both are the library's own records, not the user's: by default they stay in the run folder (the
samples in ``system.jsonl``, the context in ``run.json`` under ``"context"``) and no backend sees them.
A run that asks (``system_metrics=True``, ``context=True``, or the environment variables for code the
user does not control) also sends them to every tracker that declares it takes them by overriding
:meth:`~tracking_core.GeneralTracker.log_system_metrics` / :meth:`~tracking_core.GeneralTracker.log_run_context`:
samples on their own axis (an index and a time, never the user's steps), the context once. Neither is
counted among the user's records. See docs/run-context.md.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..notices import logger
from .samples import SampleFile

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
#: ``1``/``true``/``on`` or a number of seconds sends samples to the backends, ``0``/``false``/``off`` takes
#: none at all; unset keeps them in the run folder only. The code's option wins.
SYSTEM_METRICS_ENV = "TRACKING_SYSTEM_METRICS"
#: ``1``/``true``/``on`` sends the captured context to the backends, ``0``/``false``/``off`` captures none;
#: unset keeps it in ``run.json`` only. The code's option wins.
RUN_CONTEXT_ENV = "TRACKING_RUN_CONTEXT"
#: ``run.json``'s flag: the run sent its context to its backends (``context=True``)
CONTEXT_SENT = "context_sent"
#: ``finish`` waits this long for a capture still running (a slow git) before going on without it
FINISH_WAIT = 5.0
_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")

__all__ = [
    "DEFAULT_INTERVAL",
    "PARTS",
    "RUN_CONTEXT_KEY",
    "Extras",
    "RunContextCapture",
    "context_parts",
    "extras_of",
    "system_metrics_interval",
]


class Extras(NamedTuple):
    """What a run records of its own (checked options): kept in the run folder, sent to backends when asked."""

    #: seconds between system samples; ``None``: no sampler
    interval: float | None
    #: the samples also go to every tracker that takes them
    samples_to_backends: bool
    #: the parts of the context to capture; ``None``: none
    parts: dict[str, bool] | None
    #: the captured context also goes to every tracker that takes it
    context_to_backends: bool


def extras_of(system_metrics: bool | float | None, context: bool | Mapping[str, bool] | None) -> Extras:
    """The run's :class:`Extras` from ``init``'s options, or their environment variables where the code passes ``None``."""
    interval, samples_asked = _samples_option(system_metrics)
    parts, context_asked = _context_option(context)
    return Extras(interval, samples_asked, parts, context_asked)


def _env_switch(name: str) -> str | None:
    """``None`` when unset (the default: kept in the run folder), else the lowered text."""
    text = os.environ.get(name, "").strip().lower()
    return text or None


def _samples_option(option: bool | float | None) -> tuple[float | None, bool]:
    if option is None:
        text = _env_switch(SYSTEM_METRICS_ENV)
        if text is None:
            return DEFAULT_INTERVAL, False
        if text in _ON:
            return DEFAULT_INTERVAL, True
        if text in _OFF:
            return None, False
        try:
            seconds = float(text)
        except ValueError:
            raise ValueError(f"{SYSTEM_METRICS_ENV} must be 0, 1 or a number of seconds, got {text!r}") from None
        return (seconds, True) if seconds > 0 else (None, False)
    interval = system_metrics_interval(option)
    return interval, interval is not None


def _context_option(option: bool | Mapping[str, bool] | None) -> tuple[dict[str, bool] | None, bool]:
    if option is None:
        text = _env_switch(RUN_CONTEXT_ENV)
        if text is None:
            return dict.fromkeys(PARTS, True), False
        if text in _OFF:
            return None, False
        if text in _ON:
            return dict.fromkeys(PARTS, True), True
        raise ValueError(f"{RUN_CONTEXT_ENV} must be 0 or 1, got {text!r}")
    parts = context_parts(option)
    return parts, parts is not None


def system_metrics_interval(option: bool | float) -> float | None:
    """Seconds between samples for ``init(system_metrics=...)``, or ``None`` for off."""
    if isinstance(option, bool):
        return DEFAULT_INTERVAL if option else None
    if isinstance(option, (int, float)) and option > 0:
        return float(option)
    raise ValueError(f"system_metrics must be True, False or a positive number of seconds, got {option!r}")


def context_parts(option: bool | Mapping[str, bool]) -> dict[str, bool] | None:
    """Which parts ``init(context=...)`` captures (:data:`PARTS`), or ``None`` for none."""
    if isinstance(option, bool):
        return dict.fromkeys(PARTS, True) if option else None
    if isinstance(option, Mapping):
        unknown = sorted(str(part) for part in option if part not in PARTS)
        if unknown:
            raise ValueError(f"context: unknown part(s) {unknown}; the parts are {list(PARTS)}")
        parts = {part: bool(option.get(part, True)) for part in PARTS}
        return parts if any(parts.values()) else None
    raise ValueError(f"context must be True, False or {{part: bool}} over {list(PARTS)}, got {option!r}")


def send_context(dispatcher: Dispatcher, context: dict[str, Any]) -> None:
    """The captured context to every worker of a started run, as a side record (``log_run_context``)."""
    from ..intake.record import Record

    with dispatcher.state.lock:
        workers = list(dispatcher.state.workers)
        if not workers or dispatcher.state.finishing:
            return
        for worker in workers:
            worker.put(Record("context", copy.deepcopy(context), None, {}, None, None))


class RunContextCapture:
    """The sampling thread and the one-off capture of a started run; :meth:`stop` at the run's finish.

    Every sample is kept in the run folder's ``system.jsonl`` (:mod:`.samples`) and the context in
    ``run.json``; when the run asks, each also goes to the backends' queues as a side record (kind
    ``system`` or ``context``, no ``seq``) that the delivery hands only to a tracker overriding the
    matching method and never counts among the user's records. The user's step is never read or moved.
    """

    def __init__(self, dispatcher: Dispatcher, extras: Extras) -> None:
        self.dispatcher = dispatcher
        self.extras = extras
        self.sampler: SamplerThread | None = None
        self.context: dict[str, Any] | None = None
        self._capture: threading.Thread | None = None
        self._gpu_names: list[str] | None = None
        run_dir = Path(str(dispatcher.run_dir))
        session = dispatcher.state.session
        self._samples = SampleFile(run_dir) if session is not None and session.writes else None
        self._next_index = 0
        if extras.interval is not None:
            from .sampler import SamplerThread

            self.sampler = SamplerThread(self._make_sampler, self._emit_sample, extras.interval).start()
        if extras.parts is not None:
            self._capture = threading.Thread(
                target=self._capture_context, args=(run_dir, extras.parts), name="tracking-run-context", daemon=True
            )
            self._capture.start()

    # -- system metrics ----------------------------------------------------------------------
    def _make_sampler(self) -> Any:
        from .system import SystemSampler

        sampler = SystemSampler(self.dispatcher.logging_dir or ".", per_rank=self.dispatcher.options.per_rank)
        if sampler.gpu is not None:
            try:
                self._gpu_names = sampler.gpu.names()
            except Exception:
                pass
        return sampler

    def _emit_sample(self, values: dict[str, float], timestamp: float) -> None:
        if self._samples is not None:
            index = self._samples.append(values, timestamp)
        else:
            index, self._next_index = self._next_index, self._next_index + 1
        if not self.extras.samples_to_backends:
            return
        dispatcher = self.dispatcher
        record: tuple[Any, ...] = ("system", values, index, {}, timestamp, None)
        with dispatcher.state.lock:
            puts = list(dispatcher.state.puts)
        for put in puts:  # outside the lock: a full queue makes this thread wait, never log()
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
        dispatcher = self.dispatcher
        session = dispatcher.state.session
        if session is not None and session.writes:
            session.manifest.set_extra("context", context)
            if self.extras.context_to_backends:  # a replay into a new run sends it to that run's backends too
                session.manifest.set_extra(CONTEXT_SENT, True)
        if self.extras.context_to_backends:
            send_context(dispatcher, context)

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
    def start(cls, dispatcher: Dispatcher, extras: Extras) -> RunContextCapture | None:
        """Start both for a run with backends in this process; ``None`` when both are off or the run has
        no backend here (another rank of a one-run-per-job run). Never raises."""
        if (extras.interval is None and extras.parts is None) or not dispatcher.state.workers:
            return None
        try:
            return cls(dispatcher, extras)
        except Exception as error:
            logger.warning("run context and system metrics are off for this run: %r", error)
            return None
