"""``clearml``: the ClearML backend.

How the contract maps onto the SDK (``task`` is the ``clearml.Task``, ``logger`` its ``Logger``):

==========================  ===============================================================================
``start``                   ``Task.init`` (an offline session under ``logging_dir`` unless credentials exist),
                            or the task the application already created (``Task.current_task()``); with
                            ``run_context.resume``: ``Task.init(reuse_last_task_id=<saved id>, continue_last_task=0)``
``resume_state``            ``{"task_id", "mode", "session_dir"}`` (the offline session folder, else None)
``store_init_configuration`` ``task.connect(config, name="General")`` (Hyperparameters) and the exact config
                            as JSON with ``task.set_configuration_object("config", ...)``
``log``, numbers            ``logger.report_scalar(title, series, value, iteration=step)``;
                            key ``a/b/c`` -> title ``a/b``, series ``c``; key ``loss`` -> title and series ``loss``
``log``, ``step=None``      ``logger.report_single_value(key, value)`` (a summary value, not a series)
``log``, strings            ``logger.report_text("[step N] key: value")`` (the task's console log)
``log_images``              ``logger.report_image(title=key, series="0", "1", ...)`` (debug samples)
``log_table``               ``logger.report_table(title, series, table_plot=DataFrame or rows)`` (plots)
``log_figure``              ``logger.report_matplotlib_figure`` / ``logger.report_plotly``
``log_artifact(s)``         ``task.upload_artifact(name, path)`` (a folder is uploaded as a zip)
``flush``                   ``task.flush(wait_for_uploads=True)``
``finish``                  ``task.close()`` (never for a task created outside this tracker)
==========================  ===============================================================================
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from tracking_core import GeneralTracker, notice, warn_once
from tracking_core.jsonl import table_rows
from tracking_core.notices import logger
from tracking_core.png import image_to_rows

#: ``auto_connect_frameworks`` with every integration off. A key missing from this dict means True to
#: ClearML, and only ``detect_repository: False`` stops the git probing thread that ``Task.close()``
#: joins for up to 300 s (it hung ``close()`` in about one run in five).
NO_FRAMEWORKS: dict[str, bool] = dict.fromkeys(
    "catboost detect_repository fastai gradio hydra joblib lightgbm matplotlib megengine pytorch scikit "
    "tensorboard tensorflow tfdefines xgboost".split(),
    False,
)

#: ``Task.init`` defaults of a library that only records what it is given; user kwargs win.
QUIET_INIT: dict[str, Any] = {
    "reuse_last_task_id": False,
    "auto_connect_frameworks": NO_FRAMEWORKS,
    "auto_resource_monitoring": False,
    "auto_connect_streams": False,
    "auto_connect_arg_parser": False,
}

_CACHE_ENV = ("CLEARML_CACHE_DIR", "TRAINS_CACHE_DIR")
_MASTER_ENV = ("CLEARML_PROC_MASTER_ID", "TRAINS_PROC_MASTER_ID")
#: Variables ``Task.init`` / ``Task.set_offline`` set in ``os.environ`` and never unset; child processes
#: started after the run would inherit them (a child inheriting the master id gets a stub Task).
_LEAKED_ENV = (*_MASTER_ENV, "CLEARML_OFFLINE_MODE", "TRAINS_OFFLINE_MODE")
_SDK_DEFAULT_CACHE = "~/.clearml/cache"


def title_series(key: str) -> tuple[str, str]:
    """ClearML's (title, series) for a metric key: the series is the part after the last ``/``.

    ClearML's own TensorBoard binding splits tags the same way (it joins the rest with ``_``; the title
    here keeps the ``/`` so the key can be rebuilt). ``train/loss`` -> (``train``, ``loss``); ``eval/top/k1`` -> (``eval/top``, ``k1``); a key without a
    ``/`` (or with an empty part, ``/x``, ``x/``) is both title and series, so one key is one plot line.
    """
    title, _, series = key.rpartition("/")
    return (title, series) if title and series else (key, key)


def key_of(title: str, series: str) -> str:
    """The metric key back from a (title, series) pair written by this tracker (for readers)."""
    return title if title == series else f"{title}/{series}"


def text_line(key: str, value: str, step: int | None) -> str:
    """The console-log line for a string value: ``[step 3] note: words`` (``[summary]`` without a step).

    A value with a line break, or one that starts with a double quote, is written as a JSON string so
    that every value stays on one line and reads back exactly.
    """
    if "\n" in value or "\r" in value or value.startswith('"'):
        value = json.dumps(value, ensure_ascii=False)
    return f"[{'summary' if step is None else f'step {step}'}] {key}: {value}"


def _json_cell(value: Any) -> Any:
    """A table cell ClearML's plotly JSON can hold (its reporter thread would fail on anything else)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    item = getattr(value, "item", None)  # numpy / tensor scalars
    if callable(item):
        try:
            return _json_cell(item())
        except (TypeError, ValueError):
            pass
    return str(value)


