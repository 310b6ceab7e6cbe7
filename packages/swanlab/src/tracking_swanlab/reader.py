"""Read a local SwanLab run back with SwanLab's own record reader (for tests, demos and checks).

A run directory (``<log_dir>/run-<time>-<id>``) holds ``run-<id>.swanlab`` -- a log of protobuf
``Record`` messages that ``swanlab sync`` uploads -- plus ``media/`` files and ``files/config.yaml``.
SwanLab 0.6.2 to 0.7.x write ``backup.swanlab`` instead, a log of JSON records that only those releases
read: :func:`read_run` hands such a folder to :mod:`tracking_swanlab.older.v0_6_2.reader`. A local-mode folder
of SwanLab 0.5.8 to 0.6.1 (per-column log files, named in the ``runs.swanlab`` database beside it) goes to
:mod:`tracking_swanlab.older.v0_5_8.reader`, which reads it with swanboard.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: SwanLab's run file starts with a 7-byte header (ident, magic, version); a shorter file holds no record.
_FILE_HEADER_BYTES = 7


@dataclass
class MediaPoint:
    step: int
    kind: str  #: "text", "image", "echarts", ... (SwanLab's column type, lower case)
    files: list[Path]
    #: What the record holds itself instead of a file (SwanLab before 0.8 keeps a text in its record).
    contents: list[str] = field(default_factory=list)

    def texts(self) -> list[str]:
        return list(self.contents) or [file.read_text(encoding="utf-8") for file in self.files]


@dataclass
class SwanLabRunData:
    run_dir: Path
    project: str = ""
    name: str = ""
    group: str = ""
    finished: bool = False
    #: How SwanLab's finish record says the run ended, in SwanLab's words, lower case: ``"finished"``,
    #: ``"crashed"``, ``"aborted"`` (SwanLab 0.8+), ``"finished"``/``"crashed"`` (0.5.8 to 0.7.x);
    #: ``""`` without a finish record. ``error``: the reason the record keeps with a crash or an abort.
    state: str = ""
    error: str = ""
    #: SwanLab's own start and finish stamps (Unix seconds), where its run file keeps them.
    started_at: float | None = None
    finished_at: float | None = None
    scalar_history: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  #: every scalar record, in order
    #: SwanLab's own hardware monitor's series (``__swanlab__.<name>``), kept out of ``scalar_history``.
    system_history: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    media: dict[str, list[MediaPoint]] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    saved_files: list[str] = field(default_factory=list)

    @property
    def scalars(self) -> dict[str, dict[int, float]]:
        """``{key: {step: value}}``; the last record at a step wins."""
        return {key: dict(points) for key, points in self.scalar_history.items()}

    def texts(self) -> dict[str, dict[int, str]]:
        return {
            key: {point.step: point.texts()[0] for point in points}
            for key, points in self.media.items()
            if points and points[0].kind == "text"
        }

    def tables(self) -> dict[str, list[list[Any]]]:
        """The last table logged under each key, as rows in column order."""
        tables = {}
        for key, points in self.media.items():
            for point in points:
                if point.kind != "echarts":
                    continue
                content = json.loads(point.files[0].read_text(encoding="utf-8"))
                if content.get("_swanLab") == "table":
                    columns = [column["field"] for column in content["colDefs"]]
                    tables[key] = [[row.get(column) for column in columns] for row in content["rowData"]]
        return tables


#: Where SwanLab keeps its own monitor's series on every line: keys under this prefix, which ``swanlab.log``
#: refuses (``swanlab.sdk.internal.pkg.helper.fmt_system_key``; the earlier line's hardware collectors).
SYSTEM_KEY_PREFIX = "__swanlab__."

#: The run file of the earlier SDK line (0.6.2 to 0.7.x).
BACKUP_FILE = "backup.swanlab"


def is_earlier_folder(run_dir: str | os.PathLike[str]) -> bool:
    """Whether SwanLab 0.6.2 to 0.7.x wrote this run folder (its run file is ``backup.swanlab``)."""
    return (Path(run_dir) / BACKUP_FILE).is_file()


def holds_records(run_dir: str | os.PathLike[str]) -> bool:
    """Whether the folder's run file got past its header (SwanLab may not have flushed it yet); a local-mode
    folder of SwanLab 0.5.8 to 0.6.1, whether it holds a log file."""
    from .older.v0_5_8.reader import is_local_folder

    if is_local_folder(Path(run_dir)):
        return any((Path(run_dir) / "logs").glob("*/*.log"))
    return find_run_file(run_dir).stat().st_size > _FILE_HEADER_BYTES


def find_run_file(run_dir: str | os.PathLike[str]) -> Path:
    if is_earlier_folder(run_dir):
        return Path(run_dir) / BACKUP_FILE
    files = sorted(Path(run_dir).glob("run-*.swanlab"))
    if len(files) != 1:
        raise FileNotFoundError(f"expected one run-*.swanlab file in {run_dir}, found {len(files)}")
    return files[0]


def read_run(run_dir: str | os.PathLike[str]) -> SwanLabRunData:
    """The run in ``run_dir``, whichever SwanLab line wrote it; SwanLab's own system series apart."""
    from .older.v0_5_8.reader import is_local_folder

    if is_earlier_folder(run_dir):
        from .older.v0_6_2.reader import read_folder

        return system_apart(read_folder(Path(run_dir)))
    if is_local_folder(Path(run_dir)):
        from .older.v0_5_8.reader import read_folder as read_local_folder

        return system_apart(read_local_folder(Path(run_dir)))
    return system_apart(_read_records(Path(run_dir)))


