"""Where a Trackio release keeps a project's rows, named and decoded by that release's own storage code.

Every release from 0.0.4 keeps its rows in SQLite, one ``metrics`` row per ``log`` call (``run_name``, the
values as JSON, and from 0.0.16 a ``step``); 0.0.3 writes CSV files instead (:mod:`tracking_trackio.older.v0_0_3.reader`).
The names of the helpers moved:

* the database: ``SQLiteStorage.get_project_db_filename`` (0.1+), else the file name of
  ``SQLiteStorage.get_project_db_path`` (0.0.17 to 0.0.20) or ``_get_project_db_path`` (0.0.11 to 0.0.16);
  0.0.4 to 0.0.10 keep every project in one ``trackio.db``, its rows told apart by ``project_name``;
* the reader of a run's rows: ``SQLiteStorage.get_logs`` (0.2.9+), else ``get_metrics`` (a method of an
  instance before 0.0.11, whose constructor saves a config: a bare instance reads instead);
* the step: before 0.0.16 there is no ``step`` column, and Trackio's dashboard numbers a run's rows 0, 1, 2,
  ...; the readers here do the same;
* NaN and infinity: stored as marker strings and decoded by ``trackio.utils.deserialize_values`` (0.3.3+),
  before that as JSON's ``NaN``/``Infinity`` literals, which ``json`` reads back as they are;
* an image's ``file_path``: relative to ``<store>/media`` (0.3+), before that to the store itself.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

#: The one database of every project in trackio 0.0.4 to 0.0.10.
SHARED_DATABASE = "trackio.db"


def sqlite_storage() -> Any:
    """This release's ``SQLiteStorage`` class; None for trackio 0.0.3, which writes CSV files instead."""
    try:
        from trackio.sqlite_storage import SQLiteStorage
    except ModuleNotFoundError as error:
        if error.name != "trackio.sqlite_storage":
            raise
        return None
    return SQLiteStorage


def project_database(storage_dir: Path, project: str) -> Path:
    """The file this release keeps ``project`` in, under ``storage_dir``."""
    storage = sqlite_storage()
    named = getattr(storage, "get_project_db_filename", None)
    if named is not None:
        return storage_dir / str(named(project))
    path_of = getattr(storage, "get_project_db_path", None) or getattr(storage, "_get_project_db_path", None)
    if path_of is not None:
        return storage_dir / Path(path_of(project)).name
    return storage_dir / SHARED_DATABASE


def decode(values: Any) -> Any:
    """A stored ``metrics`` value as Trackio's own decoder gives it (the value itself where there is none)."""
    import trackio.utils

    decoder = getattr(trackio.utils, "deserialize_values", None)
    return decoder(values) if decoder is not None else values


def columns(connection: sqlite3.Connection, table: str) -> set[str]:
    """The columns of ``table``; none when the database holds no such table (yet)."""
    return {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}


def run_rows(
    database: Path, run_id: str | None, run_name: str | None, project: str | None = None
) -> list[tuple[int, dict[str, Any]]]:
    """``(step, metrics)`` of one run's rows in ``database``, in the order they were written, decoded by Trackio.

    Rows are keyed by run id where the release keeps one (0.24+), else by run name, and by ``project`` too
    where the table has a ``project_name`` (a shared database's rows). Where there is no ``step`` column
    (before 0.0.16) the rows are numbered 0, 1, 2, ... as Trackio's dashboard numbers them. A database that
    does not exist yet (Trackio makes it at its first write) or holds no metrics table yet gives no rows.
    """
    if not database.is_file():
        return []
    with sqlite3.connect(database) as connection:
        have = columns(connection, "metrics")
        where, values = ("run_id = ?", [run_id]) if run_id and "run_id" in have else ("run_name = ?", [run_name])
        if project is not None and "project_name" in have:
            where, values = f"{where} AND project_name = ?", [*values, project]
        step = "step" if "step" in have else "NULL"
        query = f"SELECT {step}, metrics FROM metrics WHERE {where} ORDER BY id"
        rows = connection.execute(query, values).fetchall() if have else []
    connection.close()
    return [
        (number if step is None else step, decode(json.loads(metrics))) for number, (step, metrics) in enumerate(rows)
    ]


def first_config(database: Path, project: str, run_name: str) -> dict[str, Any]:
    """The config trackio 0.0.4 to 0.0.16 keep for a run (their ``configs`` table, which no reader of theirs
    reads); empty when there is none."""
    if not database.is_file():
        return {}
    with sqlite3.connect(database) as connection:
        found = (
            connection.execute(
                "SELECT config FROM configs WHERE project_name = ? AND run_name = ?", (project, run_name)
            ).fetchone()
            if {"project_name", "config"} <= columns(connection, "configs")
            else None
        )
    connection.close()
    stored = json.loads(found[0]) if found else None
    return stored if isinstance(stored, dict) else {}


def _reader(name: str, project: str) -> Any:
    """``SQLiteStorage.<name>`` as a function of ``(project, ...)``: bound to a bare instance where it is a
    method of one (0.0.4 to 0.0.10: their constructor would save an empty config over the run's)."""
    storage = sqlite_storage()
    if isinstance(inspect.getattr_static(storage, name), staticmethod):
        return getattr(storage, name)
    database = project_database(Path(sys.modules[storage.__module__].TRACKIO_DIR), project)
    if not database.is_file():  # their reader would make an empty database there, then fail on its missing table
        return lambda *args: []
    reader = storage.__new__(storage)
    reader.db_path = str(database)
    return getattr(reader, name)


def _csv_dashboard() -> Any:
    """Trackio 0.0.3's dashboard module (``trackio.ui`` is its ``ui()`` function in the package, not the module)."""
    return importlib.import_module("trackio.ui")


def run_logs(project: str, run: str) -> list[dict[str, Any]]:
    """The run's rows through Trackio's own reader (each a dict of the values plus ``step`` and ``timestamp``;
    numbered 0, 1, 2, ... as Trackio's dashboard numbers them where the release stores no step).

    Trackio 0.0.3's reader is its dashboard's ``trackio.ui.load_run_data`` (a pandas DataFrame): there an empty
    cell (a key that row did not log) is dropped, as are the values it cannot tell from one (NaN).
    """
    if sqlite_storage() is None:
        frame = _csv_dashboard().load_run_data(project, run)
        records = [] if frame is None else frame.to_dict("records")
        return [{key: value for key, value in row.items() if value == value} for row in records]  # NaN != NaN
    logs = list(_reader("get_logs" if hasattr(sqlite_storage(), "get_logs") else "get_metrics", project)(project, run))
    return [{**row, "step": row.get("step", number)} for number, row in enumerate(logs)]


def run_names(project: str) -> list[str]:
    """The project's runs through Trackio's own ``get_runs`` (0.0.3: its dashboard's)."""
    if sqlite_storage() is None:
        return list(_csv_dashboard().get_runs(project))
    return list(_reader("get_runs", project)(project))


def media_file(storage_dir: Path, file_path: str) -> Path:
    """The stored file an image's ``file_path`` names (relative to ``media/``, or to the store before 0.3)."""
    in_media = storage_dir / "media" / file_path
    return in_media if in_media.is_file() or not (storage_dir / file_path).is_file() else storage_dir / file_path
