"""The tracker contract every backend implements (compatible with ``accelerate.tracking``)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, TypeVar

from ..errors import PartialDelivery
from .distributed import is_main_process
from .histogram import Histogram, histogram_summary

if TYPE_CHECKING:
    from ..store.rewind import RewindPoint

F = TypeVar("F", bound=Callable[..., Any])

#: The optional methods a backend may override; a tracker "has" a capability when it overrides it.
CAPABILITIES = ("log_images", "log_table", "log_figure", "log_artifact", "log_artifacts")
#: The metric the default :meth:`GeneralTracker.rewind` stores at the rewind step (its value: the step), for
#: a backend with no way to drop the points an earlier process stored; readers of the run know it.
MARKER_KEY = "tracking/rewind"


def on_main_process(function: F) -> F:
    """Run a tracker method only on global rank 0 when the tracker is ``main_process_only``.

    The rank is read at call time, so decorating a method never touches distributed state.
    """

    @functools.wraps(function)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "main_process_only", False) and not is_main_process():
            return None
        return function(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class RunContext(NamedTuple):
    """The run a tracker belongs to, set by the dispatcher before ``start()``.

    ``run_dir`` is ``<logging_dir>/<project>/<run_id>``, where the journal and spill journals live;
    a backend with per-run files may put them there so one folder holds the whole run.

    ``resume`` is set when the run continues an earlier process's run (``init(..., resume=...)``):
    what this backend's :meth:`GeneralTracker.resume_state` returned then, so ``start()`` reopens
    the same run in the SDK instead of creating one. ``None`` means start a new run.
    """

    project: str
    run_id: str
    run_dir: Path
    logging_dir: Path
    resume: dict[str, Any] | None = None
    #: global rank of this process and the job's process count
    rank: int = 0
    world_size: int = 1
    #: per-rank mode (``per_rank=True``): the job's run id, shared by every rank; name this rank's
    #: run ``<run name>-rank<N>`` and group the ranks as the SDK groups runs. ``None``: one run per job.
    group: str | None = None
    #: ``resume_step`` went back before the earlier process's last step: supersede what the reopened run
    #: stored from this step on (:meth:`GeneralTracker.rewind`, called by the delivery once)
    rewind: RewindPoint | None = None
    #: every rewind of the run (:mod:`tracking_core.store.rewind`): records they supersede are never delivered
    superseded: tuple[RewindPoint, ...] = ()
    #: the run asked for the library's uniform system sampler (``init(system_metrics=True)``) and this tracker
    #: takes its samples (:meth:`GeneralTracker.log_system_metrics`): switch the SDK's own monitor off in
    #: ``start()``, so nothing is recorded twice. ``False``: leave the SDK's own monitor as the SDK defaults it.
    system_metrics: bool = False
    #: when the run began (Unix seconds): ``init()`` of its first process, ``run.json``'s ``started``. A backend
    #: whose SDK run is created later, in its worker, gives it to the SDK as the run's start. ``None``: not known.
    started: float | None = None


class RunEnd(NamedTuple):
    """How the run ended, set on each tracker (``tracker.run_end``) just before its ``finish()``.

    ``status`` is ``run.json``'s: ``finished``; ``crashed: <error type>`` (an uncaught exception, or one
    that left the ``with`` block); ``killed: KeyboardInterrupt`` (Ctrl-C), ``killed: SIGTERM``, or
    ``killed`` (the training process died and a delivery process closes the run). ``ended`` is when the run
    ended (Unix seconds: ``finish()`` was called, not when this backend got through its queue), ``None``
    when not known. A backend ends its SDK run in the SDK's own terms from :attr:`outcome` or :attr:`exit_code`.
    """

    status: str = "finished"
    ended: float | None = None

    @property
    def outcome(self) -> str:
        """``"finished"``, ``"failed"`` (crashed) or ``"killed"`` (interrupted, terminated, died)."""
        kind = self.status.partition(":")[0].strip()
        return kind if kind in ("finished", "killed") else "failed"

    @property
    def exit_code(self) -> int:
        """The process's exit code as a shell reports it: 0, 1 (crashed), 130 (Ctrl-C), 143 (SIGTERM), 137."""
        if self.outcome == "finished":
            return 0
        if self.outcome == "failed":
            return 1
        reason = self.status.partition(":")[2].strip()
        return {"KeyboardInterrupt": 130, "SIGINT": 130, "SIGTERM": 143}.get(reason, 137)


def store_marker(tracker: GeneralTracker, step: int) -> None:
    """The marker of a rewind in a backend's own history: ``tracking/rewind`` = ``step`` at ``step``."""
    tracker.log({MARKER_KEY: step}, step=step)


