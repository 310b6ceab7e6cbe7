"""Starting an MLflow run: which store, which experiment, a new run or a resumed one, and its tags.

Where data goes, first match wins: the tracker's ``tracking_uri``; ``MLFLOW_TRACKING_URI`` or a URI set
with ``mlflow.set_tracking_uri``; otherwise the embedded store ``sqlite:///<logging_dir>/mlflow.db``.
A run is resumed from an explicit ``run_id`` or from the state ``resume_state`` saved in an earlier
process; a saved run that is gone starts a new run with a report note.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from tracking_core.contract.registry import install_command
from tracking_core.kit import notice, rank_name, read_head, stringify, warn_once

from . import fast_store
from .names import chunks
from .store import client_for, local_store, without_password

if TYPE_CHECKING:
    from collections.abc import Callable

    from .tracker import MLflowTracker

# The SDK's limits (mlflow 3.x values); start() reads the installed SDK's own from mlflow.utils.validation.
FALLBACK_LIMITS = {
    "MAX_PARAM_VAL_LENGTH": 6000,
    "MAX_PARAMS_TAGS_PER_BATCH": 100,
    "MAX_METRICS_PER_BATCH": 1000,
    "MAX_ENTITIES_PER_BATCH": 1000,
    "MAX_ENTITY_KEY_LENGTH": 250,
}
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}
_EMBEDDED_EXPERIMENT = "tracking"
# Error codes of a store that failed to answer (not of a missing run): a new run there would fail the same way.
_UNREACHABLE_CODES = {"INTERNAL_ERROR", "TEMPORARILY_UNAVAILABLE", "REQUEST_LIMIT_EXCEEDED"}


class Opened(NamedTuple):
    """The run ``open_run`` started or resumed, the client and URI of its store."""

    uri: str
    client: Any
    run: Any
    embedded: bool  # the embedded store under logging_dir
    resumed: bool  # an existing run reopened (MLflow's system metrics monitor then counts on)


class _DeletedRun(ValueError):
    """The run exists but is deleted: MLflow refuses to log to it or to set its status."""


def parse_bool(name: str, raw: str) -> bool:
    """An environment variable's boolean (``MLFLOW_NESTED_RUN``); anything else is an error, not false."""
    text = raw.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"{name}={raw!r} is not a boolean (use true/false, 1/0, yes/no)")


def parse_tags(raw: Any, source: str) -> dict[str, str]:
    """Tags given as a dict or a JSON object (``MLFLOW_TAGS``), values as strings."""
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


def caller_active_run_id() -> str | None:
    """The MLflow run active in the calling thread, the parent of a nested run.

    MLflow keeps the active run per thread and ``start()`` runs in the worker thread, so the parent is
    taken at construction, in the caller's thread -- only if the caller already imported mlflow."""
    fluent = sys.modules.get("mlflow")
    try:
        active = fluent.active_run() if fluent is not None else None
    except Exception:  # a half-imported or unusual mlflow must not break construction
        return None
    return active.info.run_id if active is not None else None


def turn_off_telemetry() -> None:
    """Importing mlflow writes ~/.config/mlflow/telemetry.json and starts a thread that reports usage
    unless telemetry is off: off, unless the user decided either way (``DO_NOT_TRACK`` counts)."""
    if "MLFLOW_DISABLE_TELEMETRY" not in os.environ and "DO_NOT_TRACK" not in os.environ:
        os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"


def read_sdk_rules(limits: dict[str, int]) -> Callable[[str], bool] | None:
    """The installed MLflow's limits into ``limits``; its own key check, when it has one."""
    try:
        from mlflow.utils import validation
    except ImportError:
        return None
    for name, fallback in FALLBACK_LIMITS.items():
        value = getattr(validation, name, fallback)
        limits[name] = value if isinstance(value, int) and value > 0 else fallback
    valid = getattr(validation, "validate_param_and_metric_name", None)
    not_unique = getattr(validation, "path_not_unique", None)
    if callable(valid) and callable(not_unique):
        # isprintable: MLflow's own regex ends in ``$``, which lets a key with a newline through to a
        # store that then refuses the whole batch holding it.
        return lambda key: key.isprintable() and bool(valid(key)) and not not_unique(key)
    return None


