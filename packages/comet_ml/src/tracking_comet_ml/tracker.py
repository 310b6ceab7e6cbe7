"""Comet backend: the tracker contract mapped onto one ``comet_ml`` experiment per run.

==========================  =========================================================================
contract                    comet_ml
==========================  =========================================================================
``start``                   ``comet_ml.start(...)``: an ``OfflineExperiment`` (zip archive under
                            ``logging_dir``) unless an API key is configured; online start-up is
                            bounded and falls back to offline when the server does not answer
``store_init_configuration``  ``log_parameters`` (nested, Comet flattens with ``|``) + ``config.json`` asset
``log`` / ``log_batch``     ``log_metrics(numbers, step=)``; strings -> ``log_text(text, step=, metadata={"key"})``
``log_images``              ``log_image(png, name=key, step=)`` for each image
``log_table``               ``<name>.csv`` asset (what ``log_table`` writes), with the step attached
``log_figure``              ``log_figure(name, figure, step=)``
``log_artifact(s)``         ``log_asset`` / ``log_asset_folder``
``flush`` / ``finish``      ``experiment.flush()`` / ``experiment.end()`` (offline: writes the archive)
``resume_state``            ``{"experiment_key", "mode", "offline_directory", "data_dir", ...}``; a resumed
                            run: ``comet_ml.start(experiment_key=<saved>, mode="get")`` offline (an archive
                            that appends to the experiment on upload), ``mode="get_or_create"`` online
==========================  =========================================================================
"""

from __future__ import annotations

import csv
import inspect
import io
import json
import os
import sys
import threading
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracking_core import GeneralTracker, notice
from tracking_core.jsonl import table_rows
from tracking_core.notices import logger
from tracking_core.paths import check_name

#: Keyword arguments of ``comet_ml.start``; any other keyword must be an ``ExperimentConfig`` field.
START_KEYWORDS = frozenset(
    {
        "api_key",
        "workspace",
        "project",
        "project_name",
        "experiment_key",
        "mode",
        "online",
        "source",
        "experiment_config",
    }
)

#: ``ExperimentConfig`` field -> (Comet setting, value used when neither kwargs nor Comet's config set it).
#: Comet's defaults capture stdout, log source code, git state and host details, start a CO2 tracker and
#: print a summary; a tracker that runs inside someone else's training loop records what it is given.
QUIET_DEFAULTS: dict[str, tuple[str, Any]] = {
    "auto_output_logging": ("comet.auto_log.output_logger", False),
    "auto_param_logging": ("comet.auto_log.parameters", False),
    "auto_metric_logging": ("comet.auto_log.metrics", False),
    "auto_log_co2": ("comet.auto_log.co2", False),
    "log_code": ("comet.auto_log.code", False),
    "log_graph": ("comet.auto_log.graph", False),
    "parse_args": ("comet.auto_log.cli_arguments", False),
    "log_git_metadata": ("comet.auto_log.git_metadata", False),
    "log_git_patch": ("comet.auto_log.git_patch", False),
    "log_env_details": ("comet.auto_log.env_details", False),
    "log_env_gpu": ("comet.auto_log.env_gpu", False),
    "log_env_host": ("comet.auto_log.env_host", False),
    "log_env_cpu": ("comet.auto_log.env_cpu", False),
    "log_env_network": ("comet.auto_log.env_network", False),
    "log_env_disk": ("comet.auto_log.env_disk", False),
    "display_summary_level": ("comet.display_summary_level", 0),
}
_ENV_DETAIL_FIELDS = ("log_env_gpu", "log_env_host", "log_env_cpu", "log_env_network", "log_env_disk")

#: Read by ``import comet_ml`` itself, so they can only be environment variables. Set when unset:
#: the first installs import hooks that patch ML frameworks, the second starts a Sentry error reporter
#: (a network client and a worker thread that outlives ``end()``) in half of all processes.
IMPORT_ENVIRONMENT = {"COMET_DISABLE_AUTO_LOGGING": "1", "COMET_ERROR_TRACKING_ENABLE": "false"}

DEFAULT_START_TIMEOUT = 30.0
_PROBE_TIMEOUT = 10.0
_MISSING = object()
_IMPORT_LOCK = threading.Lock()
_CREATE_LOCK = threading.Lock()


