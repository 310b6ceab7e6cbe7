"""``swanlab.init`` for the earlier line (0.6.2 to 0.7.x), with the defaults the 0.8+ start gives.

What differs from 0.8's start (:mod:`tracking_swanlab.startup`), all of it this line's own API:

* the folder argument is ``logdir`` (``log_dir`` is accepted and renamed), online is ``mode="cloud"``;
* settings are one flat ``swanlab.Settings`` (``hardware_monitor``, ``requirements_collect``, ...) that
  ``swanlab.init`` merges over the process's global settings field by field, all fields at once: so the
  settings passed here are the global ones (``swanlab.merge_settings``) with the user's ``settings`` on
  top and the package's defaults (package-manager probes off; with the run's system samples, the
  hardware monitor off too) only where neither chose;
* before 0.6.5, an offline ``swanlab.init`` merges a fresh ``Settings(backup=True)`` over the settings it
  was given, every field of it, which puts every other field back to its default (the probes that run
  ``pip list`` and ``git`` among them): :func:`fieldwise_merge` makes that merge take only the field set,
  as 0.6.5 and later do by not making it;
* an online start without an API key would ask for one with ``input()`` (on a TTY) from the worker
  thread: refused here before SwanLab is called;
* offline, a run cannot be continued (``id``/``resume`` are cloud-only): a resumed job writes a new
  SwanLab run under the saved experiment name, with one warning and a report note on how to upload it
  into the first one;
* run groups (``group``) exist from 0.7.0 and online only (an offline run keeps none): per-rank runs are
  then told apart by their names (a note).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracking_core.kit import chosen_instead, not_resumed, per_rank, probe_http, rank_name, saved_resume, warn_once

from .hooks import kept_process_hooks
from .run import LOG_DIR_VARIABLE, MODE_VARIABLE, EarlierRun, environment_before_init

#: The settings of this line that the 0.8+ start keeps off too: the requirements (``pixi list``, ``uv pip
#: list``, ``pip list``) and ``conda env export``, the probes that run a package manager. The rest is as
#: SwanLab defaults it: the hardware and runtime snapshot (``collect_hardware``, ``collect_runtime``), the
#: hardware monitor (``hardware_monitor``; it needs ``collect_hardware``) and the terminal output.
QUIET_DEFAULTS: dict[str, Any] = {
    "requirements_collect": False,
    "conda_collect": False,
}
#: This line's hardware monitor, off when the run's system samples take its place.
MONITOR_SETTING = "hardware_monitor"

API_KEY_VARIABLE = "SWANLAB_API_KEY"
EXPERIMENT_NAME_VARIABLE = "SWANLAB_EXP_NAME"
API_HOST_VARIABLE = "SWANLAB_API_HOST"
#: Where this line's cloud API lives unless ``SWANLAB_API_HOST`` says otherwise (``swanlab.env``).
DEFAULT_API_HOST = "https://api.swanlab.cn/api"


@dataclass
class Started:
    """What :func:`start` leaves for the tracker besides the run."""

    run: EarlierRun
    project: str | None
    fallback_reason: str | None = None
    earlier_run_dirs: list[Path] = field(default_factory=list)
    #: The experiment name was given to ``swanlab.init`` (by the user, a resume or a rank), not made up by SwanLab.
    name_chosen: bool = False


def start(
    tracker: Any,
    swanlab: Any,
    online_check_timeout: float,
    *,
    without_account: str = "offline",
    around_local_init: Callable[[str | None], contextlib.AbstractContextManager[None]] | None = None,
    run_class: type[EarlierRun] = EarlierRun,
) -> Started:
    """Start the run; ``without_account`` is the mode that writes it locally (``"local"`` before 0.6.2, see
    :mod:`tracking_swanlab.older.v0_5_8`), ``around_local_init(logdir)`` is entered around a start in that mode (it
    raises when the mode's own packages are missing), and ``run_class`` wraps the started run."""
    kwargs = dict(tracker.init_kwargs)
    kwargs.setdefault("project", tracker.run_name)
    if "log_dir" in kwargs and "logdir" not in kwargs:
        kwargs["logdir"] = kwargs.pop("log_dir")
    if kwargs.get("mode") == "online":
        kwargs["mode"] = "cloud"
    user_settings = kwargs.pop("settings", None)
    if tracker.logging_dir is not None and "logdir" not in kwargs and not os.environ.get(LOG_DIR_VARIABLE):
        kwargs["logdir"] = str(tracker.logging_dir / "swanlog")
    samples = bool(getattr(tracker.run_context, "system_metrics", False))  # the run's samples replace the monitor
    settings = quiet_settings(swanlab, user_settings, monitor=not samples)

    _name_rank(tracker, swanlab, kwargs)
    earlier_dirs, continued_id = _continue_saved_run(tracker, kwargs)

    mode_chosen = "mode" in kwargs or bool(os.environ.get(MODE_VARIABLE)) or _settings_mode(settings) is not None
    credentials = has_credentials()
    if not mode_chosen:
        kwargs["mode"] = "cloud" if credentials else without_account
    wanted = kwargs.get("mode") or os.environ.get(MODE_VARIABLE) or _settings_mode(settings)
    wanted = "cloud" if wanted == "online" else wanted
    if wanted == "offline" and without_account != "offline":  # a release without offline mode would refuse it
        kwargs["mode"] = wanted = without_account

    fallback_reason = None
    run = None
    environment_before = environment_before_init()
    if wanted == "cloud":
        if not credentials:
            raise RuntimeError(
                "SwanLab mode 'cloud' was chosen but no API key is configured (SWANLAB_API_KEY or `swanlab login`); "
                "this backend never asks for one interactively"
            )
        kwargs["mode"] = "cloud"  # this line's name for it (before 0.6.8 SwanLab refuses "online", in SWANLAB_MODE too)
        host = os.environ.get(API_HOST_VARIABLE) or DEFAULT_API_HOST
        problem = probe_http(host, online_check_timeout)
        if problem is None:
            try:
                with fieldwise_merge(), forget_a_failed_start(swanlab), kept_process_hooks():
                    if continued_id is not None and _takes(swanlab.init, "resume"):
                        run = swanlab.init(settings=settings, id=continued_id, resume="allow", **kwargs)
                    else:
                        run = swanlab.init(settings=settings, **kwargs)
            except Exception as error:
                if mode_chosen:
                    raise
                problem = f"online start failed ({type(error).__name__}: {error})"
        elif mode_chosen:
            raise ConnectionError(
                f"SwanLab service at {host} is unreachable ({problem}) and mode='cloud' was chosen explicitly; "
                "unset SWANLAB_MODE/mode to fall back to an offline run"
            )
        if run is None:
            fallback_reason = f"SwanLab service at {host}: {problem}"
            kwargs["mode"] = without_account
    if run is None:
        if kwargs.get("mode", wanted) != "cloud":
            _drop_cloud_only_choices(tracker, kwargs)
        local_init: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
        if around_local_init is not None and kwargs.get("mode", wanted) == without_account:
            local_init = around_local_init(kwargs.get("logdir"))
        with local_init, fieldwise_merge(), forget_a_failed_start(swanlab), kept_process_hooks():
            run = swanlab.init(settings=settings, **kwargs)
    started = run_class(swanlab, run, name=_run_name(run), owner=tracker, environment_before=environment_before)
    _note_ungrouped(tracker, swanlab, started)
    if continued_id is not None:
        started.continues(continued_id)
        if started.mode != "online":
            where = "offline" if started.mode == "offline" else f"in {started.mode} mode"
            message = (
                f"this SwanLab release cannot continue run {continued_id} {where} (before 0.8 resuming is cloud-only): "
                f"this process writes it as the new SwanLab run {started.part_id}"
            )
            tracker.add_note(message)
            warn_once(tracker.name, "resume", message, reason="resume")
    chosen = bool(kwargs.get("experiment_name") or kwargs.get("name") or os.environ.get(EXPERIMENT_NAME_VARIABLE))
    return Started(started, kwargs.get("project"), fallback_reason, earlier_dirs, chosen)


# -- settings -------------------------------------------------------------------------------------
def quiet_settings(swanlab: Any, user_settings: Any, *, monitor: bool = True) -> Any:
    """The ``swanlab.Settings`` to pass: the global ones, the user's on top, the quiet defaults where neither
    chose; without ``monitor`` (the run's samples take its place) the hardware monitor too."""
    from swanlab.swanlab_settings import get_settings

    settings_class = swanlab.Settings
    current, default = get_settings(), settings_class()
    if isinstance(user_settings, settings_class):
        chosen = dict(user_settings.model_dump(include=set(user_settings.model_fields_set)))
    elif isinstance(user_settings, Mapping):
        chosen = dict(user_settings)
    elif user_settings is None:
        chosen = {}
    else:
        raise TypeError(f"settings must be a swanlab.Settings or a mapping, not {type(user_settings).__name__}")
    values = current.model_dump()
    off = dict(QUIET_DEFAULTS) if monitor else {**QUIET_DEFAULTS, MONITOR_SETTING: False}
    for name, quiet in off.items():
        if name in settings_class.model_fields and name not in chosen and values.get(name) == getattr(default, name):
            values[name] = quiet
    values.update(chosen)
    return settings_class.model_validate(values)


@contextlib.contextmanager
def fieldwise_merge() -> Iterator[None]:
    """While ``swanlab.init`` runs, its ``merge_settings`` takes only the fields a ``Settings`` was given."""
    sdk: Any = sys.modules.get("swanlab.data.sdk")
    original = getattr(sdk, "merge_settings", None)
    if original is None:  # a release that keeps its init elsewhere: nothing to correct
        yield
        return
    from swanlab.swanlab_settings import get_settings, set_settings

    def merge(new: Any) -> None:
        if new is None:
            return
        current = get_settings()
        set_settings(type(current).model_validate({**current.model_dump(), **new.model_dump(exclude_unset=True)}))

    sdk.merge_settings = merge
    try:
        yield
    finally:
        sdk.merge_settings = original


@contextlib.contextmanager
def forget_a_failed_start(swanlab: Any) -> Iterator[None]:
    """A ``swanlab.init`` that fails (a refused API key, say) leaves its half-made writer behind as the
    process's one ``DataPorter`` (0.6.5 on), and every later ``init`` -- the offline fallback, a retried
    start -- then fails with "DataPorter instance already exists". Undo that, as SwanLab's own finish does."""
    try:
        yield
    except BaseException:
        if swanlab.get_run() is None:
            try:
                from swanlab.data.porter import DataPorter
                from swanlab.data.store import reset_run_store
            except ImportError:  # before 0.6.5: no process-wide writer to undo
                pass
            else:
                if getattr(DataPorter, "_instance", None) is not None and hasattr(DataPorter, "_reset"):
                    DataPorter._reset()
                reset_run_store()
        raise


def _settings_mode(settings: Any) -> str | None:
    """The mode chosen in ``swanlab.Settings`` (a field from 0.6.13 on)."""
    mode = getattr(settings, "mode", None)
    return str(mode) if mode else None


def has_credentials() -> bool:
    """An API key in the environment or saved by ``swanlab login`` (SwanLab's own lookup)."""
    if os.environ.get(API_KEY_VARIABLE):
        return True
    try:
        from swanlab.package import get_key
    except ImportError:
        return False
    try:
        return bool(get_key())
    except Exception:  # KeyFileError: nothing saved
        return False


# -- names, ranks, resume ---------------------------------------------------------------------------
def _takes(function: Any, parameter: str) -> bool:
    try:
        return parameter in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def _name_rank(tracker: Any, swanlab: Any, kwargs: dict[str, Any]) -> None:
    context = per_rank(tracker)
    if context is None:
        return
    kwargs["experiment_name"] = rank_name(kwargs.pop("experiment_name", None) or kwargs.pop("name", None), context)
    if kwargs.get("group") is None and _takes(swanlab.init, "group"):
        kwargs["group"] = context.group


def _note_ungrouped(tracker: Any, swanlab: Any, run: EarlierRun) -> None:
    """Per-rank runs this line cannot group: no ``group`` before 0.7.0, and none kept in an offline run."""
    context = per_rank(tracker)
    if context is None or (run.mode == "online" and _takes(swanlab.init, "group")):
        return
    tracker.add_note(
        f"SwanLab before 0.8 keeps no run group in an offline run (and has none before 0.7.0): the per-rank "
        f"runs of job {context.group} are told apart by their names (<name>-rank<N>) only"
    )


def _continue_saved_run(tracker: Any, kwargs: dict[str, Any]) -> tuple[list[Path], str | None]:
    """The saved run's earlier folders and id; its experiment name and project go into ``kwargs``."""
    resume = saved_resume(tracker, "id", "SwanLab run")
    if resume is None:
        return [], None
    saved, run_id = resume
    if {"id", "resume"} & kwargs.keys() or os.environ.get("SWANLAB_RUN_ID") or os.environ.get("SWANLAB_RESUME"):
        chosen_instead(tracker, "run", "init_kwargs/settings", "SwanLab run", run_id)
        return [], None
    folders = [Path(folder) for folder in saved.get("run_dirs") or [] if isinstance(folder, str)]
    existing = [folder for folder in folders if folder.is_dir()]
    if saved.get("mode") in ("offline", "local") and not existing:
        gone = ", ".join(map(str, folders)) or "no folder was saved"
        not_resumed(
            tracker,
            f"could not resume SwanLab run {run_id} (its {saved['mode']} folders are gone: {gone}); started a new run",
        )
        return [], None
    name = saved.get("name")
    if tracker.run_context.group is not None:
        kwargs.pop("experiment_name", None)  # the saved name already says which rank it is
    if isinstance(name, str) and name and not ({"name", "experiment_name"} & kwargs.keys()):
        kwargs["experiment_name"] = name
    if isinstance(saved.get("project"), str) and saved["project"] and "project" not in tracker.init_kwargs:
        kwargs["project"] = saved["project"]
    return existing, run_id


def _drop_cloud_only_choices(tracker: Any, kwargs: dict[str, Any]) -> None:
    """``id`` and ``resume`` of an offline run: 0.6.5 on refuse them (cloud only), earlier releases take neither
    and would drop them without a word. One warning and a note instead, and the run starts."""
    for name in ("id", "resume"):
        if name not in kwargs or (name == "resume" and kwargs[name] in ("never", False, None)):
            continue
        value = kwargs.pop(name)
        message = f"SwanLab before 0.8 continues a run only online (cloud): {name}={value!r} is not used offline"
        warn_once(tracker.name, name, message, reason="cloud-only")
        tracker.add_note(message)


def _run_name(run: Any) -> str | None:
    """The experiment name SwanLab settled on (it makes one up when none is given)."""
    try:
        from swanlab.data.store import get_run_store
    except ImportError:  # before 0.6.5 the name is in the run's private settings
        name = getattr(getattr(run, "_SwanLabRun__settings", None), "exp_name", None)
    else:
        name = get_run_store().run_name
    return str(name) if name else None


def upload_commands(swanlab: Any, run_id: str, folders: list[Path]) -> str:
    """How to upload the folders of one resumed offline run into one SwanLab experiment."""
    if len(folders) > 1 and _takes(getattr(swanlab, "sync", None), "id"):
        first, *later = folders
        return "; ".join(
            [f"swanlab sync --id auto {first}", *(f"swanlab sync --id {run_id} {folder}" for folder in later)]
        )
    commands = "; ".join(f"swanlab sync {folder}" for folder in folders)
    return f"{commands} (this SwanLab release's sync has no --id: each folder becomes its own experiment)"
