"""Starting a Comet experiment: importing comet_ml quietly, the start keywords, and a bounded online start.

``comet_ml.start`` needs care that has nothing to do with mapping the tracker contract: its import patches
frameworks and ``sys.excepthook``, its defaults capture far more than was logged, it keeps one experiment
per process, and an online start can wait on a silent server for minutes. Each is handled here.
"""

from __future__ import annotations

import inspect
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracking_core.kit import chosen_instead, not_resumed, notice, per_rank, probe_http, rank_tags, saved_resume

from .archive import archive_abandoned_data
from .reader import archives_of

if TYPE_CHECKING:
    from .tracker import CometMLTracker

#: Keyword arguments of ``comet_ml.start``; any other keyword must be an ``ExperimentConfig`` field.
START_KEYWORDS = frozenset(
    {
        "api_key",
        "workspace",
        "project",
        "project_name",
        "experiment_key",
        "mode",
        "online",
        "source",
        "experiment_config",
    }
)

#: ``ExperimentConfig`` field -> (Comet setting, value used when neither kwargs nor Comet's config set it).
#: What Comet records beyond what was logged and Accelerate's ``CometMLTracker`` does not ask for either way
#: stays as a library needs it: no stdout capture, no framework auto-logging, no argv parsing, no summary.
#: Comet's own system monitor, code capture, git state and environment details are left at Comet's
#: defaults, as under Accelerate (see :func:`own_defaults` for what changes that).
QUIET_DEFAULTS: dict[str, tuple[str, Any]] = {
    "auto_output_logging": ("comet.auto_log.output_logger", False),
    "auto_param_logging": ("comet.auto_log.parameters", False),
    "auto_metric_logging": ("comet.auto_log.metrics", False),
    "log_graph": ("comet.auto_log.graph", False),
    "parse_args": ("comet.auto_log.cli_arguments", False),
    "display_summary_level": ("comet.display_summary_level", 0),
}
#: Comet's system monitor: the threads that sample CPU, memory and load, GPUs, network and disk every 30 s
#: into ``sys.*`` metrics. Off when the run sends the library's own samples (``run_context.system_metrics``).
MONITOR_FIELDS: dict[str, str] = {
    "log_env_cpu": "comet.auto_log.env_cpu",
    "log_env_gpu": "comet.auto_log.env_gpu",
    "log_env_network": "comet.auto_log.env_network",
    "log_env_disk": "comet.auto_log.env_disk",
}
#: Comet's environment details (packages, host, and the monitor's threads, which Comet starts only with them)
ENV_DETAILS = ("log_env_details", "comet.auto_log.env_details")
_ENV_DETAIL_FIELDS = ("log_env_gpu", "log_env_host", "log_env_cpu", "log_env_network", "log_env_disk")
#: Why the environment details stay off in a conda environment (the finish report's note).
CONDA_NOTE = (
    "Comet's environment details and system monitor are off: in a conda environment Comet runs "
    "`conda env export`, `conda list` and `conda info` for them (pass log_env_details=True to have them)"
)


def in_conda_environment() -> bool:
    """Whether Comet's environment details would run ``conda`` here: Comet's own test, a conda ``sys.prefix``."""
    return os.path.exists(os.path.join(sys.prefix, "conda-meta", "history"))


def own_defaults(system_metrics: bool) -> dict[str, tuple[str, Any]]:
    """The defaults this backend sets where neither the keywords nor Comet's configuration chose.

    Beyond :data:`QUIET_DEFAULTS`: in a conda environment the environment details stay off (they spawn
    ``conda``, and Comet starts its monitor only with them); with ``system_metrics`` the run takes the
    library's samples, so Comet's own monitor (:data:`MONITOR_FIELDS`) is off.
    """
    chosen = dict(QUIET_DEFAULTS)
    if in_conda_environment():
        chosen[ENV_DETAILS[0]] = (ENV_DETAILS[1], False)
    if system_metrics:
        chosen.update({field: (setting, False) for field, setting in MONITOR_FIELDS.items()})
    return chosen


