"""MLflow backend: the tracker contract mapped onto one ``MlflowClient`` per run.

=========================  ===========================================================================
contract                   MLflow call (all on ``self.client``, never the fluent global active run)
=========================  ===========================================================================
``start``                  ``get_experiment_by_name`` / ``create_experiment`` + ``create_run``
                           (or ``update_run(status="RUNNING")`` to resume ``run_id`` or the run
                           saved by ``resume_state`` in an earlier process)
``store_init_configuration`` ``log_batch(params=...)`` (flattened, stringified; a value longer than
                           MLflow takes is left out with a warning, as accelerate does) and
                           ``log_dict(config, "config.json")`` with the exact nested config
``log`` / ``log_batch``    ``log_batch(metrics=...)`` in chunks of the SDK's per-request limits; to a
                           local sqlite store, the same rows in one transaction per batch
                           (:mod:`tracking_mlflow.fast_store`);
                           ``mlflow.log_metrics``' options as ``log_kwargs``: ``synchronous``,
                           ``model_id``, ``dataset``; strings -> ``log_text`` artifact
                           ``text/<key>/step_<step>.txt``
``log_images``             ``log_image(image, key=..., step=...)`` (the UI's stepped image view)
``log_table``              ``log_table(data, artifact_file="tables/<name>/step_<step>.json")``
``log_figure``             the figure as a PNG artifact ``artifact_file`` (``.png`` added when missing)
``log_histogram``          none in MLflow: the core's summary metrics (``<name>/count``, ``/mean``, ...)
``log_artifact(s)``        ``log_artifact`` / ``log_artifacts``
``log_system_metrics``     ``system/...`` metrics at step = sample index, where MLflow's own system metrics are
``finish``                 ``set_terminated(run_id, status, end_time)``: ``FINISHED``, ``FAILED`` (an
                           exception ended the run) or ``KILLED`` (Ctrl-C, SIGTERM), at the time the run
                           ended; ``create_run(start_time=...)`` is when ``init()`` was called
per-rank runs              run name ``<run name>-rank<N>``, tags ``tracking.group`` / ``tracking.rank``
=========================  ===========================================================================

Every call is synchronous: the dispatcher's worker thread already keeps MLflow off the training loop,
so when a call returns the data is committed (sqlite) or accepted by the server, and ``flush`` has
nothing left to do.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import re
import shlex
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tracking_core import GeneralTracker, flatten_config, notice, stringify, warn_once
from tracking_core.adapters import figure_to_array, image_list, merge_config, table_rows, to_hwc_uint8
from tracking_core.errors import PartialDelivery
from tracking_core.filelock import file_lock
from tracking_core.gitinfo import read_head
from tracking_core.kit.sdk import rank_name, sdk_object
from tracking_core.registry import install_command

from . import fast_store, system
from .schema_cache import seed_store, unseed

# The SDK's limits (mlflow 3.x values); start() reads the installed SDK's own from mlflow.utils.validation.
_FALLBACK_LIMITS = {
    "MAX_PARAM_VAL_LENGTH": 6000,
    "MAX_PARAMS_TAGS_PER_BATCH": 100,
    "MAX_METRICS_PER_BATCH": 1000,
    "MAX_ENTITIES_PER_BATCH": 1000,
    "MAX_ENTITY_KEY_LENGTH": 250,
}
# One character MLflow accepts in a metric/param name (its rule on Linux/macOS; Windows also refuses ":").
_FALLBACK_KEY_CHAR = re.compile(r"[/\w.\- :]")
# log_image(key=...) is stricter than metric names.
_IMAGE_KEY_CHAR = re.compile(r"[a-zA-Z0-9_\-./ ]")
_UNSAFE_PATH_CHARS = re.compile(r"[^\w.\- ]")
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}
# MLflow's defaults retry an unreachable server silently for minutes (7 retries, 120 s timeout), which would
# hold start-up and every later call. Applied only for http(s) URIs and only where the user set nothing.
_HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_TIMEOUT": "15"}
_EMBEDDED_EXPERIMENT = "tracking"
# Error codes of a store that failed to answer (not of a missing run): a new run there would fail the same way.
_UNREACHABLE_CODES = {"INTERNAL_ERROR", "TEMPORARILY_UNAVAILABLE", "REQUEST_LIMIT_EXCEEDED"}
# How the run ended (GeneralTracker.run_end) in MLflow's RunStatus: an exception FAILED, as mlflow.start_run's
# context manager ends it; Ctrl-C, SIGTERM or a dead process KILLED, MLflow's word for a run stopped from outside.
_STATUS = {"finished": "FINISHED", "failed": "FAILED", "killed": "KILLED"}


def _has_ui() -> bool:
    """Whether ``mlflow ui`` can run here: mlflow-skinny lacks its server's Flask."""
    import importlib.util

    try:
        return importlib.util.find_spec("flask") is not None and importlib.util.find_spec("mlflow.server") is not None
    except (ImportError, ValueError):
        return False


def _ui_install_command() -> str:
    """Full mlflow at exactly the installed mlflow-skinny's version: a range (or the backend's ``ui`` extra)
    lets the resolver move mlflow-skinny, and with it the store's schema, to another release."""
    import importlib.metadata

    try:
        version = importlib.metadata.version("mlflow-skinny")
    except importlib.metadata.PackageNotFoundError:
        return install_command("mlflow", extra="ui")
    return f"pip install {shlex.quote(f'mlflow=={version}')}"


class _DeletedRun(ValueError):
    """The run exists but is deleted: MLflow refuses to log to it or to set its status."""


def _parse_bool(name: str, raw: str) -> bool:
    text = raw.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"{name}={raw!r} is not a boolean (use true/false, 1/0, yes/no)")


def _parse_tags(raw: Any, source: str) -> dict[str, str]:
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as error:
            raise ValueError(f"{source} must be a JSON object of tags, got {raw!r}: {error}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{source} must be a dict (or a JSON object) of tags, got {type(raw).__name__}")
    return {str(key): stringify(value) for key, value in raw.items()}


