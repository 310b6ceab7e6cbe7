"""Importing Trackio runs from its local store: runs written with the trackio SDK directly, read back whole."""

from __future__ import annotations

import hashlib
import shutil
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

import pytest
from tracking_core.kit import SourceError
from tracking_core.testing.sdk_runs import NESTED_CONFIG as CONFIG
from tracking_core.testing.sdk_runs import STEPS, write_trackio
from tracking_trackio.importer import read_runs
from tracking_trackio.older import before_v0_24 as legacy
from tracking_trackio.older.v0_0_3 import NO_STEPS, csv_storage, numbers_rows


def _tree(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def _time(row: dict) -> float | None:
    """A row's time as Trackio's reader gives it, in Unix seconds: none in trackio 0.0.3; UTC seconds SQLite
    filled in for 0.0.4 to 0.0.16, local time later."""
    if "timestamp" not in row:
        return None
    moment = datetime.fromisoformat(row["timestamp"])
    return (moment.replace(tzinfo=timezone.utc) if numbers_rows() else moment).timestamp()


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The store trackio wrote (two runs of one project), and its rows as Trackio's own reader gives them."""
    sdk_run = write_trackio(tmp_path_factory.mktemp("trackio-import"))
    return sdk_run.source, sdk_run.info["logs"]


def test_every_point_config_media_and_what_is_not_carried(written: tuple[Path, dict]) -> None:
    store, logs = written
    before = _tree(store)
    runs = list(read_runs(str(store)))
    first, second = runs
    points = list(first.points)
    media = list(first.media)
    assert [point.value for point in second.points] == [3.0] and second.name == "second"
    assert _tree(store) == before  # read from a copy: the store, its WAL and shared-memory files unchanged

    assert (first.backend, first.name, first.project) == ("trackio", "sdk-run", "imports")
    assert first.source_id.startswith("imports/") and first.source_id != second.source_id
    import trackio

    assert first.config == (CONFIG if legacy.stores_config() else {})  # trackio 0.0.17 to 0.3 keep no run config
    expected = {}
    for row in logs["sdk-run"]:
        for key in ("train/loss", "acc", "phase"):
            if key in row:
                expected[(key, row["step"])] = (row[key], _time(row))
    assert len(expected) == 3 * STEPS
    assert sorted((p.key, p.step) for p in points) == sorted(expected)  # every point once
    # trackio 0.0.3's reader parses its CSV file with pandas, whose floats may differ in the last digit
    assert {(p.key, p.step): (p.value, p.time) for p in points} == {
        at: (pytest.approx(value, rel=1e-15) if isinstance(value, float) else value, time)
        for at, (value, time) in expected.items()
    }

    if not hasattr(trackio, "Image"):  # trackio before 0.2.8: no media at all
        assert media == []
        if csv_storage() is not None:  # trackio 0.0.3: no steps, no times
            assert first.not_carried == [NO_STEPS, "the time of each point: trackio 0.0.3 kept none"]
        else:
            assert first.not_carried == ([NO_STEPS] if numbers_rows() else [])
        return
    # before 0.24 Trackio stores a table's rows without their column names: not a table, listed as not carried
    rows_only = tuple(int(part) for part in version("trackio").split(".")[:2]) < (0, 24)
    has_tables = hasattr(trackio, "Table")  # 0.3.2+
    assert sorted((item.kind, item.key, item.step) for item in media) == [("image", "sample", STEPS)] + (
        [] if rows_only else [("table", "preds", STEPS)]
    )
    [image] = [item for item in media if item.kind == "image"]
    assert Path(image.data).read_bytes().startswith(b"\x89PNG")
    if rows_only:
        assert first.not_carried[0] == "image captions (sample), 1 time(s)"
        assert [line for line in first.not_carried[1:] if "(preds)" in line] == first.not_carried[1:]
        assert (first.not_carried[1:] != []) is has_tables
    else:
        [table] = [item for item in media if item.kind == "table"]
        assert table.data == {"columns": ["id", "label"], "data": [[0, "cat"], [1, "dog"]]}
        assert first.not_carried == ["image captions (sample), 1 time(s)"]
    assert [run.source_id for run in read_runs(str(store / "imports.db"))] == [first.source_id, second.source_id]


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_database_names_the_file(written: tuple[Path, dict], tmp_path: Path, damage: str) -> None:
    store, _ = written
    copy = tmp_path / "imports.db"
    if damage == "garbage":
        copy.write_bytes(b"this is not an SQLite database" * 100)
    else:
        import sqlite3

        [database] = list(store.glob("*.db")) or [None]  # imports.db (trackio.db in 0.0.4 to 0.0.10)
        if database is None:
            pytest.skip("trackio 0.0.3 keeps no database: its CSV files hold nothing to cut off")
        for name in (database.name, database.name + "-wal"):  # SQLite opens the store's files for writing: a copy
            if (store / name).is_file():
                shutil.copyfile(store / name, tmp_path / f"source-{name}")
        with sqlite3.connect(tmp_path / "whole.db") as whole:  # one file with the WAL's rows in it
            sqlite3.connect(tmp_path / f"source-{database.name}").backup(whole)
        data = (tmp_path / "whole.db").read_bytes()
        copy.write_bytes(data[: len(data) // 3])
    with pytest.raises(SourceError) as caught:
        for run in read_runs(str(copy)):
            list(run.points)
    assert caught.value.path == str(copy)


def test_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no Trackio project database"):
        list(read_runs(str(tmp_path)))
