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
* per-rank runs                -> ``trackio.init(group=<group>, name=<name>-rank<N>)``

Releases before 0.2 take no step in ``Run.log``: 0.0.17 to 0.0.20 get their rows written with their steps
(:mod:`tracking_trackio.early`), 0.0.3 to 0.0.16, whose store holds no step, through their own storage with the
run's config (:mod:`tracking_trackio.first`); :mod:`tracking_trackio.legacy` has what else differs.

Images are handed to Trackio as PNG files written from :func:`tracking_core.adapters.to_hwc_uint8`, which
Trackio copies as they are: given an array or a PIL image it would store every image as RGBA.

Where the data goes. Trackio computes its storage directory once, when ``trackio`` is first imported
(``TRACKIO_DIR``, else ``$HF_HOME/trackio``), and keeps it in module constants that every part of the SDK
reads when it writes. There is no per-run setting, so :func:`_claim_storage` points those constants at
``<logging_dir>/trackio`` for the duration of a run. That works whether or not trackio was imported
before, and lets consecutive runs in one process use different ``logging_dir``s. Because the location is
process-wide, two *overlapping* runs cannot use two directories: the later one joins the directory in use
and says so in a warning. ``TRACKIO_DIR`` in the environment always wins over ``logging_dir``.
"""

from __future__ import annotations

import builtins
import contextvars
import inspect
import os
import re
import shlex
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any, cast

from tracking_core import GeneralTracker
from tracking_core.adapters import figure_to_png, image_list, merge_config, table_rows, to_hwc_uint8
from tracking_core.histogram import Histogram
from tracking_core.kit.sdk import per_rank, rank_name, sdk_object
from tracking_core.notices import logger, notice, warn_once
from tracking_core.paths import check_optional_name

from . import csv_store, early, first, legacy, store

#: Trackio's module constants that hold its storage location, and where each lives under the storage dir.
_LOCATION_ATTRIBUTES = {"TRACKIO_DIR": None, "MEDIA_DIR": "media", "ARTIFACTS_DIR": "artifacts"}
#: Metric keys Trackio renames to ``__<key>`` (with a warning on every call); used until trackio is imported.
_FALLBACK_RESERVED_KEYS = ("project", "run", "timestamp", "step", "time", "metrics")

#: ``trackio.init`` defaults set here (each overridable): no dashboard in notebooks.
_QUIET_INIT_DEFAULTS = {"embed": False}
#: Trackio's own system monitors (``auto_log_cpu`` from trackio 0.27, ``auto_log_gpu`` from 0.14): off when the
#: run's own samples replace them (``system_metrics=True``), else as Trackio defaults them.
_SDK_MONITORS = ("auto_log_cpu", "auto_log_gpu")

#: Stands for a trackio without a module-global ``config`` (0.0.3).
_NO_CONFIG = object()

_storage_lock = threading.Lock()
_runs_per_dir: Counter[Path] = Counter()
_sdk_default_dir: Path | None = None

# Trackio prints its own banner to stdout from init()/finish(). Swapping sys.stdout would swallow other
# threads' output too, so instead a `print` is placed in those trackio modules that, only inside this
# adapter's calls (marked by this context variable), sends the lines to the `tracking` logger at DEBUG.
_quiet = contextvars.ContextVar("tracking_trackio_quiet", default=False)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _print_to_log(*args: Any, **kwargs: Any) -> None:
    if _quiet.get() and kwargs.get("file") in (None, sys.stdout):
        logger.debug("trackio: %s", _ANSI.sub("", kwargs.get("sep", " ").join(str(arg) for arg in args)))
        return
    builtins.print(*args, **kwargs)


def _silence_sdk_banner() -> None:
    for name in ("trackio", "trackio.run", "trackio.utils"):
        module = sys.modules.get(name)
        if module is not None and "print" not in vars(module):
            module.print = _print_to_log  # type: ignore[attr-defined]


def _point_sdk_at(directory: Path) -> None:
    """Set Trackio's location constants in every loaded trackio module (they are copied by ``from ... import``)."""
    # a copy taken in one step: another thread's import changes sys.modules while a list is being built from it
    for name, module in sys.modules.copy().items():
        if module is None or not (name == "trackio" or name.startswith("trackio.")):
            continue
        for attribute, child in _LOCATION_ATTRIBUTES.items():
            value = vars(module).get(attribute)
            if isinstance(value, (Path, str)):  # a path string before trackio 0.0.20
                location = directory / child if child else directory
                setattr(module, attribute, location if isinstance(value, Path) else str(location))


