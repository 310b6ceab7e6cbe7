"""Import Trackio runs from its local store: one SQLite database per project (``<TRACKIO_DIR>/<project>.db``;
one ``trackio.db`` for every project in trackio 0.0.4 to 0.0.10, one CSV file per run in 0.0.3: see
:mod:`tracking_trackio.older.v0_0_3.importer`).

Each database is copied (with its ``-wal`` file, whose rows may not be in the database file yet) to a
temporary folder and the copy is read, so the store is never written, not even by SQLite's shared-memory
file. Rows are decoded with Trackio's own value decoder (its NaN/inf markers). A row is one ``log`` call:
its step, its timestamp (ISO text, kept to the microsecond) and its values; numbers and strings become
points, Trackio's images (files under ``media/``), tables, histograms and markdown become media. The run's
config is Trackio's ``configs`` row without Trackio's own ``_Created``/``_Group``/``_Username``/``_Command`` (the group
and user become tags). System metrics, alerts, traces and artifacts are listed in ``not_carried``.

A store made by trackio 0.0.4 to 0.0.16 (its ``metrics.timestamp`` a ``DATETIME`` SQLite fills in, UTC, to the
second) holds no step of the caller's: before 0.0.16 there is no ``step`` column and the rows are numbered
0, 1, 2, ... as Trackio's dashboard numbers them, and 0.0.16 stored its own numbers. The points keep those
numbers, and ``not_carried`` says so (:data:`tracking_trackio.older.v0_0_3.NO_STEPS`).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tracking_core.kit import Media, Point, SourceError, SourceRun

from . import store
from .older import v0_0_3
from .older.v0_0_3 import importer as csv_import
from .older.v0_0_3 import reader as csv_store

__all__ = ["read_runs"]

#: what Trackio itself adds to a run's config (``_Command``, the launch command, since trackio 0.45)
_OWN_CONFIG_KEYS = ("_Created", "_Group", "_Username", "_Command")

#: Tables of a project database the journal has no place for, and how to count a run's share.
_NOT_CARRIED = {"system_metrics": "system metrics", "alerts": "alerts", "traces": "traces"}


def _seconds(timestamp: Any, utc: bool = False) -> float | None:
    """Unix seconds of a stored ISO time (local time, or UTC where SQLite filled it in: ``utc``)."""
    if not timestamp:
        return None
    try:
        moment = datetime.fromisoformat(str(timestamp))
    except ValueError:
        return None
    return (moment.replace(tzinfo=timezone.utc) if utc and moment.tzinfo is None else moment).timestamp()


def _first_schema(connection: sqlite3.Connection) -> bool:
    """True for a store made by trackio 0.0.4 to 0.0.16: its rows' time is a ``DATETIME`` SQLite fills in."""
    declared = {row[1]: str(row[2]).upper() for row in connection.execute("PRAGMA table_info(metrics)")}
    return declared.get("timestamp") == "DATETIME"


def _decode(raw: Any) -> dict[str, Any]:
    values = json.loads(raw)
    return dict(store.decode(values)) if isinstance(values, dict) else {}


def _copy(database: Path, into: Path) -> Path:
    """The database and its write-ahead log copied into ``into`` (SQLite applies the log when it opens the copy)."""
    target = into / database.name
    shutil.copyfile(database, target)
    wal = database.with_name(database.name + "-wal")
    if wal.is_file():
        shutil.copyfile(wal, target.with_name(target.name + "-wal"))
    return target


def _tables(connection: sqlite3.Connection) -> set[str]:
    return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _table(value: dict[str, Any]) -> dict[str, Any] | None:
    rows = value.get("_value")
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        return None
    columns: list[str] = []
    for row in rows:
        columns.extend(column for column in row if column not in columns)
    return {"columns": columns, "data": [[row.get(column) for column in columns] for row in rows]}


