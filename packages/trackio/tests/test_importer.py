"""Importing Trackio runs from its local store: runs written with the trackio SDK directly, read back whole."""

from __future__ import annotations

import hashlib
import shutil
from datetime import datetime
from importlib.metadata import version
from pathlib import Path

import pytest
from tracking_core.testing.sdk_runs import NESTED_CONFIG as CONFIG
from tracking_core.testing.sdk_runs import STEPS, write_trackio
from tracking_core.transfer.model import SourceError
from tracking_trackio.importer import read_runs


def _tree(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


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
    assert first.config == CONFIG
    expected = {}
    for row in logs["sdk-run"]:
        for key in ("train/loss", "acc", "phase"):
            if key in row:
                expected[(key, row["step"])] = (row[key], datetime.fromisoformat(row["timestamp"]).timestamp())
    assert len(expected) == 3 * STEPS
    assert sorted((p.key, p.step) for p in points) == sorted(expected)  # every point once
    assert {(p.key, p.step): (p.value, p.time) for p in points} == expected

    # before 0.24 Trackio stores a table's rows without their column names: not a table, listed as not carried
    rows_only = tuple(int(part) for part in version("trackio").split(".")[:2]) < (0, 24)
    assert sorted((item.kind, item.key, item.step) for item in media) == [("image", "sample", STEPS)] + (
        [] if rows_only else [("table", "preds", STEPS)]
    )
    [image] = [item for item in media if item.kind == "image"]
    assert Path(image.data).read_bytes().startswith(b"\x89PNG")
    if rows_only:
        assert first.not_carried[0] == "image captions (sample), 1 time(s)"
        assert [line for line in first.not_carried[1:] if "(preds)" in line] == first.not_carried[1:] != []
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

        for name in ("imports.db", "imports.db-wal"):  # SQLite opens the store's files for writing: a copy
            if (store / name).is_file():
                shutil.copyfile(store / name, tmp_path / f"source-{name}")
        with sqlite3.connect(tmp_path / "whole.db") as whole:  # one file with the WAL's rows in it
            sqlite3.connect(tmp_path / "source-imports.db").backup(whole)
        data = (tmp_path / "whole.db").read_bytes()
        copy.write_bytes(data[: len(data) // 3])
    with pytest.raises(SourceError) as caught:
        for run in read_runs(str(copy)):
            list(run.points)
    assert caught.value.path == str(copy)


def test_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no Trackio project database"):
        list(read_runs(str(tmp_path)))