def _png_name(artifact_file: str) -> str:
    """``artifact_file`` with the ``.png`` suffix: figures are always stored as PNG."""
    stem, suffix = os.path.splitext(artifact_file)
    return artifact_file if suffix.lower() == ".png" else f"{stem if suffix else artifact_file}.png"


#: ``log_kwargs`` this tracker takes: ``mlflow.log_metrics``' own options (``timestamp`` is the dispatcher's)
_LOG_OPTIONS = frozenset(("synchronous", "timestamp", "model_id", "dataset"))
_ENTITY_OPTIONS = frozenset(("model_id", "dataset"))  # the options that go into each Metric
_NO_OPTIONS: dict[str, Any] = {}
# MLflow 2.x separates the parts with "%" and writes "/" in keys as "#"; MLflow 3 uses "+" and "~".
_IMAGE_FILE = re.compile(
    r"^images/(?P<key>.+)(?P<sep>[+%])step(?P=sep)(?P<step>\d+)(?P=sep)timestamp(?P=sep)(?P<time>\d+)(?P=sep)[0-9a-f-]+\.png$"
)


def _artifact_path(key: str) -> str:
    """A run-relative artifact path for a metric/table key: ``/`` kept as folders, nothing that escapes."""
    parts = []
    for part in key.split("/"):
        part = _UNSAFE_PATH_CHARS.sub("_", part)
        if part.strip("."):
            parts.append(part)
        elif part:
            parts.append("_" * len(part))  # "." and ".." would resolve to another path
    return "/".join(parts) or "_"


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), max(1, size)):
        yield items[start : start + size]


def _without_password(uri: str) -> str:
    """``uri`` minus a password (``postgresql://user:secret@host/db``): it is saved in ``run.json``."""
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}@{host}" if parts.username else host))


def _local_store(uri: str) -> Path | None:
    """The file or folder behind a local store URI; opening a missing one would create an empty store."""
    if uri.startswith("sqlite:///"):
        path = uri[len("sqlite:///") :].partition("?")[0]
        return Path(path) if path and path != ":memory:" else None
    if uri.startswith("file:"):
        return Path(urllib.request.url2pathname(urlsplit(uri).path))
    return None


def _sdk_image_separator() -> str:
    """What MLflow's ``log_image(key=, step=)`` puts between the parts of a file name: ``%`` (MLflow 2.x) or ``+``.

    A tracking server URL-decodes the ``%`` names (``%29`` becomes ``)``), so such images reach a server's
    artifact store under altered names that MLflow's own image view no longer parses.
    """
    import inspect

    from mlflow import MlflowClient

    try:
        source = inspect.getsource(MlflowClient.log_image)
    except (OSError, TypeError):
        return "+"
    return "%" if "%step%" in source else "+"


def _sqlalchemy_mismatch(error: ImportError) -> ImportError | None:
    """A clear error for MLflow before 3.9 next to SQLAlchemy 2.1, which removed a pool class that MLflow imports."""
    if "FallbackAsyncAdaptedQueuePool" not in str(error):
        return None
    import mlflow
    import sqlalchemy

    return ImportError(
        f"MLflow {mlflow.__version__} cannot open a database store with SQLAlchemy {sqlalchemy.__version__} "
        "(it imports a pool class SQLAlchemy 2.1 removed): pip install 'sqlalchemy<2.1', or MLflow 3.9 or later"
    )


class StoreFromNewerMlflow(ImportError):
    """The sqlite store's schema is from a newer MLflow than the installed one.

    An ``ImportError`` as a missing package is: only the user brings the newer MLflow back, so the start
    is not retried, and the spill names ``tracking replay`` for after the fix."""


def _store_from_newer_mlflow(error: Exception, store: Path) -> StoreFromNewerMlflow | None:
    """A clear error for MLflow refusing a store whose alembic revision it does not know (a downgrade)."""
    found = re.search(r"found version (\w+), but expected (\w+)", str(error))
    if found is None:
        return None
    revision, expected = found.groups()
    import mlflow

    try:
        from mlflow.store.db_migrations import versions

        known = {path.name.split("_", 1)[0] for path in Path(next(iter(versions.__path__))).glob("*.py")}
    except (ImportError, StopIteration):  # an MLflow that moved its migrations: the revision is named anyway
        known = set()
    if revision in known:  # an older store MLflow would migrate: not this case
        return None
    return StoreFromNewerMlflow(
        f"the MLflow store {store} was written by a newer MLflow than the installed {mlflow.__version__}: "
        f"its schema revision {revision} is not one this MLflow knows (its newest is {expected}), and an "
        "older MLflow cannot open it. Use a new logging_dir (or another tracking URI), or install the newer "
        "MLflow again: pip install --upgrade mlflow-skinny (a release whose migrations include revision "
        f"{revision})"
    )


def _unreachable(error: Exception) -> bool:
    if isinstance(error, _DeletedRun):
        return False
    code = getattr(error, "error_code", None)
    return code is None or code in _UNREACHABLE_CODES


def _why_not_resumed(error: Exception, uri: str) -> str:
    if isinstance(error, _DeletedRun):
        return "it is deleted"
    if getattr(error, "error_code", None) == "RESOURCE_DOES_NOT_EXIST":
        return f"it is not in {_without_password(uri)}"
    message = (str(error).strip().splitlines() or [""])[0]
    return f"{type(error).__name__}: {message[:200]}"


def _context_tags(tags: dict[str, str]) -> dict[str, str]:
    """MLflow's context tags, but the git commit read from ``.git`` files: MLflow's own git provider
    imports GitPython, which runs ``git`` (three processes at every start, whatever is on PATH)."""
    from mlflow.tracking.context import registry

    providers = getattr(registry, "_run_context_provider_registry", None)
    if providers is None:  # an MLflow that moved its registry: its own resolution, git included
        resolved: dict[str, str] = registry.resolve_tags(tags)
        return resolved
    context: dict[str, str] = {}
    for provider in providers:
        if "Git" in type(provider).__name__:
            continue
        try:
            if provider.in_context():
                context.update(provider.tags())
        except Exception:  # one provider's failure costs only its tags, as in MLflow's own resolution
            continue
    head = read_head()
    if head is not None:
        context.setdefault("mlflow.source.git.commit", head.commit)
    context.update(tags)
    return context