class _Run:
    """One run of a project database: how its rows are selected, and what they hold besides points."""

    def __init__(self, copy: Path, store_dir: Path, column: str, ident: str, name: str, project: str | None) -> None:
        self.copy, self.store_dir, self.column, self.ident, self.name = copy, store_dir, column, ident, name
        self.project = project  # where the rows carry their project (a database of the first releases' layout)
        self.media: list[Media] = []
        self.dropped: dict[str, int] = {}

    def rows(self) -> Iterator[tuple[int, float | None, dict[str, Any]]]:
        connection = sqlite3.connect(self.copy)
        try:
            utc = _first_schema(connection)  # SQLite filled the time in: UTC
            step = "step" if "step" in store.columns(connection, "metrics") else "NULL"  # none before 0.0.16
            where, values = f"{self.column} = ?", [self.ident]
            if self.project is not None:
                where, values = f"{where} AND project_name = ?", [*values, self.project]
            cursor = connection.execute(
                f"SELECT {step}, timestamp, metrics FROM metrics WHERE {where} ORDER BY id", values
            )
            for number, (stored, timestamp, raw) in enumerate(cursor):
                yield number if stored is None else int(stored), _seconds(timestamp, utc=utc), _decode(raw)
        finally:
            connection.close()

    def scan_media(self) -> None:
        """Media and the values not carried: small next to the points, so gathered before the points stream."""
        for step, time, values in self.rows():
            for key, value in values.items():
                if isinstance(value, dict):
                    self._media(key, value, step, time)
                elif isinstance(value, (list, tuple)):
                    self._drop(f"list values ({key})")

    def _drop(self, what: str) -> None:
        self.dropped[what] = self.dropped.get(what, 0) + 1

    def _media(self, key: str, value: dict[str, Any], step: int, time: float | None) -> None:
        kind = value.get("_type")
        if kind == "trackio.image" and value.get("file_path"):
            path = store.media_file(self.store_dir, value["file_path"])
            self.media.append(Media("image", key, step, str(path), time))
            if value.get("caption"):
                self._drop(f"image captions ({key})")
        elif kind == "trackio.table" and (table := _table(value)) is not None:
            self.media.append(Media("table", key, step, table, time))
        elif kind == "trackio.histogram":
            data = {"counts": value.get("values", []), "edges": value.get("bins", [])}
            self.media.append(Media("histogram", key, step, data, time))
        elif kind == "trackio.markdown":
            self.media.append(Media("text", key, step, str(value.get("_value", "")), time))
        else:
            self._drop(f"values of Trackio type {kind!r} ({key})")

    def points(self) -> Iterator[Point]:
        for step, time, values in self.rows():
            for key, value in values.items():
                if isinstance(value, bool):
                    yield Point(key, step, int(value), time)
                elif isinstance(value, (int, float, str)):
                    yield Point(key, step, value, time)


def _guarded(items: Iterator[Any], database: Path, keep: Any) -> Iterator[Any]:
    """``items`` with a read error raised as a :class:`SourceError` naming the source database; holds ``keep``
    (the temporary copy) until done."""
    count = 0
    try:
        for item in items:
            yield item
            count += 1
    except (sqlite3.Error, ValueError) as error:
        raise SourceError(str(database), f"cannot read on: {error}", imported=f"{count} points") from error
    del keep


def _configs(connection: sqlite3.Connection, project: str) -> dict[tuple[str, str], tuple[dict[str, Any], Any]]:
    """``(project, run id or name) -> (config, created_at)`` of the ``configs`` table (keyed by project in the
    first releases' layout, whose one database may hold several)."""
    have = store.columns(connection, "configs")
    ident = "run_id" if "run_id" in have else "run_name"
    owner = "project_name" if "project_name" in have else "NULL"
    rows = connection.execute(f"SELECT {owner}, {ident}, config, created_at FROM configs")
    return {(owner_of or project, key): (_decode(raw), created) for owner_of, key, raw, created in rows}


