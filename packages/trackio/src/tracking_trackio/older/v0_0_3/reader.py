"""Trackio 0.0.3's store, read from its files: one folder per run, ``<store>/<project>/<run>/``, holding
``run.csv`` (a header row of every key logged so far, then one row per ``log`` call) and ``config.json``.

The file keeps no step, no time and no type. The release's own reader (``trackio.ui.load_run_data``, which
imports gradio) reads it with pandas and numbers the rows 0, 1, 2, ...; pandas reads an empty cell (a key that
row did not log) and a logged NaN alike. The rows here are numbered the same way, and the cells parsed so that
the two stay apart: an empty cell is no value, ``int`` text an integer, ``float`` text (``nan`` and ``inf``
included) a float, anything else the string itself.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

RUN_FILE = "run.csv"
CONFIG_FILE = "config.json"


def run_folder(storage_dir: Path, project: str, run: str) -> Path:
    return storage_dir / project / run


def parse(cell: str) -> Any:
    """A CSV cell as the value it was written from (Trackio wrote ``str(value)``)."""
    for kind in (int, float):
        try:
            return kind(cell)
        except ValueError:
            continue
    return cell


def rows(run_csv: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(row number, values)`` of every row of ``run_csv``, in the order written; none when it does not exist."""
    if not run_csv.is_file():
        return []
    with run_csv.open(newline="") as file:
        return [
            (number, {key: parse(cell) for key, cell in row.items() if key is not None and cell not in ("", None)})
            for number, row in enumerate(csv.DictReader(file))
        ]


def run_rows(storage_dir: Path, project: str, run: str) -> list[tuple[int, dict[str, Any]]]:
    return rows(run_folder(storage_dir, project, run) / RUN_FILE)


def columns(run_csv: Path) -> list[str]:
    """The header of ``run_csv`` (the keys logged so far), empty when the file does not exist or is empty."""
    if not run_csv.is_file():
        return []
    with run_csv.open(newline="") as file:
        return next(csv.reader(file), [])


def config(folder: Path) -> dict[str, Any]:
    """The run's ``config.json`` (Trackio writes ``null`` for a run started without a config)."""
    path = folder / CONFIG_FILE
    stored = json.loads(path.read_text()) if path.is_file() else None
    return stored if isinstance(stored, dict) else {}


def run_folders(root: Path) -> Iterator[Path]:
    """Every run folder (one holding ``run.csv``) of the store at ``root``, by project and run name."""
    return (path.parent for path in sorted(root.glob(f"*/*/{RUN_FILE}")))
