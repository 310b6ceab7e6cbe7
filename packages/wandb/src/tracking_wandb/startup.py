"""Starting W&B's run: its mode (offline without credentials), folder, settings, name, and the resume hand-shake.

What the user chose wins everywhere -- ``wandb.init`` keywords, their ``wandb.Settings``, ``WANDB_*``
variables and W&B's settings files -- and this backend's defaults (``dir=logging_dir``, the quiet
settings, offline without credentials) fill in only what none of them chose. Differences between W&B
releases are answered by :mod:`tracking_wandb.older.v0_19`, detected from the installed SDK.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracking_core.kit import chosen_instead, logger, not_resumed, notice, per_rank, rank_name, saved_resume, warn_once

from . import run_metadata
from .older import v0_19

if TYPE_CHECKING:
    from .tracker import WandBTracker

#: Used when neither the user's settings nor ``WANDB_INIT_TIMEOUT`` choose one. W&B waits 90 s (plus a
#: grace period) by default; the training loop never waits for it here, but records queue meanwhile.
DEFAULT_INIT_TIMEOUT = 30.0
#: How often ``wandb-core`` writes the run's ``.wandb`` file (W&B's default is 15 s, and a crash loses
#: everything logged since the last write). A record counts as delivered once the next write has it:
#: ``flush()`` waits for that write, the periodic flush (``begin_flush``) does not.
DEFAULT_TRANSACTION_LOG_FLUSH_INTERVAL = 0.5

# Settings this backend chooses when the user (kwargs, settings, WANDB_* variables, settings files) has not.
# W&B's system monitor (the `wandb-symon` sidecar and the run's metadata), git capture and code saving stay
# as W&B defaults them, as under Accelerate: none of them runs a package manager or writes under HOME.
_QUIET_DEFAULTS: dict[str, Any] = {
    "console": "off",  # no stdout/stderr capture: the training script's output is its own
    "silent": True,  # W&B's banner is replaced by one notice; the dispatcher warns about bad values/steps
    "init_timeout": DEFAULT_INIT_TIMEOUT,
    "x_transaction_log_flush_interval": DEFAULT_TRANSACTION_LOG_FLUSH_INTERVAL,
}
# wandb.init keyword -> the Settings field it sets.
_KWARG_FIELDS = {"mode": "mode", "dir": "root_dir", "save_code": "save_code", "project": "project", "reinit": "reinit"}
# Keywords / Settings fields that choose which run to write: the user's choice wins over a saved run.
_RUN_CHOICE_KWARGS = ("id", "resume", "resume_from", "fork_from")
_RUN_CHOICE_FIELDS = ("run_id", "resume", "resume_from", "fork_from")
#: seconds a reopened run waits for a killed process's wandb-core to let go of it
RUN_IN_USE_WAIT = 60.0


def _as_settings(wandb: Any, settings: Any) -> Any:
    if settings is None:
        return wandb.Settings()
    if isinstance(settings, dict):
        return wandb.Settings(**settings)
    return settings.model_copy()  # never mutate the user's object


def _global_settings() -> Any:
    """W&B's process settings (environment variables and settings files), loaded without a service."""
    return v0_19.global_settings()


def _wandb_is_set_up() -> bool:
    import sys

    if "wandb" not in sys.modules:
        return False
    try:
        return v0_19.is_set_up()
    except Exception:  # internal layout changed: assume set up, leave the environment alone
        return True


def _chosen_fields(settings: Any, kwargs: dict[str, Any]) -> set[str]:
    """Settings fields the user chose: init keywords, their Settings, WANDB_* variables, settings files."""
    chosen = set(settings.model_fields_set)
    chosen.update(field for key, field in _KWARG_FIELDS.items() if kwargs.get(key) is not None)
    try:
        chosen.update(_global_settings().model_fields_set)
    except Exception:  # internal layout changed: fall back to the variables themselves
        chosen.update(key[len("WANDB_") :].lower() for key in os.environ if key.startswith("WANDB_"))
        if "dir" in chosen:
            chosen.add("root_dir")
    return chosen


def _chosen_mode(kwargs: dict[str, Any], settings: Any) -> str | None:
    """The mode the user chose (keyword, their Settings, WANDB_MODE or a settings file), if any."""
    chosen: str | None
    if kwargs.get("mode") is not None:
        chosen = kwargs["mode"]
        return chosen
    if "mode" in settings.model_fields_set:
        chosen = settings.mode
        return chosen
    try:
        resolved = _global_settings()
        return resolved.mode if "mode" in resolved.model_fields_set else None
    except Exception:  # internal layout changed: the variable itself
        return os.environ.get("WANDB_MODE")