def scalar_history_of(folders: list[Path]) -> dict[str, list[tuple[int, Any]]]:
    """Every scalar record of a run kept in ``folders`` (a resumed run's parts, oldest first), in order."""
    history: dict[str, list[tuple[int, Any]]] = {}
    for folder in folders:
        for key, points in read_run(folder).scalar_history.items():
            history.setdefault(key, []).extend(points)
    return history


def system_history_of(folders: list[Path]) -> dict[str, list[tuple[int, float]]]:
    """SwanLab's own monitor's series of a run kept in ``folders``, oldest part first."""
    system: dict[str, list[tuple[int, float]]] = {}
    for folder in folders:
        for key, points in read_run(folder).system_history.items():
            system.setdefault(key, []).extend(points)
    return system


def images_of(folders: list[Path], current: Path | None) -> dict[str, list[tuple[int, Any]]]:
    """Every image of a run kept in ``folders`` as HWC uint8 arrays, decoded from its media files; an earlier
    part whose run file holds no record yet is skipped (``current``, this process's part, is always read)."""
    from PIL import Image
    from tracking_core.kit import to_hwc_uint8

    images: dict[str, list[tuple[int, Any]]] = {}
    for folder in folders:
        if folder != current and not holds_records(folder):
            continue
        for key, points in read_run(folder).media.items():
            for point in points:
                if point.kind != "image":
                    continue
                for file in point.files:
                    with Image.open(file) as stored:
                        images.setdefault(key, []).append((point.step, to_hwc_uint8(stored)))
    return images


def system_apart(data: SwanLabRunData) -> SwanLabRunData:
    """``data`` with SwanLab's own monitor's series moved from ``scalar_history`` to ``system_history``."""
    for key in [key for key in data.scalar_history if key.startswith(SYSTEM_KEY_PREFIX)]:
        data.system_history[key] = data.scalar_history.pop(key)
    return data


def _read_records(run_dir: Path) -> SwanLabRunData:
    """A run folder of SwanLab 0.8 and later, through its own ``DataStoreReader`` and record messages."""
    from swanlab.proto.swanlab.record.v1 import record_pb2
    from swanlab.sdk.internal.core_python.store import DataStoreReader

    data = SwanLabRunData(run_dir)
    run_file = find_run_file(run_dir)
    if run_file.stat().st_size < _FILE_HEADER_BYTES:
        # SwanLab 0.10 writes its run file unflushed until finish(): before that (or after a kill) it
        # may hold nothing yet, which is a run with no records, not a damaged one.
        return with_config(data)
    reader = DataStoreReader()
    reader.open(str(run_file))
    try:
        for raw in reader:
            record = record_pb2.Record()
            record.ParseFromString(raw)
            kind = record.WhichOneof(record.DESCRIPTOR.oneofs[0].name)
            if kind == "start":
                data.project, data.name, data.group = record.start.project, record.start.name, record.start.group
                if record.start.HasField("started_at"):
                    data.started_at = record.start.started_at.ToNanoseconds() / 1e9
            elif kind == "scalar":
                point = (record.scalar.step, record.scalar.value.number)
                data.scalar_history.setdefault(record.scalar.key, []).append(point)
            elif kind == "media":
                media = record.media
                column = media.DESCRIPTOR.fields_by_name["type"].enum_type.values_by_number[media.type].name
                files = [_media_file(run_dir, item.filename) for item in media.value.items]
                media_point = MediaPoint(media.step, column.removeprefix("COLUMN_TYPE_").lower(), files)
                data.media.setdefault(media.key, []).append(media_point)
            elif kind == "save" and record.save.name not in ("config", "metadata"):
                data.saved_files.append(record.save.name)
            elif kind == "finish":
                finish = record.finish
                state = finish.DESCRIPTOR.fields_by_name["state"].enum_type.values_by_number[finish.state].name
                data.finished, data.state, data.error = True, state.removeprefix("RUN_STATE_").lower(), finish.error
                if finish.HasField("finished_at"):
                    data.finished_at = finish.finished_at.ToNanoseconds() / 1e9
    finally:
        reader.close()
    return with_config(data)


def with_config(data: SwanLabRunData) -> SwanLabRunData:
    """``data`` with the config of ``files/config.yaml`` (the same file in both SDK lines)."""
    config_file = data.run_dir / "files" / "config.yaml"
    if config_file.exists():
        import yaml

        stored = yaml.safe_load(config_file.read_text(encoding="utf-8")) or {}
        data.config = {key: entry.get("value") for key, entry in stored.items()}
    return data


def _media_file(run_dir: Path, filename: str) -> Path:
    matches = list((run_dir / "media").glob(f"*/{filename}"))
    return matches[0] if matches else run_dir / "media" / filename
