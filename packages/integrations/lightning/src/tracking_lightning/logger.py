"""``TrackingLogger``: a Lightning ``Logger`` whose experiment is a ``tracking_core.Dispatcher``.

Lightning's loggers live through the ``Trainer``'s stages: ``experiment`` is touched first (to name
folders), hyperparameters come after that, ``log_metrics`` and ``save`` follow every logging step, and
``finalize`` ends each of ``fit``, ``validate`` and ``test``. The run therefore starts at the first of
``experiment``, ``version`` or ``log_hyperparams``; hyperparameters that arrive after the start go
through ``Dispatcher.log_config``; a ``test()`` after ``fit()`` reopens the same run (``resume``).
"""

from __future__ import annotations

import os
from argparse import Namespace
from collections.abc import Mapping
from typing import Any

import tracking_core

from ._lightning import Logger, rank_zero_experiment, rank_zero_only

DEFAULT_PROJECT = "lightning_logs"  # the folder name Lightning's own loggers use


class TrackingLogger(Logger):
    """Lightning logger for tracking's backends: ``Trainer(logger=TrackingLogger(log_with=["mlflow"]))``.

    ``log_with``, ``logging_dir`` (default ``./runs``), ``config`` (keys of your own, stored with the
    hyperparameters), ``init_kwargs`` and ``options`` (``on_error``, ``queue_size``, ...) are those of
    :func:`tracking_core.init`. ``name`` is the project, ``version`` the run id, ``experiment`` the
    :class:`~tracking_core.Dispatcher` (for ``log_images``, ``log_table``, ``log_figure``,
    ``log_artifact``), ``log_dir`` the run folder, where Lightning then puts the run's checkpoints.
    Only global rank 0 logs (Lightning's ``rank_zero_only``); :attr:`report` is the
    :class:`~tracking_core.FinishReport` of the last ``finalize``.
    """

    def __init__(
        self,
        log_with: Any = "jsonl",
        project: str = DEFAULT_PROJECT,
        logging_dir: str | os.PathLike[str] = "runs",
        *,
        config: Mapping[str, Any] | None = None,
        init_kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        self._log_with = log_with
        self._project = project
        self._logging_dir = os.fspath(logging_dir)
        self._config = dict(config or {})
        self._init_kwargs = init_kwargs
        self._options = options
        self._run: tracking_core.Dispatcher | None = None
        self._run_id: str | None = None
        self.report: tracking_core.FinishReport | None = None
        #: The tracker objects of the open run, or of the last one once finalized.
        self.trackers: list[tracking_core.GeneralTracker] = []

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
    def experiment(self) -> tracking_core.Dispatcher:
        """The run's dispatcher, started on first use (reopened after ``finalize``); a stand-in on other ranks."""
        if self._run is None:
            self._start(self._config or None)
        assert self._run is not None
        return self._run

    def _start(self, config: Mapping[str, Any] | None) -> None:
        reopen = self._run_id is not None
        self._run = tracking_core.init(
            self._project,
            log_with=_by_name(self._log_with) if reopen else self._log_with,
            logging_dir=self._logging_dir,
            config=None if reopen else config,
            init_kwargs=self._init_kwargs,
            resume=self._run_id if reopen else False,
            **self._options,
        )
        self._run_id = self._run.run_id
        self.trackers = self._run.trackers

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
        self.experiment.log(dict(metrics), step=step)

    def save(self) -> None:
        """Nothing to do: Lightning calls this after every logging step, and the dispatcher flushes on its own."""

    @rank_zero_only
    def finalize(self, status: str) -> None:
        """End of a ``fit``/``validate``/``test``: deliver and close the run (``report`` says how it went)."""
        if self._run is not None:
            self.report = self._run.finish()
            self._run = None
            if status != "success":
                tracking_core.notice(f"lightning: run {self._run_id} ended with status {status!r}")


def _by_name(log_with: Any) -> Any:
    """Tracker objects serve one run: a reopened run gets new ones of the same classes, built by name."""
    if isinstance(log_with, tracking_core.GeneralTracker):
        return log_with.name
    if isinstance(log_with, (list, tuple)):
        return [item.name if isinstance(item, tracking_core.GeneralTracker) else item for item in log_with]
    return log_with
