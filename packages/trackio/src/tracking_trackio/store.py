"""Where a Trackio release keeps a project's rows, named and decoded by that release's own storage code.

Every supported release keeps one SQLite database per project in its storage directory, with one ``metrics``
row per ``log`` call (``run_name``, ``step``, ``metrics`` as JSON), but the names of its helpers moved:

* the database's file name: ``SQLiteStorage.get_project_db_filename`` (0.1+), else the file name of
  ``SQLiteStorage.get_project_db_path`` (0.0.17 to 0.0.20, which builds it from the module's directory);
* the reader of a run's rows: ``SQLiteStorage.get_logs`` (0.2.9+), else ``get_metrics``;
* NaN and infinity: stored as marker strings and decoded by ``trackio.utils.deserialize_values`` (0.3.3+),
  before that as JSON's ``NaN``/``Infinity`` literals, which ``json`` reads back as they are;
* an image's ``file_path``: relative to ``<store>/media`` (0.3+), before that to the store itself.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any


def project_database(storage_dir: Path, project: str) -> Path:
    """The file this release keeps ``project`` in, under ``storage_dir``."""
    from trackio.sqlite_storage import SQLiteStorage

    named = getattr(SQLiteStorage, "get_project_db_filename", None)
    if named is not None:
        return storage_dir / str(named(project))
    return storage_dir / Path(SQLiteStorage.get_project_db_path(project)).name


def decode(values: Any) -> Any:
    """A stored ``metrics`` value as Trackio's own decoder gives it (the value itself where there is none)."""
    import trackio.utils

    decoder = getattr(trackio.utils, "deserialize_values", None)
    return decoder(values) if decoder is not None else values


def run_rows(database: Path, run_id: str | None, run_name: str | None) -> list[tuple[int, dict[str, Any]]]:
    """``(step, metrics)`` of one run's rows in ``database``, in the order they were written, decoded by Trackio.

    Rows are keyed by run id where the release keeps one (0.24+), else by run name; a database that does not
    exist yet (Trackio makes it at its first write) or holds no metrics table yet gives no rows.
    """
    if not database.is_file():
        return []
    column, value = ("run_id", run_id) if run_id else ("run_name", run_name)
    with sqlite3.connect(database) as connection:
        try:
            rows = connection.execute(
                f"SELECT step, metrics FROM metrics WHERE {column} = ? ORDER BY id", (value,)
            ).fetchall()
        except sqlite3.OperationalError as error:
            if "no such table" not in str(error):
                raise
            rows = []
    connection.close()
    return [(step, decode(json.loads(metrics))) for step, metrics in rows]


def run_logs(project: str, run: str) -> list[dict[str, Any]]:
    """The run's rows through Trackio's own reader (each a dict of the values plus ``step`` and ``timestamp``)."""
    from trackio.sqlite_storage import SQLiteStorage

    reader = getattr(SQLiteStorage, "get_logs", None) or SQLiteStorage.get_metrics
    return list(reader(project, run))


def media_file(storage_dir: Path, file_path: str) -> Path:
    """The stored file an image's ``file_path`` names (relative to ``media/``, or to the store before 0.3)."""
    in_media = storage_dir / "media" / file_path
    return in_media if in_media.is_file() or not (storage_dir / file_path).is_file() else storage_dir / file_path
