"""``TrackingLogger``: a Lightning ``Logger`` whose experiment is a ``tracking_core.Dispatcher``.

Lightning's loggers live through the ``Trainer``'s stages: ``experiment`` is touched first (to name
folders), hyperparameters come after that, ``log_metrics`` and ``save`` follow every logging step, and
``finalize`` ends each of ``fit``, ``validate`` and ``test``. The run therefore starts at the first of
``experiment``, ``version`` or ``log_hyperparams``; hyperparameters that arrive after the start go
through ``Dispatcher.log_config``; a ``test()`` after ``fit()`` reopens the same run (``resume``).

Lightning pickles and deep-copies loggers (``ddp_spawn`` sends the trainer to new processes, trainer
state is copied). A copy carries the run id but not the open run (threads, SDK handles): on first use
it takes the open run of the same id when this process holds one, else it reopens the run by id
(``resume=<run id>``), so every copy logs into the one run.

A run a logger opened and nobody finished (a test that touches ``experiment`` and ends there, a copy
that logged last) keeps its daemon threads until the process exits. Each of them answers ``stop()``,
the convention of TensorBoard's event writer thread that Lightning's test suite stops leftover
threads with: it finishes the run (delivers, closes the backends, joins every thread of the run).
"""

from __future__ import annotations

import os
import threading
from argparse import Namespace
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import tracking_core
from tracking_core import GeneralTracker, TrackingError, TrackingWarning
from tracking_core.kit import notice, warn_once

from ._lightning import Logger, rank_zero_experiment, rank_zero_only
from .checkpoints import checkpoint_step, checkpoints_of, ckpt_path_of_fit, log_checkpoints, run_of_checkpoint
from .runs import by_name, is_open, open_runs, open_runs_lock, stoppable_threads

if TYPE_CHECKING:
    from tracking_core import Dispatcher, FinishReport

DEFAULT_PROJECT = "lightning_logs"  # the folder name Lightning's own loggers use
#: Bound on the flush a pickled running logger makes, so that the copy's reopened run starts after it.
PICKLE_FLUSH_TIMEOUT = 30.0
#: Between a prefix and a metric key, as in Lightning's own loggers.
LOGGER_JOIN_CHAR = "-"


