"""Cached empty stores: made once per key, remade when damaged, copied into place whole or not at all."""

from __future__ import annotations

import threading
import time

import pytest
from tracking_core.kit import store_cache


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(store_cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def _maker(calls):
    def make(folder):
        calls.append(folder)
        time.sleep(0.05)  # long enough for racing makers to overlap
        (folder / "store.db").write_text("made")

    return make


def _complete(folder):
    return (folder / "store.db").is_file() and (folder / "store.db").read_text() == "made"


def test_made_once_then_reused_and_remade_when_damaged(cache):
    calls = []
    first = store_cache.cached_store("sdk-1", _maker(calls), _complete)
    again = store_cache.cached_store("sdk-1", _maker(calls), _complete)
    assert first == again == cache / "sdk-1" and len(calls) == 1
    (first / "store.db").write_text("torn")
    assert _complete(store_cache.cached_store("sdk-1", _maker(calls), _complete)) and len(calls) == 2
    assert [p.name for p in cache.iterdir()] == ["sdk-1"]  # no scratch folder left behind


def test_racing_makers_all_get_one_complete_store(cache):
    calls, results, errors = [], [], []

    def use():
        try:
            results.append(store_cache.cached_store("sdk-1", _maker(calls), _complete))
        except Exception as error:  # pragma: no cover - the assertion below shows it
            errors.append(error)

    threads = [threading.Thread(target=use) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(results) == 4 and set(results) == {cache / "sdk-1"}
    assert _complete(cache / "sdk-1") and [p.name for p in cache.iterdir()] == ["sdk-1"]


def test_an_incomplete_store_is_not_cached(cache):
    with pytest.raises(RuntimeError, match="incomplete"):
        store_cache.cached_store("sdk-1", lambda folder: None, _complete)
    assert list(cache.iterdir()) == []


def test_a_copy_never_replaces_what_is_there(tmp_path):
    source = tmp_path / "source.db"
    source.write_text("empty store")
    target = tmp_path / "runs" / "store.db"
    store_cache.copy_into_place([source], target, folder=False)
    assert target.read_text() == "empty store"
    target.write_text("a real store")
    with pytest.raises(FileExistsError):
        store_cache.copy_into_place([source], target, folder=False)
    assert target.read_text() == "a real store"
    folder = tmp_path / "repo" / ".store"
    store_cache.copy_into_place([source], folder, folder=True)
    assert (folder / "source.db").read_text() == "empty store"
    (folder / "run").write_text("data")
    with pytest.raises(OSError):
        store_cache.copy_into_place([source], folder, folder=True)
    assert sorted(p.name for p in folder.iterdir()) == ["run", "source.db"]
    assert sorted(p.name for p in folder.parent.iterdir()) == [".store"]  # no partial copy left


def test_the_cache_follows_xdg_and_can_be_turned_off(monkeypatch, tmp_path):
    monkeypatch.delenv(store_cache.CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert store_cache.cache_dir() == tmp_path / "xdg" / "tracking"
    assert store_cache.enabled()
    monkeypatch.setenv(store_cache.ENABLE_ENV, "0")
    assert not store_cache.enabled()