def _claim_storage(wanted: Path | None, backend: str) -> Path:
    """Point Trackio at ``wanted`` (None: Trackio's own default) for a new run; returns the directory in use."""
    global _sdk_default_dir
    import trackio.utils

    with _storage_lock:
        if _sdk_default_dir is None:
            _sdk_default_dir = Path(trackio.utils.TRACKIO_DIR)  # what trackio chose at import time
        user_dir = os.environ.get("TRACKIO_DIR")  # the SDK's own setting wins, even when set after import
        target = Path(user_dir) if user_dir else (wanted or _sdk_default_dir)
        current = Path(trackio.utils.TRACKIO_DIR)
        if target != current and any(count for directory, count in _runs_per_dir.items() if directory != target):
            warn_once(
                backend,
                str(target),
                f"Trackio keeps one storage directory per process and another trackio run is still writing to "
                f"{current}; this run's data goes there too, not to {target}. Finish the other run first to separate them.",
                reason="storage-dir-busy",
            )
            target = current
        if target != current:
            _point_sdk_at(target)
        _runs_per_dir[target] += 1
        return target


def _release_storage(directory: Path) -> None:
    with _storage_lock:
        _runs_per_dir[directory] -= 1
        if _runs_per_dir[directory] <= 0:
            del _runs_per_dir[directory]


def _taken_by(init: Any, settings: dict[str, Any]) -> dict[str, Any]:
    """The settings this trackio's ``init`` takes (``embed`` and the monitors came in later releases)."""
    try:
        parameters = inspect.signature(init).parameters
    except (TypeError, ValueError):
        return dict(settings)
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters.values()):
        return dict(settings)
    return {key: value for key, value in settings.items() if key in parameters}


def _quiet_defaults(init: Any) -> dict[str, Any]:
    return _taken_by(init, _QUIET_INIT_DEFAULTS)


def _write_png(image: Any, folder: str, index: int) -> str:
    """``image`` (any layout :func:`to_hwc_uint8` takes) as a PNG file in ``folder``, grey kept grey."""
    from PIL import Image

    path = os.path.join(folder, f"{index}.png")
    Image.fromarray(to_hwc_uint8(image)).save(path, format="png")
    return path


def _write_png_bytes(data: bytes, folder: str, index: int) -> str:
    path = os.path.join(folder, f"{index}.png")
    with open(path, "wb") as file:
        file.write(data)
    return path


def _is_image(value: Any) -> bool:
    return isinstance(value, dict) and value.get("_type") == "trackio.image"


