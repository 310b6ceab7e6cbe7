"""Trackio adapter: the tracker contract mapped onto one ``trackio.Run`` and Trackio's local SQLite store.

Contract -> SDK:

* ``start``                    -> ``trackio.init(project=<project_name>, **init_kwargs)``; the per-run ``Run`` is kept
                                  (with ``run_context.resume``: ``name=<saved run>, resume="must"`` in the saved store)
* ``resume_state``             -> ``{"project", "name", "id", "storage_dir"}`` of that ``Run``
* ``store_init_configuration`` -> ``run.config.update(...)`` (stored with the run's next metrics row)
* ``log`` (numbers, strings)   -> ``run.log(values, step=step, **kwargs)``: it only appends to Trackio's queue,
                                  which its own thread writes in batches every 0.5 s (so no ``log_batch`` override)
* ``log_images``               -> ``trackio.Image(<PNG file>)`` values in ``run.log``; a list under ``key`` is
                                  stored as ``key``, ``key/1``, ``key/2``, ... (Trackio takes one image per key)
* ``log_table``                -> ``trackio.Table`` in ``run.log``
* ``log_figure``               -> the figure rendered to PNG, as a ``trackio.Image``
* ``log_histogram``            -> ``trackio.Histogram(np_histogram=(counts, edges))`` in ``run.log``
* ``log_artifact(s)``          -> ``run.log_artifact(trackio.Artifact)`` (versioned, content-addressed)
* ``log_system_metrics``       -> ``run.log_system(values)``: Trackio's system metrics (by time, no step)
* ``flush``                    -> writes Trackio's queue to SQLite now, in this thread
* ``finish``                   -> ``run.finish()`` (drains the queue and stops Trackio's thread)
                                  whatever ``run_end`` says: Trackio keeps no run status, exit code or end
                                  time, and stamps the run's start (config ``_Created``) itself in ``init``
* per-rank runs                -> ``trackio.init(group=<group>, name=<name>-rank<N>)``

Releases before 0.2 take no step in ``Run.log``: 0.0.17 to 0.0.20 get their rows written with their steps
(:mod:`tracking_trackio.older.v0_0_17`), 0.0.3 to 0.0.16, whose store holds no step, through their own storage with
the run's config (:mod:`tracking_trackio.older.v0_0_3`); :mod:`tracking_trackio.older.before_v0_24` has what else
differs.

Images are handed to Trackio as PNG files written from :func:`tracking_core.kit.to_hwc_uint8`, which
Trackio copies as they are: given an array or a PIL image it would store every image as RGBA.

Where the data goes: ``<logging_dir>/trackio`` (``TRACKIO_DIR`` wins), one directory per process at a
time (:mod:`tracking_trackio.startup`).
"""

from __future__ import annotations

import contextvars
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, cast

from tracking_core import GeneralTracker, Histogram
from tracking_core.kit import (
    check_optional_name,
    figure_to_png,
    image_list,
    merge_config,
    sdk_object,
    table_rows,
    warn_once,
)

from . import reader, startup
from .media import write_png, write_png_bytes
from .older import before_v0_24, v0_0_3, v0_0_17

#: Metric keys Trackio renames to ``__<key>`` (with a warning on every call); used until trackio is imported.
_FALLBACK_RESERVED_KEYS = ("project", "run", "timestamp", "step", "time", "metrics")