class CometMLTracker(GeneralTracker):
    """Logs a run to Comet: an offline archive by default, the Comet server when an API key is set.

    Example::

        import tracking_core

        with tracking_core.init("my-project", log_with="comet_ml", logging_dir="runs") as run:
            run.log({"train/loss": 0.5, "note": "warm-up"}, step=0)
        # no API key: runs/my-project/<run id>/comet_ml/<experiment key>-*.zip
        # upload it later with: comet upload runs/my-project/<run id>/comet_ml/*.zip

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
    :data:`QUIET_DEFAULTS`). Comet stores NaN/inf as text, so such points are skipped with a warning.
    """

    name = "comet_ml"
    requires_logging_directory = False
    accepts_non_finite = False

    def __init__(
        self,
        run_name: str,
        logging_dir: str | os.PathLike | None = None,
        *,
        run_dir: str | os.PathLike | None = None,
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
        self._notes: list[str] = []

    @property
    def tracker(self) -> Any:
        """The ``comet_ml`` experiment (``None`` before ``start()``)."""
        return self._experiment

    @property
    def offline_directory(self) -> Path:
        return (self.run_dir if self.run_dir is not None else self.logging_dir / self.run_name) / "comet_ml"

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        if self.run_context is not None and self.run_dir is None:  # the archive sits in the run's folder
            self.run_dir, self.run_id = Path(self.run_context.run_dir), self.run_id or self.run_context.run_id
        comet_ml = _import_comet()
        self._max_key_length = int(getattr(comet_ml.config, "MAXIMAL_KEY_LENGTH", self._max_key_length))
        config = comet_ml.get_config()
        start_kwargs = self._start_kwargs(comet_ml, config)
        online = start_kwargs.pop("online", None)
        if online is None:
            online = _configured(config, "comet.start.online")
        api_key = comet_ml.config.get_api_key(start_kwargs.get("api_key"), config)
        if online and api_key is None:
            raise ValueError(
                "comet_ml: online mode was requested but no API key is configured (COMET_API_KEY or "
                "~/.comet.config); leave `online` unset or pass online=False to record an offline archive"
            )
        if online is None:
            online = api_key is not None
        self._continue_saved_experiment(comet_ml, config, start_kwargs, online)
        if online:
            self._experiment = self._start_online(comet_ml, config, start_kwargs)
        if self._experiment is None:
            directory = start_kwargs["experiment_config"].offline_directory
            if directory:  # Comet refuses a directory that does not exist yet
                Path(directory).expanduser().mkdir(parents=True, exist_ok=True)
            self._experiment = _create(comet_ml, dict(start_kwargs, online=False))
            self.mode = "offline" if self.fallback_reason is None else "offline-fallback"
        else:
            self.mode = "online"
        self._announce()

    def _continue_saved_experiment(self, comet_ml: Any, config: Any, start_kwargs: dict, online: bool) -> None:
        """Point ``comet_ml.start`` at the experiment saved by ``resume_state`` in an earlier process.

        Offline, ``mode="get"`` writes an archive marked to append to the experiment of that key on upload
        (what ``ExistingOfflineExperiment`` is); online, ``"get_or_create"`` also covers an experiment that
        so far exists only as offline archives. A killed earlier process left no archive, only its data in
        Comet's temporary folder: that folder is archived first, with Comet's own archive writer.
        """
        saved = self.run_context.resume if self.run_context is not None else None
        if saved is None:
            return
        key = saved.get("experiment_key") if isinstance(saved, dict) else None
        if not isinstance(key, str) or not key:
            self._not_resumed(
                f"could not resume the saved Comet experiment ({saved!r} names no key); started a new one"
            )
            return
        if (
            "experiment_key" in self.init_kwargs
            or "mode" in self.init_kwargs
            or _configured(config, "comet.experiment_key")
        ):
            self._notes.append(
                f"the experiment chosen in init_kwargs/COMET_EXPERIMENT_KEY was used; the saved Comet experiment {key} was not"
            )
            return
        if saved.get("mode") != "online":
            directory = Path(saved.get("offline_directory") or "")
            salvaged = _archive_abandoned_data(comet_ml, saved, directory)
            if salvaged is not None:
                self._notes.append(f"archived the killed process's Comet data as {salvaged}")
            if not online and not _archives_of(directory, key):
                self._not_resumed(
                    f"could not resume Comet experiment {key} (no archive of it in {directory}); started a new one"
                )
                return
            if not online and "offline_directory" not in self.init_kwargs:
                start_kwargs["experiment_config"].offline_directory = os.fspath(directory)
        start_kwargs["experiment_key"] = key
        start_kwargs["mode"] = "get_or_create" if online else "get"

    def _not_resumed(self, message: str) -> None:
        from tracking_core import warn_once

        self._notes.append(message)
        warn_once(self.name, "resume", message, reason="resume")

    def resume_state(self) -> dict | None:
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
            "archive_name": _archive_name(experiment),
            "project_name": experiment.project_name,
            "workspace": experiment.workspace,
            "start_time": getattr(experiment, "start_time", None),
            "resume_strategy": getattr(experiment, "resume_strategy", None),
        }

    def archives(self) -> list[Path]:
        """Every offline archive of this experiment, in the order they were written (what to upload, in order)."""
        if self._experiment is None or self.mode == "online":
            return []
        return _archives_of(Path(self._experiment.offline_directory), self._experiment.get_key())

    def _start_kwargs(self, comet_ml: Any, config: Any) -> dict[str, Any]:
        kwargs = dict(self.init_kwargs)
        fields = set(inspect.signature(comet_ml.ExperimentConfig).parameters)
        unknown = sorted(set(kwargs) - START_KEYWORDS - fields)
        if unknown:
            raise TypeError(
                f"comet_ml: unknown keyword argument(s) {unknown}; expected comet_ml.start arguments "
                f"{sorted(START_KEYWORDS)} or ExperimentConfig fields {sorted(fields)}"
            )
        explicit = {key: kwargs.pop(key) for key in list(kwargs) if key in fields}
        user_object = kwargs.pop("experiment_config", None)
        if user_object is not None:
            explicit = {**_explicit_fields(comet_ml, user_object, fields), **explicit}
        project = kwargs.pop("project_name", None) or kwargs.pop("project", None)
        if project is None and _configured(config, "comet.project_name") is None:
            project = self.run_name
        kwargs["project_name"] = project
        kwargs["experiment_config"] = comet_ml.ExperimentConfig(**self._with_defaults(explicit, config))
        return kwargs

    def _with_defaults(self, explicit: dict[str, Any], config: Any) -> dict[str, Any]:
        params = dict(explicit)
        env_detail_set = any(
            field in params or _configured(config, QUIET_DEFAULTS[field][0]) is not None for field in _ENV_DETAIL_FIELDS
        )
        for field, (setting, quiet) in QUIET_DEFAULTS.items():
            if field == "log_env_details" and env_detail_set:
                continue  # the user turned one probe on; disabling them all would silently undo it
            if field not in params and _configured(config, setting) is None:
                params[field] = quiet
        if "offline_directory" not in params and _configured(config, "comet.offline_directory") is None:
            params["offline_directory"] = os.fspath(self.offline_directory)
        if "name" not in params and _configured(config, "comet.start.experiment_name") is None:
            params["name"] = self.run_id or self.run_name
        return params

    def _start_online(self, comet_ml: Any, config: Any, start_kwargs: dict[str, Any]) -> Any:
        """The online experiment, or ``None`` (with ``fallback_reason``) when Comet does not answer in time."""
        address = comet_ml.config.get_backend_address(config)
        ca_bundle = config.get_string(None, "comet.include.custom_ca_bundle")
        verify = ca_bundle or comet_ml.config.get_check_tls_certificate(config)
        attempt = _OnlineStart(
            comet_ml, start_kwargs, address + "isAlive/ver", min(_PROBE_TIMEOUT, self.start_timeout), verify
        )
        if not attempt.wait(self.start_timeout):
            self.fallback_reason = f"Comet at {address} did not create the experiment within {self.start_timeout:g} s"
        elif attempt.reason is not None:
            self.fallback_reason = attempt.reason
        elif attempt.error is not None:
            if not _is_network_error(attempt.error):
                raise attempt.error
            self.fallback_reason = f"Comet at {address} failed: {type(attempt.error).__name__}: {attempt.error}"
        elif not attempt.experiment.alive:
            _end_quietly(attempt.experiment)
            self.fallback_reason = f"Comet at {address} could not start the experiment (it would drop every point)"
        else:
            return attempt.experiment
        logger.warning("comet_ml: %s; recording this run offline instead", self.fallback_reason)
        return None

    def _announce(self) -> None:
        experiment = self._experiment
        if self.mode == "online":
            notice(f"comet_ml: experiment {experiment.get_key()} at {experiment.url}")
        elif not experiment.alive:
            notice("comet_ml: Comet is disabled by its configuration (COMET_AUTO_LOG_DISABLE); nothing is recorded")
        else:
            directory = experiment.offline_directory
            notice(
                f"comet_ml: offline experiment {experiment.get_key()}; its archive is written to {directory} at "
                f"finish; upload it later with `comet upload {directory}{os.sep}{experiment.get_key()}*.zip` (needs an API key)"
            )

    def store_init_configuration(self, values: dict) -> None:
        experiment = self._experiment
        experiment.log_parameters(values)
        # Parameters lose the difference between a nested key and a key containing "|"; the asset keeps it exactly.
        self._check(
            experiment.log_asset_data(json.dumps(values, sort_keys=True, default=str), name="config.json"),
            "config.json",
        )

    def sanitize_key(self, key: str) -> str:
        # Comet cuts longer metric names itself; doing it here puts the mapping in the finish report.
        return key[: self._max_key_length]

    def log(self, values: dict, step: int | None = None, **kwargs: Any) -> None:
        numbers = {}
        for key, value in values.items():
            if isinstance(value, str):
                self._check(self._experiment.log_text(value, step=step, metadata={"key": key}), key)
            else:
                numbers[key] = value
        if numbers:
            self._experiment.log_metrics(numbers, step=step, **kwargs)

    def log_batch(self, entries: Sequence[tuple[dict, int | None, dict]]) -> None:
        # One log_metrics call per step: consecutive records of the same step (say, losses and the learning
        # rate logged apart) are merged unless they share a key, since Comet keeps every point it is given.
        pending: dict | None = None
        pending_step: int | None = None
        pending_kwargs: dict = {}
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

    def flush(self) -> None:
        experiment = self._experiment
        if experiment is not None and not self._finished and experiment.alive and not experiment.flush():
            raise RuntimeError("comet_ml: the experiment could not flush its pending data")
        if experiment is not None and not self._finished and self.mode != "online":
            _drain_offline_streamer(experiment)

    def finish(self) -> None:
        experiment = self._experiment
        if experiment is None or self._finished:
            return
        self._finished = True
        alive = experiment.alive
        experiment.end()  # offline: waits for the streamer, then writes the zip
        if self.mode != "online" and alive:
            # A resumed experiment has one archive per process: this one's is named by Comet, else the newest.
            named = _archive_name(experiment)
            mine = Path(experiment.offline_directory) / named if named else None
            archives = [mine] if mine is not None and mine.is_file() else self.archives()
            if not archives:
                raise RuntimeError(
                    f"comet_ml: no offline archive for {experiment.get_key()} in {experiment.offline_directory}"
                )
            self.archive_path = archives[-1]

    def report_notes(self) -> list[str]:
        notes = list(self._notes)
        if self.fallback_reason:
            notes.append(f"recorded offline because {self.fallback_reason}")
        archives = self.archives() if self.archive_path is not None else []
        if len(archives) > 1:
            names = " ".join(map(str, archives))
            notes.append(
                f"offline experiment {self._experiment.get_key()} in {len(archives)} archives (upload in this order: comet upload {names})"
            )
        elif self.archive_path is not None:
            notes.append(f"offline archive {self.archive_path} (upload: comet upload {self.archive_path})")
        return notes

    def read_back_metrics(self) -> dict[str, dict[int, Any]]:
        """Metric series per step; a later point wins at a step stored twice (see :meth:`read_back_history`)."""
        return {name: dict(points) for name, points in self.read_back_history().items()}

    def read_back_history(self) -> dict[str, list[tuple[int, Any]]]:
        """Every metric message in the offline archives of this experiment, oldest archive first, in message
        order, so a step stored twice shows twice (an online run is read in Comet's UI or ``comet_ml.API``)."""
        if self.archive_path is None:
            raise NotImplementedError("comet_ml: only an offline archive can be read back locally")
        history: dict[str, list[tuple[int, Any]]] = {}
        for archive in self.archives() or [self.archive_path]:
            for name, points in read_archive_history(archive).items():
                history.setdefault(name, []).extend(points)
        return history

    # -- optional capabilities ---------------------------------------------------------------
    def log_images(self, values: dict, step: int | None = None, **kwargs: Any) -> None:
        from tracking_core.png import encode_png

        for key, images in values.items():
            for index, image in enumerate(images if isinstance(images, (list, tuple)) else [images]):
                # Comet's own array conversion fails on constant images with numpy 2; PNG bytes are unambiguous.
                data = image if isinstance(image, (str, os.PathLike)) else io.BytesIO(encode_png(image))
                metadata = {"key": key, "index": index, **kwargs.get("metadata", {})}
                options = {name: value for name, value in kwargs.items() if name != "metadata"}
                self._check(self._experiment.log_image(data, name=key, step=step, metadata=metadata, **options), key)

    def log_table(self, table_name, columns=None, data=None, dataframe=None, step=None, **kwargs) -> None:
        # The CSV that log_table writes, logged with log_asset because log_table has no step and reads an
        # existing file of the same name from the working directory instead of the data.
        columns, rows = table_rows(columns, data, dataframe)
        text = io.StringIO()
        writer = csv.writer(text)
        writer.writerow(columns)
        writer.writerows(rows)
        buffer = io.BytesIO(text.getvalue().encode("utf-8"))
        file_name = table_name if table_name.endswith(".csv") else f"{table_name}.csv"
        metadata = {"table": table_name, **kwargs.get("metadata", {})}
        options = {name: value for name, value in kwargs.items() if name != "metadata"}
        self._check(
            self._experiment.log_asset(buffer, file_name=file_name, step=step, metadata=metadata, **options), table_name
        )

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        self._check(self._experiment.log_figure(figure_name=name, figure=figure, step=step, **kwargs), name)

    def log_artifact(self, local_path: str | os.PathLike, artifact_path: str | None = None) -> None:
        file_name = os.path.basename(local_path)
        if artifact_path:
            file_name = f"{artifact_path.rstrip('/')}/{file_name}"
        self._check(self._experiment.log_asset(os.fspath(local_path), file_name=file_name), os.fspath(local_path))

    def log_artifacts(self, local_dir: str | os.PathLike, artifact_path: str | None = None) -> None:
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


