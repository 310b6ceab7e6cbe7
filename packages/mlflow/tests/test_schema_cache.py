"""A new sqlite store is a copy of an empty store MLflow migrated once, and MLflow uses it as its own."""

from __future__ import annotations

import time

import pytest
from tracking_core.testing.resume import finished_run, loss
from tracking_mlflow import MLflowTracker, schema_cache

from .conftest import Reader


@pytest.fixture
def migrations(monkeypatch):
    """Every time MLflow creates and migrates a store's tables."""
    import mlflow.store.db.utils as db_utils

    calls = []
    original = db_utils._initialize_tables

    def counted(engine):
        calls.append(str(engine.url))
        return original(engine)

    monkeypatch.setattr(db_utils, "_initialize_tables", counted)
    return calls


def _run(logging_dir, steps: int):
    return finished_run(MLflowTracker, logging_dir, range(steps), project="cached")


def _losses(steps: int) -> dict[int, float]:
    return {step: loss(step) for step in range(steps)}


def _verify_schema(tracker):
    import sqlalchemy
    from mlflow.store.db.utils import _verify_schema

    engine = sqlalchemy.create_engine(tracker.tracking_uri)
    try:
        _verify_schema(engine)  # raises unless the store is at MLflow's newest revision
    finally:
        engine.dispose()


def test_second_new_store_runs_no_migrations_and_is_mlflows_own(tmp_path, monkeypatch, migrations):
    monkeypatch.setenv("TRACKING_CACHE_DIR", str(tmp_path / "cache"))
    first = _run(tmp_path / "a", 2)
    assert len(migrations) == 1 and str(tmp_path / "cache") in migrations[0]  # the cached store, made once
    opened = time.time()
    second = _run(tmp_path / "b", 1)
    assert len(migrations) == 1, "the second new store ran the migrations again"
    for tracker, expected in ((first, _losses(2)), (second, _losses(1))):
        _verify_schema(tracker)
        reader = Reader.of(tracker)
        assert reader.metrics() == {"loss": expected}
        experiments = reader.client.search_experiments()
        assert sorted(e.name for e in experiments) == ["Default", "cached"]  # nothing carried over
    default = Reader.of(second).client.get_experiment("0")
    assert default.creation_time >= int(opened * 1000)  # made by MLflow when it opened the copy
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [schema_cache._key()]


def test_a_damaged_cached_store_is_made_again(tmp_path, monkeypatch, migrations):
    monkeypatch.setenv("TRACKING_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache" / schema_cache._key()).mkdir(parents=True)
    (tmp_path / "cache" / schema_cache._key() / "mlflow.db").write_bytes(b"not a database" * 100)
    tracker = _run(tmp_path / "a", 2)
    assert Reader.of(tracker).metrics() == {"loss": _losses(2)}
    _verify_schema(tracker)
    assert len(migrations) == 1 and str(tmp_path / "cache") in migrations[0]  # the damaged cache file was made again
    assert _run(tmp_path / "b", 3) and len(migrations) == 1


def test_a_copy_mlflow_refuses_gives_way_to_a_store_mlflow_makes(tmp_path, monkeypatch, migrations):
    monkeypatch.setattr(schema_cache, "_key", lambda: "stale")
    (tmp_path / "cache" / "stale").mkdir(parents=True)
    monkeypatch.setenv("TRACKING_CACHE_DIR", str(tmp_path / "cache"))
    import sqlite3

    with sqlite3.connect(tmp_path / "cache" / "stale" / "mlflow.db") as stale:  # migrated by an older MLflow
        stale.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        stale.execute("INSERT INTO alembic_version VALUES ('0123456789ab')")
    tracker = _run(tmp_path / "a", 2)
    assert Reader.of(tracker).metrics() == {"loss": _losses(2)}
    _verify_schema(tracker)
    assert migrations and all(str(tmp_path / "cache") not in url for url in migrations)  # MLflow made the store itself


def test_the_cache_can_be_turned_off(tmp_path, monkeypatch, migrations):
    monkeypatch.setenv("TRACKING_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRACKING_STORE_CACHE", "0")
    tracker = _run(tmp_path / "a", 1)
    assert Reader.of(tracker).metrics() == {"loss": _losses(1)}
    assert not (tmp_path / "cache").exists()
    assert len(migrations) == 1


def test_an_existing_store_is_never_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACKING_CACHE_DIR", str(tmp_path / "cache"))
    first = _run(tmp_path / "a", 1)
    second = _run(tmp_path / "a", 3)  # same logging_dir: the same store, both runs in it
    assert Reader.of(first).metrics() == {"loss": _losses(1)}
    assert Reader.of(second).metrics() == {"loss": _losses(3)}
