"""A new repo gets the run database Aim migrated once, and Aim uses it as its own (read back with ``aim.Repo``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from tracking_aim import AimTracker, repo_cache
from tracking_core.testing.resume import finished_run, loss

_spec = importlib.util.spec_from_file_location("_tracking_aim_readback", Path(__file__).with_name("aim_readback.py"))
readback = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readback)


@pytest.fixture
def migrations(monkeypatch, tmp_path):
    """Every time Aim migrates a repo's run database (in a child process)."""
    import aim.storage.structured.db as structured_db

    calls = []
    original = structured_db.upgrade_database

    def counted(db_url):
        calls.append(db_url)
        return original(db_url)

    monkeypatch.setattr(structured_db, "upgrade_database", counted)
    monkeypatch.setenv("TRACKING_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TRACKING_STORE_CACHE", raising=False)
    return calls


def _run(logging_dir, steps: int):
    return finished_run(AimTracker, logging_dir, range(steps), project="cached")


def _losses(steps: int) -> dict[int, float]:
    return {step: loss(step) for step in range(steps)}


def test_second_new_repo_runs_no_migrations_and_is_aims_own(tmp_path, migrations):
    first = _run(tmp_path / "a", 2)
    assert len(migrations) == 1 and str(tmp_path / "cache") in migrations[0]  # the cached repo, made once
    second = _run(tmp_path / "b", 1)
    assert len(migrations) == 1, "the second new repo ran the migrations again"
    for tracker, folder, expected in ((first, "a", _losses(2)), (second, "b", _losses(1))):
        run = readback.get_run(tmp_path / folder, tracker.run_hash)
        assert readback.metrics(run) == {"loss": expected}
        assert run.experiment == "cached"
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [repo_cache._key()]


def test_a_damaged_cached_repo_is_made_again(tmp_path, migrations):
    damaged = tmp_path / "cache" / repo_cache._key() / ".aim"
    damaged.mkdir(parents=True)
    (damaged / "run_metadata.sqlite").write_bytes(b"not a database" * 100)
    (damaged / "VERSION").write_text("1.3\n")
    tracker = _run(tmp_path / "a", 2)
    assert readback.metrics(readback.get_run(tmp_path / "a", tracker.run_hash)) == {"loss": _losses(2)}
    assert len(migrations) == 1 and str(tmp_path / "cache") in migrations[0]


def test_the_cache_can_be_turned_off(tmp_path, migrations, monkeypatch):
    monkeypatch.setenv("TRACKING_STORE_CACHE", "0")
    tracker = _run(tmp_path / "a", 1)
    assert readback.metrics(readback.get_run(tmp_path / "a", tracker.run_hash)) == {"loss": _losses(1)}
    assert not (tmp_path / "cache").exists()
    assert len(migrations) == 1


def test_an_existing_repo_is_never_replaced(tmp_path, migrations):
    first = _run(tmp_path / "a", 1)
    second = _run(tmp_path / "a", 3)
    assert readback.metrics(readback.get_run(tmp_path / "a", first.run_hash)) == {"loss": _losses(1)}
    assert readback.metrics(readback.get_run(tmp_path / "a", second.run_hash)) == {"loss": _losses(3)}
    assert len(migrations) == 1