# -- helpers ---------------------------------------------------------------------------------------


def read_archive_history(path: str | os.PathLike) -> dict[str, list[tuple[int, Any]]]:
    """``{name: [(step, value), ...]}`` from every metric message of an offline archive's ``messages.json``
    (one JSON message per line), in message order."""
    with zipfile.ZipFile(path) as archive:
        lines = archive.read("messages.json").decode("utf-8").splitlines()
    history: dict[str, list[tuple[int, Any]]] = {}
    for line in lines:
        message = json.loads(line) if line.strip() else {}
        if message.get("type") == "metric_msg":
            metric = message["payload"]["metric"]
            history.setdefault(metric["metricName"], []).append((metric["step"], metric["metricValue"]))
    return history


def read_archive_metrics(path: str | os.PathLike) -> dict[str, dict[int, Any]]:
    """``{name: {step: value}}`` of an offline archive, the last message at a step winning."""
    return {name: dict(points) for name, points in read_archive_history(path).items()}


def _archive_name(experiment: Any) -> str | None:
    try:
        return experiment._get_offline_archive_file_name()
    except Exception:  # internal name changed: the killed process's data cannot be archived under its name
        return None


def _archive_started(archive: Path) -> int:
    """When the archive's experiment part started (its ``experiment.json``), for ordering the parts."""
    with zipfile.ZipFile(archive) as opened:
        return int(json.loads(opened.read("experiment.json")).get("start_time") or 0)