def _has_credentials(wandb: Any, settings: Any) -> bool:
    """Whether W&B would find credentials for the run's host, without prompting or network."""
    if settings.api_key or settings.identity_token_file:
        return True
    try:
        host = settings.base_url if "base_url" in settings.model_fields_set else _global_settings().base_url
        return v0_19.find_api_key(settings, host)
    except wandb.errors.AuthenticationError:
        return True  # present but malformed: wandb.init reports it and the run falls back to offline
    except Exception:  # internal layout changed: look where W&B documents it looks
        return bool(os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_IDENTITY_TOKEN_FILE"))


_FOLDER_SECOND = re.compile(r"(?:offline-)?run-(\d{8}_\d{6})-")


def _start_in_a_later_second(folders: list[Path]) -> None:
    """Wait (under a second) until the clock is past the second every earlier part of the run started in.

    W&B names a run's folder ``<mode>-run-<start second>-<id>``: a resumed part started within the same
    second as an earlier part of the same run gets that part's folder, and its ``.wandb`` file is rewritten.
    """
    seconds = {found.group(1) for folder in folders if (found := _FOLDER_SECOND.match(folder.name))}
    while time.strftime("%Y%m%d_%H%M%S") in seconds:
        time.sleep(0.05)


def _another_run_is_active(wandb: Any) -> bool:
    try:
        from wandb.sdk import wandb_setup

        return wandb_setup.singleton().most_recent_active_run() is not None
    except Exception:
        return wandb.run is not None


def _stop_analytics_export() -> None:
    """Keep W&B's own usage analytics from holding the interpreter's exit after a failed online start.

    wandb reports the failed ``wandb.init`` to the same unreachable server through OpenTelemetry
    exporters that are flushed at exit, each first probing the server with a 10 s timeout: against a
    host that never answers, exit then takes ~20 s longer. Once the server is known to be unreachable
    the probe's answer is known too, so it is recorded as "unsupported" (exports become no-ops).
    """
    try:
        import gc

        from wandb.analytics.opentelemetry import opentelemetry_proxy

        opentelemetry_proxy.disable()  # no new exporters in this process
        for candidate in gc.get_objects():
            if isinstance(candidate, opentelemetry_proxy.OpenTelemetryProxy):
                object.__setattr__(candidate, "_server_supports_proxy", False)
    except Exception:  # internal layout changed: exit is merely slower
        pass


def start_run(tracker: WandBTracker) -> None:
    """``wandb.init`` with this backend's defaults where the user chose none, online when credentials exist
    and W&B answers, else offline (``tracker._run``, ``tracker.mode`` and ``tracker.fallback_reason`` set)."""
    _default_environment(tracker)
    import wandb

    kwargs = dict(tracker.init_kwargs)
    settings = _as_settings(wandb, kwargs.pop("settings", None))
    chosen = _chosen_fields(settings, kwargs)
    if "project" not in chosen:
        kwargs["project"] = tracker.run_name
    if "root_dir" not in chosen and tracker.logging_dir is not None:
        tracker.logging_dir.mkdir(parents=True, exist_ok=True)
        kwargs["dir"] = str(tracker.logging_dir.resolve())
    defaults = dict(_QUIET_DEFAULTS)
    if tracker.run_context is not None and tracker.run_context.system_metrics:
        defaults["x_disable_stats"] = True  # the library's samples take the place of W&B's monitor
    for field, value in defaults.items():
        if field not in chosen and not (field == "silent" and "quiet" in chosen):
            if v0_19.has_setting(settings, field):
                setattr(settings, field, value)
            else:
                _lacks_setting(tracker, field)
    tracker._metadata_kind = run_metadata.generation()
    _name_rank(tracker, kwargs, settings, chosen)
    _continue_saved_run(tracker, kwargs, chosen)
    if "reinit" not in chosen and _another_run_is_active(wandb):
        settings.reinit = "create_new"  # "return_previous" would hand this tracker someone else's run
    mode = _chosen_mode(kwargs, settings)
    if mode in ("offline", "dryrun", "disabled"):
        _init(tracker, wandb, kwargs, settings)
    elif not _has_credentials(wandb, settings):
        if mode is not None:  # the user asked for online: W&B would prompt or raise
            tracker.fallback_reason = "no W&B credentials are configured (WANDB_API_KEY or `wandb login`)"
        _init_offline(tracker, wandb, kwargs, settings)
    else:
        try:
            _init(tracker, wandb, kwargs, settings)
        except Exception as error:  # W&B unreachable or refusing: keep the data locally
            tracker.fallback_reason = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            _stop_analytics_export()
            _init_offline(tracker, wandb, kwargs, settings)


def _lacks_setting(tracker: WandBTracker, field: str) -> None:
    """A default this backend sets that the installed W&B does not have: one warning, one report note."""
    effect = v0_19.SETTING_EFFECTS.get(field, "left at W&B's default")
    message = f"wandb {v0_19.version()} has no setting {field!r} ({effect})"
    tracker.add_note(message)
    warn_once(tracker.name, f"setting:{field}", message, reason="sdk-version")


def _name_rank(tracker: WandBTracker, kwargs: dict[str, Any], settings: Any, chosen: set[str]) -> None:
    """Per-rank mode: this rank's run joins the job's W&B group, named after its rank."""
    context = per_rank(tracker)
    if context is None:
        return
    if "run_group" not in chosen and kwargs.get("group") is None:
        kwargs["group"] = context.group
    base = kwargs.get("name") or settings.run_name or os.environ.get("WANDB_NAME")
    kwargs["name"] = rank_name(base, context)  # the keyword wins over a Settings or WANDB_NAME name


def _continue_saved_run(tracker: WandBTracker, kwargs: dict[str, Any], chosen: set[str]) -> None:
    """Point ``wandb.init`` at the run saved by ``resume_state`` in an earlier process (``run_context.resume``).

    ``resume="allow"``: offline W&B cannot check that the run exists, and online it may exist only as the
    offline folders of the earlier process, not on the server yet. A run or resume mode the user chose
    (keyword, ``wandb.Settings``, ``WANDB_RUN_ID`` / ``WANDB_RESUME``) wins.
    """
    resume = saved_resume(tracker, "id", "W&B run")
    if resume is None:
        return
    saved, run_id = resume
    if any(kwargs.get(key) is not None for key in _RUN_CHOICE_KWARGS) or chosen & set(_RUN_CHOICE_FIELDS):
        chosen_instead(tracker, "run", "init_kwargs/settings", "W&B run", run_id)
        return
    folders = [Path(folder) for folder in saved.get("run_dirs") or [] if isinstance(folder, str)]
    existing = [folder for folder in folders if folder.is_dir()]
    if saved.get("mode") == "offline" and not existing:
        gone = ", ".join(map(str, folders)) or "no folder was saved"
        not_resumed(
            tracker, f"could not resume W&B run {run_id} (its offline folders are gone: {gone}); started a new run"
        )
        return
    tracker.earlier_run_dirs = existing
    _start_in_a_later_second(existing)
    kwargs["id"], kwargs["resume"] = run_id, "allow"
    if "project" not in chosen and isinstance(saved.get("project"), str) and saved["project"]:
        kwargs["project"] = saved["project"]
    if "entity" not in chosen and kwargs.get("entity") is None and isinstance(saved.get("entity"), str):
        kwargs["entity"] = saved["entity"] or None


def _init(tracker: WandBTracker, wandb: Any, kwargs: dict[str, Any], settings: Any) -> None:
    deadline = time.monotonic() + RUN_IN_USE_WAIT
    while True:
        try:
            tracker._run = wandb.init(**kwargs, settings=settings)
            break
        except Exception as error:
            # A process killed with SIGKILL leaves its wandb-core behind, holding the run id until
            # it notices its parent is gone; a restarted job reopening the run waits for that.
            if "is in use" not in str(error) or "id" not in kwargs or time.monotonic() > deadline:
                raise
            time.sleep(1.0)
    tracker.mode = "disabled" if tracker._run.disabled else "offline" if tracker._run.offline else "online"


def _init_offline(tracker: WandBTracker, wandb: Any, kwargs: dict[str, Any], settings: Any) -> None:
    kwargs = {key: value for key, value in kwargs.items() if key != "mode"}
    settings.mode = "offline"
    _init(tracker, wandb, kwargs, settings)


def _default_environment(tracker: WandBTracker) -> None:
    """Point W&B's cache and artifact staging under ``logging_dir`` when the user did not choose.

    W&B reads these two only from the environment (``wandb-core`` is spawned once per process with
    a copy of it), so they are set process-wide -- and only before W&B is set up, because W&B warns
    when its variables change afterwards.
    """
    if _wandb_is_set_up() or tracker.logging_dir is None:
        return
    root = tracker.logging_dir.resolve() / "wandb"
    for variable, folder in (("WANDB_CACHE_DIR", "cache"), ("WANDB_DATA_DIR", "data")):
        if variable not in os.environ:
            os.environ[variable] = str(root / folder)


def announce(tracker: WandBTracker) -> None:
    run_dir = tracker.run_dir
    if tracker.mode == "online":
        notice(f"wandb: online run {tracker._run.url} (local copy in {run_dir})")
    elif tracker.mode == "offline":
        message = f"wandb: offline run in {run_dir} (upload later: wandb sync {run_dir})"
        if tracker.fallback_reason:
            logger.warning("%s -- running offline because W&B could not be used: %s", message, tracker.fallback_reason)
        else:
            notice(message)
    else:
        notice("wandb: mode is 'disabled', nothing is recorded")