def open_run(tracker: MLflowTracker) -> Opened:
    """The tracker's run on its store: the run it names or saved, reopened, or a new one."""
    import mlflow

    uri, embedded = _resolve_tracking_uri(tracker, mlflow)
    saved = _saved_run(tracker)
    if saved and tracker.run_id and saved[0] != tracker.run_id:
        tracker.add_note(f"MLflow run {tracker.run_id} was chosen explicitly; the saved run {saved[0]} was not resumed")
    opened = _reopen(tracker, *saved, uri, embedded) if saved and not tracker.run_id else None
    if isinstance(opened, tuple):
        uri, client, run = opened
    else:
        client = client_for(uri, tracker.logging_dir, embedded)
        run = _resume(tracker, client, tracker.run_id) if tracker.run_id else _create_run(tracker, client, embedded)
        if opened:
            tracker.add_note(f"could not resume MLflow run {opened}; started a new run {run.info.run_id}")
    return Opened(uri, client, run, embedded, bool(tracker.run_id) or isinstance(opened, tuple))


def metric_writer(uri: str, run_id: str) -> fast_store.MetricWriter | None:
    """Points to a local sqlite store go straight into its tables (``fast_store``); a server, another
    database or a schema the writer does not know go through MLflow's client."""
    store = local_store(uri) if uri.startswith("sqlite:") else None
    return fast_store.MetricWriter.open(store, run_id) if store is not None and store.is_file() else None


def log_tags(client: Any, run_id: str, tags: dict[str, str], per_batch: int) -> None:
    """``tags`` on the run, in batches of at most ``per_batch``."""
    from mlflow.entities import RunTag

    for chunk in chunks(list(tags.items()), per_batch):
        client.log_batch(run_id, tags=[RunTag(k, v) for k, v in chunk], synchronous=True)


def _saved_run(tracker: MLflowTracker) -> tuple[str, str | None] | None:
    """``(run id, tracking URI)`` from ``run_context.resume``: what ``resume_state`` saved earlier."""
    state = tracker.run_context.resume if tracker.run_context is not None else None
    if not isinstance(state, dict):
        return None
    run_id, uri = state.get("run_id"), state.get("tracking_uri")
    if not isinstance(run_id, str) or not run_id:
        tracker.add_note(f"the saved MLflow state {state!r} names no run; a new run was started")
        return None
    return run_id, uri if isinstance(uri, str) and uri else None


def _reopen(
    tracker: MLflowTracker, run_id: str, saved_uri: str | None, uri: str, embedded: bool
) -> tuple[str, Any, Any] | str:
    """The saved run reopened, ``(uri, client, run)``; or ``"<id> (<reason>)"`` when a new run is needed.

    The saved URI is used unless the user chose one now: the embedded store's path depends on
    ``logging_dir``, which a restarted job may spell differently. Only a store that fails to answer
    where the new run would go raises: a new run there would fail the same way, after more retries.
    """
    where = saved_uri if embedded and saved_uri else uri
    store = local_store(where)
    if store is not None and not store.exists():
        reason = f"its store {store} no longer exists"
    else:
        try:
            client = client_for(where, tracker.logging_dir, False, tidy=embedded)  # the saved embedded store, if so
            return where, client, _resume(tracker, client, run_id)
        except Exception as error:
            if where == uri and _unreachable(error):
                raise
            reason = _why_not_resumed(error, where)
    warn_once(
        tracker.name, run_id, f"could not resume this MLflow run ({reason}); a new run is started", reason="resume"
    )
    return f"{run_id} ({reason})"


def _unreachable(error: Exception) -> bool:
    if isinstance(error, _DeletedRun):
        return False
    code = getattr(error, "error_code", None)
    return code is None or code in _UNREACHABLE_CODES


def _why_not_resumed(error: Exception, uri: str) -> str:
    if isinstance(error, _DeletedRun):
        return "it is deleted"
    if getattr(error, "error_code", None) == "RESOURCE_DOES_NOT_EXIST":
        return f"it is not in {without_password(uri)}"
    message = (str(error).strip().splitlines() or [""])[0]
    return f"{type(error).__name__}: {message[:200]}"