def _archives_of(directory: Path, key: str) -> list[Path]:
    """The complete archives of experiment ``key`` in ``directory``, oldest part first.

    Comet creates the archive's file when the experiment starts and fills it at ``end()``; an archive
    without ``experiment.json`` is the placeholder of a process that never ended.
    """
    found = []
    for archive in directory.glob(f"{key}*.zip"):
        try:
            found.append((_archive_started(archive), archive))
        except (KeyError, zipfile.BadZipFile, OSError, ValueError):
            continue
    return [archive for _, archive in sorted(found)]


def _archive_abandoned_data(comet_ml: Any, saved: dict, directory: Path) -> Path | None:
    """Archive what a killed process left in Comet's temporary folder, as Comet's ``end()`` would have.

    Returns the archive written, or None when there is nothing to recover (the process ended normally, or
    the temporary folder is gone, e.g. after a reboot).
    """
    data_dir, name = saved.get("data_dir"), saved.get("archive_name")
    if not data_dir or not name or not (Path(data_dir) / "messages.json").is_file():
        return None
    from comet_ml.offline_utils import create_experiment_archive, write_experiment_meta_file
    from comet_ml.utils import local_timestamp

    write_experiment_meta_file(
        tempdir=data_dir,
        experiment_key=saved["experiment_key"],
        workspace=saved.get("workspace"),
        project_name=saved.get("project_name"),
        start_time=saved.get("start_time"),
        stop_time=local_timestamp(),
        tags=[],
        resume_strategy=saved.get("resume_strategy") or "get_or_create",
        comet_start_sourced=True,
    )
    directory.mkdir(parents=True, exist_ok=True)
    archive, _ = create_experiment_archive(
        offline_directory=os.fspath(directory), offline_archive_file_name=name, data_dir=data_dir, logger=logger
    )
    import shutil

    shutil.rmtree(data_dir, ignore_errors=True)  # as end() does: the archive now holds it
    return Path(archive)


