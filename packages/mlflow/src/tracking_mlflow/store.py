"""The store behind a tracking URI: a client on it, the embedded sqlite store made safely, clear errors.

A local sqlite store is created inside a file lock (ranks of one job open it at once) from a cached
empty copy (:mod:`tracking_mlflow.schema_cache`); an MLflow that cannot open it (a store from a newer
MLflow, SQLAlchemy 2.1 next to an MLflow before 3.9) raises an error that says what to do.
"""

from __future__ import annotations

import os
import re
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tracking_core.kit import file_lock

from .schema_cache import seed_store, unseed

# MLflow's defaults retry an unreachable server silently for minutes (7 retries, 120 s timeout), which would
# hold start-up and every later call. Applied only for http(s) URIs and only where the user set nothing.
_HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_TIMEOUT": "15"}


def without_password(uri: str) -> str:
    """``uri`` minus a password (``postgresql://user:secret@host/db``): it is saved in ``run.json``."""
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}@{host}" if parts.username else host))


def local_store(uri: str) -> Path | None:
    """The file or folder behind a local store URI; opening a missing one would create an empty store."""
    if uri.startswith("sqlite:///"):
        path = uri[len("sqlite:///") :].partition("?")[0]
        return Path(path) if path and path != ":memory:" else None
    if uri.startswith("file:"):
        return Path(urllib.request.url2pathname(urlsplit(uri).path))
    return None


def sqlalchemy_mismatch(error: ImportError) -> ImportError | None:
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


def store_from_newer_mlflow(error: Exception, store: Path) -> StoreFromNewerMlflow | None:
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


def client_for(uri: str, logging_dir: str, embedded: bool, *, tidy: bool | None = None) -> Any:
    """A client on ``uri``; ``embedded`` also makes ``logging_dir``; ``tidy`` (default: ``embedded``) removes
    the empty ``./mlruns`` MLflow 2.x makes when it opens a database store."""
    from mlflow import MlflowClient

    if uri.startswith(("http://", "https://")):
        # MLflow reads these from the environment at each request; there is no per-client setting.
        for variable, value in _HTTP_DEFAULTS.items():
            os.environ.setdefault(variable, value)
    if embedded:
        os.makedirs(logging_dir, exist_ok=True)
    store = local_store(uri) if uri.startswith("sqlite:") else None
    if store is None:
        return MlflowClient(tracking_uri=uri)
    # MLflow 2.x makes its default artifact root ./mlruns when it opens a database store; the embedded
    # store keeps its artifacts under logging_dir, so an empty ./mlruns made here is removed again.
    tidy = embedded if tidy is None else tidy
    stray = Path("mlruns").absolute() if tidy and not os.path.exists("mlruns") else None
    try:
        return _open_sqlite(uri, store)
    except ImportError as error:
        raise (sqlalchemy_mismatch(error) or error) from error
    except Exception as error:
        newer = store_from_newer_mlflow(error, store)
        if newer is None:
            raise
        raise newer from None  # MLflow's own advice (`mlflow db upgrade`) cannot help an older MLflow
    finally:
        if stray is not None and stray.is_dir() and not any(stray.iterdir()):
            try:
                stray.rmdir()
            except OSError:  # another process's MLflow made or filled it meanwhile
                pass


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