def _as_image(image: Any) -> Any:
    """A PIL image as is, anything else as a uint8 HW/HWC numpy array (CHW and float 0..1 handled)."""
    if hasattr(image, "getpixel"):
        return image
    import numpy as np

    height, width, channels, raw = image_to_rows(image)
    shape = (height, width) if channels == 1 else (height, width, channels)
    return np.frombuffer(raw, dtype=np.uint8).reshape(shape)


def _server_answers(host: str, timeout: float) -> bool:
    """True when something at ``host`` answers HTTP within ``timeout`` s (any status, or a TLS error)."""
    answered: list[bool] = []

    def probe() -> None:
        try:
            urllib.request.urlopen(f"{host.rstrip('/')}/debug.ping", timeout=timeout).close()
        except urllib.error.HTTPError:
            answered.append(True)  # 401/404/500: a server is there
        except urllib.error.URLError as error:
            answered.append(isinstance(error.reason, ssl.SSLError))  # self-signed: ClearML may be set to accept it
        except (ssl.SSLError, ssl.CertificateError):
            answered.append(True)
        except Exception:  # timeouts, resets, refused: not reachable
            answered.append(False)
        else:
            answered.append(True)

    # A thread bounds the DNS lookup too, which urllib's timeout does not cover.
    thread = threading.Thread(target=probe, name="tracking-clearml-probe", daemon=True)
    thread.start()
    thread.join(timeout + 1.0)
    return bool(answered and answered[0])


def _has_credentials() -> bool:
    """Whether ClearML has credentials (environment or ``clearml.conf``) to go online with."""
    from clearml.backend_api.session.defs import ENV_ACCESS_KEY, ENV_AUTH_TOKEN, ENV_SECRET_KEY
    from clearml.config import config_obj

    if ENV_AUTH_TOKEN.get():
        return True
    access = ENV_ACCESS_KEY.get() or config_obj.get("api.credentials.access_key", None)
    secret = ENV_SECRET_KEY.get() or config_obj.get("api.credentials.secret_key", None)
    return bool(access and secret)