def _drain_offline_streamer(experiment: Any, timeout: float = 10.0) -> None:
    """Wait until Comet's offline streamer wrote every queued message to its ``messages.json``.

    Comet's offline ``flush()`` returns at once; its streamer thread writes (and flushes) each message to the
    experiment's temporary folder, so once the queue is empty and the message in hand is written, what was
    logged survives a kill of the process (see ``_archive_abandoned_data``).
    """
    import time

    streamer = getattr(experiment, "streamer", None)
    queue = getattr(streamer, "messages", None)
    if queue is None:
        return
    deadline = time.monotonic() + timeout
    while not queue.empty() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # a message taken off the queue is written under the lock below
    lock = getattr(streamer, "__write_lock__", None)
    if lock is not None:
        with lock:  # held while a message is written
            pass


def _configured(config: Any, setting: str) -> Any:
    """The value of a Comet setting when the user configured it (environment, .env, .comet.config), else None."""
    value = config.get_raw(None, setting, default=_MISSING)
    return None if value is _MISSING else value


def _explicit_fields(comet_ml: Any, user_object: Any, fields: set[str]) -> dict[str, Any]:
    """Fields of a user's ``ExperimentConfig`` that differ from what Comet's configuration alone gives."""
    baseline = comet_ml.ExperimentConfig()
    explicit = {}
    for field in fields:
        attribute = "_disabled" if field == "disabled" else field
        value = getattr(user_object, attribute, None)
        if value != getattr(baseline, attribute, None):
            explicit[field] = value
    return explicit