#: Read by ``import comet_ml`` itself, so they can only be environment variables. Set when unset:
#: the first installs import hooks that patch ML frameworks, the second starts a Sentry error reporter
#: (a network client and a worker thread that outlives ``end()``) in half of all processes.
IMPORT_ENVIRONMENT = {"COMET_DISABLE_AUTO_LOGGING": "1", "COMET_ERROR_TRACKING_ENABLE": "false"}


#: Seconds the server gets to answer the probe that precedes an online start.
PROBE_TIMEOUT = 10.0
_MISSING = object()
_IMPORT_LOCK = threading.Lock()
_CREATE_LOCK = threading.Lock()


def start_keywords(
    comet_ml: Any, config: Any, init_kwargs: dict[str, Any], defaults: dict[str, Any], system_metrics: bool = False
) -> dict[str, Any]:
    """The keywords for ``comet_ml.start``: ``init_kwargs`` checked and sorted into ``comet_ml.start``
    arguments and an ``ExperimentConfig``, with :func:`own_defaults` and ``defaults`` (``project_name``,
    ``offline_directory``, ``name``) wherever neither the keywords nor Comet's own settings chose."""
    kwargs = dict(init_kwargs)
    fields = set(inspect.signature(comet_ml.ExperimentConfig).parameters)
    unknown = sorted(set(kwargs) - START_KEYWORDS - fields)
    if unknown:
        raise TypeError(
            f"comet_ml: unknown keyword argument(s) {unknown}; expected comet_ml.start arguments "
            f"{sorted(START_KEYWORDS)} or ExperimentConfig fields {sorted(fields)}"
        )
    explicit = {key: kwargs.pop(key) for key in list(kwargs) if key in fields}
    user_object = kwargs.pop("experiment_config", None)
    if user_object is not None:
        explicit = {**explicit_fields(comet_ml, user_object, fields), **explicit}
    project = kwargs.pop("project_name", None) or kwargs.pop("project", None)
    if project is None and configured(config, "comet.project_name") is None:
        project = defaults["project_name"]
    kwargs["project_name"] = project
    params = _with_defaults(explicit, config, defaults, own_defaults(system_metrics))
    kwargs["experiment_config"] = comet_ml.ExperimentConfig(**params)
    return kwargs


def _with_defaults(
    explicit: dict[str, Any], config: Any, defaults: dict[str, Any], own: dict[str, tuple[str, Any]]
) -> dict[str, Any]:
    params = dict(explicit)
    env_detail_set = any(
        field in params or configured(config, f"comet.auto_log.{field[len('log_') :]}") is not None
        for field in _ENV_DETAIL_FIELDS
    )
    for field, (setting, value) in own.items():
        if field == ENV_DETAILS[0] and env_detail_set:
            continue  # the user turned one probe on; turning them all off would silently undo it
        if field not in params and configured(config, setting) is None:
            params[field] = value
    if "offline_directory" not in params and configured(config, "comet.offline_directory") is None:
        params["offline_directory"] = defaults["offline_directory"]
    if "name" not in params and configured(config, "comet.start.experiment_name") is None:
        params["name"] = defaults["name"]
    if defaults.get("tags") and "tags" not in params and configured(config, "comet.start.experiment_tags") is None:
        params["tags"] = list(defaults["tags"])
    return params


def start_online(comet_ml: Any, config: Any, start_kwargs: dict[str, Any], timeout: float) -> tuple[Any, str | None]:
    """``(experiment, None)`` online, or ``(None, reason)`` when Comet does not answer or start within ``timeout``."""
    address = comet_ml.config.get_backend_address(config)
    attempt = OnlineStart(comet_ml, start_kwargs, address + "isAlive/ver", min(PROBE_TIMEOUT, timeout))
    if not attempt.wait(timeout):
        return None, f"Comet at {address} did not create the experiment within {timeout:g} s"
    if attempt.reason is not None:
        return None, f"Comet at {attempt.reason}"
    if attempt.error is not None:
        if not is_network_error(attempt.error):
            raise attempt.error
        return None, f"Comet at {address} failed: {type(attempt.error).__name__}: {attempt.error}"
    if not attempt.experiment.alive:
        end_quietly(attempt.experiment)
        return None, f"Comet at {address} could not start the experiment (it would drop every point)"
    return attempt.experiment, None


