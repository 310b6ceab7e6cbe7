"""Read a local-mode run of SwanLab 0.5.8 to 0.6.1 back with swanboard's models and its log-file reader.

``<logdir>/runs.swanlab`` (SQLite, swanboard's tables) names the project (one per log folder), each
experiment (its ``run_id`` is the run folder's name, ``status`` 0 running, 1 finished, -1 crashed) and each
of its columns (``tag``: name, ``type`` -- ``line``, ``text``, ``image``, ... -- and ``folder``). A column's
points are JSON lines in ``<run>/logs/<folder>/<n>.log`` (``index`` is the step, ``data`` the value: a
number, a list of texts, or a list of media file names in ``<run>/media/<folder>/``), read with swanboard's
``read_tag_data`` and ``get_tag_files``. The queries are swanboard's own models bound, per query, to a
read-only connection: the models stay bound to whatever database a running SwanLab uses in this process,
and the store is not changed (no ``-wal``/``-shm`` files are left beside it).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ...reader import MediaPoint, SwanLabRunData, with_config
from . import DATABASE, dependencies

#: swanboard's experiment states.
RUNNING, FINISHED, CRASHED = 0, 1, -1


class NoReader(Exception):
    """swanboard, which reads this store, is not installed (or not importable)."""


def _swanboard() -> Any:
    try:
        from peewee import SqliteDatabase
        from swanboard.controller.utils import tag
        from swanboard.db.models import Experiment, Project, Tag
    except ImportError as error:
        raise NoReader(
            "this folder is a local-mode run of SwanLab 0.5.8 to 0.6.1, which swanboard stores and reads; "
            f"it cannot be read here ({type(error).__name__}: {error}): "
            f"{dependencies.install_command(dependencies.SWANBOARD)}"  # the release whose tables those runs hold
        ) from error
    return SqliteDatabase, tag, Experiment, Project, Tag


def database_of(run_dir: Path) -> Path:
    return run_dir.parent / DATABASE


def is_local_folder(run_dir: Path) -> bool:
    """A run folder of this line: ``run-<time>-<id>`` with a ``runs.swanlab`` beside it and no run file of the
    other lines in it."""
    return (
        run_dir.name.startswith("run-")
        and run_dir.is_dir()
        and database_of(run_dir).is_file()
        and not any(run_dir.glob("*.swanlab"))
    )


@contextlib.contextmanager
def opened(database: Path) -> Iterator[Any]:
    """A read-only connection to swanboard's database that leaves nothing behind.

    swanboard opens it in WAL mode. While a writer has it open (its ``-wal`` file exists) it is read through
    SQLite's read-only mode, which sees what was committed; otherwise as immutable, which creates no file.
    """
    sqlite_database = _swanboard()[0]
    mode = "mode=ro" if Path(f"{database}-wal").exists() else "immutable=1"
    connection = sqlite_database(f"file:{quote(str(database.resolve()))}?{mode}", uri=True)
    try:
        yield connection
    finally:
        connection.close()


@dataclass
class Column:
    name: str
    kind: str  #: swanboard's tag type: "line" (numbers), "text", "image", "audio", ...
    folder: str


@dataclass
class Experiment:
    """One experiment of the store, as swanboard's tables hold it."""

    run_id: str
    name: str
    project: str
    description: str
    status: int
    created: str | None
    finished: str | None
    columns: list[Column] = field(default_factory=list)


def experiments(database: Path) -> list[Experiment]:
    """Every experiment in ``database`` with its columns, in the order the store made them."""
    _, _, experiment_model, project_model, tag_model = _swanboard()
    with opened(database) as connection:
        projects = {row["id"]: row["name"] for row in project_model.select().dicts().bind(connection)}
        rows = list(experiment_model.select().order_by(experiment_model.id).dicts().bind(connection))
        tags = list(tag_model.select().order_by(tag_model.id).dicts().bind(connection))
    found = []
    for row in rows:
        experiment = Experiment(
            run_id=row["run_id"],
            name=row["name"] or "",
            project=projects.get(row["project_id"]) or "",
            description=row["description"] or "",
            status=int(row["status"]),
            created=row["create_time"],
            finished=row["finish_time"],
        )
        experiment.columns = [
            Column(tag["name"], str(tag["type"]), str(tag["folder"]))
            for tag in tags
            if tag["experiment_id"] == row["id"] and tag["folder"] is not None and not tag["system"]
        ]
        found.append(experiment)
    return found


def experiment_of(run_dir: Path) -> Experiment | None:
    return next((found for found in experiments(database_of(run_dir)) if found.run_id == run_dir.name), None)


@dataclass
class Damaged(Exception):
    """A log file with a line that does not parse (the lines before it were read)."""

    file: Path
    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line} of {self.file} does not parse ({self.reason})"


def _log_files(tag: Any, folder: Path) -> list[str]:
    """The column's log files oldest first (swanboard sorts their names as text: 10000.log before 2000.log)."""
    names = tag.get_tag_files(str(folder), tag.LOGS_CONFIGS)
    return sorted(names, key=lambda name: (int(name[:-4]) if re.fullmatch(r"\d+\.log", name) else 0, name))


def points(run_dir: Path, column: Column) -> tuple[list[dict[str, Any]], Damaged | None]:
    """The column's points in the order SwanLab wrote them, with swanboard's ``read_tag_data``; a line that
    does not parse (a process killed mid-write) ends them there, and is returned beside them."""
    tag = _swanboard()[1]
    folder = run_dir / "logs" / column.folder
    if not folder.is_dir():
        return [], None
    found: list[dict[str, Any]] = []
    for name in _log_files(tag, folder):
        file = folder / name
        try:
            found.extend(tag.read_tag_data(str(file)))
        except ValueError:  # a line that is not JSON, or not UTF-8: keep the lines before it
            for number, line in enumerate(file.read_bytes().splitlines(), 1):
                try:
                    found.append(json.loads(line.decode("utf-8")))
                except ValueError as error:  # UnicodeDecodeError is one too
                    return found, Damaged(file, number, str(error))
    return found, None


def media_files(run_dir: Path, column: Column, point: dict[str, Any]) -> list[Path]:
    names = point.get("data")
    return [run_dir / "media" / column.folder / str(name) for name in names] if isinstance(names, list) else []


def read_folder(run_dir: Path) -> SwanLabRunData:
    """The run in ``run_dir`` as :class:`~tracking_swanlab.reader.SwanLabRunData` (a folder the store does
    not list holds nothing)."""
    data = SwanLabRunData(run_dir)
    experiment = experiment_of(run_dir)
    if experiment is None:
        return with_config(data)
    data.project, data.name, data.finished = experiment.project, experiment.name, experiment.status != RUNNING
    data.state = {FINISHED: "finished", CRASHED: "crashed"}.get(experiment.status, "")
    for column in experiment.columns:
        found, _ = points(run_dir, column)  # as swanboard shows it: what parses
        if column.kind == "line":
            data.scalar_history[column.name] = [(int(point["index"]), float(point["data"])) for point in found]
            continue
        for point in found:
            files = [] if column.kind == "text" else media_files(run_dir, column, point)
            texts = [str(text) for text in point.get("data") or []] if column.kind == "text" else []
            data.media.setdefault(column.name, []).append(MediaPoint(int(point["index"]), column.kind, files, texts))
    return with_config(data)
