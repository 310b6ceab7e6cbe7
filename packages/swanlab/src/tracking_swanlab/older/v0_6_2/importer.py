"""One run folder of SwanLab 0.6.2 to 0.7.x as an import source (``tracking import swanlab ...``).

Read record by record with the release's own ``DataStore`` and models (:mod:`.reader`). Scalars (with
the time SwanLab stamped on each) become points; image files, texts (kept in their record) and echarts
tables become media; files ``swanlab.save`` put in ``files/`` become artifacts; the config comes from
``files/config.yaml``. Offline, this line cannot continue a run, so each folder is its own run.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracking_core.kit import Media, Point, SourceError, SourceRun

from ...reader import SYSTEM_KEY_PREFIX
from ...store_files import iso_seconds, table_file
from . import reader


@dataclass
class _Scan:
    header: Any = None
    project: Any = None
    experiment: Any = None
    footer: Any = None
    columns: dict[str, str] = field(default_factory=dict)
    media: list[Media] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    scalars: int = 0
    last_step: int | None = None
    damage: str | None = None

    def drop(self, what: str) -> None:
        self.dropped[what] = self.dropped.get(what, 0) + 1


def _scan_media(scan: _Scan, run_dir: Path, media: Any) -> None:
    kind, key, step = reader.media_kinds(scan.columns, media.key), media.key, media.step
    time = iso_seconds(media.metric.get("create_time"))
    if any(isinstance(more, dict) and more.get("caption") for more in media.metric.get("more") or []):
        scan.drop(f"media captions ({key})")
    files = reader.media_files(run_dir, media)
    if kind == "text":
        scan.media.extend(Media("text", key, step, text, time) for text in reader.inline(media))
    elif kind == "image":
        scan.media.extend(Media("image", key, step, str(file), time) for file in files)
    elif kind == "echarts" and files and (table := table_file(files[0])) is not None:
        scan.media.append(Media("table", key, step, table, time))
    else:
        scan.drop(f"{kind or 'unknown'} media ({key})")


def _scan(path: Path) -> _Scan:
    scan = _Scan()
    try:
        for record in reader.records(path):
            name = reader.kind(record)
            if name == "Scalar" and record.key.startswith(SYSTEM_KEY_PREFIX):
                scan.drop("SwanLab's own system metrics (__swanlab__.*) points")
            elif name == "Scalar":
                scan.scalars += 1
                scan.last_step = record.step
            elif name == "Media":
                _scan_media(scan, path.parent, record)
            elif name == "Column":
                scan.columns[record.key] = str(record.column_type)
            elif name == "Log":
                scan.drop("terminal output lines")
            elif name in ("Header", "Project", "Experiment", "Footer"):
                setattr(scan, name.lower(), record)
            elif name != "Runtime":  # the runtime record names the files in files/, read there
                scan.drop(f"{name} records")
    except reader.Damaged as error:
        scan.damage = str(error)
    return scan


def _points(path: Path) -> Iterator[Point]:
    try:
        for record in reader.records(path):
            if reader.kind(record) == "Scalar" and not record.key.startswith(SYSTEM_KEY_PREFIX):
                value = record.metric.get("data")
                yield Point(record.key, record.step, float(value), iso_seconds(record.metric.get("create_time")))
    except reader.Damaged:
        return  # the scan recorded it: the run is yielded up to there, then the import fails


def _artifacts(run_dir: Path) -> list[Media]:
    return [Media("artifact", name, None, str(run_dir / "files" / name)) for name in reader.saved_files(run_dir)]


def read_run(run_id: str, path: Path, config: dict[str, Any]) -> Iterator[SourceRun]:
    """The run in ``path`` (a ``backup.swanlab``); raises :class:`SourceError` after it when the file is damaged."""
    try:
        scan = _scan(path)
    except reader.NoReader as error:
        raise SourceError(str(path), str(error)) from error
    except reader.NotARunFile as error:
        raise SourceError(str(path), f"not a SwanLab run file ({error})") from error
    if scan.project is None or scan.experiment is None:
        reason = scan.damage or "the run file has no project or experiment record"
        raise SourceError(str(path), reason, imported="nothing of this run")
    not_carried = [f"{what}, {count} time(s)" for what, count in sorted(scan.dropped.items())]
    if scan.damage is not None:
        not_carried.append(f"everything in {path.name} after the damage ({scan.damage})")
    footer = scan.footer
    project = scan.project.name or None
    tags = {"description": scan.experiment.description} if scan.experiment.description else {}
    if scan.experiment.tags:
        tags["tags"] = ",".join(scan.experiment.tags)
    yield SourceRun(
        backend="swanlab",
        source_id=f"{project}/{getattr(scan.experiment, 'id', None) or run_id}",
        name=scan.experiment.name or None,
        project=project,
        started=iso_seconds(scan.header.create_time) if scan.header is not None else None,
        ended=iso_seconds(footer.create_time) if footer is not None else None,
        status=None if footer is None else ("finished" if footer.success else "crashed"),
        config=config,
        tags=tags,
        points=_points(path),
        media=[*scan.media, *_artifacts(path.parent)],
        not_carried=not_carried,
        location=str(path.parent),
    )
    if scan.damage is not None:
        step = "" if scan.last_step is None else f", up to step {scan.last_step}"
        raise SourceError(str(path), scan.damage, imported=f"run {run_id}: {scan.scalars} scalar(s){step}")
