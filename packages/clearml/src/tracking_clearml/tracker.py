"""``clearml``: the ClearML backend.

How the contract maps onto the SDK (``task`` is the ``clearml.Task``, ``logger`` its ``Logger``):

==========================  ===============================================================================
``start``                   ``Task.init`` (an offline session under ``logging_dir`` unless credentials exist),
                            or the task the application already created (``Task.current_task()``); with
                            ``run_context.resume``: ``Task.init(reuse_last_task_id=<saved id>, continue_last_task=0)``
``resume_state``            ``{"task_id", "mode", "session_dir"}`` (the offline session folder, else None)
``task`` / ``tracker``      the ``clearml.Task``
``store_init_configuration`` the configuration object ``General`` (JSON, the merged config so far: exact for any
                            key) and the Hyperparameters section ``General`` (``task.connect``, merged)
``log``, numbers            ``logger.report_scalar(title, series, value, iteration=step)``, (title, series) from
                            :func:`~tracking_clearml.naming.title_series`: ``a/b/c`` -> (``a/b``, ``c``);
                            as accelerate, ``eval_loss`` -> (``loss``, ``eval``), ``loss`` -> (``loss``, ``train``)
``log``, ``step=None``      ``logger.report_single_value(key, value)`` (a summary value, not a series)
``log``, strings            ``logger.report_text("[step N] key: value")`` (the task's console log)
``log_images``              ``logger.report_image(title, series, image=<HW/HWC uint8>)`` (debug samples in
                            ClearML's image format, JPEG by default, as accelerate stores them;
                            ``lossless_images=True``: PNG files, exact pixels); several images under one key:
                            series ``<series>/0``, ``<series>/1``, ...
``log_table``               ``logger.report_table(title, series, table_plot=DataFrame or rows)`` (plots); without
                            ``columns`` the first row of ``data`` is the header, as in accelerate
``log_figure``              matplotlib: the figure as a PNG debug sample; plotly: ``logger.report_plotly``
``log_histogram``           ``logger.report_histogram(title, series, counts, iteration=step)`` (bars at the bins)
``log_artifact(s)``         ``task.upload_artifact(name, path)`` (a folder is uploaded as a zip)
``flush``                   ``task.flush(wait_for_uploads=True)``
``finish``                  ``task.close()``, then the status the run ended with (``run_end``): ``mark_completed``,
                            ``mark_failed(status_reason=<status>)`` or ``mark_stopped(status_message=<status>)``
                            (:mod:`~tracking_clearml.run_end`); never for a task created outside this tracker
per-rank runs               task ``<name>-rank<N>`` with tags ``group:<job run id>``, ``rank:<N>``
==========================  ===============================================================================
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar

from tracking_core import GeneralTracker, Histogram
from tracking_core.kit import image_list, logger, merge_config, notice, sdk_object, to_hwc_uint8, warn_once

from .media import bars, figure_file, png_file, table_plot
from .naming import KEY_MAP_OBJECT, SAMPLE_PREFIX, key_of, monitor_title_series, text_line, title_series
from .reader import OfflineSession
from .run_context import script_fields
from .run_end import end_task
from .startup import (
    LEAKED_ENV,
    announce,
    cache_dir_during_init,
    choose_mode,
    continue_saved_task,
    forget_foreign_offline_master,
    init_keywords,
    report_from_a_thread,
    restore_environ,
)


class ClearMLTracker(GeneralTracker):
    """Sends a run to ClearML: a Task with scalars, text, debug images, tables, plots and artifacts.

    Example::

        import tracking_core

        with tracking_core.init("my-project", log_with="clearml", logging_dir="runs", config={"lr": 3e-4}) as run:
            for step in range(100):
                run.log({"train/loss": 1 / (step + 1), "lr": 3e-4}, step=step)

    With no ClearML credentials (and no explicit mode), the run is a ClearML **offline session** in
    ``<logging_dir>/clearml/offline/<task id>/``, zipped at finish; import it into a server later with
    ``clearml-task --import-offline-session <zip>`` (or ``Task.import_offline_session(<zip>)``).
    With credentials, the server is asked to answer within ``server_timeout`` seconds before
    ``Task.init`` (whose own retries would block for hours); if it does not, the run falls back to an
    offline session with a warning, or fails to start when ``CLEARML_OFFLINE_MODE=0`` demands online mode
    (the dispatcher then keeps the records in its spill journal).

    ``kwargs`` go to ``Task.init`` and win over the defaults here: ``project_name`` and ``task_name``
    default to ``CLEARML_PROJECT`` / ``CLEARML_TASK`` or the run's project name; framework patching,
    repository detection, stdout/stderr capture and argparse capture are off and ``reuse_last_task_id=False``.
    ClearML's resource monitor is on, as ClearML defaults it (``:monitor:machine`` / ``:monitor:gpu``
    scalars from 30 s into the run); with ``run_context.system_metrics`` (``init(system_metrics=True)``) it
    is off and the library's samples go under those titles instead (:meth:`log_system_metrics`). A task
    the application created itself (``Task.current_task()``) is
    reused and never closed by this tracker. ``lossless_images=True`` stores images as PNG files (exact
    pixels) instead of ClearML's own encoding of arrays (JPEG unless ``sdk.metrics.images.format`` says
    otherwise), which is what accelerate's users find in the session.

    Honoured SDK settings: ``clearml.conf`` / ``CLEARML_CONFIG_FILE``; ``CLEARML_API_HOST``,
    ``CLEARML_API_ACCESS_KEY``, ``CLEARML_API_SECRET_KEY``, ``CLEARML_AUTH_TOKEN`` (online);
    ``CLEARML_OFFLINE_MODE`` (1: offline, 0: online, unset: decided as above); ``CLEARML_CACHE_DIR`` or
    ``sdk.storage.cache.default_base_dir`` (where offline sessions go instead of ``logging_dir``);
    ``sdk.development.report_use_subprocess`` (this tracker reports from a thread unless it is set).
    """

    name = "clearml"
    requires_logging_directory = False
    #: ClearML stores NaN/inf as 0.0: such points are skipped (with one warning per key) instead.
    accepts_non_finite = False
    #: Seconds the ClearML server gets to answer before the run goes offline instead.
    server_timeout: ClassVar[float] = 5.0

    def __init__(
        self,
        run_name: str | None = None,
        *,
        logging_dir: str | os.PathLike[str] | None = None,
        lossless_images: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.run_name = run_name
        self.lossless_images = lossless_images
        self.logging_dir = Path(logging_dir if logging_dir is not None else "runs")
        self.init_kwargs = kwargs
        #: How the task was opened: "offline", "online", "remote" (clearml-agent) or "external".
        self.mode: str | None = None
        self._task: Any = None
        self._logger: Any = None
        self._external = False
        self._closed = False
        self._pairs: dict[str, tuple[str, str]] = {}
        self._owners: dict[tuple[str, str], str] = {}
        #: (title, series) -> key for keys :func:`key_of` would not give back; stored in the task for readers.
        self._key_map: dict[tuple[str, str], str] = {}
        self._key_map_saved = 0
        self._config: dict[str, Any] = {}
        self._environ_before: dict[str, str | None] = {}

    @property
    def offline_folder(self) -> Path | None:
        """The offline session folder (its zip is written next to it at finish), or ``None`` online."""
        folder = self._task.get_offline_mode_folder() if self._task is not None else None
        return Path(folder) if folder else None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._environ_before = {name: os.environ.get(name) for name in LEAKED_ENV}
        from clearml import Task

        forget_foreign_offline_master(Task)
        current = Task.current_task()
        if current is not None:
            self._task, self._external, self.mode = current, True, "external"
            self._logger = current.get_logger()
            notice(f"clearml: logging into the application's task {current.id} (left open at finish)")
            return
        self.mode, cache_dir, unanswered = choose_mode(Task, self.logging_dir, self.server_timeout)
        if unanswered is not None and self.mode == "online":  # CLEARML_OFFLINE_MODE=0 and no server
            self.add_note(f"not started: {unanswered} and CLEARML_OFFLINE_MODE=0 asks for online mode")
            raise ConnectionError(
                f"{unanswered} and CLEARML_OFFLINE_MODE=0 asks for online mode (Task.init would retry for hours)"
            )
        if unanswered is not None:
            self.add_note(f"fell back to an offline session: {unanswered}")
            logger.warning("clearml: %s; this run is recorded as an offline session instead", unanswered)
        if self.mode == "offline":
            Task.set_offline(offline_mode=True)
        report_from_a_thread(Task)
        kwargs = init_keywords(self)
        cache_dir = continue_saved_task(self, kwargs, cache_dir)
        with cache_dir_during_init(cache_dir):
            self._task = Task.init(**kwargs)
        self._logger = self._task.get_logger()
        announce(self._task, self.offline_folder)

    # -- SDK objects -------------------------------------------------------------------------
    tracker = task = sdk_object(
        "_task",
        "The ``clearml.Task`` of this run, ``task`` as accelerate's ``ClearMLTracker`` names it (``None`` before ``start``).",
    )

    # -- config ------------------------------------------------------------------------------
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        """The config so far: the configuration object ``General`` (as accelerate names it) and the
        Hyperparameters section ``General``; a later call merges its keys into both."""
        self._config = merge_config(self._config, values)
        # As JSON, exact for any key: connect_configuration(dict) goes through HOCON, which raises on keys
        # such as "a.b" or "x@y" and cannot tell None from "".
        text = json.dumps(self._config, indent=2, ensure_ascii=False, default=str)
        self._task.set_configuration_object("General", config_text=text, config_type="json")
        # Hyperparameters: nested keys become "a/b", lists their text, and None becomes "".
        self._task.connect(values, name="General")

    # -- run context (docs/run-context.md) ----------------------------------------------------------
    def log_run_context(self, context: dict[str, Any]) -> None:
        """ClearML's own script section (the task's *Execution* tab): repository, branch, commit,
        uncommitted changes, working directory and entry point (no ``git`` run: the values come
        captured); the whole context as the ``Run context`` configuration object."""
        fields = script_fields(context)
        if fields is not None:
            from clearml.backend_api.services import tasks

            # A new script section: with repository detection off the task has none for set_script to edit.
            self._task._update_script(tasks.Script(**fields))
        text = json.dumps(context, indent=2, default=str)
        self._task.set_configuration_object("Run context", config_text=text, config_type="json")

    # -- metrics -----------------------------------------------------------------------------
    def _pair(self, key: str) -> tuple[str, str]:
        pair = self._pairs.get(key)
        if pair is None:
            pair = self._pairs[key] = title_series(key)
            owner = self._owners.setdefault(pair, key)
            if owner != key:
                warn_once(
                    self.name,
                    key,
                    f"shares ClearML title/series {pair} with {owner!r}; their points land in one series",
                    reason="pair-clash",
                )
            elif key_of(*pair) != key:
                self._key_map[pair] = key
        return pair

    def log(
        self, values: dict[str, Any], step: int | None = None, *, single_value: bool = False, **kwargs: Any
    ) -> None:
        """Scalars per step; ``step=None`` or ``single_value=True`` records summary values instead."""
        logger = self._logger
        for key, value in values.items():
            if isinstance(value, str):
                logger.report_text(text_line(key, value, step), print_console=False)
            elif not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
                warn_once(
                    self.name,
                    key,
                    f'Accelerator is attempting to log a value of "{value}" of type {type(value)} for key "{key}" '
                    "as a scalar. This invocation of ClearML logger's  report_scalar() is incorrect so we dropped "
                    "this attribute.",
                    reason="not-a-number",
                )
            elif step is None or single_value:
                logger.report_single_value(key, value, **kwargs)
            else:
                title, series = self._pair(key)
                logger.report_scalar(title, series, value, iteration=step, **kwargs)

    # -- media -------------------------------------------------------------------------------
    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """Debug samples: ``{key: image, list of images or NCHW/NHWC batch}``.

        One image is reported as ``(title, series)`` of its key, as accelerate does; several are the
        series ``<series>/0``, ``<series>/1``, ... of that title. ClearML encodes each as accelerate's
        images are (JPEG by default), or as PNG with ``lossless_images=True``. An image with an alpha
        channel is always a PNG file: JPEG has no alpha, and ClearML's uploader thread would drop it.
        """
        # ClearML encodes in its uploader thread, where a missing Pillow drops the image silently: ask
        # here, so that the dispatcher skips images with one warning and a report line instead.
        import PIL.Image  # noqa: F401

        for key, value in values.items():
            title, series = self._pair(key)
            images = image_list(value)
            for index, image in enumerate(images):
                variant = series if len(images) == 1 else f"{series}/{index}"
                pixels = to_hwc_uint8(image)
                if not self.lossless_images and not (pixels.ndim == 3 and pixels.shape[-1] == 4):
                    self._logger.report_image(title, variant, iteration=step, image=pixels, **kwargs)
                    continue
                path = png_file(pixels)
                try:
                    self._logger.report_image(
                        title, variant, iteration=step, local_path=path, delete_after_upload=True, **kwargs
                    )
                except BaseException:
                    Path(path).unlink(missing_ok=True)
                    raise

    def log_table(
        self,
        table_name: str,
        columns: list[str] | None = None,
        data: list[list[Any]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
        **kwargs: Any,
    ) -> None:
        if dataframe is None and data is None:
            raise ValueError("`ClearMLTracker.log_table` requires that `data` to be supplied if `dataframe` is `None`")
        title, series = self._pair(table_name)
        if dataframe is None:
            dataframe = table_plot(columns, data)
        self._logger.report_table(title, series, iteration=step, table_plot=dataframe, **kwargs)

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        """A matplotlib figure as a PNG debug sample (``kwargs`` go to ``savefig``); a plotly figure as a plot."""
        title, series = self._pair(name)
        if hasattr(figure, "to_plotly_json") or isinstance(figure, dict):
            self._logger.report_plotly(title, series, figure, iteration=step, **kwargs)
            return
        path = figure_file(figure, **kwargs)
        try:
            self._logger.report_image(title, series, iteration=step, local_path=path, delete_after_upload=True)
        except BaseException:
            Path(path).unlink(missing_ok=True)
            raise

    # -- histogram ---------------------------------------------------------------------------
    def log_histogram(self, name: str, histogram: Histogram, step: int | None = None, **kwargs: Any) -> None:
        """A bar chart of the counts, one bar per bin at its centre and as wide as the bin (the Plots tab)."""
        title, series = self._pair(name)
        centres, widths = bars(histogram)
        self._logger.report_histogram(
            title,
            series,
            values=list(histogram.counts),
            iteration=step,
            xaxis=kwargs.pop("xaxis", name),
            yaxis=kwargs.pop("yaxis", "count"),
            data_args={"x": centres, "width": widths, **kwargs.pop("data_args", {})},
            **kwargs,
        )

    # -- artifacts ---------------------------------------------------------------------------
    def log_artifact(self, local_path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        name = os.path.basename(os.fspath(local_path))
        self._upload(f"{artifact_path.strip('/')}/{name}" if artifact_path else name, local_path)

    def log_artifacts(self, local_dir: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        self._upload(artifact_path or os.path.basename(os.path.abspath(local_dir)), local_dir)

    def _upload(self, name: str, path: str | os.PathLike[str]) -> None:
        # wait_on_upload: the copy (offline) or upload is done before the caller can change the file.
        if not self._task.upload_artifact(name, artifact_object=os.fspath(path), wait_on_upload=True):
            raise RuntimeError(f"ClearML did not store artifact {name!r} from {path}")

    def log_system_metrics(self, values: dict[str, float], index: int, timestamp: float) -> None:
        """Where ClearML's resource monitor reports: scalars under ``:monitor:machine`` / ``:monitor:gpu``
        (the task's system metrics in ClearML's web app), at iteration = the sample's index."""
        for key, value in values.items():
            title, series = monitor_title_series(key)
            self._logger.report_scalar(title, series, value, iteration=index)

    def read_back_system_metrics(self) -> dict[str, list[tuple[int, float]]]:
        """The ``:monitor:`` scalars of the offline session, per ``system/<series>`` (the name the sample was
        logged under: ``(":monitor:gpu", "gpu.0.utilization_percent")`` -> ``system/gpu.0.utilization_percent``)."""
        system: dict[str, list[tuple[int, float]]] = {}
        for (_title, series), points in self._session().system_scalars().items():
            system.setdefault(SAMPLE_PREFIX + series, []).extend(points)
        return system

    # -- flush / finish ----------------------------------------------------------------------
    def _save_key_map(self) -> None:
        if len(self._key_map) != self._key_map_saved:
            rows = [[title, series, key] for (title, series), key in sorted(self._key_map.items())]
            self._task.set_configuration_object(
                KEY_MAP_OBJECT,
                config_text=json.dumps(rows, ensure_ascii=False),
                config_type="json",
                description="[title, series, metric key] for keys whose title/series do not spell them",
            )
            self._key_map_saved = len(self._key_map)

    def flush(self) -> None:
        if self._task is not None and not self._closed:
            self._save_key_map()
            self._task.flush(wait_for_uploads=True)

    def finish(self) -> None:
        if self._task is None or self._closed:
            return
        self._closed = True
        self._save_key_map()
        if self._external:
            self._task.flush(wait_for_uploads=True)
        else:
            self._task.close()
            if self.mode != "remote":  # under clearml-agent the agent sets the status from the process's exit
                end_task(self._task, self.run_end)
            restore_environ(self._environ_before)

    # -- resume, read-back, notes ------------------------------------------------------------
    def resume_state(self) -> dict[str, Any] | None:
        """The task id and, offline, its session folder; ``None`` for a task the application created."""
        if self._task is None or self._external:
            return None
        folder = self.offline_folder
        return {"task_id": self._task.id, "mode": self.mode, "session_dir": str(folder) if folder else None}

    def _session(self) -> OfflineSession:
        folder = self.offline_folder
        if folder is None:
            raise NotImplementedError("an online ClearML task is read back in the ClearML web app")
        return OfflineSession(folder)

    def read_back_metrics(self) -> dict[str, dict[int, Any]]:
        """Scalars per step; the last event at a step wins (see :meth:`read_back_history`)."""
        return {key: dict(points) for key, points in self.read_back_history().items()}

    def read_back_history(self) -> dict[str, list[tuple[int, Any]]]:
        """Every scalar report event of an offline session, read from its files in order (an online task lives
        on the server), so a step reported twice shows twice."""
        return self._session().scalar_history()

    def read_back_images(self) -> dict[str, list[tuple[int, Any]]]:
        """The debug images of an offline session, per key, as ``(step, HW/HWC uint8 array)``."""
        return self._session().image_arrays()

    def report_notes(self) -> list[str]:
        notes = super().report_notes()
        folder = self.offline_folder
        if folder is None or self._external:
            return notes
        return [*notes, f"offline session {folder}.zip: upload with `clearml-task --import-offline-session`"]
