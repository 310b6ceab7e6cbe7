"""Read-back: a run's rows as Trackio stored them, decoded by that release's own storage code.

Used by the tracker's ``read_back*`` methods, the tests and views. Where a release keeps a project's
rows is :mod:`tracking_trackio.store`'s job; trackio 0.0.3's CSV files are read by
:mod:`tracking_trackio.older.v0_0_3.reader`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracking_core.kit import to_hwc_uint8

from . import store
from .older import v0_0_3
from .older.v0_0_3 import reader as csv_reader


def rows(storage_dir: Path, project: str, run_id: str | None, name: str | None) -> list[tuple[int, dict[str, Any]]]:
    """``(step, metrics)`` of the run's rows in Trackio's project database, decoded by Trackio."""
    if v0_0_3.csv_storage() is not None:  # trackio 0.0.3
        return csv_reader.run_rows(storage_dir, project, str(name))
    return store.run_rows(store.project_database(storage_dir, project), run_id, name, project)


def history(stored_rows: list[tuple[int, dict[str, Any]]]) -> dict[str, list[tuple[int, Any]]]:
    """Every numeric point of ``stored_rows`` per key, as ``(step, value)`` in row order."""
    points: dict[str, list[tuple[int, Any]]] = {}
    for step, metrics in stored_rows:
        for key, item in metrics.items():
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                points.setdefault(key, []).append((step, item))
    return points


def images(storage_dir: Path, stored_rows: list[tuple[int, dict[str, Any]]]) -> dict[str, list[tuple[int, Any]]]:
    """Every ``trackio.Image`` of ``stored_rows``, decoded from the files in Trackio's media folder.

    A list logged under ``key`` comes back as one list under ``key`` (Trackio holds it as ``key/1``, ...).
    """
    from PIL import Image

    found: dict[str, list[tuple[int, Any]]] = {}
    for step, metrics in stored_rows:
        in_row = {key for key, item in metrics.items() if _is_image(item)}
        for key, item in metrics.items():
            if _is_image(item):
                with Image.open(store.media_file(storage_dir, item["file_path"])) as stored:
                    found.setdefault(_list_key(key, in_row), []).append((step, to_hwc_uint8(stored)))
    return found


def system_metrics(project: str, run_id: str | None, name: str | None) -> dict[str, list[tuple[int, float]]]:
    """Trackio's system logs of the run (``SQLiteStorage.get_system_logs``), per key, as ``(the row's
    position, value)``: a system log row keeps a time, no index, so the n-th row stored is sample n."""
    from trackio.sqlite_storage import SQLiteStorage

    if not hasattr(SQLiteStorage, "get_system_logs"):
        raise NotImplementedError("trackio: this release keeps no system metrics (trackio 0.14 and later do)")
    system: dict[str, list[tuple[int, float]]] = {}
    for position, row in enumerate(SQLiteStorage.get_system_logs(project, name, run_id=run_id)):
        for key, value in row.items():
            if key != "timestamp" and isinstance(value, int | float):
                system.setdefault(key, []).append((position, float(value)))
    return system


def _is_image(value: Any) -> bool:
    return isinstance(value, dict) and value.get("_type") == "trackio.image"


def _list_key(key: str, keys_in_row: set[str]) -> str:
    """The key a list was logged under, for its parts ``key/1``, ``key/2``, ... stored in the same row."""
    base, _, index = key.rpartition("/")
    return base if base in keys_in_row and index.isdigit() and int(index) > 0 else key
