"""``swanlab`` backend: the contract mapped onto one SwanLab ``Run`` (the object ``swanlab.init`` returns).

contract                      SwanLab
--------------------------    ------------------------------------------------------------------
start()                       ``swanlab.init(project=run_name, mode=..., log_dir=..., settings=...)``
store_init_configuration      ``run.config.update(values)``   (the run's own config, not ``swanlab.config``)
log (numbers)                 ``run.log({key: number}, step=step)``
log (strings)                 ``run.log({key: swanlab.Text(value)}, step=step)``
log_images                    ``run.log({key: [swanlab.Image(<HW/HWC uint8>), ...]}, step=step)``
log_table                     ``run.log({name: swanlab.echarts.Table().add(columns, rows)}, step=step)``
log_figure                    ``run.log({name: swanlab.Image(<the figure as PNG>)}, step=step)``
log_histogram                 the contract's default (count/min/max/mean/std): SwanLab has no histogram type
log_artifact(s)               ``run.save(path, base_path=folder, policy="now")``  (linked into ``files/``)
log_run_context               ``run.config.update({"run_context": context})``
log_system_metrics            ``run.log({"system/<name>": value}, step=index)`` (each key its own steps)
finish                        ``run.finish()``
resume_state                  ``{"id", "project", "name", "mode", "run_dirs"}``; a resumed run:
                              ``swanlab.init(id=<saved id>, resume="allow", name=<saved name>, ...)``
per-rank runs                 ``swanlab.init(group=<group>, name=<name>-rank<N>)``

Resuming offline. SwanLab writes one ``run-<time>-<id>`` folder per process; a run continued with the
same id gets a new folder whose start record asks to resume, and ``swanlab sync`` of each folder (oldest
first) resumes the same cloud experiment. So the saved state lists every folder and
``read_back_history`` reads them all.

SDK lines. The mapping above is written against SwanLab 0.8+ (``swanlab.sdk``). When ``start()`` finds the
earlier line (0.6.2 to 0.7.x, no ``swanlab.sdk``), :mod:`tracking_swanlab.earlier` starts the run and
gives its run object the names used here (:class:`~tracking_swanlab.earlier.run.EarlierRun`); what that
line lacks (tables before 0.6.5, saved files before 0.7.15, continuing a run offline) is one warning
and a report note. SwanLab 0.5.8 to 0.6.1 have no offline mode: :mod:`tracking_swanlab.local` starts
them in local mode (swanboard's store) through the same earlier-line start.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from tracking_core import GeneralTracker, RunContext, notice, warn_once
from tracking_core.adapters import figure_to_png, image_list, merge_config, probe_http, table_rows, to_hwc_uint8
from tracking_core.context import RUN_CONTEXT_KEY
from tracking_core.kit.sdk import chosen_instead, not_resumed, per_rank, rank_name, saved_resume, sdk_object
from tracking_core.notices import logger
from tracking_core.paths import check_optional_name

from . import compat, earlier, local
from .earlier.run import EarlierRun
from .earlier.start import start as earlier_start
from .earlier.start import upload_commands
from .local.start import start as local_start

#: SwanLab refuses control characters anywhere in a key and '.', '/' or whitespace at either end;
#: longer keys are cut at 512 characters (``swanlab.sdk.internal.pkg.constraints``).
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")
_EDGE_CHARACTERS = " \t\n\r./"
_MAX_KEY_LENGTH = 512
#: The earlier line (0.6.2 to 0.7.x) cuts keys at 255 characters and refuses '.', '/' or whitespace at
#: either end (``swanlab.formatter.check_key_format``).
EARLIER_MAX_KEY_LENGTH = 255

#: What SwanLab records by itself is left as SwanLab (and Accelerate's ``SwanLabTracker``, a plain
#: ``swanlab.init(project=...)``) defaults it: the hardware monitor (``probe.monitor``), the hardware,
#: runtime and git snapshot and the terminal output. Kept off where neither the user's ``settings``,
#: SwanLab's environment variables/config files nor ``swanlab.merge_settings`` chose them: the two probes
#: that run a package manager at start-up -- ``probe.requirements`` (``pixi list``, ``uv pip list``,
#: ``pip list``: up to 25 s, and files in the user's caches) and ``probe.conda`` (``conda env export``,
#: off in SwanLab too).
_KEPT_OFF = {
    "probe.requirements": False,
    "probe.conda": False,
}
#: SwanLab's own hardware monitor, off when the run's system samples take its place (``system_metrics``).
_MONITOR = "probe.monitor"
#: The prefix under which this backend logs the run's system samples (``system/cpu.percent``, ...): a
#: section of their own, each key on its own step sequence (the sample's index).
SAMPLE_PREFIX = "system/"

DEFAULT_ONLINE_CHECK_TIMEOUT = 5.0


# -- helpers ----------------------------------------------------------------------------------
def _attribute(run: Any, name: str) -> str | None:
    """A ``swanlab.Run`` property as text, or None when this SwanLab release lacks it."""
    try:
        value = getattr(run, name)
    except Exception:
        return None
    return str(value) if value is not None else None


def _plain(cell: Any) -> Any:
    """numpy scalars as Python values, so the table JSON keeps numbers as numbers."""
    item = getattr(cell, "item", None)
    return item() if callable(item) and not isinstance(cell, (str, bytes)) and getattr(cell, "ndim", 0) == 0 else cell


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


class SwanLabTracker(GeneralTracker):
    """Logs to SwanLab; with no account and no network it writes an offline run under ``logging_dir``.

    Example::

        import tracking_core

        with tracking_core.init("my-project", log_with="swanlab", logging_dir="runs",
                                init_kwargs={"swanlab": {"experiment_name": "baseline"}}) as run:
            run.log({"train/loss": 0.5}, step=0)
        # then: swanlab sync runs/swanlog/run-<time>-<id>

    ``kwargs`` go to ``swanlab.init`` unchanged (``project`` defaults to ``run_name``; an explicit
    ``project``, ``mode``, ``log_dir``/``logdir``, ``settings``, ``workspace``, ``experiment_name``,
    ``tags``, ... always wins). Where the user chose nothing:

    * ``mode``: ``"offline"`` when no SwanLab credentials are configured, else ``"online"``. An online
      start first checks within ``online_check_timeout`` seconds that the API host answers; when it does
      not (or the online start fails), the run is written offline instead and one notice says why.
      A ``mode`` the user chose is kept: an unreachable host then fails start-up, and the dispatcher
      keeps the records in its spill journal.
    * ``log_dir``: ``<logging_dir>/swanlog``.
    * ``settings``: what SwanLab records by itself is as SwanLab (and Accelerate's ``SwanLabTracker``)
      defaults it -- the hardware monitor (every 10 s, ``__swanlab__.*`` system charts), the hardware,
      runtime (command, host, Python) and git snapshot, the terminal output -- except the two probes that
      run a package manager at start-up: ``probe.requirements`` (``pip list``/``uv pip list``/``pixi
      list``) and ``probe.conda`` (``conda env export``) stay off. ``interactive`` is always off, so
      SwanLab never waits on ``input()`` from a tracker's worker thread.
    * with ``run_context.system_metrics`` (the run asked ``init(system_metrics=True)``): SwanLab's monitor
      is off (``probe.monitor=False``) and the run's samples are logged as ``system/...`` scalars, each at
      step = the sample's index (:meth:`log_system_metrics`).

    Honoured SwanLab settings (environment, ``.env``, ``swanlab.yaml``, ``swanlab.merge_settings``):
    ``SWANLAB_MODE``, ``SWANLAB_LOG_DIR`` (and the older ``SWANLAB_LOGDIR``), ``SWANLAB_API_KEY``,
    ``SWANLAB_API_HOST``, ``SWANLAB_WEB_HOST``, ``SWANLAB_ROOT`` (credentials in ``.netrc`` there),
    ``SWANLAB_PROBE_MONITOR``, ``SWANLAB_PROBE_REQUIREMENTS``, ``SWANLAB_TERMINAL_PROXY_TYPE`` and every other ``SWANLAB_*`` setting.

    Per-rank runs (``run_context.group`` set by ``per_rank=True``): every rank's run is in the SwanLab
    group ``<group>`` and named ``<name>-rank<N>``, ``<name>`` being the name given or the group.
    """

    name = "swanlab"
    requires_logging_directory = False
    main_process_only = False

    def __init__(
        self,
        run_name: str,
        *,
        logging_dir: str | os.PathLike[str] | None = None,
        online_check_timeout: float = DEFAULT_ONLINE_CHECK_TIMEOUT,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self._config: dict[str, Any] = {}  # the run's config so far, for merging a later log_config
        check_optional_name(kwargs.get("id"), "id")  # the run id is part of SwanLab's run folder name
        self.run_name = run_name
        self.logging_dir = Path(logging_dir) if logging_dir is not None else None
        self.online_check_timeout = online_check_timeout
        self.init_kwargs = kwargs
        #: The mode SwanLab actually ran in, and why it is not the one first tried (None: no fallback).
        self.mode: str | None = None
        self.fallback_reason: str | None = None
        self.run_dir: Path | None = None
        self._run: Any = None
        self._finished = False
        self._swanlab: Any = None
        self._column_kind: dict[str, str] = {}
        self._max_key_length = _MAX_KEY_LENGTH  # set by start() for the SwanLab line it finds
        self._last_step: dict[str, int | None] = {}
        #: Local folders of the earlier processes' parts of this run (oldest first), when it was resumed.
        self.earlier_run_dirs: list[Path] = []
        self._project: str | None = None
        #: The SwanLab run id and experiment name, kept after ``finish()`` (which lets go of the run).
        self.run_id: str | None = None
        self.experiment_name: str | None = None

    # -- start ---------------------------------------------------------------------------------
    def start(self) -> None:
        try:
            import swanlab
        except FileExistsError:  # SwanLab before 0.6.2 makes ~/.swanlab at import, racing another process
            import swanlab

        self._swanlab = swanlab
        if earlier.in_use():  # SwanLab 0.5.8 to 0.7.x: no swanlab.sdk, flat settings
            # 0.6.2 on write offline runs (backup.swanlab); before, only local mode writes without an account
            line_start = local_start if local.in_use() else earlier_start
            started = line_start(self, swanlab, self.online_check_timeout)
            self._run, self._project = started.run, started.project
            self.fallback_reason, self.earlier_run_dirs = started.fallback_reason, started.earlier_run_dirs
            self._max_key_length = EARLIER_MAX_KEY_LENGTH
        else:
            self._start_sdk(swanlab)
        self.mode = str(self._run.mode)
        self.run_dir = Path(self._run.dir)
        self.run_id, self.experiment_name = str(self._run.id), _attribute(self._run, "name")
        if self.fallback_reason:
            logger.warning(self._start_notice())
        else:
            notice(self._start_notice())

    def _start_sdk(self, swanlab: Any) -> None:
        """``swanlab.init`` of SwanLab 0.8 and later (the ``swanlab.sdk`` line)."""
        compat.main_thread_only_signals()  # SwanLab < 0.9.1 sets a SIGINT handler even off the main thread
        kwargs = dict(self.init_kwargs)
        kwargs.setdefault("project", self.run_name)
        user_settings = _as_dict(kwargs.pop("settings", None))
        sources = _settings_sources(swanlab, user_settings)

        if self.logging_dir is not None and not ({"log_dir", "logdir"} & kwargs.keys()):
            if not _chosen("log_dir", sources) and not os.environ.get("SWANLAB_LOGDIR"):
                kwargs["log_dir"] = str(self.logging_dir / "swanlog")
        settings: dict[str, Any] = {}
        kept_off = dict(_KEPT_OFF)
        if self._samples_wanted():
            kept_off[_MONITOR] = False  # the run's samples take the monitor's place
        for path, value in kept_off.items():
            if not _chosen(path, sources):
                _set_path(settings, path, value)
        settings = _deep_merge(settings, user_settings)
        settings["interactive"] = False  # a prompt in a worker thread would hang the run

        self._name_rank(kwargs, sources)
        self._continue_saved_run(kwargs, sources)
        self._project = kwargs.get("project")
        effective = _effective_settings(swanlab, user_settings, kwargs.get("mode"))
        mode_chosen = "mode" in kwargs or _chosen("mode", sources)
        credentials = _has_credentials(effective)
        if not mode_chosen:
            kwargs["mode"] = "online" if credentials else "offline"
        wanted = kwargs["mode"] if "mode" in kwargs else effective.mode

        # Without credentials an online start fails at once (SwanLab's own error); with them, a host
        # that does not answer would hold start-up for minutes, so check it first, within a deadline.
        if wanted in ("online", "cloud") and credentials:
            problem = probe_http(str(effective.api_host), self.online_check_timeout)
            if problem is None:
                try:
                    self._run = swanlab.init(settings=settings, **kwargs)
                except Exception as error:
                    if mode_chosen:
                        raise
                    problem = f"online start failed ({type(error).__name__}: {error})"
            elif mode_chosen:
                raise ConnectionError(
                    f"SwanLab service at {effective.api_host} is unreachable ({problem}) and mode='online' was "
                    "chosen explicitly; unset SWANLAB_MODE/mode to fall back to an offline run"
                )
            if self._run is None:
                self.fallback_reason = f"SwanLab service at {effective.api_host}: {problem}"
                kwargs["mode"] = "offline"
        if self._run is None:
            self._run = swanlab.init(settings=settings, **kwargs)

    def _name_rank(self, kwargs: dict[str, Any], sources: list[Any]) -> None:
        """Per-rank mode: this rank's run joins the job's SwanLab group, named after its rank."""
        context = per_rank(self)
        if context is None:
            return
        if kwargs.get("group") is None and not _chosen("experiment.group", sources):
            kwargs["group"] = context.group
        kwargs["name"] = rank_name(kwargs.pop("experiment_name", None) or kwargs.get("name"), context)

    def _continue_saved_run(self, kwargs: dict[str, Any], sources: list[Any]) -> None:
        """Point ``swanlab.init`` at the run saved by ``resume_state`` in an earlier process.

        ``resume="allow"``: offline SwanLab does not check the id, and online the run may so far exist only as
        the earlier process's offline folder. The saved experiment name is kept (SwanLab would make up a new
        one). An ``id``/``resume`` the user chose (kwargs, settings, ``SWANLAB_*``) wins.
        """
        resume = saved_resume(self, "id", "SwanLab run")
        if resume is None:
            return
        saved, run_id = resume
        if {"id", "resume"} & kwargs.keys() or _chosen("run.id", sources) or _chosen("run.resume", sources):
            chosen_instead(self, "run", "init_kwargs/settings", "SwanLab run", run_id)
            return
        folders = [Path(folder) for folder in saved.get("run_dirs") or [] if isinstance(folder, str)]
        existing = [folder for folder in folders if folder.is_dir()]
        if saved.get("mode") in ("offline", "local") and not existing:
            gone = ", ".join(map(str, folders)) or "no folder was saved"
            not_resumed(
                self,
                f"could not resume SwanLab run {run_id} (its {saved['mode']} folders are gone: {gone}); started a new run",
            )
            return
        self.earlier_run_dirs = existing
        kwargs["id"], kwargs["resume"] = run_id, "allow"
        name = saved.get("name")
        if cast(RunContext, self.run_context).group is not None:  # a saved run comes from run_context
            kwargs.pop("name", None)  # the saved name already says which rank it is
        if isinstance(name, str) and name and not ({"name", "experiment_name"} & kwargs.keys()):
            if not _chosen("experiment.name", sources):
                kwargs["name"] = name
        if isinstance(saved.get("project"), str) and saved["project"] and "project" not in self.init_kwargs:
            kwargs["project"] = saved["project"]

    def _start_notice(self) -> str:
        if self.mode == "online":
            url = getattr(self._run, "url", None)
            return f"swanlab: online run {url} (local copy in {self.run_dir})"
        if self.mode == "disabled":
            return "swanlab: mode 'disabled', nothing is recorded"
        where = f"{self.mode} run in {self.run_dir}"
        if self.fallback_reason:
            where += f" because {self.fallback_reason}"
        elif self.mode == "offline":
            where += " (no SwanLab credentials configured)"
        hint = (
            f"upload it with `swanlab sync {self.run_dir}`"
            if self.mode == "offline"
            else f"view it with `swanlab watch {cast(Path, self.run_dir).parent}`"  # set by start()
        )
        return f"swanlab: {where}; {hint}"

    # -- SDK objects -----------------------------------------------------------------------------
    tracker = run = sdk_object(
        "_run",
        "The ``swanlab.Run``, as Accelerate's ``SwanLabTracker.run`` (None before ``start()``; kept after ``finish()``).",
    )

    @property
    def run_dirs(self) -> list[Path]:
        """Every local folder of this run, oldest first: earlier processes' parts, then this process's."""
        current = [self.run_dir] if self.run_dir is not None else []
        return [*self.earlier_run_dirs, *current]

    # -- config and metrics -------------------------------------------------------------------
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        # SwanLab 0.10.3 stores a top-level None as {} (it parses each value as a config mapping);
        # the string keeps the value readable instead of turning it into an empty group.
        self._config = merge_config(self._config, values)  # nested sections key by key
        merged = {key: self._config[key] for key in values}
        self._run.config.update({key: "None" if value is None else value for key, value in merged.items()})

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        payload = {}
        for key, value in values.items():
            kind = "text" if isinstance(value, str) else "scalar"
            if not self._accepts(key, kind, step):
                continue
            payload[key] = self._swanlab.Text(value) if kind == "text" else value
        if payload:
            self._run.log(payload, step=step, **kwargs)

    def _accepts(self, key: str, kind: str, step: int | None) -> bool:
        """SwanLab silently drops a point whose type differs from the key's first one, and a second
        point at the same step; say so once per key instead."""
        first = self._column_kind.setdefault(key, kind)
        if first != kind:
            warn_once(
                self.name,
                key,
                f"SwanLab keeps one type per key: this key holds {first} values, a {kind} value is dropped",
                reason="kind",
            )
            return False
        if step is not None and self._last_step.get(key) == step:
            warn_once(
                self.name,
                key,
                f"SwanLab keeps the first value logged at a step; a repeat at step {step} is dropped",
                reason="repeat",
            )
            return False
        self._last_step[key] = step
        return True

    # -- run context and system samples --------------------------------------------------------------
    def log_run_context(self, context: dict[str, Any]) -> None:
        """The run context (git, command, platform, packages) as the run's config under ``run_context``:
        SwanLab's own git and runtime snapshot has no public place this library can add to."""
        self.store_init_configuration({RUN_CONTEXT_KEY: context})

    def _samples_wanted(self) -> bool:
        """Whether the run's system samples come here, and so SwanLab's own monitor is off."""
        return bool(getattr(self.run_context, "system_metrics", False))

    def log_system_metrics(self, values: dict[str, float], index: int, timestamp: float) -> None:
        """One sample as the scalars ``system/...`` at step = the sample's index.

        SwanLab's own monitor keeps its series under the key prefix ``__swanlab__.``, which ``run.log``
        refuses, and reaching that place means the internals of each SDK line (the 0.8+ core's column and
        scalar records, the 0.6-0.7 experiment object, 0.5.8's none in local mode). ``run.log`` is public on
        every line, and every SwanLab key keeps its own step sequence: index 0 beside a user's step 0 is
        neither a repeat nor a step backwards, and nothing is dropped or warned about. SwanLab stamps the
        time it receives the sample (``timestamp`` has no public place). SwanLab 0.8+ does move its own next
        automatic step up to the highest step logged; the dispatcher, the only caller here, gives every
        user record its step, so the user's axis is not moved.
        """
        if self._run is None or self._finished or self.mode == "disabled":
            return
        payload = {self.sanitize_key(key): float(value) for key, value in values.items()}
        if payload:
            self._run.log(payload, step=index)

    def sanitize_key(self, key: str) -> str:
        cleaned = _CONTROL_CHARACTERS.sub("_", key).strip(_EDGE_CHARACTERS)
        cleaned = cleaned[: self._max_key_length].rstrip(_EDGE_CHARACTERS)
        return cleaned or "_"

    # -- media --------------------------------------------------------------------------------
    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """``{key: image or list of images}`` as ``swanlab.Image`` lists; ``kwargs`` go to ``swanlab.Image``
        (``caption``, ``size``, ``file_type``...), since SwanLab's ``run.log`` takes none."""
        payload = {}
        for key, images in values.items():
            key = self.sanitize_key(key)
            if self._accepts(key, "image", step):
                payload[key] = [self._swanlab.Image(to_hwc_uint8(image), **kwargs) for image in image_list(images)]
        if payload:
            self._run.log(payload, step=step)

    def log_table(
        self,
        table_name: str,
        columns: list[str] | None = None,
        data: list[list[Any]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
        **kwargs: Any,
    ) -> None:
        columns, rows = table_rows(columns, data, dataframe)
        if getattr(getattr(self._swanlab, "echarts", None), "Table", None) is None:  # SwanLab before 0.6.5
            message = (
                "this SwanLab release has no tables (swanlab.echarts.Table, added in 0.6.5): log_table stores nothing"
            )
            warn_once(self.name, "log_table", message, reason="no-tables")
            self.add_note(message)
            return
        if len(set(columns)) != len(columns):
            raise ValueError(f"SwanLab stores table rows as column -> value maps; duplicate column names in {columns}")
        rows = [[_plain(cell) for cell in row] for row in rows]
        key = self.sanitize_key(table_name)
        if self._accepts(key, "table", step):
            self._run.log({key: self._swanlab.echarts.Table().add(columns, rows, **kwargs)}, step=step)

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        """The figure rendered to PNG (``kwargs`` go to ``savefig``; always PNG) as a ``swanlab.Image``."""
        from PIL import Image

        key = self.sanitize_key(name)
        if self._accepts(key, "image", step):
            with Image.open(io.BytesIO(figure_to_png(figure, **kwargs))) as rendered:
                self._run.log({key: self._swanlab.Image(rendered.copy())}, step=step)

    # -- artifacts ----------------------------------------------------------------------------
    def log_artifact(self, local_path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        path = Path(local_path).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"log_artifact: {path} is not a file")
        self._save(str(path), path.parent, artifact_path)

    def log_artifacts(self, local_dir: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        folder = Path(local_dir).resolve()
        if not folder.is_dir():
            raise NotADirectoryError(f"log_artifacts: {folder} is not a directory")
        self._save(str(folder / "**" / "*"), folder, artifact_path)

    def _save(self, pattern: str, base: Path, artifact_path: str | None) -> None:
        if artifact_path:
            warn_once(
                self.name,
                artifact_path,
                "SwanLab names saved files by their path below the folder given; artifact_path is not used",
                reason="artifact_path",
            )
        # "now": a snapshot, like the other backends' artifacts (SwanLab's default "live" keeps watching the file).
        saved = self._run.save(pattern, base_path=str(base), policy="now")
        if saved is None:  # a SwanLab release without saved files: the run said so (warning, report note)
            return
        if not saved:
            raise FileNotFoundError(f"SwanLab saved no file for {pattern}")

    # -- flush and finish -----------------------------------------------------------------------
    def flush(self) -> None:
        """Wait until SwanLab's writer thread has put everything logged so far in the run file, flushed
        and fsynced (SwanLab has no public flush; see :mod:`tracking_swanlab.durability`), so the records
        the dispatcher then counts as delivered survive a kill of the process."""
        if self._run is None or self._finished or self.mode == "disabled":
            return
        from .durability import wait_until_written

        run = self._run
        written = run.wait_until_written() if isinstance(run, EarlierRun) else wait_until_written(run)
        if not written:
            warn_once(
                self.name,
                "flush",
                "this SwanLab release has no writer this library can wait for: points logged shortly before "
                "the process is killed may be lost",
                reason="flush",
            )

    def finish(self) -> None:
        if self._run is None or self._finished:
            return
        self._finished = True
        if self._run.alive:
            self._run.finish()

    # -- resume, read-back, notes ----------------------------------------------------------------
    def resume_state(self) -> dict[str, Any] | None:
        """The run's id, project and name, and every local folder it has so far (this process's last)."""
        if self.run_id is None or self.mode == "disabled":
            return None
        return {
            "id": self.run_id,
            "project": self._project,
            "name": self.experiment_name,
            "mode": self.mode,
            "run_dirs": [str(folder) for folder in self.run_dirs],
        }

    def read_back_metrics(self) -> dict[str, dict[int, Any]]:
        """Scalars per step; a later part's value wins at a step two parts hold (see :meth:`read_back_history`)."""
        return {key: dict(points) for key, points in self.read_back_history().items()}

    def read_back_history(self) -> dict[str, list[tuple[int, Any]]]:
        """Every scalar record of this run through SwanLab's own record reader (see :mod:`tracking_swanlab.reader`).

        A resumed run's folders are read oldest first, each in record order, so a step written by two
        processes shows twice (within one process a repeated step is dropped, see ``_accepts``). A part
        whose run file is still empty holds nothing: SwanLab 0.10.3 writes that file unflushed until
        ``finish()``, so a process that was killed (or has not finished) may have nothing in it yet.
        SwanLab's own system series and the run's system samples are left out (:meth:`read_back_system_metrics`).
        """
        samples = self._samples_wanted()
        return {
            key: points
            for key, points in self._all_scalars().items()
            if not (samples and key.startswith(SAMPLE_PREFIX))
        }

    def read_back_system_metrics(self) -> dict[str, list[tuple[int, float]]]:
        """The run's system series: SwanLab's own monitor's (``__swanlab__.<name>``, step = its sample count)
        and, when the run's samples came here, theirs (``system/<name>``, step = the sample's index)."""
        from .reader import read_run

        system: dict[str, list[tuple[int, float]]] = {}
        for folder in self.run_dirs:
            for key, points in read_run(folder).system_history.items():
                system.setdefault(key, []).extend(points)
        if self._samples_wanted():
            system.update({key: p for key, p in self._all_scalars().items() if key.startswith(SAMPLE_PREFIX)})
        return system

    def _all_scalars(self) -> dict[str, list[tuple[int, Any]]]:
        from .reader import read_run

        history: dict[str, list[tuple[int, Any]]] = {}
        for folder in self.run_dirs:
            for key, points in read_run(folder).scalar_history.items():
                history.setdefault(key, []).extend(points)
        return history

    def read_back_images(self) -> dict[str, list[tuple[int, Any]]]:
        """Every image of this run through SwanLab's own record reader, decoded from its media files."""
        from PIL import Image

        from .reader import holds_records, read_run

        images: dict[str, list[tuple[int, Any]]] = {}
        for folder in self.run_dirs:
            if folder != self.run_dir and not holds_records(folder):
                continue
            for key, points in read_run(folder).media.items():
                for point in points:
                    if point.kind != "image":
                        continue
                    for file in point.files:
                        with Image.open(file) as stored:
                            images.setdefault(key, []).append((point.step, to_hwc_uint8(stored)))
        return images

    def report_notes(self) -> list[str]:
        notes = super().report_notes()
        if self.fallback_reason:
            written = "a local" if self.mode == "local" else "an offline"  # local: SwanLab before 0.6.2
            notes.append(f"fell back to {written} run because {self.fallback_reason}")
        if self.mode == "offline" and self.earlier_run_dirs:
            if isinstance(self._run, EarlierRun):
                commands = upload_commands(self._swanlab, cast(str, self.run_id), self.run_dirs)
            else:
                commands = "; ".join(f"swanlab sync {folder}" for folder in self.run_dirs)
            notes.append(
                f"offline run {self.run_id} in {len(self.run_dirs)} folders (upload in this order: {commands})"
            )
        if self.mode == "local" and self.earlier_run_dirs:  # SwanLab before 0.6.2: one experiment per folder
            folders = ", ".join(map(str, self.run_dirs))
            notes.append(f"local run {self.run_id} in {len(self.run_dirs)} folders, oldest first: {folders}")
        return notes
