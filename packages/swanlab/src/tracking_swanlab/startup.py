"""Starting SwanLab's run: which SDK line starts it, its mode, folder, settings, name, and the resume hand-shake.

SwanLab 0.8 and later (``swanlab.sdk``) start here (:func:`start_sdk`); when ``start()`` finds an older
line, its own start in :mod:`tracking_swanlab.older` does (:func:`start_run` picks it). What the user
chose wins everywhere: the ``settings`` kwarg, SwanLab's environment variables and config files, and
``swanlab.merge_settings``; this backend's defaults (mode, ``log_dir``, the quiet probes) fill in only
what none of them chose.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tracking_core import RunContext
from tracking_core.kit import chosen_instead, not_resumed, per_rank, probe_http, rank_name, saved_resume

from .older import v0_5_8, v0_6_2, v0_8_0
from .older.v0_5_8.startup import start as v0_5_8_start
from .older.v0_6_2.startup import start as v0_6_2_start
from .run_end import run_ended_by_dispatcher

if TYPE_CHECKING:
    from .tracker import SwanLabTracker

#: What SwanLab records by itself is left as SwanLab (and Accelerate's ``SwanLabTracker``, a plain
#: ``swanlab.init(project=...)``) defaults it: the hardware monitor (``probe.monitor``), the hardware,
#: runtime and git snapshot and the terminal output. Kept off where neither the user's ``settings``,
#: SwanLab's environment variables/config files nor ``swanlab.merge_settings`` chose them: the two probes
#: that run a package manager at start-up -- ``probe.requirements`` (``pixi list``, ``uv pip list``,
#: ``pip list``: up to 25 s, and files in the user's caches) and ``probe.conda`` (``conda env export``,
#: off in SwanLab too).
KEPT_OFF = {
    "probe.requirements": False,
    "probe.conda": False,
}
#: SwanLab's own hardware monitor, off when the run's system samples take its place (``system_metrics``).
MONITOR = "probe.monitor"


def _as_dict(settings: Any) -> dict[str, Any]:
    if settings is None:
        return {}
    if isinstance(settings, Mapping):
        return dict(settings)
    dumped: dict[str, Any] = settings.model_dump(exclude_unset=True)
    return dumped


def _settings_sources(swanlab: Any, user_settings: dict[str, Any]) -> list[Any]:
    """Where a user can have chosen a setting: their ``settings`` kwarg, SwanLab's environment and
    config files (a fresh ``swanlab.Settings()`` records which fields they set), and
    ``swanlab.merge_settings`` (a full Settings object: a value differing from the default counts)."""
    sources: list[Any] = [user_settings, swanlab.Settings()]
    global_settings = _global_settings()
    if global_settings is not None:
        sources.append(("non-default", global_settings))
    return sources


def _global_settings() -> Any:
    try:
        from swanlab.sdk.internal.settings import get_global_settings
    except ImportError:  # a SwanLab release that moved it: merge_settings is then only seen through init
        return None
    return get_global_settings()


def _effective_settings(swanlab: Any, user_settings: dict[str, Any], mode: Any) -> Any:
    """The settings ``swanlab.init`` will resolve (environment, files, merge_settings, the user's)."""
    effective = swanlab.Settings()
    global_settings = _global_settings()
    if global_settings is not None:
        effective.merge_settings(global_settings)
    overrides = dict(user_settings)
    if mode is not None:
        overrides["mode"] = mode
    if overrides:
        effective.merge_settings(overrides)
    return effective


def _chosen(path: str, sources: list[Any]) -> bool:
    for source in sources:
        if isinstance(source, tuple):
            _, settings = source
            default = _field_default(type(settings), path)
            if default is not _MISSING and _get_path(settings, path) != default:
                return True
        elif isinstance(source, Mapping):
            if _get_path(source, path) is not _MISSING:
                return True
        elif _fields_set(source, path):
            return True
    return False


_MISSING = object()


def _get_path(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(obj, Mapping):
            obj = obj.get(part, _MISSING)
        else:
            obj = getattr(obj, part, _MISSING)
        if obj is _MISSING:
            return _MISSING
    return obj


def _fields_set(model: Any, path: str) -> bool:
    *parents, leaf = path.split(".")
    for part in parents:
        if part not in getattr(model, "model_fields_set", ()):
            return False
        model = getattr(model, part)
    return leaf in getattr(model, "model_fields_set", ())


def _field_default(cls: Any, path: str) -> Any:
    *parents, leaf = path.split(".")
    for part in parents:
        field = cls.model_fields.get(part)
        if field is None:
            return _MISSING
        cls = field.annotation
    field = getattr(cls, "model_fields", {}).get(leaf)
    if field is None:
        return _MISSING
    return field.get_default(call_default_factory=True)


def _set_path(target: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    for part in parents:
        target = target.setdefault(part, {})
    target[leaf] = value


def _deep_merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _has_credentials(effective: Any) -> bool:
    if effective.api_key:
        return True
    try:  # swanlab.login() earlier in this process
        from swanlab.sdk.internal.core_python import client
    except ImportError:
        return False
    logged_in: bool = client.exists()
    return logged_in


def import_swanlab() -> Any:
    """``import swanlab``, once more when SwanLab before 0.6.2 lost the race to make ``~/.swanlab`` to another process."""
    try:
        import swanlab
    except FileExistsError:
        import swanlab
    return swanlab


def start_run(tracker: SwanLabTracker, swanlab: Any) -> None:
    """Start the tracker's run with the installed SwanLab line: ``tracker._run`` and what the start decided
    (project, fallback, the earlier processes' folders of a resumed run) are set on the tracker."""
    if v0_6_2.in_use():  # SwanLab 0.5.8 to 0.7.x: no swanlab.sdk, flat settings
        # 0.6.2 on write offline runs (backup.swanlab); before, only local mode writes without an account
        line_start = v0_5_8_start if v0_5_8.in_use() else v0_6_2_start
        started = line_start(tracker, swanlab, tracker.online_check_timeout)
        tracker._run, tracker._project = started.run, started.project
        tracker.fallback_reason, tracker.earlier_run_dirs = started.fallback_reason, started.earlier_run_dirs
    else:
        start_sdk(tracker, swanlab)


def start_sdk(tracker: SwanLabTracker, swanlab: Any) -> None:
    """``swanlab.init`` of SwanLab 0.8 and later (the ``swanlab.sdk`` line)."""
    v0_8_0.main_thread_only_signals()  # SwanLab < 0.9.1 sets a SIGINT handler even off the main thread
    kwargs = dict(tracker.init_kwargs)
    kwargs.setdefault("project", tracker.run_name)
    user_settings = _as_dict(kwargs.pop("settings", None))
    sources = _settings_sources(swanlab, user_settings)

    if tracker.logging_dir is not None and not ({"log_dir", "logdir"} & kwargs.keys()):
        if not _chosen("log_dir", sources) and not os.environ.get("SWANLAB_LOGDIR"):
            kwargs["log_dir"] = str(tracker.logging_dir / "swanlog")
    settings: dict[str, Any] = {}
    kept_off = dict(KEPT_OFF)
    if tracker._samples_wanted():
        kept_off[MONITOR] = False  # the run's samples take the monitor's place
    for path, value in kept_off.items():
        if not _chosen(path, sources):
            _set_path(settings, path, value)
    settings = _deep_merge(settings, user_settings)
    settings["interactive"] = False  # a prompt in a worker thread would hang the run

    _name_rank(tracker, kwargs, sources)
    _continue_saved_run(tracker, kwargs, sources)
    tracker._project = kwargs.get("project")
    effective = _effective_settings(swanlab, user_settings, kwargs.get("mode"))
    mode_chosen = "mode" in kwargs or _chosen("mode", sources)
    credentials = _has_credentials(effective)
    if not mode_chosen:
        kwargs["mode"] = "online" if credentials else "offline"
    wanted = kwargs["mode"] if "mode" in kwargs else effective.mode

    # Without credentials an online start fails at once (SwanLab's own error); with them, a host
    # that does not answer would hold start-up for minutes, so check it first, within a deadline.
    if wanted in ("online", "cloud") and credentials:
        problem = probe_http(str(effective.api_host), tracker.online_check_timeout)
        if problem is None:
            try:
                tracker._run = _init(tracker, swanlab, settings, kwargs)
            except Exception as error:
                if mode_chosen:
                    raise
                problem = f"online start failed ({type(error).__name__}: {error})"
        elif mode_chosen:
            raise ConnectionError(
                f"SwanLab service at {effective.api_host} is unreachable ({problem}) and mode='online' was "
                "chosen explicitly; unset SWANLAB_MODE/mode to fall back to an offline run"
            )
        if tracker._run is None:
            tracker.fallback_reason = f"SwanLab service at {effective.api_host}: {problem}"
            kwargs["mode"] = "offline"
    if tracker._run is None:
        tracker._run = _init(tracker, swanlab, settings, kwargs)


def _init(tracker: SwanLabTracker, swanlab: Any, settings: dict[str, Any], kwargs: dict[str, Any]) -> Any:
    """``swanlab.init``; under a dispatcher, without the hooks with which SwanLab would end the run itself
    (:mod:`tracking_swanlab.run_end`)."""
    with run_ended_by_dispatcher(tracker.run_context is not None):
        return swanlab.init(settings=settings, **kwargs)


def _name_rank(tracker: SwanLabTracker, kwargs: dict[str, Any], sources: list[Any]) -> None:
    """Per-rank mode: this rank's run joins the job's SwanLab group, named after its rank."""
    context = per_rank(tracker)
    if context is None:
        return
    if kwargs.get("group") is None and not _chosen("experiment.group", sources):
        kwargs["group"] = context.group
    kwargs["name"] = rank_name(kwargs.pop("experiment_name", None) or kwargs.get("name"), context)


def _continue_saved_run(tracker: SwanLabTracker, kwargs: dict[str, Any], sources: list[Any]) -> None:
    """Point ``swanlab.init`` at the run saved by ``resume_state`` in an earlier process.

    ``resume="allow"``: offline SwanLab does not check the id, and online the run may so far exist only as
    the earlier process's offline folder. The saved experiment name is kept (SwanLab would make up a new
    one). An ``id``/``resume`` the user chose (kwargs, settings, ``SWANLAB_*``) wins.
    """
    resume = saved_resume(tracker, "id", "SwanLab run")
    if resume is None:
        return
    saved, run_id = resume
    if {"id", "resume"} & kwargs.keys() or _chosen("run.id", sources) or _chosen("run.resume", sources):
        chosen_instead(tracker, "run", "init_kwargs/settings", "SwanLab run", run_id)
        return
    folders = [Path(folder) for folder in saved.get("run_dirs") or [] if isinstance(folder, str)]
    existing = [folder for folder in folders if folder.is_dir()]
    if saved.get("mode") in ("offline", "local") and not existing:
        gone = ", ".join(map(str, folders)) or "no folder was saved"
        not_resumed(
            tracker,
            f"could not resume SwanLab run {run_id} (its {saved['mode']} folders are gone: {gone}); started a new run",
        )
        return
    tracker.earlier_run_dirs = existing
    kwargs["id"], kwargs["resume"] = run_id, "allow"
    name = saved.get("name")
    if cast(RunContext, tracker.run_context).group is not None:  # a saved run comes from run_context
        kwargs.pop("name", None)  # the saved name already says which rank it is
    if isinstance(name, str) and name and not ({"name", "experiment_name"} & kwargs.keys()):
        if not _chosen("experiment.name", sources):
            kwargs["name"] = name
    if isinstance(saved.get("project"), str) and saved["project"] and "project" not in tracker.init_kwargs:
        kwargs["project"] = saved["project"]


def start_notice(tracker: SwanLabTracker) -> str:
    if tracker.mode == "online":
        url = getattr(tracker._run, "url", None)
        return f"swanlab: online run {url} (local copy in {tracker.run_dir})"
    if tracker.mode == "disabled":
        return "swanlab: mode 'disabled', nothing is recorded"
    where = f"{tracker.mode} run in {tracker.run_dir}"
    if tracker.fallback_reason:
        where += f" because {tracker.fallback_reason}"
    elif tracker.mode == "offline":
        where += " (no SwanLab credentials configured)"
    hint = (
        f"upload it with `swanlab sync {tracker.run_dir}`"
        if tracker.mode == "offline"
        else f"view it with `swanlab watch {cast(Path, tracker.run_dir).parent}`"  # set by start()
    )
    return f"swanlab: {where}; {hint}"
