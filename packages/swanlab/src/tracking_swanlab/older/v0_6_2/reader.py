"""Read a run folder of SwanLab 0.6.2 to 0.7.x back with that release's own ``DataStore`` and record models.

``backup.swanlab`` is a LevelDB-framed log (the framing of 0.8's run file, header version 1) of JSON
records, each ``{"model_type": ..., "data": ...}`` of one of SwanLab's backup models: ``Header``,
``Project``, ``Experiment``, ``Column`` (a key's type), ``Scalar`` and ``Media`` (a point; a media
point names its files under ``media/<column id>/``), ``Runtime``, ``Log`` (a terminal line) and
``Footer`` (the end of the run). SwanLab 0.8 and later cannot read it (their reader wants header version 2).

Where the release keeps them, feature-detected: ``swanlab.data.porter.datastore.DataStore`` and
``swanlab.proto.v0.BaseModel`` from 0.6.5 on, ``swanlab.log.backup.datastore`` and
``swanlab.log.backup.models`` before.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...reader import BACKUP_FILE, MediaPoint, SwanLabRunData, with_config

#: The file's header (ident, magic, version); a shorter file holds no record yet.
HEADER_BYTES = 7


class NoReader(Exception):
    """The installed SwanLab cannot read a ``backup.swanlab`` (it is 0.8 or later, or not installed)."""


def _sdk_reader() -> tuple[Any, Any]:
    """SwanLab's ``DataStore`` class and the base of its record models, wherever this release keeps them."""
    try:
        from swanlab.data.porter.datastore import DataStore
        from swanlab.proto.v0 import BaseModel
    except ImportError:
        try:
            from swanlab.log.backup.datastore import DataStore
            from swanlab.log.backup.models import BaseModel
        except ImportError as error:
            raise NoReader(
                "this folder was written by SwanLab 0.6.2 to 0.7.x (backup.swanlab), which only those releases read; "
                "the installed SwanLab has no reader for it (read it where swanlab<0.8 is installed)"
            ) from error
    return DataStore, BaseModel


class NotARunFile(Exception):
    """The file does not open as SwanLab's run file (its header is not SwanLab's, version 1)."""


@dataclass
class Damaged(Exception):
    """A record of the file that does not scan or parse (the records before it were read)."""

    index: int
    reason: str

    def __str__(self) -> str:
        return f"record {self.index} is damaged ({self.reason})"


def records(path: Path) -> Iterator[Any]:
    """Every record of ``backup.swanlab`` as SwanLab's model object, in order; :class:`Damaged` at a bad one."""
    store_class, model = _sdk_reader()
    store = store_class()
    try:
        store.open_for_scan(str(path))
    except Exception as error:  # "Invalid header", a header shorter than 7 bytes, another version
        if getattr(store, "_fp", None) is not None:
            store.close()
        raise NotARunFile(str(error) or type(error).__name__) from error
    count = 0
    try:
        while True:
            try:
                raw = store.scan()
            except Exception as error:  # ValidationError (checksum), AssertionError (a torn record header)
                raise Damaged(count + 1, str(error) or type(error).__name__) from error
            if raw is None:
                return
            try:
                record = model.from_record(raw)
            except Exception as error:
                raise Damaged(count + 1, f"does not parse: {error}") from error
            count += 1
            yield record
    finally:
        store.close()


def kind(record: Any) -> str:
    """The record's model name (``"Scalar"``, ``"Media"``, ...)."""
    return type(record).__name__


def media_files(run_dir: Path, media: Any) -> list[Path]:
    return [run_dir / "media" / str(media.kid) / name for name in media.buffers_name or []]


def inline(media: Any) -> list[str]:
    """What a media record holds itself (a text's string): its data, when it names no files."""
    return [str(item) for item in media.metric.get("data") or []]


def media_kinds(columns: dict[str, str], key: str) -> str:
    """A media key's type, lower case (``"image"``, ``"text"``, ``"echarts"``), from its ``Column`` record."""
    return columns.get(key, "").lower()


def read_folder(run_dir: Path) -> SwanLabRunData:
    data = SwanLabRunData(run_dir)
    path = run_dir / BACKUP_FILE
    columns: dict[str, str] = {}
    if path.stat().st_size < HEADER_BYTES:
        # the writer thread has not written (or flushed) even the file's header yet: a run with no records
        return with_config(data)
    try:
        for record in records(path):
            _add(data, columns, run_dir, record)
    except Damaged:
        pass  # as SwanLab's own reader: the records before a damaged one (a killed process's torn last write) are the run
    data.saved_files = saved_files(run_dir)
    return with_config(data)


def _add(data: SwanLabRunData, columns: dict[str, str], run_dir: Path, record: Any) -> None:
    name = kind(record)
    if name == "Project":
        data.project = record.name or ""
    elif name == "Experiment":
        data.name = record.name or ""
    elif name == "Column":
        columns[record.key] = str(record.column_type)
    elif name == "Scalar":
        data.scalar_history.setdefault(record.key, []).append((record.step, float(record.metric["data"])))
    elif name == "Media":
        files = media_files(run_dir, record)
        point = MediaPoint(record.step, media_kinds(columns, record.key), files, [] if files else inline(record))
        data.media.setdefault(record.key, []).append(point)
    elif name == "Footer":  # this line's finish record keeps success or not (an aborted run is a crashed one)
        data.finished, data.state = True, "finished" if record.success else "crashed"


#: What SwanLab itself puts in a run's ``files/`` folder (config, metadata, environment snapshots).
OWN_FILES = {"config.yaml", "swanlab-metadata.json", "requirements.txt", "conda.yaml"}


def saved_files(run_dir: Path) -> list[str]:
    """The files ``swanlab.save`` put in the run's ``files/`` folder (0.7.15 on), by their path below it."""
    folder = run_dir / "files"
    if not folder.is_dir():
        return []
    return sorted(
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and path.relative_to(folder).as_posix() not in OWN_FILES
    )