class GeneralTracker:
    """Base class of every tracker.

    A subclass sets ``name`` and ``requires_logging_directory`` and provides a ``tracker`` property
    that returns the SDK object. Construction must do no I/O and import no SDK: ``start()`` does
    that, in the backend's worker thread when driven by the :class:`~tracking_core.Dispatcher`.

    Beyond the accelerate contract, a backend may override:

    * ``flush()`` -- make what was logged durable; called by ``Dispatcher.flush`` and at intervals.
    * ``log_batch(entries)`` -- take several ``(values, step, kwargs)`` metric records at once.
    * ``sanitize_key(key)`` -- rewrite metric keys the SDK refuses; the dispatcher warns once
      per key and records the mapping in the finish report.
    * ``wants_timestamps`` -- ``True`` to get ``timestamp=`` (Unix seconds at the caller's ``log``)
      in the kwargs of ``log``/``log_batch``, so the SDK stores when a point was logged, not when the
      worker delivered it.
    * ``run_context`` -- a :class:`RunContext` the dispatcher sets before ``start()`` (``None`` when
      the tracker is used on its own); ``run_context.started`` is when the run began.
    * ``run_end`` -- a :class:`RunEnd` the dispatcher sets just before ``finish()``: how the run ended
      (finished, crashed, killed) and when, for the SDK's run status and end time. A tracker used on its
      own, or finished alone, keeps the default (finished, time unknown).
    * ``run_id_keyword`` -- the ``init_kwargs`` keyword by which the backend names its run folder
      (TensorBoard's ``run_id``): a value given there becomes the run's own id, so a second run under it
      is refused unless it resumes.
    * ``report_notes()`` -- what a person should know about this run in the finish report.
    * ``resume_state()`` -- the SDK's identity of the run (run id, hash, ...), so a restarted job can
      continue it: the dispatcher passes it back in ``run_context.resume`` before ``start()``.
    * ``durable_on_return`` -- ``True`` when ``log``/``log_batch`` return only once the points are
      where the training process's death cannot lose them (written to a file, committed to a
      database); ``False`` when the SDK buffers them until ``flush()``. The dispatcher counts a record
      as delivered at that moment. Default (``None``): ``True`` unless the class overrides ``flush``.
    * ``durable_at_finish`` -- ``True`` when a ``finish()`` that returns has itself made everything
      logged durable (it waits for the SDK's writer), so the dispatcher does not ``flush()`` first: a
      flush that waits for that writer too (W&B's) would make every run's end wait twice. Records
      since the last flush then count as delivered when ``finish()`` returns, and go to the spill
      if it raises.
    * ``begin_flush()`` -- for a backend whose ``flush()`` waits for the SDK's own writer (W&B's
      periodic write): start making everything logged so far durable and return at once, with a
      function that says (without waiting) whether it is. The periodic flush then no longer stops
      delivery while the writer catches up; the records it covers count as delivered once that
      function says so. An explicit ``run.flush()`` still calls ``flush()``.
    * ``log_run_context(context)`` -- put the captured run context (docs/run-context.md) in the
      SDK's native place. Called only when the run asks for it (``init(context=True)``) and only on a
      tracker that overrides it: a tracker that does not gets nothing but the user's own calls.
    * ``log_system_metrics(values, index, timestamp)`` -- one sample of the library's system sampler, on
      its own axis. Called only when the run asks for it (``init(system_metrics=True)``) and only on a
      tracker that overrides it.
    * ``rewind(step)`` -- the resumed run went back to ``step`` (``resume_step``): supersede what the
      earlier process stored from ``step`` on, as the SDK allows, and say what a viewer shows.
    * ``accepts_non_finite`` -- ``False`` when the SDK mangles NaN/inf (they are then dropped with
      one warning per key instead of being stored wrongly).
    """

    name: ClassVar[str]
    requires_logging_directory: ClassVar[bool]
    main_process_only: ClassVar[bool] = True
    accepts_non_finite: ClassVar[bool] = True
    wants_timestamps: ClassVar[bool] = False
    durable_on_return: ClassVar[bool | None] = None
    durable_at_finish: ClassVar[bool] = False
    run_id_keyword: ClassVar[str | None] = None
    #: ``True``: ``log``, ``store_init_configuration`` and ``log_artifact(s)`` also take ``seq=`` (the record's
    #: run-wide number): the run's journal keeps it, for resume and replay
    wants_record_ids: ClassVar[bool] = False
    run_context: RunContext | None = None
    run_end: RunEnd = RunEnd()

    if TYPE_CHECKING:  # declared for the checker only: __init__ looks for each subclass's own `tracker`

        @property
        def tracker(self) -> Any:
            """The SDK object (run, writer, ...) behind this tracker."""

    def __init__(self, _blank: bool = False) -> None:
        if _blank:
            return
        missing = [
            f"`{attribute}`"
            for attribute in ("name", "requires_logging_directory", "tracker")
            if attribute not in dir(self)
        ]
        if missing:
            raise NotImplementedError(
                f"{type(self).__name__} is missing required attributes: {', '.join(missing)}. "
                "Define them in the class body (`tracker` as a property returning the SDK object)."
            )

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Create the SDK run. Called once, before anything else is sent."""

    def store_init_configuration(self, values: dict[str, Any]) -> None:
        """Record the run's hyper-parameters (a sanitised deep copy, see ``tracking_core.intake.config``)."""

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """Record a flat dict of numbers and strings at ``step``."""

    def log_batch(self, entries: Sequence[tuple[dict[str, Any], int | None, dict[str, Any]]]) -> None:
        """Record several ``(values, step, kwargs)`` entries; override when the SDK has a batch API.

        An override that can fail part-way raises :class:`~tracking_core.PartialDelivery` saying how
        many entries it stored, as this one does, so those are not delivered twice.
        """
        for index, (values, step, kwargs) in enumerate(entries):
            try:
                self.log(values, step=step, **kwargs)
            except Exception as error:
                if index == 0:
                    raise
                raise PartialDelivery(index) from error

    def flush(self) -> None:
        """Make everything logged so far durable (written to disk or sent)."""

    def finish(self) -> None:
        """Close the run, with ``run_end``'s status where the SDK keeps one. The dispatcher calls it once."""

    def begin_flush(self) -> Callable[[], bool]:
        """Start making everything logged so far durable and return at once, with a function that says
        (without waiting) whether it is. Overriding this declares that the backend can (W&B, whose
        ``flush()`` waits for its writer): the periodic flush then no longer stops delivery meanwhile.
        """
        raise self._unsupported("begin_flush")

    def sanitize_key(self, key: str) -> str:
        """Return the key as this backend can store it (identity unless the SDK refuses some keys)."""
        return key

    def read_back_metrics(self) -> dict[str, dict[int, Any]]:
        """The metric series this run stored, read with the SDK's own reader, after ``finish()``.

        ``tracking demo`` shows it to prove what each backend really holds. Leave it unimplemented
        when the data cannot be read back locally.
        """
        raise NotImplementedError(f"tracker {getattr(self, 'name', type(self).__name__)!r} cannot read its data back")

    def read_back_history(self) -> dict[str, list[tuple[int, Any]]]:
        """Every metric point this run stored, per key, as ``(step, value)`` in storage order.

        Unlike :meth:`read_back_metrics`, a point stored twice appears twice: the reliability tests
        count lost and duplicated points with it, and a resumed run (or a replay) asks it how far an
        earlier process got before delivering what that process may have handed over. So a run the SDK
        has not written anything to yet reads back as ``{}``, not as an error (an error reads as "cannot
        say", and those records are then not delivered again). The default derives it from
        ``read_back_metrics`` (one point per step), so override it where the SDK's reader lists every
        stored point.
        """
        return {key: sorted(series.items()) for key, series in self.read_back_metrics().items()}

    def read_back_system_metrics(self) -> dict[str, list[tuple[int, float]]]:
        """The system samples this run stored where the SDK keeps system metrics, after ``finish()``.

        Per ``system/...`` name as logged (a backend that stores them under its SDK's own names maps
        them back), as ``(sample index, value)`` in storage order: the shared tests check with it that
        every sample of ``log_system_metrics`` reached the SDK's own place. Leave it unimplemented when
        the samples cannot be read back locally.
        """
        raise NotImplementedError(
            f"tracker {getattr(self, 'name', type(self).__name__)!r} cannot read its samples back"
        )

    def read_back_images(self) -> dict[str, list[tuple[int, Any]]]:
        """Every image this run stored, per key, as ``(step, HW or HWC uint8 array)`` in storage order.

        Read with the SDK's own reader after ``finish()``; the shared tests compare it with what
        was logged, one test per image layout. Leave it unimplemented where images cannot be read back.
        """
        raise NotImplementedError(f"tracker {getattr(self, 'name', type(self).__name__)!r} cannot read images back")

    def resume_state(self) -> dict[str, Any] | None:
        """What a later process needs to continue this run in the SDK (JSON-serialisable), or ``None``.

        Called in the worker right after ``start()``; the dispatcher keeps it in the run's
        ``run.json`` and hands it back as ``run_context.resume`` when the run is resumed. ``None``
        (the default) means the backend cannot reopen a run: a resumed run gets a new one there.
        """
        return None

    def log_run_context(self, context: dict[str, Any]) -> None:
        """Record what reproduces the run (git state, command, platform, packages, launcher variables).

        ``context`` is the dict docs/run-context.md describes, captured once per run off the training
        thread; the files it names (``git.diff``, ``packages``) are in the run's folder. Overriding this
        declares that the tracker wants it: the dispatcher calls it once when the run asks for the context
        (``init(context=True)``), never otherwise. Put it where the SDK shows such things (MLflow's
        ``mlflow.source.*`` tags, W&B's git fields, ...).
        """
        raise self._unsupported("log_run_context")

    def log_system_metrics(self, values: dict[str, float], index: int, timestamp: float) -> None:
        """Record one sample of the library's system sampler (``system/...`` names, docs/run-context.md).

        Samples live on their own axis, never on the user's steps: ``index`` counts the run's samples
        from 0 and ``timestamp`` is the Unix time it was taken, the way MLflow and W&B keep system
        metrics. Overriding this declares that the tracker wants samples: the dispatcher calls it only
        when the run asks (``init(system_metrics=True)``), and then sets ``run_context.system_metrics``
        before ``start()`` so the SDK's own monitor can be switched off. A sample the backend cannot
        take is counted in the report's samples line, never among the user's records.
        """
        raise self._unsupported("log_system_metrics")

    def rewind(self, step: int) -> str:
        """The reopened run continues at ``step`` after a restart from a checkpoint (``resume_step``).

        Called once, before the first record of this process reaches the backend. Override it where the
        SDK can drop or overwrite the points the earlier process stored from ``step`` on. This default,
        for append-only histories, stores a marker: the metric ``tracking/rewind`` with the value
        ``step`` at ``step``; points at ``step`` or later logged before the marker's time are superseded.
        Returns the finish report's note.
        """
        store_marker(self, step)
        return (
            f"rewound to step {step}: this SDK keeps the earlier process's points from step {step} on; "
            f"the {MARKER_KEY} marker at step {step} says where this process took over"
        )

    def add_note(self, line: str) -> None:
        """Keep a line for the finish report (once, however often the same line is added)."""
        notes = self.__dict__.setdefault("_notes", [])
        if line not in notes:
            notes.append(line)

    def report_notes(self) -> list[str]:
        """Lines for the finish report, e.g. "fell back to offline: the server did not answer".

        The default returns what :meth:`add_note` kept; override to add lines computed at finish.
        """
        return list(self.__dict__.get("_notes", ()))

    def _wait_for_start(self) -> None:
        """Block (bounded) until the dispatcher's worker has run ``start()``; call first in SDK-object properties.

        A tracker a dispatcher manages starts in its worker thread, so ``tracker.run`` read by the
        training script right after ``init_trackers`` would otherwise be ``None``. No-op for a tracker
        used on its own and inside the worker.
        """
        manager = self.__dict__.get("_manager")
        if manager is not None:
            manager.wait_started()

    # -- optional capabilities ---------------------------------------------------------------
    def _unsupported(self, capability: str) -> NotImplementedError:
        return NotImplementedError(
            f"tracker {getattr(self, 'name', type(self).__name__)!r} does not support {capability}"
        )

    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """Record images: ``{key: image or list of images}`` (numpy HW/HWC arrays, PIL images)."""
        raise self._unsupported("log_images")

    def log_table(
        self,
        table_name: str,
        columns: list[str] | None = None,
        data: list[list[Any]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
        **kwargs: Any,
    ) -> None:
        """Record a table given as ``columns`` plus ``data`` rows, or as a pandas ``dataframe``."""
        raise self._unsupported("log_table")

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        """Record a matplotlib (or plotly) figure; the dispatcher hands over its own copy, free to draw."""
        raise self._unsupported("log_figure")

    def log_histogram(self, name: str, histogram: Histogram, step: int | None = None, **kwargs: Any) -> None:
        """Record a distribution; override to map it onto the SDK's own histogram.

        This default keeps what a metrics-only backend can show: ``<name>/count``, ``/min``,
        ``/max``, ``/mean`` and ``/std`` through :meth:`log` (the dispatcher says so once).
        """
        self.log(histogram_summary(name, histogram), step=step, **kwargs)

    def log_artifact(self, local_path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        """Store a copy of one file, under ``artifact_path`` when given."""
        raise self._unsupported("log_artifact")

    def log_artifacts(self, local_dir: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        """Store a copy of every file under a folder, under ``artifact_path`` when given."""
        raise self._unsupported("log_artifacts")


def has_capability(tracker: GeneralTracker | type, capability: str) -> bool:
    """True when the tracker's class overrides ``capability`` (one of :data:`CAPABILITIES`)."""
    cls = tracker if isinstance(tracker, type) else type(tracker)
    return getattr(cls, capability, None) is not getattr(GeneralTracker, capability)


def capabilities_of(tracker: GeneralTracker | type) -> list[str]:
    """The optional methods the tracker implements, so callers skip, rather than fail on, the others."""
    return [capability for capability in CAPABILITIES if has_capability(tracker, capability)]
