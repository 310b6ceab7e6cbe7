"""Import SwanLab runs from their local folders (``<log_dir>/run-<time>-<id>``, offline or local mode).

A run folder's ``run-<id>.swanlab`` is a log of protobuf ``Record`` messages (what ``swanlab sync``
uploads), read here with SwanLab's own ``DataStoreReader`` and ``record_pb2`` -- record by record, and
through ``scan()`` rather than the reader's iterator, which ends quietly at a damaged record where an
import must say so. Scalars (with their steps and timestamps) become points; text, image and table
media (files under ``media/``) become media (SwanLab's own monitor's ``__swanlab__.*`` scalars are not the
user's: counted as not carried); the config comes from ``files/config.yaml`` as
:mod:`tracking_swanlab.reader` reads it. The folders of a resumed run (one id) are read as one run.

A folder of SwanLab 0.6.2 to 0.7.x (``backup.swanlab``, JSON records) is read by
:mod:`tracking_swanlab.older.v0_6_2.importer`, with that release's own reader: it needs such a SwanLab installed.
A local-mode store of SwanLab 0.5.8 to 0.6.1 (``runs.swanlab`` beside its run folders) is read by
:mod:`tracking_swanlab.older.v0_5_8.importer`, with swanboard.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracking_core.kit import Media, Point, SourceError, SourceRun

from .older.v0_5_8 import DATABASE as LOCAL_DATABASE
from .older.v0_5_8 import importer as local_importer
from .reader import BACKUP_FILE, SYSTEM_KEY_PREFIX, _media_file
from .store_files import table_file

__all__ = ["read_runs"]

#: SwanLab's own saved files: what they hold is carried from the records and config.yaml.
_OWN_SAVES = {"config", "metadata"}


class _Damaged(Exception):
    pass


def _records(path: Path) -> Iterator[Any]:
    try:
        from swanlab.proto.swanlab.record.v1 import record_pb2
        from swanlab.sdk.internal.core_python.store import DataStoreReader
    except ImportError as error:
        raise SourceError(
            str(path), "written by SwanLab 0.8 or later, whose reader the installed SwanLab does not have"
        ) from error

    if path.stat().st_size == 0:
        return  # SwanLab writes the file unflushed until finish(): a run killed early holds nothing
    reader = DataStoreReader()
    try:
        reader.open(str(path))
    except Exception as error:
        raise SourceError(str(path), f"not a SwanLab run file ({error or type(error).__name__})") from error
    count = 0
    try:
        while True:
            try:
                raw = reader.scan()
            except Exception as error:  # DataStoreError (checksum), AssertionError (a torn chunk header)
                raise _Damaged(f"record {count + 1} is damaged ({error or type(error).__name__})") from error
            if raw is None:
                return
            record = record_pb2.Record()
            try:
                record.ParseFromString(raw)
            except Exception as error:
                raise _Damaged(f"record {count + 1} does not parse ({error})") from error
            count += 1
            yield record
    finally:
        reader.close()


def _kind(record: Any) -> str:
    return str(record.WhichOneof(record.DESCRIPTOR.oneofs[0].name))


def _seconds(stamp: Any) -> float | None:
    return stamp.seconds + stamp.nanos / 1e9 if stamp.seconds or stamp.nanos else None


def _column_type(media: Any) -> str:
    name = media.DESCRIPTOR.fields_by_name["type"].enum_type.values_by_number[media.type].name
    return str(name).removeprefix("COLUMN_TYPE_").lower()


@dataclass
class _Scan:
    start: Any = None
    finish: Any = None
    media: list[Media] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    saved: list[Media] = field(default_factory=list)
    scalars: int = 0
    last_step: int | None = None
    damage: tuple[Path, str] | None = None

    def drop(self, what: str) -> None:
        self.dropped[what] = self.dropped.get(what, 0) + 1


def _scan_media(scan: _Scan, run_dir: Path, media: Any) -> None:
    kind, key, step, time = _column_type(media), media.key, media.step, _seconds(media.timestamp)
    files = [_media_file(run_dir, item.filename) for item in media.value.items]
    if any(item.caption for item in media.value.items):
        scan.drop(f"media captions ({key})")
    for file in files:
        if kind == "image":
            scan.media.append(Media("image", key, step, str(file), time))
        elif kind == "text":
            scan.media.append(Media("text", key, step, file.read_text(encoding="utf-8"), time))
        elif kind == "echarts" and (table := table_file(file)) is not None:
            scan.media.append(Media("table", key, step, table, time))
        else:
            scan.drop(f"{kind} media ({key})")


def _scan(files: list[Path]) -> _Scan:
    scan = _Scan()
    for path in files:
        run_dir = path.parent
        try:
            for record in _records(path):
                kind = _kind(record)
                if kind == "scalar" and record.scalar.key.startswith(SYSTEM_KEY_PREFIX):
                    scan.drop("SwanLab's own system metrics (__swanlab__.*) points")
                elif kind == "scalar":
                    scan.scalars += 1
                    scan.last_step = record.scalar.step
                elif kind == "media":
                    _scan_media(scan, run_dir, record.media)
                elif kind == "start":
                    scan.start = record.start
                elif kind == "finish":
                    scan.finish = record.finish
                elif kind == "log":
                    scan.drop("terminal output lines")
                elif kind == "save" and record.save.name not in _OWN_SAVES:
                    saved = run_dir / "files" / record.save.name
                    if saved.exists():
                        scan.saved.append(Media("artifact", record.save.name, None, str(saved)))
                    else:
                        scan.drop(f"saved file {record.save.name!r} (not in the run folder)")
                elif kind not in ("column", "save"):
                    scan.drop(f"{kind} records")
        except _Damaged as error:
            scan.damage = (path, str(error))
            return scan
    return scan


def _points(files: list[Path], damaged: Path | None) -> Iterator[Point]:
    for path in files:
        try:
            for record in _records(path):
                if _kind(record) == "scalar" and not record.scalar.key.startswith(SYSTEM_KEY_PREFIX):
                    scalar = record.scalar
                    yield Point(scalar.key, scalar.step, scalar.value.number, _seconds(scalar.timestamp))
        except _Damaged:
            return  # the first pass recorded it: the run is yielded up to there, then the import fails
        if path == damaged:
            return


def _config(run_dir: Path) -> dict[str, Any]:
    config_file = run_dir / "files" / "config.yaml"
    if not config_file.is_file():
        return {}
    import yaml

    stored = yaml.safe_load(config_file.read_text(encoding="utf-8")) or {}
    return {key: entry.get("value") if isinstance(entry, dict) else entry for key, entry in stored.items()}


def _merged_config(files: list[Path]) -> dict[str, Any]:
    """The config of a run's folders together, oldest first: a process that resumed the run may store none."""
    config: dict[str, Any] = {}
    for path in files:
        config.update(_config(path.parent))
    return config