def configured(config: Any, setting: str) -> Any:
    """The value of a Comet setting when the user configured it (environment, .env, .comet.config), else None."""
    value = config.get_raw(None, setting, default=_MISSING)
    return None if value is _MISSING else value


def explicit_fields(comet_ml: Any, user_object: Any, fields: set[str]) -> dict[str, Any]:
    """Fields of a user's ``ExperimentConfig`` that differ from what Comet's configuration alone gives."""
    baseline = comet_ml.ExperimentConfig()
    explicit = {}
    for field in fields:
        attribute = "_disabled" if field == "disabled" else field
        value = getattr(user_object, attribute, None)
        if value != getattr(baseline, attribute, None):
            explicit[field] = value
    return explicit


class _BlockMatplotlib:
    """Meta-path finder that hides matplotlib from ``import comet_ml`` in one thread.

    comet_ml imports ``matplotlib.axes`` at import time only to recognise Axes objects; that import costs
    ~0.4 s and builds matplotlib's font cache under ``~``. Other threads are not affected.
    """

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if threading.get_ident() == self.thread and (name == "matplotlib" or name.startswith("matplotlib.")):
            raise ModuleNotFoundError(f"{name} is not loaded while comet_ml is imported", name=name)


def import_comet() -> Any:
    with _IMPORT_LOCK:
        if "comet_ml" in sys.modules:  # imported by the application: its settings stay as they are
            import comet_ml

            return comet_ml
        for variable, value in IMPORT_ENVIRONMENT.items():
            os.environ.setdefault(variable, value)
        excepthook = sys.excepthook
        blocker = _BlockMatplotlib() if "matplotlib" not in sys.modules else None
        if blocker is not None:
            sys.meta_path.insert(0, blocker)
        try:
            import comet_ml
        finally:
            if blocker is not None:
                sys.meta_path.remove(blocker)
            # comet_ml wraps sys.excepthook at import; the dispatcher already finishes runs at exit.
            sys.excepthook = excepthook
        return comet_ml


def _is_live(experiment: Any) -> bool:
    return bool(getattr(experiment, "alive", False)) and not getattr(experiment, "ended", True)


def create_experiment(comet_ml: Any, start_kwargs: dict[str, Any]) -> Any:
    """``comet_ml.start`` without Comet's one-experiment-per-process rule.

    Comet ends the process's "running experiment" when another one is created, and ``comet_ml.start``
    returns it instead of a new one when its settings match: either would merge or cut off another run.
    The running experiment is set aside while this run's is created, then put back.
    """
    experiment = None
    with _CREATE_LOCK:
        previous = comet_ml.get_running_experiment()
        comet_ml.config.set_global_experiment(None)
        if start_kwargs.get("online") is False:
            experiment = comet_ml.start(**start_kwargs)
    if experiment is None:  # online: waits on the network, so other runs are not held behind the lock
        experiment = comet_ml.start(**start_kwargs)
    with _CREATE_LOCK:
        if previous is not None and previous is not experiment and _is_live(previous):
            comet_ml.config.set_global_experiment(previous)
    return experiment


def end_quietly(experiment: Any) -> None:
    try:
        experiment.end()
    except Exception:  # a dead or abandoned experiment; nothing depends on it
        pass


def is_network_error(error: BaseException) -> bool:
    try:
        import requests
    except ImportError:  # pragma: no cover - comet_ml depends on requests
        return isinstance(error, (ConnectionError, TimeoutError))
    return isinstance(error, (ConnectionError, TimeoutError, requests.exceptions.RequestException))