class _BlockMatplotlib:
    """Meta-path finder that hides matplotlib from ``import comet_ml`` in one thread.

    comet_ml imports ``matplotlib.axes`` at import time only to recognise Axes objects; that import costs
    ~0.4 s and builds matplotlib's font cache under ``~``. Other threads are not affected.
    """

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if threading.get_ident() == self.thread and (name == "matplotlib" or name.startswith("matplotlib.")):
            raise ModuleNotFoundError(f"{name} is not loaded while comet_ml is imported", name=name)


def _import_comet() -> Any:
    with _IMPORT_LOCK:
        if "comet_ml" in sys.modules:  # imported by the application: its settings stay as they are
            import comet_ml

            return comet_ml
        for variable, value in IMPORT_ENVIRONMENT.items():
            os.environ.setdefault(variable, value)
        excepthook = sys.excepthook
        blocker = _BlockMatplotlib() if "matplotlib" not in sys.modules else None
        if blocker is not None:
            sys.meta_path.insert(0, blocker)
        try:
            import comet_ml
        finally:
            if blocker is not None:
                sys.meta_path.remove(blocker)
            # comet_ml wraps sys.excepthook at import; the dispatcher already finishes runs at exit.
            sys.excepthook = excepthook
        return comet_ml


def _is_live(experiment: Any) -> bool:
    return bool(getattr(experiment, "alive", False)) and not getattr(experiment, "ended", True)


