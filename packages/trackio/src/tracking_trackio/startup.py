"""Starting a Trackio run: the store it writes to, ``trackio.init``'s arguments, resuming a saved run.

Where the data goes. Trackio computes its storage directory once, when ``trackio`` is first imported
(``TRACKIO_DIR``, else ``$HF_HOME/trackio``), and keeps it in module constants that every part of the SDK
reads when it writes. There is no per-run setting, so :func:`claim_storage` points those constants at
``<logging_dir>/trackio`` for the duration of a run. That works whether or not trackio was imported
before, and lets consecutive runs in one process use different ``logging_dir``s. Because the location is
process-wide, two *overlapping* runs cannot use two directories: the later one joins the directory in use
and says so in a warning. ``TRACKIO_DIR`` in the environment always wins over ``logging_dir``.

Trackio prints its own banner to stdout from ``init()``/``finish()``: inside the tracker's calls
(:func:`quiet_context`) those lines go to the ``tracking`` logger at DEBUG instead.
"""

from __future__ import annotations

import builtins
import contextvars
import inspect
import os
import re
import shlex
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tracking_core.kit import logger, notice, per_rank, rank_name, warn_once

from . import store
from .older import before_v0_24, v0_0_3

if TYPE_CHECKING:
    from .tracker import TrackioTracker

#: Trackio's module constants that hold its storage location, and where each lives under the storage dir.
LOCATION_ATTRIBUTES = {"TRACKIO_DIR": None, "MEDIA_DIR": "media", "ARTIFACTS_DIR": "artifacts"}

#: ``trackio.init`` defaults set here (each overridable): no dashboard in notebooks.
_QUIET_INIT_DEFAULTS = {"embed": False}
#: Trackio's own system monitors (``auto_log_cpu`` from trackio 0.27, ``auto_log_gpu`` from 0.14): off when the
#: run's own samples replace them (``system_metrics=True``), else as Trackio defaults them.
_SDK_MONITORS = ("auto_log_cpu", "auto_log_gpu")

#: Stands for a trackio without a module-global ``config`` (0.0.3).
_NO_CONFIG = object()

_storage_lock = threading.Lock()
#: The storage directories runs of this process are writing to, with how many runs each.
runs_per_dir: Counter[Path] = Counter()
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


def quiet_context() -> contextvars.Context:
    """A context for one run's calls into trackio: its "current run" state stays there, its banner is logged."""
    _silence_sdk_banner()
    context = contextvars.Context()
    context.run(_quiet.set, True)
    return context


def point_sdk_at(directory: Path) -> None:
    """Set Trackio's location constants in every loaded trackio module (they are copied by ``from ... import``)."""
    # a copy taken in one step: another thread's import changes sys.modules while a list is being built from it
    for name, module in sys.modules.copy().items():
        if module is None or not (name == "trackio" or name.startswith("trackio.")):
            continue
        for attribute, child in LOCATION_ATTRIBUTES.items():
            value = vars(module).get(attribute)
            if isinstance(value, (Path, str)):  # a path string before trackio 0.0.20
                location = directory / child if child else directory
                setattr(module, attribute, location if isinstance(value, Path) else str(location))


def claim_storage(wanted: Path | None, backend: str) -> Path:
    """Point Trackio at ``wanted`` (None: Trackio's own default) for a new run; returns the directory in use."""
    global _sdk_default_dir
    import trackio.utils

    with _storage_lock:
        if _sdk_default_dir is None:
            _sdk_default_dir = Path(trackio.utils.TRACKIO_DIR)  # what trackio chose at import time
        user_dir = os.environ.get("TRACKIO_DIR")  # the SDK's own setting wins, even when set after import
        target = Path(user_dir) if user_dir else (wanted or _sdk_default_dir)
        current = Path(trackio.utils.TRACKIO_DIR)
        if target != current and any(count for directory, count in runs_per_dir.items() if directory != target):
            warn_once(
                backend,
                str(target),
                f"Trackio keeps one storage directory per process and another trackio run is still writing to "
                f"{current}; this run's data goes there too, not to {target}. Finish the other run first to separate them.",
                reason="storage-dir-busy",
            )
            target = current
        if target != current:
            point_sdk_at(target)
        runs_per_dir[target] += 1
        return target


