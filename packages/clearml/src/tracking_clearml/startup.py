"""Opening a ClearML task the way a library should: quiet ``Task.init`` defaults, online or offline decided
with a bounded probe, the offline session under ``logging_dir``, and the process environment left as found.

None of this maps the tracker contract; it is what ``Task.init`` needs around it (see the README's "SDK choices").
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracking_core.adapters import probe_http

#: ``auto_connect_frameworks`` with every integration off. A key missing from this dict means True to
#: ClearML, and only ``detect_repository: False`` stops the git probing thread that ``Task.close()``
#: joins for up to 300 s (it hung ``close()`` in about one run in five).
NO_FRAMEWORKS: dict[str, bool] = dict.fromkeys(
    "catboost detect_repository fastai gradio hydra joblib lightgbm matplotlib megengine pytorch scikit "
    "tensorboard tensorflow tfdefines xgboost".split(),
    False,
)

#: ``Task.init`` defaults of a library that only records what it is given; user kwargs win. ClearML's
#: resource monitor is left on, as ClearML (and Accelerate's ``ClearMLTracker``) defaults it: it reports
#: ``:monitor:machine`` / ``:monitor:gpu`` scalars from 30 s into the run, so a short run holds none.
QUIET_INIT: dict[str, Any] = {
    "reuse_last_task_id": False,
    "auto_connect_frameworks": NO_FRAMEWORKS,
    "auto_connect_streams": False,
    "auto_connect_arg_parser": False,
}

CACHE_ENV = ("CLEARML_CACHE_DIR", "TRAINS_CACHE_DIR")
MASTER_ENV = ("CLEARML_PROC_MASTER_ID", "TRAINS_PROC_MASTER_ID")
#: Variables ``Task.init`` / ``Task.set_offline`` set in ``os.environ`` and never unset; child processes
#: started after the run would inherit them (a child inheriting the master id gets a stub Task).
LEAKED_ENV = (*MASTER_ENV, "CLEARML_OFFLINE_MODE", "TRAINS_OFFLINE_MODE")
SDK_DEFAULT_CACHE = "~/.clearml/cache"


def has_credentials() -> bool:
    """Whether ClearML has credentials (environment or ``clearml.conf``) to go online with."""
    from clearml.backend_api.session.defs import ENV_ACCESS_KEY, ENV_AUTH_TOKEN, ENV_SECRET_KEY
    from clearml.config import config_obj

    if ENV_AUTH_TOKEN.get():
        return True
    access = ENV_ACCESS_KEY.get() or config_obj.get("api.credentials.access_key", None)
    secret = ENV_SECRET_KEY.get() or config_obj.get("api.credentials.secret_key", None)
    return bool(access and secret)


@contextlib.contextmanager
def cache_dir_during_init(path: Path | None) -> Iterator[None]:
    """Point ClearML's cache (where offline sessions go) at ``path`` while ``Task.init`` runs.

    The SDK has no per-task setting: the session folder is derived from ``CLEARML_CACHE_DIR`` once, when
    the task is created, and kept on the task. Setting the variable only for that call leaves the rest of
    the process (``StorageManager`` downloads, a later run) with the user's own cache.
    """
    if path is None:
        yield
        return
    os.environ["CLEARML_CACHE_DIR"] = str(path)
    sessions = _session_cache()
    home_folder = getattr(sessions, "SESSION_CACHE_FOLDER", None)
    if home_folder is not None:  # the "last task" record Task.init keeps in ~/.clearml/.session.json
        sessions.SESSION_CACHE_FOLDER = str(path)
    try:
        yield
    finally:
        os.environ.pop("CLEARML_CACHE_DIR", None)
        if home_folder is not None:
            sessions.SESSION_CACHE_FOLDER = home_folder


def _session_cache() -> Any:
    try:
        from clearml.config.cache import SessionCache
    except ImportError:  # a release that moved it: its file stays where ClearML puts it
        return None
    return SessionCache


def choose_mode(task_class: Any, logging_dir: Path, server_timeout: float) -> tuple[str, Path | None, str | None]:
    """("offline" | "online" | "remote", the cache folder for an offline session or None, why the configured
    server cannot be used or None).

    An unanswered server gives "offline" unless ``CLEARML_OFFLINE_MODE=0`` demands online mode: then
    "online" with the reason, and the caller refuses to start (``Task.init`` would retry for hours).
    """
    from clearml.backend_api.session.defs import ENV_OFFLINE_MODE
    from clearml.backend_api.session.session import Session
    from clearml.config import config, running_remotely

    if running_remotely():
        return "remote", None, None
    user_cache = any(os.environ.get(name) for name in CACHE_ENV) or (
        str(config.get("storage.cache.default_base_dir", SDK_DEFAULT_CACHE)) != SDK_DEFAULT_CACHE
    )
    offline_cache = None if user_cache else logging_dir.absolute() / "clearml"
    choice = ENV_OFFLINE_MODE.get()  # True / False when the user set CLEARML_OFFLINE_MODE, else None
    if task_class.is_offline() or choice is True:
        return "offline", offline_cache, None
    if not has_credentials():
        # Online without credentials is ClearML's MissingConfigError; only an explicit choice gets it.
        return ("online", None, None) if choice is False else ("offline", offline_cache, None)
    host = Session.get_api_server_host()
    problem = probe_http(f"{host.rstrip('/')}/debug.ping", server_timeout)
    if problem is None:
        return "online", None, None
    unanswered = f"the ClearML server {host} did not answer within {server_timeout:g} s ({problem})"
    return ("online", None, unanswered) if choice is False else ("offline", offline_cache, unanswered)


def forget_foreign_offline_master(task_class: Any) -> None:
    """Drop an inherited ``CLEARML_PROC_MASTER_ID`` when this run will be offline.

    ClearML marks its process with ``<pid>:<task id>`` in the environment, and a process started from
    it (a ``subprocess``, a spawned worker) then treats itself as part of that task. Online, that
    attaches to the parent's task. An offline task of another process cannot be attached, though,
    and ``Task.init`` returns a stub instead. In that case this process gets a session of its own.
    """
    from clearml.backend_api.session.defs import ENV_OFFLINE_MODE
    from clearml.config import running_remotely

    master = next((os.environ[name] for name in MASTER_ENV if os.environ.get(name)), "")
    if not master or master.partition(":")[0] == str(os.getpid()) or running_remotely():
        return
    if task_class.is_offline() or ENV_OFFLINE_MODE.get() or not has_credentials():
        for name in MASTER_ENV:
            os.environ.pop(name, None)


def report_from_a_thread(task_class: Any) -> None:
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