class TrackingLogger(Logger):
    """Lightning logger for tracking's backends: ``Trainer(logger=TrackingLogger(log_with=["mlflow"]))``.

    ``log_with``, ``logging_dir`` (default ``./runs``), ``config`` (keys of your own, stored with the
    hyperparameters), ``init_kwargs`` and ``options`` (``on_error``, ``queue_size``, ...) are those of
    :func:`tracking_core.init`. ``name`` is the project, ``version`` the run id, ``experiment`` the
    :class:`~Dispatcher` (for ``log_images``, ``log_table``, ``log_figure``,
    ``log_artifact``), ``log_dir`` the run folder, where Lightning then puts the run's checkpoints.

    As in Lightning's ``TensorBoardLogger``: ``name`` (the same as ``project``), ``version`` (the id
    of an earlier run under ``logging_dir`` to continue; ``None`` starts a new run, whose id then is
    the version), ``prefix`` (put before every metric key with ``-``: ``prefix="fold1"`` logs
    ``fold1-train_loss``) and ``log_graph`` (the model's graph in TensorBoard, traced from
    ``example_input_array``; a one-time warning when the run has no TensorBoard backend).
    ``resume=True`` continues the project's most recent run instead of starting one.
    The checkpoint of ``Trainer.fit(ckpt_path=...)`` (or ``ckpt_path`` given here) continues the run
    that wrote it, from the checkpoint's step: what the run logged after it is superseded (``resume_step``;
    see the README's rewind table). Lightning opens a logger's run before it restores the checkpoint and
    does not pass it the path; the logger reads it from the running ``fit`` when its run opens there.
    Lightning stores no logger state in checkpoints, but it stores ``ModelCheckpoint``'s folder, which
    is the run's folder (``log_dir``) unless set otherwise, so the run id is read from the checkpoint's
    contents (and from its own path), wherever the file was copied to.

    ``log_model`` sends ``ModelCheckpoint``'s checkpoints to every backend that stores artifacts
    (``log_artifact``), as Lightning's MLflow and W&B loggers do: ``True`` the best and latest ones
    when the run ends (each as it is saved when ``save_top_k=-1``), ``"all"`` each one as it is
    saved. Each goes to ``checkpoints/step-<global step>-<best|latest|best_k>/`` with a ``checkpoint.json`` beside it
    (step, score, monitor, best/latest/best_k, file name). The file is hard-linked into the run
    folder's ``logged-checkpoints/`` (copied where links are impossible), so the training loop
    never waits for an upload and the backends still find it after ``ModelCheckpoint`` deletes it.
    Only global rank 0 logs (Lightning's ``rank_zero_only``); :attr:`report` is the
    :class:`~FinishReport` of the last ``finalize`` or :meth:`close`.

    The logger pickles and deep-copies at any point (Lightning does both); the copy logs into the
    same run. :meth:`close` (or ``with TrackingLogger(...) as logger:``) finishes the run and joins
    its worker threads outside a ``Trainer``; so does ``logger.experiment.finish()``, after which
    the next use reopens the run.
    """

    def __init__(
        self,
        log_with: Any = "jsonl",
        project: str = DEFAULT_PROJECT,
        logging_dir: str | os.PathLike[str] = "runs",
        *,
        name: str | None = None,
        version: str | None = None,
        prefix: str = "",
        log_graph: bool = False,
        log_model: bool | str = False,
        ckpt_path: str | os.PathLike[str] | None = None,
        config: Mapping[str, Any] | None = None,
        init_kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        if name is not None and project not in (DEFAULT_PROJECT, name):
            raise ValueError(f"name and project are the same setting; got name={name!r} and project={project!r}")
        if version is not None and not (isinstance(version, str) and version):
            raise TypeError(
                f"version must be the id of an earlier run (a string) or None for a new run, got {version!r}"
            )
        if log_model not in (False, True, "all"):
            raise ValueError(f"log_model must be False, True or 'all', got {log_model!r}")
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a string, got {prefix!r}")
        resume = options.pop("resume", False)
        if not isinstance(resume, (bool, str)) or resume == "":
            raise ValueError(f"resume must be True, False or a run id, got {resume!r}")
        if isinstance(resume, str):  # resume="<run id>" is version="<run id>"
            if version is not None and version != resume:
                raise ValueError(f"version={version!r} and resume={resume!r} name different runs")
            version, resume = resume, False
        self._log_with = log_with
        self._project = name if name is not None else project
        self._logging_dir = os.fspath(logging_dir)
        #: the checkpoint's step, once its run is known: the reopened run goes back to it (``resume_step``)
        self._resume_step: int | None = None
        #: whether the checkpoint of a ``Trainer.fit(ckpt_path=...)`` may still choose the run and its step
        self._from_fit = ckpt_path is None
        if ckpt_path is not None and version is None and rank_zero_only.rank == 0:
            version = run_of_checkpoint(ckpt_path, self._logging_dir, self._project)
            self._resume_step = checkpoint_step(ckpt_path) if version is not None else None
            if version is None:
                import warnings

                warnings.warn(
                    f"lightning: {os.fspath(ckpt_path)} was not written in a run of {self._project!r} under "
                    f"{self._logging_dir}; a new run starts (pass version=<run id> to continue one)",
                    TrackingWarning,
                    stacklevel=2,
                )
        if version is not None and rank_zero_only.rank == 0:
            run_file = os.path.join(self._logging_dir, self._project, version, "run.json")
            if not os.path.isfile(run_file):
                raise ValueError(
                    f"version={version!r}: no such run of {self._project!r} in {self._logging_dir} ({run_file} is "
                    "missing); a version names an earlier run to continue, leave it None to start a new run"
                )
        self._resume_last = bool(resume)
        self._prefix = prefix
        self._log_graph = bool(log_graph)
        self._log_model: bool | str = log_model
        self._checkpoint_callback: Any = None  # log_model=True: the callback whose checkpoints go at the end
        self._checkpoint_steps: dict[tuple[str, float], int | None] = {}  # (path, mtime) -> step it was saved at
        self._logged_checkpoints: dict[str, float] = {}  # path -> mtime of the version logged
        self._config = dict(config or {})
        self._init_kwargs = init_kwargs
        self._options = options
        self._run: Dispatcher | None = None
        self._run_id: str | None = version
        self.report: FinishReport | None = None
        #: The tracker objects of the open run, or of the last one once finalized.
        self.trackers: list[GeneralTracker] = []

    # -- identity ------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._project

    @property
    def version(self) -> str | None:
        """The run id (starts the run on rank 0: Lightning asks for it to name the checkpoint folder)."""
        if self._run_id is None and rank_zero_only.rank == 0:
            self.experiment  # noqa: B018  # starting the run is what chooses its id
        return self._run_id

    @property
    def save_dir(self) -> str:
        return self._logging_dir

    @property
    def root_dir(self) -> str:
        return os.path.join(self._logging_dir, self._project)

    @property
    def log_dir(self) -> str | None:
        version = self.version
        return os.path.join(self.root_dir, version) if version is not None else None

    # -- the run -------------------------------------------------------------------------------------
    @property
    @rank_zero_experiment
    def experiment(self) -> Dispatcher:
        """The run's dispatcher, started on first use (reopened after it finished); a stand-in on other ranks."""
        run = self._run
        if run is None or not is_open(run):
            self._run = None
            self._start(self._config or None)
            run = self._run
        assert run is not None
        return run

    def _key(self) -> tuple[str, str, str]:
        return (os.path.abspath(self._logging_dir), self._project, str(self._run_id))

    def _start(self, config: Mapping[str, Any] | None) -> None:
        if self._from_fit:
            self._from_fit = False
            self._adopt_fit_checkpoint()
        reopen = self._run_id is not None
        options = dict(self._options)
        if reopen and self._resume_step is not None:
            options["resume_step"], self._resume_step = self._resume_step, None  # once: a later test() goes on
        with open_runs_lock:
            shared = open_runs.get(self._key()) if reopen else None
            if shared is not None and is_open(shared):  # a copy made in this process: the same open run
                self._run = shared
            else:
                before = set(threading.enumerate())
                self._run = tracking_core.init(
                    self._project,
                    log_with=by_name(self._log_with) if reopen else self._log_with,
                    logging_dir=self._logging_dir,
                    config=None if reopen else config,
                    init_kwargs=self._init_kwargs,
                    resume=self._run_id if reopen else self._resume_last,
                    **options,
                )
                self._run_id = self._run.run_id
                open_runs[self._key()] = self._run
                stoppable_threads(self._run, before)
        self.trackers = self._run.trackers

    def _adopt_fit_checkpoint(self) -> None:
        """The first run opened inside ``Trainer.fit(ckpt_path=...)``: the run that wrote the checkpoint."""
        path = ckpt_path_of_fit(self)
        if path is None:
            return
        version = run_of_checkpoint(path, self._logging_dir, self._project)
        if version is not None and self._run_id in (None, version):  # a version given for another run wins
            self._run_id, self._resume_step = version, checkpoint_step(path)

    # -- copies and pickling -------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """Everything but the open run: a copy reopens the run by id (or shares it in this process).

        A running logger flushes first (bounded), so a copy reopened in another process continues
        after what this one logged.
        """
        run = self._run
        if run is not None and is_open(run):
            try:
                run.flush(timeout=PICKLE_FLUSH_TIMEOUT)
            except TrackingError as error:  # on_error="raise": the copy must still be made
                notice(f"lightning: flush before copying the logger failed: {error}")
        state = self.__dict__.copy()
        state["_run"] = None
        state["trackers"] = []  # SDK objects (writers, clients, modules) belong to the open run
        state["_log_with"] = by_name(self._log_with)
        state["_checkpoint_callback"] = None  # Lightning hands over a weak proxy; the next save hands it again
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    # -- checkpoints ---------------------------------------------------------------------------------
    @rank_zero_only
    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
        """``ModelCheckpoint`` saved: note each new file's step; log it now or at the end (``log_model``)."""
        if not self._log_model:
            return
        step = getattr(checkpoint_callback, "_last_global_step_saved", None)
        for path in checkpoints_of(checkpoint_callback):
            self._checkpoint_steps.setdefault((path, os.path.getmtime(path)), step)
        if self._log_model == "all" or getattr(checkpoint_callback, "save_top_k", None) == -1:
            self._log_checkpoints(checkpoint_callback)
        else:
            self._checkpoint_callback = checkpoint_callback

    def _log_checkpoints(self, callback: Any) -> None:
        """Every checkpoint file of ``callback`` not logged yet (or rewritten since), oldest first."""
        log_checkpoints(self.experiment, callback, self._checkpoint_steps, self._logged_checkpoints)

    # -- closing -------------------------------------------------------------------------------------
    @rank_zero_only
    def close(self) -> None:
        """Finish the run now (deliver, close every backend, join its threads); the next use reopens it."""
        run, self._run = self._run, None
        if run is not None:
            self.report = run.finish()

    def __enter__(self) -> TrackingLogger:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    @rank_zero_only
    def log_hyperparams(self, params: Mapping[str, Any] | Namespace, *args: Any, **kwargs: Any) -> None:
        """Store hyperparameters: with the run's start when they come first, else added to its config."""
        values = dict(vars(params) if isinstance(params, Namespace) else params)
        if self._run is None and self._run_id is None:
            self._start({**self._config, **values})
        else:
            self.experiment.log_config(values)

    @rank_zero_only
    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        values = (
            {f"{self._prefix}{LOGGER_JOIN_CHAR}{key}": value for key, value in metrics.items()}
            if self._prefix
            else dict(metrics)
        )
        self.experiment.log(values, step=step)

    @rank_zero_only
    def log_graph(self, model: Any, input_array: Any = None) -> None:
        """The model's graph in TensorBoard, as ``TensorBoardLogger(log_graph=True)`` draws it.

        The graph is traced here (torch's ``SummaryWriter.add_graph``) into an event file of its own
        in the TensorBoard backend's run folder, which TensorBoard shows with the run's other events.
        """
        if not self._log_graph:
            return
        run = self.experiment
        tensorboard = next((tracker for tracker in run.trackers if tracker.name == "tensorboard"), None)
        if tensorboard is None:
            warn_once(
                "lightning",
                "log_graph",
                "log_graph=True draws the graph in TensorBoard only, and this run has no tensorboard backend",
            )
            return
        example = getattr(model, "example_input_array", None) if input_array is None else input_array
        if example is None:
            warn_once(
                "lightning",
                "log_graph",
                "log_graph=True needs model.example_input_array (or log_graph(model, input_array))",
            )
            return
        if hasattr(model, "_on_before_batch_transfer") and hasattr(model, "_apply_batch_transfer_handler"):
            example = model._apply_batch_transfer_handler(model._on_before_batch_transfer(example))  # a LightningModule
        from torch.utils.tensorboard import SummaryWriter

        run.get_tracker("tensorboard", unwrap=True)  # waits for the backend's start, which settles its folder
        writer = SummaryWriter(log_dir=str(tensorboard.log_dir), filename_suffix=".graph")
        try:
            writer.add_graph(model, example)
        finally:
            writer.close()

    def save(self) -> None:
        """Nothing to do: Lightning calls this after every logging step, and the dispatcher flushes on its own."""

    @rank_zero_only
    def finalize(self, status: str) -> None:
        """End of a ``fit``/``validate``/``test``: deliver and close the run (``report`` says how it went)."""
        if self._checkpoint_callback is not None:
            callback, self._checkpoint_callback = self._checkpoint_callback, None
            self._log_checkpoints(callback)
        if self._run is not None:
            self.close()
            if status != "success":
                notice(f"lightning: run {self._run_id} ended with status {status!r}")
