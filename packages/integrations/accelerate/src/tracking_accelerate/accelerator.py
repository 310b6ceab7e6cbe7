"""``Accelerator``: accelerate's own, with experiment tracking handed to a ``tracking_core.Dispatcher``.

Everything but tracking is accelerate's code, untouched. The tracking methods keep accelerate's names,
arguments and rank rules (trackers run on the main process only; other ranks get stand-ins that accept
every call), and gain the dispatcher's: ``log`` returns after a snapshot and a queue append, each
backend is delivered by its own worker thread, one failing backend cannot stop the loop or the others,
and ``end_training`` returns the run's report.
"""

from __future__ import annotations

from typing import Any

import accelerate
from tracking_core import Dispatcher, FinishReport, GeneralTracker, NoOpTracker, TrackingWarning
from tracking_core.delivery.worker import BackendWorker

from .foreign import AccelerateTracker
from .specs import tracking_specs

#: Written by ``Accelerator.save_state`` into the checkpoint: the run it belongs to and the run's last step.
CHECKPOINT_RUN_FILE = "tracking.json"


def _checkpoint_run(folder: str | None) -> dict[str, Any] | None:
    """What ``save_state`` wrote about the run into a checkpoint folder; ``None`` for other checkpoints."""
    import json
    import os

    if folder is None:
        return None
    try:
        with open(os.path.join(folder, CHECKPOINT_RUN_FILE), encoding="utf-8") as handle:
            mark = json.load(handle)
    except (OSError, ValueError):
        return None
    if isinstance(mark, dict) and isinstance(mark.get("run_id"), str) and isinstance(mark.get("step"), int):
        return mark
    return None


class _Dispatcher(Dispatcher):
    """The dispatcher, with accelerate's own tracker objects called on the caller's thread, as accelerate calls them.

    Their SDK state must be the script's: a script calls their methods directly too (``tracker.log(...)``
    after ``init_trackers``), and SDK state such as MLflow's active run is per thread, so a run started
    in a worker is not the run the script's calls reach. Failures stay isolated and counted.
    """

    def make_worker(self, tracker: GeneralTracker, delivery_for: Any) -> BackendWorker:
        if not isinstance(tracker, AccelerateTracker):
            return super().make_worker(tracker, delivery_for)
        return BackendWorker(
            tracker, delivery_for, queue_size=self.options.queue_size, on_full=self.options.on_full, blocking=True
        )


