"""A new sqlite store starts as a copy of an empty one MLflow migrated once (``tracking_core.kit.store_cache``).

The cached store is made by MLflow's own ``_initialize_tables``, the function MLflow runs on a new
sqlite file, before MLflow adds anything to it: it holds the schema, alembic's revision and the
default workspace row the migrations insert. MLflow adds the default experiment (whose artifact
location names the new store's folder) when it opens the copy, as it does for any store.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tracking_core.kit import store_cache

STORE_NAME = "mlflow.db"


def _key() -> str:
    import mlflow
    import mlflow.store.db_migrations as migrations

    versions = Path(migrations.__file__).parent / "versions"
    return f"mlflow-{mlflow.__version__}-{store_cache.fingerprint(sqlite3.sqlite_version, files_in=versions)}"


def _make(folder: Path) -> None:
    import sqlalchemy
    from mlflow.store.db.utils import _initialize_tables

    engine = sqlalchemy.create_engine(f"sqlite:///{(folder / STORE_NAME).as_posix()}")
    try:
        _initialize_tables(engine)
    finally:
        engine.dispose()


def seed_store(store: Path) -> bool:
    """Put a migrated empty database at ``store`` when nothing is there yet; True when it did.

    The caller holds the store's creation lock, so no other process is creating ``store`` meanwhile.
    """
    if store.exists() or not store_cache.enabled():
        return False
    try:
        cached = store_cache.cached_store(
            _key(), _make, lambda folder: store_cache.alembic_migrated(folder / STORE_NAME)
        )
        store_cache.copy_into_place([cached / STORE_NAME], store, folder=False)
        return True
    except Exception:  # no copy is always correct: MLflow creates the store as it would
        return False


def unseed(store: Path, uri: str) -> None:
    """Remove a copy MLflow refused, and MLflow's engine on it, so that MLflow creates the store itself."""
    try:
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        # MLflow keeps one engine per URI: ``_engine_map`` in MLflow 3, ``_db_uri_sql_alchemy_engine_map`` in 2.x
        for name in ("_engine_map", "_db_uri_sql_alchemy_engine_map"):
            engine = getattr(SqlAlchemyStore, name, {}).pop(uri, None)
            if engine is not None:
                engine.dispose()
    except Exception:
        pass
    try:
        store.unlink()
    except OSError:
        pass
