"""Opening a ClearML task the way a library should: quiet ``Task.init`` defaults, online or offline decided
with a bounded probe, the offline session under ``logging_dir``, and the process environment left as found.

None of this maps the tracker contract; it is what ``Task.init`` needs around it (see the README's "SDK choices").
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracking_core.kit import (
    chosen_instead,
    not_resumed,
    notice,
    per_rank,
    probe_http,
    rank_name,
    rank_tags,
    saved_resume,
)

if TYPE_CHECKING:
    from .tracker import ClearMLTracker

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


def init_keywords(tracker: ClearMLTracker) -> dict[str, Any]:
    """``Task.init``'s keywords: :data:`QUIET_INIT` under the user's ``init_kwargs``, the project and task named
    after the run (``CLEARML_PROJECT`` / ``CLEARML_TASK`` win), a per-rank task named and tagged by its rank."""
    kwargs = {**QUIET_INIT, **tracker.init_kwargs}
    if tracker.run_context is not None and tracker.run_context.system_metrics:
        kwargs.setdefault("auto_resource_monitoring", False)  # the library's samples take its place
    kwargs.setdefault("project_name", os.environ.get("CLEARML_PROJECT") or tracker.run_name)
    kwargs.setdefault("task_name", os.environ.get("CLEARML_TASK") or tracker.run_name)
    context = per_rank(tracker)
    if context is not None:  # per-rank: one task per rank, tagged with the job
        kwargs["task_name"] = rank_name(kwargs["task_name"], context)
        kwargs["tags"] = [*(kwargs.get("tags") or []), *rank_tags(context)]
    return kwargs


def continue_saved_task(tracker: ClearMLTracker, kwargs: dict[str, Any], cache_dir: Path | None) -> Path | None:
    """Point ``Task.init`` at the task saved by ``resume_state`` in an earlier process; returns the cache dir.

    ``continue_last_task=0`` continues the task with the iterations as logged: ClearML's default offset
    (its last iteration + 1) is unknown offline, where it would shift every later step by one. An offline
    session is continued in its own folder, so its cache dir wins; ClearML would silently start an empty
    session under a missing folder's id, so a missing folder means a new task.
    """
    resume = saved_resume(tracker, "task_id", "ClearML task", id_name="task", noun="task")
    if resume is None:
        return cache_dir
    saved, task_id = resume
    if "reuse_last_task_id" in tracker.init_kwargs or "continue_last_task" in tracker.init_kwargs:
        chosen_instead(tracker, "task", "init_kwargs", "ClearML task", task_id)
        return cache_dir
    saved_mode = saved.get("mode")
    if (saved_mode == "offline") != (tracker.mode == "offline"):
        not_resumed(
            tracker,
            f"could not resume ClearML task {task_id} (it was recorded {saved_mode}, this run is {tracker.mode}; "
            "import the offline session into the server first); started a new task",
        )
        return cache_dir
    if tracker.mode == "offline":
        folder = Path(saved.get("session_dir") or "")
        if not saved.get("session_dir") or not folder.is_dir():
            not_resumed(
                tracker,
                f"could not resume ClearML task {task_id} (its offline session {folder} is gone); started a new task",
            )
            return cache_dir
        if cache_dir is not None:  # not the user's own cache: the session's, wherever logging_dir is now
            cache_dir = folder.parent.parent  # <cache>/offline/<task id>
    kwargs["reuse_last_task_id"], kwargs["continue_last_task"] = task_id, 0
    return cache_dir


def announce(task: Any, offline_folder: Path | None) -> None:
    """Tell the user where the task is: its offline session and how to import it, or its page on the server."""
    if offline_folder is not None:
        notice(
            f"clearml: offline session in {offline_folder} (zipped at finish); import it into a server with "
            f"`clearml-task --import-offline-session {offline_folder}.zip`"
        )
    else:
        notice(f"clearml: task {task.id} at {task.get_output_log_web_page()}")


def restore_environ(before: dict[str, str | None]) -> None:
    """Put back the environment variables ClearML set for its task (:data:`LEAKED_ENV`) as they were before."""
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