def _runs_of(database: Path, scratch: tempfile.TemporaryDirectory[str]) -> Iterator[SourceRun]:
    copy = _copy(database, Path(scratch.name))
    connection = sqlite3.connect(copy)
    try:
        tables = _tables(connection)
        if "metrics" not in tables:
            raise SourceError(str(database), "not a Trackio project database (no metrics table)")
        have = store.columns(connection, "metrics")
        column = "run_id" if "run_id" in have else "run_name"
        # the rows' own project where they carry one (0.0.4 to 0.0.20; one database for all before 0.0.11)
        owner = "project_name" if "project_name" in have else "NULL"
        runs = [
            (project or database.stem, ident, name)
            for project, ident, name in connection.execute(
                f"SELECT {owner}, {column}, MAX(run_name) FROM metrics GROUP BY {owner}, {column} ORDER BY MIN(id)"
            )
        ]
        configs = _configs(connection, database.stem) if "configs" in tables else {}
        if configs:
            known = {(project, ident) for project, ident, _name in runs}
            names = dict(connection.execute("SELECT run_id, run_name FROM configs")) if column == "run_id" else {}
            runs += [(p, i, names.get(i, i)) for p, i in configs if (p, i) not in known]  # config only
        counts = {
            table: dict(connection.execute(f"SELECT {column}, COUNT(*) FROM {table} GROUP BY {column}").fetchall())
            for table in _NOT_CARRIED
            if table in tables and column in store.columns(connection, table)
        }
        links: dict[str, int] = {}
        if "run_artifact_links" in tables:
            links = dict(
                connection.execute(f"SELECT {column}, COUNT(*) FROM run_artifact_links GROUP BY {column}").fetchall()
            )
        numbered = _first_schema(connection)
    except sqlite3.Error as error:
        raise SourceError(str(database), f"not a readable Trackio database: {error}") from error
    finally:
        connection.close()
    for project, ident, name in runs:
        run = _Run(copy, database.parent, column, ident, name, project if owner == "project_name" else None)
        try:
            run.scan_media()
        except (sqlite3.Error, ValueError) as error:
            raise SourceError(str(database), f"cannot read run {name!r}: {error}") from error
        config, created = configs.get((project, ident), ({}, None))
        tags = {
            tag: str(config[key]) for tag, key in (("group", "_Group"), ("username", "_Username")) if config.get(key)
        }
        not_carried = [v0_0_3.NO_STEPS] if numbered else []
        not_carried += [f"{what}, {count} time(s)" for what, count in sorted(run.dropped.items())]
        for table, label in _NOT_CARRIED.items():
            if counts.get(table, {}).get(ident):
                not_carried.append(f"{label}: {counts[table][ident]} row(s)")
        if links.get(ident):
            not_carried.append(f"artifact links: {links[ident]}")
        yield SourceRun(
            backend="trackio",
            source_id=f"{project}/{ident}",
            name=name,
            project=project,
            started=_seconds(config.get("_Created") or created, utc=numbered),
            config={key: value for key, value in config.items() if key not in _OWN_CONFIG_KEYS},
            tags=tags,
            points=_guarded(run.points(), database, scratch),
            media=run.media,
            not_carried=not_carried,
            location=str(database),
        )


def read_runs(source: str, *, options: dict[str, str] | None = None) -> Iterator[SourceRun]:
    """Each run in the Trackio store at ``source``: a project database (``<project>.db``) or a folder of them,
    or trackio 0.0.3's store (a folder of ``<project>/<run>/run.csv``) or one of its ``run.csv`` files.

    The project's name is the rows' ``project_name`` where they carry one, else the database's file name
    (Trackio names the file after the project).
    """
    root = Path(source)
    if root.is_file() and root.name == csv_store.RUN_FILE:
        yield from csv_import.read_runs([root.parent])
        return
    if root.is_file():
        databases = [root]
    elif root.is_dir():
        databases = sorted(root.glob("*.db"))
        if not databases and (folders := list(csv_store.run_folders(root))):
            yield from csv_import.read_runs(folders)
            return
        if not databases:
            raise SourceError(source, "no Trackio project database (*.db) in this folder")
    else:
        raise SourceError(source, "no such file or folder")
    scratch = tempfile.TemporaryDirectory(prefix="tracking-trackio-import-")
    for database in databases:
        yield from _runs_of(database, scratch)