class TrackioTracker(GeneralTracker):
    """Logs to `Trackio <https://github.com/gradio-app/trackio>`_'s local store: no account, server or network.

    Example::

        import tracking_core

        with tracking_core.init("my-project", log_with="trackio", logging_dir="runs",
                                config={"lr": 1e-3}, init_kwargs={"trackio": {"name": "baseline"}}) as run:
            for step in range(100):
                run.log({"train/loss": 1 / (step + 1), "phase": "warmup"}, step=step)

        # then:  TRACKIO_DIR=runs/trackio trackio show --project my-project

    ``project_name`` becomes the Trackio project; ``init_kwargs`` go to ``trackio.init`` (``name``, ``group``,
    ``resume``, ``auto_log_gpu``, ``space_id``, ``server_url``, ...). Default set here, overridable:
    ``embed=False`` (no dashboard server in notebooks).

    Trackio's own system metrics are left as Trackio defaults them, as with accelerate's ``trackio.init``:
    CPU, memory, disk and network every 10 s when psutil is installed (``auto_log_cpu``, trackio 0.27+), GPUs
    when NVML or Apple Silicon is found (``auto_log_gpu``, 0.14+), in the run's system metrics. With
    ``init(system_metrics=True)`` both are off and the library's samples go there instead, through
    ``Run.log_system`` (``system/cpu.percent``, ...; Trackio keeps system metrics by time, stamped when
    delivered). A trackio before 0.14 has no system metrics: its samples are counted as missed, with a note.

    Honoured SDK settings: ``TRACKIO_DIR`` (storage directory; wins over ``logging_dir``, even when set after
    trackio was imported), ``TRACKIO_SPACE_ID`` / ``TRACKIO_SERVER_URL`` / ``TRACKIO_WRITE_TOKEN`` (log to a
    Space or a self-hosted server instead), ``TRACKIO_STORAGE_MODE``, ``TRACKIO_SQLITE_*``, ``HF_HOME``.
    Without ``TRACKIO_DIR`` the data goes to ``<logging_dir>/trackio/<project>.db`` (+ ``media/``,
    ``artifacts/``); with ``logging_dir=None`` to Trackio's default (``$HF_HOME/trackio``).

    Per-rank runs (``run_context.group`` set by ``per_rank=True``): every rank's run is in the Trackio
    group ``<group>`` and named ``<name>-rank<N>``, ``<name>`` being the ``name=`` given or the group.
    """

    name = "trackio"
    requires_logging_directory = False
    main_process_only = False

    def __init__(self, run_name: str, *, logging_dir: str | os.PathLike[str] | None = None, **kwargs: Any) -> None:
        super().__init__()
        self._config: dict[str, Any] = {}  # the run's config so far, for merging a later log_config
        check_optional_name(kwargs.get("name"), "name")  # Trackio saves media under media/<project>/<name>/
        self.run_name = run_name
        self.logging_dir = logging_dir
        # Resolved now, so a later chdir of the training script does not move the store.
        self._wanted_dir = Path(os.path.abspath(logging_dir)) / "trackio" if logging_dir is not None else None
        self.init_kwargs = kwargs
        self.storage_dir: Path | None = None
        self._run: Any = None
        self._finished = False
        self._context: contextvars.Context | None = None
        self._config_pending = False
        self._writer: v0_0_17.StepKeepingWriter | v0_0_3.RowWriter | None = None  # trackio 0.0.x: rows in this thread
        self._first_writer: v0_0_3.RowWriter | None = None  # trackio 0.0.3 to 0.0.16: no steps, config saved at once
        self._last_step: int | None = None
        self._seen_sdk_failures: set[str] = set()
        self._resumed = False

    # -- start ---------------------------------------------------------------------------------
    def _in_context(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        """Call into trackio inside this run's own context: its "current run" state and banner stay here."""
        return cast(contextvars.Context, self._context).run(function, *args, **kwargs)  # made by start()

    def start(self) -> None:
        """``trackio.init`` (or the saved run reopened) with Trackio pointed at this run's store."""
        trackio = v0_0_3.import_trackio()
        saved = startup.saved_run(self)
        wanted = self._wanted_dir
        if saved is not None and saved.get("storage_dir") and Path(saved["storage_dir"]).is_dir():
            wanted = Path(saved["storage_dir"])  # continue where the run's data is, even if logging_dir moved
        self.storage_dir = startup.claim_storage(wanted, self.name)
        try:
            self._context = startup.quiet_context()
            self._run, self._resumed = startup.open_run(self, trackio, saved)
            if not v0_0_17.logs_steps(self._run):
                self._writer = self._row_writer()
        except BaseException:
            startup.release_storage(self.storage_dir)
            raise
        startup.announce(self, trackio, self._resumed)

    def _row_writer(self) -> v0_0_17.StepKeepingWriter | v0_0_3.RowWriter:
        """Trackio before 0.2: ``Run.log`` takes no step. From 0.0.17 the rows go through its storage class with
        their steps; before, its store numbers them itself (one warning, one note)."""
        if v0_0_17.can_keep_steps():
            return v0_0_17.StepKeepingWriter(self._run, self.run_name)
        self._missing("steps", v0_0_3.STEPS_NOTE)
        self._first_writer = v0_0_3.writer(self._run, self.run_name)
        return self._first_writer

    # -- SDK objects -----------------------------------------------------------------------------
    tracker = run = sdk_object(
        "_run",
        "The ``trackio.Run``, as Accelerate's ``TrackioTracker.run`` (None before ``start``; kept after ``finish``).",
    )

    # -- config and metrics ---------------------------------------------------------------------
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        """Merged into the run's config dict; called again later (``log_config``), changed values win.

        Trackio writes the config with the run's next metrics row (INSERT OR REPLACE). 0.0.3 to 0.0.16 save it
        at once, through their own storage (:mod:`tracking_trackio.older.v0_0_3`); 0.0.17 to 0.3 keep no run config at
        all: the config is then kept in memory only, with one warning and a note.
        """
        if self._first_writer is None and not before_v0_24.stores_config():
            self._missing("config", "this trackio release keeps no run config (0.0.17 to 0.3 have none): not stored")
        elif self._first_writer is None and getattr(self._run, "_config_logged", False):
            # Already sent with an earlier row: send the merged config with the next row. Trackio keeps the
            # first config of each write batch, so the queued rows carrying the old one are written first.
            self.flush()
            self._run._config_logged = False
        self._config = merge_config(self._config, values)  # nested sections key by key
        self._run.config.update({key: self._config[key] for key in values})
        if self._first_writer is not None:
            self._first_writer.save_config()
        elif before_v0_24.stores_config():
            self._config_pending = True

    def log_run_context(self, context: dict[str, Any]) -> None:
        """The run's config under ``run_context`` (docs/run-context.md): Trackio has no place of its own for the
        git state or the command; its dashboard shows the config beside the run."""
        self.store_init_configuration({"run_context": context})

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        (self._writer or self._run).log(values, step=step, **kwargs)
        self._config_pending = False
        self._last_step = step if step is not None else getattr(self._run, "_next_step", 1) - 1

    def sanitize_key(self, key: str) -> str:
        """Trackio renames its reserved keys and ``__*`` keys to ``__<key>``; pick a name it keeps instead."""
        reserved = set(_FALLBACK_RESERVED_KEYS)
        utils = sys.modules.get("trackio.utils")
        reserved.update(getattr(utils, "RESERVED_KEYS", ()))
        if key.startswith("__"):
            return "_" + key.lstrip("_")
        return f"{key}_" if key in reserved else key

    def _missing(self, feature: str, message: str) -> None:
        """What this trackio release lacks: one warning per feature and process, one line in the finish report."""
        warn_once(self.name, feature, message, reason=f"no-{feature}")
        self.add_note(message)

    def _has(self, trackio: Any, kind: str, since: str) -> bool:
        if hasattr(trackio, kind):
            return True
        self._missing(kind, f"this trackio release has no trackio.{kind} (added in trackio {since}): nothing stored")
        return False

    def log_system_metrics(self, values: dict[str, float], index: int, timestamp: float) -> None:
        """``Run.log_system``: where Trackio's own monitors put theirs, on their time axis (never a step)."""
        if not hasattr(self._run, "log_system"):
            message = (
                "this trackio release has no system metrics (Run.log_system, added in trackio 0.14): samples not stored"
            )
            self._missing("system", message)
            raise RuntimeError(message)
        self._run.log_system(dict(values))

    # -- media -----------------------------------------------------------------------------------
    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """One ``trackio.Image`` per image (``caption=`` in ``kwargs`` is each one's caption); a list under
        ``key`` is stored as ``key``, ``key/1``, ``key/2``, ..."""
        import trackio

        if not self._has(trackio, "Image", "0.2.8"):
            return
        with tempfile.TemporaryDirectory(prefix="tracking-trackio-") as folder:
            payload, written = {}, 0
            for key, images in values.items():
                for index, image in enumerate(image_list(images)):
                    path = write_png(image, folder, written)
                    written += 1
                    made = trackio.Image(path, caption=kwargs.get("caption"))
                    if before_v0_24.made_rgba(made, path):
                        self._missing("rgba", before_v0_24.RGBA_NOTE)
                    payload[key if index == 0 else f"{key}/{index}"] = made
            self._run.log(payload, step=step)  # Trackio copies the files into its media folder here

    def log_table(
        self,
        table_name: str,
        columns: list[str] | None = None,
        data: list[list[Any]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
        **kwargs: Any,
    ) -> None:
        import trackio

        columns, rows = table_rows(columns, data, dataframe)
        if not self._has(trackio, "Table", "0.3.2"):
            return
        self._run.log({table_name: before_v0_24.table(trackio, columns, rows)}, step=step)

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        """The figure rendered to PNG (``kwargs`` go to ``savefig``), stored as a ``trackio.Image``."""
        import trackio

        if not self._has(trackio, "Image", "0.2.8"):
            return
        with tempfile.TemporaryDirectory(prefix="tracking-trackio-") as folder:
            path = write_png_bytes(figure_to_png(figure, **kwargs), folder, 0)
            self._run.log({name: trackio.Image(path)}, step=step)

    # -- histogram -------------------------------------------------------------------------------
    def log_histogram(self, name: str, histogram: Histogram, step: int | None = None, **kwargs: Any) -> None:
        """Trackio's own histogram from the bins as they are (``np_histogram``), so Trackio does not re-bin."""
        import trackio

        if not hasattr(trackio, "Histogram"):
            message = "this trackio release has no trackio.Histogram: count/min/max/mean/std are logged instead"
            warn_once(self.name, "log_histogram", message, reason="no-histograms")
            self.add_note(message)
            super().log_histogram(name, histogram, step=step, **kwargs)
            return
        value = trackio.Histogram(np_histogram=(list(histogram.counts), list(histogram.edges)))
        self._run.log({name: value}, step=step, **kwargs)

    # -- artifacts -------------------------------------------------------------------------------
    def log_artifact(self, local_path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        """A versioned Trackio artifact named after the file; ``artifact_path`` is the folder inside it."""
        self._log_artifact(Path(local_path), artifact_path, is_dir=False)

    def log_artifacts(self, local_dir: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        """A versioned Trackio artifact named after the folder, holding every file under it."""
        self._log_artifact(Path(local_dir), artifact_path, is_dir=True)

    def _log_artifact(self, path: Path, artifact_path: str | None, is_dir: bool) -> None:
        import trackio

        if not hasattr(trackio, "Artifact") or not hasattr(self._run, "log_artifact"):
            message = "this trackio release has no artifacts (added in trackio 0.30): log_artifact(s) stores nothing"
            warn_once(self.name, "log_artifact", message, reason="no-artifacts")
            self.add_note(message)
            return
        artifact = trackio.Artifact(name=path.resolve().name, type="unspecified")  # trackio's own default for paths
        folder = artifact_path.strip("/") if artifact_path else ""
        if is_dir:
            artifact.add_dir(path, name=folder or None)
        else:
            artifact.add_file(path, name=f"{folder}/{path.name}" if folder else None)
        self._run.log_artifact(artifact)

    # -- flush and finish ------------------------------------------------------------------------
    def flush(self) -> None:
        """Write Trackio's queued rows to SQLite now instead of within its 0.5 s batching interval."""
        run = self._run
        if run is None or self._finished:
            return
        # Trackio has no public flush; its background thread does exactly this under the same lock.
        if self._writer is None and not before_v0_24.flush_queued_rows(run):  # the writer writes at once
            warn_once(
                self.name,
                "*",
                "this trackio version has no flush hook; data is written within ~0.5 s",
                reason="no-flush",
            )
        self._raise_sdk_failures(run)

    def _raise_sdk_failures(self, run: Any) -> None:
        # Trackio turns write errors into warnings and records them; surface new ones as a failure of this call.
        failures = before_v0_24.write_failures(run)
        new = failures - self._seen_sdk_failures
        self._seen_sdk_failures |= failures
        if new:
            raise RuntimeError(
                f"trackio could not write to {self.storage_dir} ({', '.join(sorted(new))}); see its warning"
            )

    def finish(self) -> None:
        """``Run.finish()`` however the run ended: Trackio has no run status or end time to give it (``run_end``
        stays in run.json)."""
        run = self._run
        if run is None or self._finished:
            return
        self._finished = True
        try:
            if self._config_pending:
                # Trackio stores the config only alongside a metrics row: write one empty row so it is kept.
                last = self._last_step if self._last_step is not None else getattr(run, "_next_step", 1) - 1
                run.log({}, step=max(last, 0))  # a resumed run that logged nothing: its last step
            self._in_context(run.finish)
            self._raise_sdk_failures(run)
        finally:
            startup.release_storage(cast(Path, self.storage_dir))  # set by start()

    # -- resume, read-back, notes ----------------------------------------------------------------
    def resume_state(self) -> dict[str, Any] | None:
        """What a restarted job passes back (``run_context.resume``) so ``start`` reopens this Trackio run."""
        if self._run is None:
            return None
        return {
            "project": self.run_name,
            "name": self._run.name,
            "id": getattr(self._run, "id", None),  # None before Trackio 0.24
            "storage_dir": str(self.storage_dir),
        }

    def read_back_metrics(self) -> dict[str, dict[int, Any]]:
        """Numeric series of this run per step (the last row at a step wins; trackio 0.0.3 to 0.0.16 number the
        rows 0, 1, 2, ... themselves)."""
        return {key: dict(points) for key, points in self._history().items()}

    def read_back_history(self) -> dict[str, list[tuple[int, Any]]]:
        """Every numeric point in this run's rows of Trackio's project database, in row order, decoded by Trackio.

        Trackio appends one row per ``log`` call, so a step logged twice shows twice. A release that numbers
        the rows itself (0.0.3 to 0.0.16) cannot say at which step a point was logged: a resumed run then
        does not take its row numbers for steps (it delivers again nothing an earlier process handed over).
        """
        if self._first_writer is not None:
            raise RuntimeError(v0_0_3.STEPS_NOTE)
        return self._history()

    def _history(self) -> dict[str, list[tuple[int, Any]]]:
        return reader.history(self._rows())

    def read_back_images(self) -> dict[str, list[tuple[int, Any]]]:
        """Every ``trackio.Image`` of this run, decoded from the files in Trackio's media folder.

        A list logged under ``key`` comes back as one list under ``key`` (Trackio holds it as ``key/1``, ...).
        """
        return reader.images(cast(Path, self.storage_dir), self._rows())

    def read_back_system_metrics(self) -> dict[str, list[tuple[int, float]]]:
        """Trackio's system logs of this run (``SQLiteStorage.get_system_logs``), per key, as ``(the row's
        position, value)``: a system log row keeps a time, no index, so the n-th row stored is sample n."""
        run_id, name = self.store_run
        return reader.system_metrics(self.run_name, run_id, name)

    @property
    def store_run(self) -> tuple[str | None, str | None]:
        """``(run id, run name)`` of this run in Trackio's database (the id is ``None`` where a Trackio release
        keeps none): plain values, so a held tracker of ``delivery="process"`` has them too."""
        run_id = getattr(self._run, "id", None) or getattr(self._run, "run_id", None)
        name = getattr(self._run, "name", None)
        return (str(run_id) if run_id else None), (str(name) if name is not None else None)

    def _rows(self) -> list[tuple[int, dict[str, Any]]]:
        """``(step, metrics)`` of this run's rows in Trackio's project database, decoded by Trackio."""
        run_id, name = self.store_run
        return reader.rows(cast(Path, self.storage_dir), self.run_name, run_id, name)  # set by start()