def release_storage(directory: Path) -> None:
    """The run writing to ``directory`` is done with it (another run may then point Trackio elsewhere)."""
    with _storage_lock:
        runs_per_dir[directory] -= 1
        if runs_per_dir[directory] <= 0:
            del runs_per_dir[directory]


def taken_by(init: Any, settings: dict[str, Any]) -> dict[str, Any]:
    """The settings this trackio's ``init`` takes (``embed`` and the monitors came in later releases)."""
    try:
        parameters = inspect.signature(init).parameters
    except (TypeError, ValueError):
        return dict(settings)
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters.values()):
        return dict(settings)
    return {key: value for key, value in settings.items() if key in parameters}


def saved_run(tracker: TrackioTracker) -> dict[str, Any] | None:
    """The earlier process's run to continue (``run_context.resume``), unless the user chose a run themselves."""
    context = getattr(tracker, "run_context", None)
    saved: dict[str, Any] | None = getattr(context, "resume", None)
    if saved is None:
        return None
    if "name" in tracker.init_kwargs or "resume" in tracker.init_kwargs:
        logger.info("trackio: name/resume in init_kwargs win over the saved run %r", saved.get("name"))
        return None
    return saved


def open_run(tracker: TrackioTracker, trackio: Any, saved: dict[str, Any] | None) -> tuple[Any, bool]:
    """``(run, resumed)``: the saved run reopened, else a new run from ``trackio.init``."""
    kwargs = _init_kwargs(tracker, trackio)
    module_config = getattr(trackio, "config", _NO_CONFIG)  # init() rebinds the module-global; keep the caller's
    run = None
    try:
        context = cast(contextvars.Context, tracker._context)  # made by start() before this call
        with before_v0_24.in_process_dashboard(trackio, context):  # trackio < 0.18: no web server
            if saved is not None:  # the saved run's name already says which rank it is
                run = _resume(tracker, trackio, {k: v for k, v in kwargs.items() if k != "name"}, saved)
            if run is None:
                v0_0_3.name_run(trackio, kwargs)
                return init(tracker, trackio, **kwargs), False
            return run, True
    finally:
        if module_config is not _NO_CONFIG:  # trackio 0.0.3 has none
            trackio.config = module_config


def init(tracker: TrackioTracker, trackio: Any, **kwargs: Any) -> Any:
    """``trackio.init`` in the run's context; its run (0.0.3 to 0.0.5 return none: the context's current one)."""
    run = tracker._in_context(trackio.init, project=tracker.run_name, **kwargs)
    return run if run is not None else tracker._in_context(v0_0_3.current_run(trackio).get)


def announce(tracker: TrackioTracker, trackio: Any, resumed: bool) -> None:
    """Where the run is and how to view it, as a notice."""
    storage_dir, run = cast(Path, tracker.storage_dir), tracker._run
    # `trackio show` in a new shell looks in TRACKIO_DIR or its default: say which dir when it is neither.
    from_env = bool(os.environ.get("TRACKIO_DIR")) and before_v0_24.reads_trackio_dir()  # ignored before 0.5.2
    in_default = from_env or storage_dir == _sdk_default_dir
    view = "" if in_default else before_v0_24.store_setting(storage_dir) + " "
    what = "resumed run" if resumed else "run"
    remote = before_v0_24.remote_url(run)  # a Space or server the user chose (kwargs or TRACKIO_* env)
    if remote:
        notice(f"trackio: {what} {run.name!r} sent to {remote} (local buffer in {storage_dir})")
    elif not hasattr(trackio, "show"):  # 0.0.3 to 0.0.5: no `trackio show`, a dashboard that reads ./.trackio
        notice(f"trackio: {what} {run.name!r} in {storage_dir} ({v0_0_3.NO_VIEW})")
    else:
        command = f"{view}trackio show --project {shlex.quote(tracker.run_name)}"
        notice(f"trackio: {what} {run.name!r} in {storage_dir} (view: {command})")


