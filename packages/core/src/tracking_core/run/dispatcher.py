"""``Dispatcher``: fans every call out to one ``BackendWorker`` per tracker.

The caller's cost per ``log`` is a snapshot of the values and one queue append per backend; the
values, step and config semantics of the whole library are applied here, once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..context import extras_of
from ..contract.distributed import get_rank, get_world_size
from ..contract.selection import DEFAULT_LOGGING_DIR, TrackerSpec, resolve_specs
from ..contract.tracker import GeneralTracker
from ..delivery.worker import BackendWorker
from ..intake.preflight import checked_logging_dir
from ..intake.record import Record
from ..intake.values import snapshot
from ..notices import notice
from ..report import FinishReport
from . import calls, closing, lifecycle, managed, setup
from .managed import UNWRAP_TIMEOUT as UNWRAP_TIMEOUT  # kept importable from here
from .options import DEFAULT_FINISH_TIMEOUT, DEFAULT_FLUSH_INTERVAL, RunOptions, checked_resume, checked_step
from .options import DELIVERY_ENV as DELIVERY_ENV  # kept importable from here
from .options import MAX_STEP as MAX_STEP  # kept importable from here
from .state import RunState

_EMPTY: dict[str, Any] = {}
_now = time.time


class Dispatcher:
    """Sends every call to all selected trackers without blocking the caller.

    Example::

        run = Dispatcher(log_with=["jsonl", "tensorboard"], logging_dir="runs")
        run.init_trackers("my-project", config={"lr": 3e-4})
        for step in range(100):
            run.log({"train/loss": 1 / (step + 1)}, step=step)
        report = run.finish()   # a FinishReport; str(report) is a table

    Options: ``blocking=True`` calls trackers in the caller's thread (still isolated);
    ``queue_size`` bounds each backend's queue and ``on_full`` says what ``log`` does when a
    backend's queue is full: ``"block"`` waits for room (lossless, default; a backend stuck 5 s in
    one SDK call has its queue spilled instead), ``"spill"`` never waits (the queue goes to the
    backend's spill journal, which the backend then takes in order: lossless, at the cost of disk
    and a later ``finish``), ``"drop"`` drops (counted in the report); ``on_error`` is ``"warn"`` (default) or ``"raise"``
    (the next ``log``/``flush``/``finish`` raises :class:`TrackingError`).

    ``resume=True`` continues the project's most recently used run under ``logging_dir`` (a new run
    if there is none), ``resume="<run id>"`` that run: the run keeps its folder and id, each backend
    that can reopens its SDK run (see ``run.json`` in the run folder), and ``step=None`` continues
    after the last step the earlier process flushed. ``resume_step=N`` (a checkpoint's global step)
    continues at step ``N`` instead: what the earlier process logged from ``N`` on is superseded
    (:mod:`tracking_core.store.rewind`).

    ``delivery="process"`` (or ``TRACKING_DELIVERY=process`` in the environment, when the code
    passes no ``delivery``) runs the backends in a delivery process started at ``init_trackers``
    (a fresh interpreter, never a fork), so SDK work never takes the training loop's GIL; the
    training process keeps the snapshot, one queue and one feeder thread. Trackers given as
    instances, or defined in the script itself, stay in threads here. If the delivery process dies,
    its backends carry on in threads here from the last record each one holds.

    What the run records of its own stays in its folder unless asked for: a sample of CPU, memory, disk,
    network and the job's GPUs every 10 s in ``system.jsonl``, and what reproduces the run (git state,
    command, platform, packages, launcher variables, captured once off the training thread) in
    ``run.json``. ``system_metrics=True`` (or a number of seconds) also sends the samples to every
    backend that takes them, on their own axis, in place of the SDK's own monitor; ``context=True`` (or
    ``{part: bool}``) sends the context to the backends' native places. ``False`` takes none at all.
    Where the code passes nothing, ``TRACKING_SYSTEM_METRICS`` / ``TRACKING_RUN_CONTEXT`` decide
    (``1`` asks, ``0`` takes none). See docs/run-context.md.

    Under a launcher (torchrun, accelerate, SLURM, MPI) only global rank 0 runs trackers: one run
    per job. ``per_rank=True`` gives every rank its own run instead, grouped under the job's run
    id, which rank 0 chooses and the others receive (``torch.distributed`` when initialised, else
    ``TRACKING_RUN_ID``, else a file in ``logging_dir``); each rank keeps its folder
    ``<logging_dir>/<project>/<run id>/rank-<N>``, and ``resume`` resumes every rank's run.
    """

    def __init__(
        self,
        log_with: TrackerSpec | Iterable[TrackerSpec] | None = None,
        logging_dir: str | os.PathLike[str] | None = None,
        *,
        blocking: bool = False,
        queue_size: int = 10_000,
        on_full: str = "block",
        on_error: str = "warn",
        finish_timeout: float = DEFAULT_FINISH_TIMEOUT,
        flush_interval: float = DEFAULT_FLUSH_INTERVAL,
        retry_backoff: tuple[float, float] = (1.0, 300.0),
        resume: bool | str = False,
        resume_step: int | None = None,
        per_rank: bool = False,
        delivery: str | None = None,
        system_metrics: bool | float | None = None,
        context: bool | dict[str, bool] | None = None,
    ) -> None:
        options = RunOptions.checked(
            blocking=blocking,
            queue_size=queue_size,
            on_full=on_full,
            on_error=on_error,
            finish_timeout=finish_timeout,
            flush_interval=flush_interval,
            retry_backoff=retry_backoff,
            per_rank=per_rank,
            delivery=delivery,
        )
        #: the options as checked: how every backend's delivery behaves (read from here, never copied)
        self.options = options
        #: the run to continue (``True``: the project's latest, or a run id); settable until ``init_trackers``
        self.resume: bool | str = checked_resume(resume)
        #: the step the run carries on at (a checkpoint's global step); earlier points from it on are superseded
        self.resume_step = None if resume_step is None else checked_step(resume_step)
        self.logging_dir = checked_logging_dir(logging_dir)
        self.rank = get_rank()
        self.world_size = get_world_size()
        self.project_name: str | None = None
        self.run_id: str | None = None
        self.run_dir: Path | None = None
        self.resumed = False
        #: what the run holds while it runs, shared with its helpers in ``run/`` (run/state.py)
        self.state = RunState(
            specs=resolve_specs(log_with, self.logging_dir),
            # docs/run-context.md: checked here, started with the run (context/__init__.py)
            context_options=extras_of(system_metrics, context),
        )

    # -- set-up ----------------------------------------------------------------------------
    def init_trackers(
        self, project_name: str, config: Any = None, init_kwargs: dict[str, dict[str, Any]] | None = None
    ) -> Dispatcher:
        """Create every tracker and start it in its worker; returns at once."""
        setup.init_trackers(self, project_name, config, init_kwargs)
        return self

    def make_worker(self, tracker: GeneralTracker, delivery_for: Any) -> BackendWorker:
        """The worker a backend of this process runs in: the one hook a subclass overrides (Accelerate's
        ``Accelerator`` runs its trackers in the caller's thread)."""
        return BackendWorker(
            tracker,
            delivery_for,
            queue_size=self.options.queue_size,
            on_full=self.options.on_full,
            blocking=self.options.blocking,
        )

    # -- process lifecycle -------------------------------------------------------------------------
    # -- the hot path ------------------------------------------------------------------------
    def log(
        self,
        values: dict[str, Any],
        step: int | None = None,
        log_kwargs: dict[str, dict[str, Any]] | None = None,
        *,
        timestamp: float | None = None,
    ) -> None:
        """Record ``values`` at ``step`` (``None``: the previous step + 1, from 0) on every tracker.

        ``timestamp`` (Unix seconds) defaults to now; replays pass the original time.
        """
        if not self.state.puts:
            calls.not_running(self, "log")
            return
        flat, rejected = snapshot(values)
        if rejected:
            calls.reject(self, rejected)
        if timestamp is None:
            timestamp = _now()
        with self.state.lock:
            if step is None:
                step = self.state.step + 1
            elif type(step) is not int or not 0 <= self.state.step <= step <= MAX_STEP:
                step = calls.checked_step_after(self, step)
            self.state.step = step
            self.state.seq = seq = self.state.seq + 1
            if log_kwargs:
                for worker in self.state.workers:
                    worker.put(Record("log", flat, step, log_kwargs.get(worker.name, _EMPTY), timestamp, seq))
            else:
                # One tuple in Record's field order, shared by every queue; the workers make it a Record
                # (tuple.__new__ costs the caller 90 ns more than a tuple display).
                record = ("log", flat, step, _EMPTY, timestamp, seq)
                for put in self.state.puts:  # read under the lock: finish() or a take-over may have replaced it
                    put(record)
        if self.state.pending_error is not None:  # a past failure; this call's record is already queued
            self.state.raise_pending()

    # -- configuration after start ---------------------------------------------------------
    def log_config(self, values: Any) -> None:
        """Add to the run's configuration after ``init_trackers`` (hyper-parameters known late).

        Lightning and transformers hand hyper-parameters over once training starts, sweeps add
        derived ones: ``values`` gets the same sanitising and redaction as ``init``'s ``config``
        and is merged into each backend's config facility (``store_init_configuration`` again,
        with the new keys). A key given again with a new value replaces it where the SDK allows
        (MLflow params are write-once: see that backend's notes).
        """
        calls.queue_config(self, values)

    # -- optional capabilities ---------------------------------------------------------------
    def log_images(
        self, values: dict[str, Any], step: int | None = None, log_kwargs: dict[str, dict[str, Any]] | None = None
    ) -> None:
        """``{key: image or list of images}``; numpy HW/HWC arrays, tensors, PIL images."""
        payload = calls.images_payload(values, self.state.rejected)
        if payload:
            calls.fan_out(self, "log_images", ("images", payload), step, log_kwargs)

    def log_table(
        self,
        table_name: str,
        columns: list[str] | None = None,
        data: Iterable[Sequence[Any]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
        log_kwargs: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        """A table from ``columns`` and ``data`` rows, or a pandas ``dataframe``; the rows are copied now.

        Bad arguments raise here, naming the parameter, so a typo fails at the call and not later in a worker.
        """
        payload = calls.table_payload(table_name, columns, data, dataframe)
        if isinstance(payload, calls.Refused):
            return calls.reject(self, {payload.what: payload.problem})
        calls.fan_out(self, "log_table", ("table", payload), step, log_kwargs)

    def log_figure(
        self, figure: Any, name: str, step: int | None = None, log_kwargs: dict[str, dict[str, Any]] | None = None
    ) -> None:
        """A matplotlib or plotly figure, copied now: it may be changed, reused or closed once this returns."""
        payload = calls.figure_payload(figure, name)
        if isinstance(payload, calls.Refused):
            return calls.reject(self, {payload.what: payload.problem})
        calls.fan_out(self, "log_figure", ("figure", payload), step, log_kwargs)

    def log_histogram(
        self,
        name: str,
        values: Any = None,
        *,
        counts: Any = None,
        edges: Any = None,
        step: int | None = None,
        bins: int = 64,
        log_kwargs: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        """A distribution (weights, gradients, activations) at ``step``.

        Give raw ``values`` (a list, numpy array or tensor, binned here into ``bins`` equal bins,
        so they may change once this returns) or ``counts`` over ``edges`` binned already. Backends
        with histograms store their own (TensorBoard, W&B, Aim, Comet, ClearML, ...); the others
        store ``<name>/count``, ``/min``, ``/max``, ``/mean`` and ``/std`` as metrics, and say so once.
        """
        payload = calls.histogram_payload(name, values, counts, edges, bins)
        if isinstance(payload, calls.Refused):
            return calls.reject(self, {payload.what: payload.problem})
        calls.fan_out(
            self,
            "log_histogram",
            ("histogram", payload),
            step,
            log_kwargs,
            instead=f"{payload[0]}/count, /min, /max, /mean and /std as metrics",
        )

    def log_artifact(self, local_path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        """A file for the backends that store artifacts; it must exist now (the path is checked at the call)."""
        calls.fan_out(self, "log_artifact", ("artifact", calls.artifact_payload(local_path, artifact_path)), None, None)

    def log_artifacts(self, local_dir: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        """A folder's files for the backends that store artifacts; the folder must exist now."""
        calls.fan_out(
            self, "log_artifacts", ("artifacts", calls.artifacts_payload(local_dir, artifact_path)), None, None
        )

    # -- access ------------------------------------------------------------------------------
    @property
    def trackers(self) -> list[GeneralTracker]:
        """The tracker objects of this run, as ``Accelerator.trackers`` lists them (empty on other ranks)."""
        return [worker.tracker for worker in self.state.all_workers if worker.name not in self.state.internal]

    @property
    def finished(self) -> bool:
        """True once ``finish()`` began, by whichever holder of the run called it: later calls are ignored."""
        return self.state.finishing

    @property
    def is_main_process(self) -> bool:
        """Whether this process runs the trackers (global rank 0), read once when the dispatcher was made."""
        return self.rank == 0

    def get_tracker(self, name: str, unwrap: bool = False) -> Any:
        """The tracker called ``name``; ``unwrap=True`` gives its SDK object (waits for start-up)."""
        return managed.held_tracker(self, name, unwrap)

    # -- synchronisation ---------------------------------------------------------------------
    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything logged so far is durable in every healthy backend (or in its spill)."""
        if self.state.pending_error is not None:
            self.state.raise_pending()
        return closing.flush_workers(self, self.state.workers, timeout)

    def finish(self, timeout: float | None = None) -> FinishReport:
        """Drain and close every backend; a backend that exceeds ``timeout`` is abandoned and spilled."""
        return closing.finish(self, timeout)

    end_training = finish

    def __enter__(self) -> Dispatcher:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> None:
        if kind is not None and not (kind is SystemExit and getattr(error, "code", None) in (0, None)):
            self.state.ended_by = lifecycle.status_of(kind)
        self.finish()


def init(
    project_name: str,
    log_with: TrackerSpec | Iterable[TrackerSpec] | None = None,
    logging_dir: str | os.PathLike[str] = DEFAULT_LOGGING_DIR,
    config: Any = None,
    init_kwargs: dict[str, dict[str, Any]] | None = None,
    **options: Any,
) -> Dispatcher:
    """Start a run: ``Dispatcher(log_with, logging_dir, **options).init_trackers(project_name, ...)``."""
    dispatcher = Dispatcher(log_with=log_with, logging_dir=logging_dir, **options)
    dispatcher.init_trackers(project_name, config=config, init_kwargs=init_kwargs)
    if dispatcher.rank == 0:
        notice(f"run {dispatcher.run_id} of {project_name!r}: {', '.join(t.name for t in dispatcher.trackers)}")
    return dispatcher