class MLflowTracker(GeneralTracker):
    """Logs a run to MLflow through a per-run ``MlflowClient``; works with no server by default.

    Example::

        import tracking_core

        with tracking_core.init("my-experiment", log_with="mlflow", logging_dir="runs",
                                config={"lr": 3e-4}, init_kwargs={"mlflow": {"run_name": "baseline"}}) as run:
            for step in range(100):
                run.log({"train/loss": 1 / (step + 1)}, step=step)
        # then: mlflow ui --backend-store-uri sqlite:///$PWD/runs/mlflow.db

    Where data goes, first match wins: the ``tracking_uri=`` argument; ``MLFLOW_TRACKING_URI`` or a URI
    set with ``mlflow.set_tracking_uri`` before the run starts; otherwise the embedded store
    ``sqlite:///<abs logging_dir>/mlflow.db`` with artifacts in ``<logging_dir>/mlartifacts`` (the new
    experiment's ``artifact_location``). ``artifact_location=`` sets it for a new experiment on any store.

    Arguments as in ``accelerate``'s MLflowTracker, with its environment variables overriding them:
    ``experiment_name`` (``MLFLOW_EXPERIMENT_NAME``; ``MLFLOW_EXPERIMENT_ID`` selects an experiment by
    id; the project name arrives here), ``run_id`` (``MLFLOW_RUN_ID``: resume that run), ``tags`` (dict
    or JSON; ``MLFLOW_TAGS`` is a JSON object merged over them), ``nested_run`` (``MLFLOW_NESTED_RUN``,
    ``"false"``/``"0"`` mean false: nest under the MLflow run active in the thread that constructs the
    tracker, or under ``parent_run_id=``), ``run_name``, ``description`` (the run's note).

    Other SDK settings honoured as MLflow reads them: credentials and TLS (``MLFLOW_TRACKING_USERNAME``,
    ``..._PASSWORD``, ``..._TOKEN``, ``..._INSECURE_TLS``, ...), ``MLFLOW_HTTP_REQUEST_*`` (defaults of 2
    retries and a 15 s timeout are set for http(s) servers only when unset), ``MLFLOW_RUN_CONTEXT``,
    ``MLFLOW_TRUNCATE_LONG_VALUES``. ``MLFLOW_DISABLE_TELEMETRY`` is set to ``true`` when neither it nor
    ``DO_NOT_TRACK`` is set. ``MLFLOW_ENABLE_ASYNC_LOGGING`` is not used: calls are synchronous in the
    dispatcher's worker thread.

    System metrics as ``mlflow.start_run`` records them: MLflow's own monitor (``system/...`` metrics every
    10 s) runs when ``MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING`` is true, off by default. With
    ``init(system_metrics=True)`` the library's samples are stored that way instead (``system/cpu.percent``, ...,
    step = sample index, each at the time it was taken) and MLflow's monitor is not started.

    Resuming: ``resume_state()`` saves the run id and tracking URI; a later process given it in
    ``run_context.resume`` reopens that run, or starts a new one (with a report note) when it is gone.
    An explicit ``run_id`` / ``MLFLOW_RUN_ID`` wins over the saved state.

    ``tracker`` (and ``active_run``, as in accelerate) is the ``mlflow.entities.Run`` created at start
    (``tracker.info.run_id``); ``client`` is the ``MlflowClient`` bound to this run's tracking URI. With
    a dispatcher they wait until the run has started. Used on its own (``start()``, ``log(...)``,
    ``finish()``), the tracker calls MLflow directly: a key MLflow refuses raises there, as in MLflow.
    """

    name = "mlflow"
    wants_timestamps = True
    requires_logging_directory = False

    def __init__(
        self,
        experiment_name: str | None = None,
        logging_dir: str | os.PathLike[str] | None = None,
        run_id: str | None = None,
        tags: dict[str, Any] | str | None = None,
        nested_run: bool = False,
        run_name: str | None = None,
        description: str | None = None,
        *,
        tracking_uri: str | None = None,
        artifact_location: str | None = None,
        parent_run_id: str | None = None,
    ) -> None:
        super().__init__()
        env = os.environ
        self.experiment_name = env.get("MLFLOW_EXPERIMENT_NAME") or experiment_name
        self.experiment_id = None if env.get("MLFLOW_EXPERIMENT_NAME") else env.get("MLFLOW_EXPERIMENT_ID") or None
        self.run_id = env.get("MLFLOW_RUN_ID") or run_id
        self.tags = {**_parse_tags(tags, "tags"), **_parse_tags(env.get("MLFLOW_TAGS"), "MLFLOW_TAGS")}
        raw_nested = env.get("MLFLOW_NESTED_RUN")
        self.nested_run = _parse_bool("MLFLOW_NESTED_RUN", raw_nested) if raw_nested is not None else bool(nested_run)
        self.run_name = run_name
        self.description = description
        self.logging_dir = os.path.abspath(os.fspath(logging_dir) if logging_dir is not None else "runs")
        self.tracking_uri = tracking_uri
        self.artifact_location = artifact_location
        self.parent_run_id = parent_run_id or (self._caller_active_run_id() if self.nested_run else None)
        self.limits = dict(_FALLBACK_LIMITS)
        self._client: Any = None
        self._run: Any = None
        self._finished = False
        self._key_ok: Any = None
        self._keys: dict[str, str] = {}
        self._params: dict[str, str] = {}  # params in the run: MLflow keeps a param's first value for good
        self._config: dict[str, Any] = {}  # the merged config, written whole to config.json at each store
        self._image_time = 0  # last log_image timestamp (ms): strictly increasing keeps the images' order
        self._pending: list[Any] = []  # MLflow's RunOperations of metrics logged with synchronous=False
        self._writer: fast_store.MetricWriter | None = None  # a local sqlite store's metrics, below MLflow's ORM
        self._sdk_monitor: Any = None  # MLflow's SystemMetricsMonitor, when its environment variable asks

    @staticmethod
    def _caller_active_run_id() -> str | None:
        # MLflow keeps the active run per thread and start() runs in the worker thread, so the parent of a
        # nested run is taken here, in the caller's thread -- only if the caller already imported mlflow.
        fluent = sys.modules.get("mlflow")
        try:
            active = fluent.active_run() if fluent is not None else None
        except Exception:  # a half-imported or unusual mlflow must not break construction
            return None
        return active.info.run_id if active is not None else None

    # -- start ------------------------------------------------------------------------------------
    def start(self) -> None:
        # Importing mlflow writes ~/.config/mlflow/telemetry.json and starts a thread that reports usage
        # unless telemetry is off. Turn it off unless the user decided either way (DO_NOT_TRACK counts).
        if "MLFLOW_DISABLE_TELEMETRY" not in os.environ and "DO_NOT_TRACK" not in os.environ:
            os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"
        import mlflow

        self._read_sdk_rules()
        uri, embedded = self._resolve_tracking_uri(mlflow)
        saved = self._saved_run()
        if saved and self.run_id and saved[0] != self.run_id:
            self.add_note(f"MLflow run {self.run_id} was chosen explicitly; the saved run {saved[0]} was not resumed")
        opened = self._reopen(*saved, uri, embedded) if saved and not self.run_id else None
        if isinstance(opened, tuple):
            uri, client, run = opened
        else:
            client = self._client_for(uri, embedded)
            run = self._resume(client, self.run_id) if self.run_id else self._create_run(client, embedded)
            if opened:
                self.add_note(f"could not resume MLflow run {opened}; started a new run {run.info.run_id}")
        self._client, self._run = client, run
        self._params = dict(run.data.params)  # a resumed run's params cannot change
        self.tracking_uri = uri
        self._writer = self._metric_writer(uri, run.info.run_id)
        sampled = self.run_context is not None and self.run_context.system_metrics
        resumed = bool(self.run_id) or isinstance(opened, tuple)  # MLflow's monitor then counts on
        if not sampled and system.sdk_monitor_wanted():  # as mlflow.start_run; the samples replace it
            self._sdk_monitor, why_not = system.start_sdk_monitor(run.info.run_id, uri, resumed)
            if why_not:
                warn_once(self.name, "system-metrics", why_not, reason="sdk-monitor")
                self.add_note(why_not)
        self._announce(client, run, uri, embedded)

    @staticmethod
    def _metric_writer(uri: str, run_id: str) -> fast_store.MetricWriter | None:
        """Points to a local sqlite store go straight into its tables (``fast_store``); a server, another
        database or a schema the writer does not know go through MLflow's client."""
        store = _local_store(uri) if uri.startswith("sqlite:") else None
        return fast_store.MetricWriter.open(store, run_id) if store is not None and store.is_file() else None

    def _client_for(self, uri: str, embedded: bool, *, tidy: bool | None = None) -> Any:
        """A client on ``uri``; ``embedded`` also makes ``logging_dir``; ``tidy`` (default: ``embedded``) removes
        the empty ``./mlruns`` MLflow 2.x makes when it opens a database store."""
        from mlflow import MlflowClient

        if uri.startswith(("http://", "https://")):
            # MLflow reads these from the environment at each request; there is no per-client setting.
            for variable, value in _HTTP_DEFAULTS.items():
                os.environ.setdefault(variable, value)
        if embedded:
            os.makedirs(self.logging_dir, exist_ok=True)
        store = _local_store(uri) if uri.startswith("sqlite:") else None
        if store is None:
            return MlflowClient(tracking_uri=uri)
        # MLflow 2.x makes its default artifact root ./mlruns when it opens a database store; the embedded
        # store keeps its artifacts under logging_dir, so an empty ./mlruns made here is removed again.
        tidy = embedded if tidy is None else tidy
        stray = Path("mlruns").absolute() if tidy and not os.path.exists("mlruns") else None
        try:
            return self._open_sqlite(uri, store)
        except ImportError as error:
            raise (_sqlalchemy_mismatch(error) or error) from error
        except Exception as error:
            newer = _store_from_newer_mlflow(error, store)
            if newer is None:
                raise
            raise newer from None  # MLflow's own advice (`mlflow db upgrade`) cannot help an older MLflow
        finally:
            if stray is not None and stray.is_dir() and not any(stray.iterdir()):
                try:
                    stray.rmdir()
                except OSError:  # another process's MLflow made or filled it meanwhile
                    pass

    @staticmethod
    def _open_sqlite(uri: str, store: Path) -> Any:
        from mlflow import MlflowClient

        # Opening a sqlite store creates and migrates it; ranks of a per-rank job opening one fresh
        # store at once would race in the migrations, so the first creates it and the others wait.
        with file_lock(store.with_name(f".{store.name}.lock")):
            seeded = seed_store(store)
            try:
                client = MlflowClient(tracking_uri=uri)
                client.search_experiments(max_results=1)  # the store is created here, inside the lock
            except Exception:
                if not seeded:
                    raise
                unseed(store, uri)  # MLflow refused the copy: let it make the store itself
                client = MlflowClient(tracking_uri=uri)
                client.search_experiments(max_results=1)
        return client

    def _saved_run(self) -> tuple[str, str | None] | None:
        """``(run id, tracking URI)`` from ``run_context.resume``: what ``resume_state`` saved earlier."""
        state = self.run_context.resume if self.run_context is not None else None
        if not isinstance(state, dict):
            return None
        run_id, uri = state.get("run_id"), state.get("tracking_uri")
        if not isinstance(run_id, str) or not run_id:
            self.add_note(f"the saved MLflow state {state!r} names no run; a new run was started")
            return None
        return run_id, uri if isinstance(uri, str) and uri else None

    def _reopen(self, run_id: str, saved_uri: str | None, uri: str, embedded: bool) -> tuple[str, Any, Any] | str:
        """The saved run reopened, ``(uri, client, run)``; or ``"<id> (<reason>)"`` when a new run is needed.

        The saved URI is used unless the user chose one now: the embedded store's path depends on
        ``logging_dir``, which a restarted job may spell differently. Only a store that fails to answer
        where the new run would go raises: a new run there would fail the same way, after more retries.
        """
        where = saved_uri if embedded and saved_uri else uri
        store = _local_store(where)
        if store is not None and not store.exists():
            reason = f"its store {store} no longer exists"
        else:
            try:
                client = self._client_for(where, False, tidy=embedded)  # the saved embedded store, if so
                return where, client, self._resume(client, run_id)
            except Exception as error:
                if where == uri and _unreachable(error):
                    raise
                reason = _why_not_resumed(error, where)
        warn_once(
            self.name, run_id, f"could not resume this MLflow run ({reason}); a new run is started", reason="resume"
        )
        return f"{run_id} ({reason})"

    def _resolve_tracking_uri(self, mlflow: Any) -> tuple[str, bool]:
        if self.tracking_uri:
            return str(self.tracking_uri), False
        try:
            from mlflow.tracking._tracking_service.utils import is_tracking_uri_set

            user_set = is_tracking_uri_set()  # MLFLOW_TRACKING_URI or mlflow.set_tracking_uri(...)
        except ImportError:
            user_set = bool(os.environ.get("MLFLOW_TRACKING_URI"))
        if user_set:
            return str(mlflow.get_tracking_uri()), False
        return "sqlite:///" + Path(self.logging_dir, "mlflow.db").as_posix(), True

    def _read_sdk_rules(self) -> None:
        try:
            from mlflow.utils import validation
        except ImportError:
            return
        for name, fallback in _FALLBACK_LIMITS.items():
            value = getattr(validation, name, fallback)
            self.limits[name] = value if isinstance(value, int) and value > 0 else fallback
        valid = getattr(validation, "validate_param_and_metric_name", None)
        not_unique = getattr(validation, "path_not_unique", None)
        if callable(valid) and callable(not_unique):
            # isprintable: MLflow's own regex ends in ``$``, which lets a key with a newline through to a
            # store that then refuses the whole batch holding it.
            self._key_ok = lambda key: key.isprintable() and bool(valid(key)) and not not_unique(key)

    def _create_run(self, client: Any, embedded: bool) -> Any:
        experiment_id = self._experiment_id(client, embedded)
        tags = dict(self.tags)
        if self.description:
            tags["mlflow.note.content"] = self.description
        run_name = self.run_name
        context = self.run_context
        if context is not None:  # find the MLflow run of a tracking run (and its journal) again
            tags["tracking.run_id"] = context.run_id
            if context.group is not None:  # per-rank runs: one MLflow run per rank, grouped by tag
                tags["tracking.group"], tags["tracking.rank"] = context.group, str(context.rank)
                run_name = rank_name(run_name, context)
        if self.parent_run_id:
            tags["mlflow.parentRunId"] = self.parent_run_id
        elif self.nested_run:
            warn_once(
                self.name,
                "nested_run",
                "no active MLflow run to nest under (start one with mlflow.start_run() "
                "before creating the tracker, or pass parent_run_id=); a top-level run is created",
            )
        try:  # the tags mlflow.start_run adds: user, source name/type, git commit, MLFLOW_RUN_CONTEXT
            tags = _context_tags(tags)
        except Exception as error:  # context tags are a nicety, never a reason to fail
            warn_once(self.name, "tags", f"could not add MLflow's context tags ({error!r})", reason="context-tags")
        # the run began at init(), seconds before this worker had MLflow imported and its store open
        started = context.started if context is not None else None
        start_time = int(started * 1000) if started is not None else None
        return client.create_run(experiment_id, start_time=start_time, tags=tags, run_name=run_name)

    def _experiment_id(self, client: Any, embedded: bool) -> str:
        from mlflow.exceptions import MlflowException

        experiment_id: str  # MLflow's ids are strings
        if self.experiment_id:
            experiment_id = client.get_experiment(self.experiment_id).experiment_id  # raises when it does not exist
            return experiment_id
        # No name: MLflow's Default experiment -- except in the embedded store, whose Default experiment
        # keeps artifacts in the current directory.
        name = self.experiment_name or (_EMBEDDED_EXPERIMENT if embedded else "Default")
        experiment = client.get_experiment_by_name(name)  # exact match: no filter string to escape
        if experiment is None:
            location = self.artifact_location
            if location is None and embedded:
                location = Path(self.logging_dir, "mlartifacts").as_uri()
            try:
                experiment_id = client.create_experiment(name, artifact_location=location)
                return experiment_id
            except MlflowException as error:
                if getattr(error, "error_code", None) != "RESOURCE_ALREADY_EXISTS":
                    raise
                experiment = client.get_experiment_by_name(name)  # another process created it meanwhile
        if experiment.lifecycle_stage != "active":
            raise ValueError(f"MLflow experiment {name!r} is deleted; restore it or choose another experiment name")
        experiment_id = experiment.experiment_id
        return experiment_id

    def _resume(self, client: Any, run_id: str) -> Any:
        run = client.get_run(run_id)  # raises when the run does not exist
        if run.info.lifecycle_stage != "active":
            raise _DeletedRun(
                f"MLflow run {run_id} is deleted; restore it with `mlflow runs restore --run-id {run_id}`"
            )
        if run.info.status != "RUNNING":
            client.update_run(run_id, status="RUNNING")
        if self.tags:
            self._log_tags(client, run_id, self.tags)
        return client.get_run(run_id)

    def _log_tags(self, client: Any, run_id: str, tags: dict[str, str]) -> None:
        from mlflow.entities import RunTag

        for chunk in _chunks(list(tags.items()), self.limits["MAX_PARAMS_TAGS_PER_BATCH"]):
            client.log_batch(run_id, tags=[RunTag(k, v) for k, v in chunk], synchronous=True)

    def _announce(self, client: Any, run: Any, uri: str, embedded: bool) -> None:
        info = run.info
        where = f"run {info.run_name!r} ({info.run_id}) in experiment {info.experiment_id}"
        if uri.startswith(("http://", "https://")):
            notice(
                f"mlflow: {where}; view it at {uri.rstrip('/')}/#/experiments/{info.experiment_id}/runs/{info.run_id}"
            )
        elif uri.startswith(("sqlite:", "file:", "postgresql", "mysql", "mssql")) or embedded:
            hint = "" if _has_ui() else f" (`mlflow ui` comes with full mlflow: {_ui_install_command()})"
            notice(f"mlflow: {where}; view it with: mlflow ui --backend-store-uri {shlex.quote(uri)}{hint}")
        else:
            notice(f"mlflow: {where} at {uri}")

    # -- the SDK objects --------------------------------------------------------------------------
    tracker = active_run = sdk_object(
        "_run",
        "The ``mlflow.entities.Run`` created (or resumed) at start, ``active_run`` as accelerate names it; ``None`` before.",
    )
    client = sdk_object("_client", "The ``MlflowClient`` bound to this run's tracking URI.")

    @property
    def active_run_id(self) -> str | None:
        return self._run.info.run_id if self._run is not None else None

    # -- config -----------------------------------------------------------------------------------
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        """Params (flattened, stringified) plus the exact config as ``config.json``.

        Called again (``log_config``, or a resumed run), only new keys become params: MLflow keeps a
        param's first value for good, so a changed value is in ``config.json`` (the merged config,
        rewritten whole) with a warning and a report note, never an error.
        """
        from mlflow.entities import Param

        limit = self.limits["MAX_PARAM_VAL_LENGTH"]
        params: dict[str, str] = {}
        for key, value in flatten_config(values).items():
            text = stringify(value)
            if len(text) > limit:  # left out, as accelerate does: a cut value would read as the real one
                warn_once(
                    self.name,
                    key,
                    f"parameter value of {len(text)} characters is longer than MLflow's limit of {limit}: "
                    "not a param (the full value is in the run's config.json artifact)",
                    reason="param-too-long",
                )
                self.add_note(f"param {key} left out: its value is longer than MLflow takes; config.json has it")
                continue
            name = self.sanitize_key(key)
            if name != key:
                warn_once(self.name, key, f"stored as param {name!r}: MLflow refuses the original", reason="renamed")
            if name in params:
                warn_once(
                    self.name,
                    key,
                    f"parameter name {name!r} is taken by another key; only the first is a "
                    "param (both are in config.json)",
                    reason="param-clash",
                )
                continue
            if name in self._params:  # MLflow params are immutable
                if self._params[name] != text:
                    warn_once(
                        self.name,
                        key,
                        f"the run already has {name}={self._params[name]!r}; MLflow params "
                        "cannot change, the new value is only in config.json",
                        reason="param-immutable",
                    )
                    self.add_note(f"param {name} keeps its first value in MLflow; config.json has the new one")
                continue
            params[name] = text
        for chunk in _chunks(list(params.items()), self.limits["MAX_PARAMS_TAGS_PER_BATCH"]):
            self._client.log_batch(self.active_run_id, params=[Param(k, v) for k, v in chunk], synchronous=True)
            self._params.update(chunk)
        self._config = merge_config(self._config, values)
        self._client.log_dict(self.active_run_id, self._config, "config.json")

    # -- keys -------------------------------------------------------------------------------------
    def sanitize_key(self, key: str) -> str:
        """Rewrite a key MLflow would refuse (``@ % ( )``, ``..``, ``//``, edge ``/``, empty, too long)."""
        cached = self._keys.get(key)
        if cached is not None:
            return cached
        key_ok = self._key_ok
        if key_ok is not None and key and len(key) <= self.limits["MAX_ENTITY_KEY_LENGTH"] and key_ok(key):
            self._keys[key] = key
            return key
        char_ok = (lambda c: key_ok(c) or c == "/") if key_ok is not None else _FALLBACK_KEY_CHAR.fullmatch
        text = "".join(c if char_ok(c) else "_" for c in key)
        parts = [part if part.strip(".") else "_" * len(part) for part in text.split("/") if part]
        text = "/".join(parts) or "_"
        if text.startswith(".."):
            text = "_" + text
        limit = self.limits["MAX_ENTITY_KEY_LENGTH"]
        if len(text) > limit:  # keep the start readable, keep distinct long keys distinct
            digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:8]
            text = text[: limit - 9].rstrip("/") + "-" + digest
        self._keys[key] = text
        return text

    # -- metrics and text -------------------------------------------------------------------------
    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        self.log_batch([(values, step, kwargs)])

    def log_batch(self, entries: Sequence[tuple[dict[str, Any], int | None, dict[str, Any]]]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        points: list[fast_store.Point] = []
        options: list[dict[str, Any]] = []  # each point's Metric options (MLflow 3's model_id, dataset)
        ends = []  # len(points) after each entry
        # MLflow's async queue only when every entry of the batch asked for it (it is waited for at flush)
        synchronous = not all(kwargs.get("synchronous") is False for _, _, kwargs in entries)
        for values, step, kwargs in entries:
            step = 0 if step is None else int(step)
            # when log() was called (the dispatcher's timestamp), not when this worker delivered it
            timestamp = int(kwargs["timestamp"] * 1000) if kwargs.get("timestamp") is not None else now
            for option in kwargs:
                if option not in _LOG_OPTIONS:
                    warn_once(self.name, option, "unknown log option for MLflow; ignored", reason="log-kwarg")
            entity_options = self._metric_options(kwargs) if _ENTITY_OPTIONS.intersection(kwargs) else _NO_OPTIONS
            for key, value in values.items():
                if type(value) is not float:
                    if isinstance(value, str):
                        self._client.log_text(self.active_run_id, value, f"text/{_artifact_path(key)}/step_{step}.txt")
                        continue
                    value = float(value)
                if value - value != 0.0 and math.isinf(value):  # finite values skip the call
                    warn_once(self.name, key, "MLflow stores infinity as +/-1.8e308 (the largest float)", reason="inf")
                points.append((key, value, timestamp, step))
                options.append(entity_options)
            ends.append(len(points))
        # MLflow's async queue and MLflow 3's per-metric options stay with MLflow's client
        writer = self._writer if synchronous and not any(options) else None
        by_client = min(self.limits["MAX_METRICS_PER_BATCH"], self.limits["MAX_ENTITIES_PER_BATCH"])
        stored = 0
        while stored < len(points):
            chunk = points[stored : stored + (fast_store.CHUNK_POINTS if writer is not None else by_client)]
            try:
                if writer is not None:
                    if not writer.write(chunk):  # not written: MLflow decides (and says why), in its chunks
                        writer = None
                        continue
                else:
                    metrics = [Metric(*point, **option) for point, option in zip(chunk, options[stored:])]
                    operation = self._client.log_batch(self.active_run_id, metrics=metrics, synchronous=synchronous)
                    if operation is not None:  # synchronous=False: MLflow's async queue; waited for at flush
                        self._pending.append(operation)
            except Exception as error:
                # entries whose metrics all went out in earlier chunks are stored: say so, and
                # the dispatcher retries or spills exactly the rest
                raise PartialDelivery(sum(end <= stored for end in ends)) from error
            stored += len(chunk)

    def _metric_options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """``model_id`` / ``dataset`` for each ``Metric``, where this MLflow's ``Metric`` takes them (MLflow 3);
        an older one gets one warning and the points without them."""
        from mlflow.entities import Metric

        dataset = kwargs.get("dataset")
        wanted = {
            "model_id": kwargs.get("model_id"),
            "dataset_name": getattr(dataset, "name", None),
            "dataset_digest": getattr(dataset, "digest", None),
        }
        wanted = {name: value for name, value in wanted.items() if value is not None}
        if not wanted:
            return {}
        accepted = set(inspect.signature(Metric.__init__).parameters)
        missing = sorted(set(wanted) - accepted)
        if missing:
            warn_once(
                self.name,
                "log_kwargs",
                f"this MLflow's metrics take no {', '.join(missing)} (MLflow 3 does); logged without it",
                reason="metric-options",
            )
        return {name: value for name, value in wanted.items() if name in accepted}

    # -- media ------------------------------------------------------------------------------------
    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """``log_image(key=..., step=...)`` per image (HW/HWC/CHW arrays, batches, PIL), as uint8 HW/HWC."""
        step = 0 if step is None else int(step)
        if str(self.tracking_uri).startswith(("http://", "https://")) and _sdk_image_separator() == "%":
            message = (
                "this MLflow release names image files with '%', which the tracking server URL-decodes: the "
                "images are stored under altered names its image view does not show (MLflow 3 names them with '+')"
            )
            warn_once(self.name, "log_images", message, reason="image-names")
            self.add_note(message)
        for key, images in values.items():
            safe = "".join(c if _IMAGE_KEY_CHAR.fullmatch(c) else "_" for c in self.sanitize_key(str(key)))
            if safe != key:
                warn_once(
                    self.name, key, f"image key stored as {safe!r}: MLflow refuses the original", reason="image-key"
                )
            for image in image_list(images):
                # MLflow names the file after the timestamp: one strictly later per image keeps their order
                self._image_time = max(int(time.time() * 1000), self._image_time + 1)
                self._client.log_image(
                    self.active_run_id,
                    to_hwc_uint8(image, kwargs.get("dataformats")),
                    key=safe,
                    step=step,
                    timestamp=self._image_time,
                    synchronous=True,
                )

    def log_table(
        self,
        table_name: str,
        columns: list[str] | None = None,
        data: list[list[Any]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
        **kwargs: Any,
    ) -> None:
        base = f"tables/{_artifact_path(str(table_name))}"
        artifact_file = f"{base}.json" if step is None else f"{base}/step_{int(step)}.json"
        try:
            import pandas as pd
        except ImportError:  # mlflow-skinny without pandas: the same split-orient JSON MLflow writes
            names, rows = table_rows(columns, data, dataframe)
            self._client.log_dict(self.active_run_id, {"columns": names, "data": rows}, artifact_file)
            return
        if dataframe is None:
            names, rows = table_rows(columns, data, None)
            dataframe = pd.DataFrame(rows, columns=names)
        self._client.log_table(self.active_run_id, data=dataframe, artifact_file=artifact_file)

    def log_figure(  # type: ignore[override]  # accelerate's MLflowTracker calls the name `artifact_file`
        self, figure: Any, artifact_file: str, step: int | None = None, **save_kwargs: Any
    ) -> None:
        """The figure as the PNG artifact ``artifact_file`` (``.png`` added or replacing another suffix).

        ``save_kwargs`` go to ``savefig`` (``dpi=...``), also when given as ``save_kwargs={...}`` the way
        ``mlflow.log_figure`` takes them. ``step`` is accepted for the contract; MLflow artifacts have none.
        """
        save_kwargs = {**(save_kwargs.pop("save_kwargs", None) or {}), **save_kwargs}
        name = _png_name(_artifact_path(artifact_file))  # never leaves the run's artifacts ("../x" -> "__/x")
        if name != _artifact_path(artifact_file) and os.path.splitext(artifact_file)[1]:
            warn_once(self.name, artifact_file, f"figure stored as PNG {name!r}", reason="figure-png")
        self._client.log_image(self.active_run_id, figure_to_array(figure, **save_kwargs), artifact_file=name)

    # -- artifacts --------------------------------------------------------------------------------
    def log_artifact(self, local_path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        self._client.log_artifact(self.active_run_id, os.fspath(local_path), artifact_path)

    def log_artifacts(self, local_dir: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        self._client.log_artifacts(self.active_run_id, os.fspath(local_dir), artifact_path)

    # -- run context (docs/run-context.md) ----------------------------------------------------------
    def log_run_context(self, context: dict[str, Any]) -> None:
        """MLflow's source tags (``mlflow.source.git.commit``/``branch``/``repoURL``, ``mlflow.source.name``,
        shown on the run's page), the other main fields as ``tracking.context.*`` tags, and the diff,
        the package list and the whole context as artifacts under ``run_context/``."""
        from tracking_core.context.native import files, summary

        fields = summary(context)
        native = {
            "mlflow.source.git.commit": fields.get("git.commit"),
            "mlflow.source.git.branch": fields.get("git.branch"),
            "mlflow.source.git.repoURL": fields.get("git.remote_url"),
            "mlflow.source.name": fields.get("entry_point"),
        }
        limit = self.limits["MAX_PARAM_VAL_LENGTH"]
        tags = {name: value for name, value in native.items() if value is not None}
        tags.update({f"tracking.context.{name}": value[:limit] for name, value in fields.items()})
        run_id = self.active_run_id
        self._log_tags(self._client, str(run_id), tags)
        run_dir = self.run_context.run_dir if self.run_context is not None else None
        for path in files(context, run_dir):
            self._client.log_artifact(run_id, str(path), "run_context")

    def log_system_metrics(self, values: dict[str, float], index: int, timestamp: float) -> None:
        """``system/...`` metrics at step = ``index``, stamped with the sample's time, as MLflow's monitor logs them."""
        self.log_batch([system.sample_entry(values, index, timestamp)])

    # -- finish -----------------------------------------------------------------------------------
    def flush(self) -> None:
        """Wait for the metrics sent with ``log_kwargs={"mlflow": {"synchronous": False}}``."""
        while self._pending:
            self._pending.pop(0).wait()

    def finish(self) -> None:
        if self._run is None or self._finished:
            return
        if self._sdk_monitor is not None:  # its last metrics, before the run ends (as mlflow.end_run)
            self._sdk_monitor.finish()
            self._sdk_monitor = None
        self.flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        end = self.run_end
        ended = int(end.ended * 1000) if end.ended is not None else None
        self._client.set_terminated(self.active_run_id, _STATUS[end.outcome], end_time=ended)
        self._finished = True

    # -- resume and read-back ---------------------------------------------------------------------
    def resume_state(self) -> dict[str, Any] | None:
        """The run id plus the store holding it: the embedded store's path depends on ``logging_dir``.

        ``experiment_id`` is informational. A password in the tracking URI is left out (the state is
        saved in ``run.json``); such a store is found again through the URI the user sets on restart.
        """
        if self._run is None:
            return None
        info = self._run.info
        return {
            "run_id": info.run_id,
            "tracking_uri": _without_password(str(self.tracking_uri)),
            "experiment_id": info.experiment_id,
        }

    def read_back_metrics(self) -> dict[str, dict[int, float]]:
        """Every metric series of this run per step (the last point at a step wins)."""
        return {key: dict(points) for key, points in self.read_back_history().items()}

    def read_back_system_metrics(self) -> dict[str, list[tuple[int, float]]]:
        """The run's ``system/...`` metrics (MLflow's own monitor's, or the samples at step = their index):
        MLflow keeps system metrics among the run's metrics under that prefix."""
        return {key: points for key, points in self.read_back_history().items() if key.startswith("system/")}

    def read_back_history(self) -> dict[str, list[tuple[int, float]]]:
        """Every stored point of this run, read with a fresh ``MlflowClient`` (``get_metric_history``).

        Points come in the order the store returns them (by timestamp); a step logged twice shows
        twice, except an exact repeat (same step, value and timestamp), which MLflow's store keeps once.
        """
        from mlflow import MlflowClient

        if self.active_run_id is None:  # (a held tracker of delivery="process" has the id, not the run)
            return {}
        client = MlflowClient(tracking_uri=self.tracking_uri)
        run_id = self.active_run_id
        return {
            key: [(metric.step, metric.value) for metric in client.get_metric_history(run_id, key)]
            for key in client.get_run(run_id).data.metrics
        }

    def read_back_images(self) -> dict[str, list[tuple[int, Any]]]:
        """Every image ``log_images`` stored, per key, as ``(step, HW or HWC uint8 array)`` in logging order.

        Listed and downloaded with a fresh ``MlflowClient``; MLflow names each file after its key, step
        and timestamp (``images/<key>+step+<n>+timestamp+<ms>+<uuid>.png``, ``/`` in keys as ``~``; MLflow 2.x:
        ``%`` for ``+`` and ``#`` for ``~``).
        """
        import tempfile

        import numpy as np
        from mlflow import MlflowClient
        from PIL import Image

        if self.active_run_id is None:
            return {}
        client = MlflowClient(tracking_uri=self.tracking_uri)
        found = []
        for info in client.list_artifacts(self.active_run_id, "images"):
            match = _IMAGE_FILE.match(info.path)
            if match:  # the +compressed.webp previews are skipped
                key = match["key"].replace("~", "/").replace("#", "/")
                found.append((int(match["time"]), key, int(match["step"]), info.path))
        # A local artifact store is read in place: MLflow 2.x's download refuses "#" in a path and URL-decodes
        # its "%" separators ("%20" ...), so it cannot fetch the images it named itself.
        local = _local_store(client.get_run(self.active_run_id).info.artifact_uri or "")
        images: dict[str, list[tuple[int, Any]]] = {}
        with tempfile.TemporaryDirectory() as folder:
            for _time, key, step, path in sorted(found):
                stored = (
                    local / path if local is not None else client.download_artifacts(self.active_run_id, path, folder)
                )
                with Image.open(stored) as image:
                    images.setdefault(key, []).append((step, np.asarray(image)))
        return images