def _resolve_tracking_uri(tracker: MLflowTracker, mlflow: Any) -> tuple[str, bool]:
    """``(uri, embedded)``: the store the run goes to, and whether it is the embedded one under ``logging_dir``."""
    if tracker.tracking_uri:
        return str(tracker.tracking_uri), False
    try:
        from mlflow.tracking._tracking_service.utils import is_tracking_uri_set

        user_set = is_tracking_uri_set()  # MLFLOW_TRACKING_URI or mlflow.set_tracking_uri(...)
    except ImportError:
        user_set = bool(os.environ.get("MLFLOW_TRACKING_URI"))
    if user_set:
        return str(mlflow.get_tracking_uri()), False
    return "sqlite:///" + Path(tracker.logging_dir, "mlflow.db").as_posix(), True


def _create_run(tracker: MLflowTracker, client: Any, embedded: bool) -> Any:
    experiment_id = _experiment_id(tracker, client, embedded)
    tags = dict(tracker.tags)
    if tracker.description:
        tags["mlflow.note.content"] = tracker.description
    run_name = tracker.run_name
    context = tracker.run_context
    if context is not None:  # find the MLflow run of a tracking run (and its journal) again
        tags["tracking.run_id"] = context.run_id
        if context.group is not None:  # per-rank runs: one MLflow run per rank, grouped by tag
            tags["tracking.group"], tags["tracking.rank"] = context.group, str(context.rank)
            run_name = rank_name(run_name, context)
    if tracker.parent_run_id:
        tags["mlflow.parentRunId"] = tracker.parent_run_id
    elif tracker.nested_run:
        warn_once(
            tracker.name,
            "nested_run",
            "no active MLflow run to nest under (start one with mlflow.start_run() "
            "before creating the tracker, or pass parent_run_id=); a top-level run is created",
        )
    try:  # the tags mlflow.start_run adds: user, source name/type, git commit, MLFLOW_RUN_CONTEXT
        tags = _context_tags(tags)
    except Exception as error:  # context tags are a nicety, never a reason to fail
        warn_once(tracker.name, "tags", f"could not add MLflow's context tags ({error!r})", reason="context-tags")
    # the run began at init(), seconds before this worker had MLflow imported and its store open
    started = context.started if context is not None else None
    start_time = int(started * 1000) if started is not None else None
    return client.create_run(experiment_id, start_time=start_time, tags=tags, run_name=run_name)


def _experiment_id(tracker: MLflowTracker, client: Any, embedded: bool) -> str:
    from mlflow.exceptions import MlflowException

    experiment_id: str  # MLflow's ids are strings
    if tracker.experiment_id:
        experiment_id = client.get_experiment(tracker.experiment_id).experiment_id  # raises when it does not exist
        return experiment_id
    # No name: MLflow's Default experiment -- except in the embedded store, whose Default experiment
    # keeps artifacts in the current directory.
    name = tracker.experiment_name or (_EMBEDDED_EXPERIMENT if embedded else "Default")
    experiment = client.get_experiment_by_name(name)  # exact match: no filter string to escape
    if experiment is None:
        location = tracker.artifact_location
        if location is None and embedded:
            location = Path(tracker.logging_dir, "mlartifacts").as_uri()
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


def _resume(tracker: MLflowTracker, client: Any, run_id: str) -> Any:
    run = client.get_run(run_id)  # raises when the run does not exist
    if run.info.lifecycle_stage != "active":
        raise _DeletedRun(f"MLflow run {run_id} is deleted; restore it with `mlflow runs restore --run-id {run_id}`")
    if run.info.status != "RUNNING":
        client.update_run(run_id, status="RUNNING")
    if tracker.tags:
        log_tags(client, run_id, tracker.tags, tracker.limits["MAX_PARAMS_TAGS_PER_BATCH"])
    return client.get_run(run_id)


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


def announce(run: Any, uri: str, embedded: bool) -> None:
    """Where the run is and how to view it, as a notice."""
    info = run.info
    where = f"run {info.run_name!r} ({info.run_id}) in experiment {info.experiment_id}"
    if uri.startswith(("http://", "https://")):
        notice(f"mlflow: {where}; view it at {uri.rstrip('/')}/#/experiments/{info.experiment_id}/runs/{info.run_id}")
    elif uri.startswith(("sqlite:", "file:", "postgresql", "mysql", "mssql")) or embedded:
        hint = "" if _has_ui() else f" (`mlflow ui` comes with full mlflow: {_ui_install_command()})"
        notice(f"mlflow: {where}; view it with: mlflow ui --backend-store-uri {shlex.quote(uri)}{hint}")
    else:
        notice(f"mlflow: {where} at {uri}")


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
