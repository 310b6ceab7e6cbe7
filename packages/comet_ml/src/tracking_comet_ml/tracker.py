"""Comet backend: the tracker contract mapped onto one ``comet_ml`` experiment per run.

==========================  =========================================================================
contract                    comet_ml
==========================  =========================================================================
``start``                   ``comet_ml.start(...)``: an ``OfflineExperiment`` (zip archive under
                            ``logging_dir``) unless an API key is configured; online start-up is
                            bounded and falls back to offline when the server does not answer
``writer`` / ``tracker``    the experiment (``experiment`` too)
``store_init_configuration``  ``log_parameters`` (nested, Comet flattens with ``|``) + ``config.json`` asset
                            (the merged config, rewritten when more config arrives)
``log_run_context``         Comet's git metadata, system information, file name and installed packages
                            (:mod:`tracking_comet_ml.context_panels`), the diff, package list and context as
                            assets under ``run_context/``, and parameters under ``run_context`` as config
``log`` / ``log_batch``     ``set_step(step)``; numbers: ``log_metrics(numbers, step=)``; strings:
                            ``log_other(key, text)`` as accelerate, and ``log_text(text, step=,
                            metadata={"key"})`` so every step's text is kept; a dict: ``log_metrics(dict, step=)``
``log_images``              ``log_image(png, name=key, step=)`` for each image (HW, HWC, CHW, batches, PIL)
``log_table``               ``<name>.csv`` asset (what ``log_table`` writes), with the step attached
``log_figure``              ``log_image(png, name=name, step=)`` (the figure rendered to PNG)
``log_histogram``           ``log_histogram_3d(comet_ml.Histogram, name=, step=)`` (Comet re-bins the counts)
``log_artifact(s)``         ``log_asset`` / ``log_asset_folder``
``log_system_metrics``      ``log_metric("sys.<name>", value, step=<sample index>, include_context=False)``:
                            where Comet's own monitor puts its ``sys.*`` metrics (its *System metrics*)
``flush`` / ``finish``      ``experiment.flush()`` / ``experiment.end()`` (offline: writes the archive);
                            a crashed or killed run reported as crashed first (:mod:`tracking_comet_ml.run_end`)
``resume_state``            ``{"experiment_key", "mode", "offline_directory", "data_dir", ...}``; a resumed
                            run: ``comet_ml.start(experiment_key=<saved>, mode="get")`` offline (an archive
                            that appends to the experiment on upload), ``mode="get_or_create"`` online
per-rank runs               experiment ``<name>-rank<N>``, tags ``group:<job run id>`` and ``rank:<N>``
==========================  =========================================================================
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracking_core import GeneralTracker, Histogram
from tracking_core.kit import RUN_CONTEXT_KEY, check_name, figure_to_png, image_list, logger, merge_config, sdk_object

from . import context_panels
from .archive import archive_name, drain_offline_streamer
from .media import comet_histogram, image_bytes, table_csv
from .reader import archives_of, read_history, read_images, sample_key, system_metric_name
from .run_end import report_end, set_start, stamp_stop_time
from .startup import (
    CONDA_NOTE,
    ENV_DETAILS,
    QUIET_DEFAULTS,
    announce,
    configured,
    continue_saved_experiment,
    create_experiment,
    import_comet,
    in_conda_environment,
    run_defaults,
    start_keywords,
    start_online,
)

__all__ = ["QUIET_DEFAULTS", "CometMLTracker"]

DEFAULT_START_TIMEOUT = 30.0


class CometMLTracker(GeneralTracker):
    """Logs a run to Comet: an offline archive by default, the Comet server when an API key is set.

    Example::

        import tracking_core

        with tracking_core.init("my-project", log_with="comet_ml", logging_dir="runs") as run:
            run.log({"train/loss": 0.5, "note": "warm-up"}, step=0)
        # no API key: runs/my-project/<run id>/comet_ml/<experiment key>-*.zip
        # upload it later with: comet upload runs/my-project/<run id>/comet_ml/*.zip

    Used on its own it works as accelerate's ``CometMLTracker``: ``t = CometMLTracker("proj"); t.start();
    t.log({"loss": 0.5}, step=1); t.finish()``, with ``t.writer`` the experiment.

    ``run_name`` is the Comet project (``project_name=`` or ``COMET_PROJECT_NAME`` win). Other keyword
    arguments go to ``comet_ml.start`` (``api_key``, ``workspace``, ``experiment_key``, ``mode``,
    ``online``, ``experiment_config``) or are ``ExperimentConfig`` fields (``name``, ``tags``,
    ``offline_directory``, ``auto_output_logging``, ``log_code``, ...). ``start_timeout`` bounds an
    online start-up (default 30 s); past it, or when the server does not answer, the run is recorded
    offline instead and a warning says so.

    Comet's own settings keep working (environment or ``~/.comet.config``): ``COMET_API_KEY``,
    ``COMET_PROJECT_NAME``, ``COMET_WORKSPACE``, ``COMET_START_ONLINE``, ``COMET_START_MODE``,
    ``COMET_OFFLINE_DIRECTORY``, ``COMET_URL_OVERRIDE``, ``COMET_START_EXPERIMENT_NAME``/``_TAGS``
    and every ``COMET_AUTO_LOG_*`` switch (they win over this tracker's quiet defaults, see
    :data:`QUIET_DEFAULTS`). Comet stores NaN/inf as text, so the dispatcher skips such points with a warning.

    What Comet records of its own, as under Accelerate: its system monitor (CPU, memory, GPUs, network,
    disk every 30 s as ``sys.*`` metrics), the source file, the git metadata and patch, the host and the
    installed packages; CO2 too when ``codecarbon`` is installed. Kept off unless set: stdout capture,
    framework auto-logging, argv parsing and the summary. In a conda environment the environment details
    (and with them the monitor) stay off: Comet would run ``conda`` for them. A run with
    ``system_metrics=True`` gets the library's samples as ``sys.*`` metrics instead of Comet's monitor.
    """

    name = "comet_ml"
    requires_logging_directory = False
    accepts_non_finite = False

    def __init__(
        self,
        run_name: str,
        *,
        logging_dir: str | os.PathLike[str] | None = None,
        run_dir: str | os.PathLike[str] | None = None,
        run_id: str | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if run_dir is None:  # the offline archive goes to <logging_dir>/<run_name>/comet_ml without a run folder
            check_name(run_name, "run_name")
        self.run_name = run_name
        self.logging_dir = Path(logging_dir) if logging_dir is not None else Path("runs")
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.run_id = run_id
        self.start_timeout = float(start_timeout)
        self.init_kwargs = kwargs
        #: ``"online"``, ``"offline"`` or ``"offline-fallback"`` once started.
        self.mode: str | None = None
        #: Why an online start fell back to offline (``None`` when it did not).
        self.fallback_reason: str | None = None
        #: The offline zip, once ``finish()`` wrote it.
        self.archive_path: Path | None = None
        self._experiment: Any = None
        self._finished = False
        self._max_key_length = 100
        self._config: dict[str, Any] = {}
        self._context_sent = False

    @property
    def offline_directory(self) -> Path:
        return (self.run_dir if self.run_dir is not None else self.logging_dir / self.run_name) / "comet_ml"

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        if self.run_context is not None and self.run_dir is None:  # the archive sits in the run's folder
            self.run_dir, self.run_id = Path(self.run_context.run_dir), self.run_id or self.run_context.run_id
        comet_ml = import_comet()
        self._max_key_length = int(getattr(comet_ml.config, "MAXIMAL_KEY_LENGTH", self._max_key_length))
        config = comet_ml.get_config()
        samples = self.run_context is not None and self.run_context.system_metrics
        start_kwargs = start_keywords(comet_ml, config, self.init_kwargs, run_defaults(self), system_metrics=samples)
        if (
            in_conda_environment()
            and ENV_DETAILS[0] not in self.init_kwargs
            and configured(config, ENV_DETAILS[1]) is None
        ):
            self.add_note(CONDA_NOTE)
        online = start_kwargs.pop("online", None)
        if online is None:
            online = configured(config, "comet.start.online")
        api_key = comet_ml.config.get_api_key(start_kwargs.get("api_key"), config)
        if online and api_key is None:
            raise ValueError(
                "comet_ml: online mode was requested but no API key is configured (COMET_API_KEY or "
                "~/.comet.config); leave `online` unset or pass online=False to record an offline archive"
            )
        if online is None:
            online = api_key is not None
        continue_saved_experiment(self, comet_ml, config, start_kwargs, online)
        if online:
            self._experiment, self.fallback_reason = start_online(comet_ml, config, start_kwargs, self.start_timeout)
            if self.fallback_reason is not None:
                self.add_note(f"recorded offline because {self.fallback_reason}")
                logger.warning("comet_ml: %s; recording this run offline instead", self.fallback_reason)
        if self._experiment is None:
            directory = start_kwargs["experiment_config"].offline_directory
            if directory:  # Comet refuses a directory that does not exist yet
                Path(directory).expanduser().mkdir(parents=True, exist_ok=True)
            self._experiment = create_experiment(comet_ml, dict(start_kwargs, online=False))
            self.mode = "offline" if self.fallback_reason is None else "offline-fallback"
            started = self.run_context.started if self.run_context is not None else None
            set_start(self._experiment, started, appending=bool(start_kwargs.get("experiment_key")))
        else:
            self.mode = "online"
        announce(self._experiment, self.mode)

    # -- SDK objects -------------------------------------------------------------------------
    tracker = writer = experiment = sdk_object(
        "_experiment",
        "The ``comet_ml`` experiment, ``writer`` as accelerate's ``CometMLTracker`` names it (``None`` before ``start()``).",
    )

    # -- config ------------------------------------------------------------------------------
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        """Parameters (merged by Comet key by key) and the whole config so far as the ``config.json`` asset."""
        experiment = self._experiment
        experiment.log_parameters(values)
        self._config = merge_config(self._config, values)
        # Parameters lose the difference between a nested key and a key containing "|"; the asset keeps it exactly.
        text = json.dumps(self._config, sort_keys=True, default=str)
        self._check(experiment.log_asset_data(text, name="config.json", overwrite=True), "config.json")

    # -- run context (docs/run-context.md) ----------------------------------------------------------
    def log_run_context(self, context: dict[str, Any]) -> None:
        """Comet's own places (:mod:`tracking_comet_ml.context_panels`): the git metadata (branch, commit,
        origin), system information, file name and installed packages; the diff, package list and whole
        context as assets under ``run_context/``; and parameters under ``run_context``, as any config."""
        self.store_init_configuration({RUN_CONTEXT_KEY: context})
        self._context_in_panels(context)

    def _context_in_panels(self, context: dict[str, Any]) -> None:
        """Once per experiment; the parameters keep the context whatever happens here."""
        if self._context_sent or not self._experiment.alive:
            return
        self._context_sent = True
        context_panels.send_context(self, self._experiment, context, self.run_dir, self._check)

    # -- metrics -----------------------------------------------------------------------------
    def sanitize_key(self, key: str) -> str:
        # Comet cuts longer metric names itself, so keys with one long start would become one name and
        # all but one of their points would be lost at each step. Cut here with a digest of the whole
        # key instead: distinct keys stay distinct, and the mapping is warned about and in the report.
        limit = self._max_key_length
        if len(key) <= limit:
            return key
        digest = hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        return f"{key[: limit - 9]}-{digest}"

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        experiment = self._experiment
        if step is not None:
            experiment.set_step(step)
        numbers = {}
        for key, value in values.items():
            if isinstance(value, str):
                experiment.log_other(key, value)
                self._check(experiment.log_text(value, step=step, metadata={"key": key}), key)
            elif isinstance(value, dict):
                experiment.log_metrics(value, step=step, **kwargs)
            else:
                numbers[key] = value
        if numbers:
            experiment.log_metrics(numbers, step=step, **kwargs)

    def log_batch(self, entries: Sequence[tuple[dict[str, Any], int | None, dict[str, Any]]]) -> None:
        # One log_metrics call per step: consecutive records of the same step (say, losses and the learning
        # rate logged apart) are merged unless they share a key, since Comet keeps every point it is given.
        pending: dict[str, Any] | None = None
        pending_step: int | None = None
        pending_kwargs: dict[str, Any] = {}
        for values, step, kwargs in entries:
            if (
                pending is not None
                and step == pending_step
                and kwargs == pending_kwargs
                and not pending.keys() & values.keys()
            ):
                pending.update(values)
                continue
            if pending is not None:
                self.log(pending, step=pending_step, **pending_kwargs)
            pending, pending_step, pending_kwargs = dict(values), step, kwargs
        if pending is not None:
            self.log(pending, step=pending_step, **pending_kwargs)

    def log_system_metrics(self, values: dict[str, float], index: int, timestamp: float) -> None:
        """Where Comet's own monitor puts its samples: ``sys.*`` metrics without the context (its *System
        metrics*; ``comet_ml.API`` leaves ``sys.`` names out of the user's metrics), at ``step=index``.

        ``log_metric`` also moves the experiment's current step; it is put back, so the user's points
        logged without a step stay where they were. Comet stamps each point with the time it is handed over.
        """
        experiment = self._experiment
        current = experiment.curr_step
        try:
            for key, value in values.items():
                experiment.log_metric(system_metric_name(key), value, step=index, include_context=False)
        finally:
            experiment.curr_step = current

    # -- media -------------------------------------------------------------------------------
    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """``{key: image, list of images or NCHW/NHWC batch}``; each image a PNG named ``key``."""
        extra = kwargs.pop("metadata", {})
        for key, images in values.items():
            for index, image in enumerate(image_list(images)):
                metadata = {"key": key, "index": index, **extra}
                result = self._experiment.log_image(
                    image_bytes(image), name=key, step=step, metadata=metadata, **kwargs
                )
                self._check(result, key)

    def log_table(
        self,
        table_name: str,
        columns: list[str] | None = None,
        data: list[list[Any]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
        **kwargs: Any,
    ) -> None:
        # The CSV that log_table writes, logged with log_asset because log_table has no step and reads an
        # existing file of the same name from the working directory instead of the data.
        buffer = table_csv(columns, data, dataframe)
        file_name = table_name if table_name.endswith(".csv") else f"{table_name}.csv"
        metadata = {"table": table_name, **kwargs.pop("metadata", {})}
        result = self._experiment.log_asset(buffer, file_name=file_name, step=step, metadata=metadata, **kwargs)
        self._check(result, table_name)

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        """The figure as a PNG image named ``name`` (``kwargs`` go to ``savefig``: ``dpi``, ``bbox_inches``...)."""
        png = io.BytesIO(figure_to_png(figure, **kwargs))
        self._check(self._experiment.log_image(png, name=name, step=step, metadata={"key": name}), name)

    # -- histogram ---------------------------------------------------------------------------
    def log_histogram(self, name: str, histogram: Histogram, step: int | None = None, **kwargs: Any) -> None:
        """A 3-d histogram chart (one slice per step); Comet re-bins the counts into its own log-spaced bins."""
        comet_ml = import_comet()
        if not histogram.count:
            return  # Comet refuses an empty histogram with an error line
        result = self._experiment.log_histogram_3d(comet_histogram(comet_ml, histogram), name=name, step=step, **kwargs)
        self._check(result, name)

    # -- artifacts ---------------------------------------------------------------------------
    def log_artifact(self, local_path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        file_name = os.path.basename(local_path)
        if artifact_path:
            file_name = f"{artifact_path.rstrip('/')}/{file_name}"
        self._check(self._experiment.log_asset(os.fspath(local_path), file_name=file_name), os.fspath(local_path))

    def log_artifacts(self, local_dir: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        local_dir = os.fspath(local_dir)
        if not artifact_path:
            # Comet names each file <folder name>/<path inside the folder>.
            self._check(self._experiment.log_asset_folder(local_dir, log_file_name=True, recursive=True), local_dir)
            return
        for folder, _, files in os.walk(local_dir):
            for file in sorted(files):
                path = os.path.join(folder, file)
                relative = os.path.relpath(path, local_dir).replace(os.sep, "/")
                self._check(self._experiment.log_asset(path, file_name=f"{artifact_path.rstrip('/')}/{relative}"), path)

    def _check(self, result: Any, what: str) -> None:
        """Comet logs an error and returns ``None`` when it refuses something; make that an exception."""
        if result is None and self._experiment.alive:
            raise RuntimeError(f"comet_ml refused {what!r} (its reason is in the COMET ERROR line above)")

    # -- flush / finish ----------------------------------------------------------------------
    def flush(self) -> None:
        experiment = self._experiment
        if experiment is not None and not self._finished and experiment.alive and not experiment.flush():
            raise RuntimeError("comet_ml: the experiment could not flush its pending data")
        if experiment is not None and not self._finished and self.mode != "online":
            drain_offline_streamer(experiment)

    def finish(self) -> None:
        experiment = self._experiment
        if experiment is None or self._finished:
            return
        self._finished = True
        alive = experiment.alive
        if alive and not report_end(experiment, self.run_end):
            self.add_note(f"this Comet release has no crash report: not told the run ended {self.run_end.status!r}")
        experiment.end()  # offline: waits for the streamer, then writes the zip
        if self.mode != "online" and alive:
            # A resumed experiment has one archive per process: this one's is named by Comet, else the newest.
            named = archive_name(experiment)
            mine = Path(experiment.offline_directory) / named if named else None
            archives = [mine] if mine is not None and mine.is_file() else self.archives()
            if not archives:
                raise RuntimeError(
                    f"comet_ml: no offline archive for {experiment.get_key()} in {experiment.offline_directory}"
                )
            self.archive_path = archives[-1]
            stamp_stop_time(self.archive_path, self.run_end.ended)

    # -- resume, read-back, notes ------------------------------------------------------------
    def resume_state(self) -> dict[str, Any] | None:
        """The experiment key and, offline, where its archives go and where Comet keeps its data until ``end()``."""
        experiment = self._experiment
        if experiment is None or not experiment.alive:
            return None
        if self.mode == "online":
            return {"experiment_key": experiment.get_key(), "mode": "online"}
        return {
            "experiment_key": experiment.get_key(),
            "mode": "offline",
            "offline_directory": os.fspath(Path(experiment.offline_directory).absolute()),
            "data_dir": getattr(experiment, "tmpdir", None),
            "archive_name": archive_name(experiment),
            "project_name": experiment.project_name,
            "workspace": experiment.workspace,
            "start_time": getattr(experiment, "start_time", None),
            "resume_strategy": getattr(experiment, "resume_strategy", None),
        }

    def archives(self) -> list[Path]:
        """Every offline archive of this experiment, in the order they were written (what to upload, in order)."""
        if self._experiment is None or self.mode == "online":
            return []
        return archives_of(Path(self._experiment.offline_directory), self._experiment.get_key())

    def read_back_metrics(self) -> dict[str, dict[int, Any]]:
        """Metric series per step; a later point wins at a step stored twice (see :meth:`read_back_history`)."""
        return {name: dict(points) for name, points in self.read_back_history().items()}

    def read_back_history(self) -> dict[str, list[tuple[int, Any]]]:
        """Every metric message in the offline archives of this experiment, oldest archive first, in message
        order, so a step stored twice shows twice (an online run is read in Comet's UI or ``comet_ml.API``).
        System metrics (``sys.*``) are not the user's: :meth:`read_back_system_metrics`."""
        return self._history(system=False)

    def read_back_system_metrics(self) -> dict[str, list[tuple[int, float]]]:
        """The ``sys.*`` series of the offline archives (Comet's monitor, or the library's samples), as
        :meth:`read_back_history` reads the others, under ``system/`` names (``sys.cpu.percent`` ->
        ``system/cpu.percent``)."""
        return {sample_key(name): points for name, points in self._history(system=True).items()}

    def _history(self, system: bool) -> dict[str, list[tuple[int, Any]]]:
        return read_history(self._local_archives(), system=system)

    def read_back_images(self) -> dict[str, list[tuple[int, Any]]]:
        """Every image (and figure) of the offline archives, per key, as ``(step, HW/HWC uint8 array)``."""
        return read_images(self._local_archives())

    def _local_archives(self) -> list[Path]:
        # A resumed run reads what earlier processes archived before its own archive exists: the
        # dispatcher asks how far the earlier run got, so that what it stored is not delivered twice.
        archives = self.archives()
        if archives:
            return archives
        if self.archive_path is None:
            raise NotImplementedError("comet_ml: only an offline archive can be read back locally")
        return [self.archive_path]

    def report_notes(self) -> list[str]:
        notes = super().report_notes()
        archives = self.archives() if self.archive_path is not None else []
        if len(archives) > 1:
            names = " ".join(map(str, archives))
            notes.append(
                f"offline experiment {self._experiment.get_key()} in {len(archives)} archives (upload in this order: comet upload {names})"
            )
        elif self.archive_path is not None:
            notes.append(f"offline archive {self.archive_path} (upload: comet upload {self.archive_path})")
        return notes
