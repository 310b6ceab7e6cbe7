"""A new sqlite store starts as a copy of an empty one MLflow already migrated.

Opening a sqlite file that does not exist makes MLflow create its tables and run every schema
migration since its first release: ~1.5 s of the first run in each new logging directory (a test's
temporary folder, a fresh project). The result is the same every time for one MLflow version, so
it is made once per version (by MLflow's own ``_initialize_tables``, into the user's cache folder)
and copied; MLflow then only adds the rows it adds to every store it opens (the default experiment,
whose artifact location names the new store's folder). The copy holds nothing else: the schema,
alembic's revision and the default workspace row the migrations insert.

Anything unexpected (an MLflow without that function, an unwritable cache, a copy MLflow rejects)
leaves the store to MLflow as before. ``TRACKING_MLFLOW_SCHEMA_CACHE=0`` turns the cache off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

ENABLE_ENV = "TRACKING_MLFLOW_SCHEMA_CACHE"
#: where the cache lives, when set; otherwise ``$XDG_CACHE_HOME/tracking`` or ``~/.cache/tracking``
CACHE_DIR_ENV = "TRACKING_CACHE_DIR"


def cache_dir() -> Path:
    chosen = os.environ.get(CACHE_DIR_ENV)
    if chosen:
        return Path(chosen)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tracking"


def _schema_key() -> str | None:
    """MLflow's version and its migration scripts' names: two installs with the same key migrate alike."""
    import mlflow
    import mlflow.store.db_migrations as migrations

    versions = Path(migrations.__file__).parent / "versions"
    try:
        names = sorted(entry.name for entry in versions.iterdir() if entry.suffix == ".py")
    except OSError:
        return None
    digest = hashlib.sha256("\n".join([*names, sqlite3.sqlite_version]).encode()).hexdigest()[:16]
    return f"mlflow-{mlflow.__version__}-{digest}"


def _migrated_empty_store(folder: Path, key: str) -> Path:
    """The cached empty store for ``key``, made now if missing (atomically: ranks may race here)."""
    cached = folder / f"{key}.db"
    if cached.exists():
        if _looks_migrated(cached):
            return cached
        _remove(cached)  # damaged: made again below
    import sqlalchemy
    from mlflow.store.db.utils import _initialize_tables

    folder.mkdir(parents=True, exist_ok=True)
    handle, scratch = tempfile.mkstemp(prefix=f".{key}.", suffix=".db", dir=folder)
    os.close(handle)
    os.unlink(scratch)  # sqlite creates the file itself
    engine = sqlalchemy.create_engine(f"sqlite:///{Path(scratch).as_posix()}")
    try:
        _initialize_tables(engine)
        engine.dispose()
        os.replace(scratch, cached)
    finally:
        engine.dispose()
        _remove(Path(scratch))
    return cached


def _looks_migrated(path: Path) -> bool:
    """A readable sqlite file that went through alembic (a damaged cache file is not)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path.as_posix()}?mode=ro", uri=True)) as database:
            rows: int = database.execute("SELECT count(*) FROM alembic_version").fetchone()[0]
            return rows == 1
    except sqlite3.Error:
        return False


def seed_store(store: Path) -> bool:
    """Put a migrated empty database at ``store`` when nothing is there yet; True when it did.

    The caller holds the store's creation lock, so no other process is creating ``store`` meanwhile.
    """
    if store.exists() or os.environ.get(ENABLE_ENV, "1").strip().lower() in {"0", "false", "no", "off"}:
        return False
    try:
        key = _schema_key()
        if key is None:
            return False
        cached = _migrated_empty_store(cache_dir(), key)
        store.parent.mkdir(parents=True, exist_ok=True)
        partial = store.with_name(f".{store.name}.seeding")
        try:
            shutil.copyfile(cached, partial)
            os.replace(partial, store)
        finally:
            _remove(partial)
        return True
    except Exception:  # no cache at all is always correct: MLflow creates the store as it would
        return False


def unseed(store: Path, uri: str) -> None:
    """Remove a seeded copy MLflow refused, and MLflow's engine on it, so that MLflow creates the store itself."""
    try:
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        engine = SqlAlchemyStore._engine_map.pop(uri, None)  # MLflow keeps one engine per URI
        if engine is not None:
            engine.dispose()
    except Exception:
        pass
    _remove(store)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