def _create(comet_ml: Any, start_kwargs: dict[str, Any]) -> Any:
    """``comet_ml.start`` without Comet's one-experiment-per-process rule.

    Comet ends the process's "running experiment" when another one is created, and ``comet_ml.start``
    returns it instead of a new one when its settings match: either would merge or cut off another run.
    The running experiment is set aside while this run's is created, then put back.
    """
    experiment = None
    with _CREATE_LOCK:
        previous = comet_ml.get_running_experiment()
        comet_ml.config.set_global_experiment(None)
        if start_kwargs.get("online") is False:
            experiment = comet_ml.start(**start_kwargs)
    if experiment is None:  # online: waits on the network, so other runs are not held behind the lock
        experiment = comet_ml.start(**start_kwargs)
    with _CREATE_LOCK:
        if previous is not None and previous is not experiment and _is_live(previous):
            comet_ml.config.set_global_experiment(previous)
    return experiment


def _end_quietly(experiment: Any) -> None:
    try:
        experiment.end()
    except Exception:  # a dead or abandoned experiment; nothing depends on it
        pass


def _is_network_error(error: BaseException) -> bool:
    try:
        import requests
    except ImportError:  # pragma: no cover - comet_ml depends on requests
        return isinstance(error, (ConnectionError, TimeoutError))
    return isinstance(error, (ConnectionError, TimeoutError, requests.exceptions.RequestException))


def _unreachable(url: str, timeout: float, verify: Any) -> str | None:
    """Why the Comet server at ``url`` cannot be used now, or ``None`` when it answers HTTP at all."""
    import requests

    try:
        requests.get(url, timeout=(timeout, timeout), verify=verify, allow_redirects=False).close()
    except requests.exceptions.SSLError:
        return None  # it answered; Comet's own TLS settings decide the rest
    except requests.exceptions.RequestException as error:
        return f"Comet at {url} is unreachable ({type(error).__name__})"
    return None


class _OnlineStart:
    """Creates the online experiment in a daemon thread so that a silent server costs at most a deadline.

    A start that is abandoned and completes later ends its experiment at once.
    """

    def __init__(
        self, comet_ml: Any, start_kwargs: dict[str, Any], probe_url: str, probe_timeout: float, verify: Any
    ) -> None:
        self.experiment: Any = None
        self.error: BaseException | None = None
        self.reason: str | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._abandoned = False
        arguments = (comet_ml, dict(start_kwargs, online=True), probe_url, probe_timeout, verify)
        threading.Thread(target=self._run, args=arguments, name="tracking-comet_ml-online-start", daemon=True).start()

    def _run(
        self, comet_ml: Any, start_kwargs: dict[str, Any], probe_url: str, probe_timeout: float, verify: Any
    ) -> None:
        experiment = None
        try:
            self.reason = _unreachable(probe_url, probe_timeout, verify)
            if self.reason is None:
                experiment = _create(comet_ml, start_kwargs)
        except BaseException as error:  # handed to the waiting thread
            self.error = error
        with self._lock:
            if self._abandoned:
                if experiment is not None:
                    _end_quietly(experiment)
                return
            self.experiment = experiment
            self._done.set()

    def wait(self, timeout: float) -> bool:
        """True when the attempt finished (either way) within ``timeout``; False abandons it."""
        self._done.wait(timeout)
        with self._lock:
            if not self._done.is_set():
                self._abandoned = True
                return False
        return True