class OnlineStart:
    """Creates the online experiment in a daemon thread so that a silent server costs at most a deadline.

    A start that is abandoned and completes later ends its experiment at once.
    """

    def __init__(self, comet_ml: Any, start_kwargs: dict[str, Any], probe_url: str, probe_timeout: float) -> None:
        self.experiment: Any = None
        self.error: BaseException | None = None
        self.reason: str | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._abandoned = False
        arguments = (comet_ml, dict(start_kwargs, online=True), probe_url, probe_timeout)
        threading.Thread(target=self._run, args=arguments, name="tracking-comet_ml-online-start", daemon=True).start()

    def _run(self, comet_ml: Any, start_kwargs: dict[str, Any], probe_url: str, probe_timeout: float) -> None:
        experiment = None
        try:
            # any answer counts, a TLS complaint included: Comet's own TLS settings decide the rest
            self.reason = probe_http(probe_url, probe_timeout)
            if self.reason is None:
                experiment = create_experiment(comet_ml, start_kwargs)
        except BaseException as error:  # handed to the waiting thread
            self.error = error
        with self._lock:
            if self._abandoned:
                if experiment is not None:
                    end_quietly(experiment)
                return
            self.experiment = experiment
            self._done.set()

    def wait(self, timeout: float) -> bool:
        """True when the attempt finished (either way) within ``timeout``; False abandons it."""
        self._done.wait(timeout)
        with self._lock:
            if not self._done.is_set():
                self._abandoned = True
                return False
        return True


def run_defaults(tracker: CometMLTracker) -> dict[str, Any]:
    """Project, archive folder, experiment name and tags used where neither kwargs nor Comet's settings chose."""
    name = tracker.run_id or tracker.run_name
    tags: list[str] = []
    context = per_rank(tracker)
    if context is not None:  # per-rank: one experiment per rank, tagged
        suffix = f"-rank{context.rank}"
        name = name if name.endswith(suffix) else f"{name}{suffix}"  # the dispatcher's run id has it already
        tags = rank_tags(context)
    return {
        "project_name": tracker.run_name,
        "offline_directory": os.fspath(tracker.offline_directory),
        "name": name,
        "tags": tags,
    }


def continue_saved_experiment(
    tracker: CometMLTracker, comet_ml: Any, config: Any, start_kwargs: dict[str, Any], online: bool
) -> None:
    """Point ``comet_ml.start`` at the experiment saved by ``resume_state`` in an earlier process.

    Offline, ``mode="get"`` writes an archive marked to append to the experiment of that key on upload
    (what ``ExistingOfflineExperiment`` is); online, ``"get_or_create"`` also covers an experiment that
    so far exists only as offline archives. A killed earlier process left no archive, only its data in
    Comet's temporary folder: that folder is archived first, with Comet's own archive writer.
    """
    resume = saved_resume(tracker, "experiment_key", "Comet experiment", id_name="key", noun="one")
    if resume is None:
        return
    saved, key = resume
    init_kwargs = tracker.init_kwargs
    if "experiment_key" in init_kwargs or "mode" in init_kwargs or configured(config, "comet.experiment_key"):
        chosen_instead(tracker, "experiment", "init_kwargs/COMET_EXPERIMENT_KEY", "Comet experiment", key)
        return
    if saved.get("mode") != "online":
        directory = Path(saved.get("offline_directory") or "")
        salvaged = archive_abandoned_data(comet_ml, saved, directory)
        if salvaged is not None:
            tracker.add_note(f"archived the killed process's Comet data as {salvaged}")
        if not online and not archives_of(directory, key):
            not_resumed(
                tracker,
                f"could not resume Comet experiment {key} (no archive of it in {directory}); started a new one",
            )
            return
        if not online and "offline_directory" not in init_kwargs:
            start_kwargs["experiment_config"].offline_directory = os.fspath(directory)
    start_kwargs["experiment_key"] = key
    start_kwargs["mode"] = "get_or_create" if online else "get"


def announce(experiment: Any, mode: str | None) -> None:
    """Tell the user where the experiment is: its URL online, else where its archive goes and how to upload it."""
    if mode == "online":
        notice(f"comet_ml: experiment {experiment.get_key()} at {experiment.url}")
    elif not experiment.alive:
        notice("comet_ml: Comet is disabled by its configuration (COMET_AUTO_LOG_DISABLE); nothing is recorded")
    else:
        directory = experiment.offline_directory
        notice(
            f"comet_ml: offline experiment {experiment.get_key()}; its archive is written to {directory} at "
            f"finish; upload it later with `comet upload {directory}{os.sep}{experiment.get_key()}*.zip` (needs an API key)"
        )