def _init_kwargs(tracker: TrackioTracker, trackio: Any) -> dict[str, Any]:
    """``trackio.init``'s arguments: the quiet defaults, the user's, this rank's name and group, minus what
    this release does not take (each with a note)."""
    kwargs = {**taken_by(trackio.init, _QUIET_INIT_DEFAULTS), **tracker.init_kwargs}
    if tracker.run_context is not None and tracker.run_context.system_metrics:  # the samples replace them
        if any(kwargs.get(key) for key in _SDK_MONITORS):
            tracker.add_note("Trackio's auto_log_cpu/auto_log_gpu are off: the run's own samples replace them")
        kwargs.update(taken_by(trackio.init, dict.fromkeys(_SDK_MONITORS, False)))
    _name_rank(tracker, kwargs)
    if no_group := before_v0_24.drop_group(trackio.init, kwargs):
        warn_once(tracker.name, "group", no_group, reason="no-groups")
        tracker.add_note(no_group)
    if no_resume := v0_0_3.drop_resume(trackio.init, kwargs):
        tracker._missing("resume", no_resume)
    return kwargs


def _name_rank(tracker: TrackioTracker, kwargs: dict[str, Any]) -> None:
    """Per-rank mode: this rank's run joins the job's Trackio group, named after its rank."""
    context = per_rank(tracker)
    if context is None:
        return
    if kwargs.get("group") is None:
        kwargs["group"] = context.group
    kwargs["name"] = rank_name(kwargs.get("name"), context)


def _resume(tracker: TrackioTracker, trackio: Any, kwargs: dict[str, Any], saved: dict[str, Any]) -> Any:
    """Reopen the saved run with Trackio's own ``resume="must"``; None (and a report note) when it is gone."""
    name, project = saved.get("name"), saved.get("project", tracker.run_name)
    if not isinstance(name, str) or not name:
        reason = "the saved state names no run"
    elif project != tracker.run_name:
        reason = f"it belongs to project {project!r}, not {tracker.run_name!r}"
    else:
        try:
            run = _reopen(tracker, trackio, name, kwargs)
        except ValueError as error:  # Trackio: "Run '<name>' does not exist in project '<project>'"
            reason = str(error)
            where = saved.get("storage_dir")
            if where and not Path(where).is_dir():
                reason += f"; its store {where} is gone"
        else:
            _restore_config(tracker, run)
            run_id = getattr(run, "id", None)  # Trackio < 0.24 keeps no run ids
            if saved.get("id") and run_id and run_id != saved["id"]:
                tracker.add_note(
                    f"resumed the latest Trackio run named {name!r} (id {run_id}), not the saved id {saved['id']}"
                )
            return run
    tracker.add_note(f"could not resume Trackio run {name!r} ({reason}); started a new run")
    return None


def _reopen(tracker: TrackioTracker, trackio: Any, name: str, kwargs: dict[str, Any]) -> Any:
    """``trackio.init(name=<name>, resume="must")``. A release without ``resume`` (before 0.0.16) gets the same
    check first, then ``init`` by name: its rows are keyed by run name, so the run's rows continue. The first
    releases (0.0.3 to 0.0.16) start the run from its stored config, which their storage saves again."""
    if v0_0_3.takes_resume(trackio.init):
        kwargs = {**kwargs, "resume": "must"}
    elif name not in store.run_names(tracker.run_name):
        raise ValueError(f"Run '{name}' does not exist in project '{tracker.run_name}'")
    if v0_0_3.keeps_config():
        kwargs = {"config": v0_0_3.stored_config(cast(Path, tracker.storage_dir), tracker.run_name, name), **kwargs}
    return init(tracker, trackio, name=name, **kwargs)


def _restore_config(tracker: TrackioTracker, run: Any) -> None:
    """Trackio's resume starts from an empty config and would overwrite the stored one: start from the stored one."""
    if not getattr(run, "_is_local", True) or not before_v0_24.stores_config() or v0_0_3.keeps_config():
        return  # a Space or server holds the config, the release keeps none, or init was given it
    from trackio.sqlite_storage import SQLiteStorage

    try:
        stored = before_v0_24.stored_config(SQLiteStorage, tracker.run_name, run)
    except Exception as error:  # keep logging: the metrics matter more than the config
        tracker.add_note(f"could not read the config of resumed Trackio run {run.name!r} ({error})")
        return
    if stored:
        run.config.update(stored)  # also keeps the run's original _Created