@contextlib.contextmanager
def _cache_dir(path: Path | None) -> Iterator[None]:
    """Point ClearML's cache (where offline sessions go) at ``path`` while ``Task.init`` runs.

    The SDK has no per-task setting: the session folder is derived from ``CLEARML_CACHE_DIR`` once, when
    the task is created, and kept on the task. Setting the variable only for that call leaves the rest of
    the process (``StorageManager`` downloads, a later run) with the user's own cache.
    """
    if path is None:
        yield
        return
    os.environ["CLEARML_CACHE_DIR"] = str(path)
    try:
        yield
    finally:
        os.environ.pop("CLEARML_CACHE_DIR", None)


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
    repository detection, stdout/stderr capture, argparse capture and resource monitoring are off and
    ``reuse_last_task_id=False``. A task the application created itself (``Task.current_task()``) is
    reused and never closed by this tracker.

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
        self, run_name: str | None = None, logging_dir: str | os.PathLike | None = None, **kwargs: Any
    ) -> None:
        super().__init__()
        self.run_name = run_name
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
        self._notes: list[str] = []
        self._environ_before: dict[str, str | None] = {}

    @property
    def tracker(self) -> Any:
        """The ``clearml.Task`` of this run (``None`` before ``start``)."""
        return self._task

    @property
    def offline_folder(self) -> Path | None:
        """The offline session folder (its zip is written next to it at finish), or ``None`` online."""
        folder = self._task.get_offline_mode_folder() if self._task is not None else None
        return Path(folder) if folder else None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._environ_before = {name: os.environ.get(name) for name in _LEAKED_ENV}
        from clearml import Task

        self._forget_foreign_offline_master(Task)
        current = Task.current_task()
        if current is not None:
            self._task, self._external, self.mode = current, True, "external"
            self._logger = current.get_logger()
            notice(f"clearml: logging into the application's task {current.id} (left open at finish)")
            return
        self.mode, cache_dir = self._choose_mode(Task)
        if self.mode == "offline":
            Task.set_offline(offline_mode=True)
        self._report_from_a_thread(Task)
        kwargs = {**QUIET_INIT, **self.init_kwargs}
        kwargs.setdefault("project_name", os.environ.get("CLEARML_PROJECT") or self.run_name)
        kwargs.setdefault("task_name", os.environ.get("CLEARML_TASK") or self.run_name)
        cache_dir = self._continue_saved_task(kwargs, cache_dir)
        with _cache_dir(cache_dir):
            self._task = Task.init(**kwargs)
        self._logger = self._task.get_logger()
        folder = self.offline_folder
        if folder is not None:
            notice(
                f"clearml: offline session in {folder} (zipped at finish); import it into a server with "
                f"`clearml-task --import-offline-session {folder}.zip`"
            )
        else:
            notice(f"clearml: task {self._task.id} at {self._task.get_output_log_web_page()}")

    def _continue_saved_task(self, kwargs: dict, cache_dir: Path | None) -> Path | None:
        """Point ``Task.init`` at the task saved by ``resume_state`` in an earlier process; returns the cache dir.

        ``continue_last_task=0`` continues the task with the iterations as logged: ClearML's default offset
        (its last iteration + 1) is unknown offline, where it would shift every later step by one. An offline
        session is continued in its own folder, so its cache dir wins; ClearML would silently start an empty
        session under a missing folder's id, so a missing folder means a new task.
        """
        saved = self.run_context.resume if self.run_context is not None else None
        if saved is None:
            return cache_dir
        task_id = saved.get("task_id") if isinstance(saved, dict) else None
        if not isinstance(task_id, str) or not task_id:
            self._not_resumed(f"could not resume the saved ClearML task ({saved!r} names no task); started a new task")
            return cache_dir
        if "reuse_last_task_id" in self.init_kwargs or "continue_last_task" in self.init_kwargs:
            self._notes.append(f"the task chosen in init_kwargs was used; the saved ClearML task {task_id} was not")
            return cache_dir
        saved_mode = saved.get("mode")
        if (saved_mode == "offline") != (self.mode == "offline"):
            self._not_resumed(
                f"could not resume ClearML task {task_id} (it was recorded {saved_mode}, this run is {self.mode}; "
                "import the offline session into the server first); started a new task"
            )
            return cache_dir
        if self.mode == "offline":
            folder = Path(saved.get("session_dir") or "")
            if not saved.get("session_dir") or not folder.is_dir():
                self._not_resumed(
                    f"could not resume ClearML task {task_id} (its offline session {folder} is gone); started a new task"
                )
                return cache_dir
            if cache_dir is not None:  # not the user's own cache: the session's, wherever logging_dir is now
                cache_dir = folder.parent.parent  # <cache>/offline/<task id>
        kwargs["reuse_last_task_id"], kwargs["continue_last_task"] = task_id, 0
        return cache_dir

    def _not_resumed(self, message: str) -> None:
        self._notes.append(message)
        warn_once(self.name, "resume", message, reason="resume")

    def resume_state(self) -> dict | None:
        """The task id and, offline, its session folder; ``None`` for a task the application created."""
        if self._task is None or self._external:
            return None
        folder = self.offline_folder
        return {"task_id": self._task.id, "mode": self.mode, "session_dir": str(folder) if folder else None}

    def _choose_mode(self, task_class: Any) -> tuple[str, Path | None]:
        """("offline" | "online" | "remote", cache folder to use for an offline session or None)."""
        from clearml.backend_api.session.defs import ENV_OFFLINE_MODE
        from clearml.backend_api.session.session import Session
        from clearml.config import config, running_remotely

        if running_remotely():
            return "remote", None
        user_cache = any(os.environ.get(name) for name in _CACHE_ENV) or (
            str(config.get("storage.cache.default_base_dir", _SDK_DEFAULT_CACHE)) != _SDK_DEFAULT_CACHE
        )
        offline_cache = None if user_cache else self.logging_dir.absolute() / "clearml"
        choice = ENV_OFFLINE_MODE.get()  # True / False when the user set CLEARML_OFFLINE_MODE, else None
        if task_class.is_offline() or choice is True:
            return "offline", offline_cache
        if not _has_credentials():
            # Online without credentials is ClearML's MissingConfigError; only an explicit choice gets it.
            return ("online", None) if choice is False else ("offline", offline_cache)
        host = Session.get_api_server_host()
        if _server_answers(host, self.server_timeout):
            return "online", None
        unanswered = f"the ClearML server {host} did not answer within {self.server_timeout:g} s"
        if choice is False:
            self._notes.append(f"not started: {unanswered} and CLEARML_OFFLINE_MODE=0 asks for online mode")
            raise ConnectionError(
                f"{unanswered} and CLEARML_OFFLINE_MODE=0 asks for online mode (Task.init would retry for hours)"
            )
        self._notes.append(f"fell back to an offline session: {unanswered}")
        logger.warning("clearml: %s; this run is recorded as an offline session instead", unanswered)
        return "offline", offline_cache

    @staticmethod
    def _forget_foreign_offline_master(task_class: Any) -> None:
        """Drop an inherited ``CLEARML_PROC_MASTER_ID`` when this run will be offline.

        ClearML marks its process with ``<pid>:<task id>`` in the environment, and a process started from
        it (a ``subprocess``, a spawned worker) then treats itself as part of that task. Online, that
        attaches to the parent's task. An offline task of another process cannot be attached, though,
        and ``Task.init`` returns a stub instead. In that case this process gets a session of its own.
        """
        from clearml.backend_api.session.defs import ENV_OFFLINE_MODE
        from clearml.config import running_remotely

        master = next((os.environ[name] for name in _MASTER_ENV if os.environ.get(name)), "")
        if not master or master.partition(":")[0] == str(os.getpid()) or running_remotely():
            return
        if task_class.is_offline() or ENV_OFFLINE_MODE.get() or not _has_credentials():
            for name in _MASTER_ENV:
                os.environ.pop(name, None)

    def _restore_environ(self) -> None:
        for name, value in self._environ_before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    @staticmethod
    def _report_from_a_thread(task_class: Any) -> None:
        """Report events from a thread, not ClearML's default forked subprocess, unless the user chose.

        The subprocess reporter stalled a log call ~5 s at the 100th event and made ``close()`` take
        ~6 s (and sometimes hang); it is also a child process of the training script. The SDK reads
        ``sdk.development.report_use_subprocess`` into this class attribute lazily; setting the
        attribute is the per-process knob that leaves the user's ``clearml.conf`` alone.
        """
        from clearml.config import config

        if config.get("development.report_use_subprocess", None) is None and hasattr(
            task_class, "_report_subprocess_enabled"
        ):
            task_class._report_subprocess_enabled = False

    def store_init_configuration(self, values: dict) -> None:
        # Hyperparameters ("General"): nested keys become "a/b", lists their text, and None becomes "".
        self._task.connect(values, name="General")
        # The exact config (None, nesting, any key) as JSON; connect_configuration(dict) goes through
        # HOCON and raises on keys with characters such as "." or "@".
        text = json.dumps(values, indent=2, ensure_ascii=False, default=str)
        self._task.set_configuration_object("config", config_text=text, config_type="json")

    def read_back_metrics(self) -> dict[str, dict[int, Any]]:
        """Scalars per step; the last event at a step wins (see :meth:`read_back_history`)."""
        return {key: dict(points) for key, points in self.read_back_history().items()}

    def read_back_history(self) -> dict[str, list[tuple[int, Any]]]:
        """Every scalar report event of an offline session, read from its files in order (an online task lives
        on the server), so a step reported twice shows twice."""
        folder = self.offline_folder
        if folder is None:
            raise NotImplementedError("an online ClearML task is read back in the ClearML web app")
        from .session import OfflineSession

        return OfflineSession(folder).scalar_history()

    def report_notes(self) -> list[str]:
        folder = self.offline_folder
        if folder is None or self._external:
            return list(self._notes)
        return [*self._notes, f"offline session {folder}.zip: upload with `clearml-task --import-offline-session`"]

    def finish(self) -> None:
        if self._task is None or self._closed:
            return
        self._closed = True
        if self._external:
            self._task.flush(wait_for_uploads=True)
        else:
            self._task.close()
            self._restore_environ()

    def flush(self) -> None:
        if self._task is not None and not self._closed:
            self._task.flush(wait_for_uploads=True)

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
        return pair

    def log(self, values: dict, step: int | None = None, single_value: bool = False, **kwargs: Any) -> None:
        """Scalars per step; ``step=None`` or ``single_value=True`` records summary values instead."""
        logger = self._logger
        for key, value in values.items():
            if isinstance(value, str):
                logger.report_text(text_line(key, value, step), print_console=False)
            elif type(value) is float and not math.isfinite(value):
                warn_once(
                    self.name,
                    key,
                    f"{value!r} is stored as 0.0 by ClearML; the point is skipped",
                    reason="non-finite-direct",
                )
            elif step is None or single_value:
                logger.report_single_value(key, value)
            else:
                title, series = self._pair(key)
                logger.report_scalar(title, series, value, iteration=step)

    # -- media -------------------------------------------------------------------------------
    def log_images(self, values: dict, step: int | None = None, **kwargs: Any) -> None:
        """Debug samples: ``{key: image or list}``; each key is a title, each image of a list a series."""
        for key, images in values.items():
            items = images if isinstance(images, (list, tuple)) else [images]
            for index, image in enumerate(items):
                self._logger.report_image(key, str(index), iteration=step, image=_as_image(image), **kwargs)

    def log_table(self, table_name, columns=None, data=None, dataframe=None, step=None, **kwargs) -> None:
        title, series = title_series(table_name)
        if dataframe is None:
            columns, rows = table_rows(columns, data, None)
            dataframe = [list(columns)] + [[_json_cell(cell) for cell in row] for row in rows]
        self._logger.report_table(title, series, iteration=step, table_plot=dataframe, **kwargs)

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        """A matplotlib figure (interactive plot; ``report_image=True`` for a PNG) or a plotly figure."""
        title, series = title_series(name)
        if hasattr(figure, "savefig"):
            self._logger.report_matplotlib_figure(title, series, figure, iteration=step, **kwargs)
        elif hasattr(figure, "to_plotly_json") or isinstance(figure, dict):
            self._logger.report_plotly(title, series, figure, iteration=step, **kwargs)
        else:
            raise TypeError(f"log_figure takes a matplotlib or plotly figure, got {type(figure).__name__}")

    def log_artifact(self, local_path: str | os.PathLike, artifact_path: str | None = None) -> None:
        name = os.path.basename(os.fspath(local_path))
        self._upload(f"{artifact_path.strip('/')}/{name}" if artifact_path else name, local_path)

    def log_artifacts(self, local_dir: str | os.PathLike, artifact_path: str | None = None) -> None:
        self._upload(artifact_path or os.path.basename(os.path.abspath(local_dir)), local_dir)

    def _upload(self, name: str, path: str | os.PathLike) -> None:
        # wait_on_upload: the copy (offline) or upload is done before the caller can change the file.
        if not self._task.upload_artifact(name, artifact_object=os.fspath(path), wait_on_upload=True):
            raise RuntimeError(f"ClearML did not store artifact {name!r} from {path}")
