"""SwanLab 0.5.8 to 0.6.1 local-mode stores as an import source (``tracking import swanlab ...``).

A store is a log folder's ``runs.swanlab`` and the run folders it lists, read with swanboard
(:mod:`.reader`). Each experiment is a run of its own (this line cannot continue one): numeric columns
become points (with the time SwanLab stamped on each), image columns image media, text columns text
media; the config comes from the folder's ``files/config.yaml``. What is not carried is listed: captions,
other media kinds, the terminal output SwanLab 0.5.8 recorded in ``console/``. A log line that does not
parse ends the run's points there: the run is yielded up to it, then the import fails naming the file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tracking_core.kit import Media, Point, SourceError, SourceRun

from ...store_files import iso_seconds
from . import DATABASE, reader


def stores(root: Path) -> list[tuple[Path, Path | None]]:
    """The stores under ``root`` as ``(runs.swanlab, only this run folder or None)``: the database itself,
    a log folder, a folder above log folders, or one run folder (its store, that run alone)."""
    if root.is_file():
        return [(root, None)] if root.name == DATABASE else []
    if reader.is_local_folder(root) and not (root / DATABASE).is_file():
        return [(reader.database_of(root), root)]
    found: list[tuple[Path, Path | None]] = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        if DATABASE in names:
            found.append((Path(folder) / DATABASE, None))
    return found


def _status(experiment: reader.Experiment) -> str | None:
    return {reader.FINISHED: "finished", reader.CRASHED: "crashed"}.get(experiment.status)


def _terminal_lines(run_dir: Path) -> int:
    console = run_dir / "console"
    if not console.is_dir():
        return 0
    return sum(len(file.read_text(encoding="utf-8", errors="replace").splitlines()) for file in console.glob("*.log"))


def _read(run_dir: Path, experiment: reader.Experiment, config: dict[str, Any]) -> Iterator[SourceRun]:
    points: list[Point] = []
    media: list[Media] = []
    dropped: dict[str, int] = {}
    damage: reader.Damaged | None = None
    for column in experiment.columns:
        found, damaged = reader.points(run_dir, column)
        damage = damage or damaged
        for point in found:
            step, time = int(point["index"]), iso_seconds(point.get("create_time"))
            if any(isinstance(more, dict) and more.get("caption") for more in point.get("more") or []):
                dropped[f"media captions ({column.name})"] = dropped.get(f"media captions ({column.name})", 0) + 1
            if column.kind == "line":
                points.append(Point(column.name, step, float(point["data"]), time))
            elif column.kind == "text":
                media.extend(Media("text", column.name, step, str(text), time) for text in point.get("data") or [])
            elif column.kind == "image":
                files = reader.media_files(run_dir, column, point)
                media.extend(Media("image", column.name, step, str(file), time) for file in files)
            else:
                what = f"{column.kind} media ({column.name})"
                dropped[what] = dropped.get(what, 0) + 1
    lines = _terminal_lines(run_dir)
    if lines:
        dropped["terminal output lines"] = lines
    not_carried = [f"{what}, {count} time(s)" for what, count in sorted(dropped.items())]
    if damage is not None:
        not_carried.append(f"everything in {damage.file.name} of column {damage.file.parent.name} after the damage")
    tags = {"description": experiment.description} if experiment.description else {}
    yield SourceRun(
        backend="swanlab",
        source_id=f"{experiment.project}/{experiment.run_id.rsplit('-', 1)[-1]}",
        name=experiment.name or None,
        project=experiment.project or None,
        started=iso_seconds(experiment.created),
        ended=iso_seconds(experiment.finished),
        status=_status(experiment),
        config=config,
        tags=tags,
        points=iter(points),
        media=media,
        not_carried=not_carried,
        location=str(run_dir),
    )
    if damage is not None:
        raise SourceError(
            str(damage.file), str(damage), imported=f"run {experiment.run_id}: {len(points)} scalar(s) up to there"
        )


def read_store(database: Path, only: Path | None, config_of: Callable[[Path], dict[str, Any]]) -> Iterator[SourceRun]:
    """Each run of the store (or only the folder ``only``) whose folder is there and holds no other line's run file."""
    try:
        listed = reader.experiments(database)
    except reader.NoReader as error:
        raise SourceError(str(database), str(error)) from error
    except Exception as error:  # not SQLite, or not swanboard's tables
        raise SourceError(str(database), f"not a SwanLab local store ({type(error).__name__}: {error})") from error
    for experiment in listed:
        run_dir = database.parent / experiment.run_id
        if (only is not None and run_dir.resolve() != only.resolve()) or not reader.is_local_folder(run_dir):
            continue
        yield from _read(run_dir, experiment, config_of(run_dir))