def _list_key(key: str, keys_in_row: set[str]) -> str:
    """The key a list was logged under, for its parts ``key/1``, ``key/2``, ... stored in the same row."""
    base, _, index = key.rpartition("/")
    return base if base in keys_in_row and index.isdigit() and int(index) > 0 else key


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
        self._writer: early.StepKeepingWriter | first.RowWriter | None = None  # trackio 0.0.x: rows in this thread
        self._first_writer: first.RowWriter | None = None  # trackio 0.0.3 to 0.0.16: no steps, config saved at once
        self._last_step: int | None = None
        self._seen_sdk_failures: set[str] = set()
        self._resumed = False

    # -- start ---------------------------------------------------------------------------------
    def _in_context(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        """Call into trackio inside this run's own context: its "current run" state and banner stay here."""
        return cast(contextvars.Context, self._context).run(function, *args, **kwargs)  # made by start()

    def start(self) -> None:
        trackio = first.import_trackio()
        saved = self._saved_run()
        wanted = self._wanted_dir
        if saved is not None and saved.get("storage_dir") and Path(saved["storage_dir"]).is_dir():
            wanted = Path(saved["storage_dir"])  # continue where the run's data is, even if logging_dir moved
        self.storage_dir = _claim_storage(wanted, self.name)
        try:
            _silence_sdk_banner()
            self._context = contextvars.Context()
            self._context.run(_quiet.set, True)
            kwargs = {**_quiet_defaults(trackio.init), **self.init_kwargs}
            if self.run_context is not None and self.run_context.system_metrics:  # the samples replace them
                if any(kwargs.get(key) for key in _SDK_MONITORS):
                    self.add_note("Trackio's auto_log_cpu/auto_log_gpu are off: the run's own samples replace them")
                kwargs.update(_taken_by(trackio.init, dict.fromkeys(_SDK_MONITORS, False)))
            self._name_rank(kwargs)
            if no_group := legacy.drop_group(trackio.init, kwargs):
                warn_once(self.name, "group", no_group, reason="no-groups")
                self.add_note(no_group)
            if no_resume := first.drop_resume(trackio.init, kwargs):
                self._missing("resume", no_resume)
            module_config = getattr(
                trackio, "config", _NO_CONFIG
            )  # init() rebinds the module-global; keep the caller's
            try:
                with legacy.in_process_dashboard(trackio, self._context):  # trackio < 0.18: no web server
                    if saved is not None:  # the saved run's name already says which rank it is
                        self._run = self._resume(trackio, {k: v for k, v in kwargs.items() if k != "name"}, saved)
                    if self._run is None:
                        first.name_run(trackio, kwargs)
                        self._run = self._init(trackio, **kwargs)
            finally:
                if module_config is not _NO_CONFIG:  # trackio 0.0.3 has none
                    trackio.config = module_config
            if not early.logs_steps(self._run):
                self._writer = self._row_writer()
        except BaseException:
            _release_storage(self.storage_dir)
            raise
        # `trackio show` in a new shell looks in TRACKIO_DIR or its default: say which dir when it is neither.
        from_env = bool(os.environ.get("TRACKIO_DIR")) and legacy.reads_trackio_dir()  # before 0.5.2 it is ignored
        in_default = from_env or self.storage_dir == _sdk_default_dir
        view = "" if in_default else legacy.store_setting(self.storage_dir) + " "
        what = "resumed run" if self._resumed else "run"
        remote = legacy.remote_url(self._run)  # a Space or server the user chose (kwargs or TRACKIO_* env)
        if remote:
            notice(f"trackio: {what} {self._run.name!r} sent to {remote} (local buffer in {self.storage_dir})")
        elif not hasattr(trackio, "show"):  # 0.0.3 to 0.0.5: no `trackio show`, a dashboard that reads ./.trackio
            notice(f"trackio: {what} {self._run.name!r} in {self.storage_dir} ({first.NO_VIEW})")
        else:
            command = f"{view}trackio show --project {shlex.quote(self.run_name)}"
            notice(f"trackio: {what} {self._run.name!r} in {self.storage_dir} (view: {command})")

    def _init(self, trackio: Any, **kwargs: Any) -> Any:
        """``trackio.init`` in this run's context; its run (0.0.3 to 0.0.5 return none: the context's current one)."""
        run = self._in_context(trackio.init, project=self.run_name, **kwargs)
        return run if run is not None else self._in_context(first.current_run(trackio).get)

    def _row_writer(self) -> early.StepKeepingWriter | first.RowWriter:
        """Trackio before 0.2: ``Run.log`` takes no step. From 0.0.17 the rows go through its storage class with
        their steps; before, its store numbers them itself (one warning, one note)."""
        if early.can_keep_steps():
            return early.StepKeepingWriter(self._run, self.run_name)
        self._missing("steps", first.STEPS_NOTE)
        self._first_writer = first.writer(self._run, self.run_name)
        return self._first_writer

    def _name_rank(self, kwargs: dict[str, Any]) -> None:
        """Per-rank mode: this rank's run joins the job's Trackio group, named after its rank."""
        context = per_rank(self)
        if context is None:
            return
        if kwargs.get("group") is None:
            kwargs["group"] = context.group
        kwargs["name"] = rank_name(kwargs.get("name"), context)

    def _saved_run(self) -> dict[str, Any] | None:
        """The earlier process's run to continue (``run_context.resume``), unless the user chose a run themselves."""
        context = getattr(self, "run_context", None)
        saved: dict[str, Any] | None = getattr(context, "resume", None)
        if saved is None:
            return None
        if "name" in self.init_kwargs or "resume" in self.init_kwargs:
            logger.info("trackio: name/resume in init_kwargs win over the saved run %r", saved.get("name"))
            return None
        return saved

    def _resume(self, trackio: Any, kwargs: dict[str, Any], saved: dict[str, Any]) -> Any:
        """Reopen the saved run with Trackio's own ``resume="must"``; None (and a report note) when it is gone."""
        name, project = saved.get("name"), saved.get("project", self.run_name)
        if not isinstance(name, str) or not name:
            reason = "the saved state names no run"
        elif project != self.run_name:
            reason = f"it belongs to project {project!r}, not {self.run_name!r}"
        else:
            try:
                run = self._reopen(trackio, name, kwargs)
            except ValueError as error:  # Trackio: "Run '<name>' does not exist in project '<project>'"
                reason = str(error)
                store = saved.get("storage_dir")
                if store and not Path(store).is_dir():
                    reason += f"; its store {store} is gone"
            else:
                self._restore_config(run)
                self._resumed = True
                run_id = getattr(run, "id", None)  # Trackio < 0.24 keeps no run ids
                if saved.get("id") and run_id and run_id != saved["id"]:
                    self.add_note(
                        f"resumed the latest Trackio run named {name!r} (id {run_id}), not the saved id {saved['id']}"
                    )
                return run
        self.add_note(f"could not resume Trackio run {name!r} ({reason}); started a new run")
        return None

    def _reopen(self, trackio: Any, name: str, kwargs: dict[str, Any]) -> Any:
        """``trackio.init(name=<name>, resume="must")``. A release without ``resume`` (before 0.0.16) gets the same
        check first, then ``init`` by name: its rows are keyed by run name, so the run's rows continue. The first
        releases (0.0.3 to 0.0.16) start the run from its stored config, which their storage saves again."""
        if first.takes_resume(trackio.init):
            kwargs = {**kwargs, "resume": "must"}
        elif name not in store.run_names(self.run_name):
            raise ValueError(f"Run '{name}' does not exist in project '{self.run_name}'")
        if first.keeps_config():
            kwargs = {"config": first.stored_config(cast(Path, self.storage_dir), self.run_name, name), **kwargs}
        return self._init(trackio, name=name, **kwargs)

    def _restore_config(self, run: Any) -> None:
        """Trackio's resume starts from an empty config and would overwrite the stored one: start from the stored one."""
        if not getattr(run, "_is_local", True) or not legacy.stores_config() or first.keeps_config():
            return  # a Space or server holds the config, the release keeps none, or init was given it
        from trackio.sqlite_storage import SQLiteStorage

        try:
            stored = legacy.stored_config(SQLiteStorage, self.run_name, run)
        except Exception as error:  # keep logging: the metrics matter more than the config
            self.add_note(f"could not read the config of resumed Trackio run {run.name!r} ({error})")
            return
        if stored:
            run.config.update(stored)  # also keeps the run's original _Created

    # -- SDK objects -----------------------------------------------------------------------------
    tracker = run = sdk_object(
        "_run",
        "The ``trackio.Run``, as Accelerate's ``TrackioTracker.run`` (None before ``start``; kept after ``finish``).",
    )

    # -- config and metrics ---------------------------------------------------------------------
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        """Merged into the run's config dict; called again later (``log_config``), changed values win.

        Trackio writes the config with the run's next metrics row (INSERT OR REPLACE). 0.0.3 to 0.0.16 save it
        at once, through their own storage (:mod:`tracking_trackio.first`); 0.0.17 to 0.3 keep no run config at
        all: the config is then kept in memory only, with one warning and a note.
        """
        if self._first_writer is None and not legacy.stores_config():
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
        elif legacy.stores_config():
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
                    path = _write_png(image, folder, written)
                    written += 1
                    made = trackio.Image(path, caption=kwargs.get("caption"))
                    if legacy.made_rgba(made, path):
                        self._missing("rgba", legacy.RGBA_NOTE)
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
        self._run.log({table_name: legacy.table(trackio, columns, rows)}, step=step)

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        """The figure rendered to PNG (``kwargs`` go to ``savefig``), stored as a ``trackio.Image``."""
        import trackio

        if not self._has(trackio, "Image", "0.2.8"):
            return
        with tempfile.TemporaryDirectory(prefix="tracking-trackio-") as folder:
            path = _write_png_bytes(figure_to_png(figure, **kwargs), folder, 0)
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
        if self._writer is None and not legacy.flush_queued_rows(run):  # the writer writes at once
            warn_once(
                self.name,
                "*",
                "this trackio version has no flush hook; data is written within ~0.5 s",
                reason="no-flush",
            )
        self._raise_sdk_failures(run)

    def _raise_sdk_failures(self, run: Any) -> None:
        # Trackio turns write errors into warnings and records them; surface new ones as a failure of this call.
        failures = legacy.write_failures(run)
        new = failures - self._seen_sdk_failures
        self._seen_sdk_failures |= failures
        if new:
            raise RuntimeError(
                f"trackio could not write to {self.storage_dir} ({', '.join(sorted(new))}); see its warning"
            )

    def finish(self) -> None:
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
            _release_storage(cast(Path, self.storage_dir))  # set by start()

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
            raise RuntimeError(first.STEPS_NOTE)
        return self._history()

    def _history(self) -> dict[str, list[tuple[int, Any]]]:
        history: dict[str, list[tuple[int, Any]]] = {}
        for step, metrics in self._rows():
            for key, item in metrics.items():
                if isinstance(item, (int, float)) and not isinstance(item, bool):
                    history.setdefault(key, []).append((step, item))
        return history

    def read_back_images(self) -> dict[str, list[tuple[int, Any]]]:
        """Every ``trackio.Image`` of this run, decoded from the files in Trackio's media folder.

        A list logged under ``key`` comes back as one list under ``key`` (Trackio holds it as ``key/1``, ...).
        """
        from PIL import Image

        images: dict[str, list[tuple[int, Any]]] = {}
        for step, metrics in self._rows():
            in_row = {key for key, item in metrics.items() if _is_image(item)}
            for key, item in metrics.items():
                if _is_image(item):
                    with Image.open(store.media_file(cast(Path, self.storage_dir), item["file_path"])) as stored:
                        images.setdefault(_list_key(key, in_row), []).append((step, to_hwc_uint8(stored)))
        return images

    def read_back_system_metrics(self) -> dict[str, list[tuple[int, float]]]:
        """Trackio's system logs of this run (``SQLiteStorage.get_system_logs``), per key, as ``(the row's
        position, value)``: a system log row keeps a time, no index, so the n-th row stored is sample n."""
        from trackio.sqlite_storage import SQLiteStorage

        if not hasattr(SQLiteStorage, "get_system_logs"):
            raise NotImplementedError("trackio: this release keeps no system metrics (trackio 0.14 and later do)")
        run_id, name = self.store_run
        system: dict[str, list[tuple[int, float]]] = {}
        for position, row in enumerate(SQLiteStorage.get_system_logs(self.run_name, name, run_id=run_id)):
            for key, value in row.items():
                if key != "timestamp" and isinstance(value, int | float):
                    system.setdefault(key, []).append((position, float(value)))
        return system

    @property
    def store_run(self) -> tuple[str | None, str | None]:
        """``(run id, run name)`` of this run in Trackio's database (the id is ``None`` where a Trackio release
        keeps none): plain values, so a held tracker of ``delivery="process"`` has them too."""
        run_id = getattr(self._run, "id", None) or getattr(self._run, "run_id", None)
        name = getattr(self._run, "name", None)
        return (str(run_id) if run_id else None), (str(name) if name is not None else None)

    def _rows(self) -> list[tuple[int, dict[str, Any]]]:
        """``(step, metrics)`` of this run's rows in Trackio's project database, decoded by Trackio."""
        storage_dir = cast(Path, self.storage_dir)  # set by start()
        run_id, name = self.store_run
        if first.csv_storage() is not None:  # trackio 0.0.3
            return csv_store.run_rows(storage_dir, self.run_name, str(name))
        return store.run_rows(store.project_database(storage_dir, self.run_name), run_id, name, self.run_name)