def _run_files(root: Path) -> dict[str, list[Path]]:
    """The run files under ``root`` by run id, each run's folders oldest first (their names start with the time)."""
    if root.is_file():
        found = [root] if root.name != LOCAL_DATABASE else []
    else:
        found = []
        for folder, dirs, names in os.walk(root):
            dirs.sort()
            found.extend(Path(folder) / name for name in names if name.endswith(".swanlab") and name != LOCAL_DATABASE)
    runs: dict[str, list[Path]] = {}
    for path in sorted(found, key=lambda path: path.parent.name):
        runs.setdefault(_run_id(path), []).append(path)
    return runs


def _run_id(path: Path) -> str:
    """``run-<id>.swanlab`` names its run; a ``backup.swanlab`` is named by its folder, ``run-<time>-<id>``."""
    if path.name == BACKUP_FILE:
        return path.parent.name.rsplit("-", 1)[-1]
    return path.stem.removeprefix("run-")


def _tags(start: Any) -> dict[str, str]:
    tags = {name: str(getattr(start, name)) for name in ("group", "job_type", "description") if getattr(start, name)}
    if start.tags:
        tags["tags"] = ",".join(start.tags)
    return tags


def read_runs(source: str, *, options: dict[str, str] | None = None) -> Iterator[SourceRun]:
    """Each SwanLab run under ``source``: a run folder, its ``.swanlab`` file, or a folder above run folders."""
    root = Path(source)
    if not root.exists():
        raise SourceError(source, "no such file or folder")
    runs = _run_files(root)
    local_stores = local_importer.stores(root)
    if not runs and not local_stores:
        raise SourceError(source, "no SwanLab run (run-*.swanlab, backup.swanlab or a local runs.swanlab) found")
    for run_id, files in runs.items():
        if files[0].name == BACKUP_FILE:  # SwanLab 0.6.2 to 0.7.x: each folder is a run of its own
            from .older.v0_6_2.importer import read_run

            for path in files:
                yield from read_run(run_id, path, _config(path.parent))
            continue
        scan = _scan(files)
        if scan.start is None:
            if scan.damage is not None:
                raise SourceError(str(scan.damage[0]), scan.damage[1], imported="nothing of this run")
            if not any(path.stat().st_size for path in files):
                raise SourceError(str(files[-1]), "the run file is empty (SwanLab writes it at finish)")
            raise SourceError(str(files[-1]), "the run file has no start record")
        start = scan.start
        not_carried = [f"{what}, {count} time(s)" for what, count in sorted(scan.dropped.items())]
        if scan.damage is not None:
            not_carried.append(f"everything in {scan.damage[0].name} after the damage ({scan.damage[1]})")
        status = None
        if scan.finish is not None:
            finish = scan.finish
            state = finish.DESCRIPTOR.fields_by_name["state"].enum_type.values_by_number[finish.state].name
            status = str(state).removeprefix("RUN_STATE_").lower()
        yield SourceRun(
            backend="swanlab",
            source_id=f"{start.project}/{start.id or run_id}",
            name=start.name or None,
            project=start.project or None,
            started=_seconds(start.started_at),
            ended=_seconds(scan.finish.finished_at) if scan.finish is not None else None,
            status=status,
            config=_merged_config(files),
            tags=_tags(start),
            points=_points(files, scan.damage[0] if scan.damage else None),
            media=[*scan.media, *scan.saved],
            not_carried=not_carried,
            location=str(files[-1].parent),
        )
        if scan.damage is not None:
            step = "" if scan.last_step is None else f", up to step {scan.last_step}"
            raise SourceError(
                str(scan.damage[0]), scan.damage[1], imported=f"run {run_id}: {scan.scalars} scalar(s){step}"
            )
    for database, only in local_stores:  # SwanLab 0.5.8 to 0.6.1 local mode: each experiment is a run
        yield from local_importer.read_store(database, only, _config)