class Accelerator(accelerate.Accelerator):
    """``accelerate.Accelerator`` whose ``log_with`` takes tracking's backends by name or as tracker objects.

    ``log_with`` accepts what accelerate's does plus tracking's names (``"jsonl"``, ``"tensorboard"``,
    ``"mlflow"``, ...) and tracking tracker objects. Backends that write local files (TensorBoard) go
    under ``accelerator.logging_dir`` (``project_dir=`` or ``ProjectConfiguration(logging_dir=...)``), as
    in accelerate; ``tracking_options`` are passed to the :class:`~tracking_core.Dispatcher`
    (``on_error``, ``queue_size``, ``resume``, ...). ``accelerator.tracking`` is the dispatcher, for
    ``log_images``, ``log_table``, ``log_figure``, ``log_artifact`` and ``flush``.
    """

    def __init__(
        self, *args: Any, log_with: Any = None, tracking_options: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        self._tracking: Dispatcher | None = None
        super().__init__(*args, log_with=None, **kwargs)  # accelerate's own check would refuse tracking's trackers
        self.log_with = tracking_specs(log_with)
        if self.log_with:
            try:
                self._tracking = _Dispatcher(self.log_with, self.logging_dir, **(tracking_options or {}))
            except ValueError as error:
                if self.logging_dir is None:
                    raise ValueError(
                        f"{error} With an Accelerator, pass project_dir=... "
                        "(or project_config=ProjectConfiguration(logging_dir=...))."
                    ) from error
                raise

    # accelerate.Accelerator.__init__ assigns `self.trackers = []`; the list is the dispatcher's.
    @property
    def trackers(self) -> list[Any]:
        """The tracker objects of the run (empty before ``init_trackers`` and on other ranks), as in accelerate."""
        if self._tracking is None:
            return []
        return [_unwrapped(tracker) for tracker in self._tracking.trackers]

    @trackers.setter
    def trackers(self, value: list[Any]) -> None:
        if value:
            raise AttributeError("Accelerator.trackers is the dispatcher's list: pass trackers in log_with")

    @property
    def tracking(self) -> Dispatcher | None:
        """The run's :class:`~tracking_core.Dispatcher` (None without ``log_with``)."""
        return self._tracking

    def init_trackers(
        self, project_name: str, config: dict[str, Any] | None = None, init_kwargs: dict[str, Any] | None = None
    ) -> None:
        """Start every tracker of ``log_with`` in its worker and store ``config``; returns at once.

        ``init_kwargs={"mlflow": {...}}`` goes to that tracker's constructor, as in accelerate. On ranks
        other than the main one nothing starts. A second call raises (accelerate would add every tracker
        a second time).
        """
        if self._tracking is not None:
            self._tracking.init_trackers(project_name, config=config, init_kwargs=init_kwargs)

    def get_tracker(self, name: str, unwrap: bool = False) -> Any:
        """The tracker called ``name`` (``unwrap=True``: its SDK object, once it has started).

        Before ``init_trackers`` and on other ranks: a stand-in that accepts every call.
        """
        if self._tracking is None or self._tracking.run_id is None:
            stand_in = NoOpTracker(str(getattr(name, "value", name)))
            return stand_in.tracker if unwrap else stand_in
        return _unwrapped(self._tracking.get_tracker(name, unwrap=unwrap))

    def log(self, values: dict[str, Any], step: int | None = None, log_kwargs: dict[str, Any] | None = None) -> None:
        """Queue ``values`` at ``step`` for every tracker (``step=None``: the previous step + 1).

        As in accelerate, ``step=None`` makes ClearML's values single values (its "Summary"), not
        points of a series; ``log_kwargs={"clearml": {"single_value": False}}`` keeps them series.
        """
        if self._tracking is not None:
            if step is None and self._single_values_backends():
                log_kwargs = dict(log_kwargs or {})
                for name in self._single_values_backends():
                    log_kwargs[name] = {"single_value": True, **(log_kwargs.get(name) or {})}
            self._tracking.log(values, step=step, log_kwargs=log_kwargs)

    def _single_values_backends(self) -> tuple[str, ...]:
        """The trackers whose ``log`` takes ``single_value`` (tracking's ClearML): accelerate's ``step=None``."""
        found: tuple[str, ...] | None = getattr(self, "_single_value_names", None)
        if found is None:
            import inspect

            trackers = self._tracking.trackers if self._tracking is not None else []
            found = tuple(
                tracker.name
                for tracker in trackers
                if not isinstance(tracker, AccelerateTracker)
                and "single_value" in inspect.signature(tracker.log).parameters
            )
            if self._tracking is not None and self._tracking.run_id is not None:
                self._single_value_names = found  # the trackers are known once init_trackers ran
        return found

    # -- checkpoints ---------------------------------------------------------------------------------
    def save_state(self, output_dir: str | None = None, safe_serialization: bool = True, **kwargs: Any) -> str:
        """accelerate's ``save_state``, plus ``tracking.json`` in the checkpoint: the run and its last step, so
        that ``load_state`` of this checkpoint continues that run after that step (see :meth:`load_state`)."""
        location: str = super().save_state(output_dir, safe_serialization=safe_serialization, **kwargs)
        run = self._tracking
        if run is not None and run.run_id is not None and self.is_main_process and location:
            import json
            import os

            mark = {"project": run.project_name, "run_id": run.run_id, "step": run.state.step}
            with open(os.path.join(location, CHECKPOINT_RUN_FILE), "w", encoding="utf-8") as handle:
                json.dump(mark, handle)
        return location

    def load_state(self, input_dir: str | None = None, **kwargs: Any) -> None:
        """accelerate's ``load_state``; a checkpoint from :meth:`save_state` also says which run it belongs to.

        Called before ``init_trackers``, the run then reopens that run and goes back to the step after the
        checkpoint's (``resume_step``): what an earlier process logged after the checkpoint is superseded.
        Called after, the run has started already: a warning says so (load the state first, or pass
        ``tracking_options={"resume": True, "resume_step": N}``).
        """
        super().load_state(input_dir, **kwargs)
        mark = _checkpoint_run(input_dir or self._last_checkpoint_dir())
        run = self._tracking
        if mark is None or run is None:
            return
        if run.run_id is not None:
            if run.run_id != mark["run_id"] or run.state.step > mark["step"]:
                import warnings

                warnings.warn(
                    f"load_state after init_trackers: run {run.run_id} was opened already and goes on after step "
                    f"{run.state.step}; call load_state before init_trackers to continue run {mark['run_id']} after the "
                    f"checkpoint's step {mark['step']}",
                    TrackingWarning,
                    stacklevel=2,
                )
            return
        run.resume, run.resume_step = mark["run_id"], mark["step"] + 1

    def _last_checkpoint_dir(self) -> str | None:
        """The folder accelerate's ``load_state()`` without a folder loads (automatic checkpoint naming)."""
        import os

        folder = os.path.join(self.project_dir or "", "checkpoints")
        if not os.path.isdir(folder):
            return None
        names = [name for name in os.listdir(folder) if name.startswith("checkpoint_")]
        names.sort(key=lambda name: int(name.rpartition("_")[2]) if name.rpartition("_")[2].isdigit() else -1)
        return os.path.join(folder, names[-1]) if names else None

    def end_training(self) -> FinishReport | None:
        """Deliver what is queued, close every tracker, then end the process group as accelerate does."""
        report = self._tracking.finish() if self._tracking is not None else None
        self.state.destroy_process_group()
        return report


def _unwrapped(tracker: Any) -> Any:
    """accelerate's own tracker objects are handed back as the caller gave them, not as their wrapper."""
    return tracker.wrapped if isinstance(tracker, AccelerateTracker) else tracker
