"""The run journal: an append-only JSON-lines file of everything a run logged.

Format (``FORMAT_VERSION`` 1), one JSON object per line, each with a ``type``:

* ``header``  -- first line: ``format`` ("tracking-journal"), ``version``, ``project``, ``run_id``,
  ``created`` (ISO 8601, UTC), ``source`` (``"jsonl"`` or ``"spill:<backend>"``).
* ``config``  -- ``values``: the sanitised configuration (nested).
* ``metrics`` -- ``step`` (int), ``values`` (flat ``{key: number | str}``), ``time`` (Unix
  seconds when ``log()`` was called; optional) and ``seq`` (optional: the record's position in the
  run, see :mod:`tracking_core.intake.record`; media, table and artifact records carry it too); NaN/Infinity are written as the bare JSON
  extensions ``NaN``/``Infinity``, which Python's ``json`` reads back.
* ``images``  -- ``step`` and ``images``: ``{key: [path relative to the journal's folder, ...]}``.
* ``table``   -- ``name``, ``step``, ``columns``, ``data`` (rows).
* ``figure``  -- ``name``, ``step``, ``path``.
* ``artifact`` / ``artifacts`` -- ``local_path`` (absolute), ``artifact_path``.
* ``finish``  -- written when the run finished cleanly.
* ``resume``  -- ``time``: a later process continues the run from here (``init(..., resume=...)``).
* ``rewind``  -- ``step``, ``last_seq``, ``time``: the run went back to ``step`` (``resume_step``); the
  records numbered up to ``last_seq`` at ``step`` or later are superseded (:mod:`tracking_core.store.rewind`).

Any record line may carry ``for``: it was logged on that one backend's own tracker (``FOR_BACKEND``).

Readers skip unknown types and a torn last line, so a journal from a killed process reads back up
to its last flushed record, and newer writers can add record types without breaking older readers.

**Segments.** A journal written with ``segment_bytes`` (the ``jsonl`` backend's ``segment_mb``) is sealed
whenever it grows past that size: ``journal.jsonl`` is renamed ``journal-<last seq>.jsonl`` and a new
``journal.jsonl`` starts with a header that repeats the run's and adds ``after_seq`` (the last ``seq`` of the
segment before it) and ``config`` (the whole config so far). Readers chain the segments in order and then
``journal.jsonl``; a sealed segment is deleted, with the media it names, once every backend's cursor has
passed its last record (:func:`drop_delivered_segments`), and the oldest header left still carries the config.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..contract.histogram import Histogram
from ..intake.config import merge_config
from ..intake.record import Record
from ..kit.appendfile import AppendFile
from ..kit.png import load_png
from ..notices import logger

FORMAT = "tracking-journal"
FORMAT_VERSION = 1
JOURNAL_NAME = "journal.jsonl"
#: a sealed segment of a journal written in segments: ``journal-<last seq, 12 digits>.jsonl``
SEGMENT_GLOB = "journal-*.jsonl"
#: a record read from a journal carries no per-backend ``log_kwargs``
_NO_KWARGS: dict[str, Any] = {}


#: the field of a line logged on one backend's own tracker (``run.get_tracker(name).log(...)``): the backend it
#: was for. The views show it like any record; whatever delivers the journal to backends gives it to that one only.
FOR_BACKEND = "for"


def is_for(entry: dict[str, Any], backend: str) -> bool:
    """Whether a journal line is ``backend``'s to receive: every line is, but one logged for another backend."""
    return bool(entry.get(FOR_BACKEND, backend) == backend)


def _default(value: Any) -> Any:
    return str(value)


def encode(record: dict[str, Any]) -> str:
    return json.dumps(record, default=_default, separators=(",", ":")) + "\n"


class JournalWriter:
    """Appends records to one journal file (or to its segments, with ``segment_bytes``).

    ``flush()`` hands the records written since the last flush to the OS (they survive the process
    being killed) or, when the disk is full or the file was deleted, raises and keeps none of them;
    ``flush(durable=True)`` also fsyncs (they survive the machine going down).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        project: str,
        run_id: str,
        source: str,
        segment_bytes: int | None = None,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._segment_bytes = segment_bytes
        if segment_bytes:
            _finish_cut_seal(self.path)
        if self.path.exists():
            _drop_torn_line(self.path)
        is_new = not self.path.exists() or self.path.stat().st_size == 0
        self._header: dict[str, Any] = {
            "type": "header",
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "project": project,
            "run_id": run_id,
            "source": source,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        }
        #: the config so far and the last seq written: what a new segment's header needs
        self._config: dict[str, Any] = {}
        self._last_seq = -1
        if not is_new and segment_bytes:
            self._read_active_segment()
        self._file = AppendFile(self.path)
        if is_new:
            self.write(self._header)
            self.flush()

    def write(self, record: dict[str, Any]) -> None:
        if self._segment_bytes:
            self._note(record)
        self._file.write(encode(record))

    def write_many(self, records: list[dict[str, Any]]) -> None:
        if self._segment_bytes:
            for record in records:
                self._note(record)
        self._file.write("".join(encode(record) for record in records))

    def flush(self, durable: bool = False) -> None:
        self._file.flush(durable=durable)
        if self._segment_bytes and self._file.size >= self._segment_bytes and self._last_seq >= 0:
            try:
                self._seal()
            except OSError as error:  # the records are stored: a failed seal must not report them lost
                logger.warning(
                    "journal %s: cannot seal a segment (%s); it is kept whole from here on", self.path, error
                )
                self._segment_bytes = None
                self.path.with_name(self.path.name + ".next").unlink(missing_ok=True)
                if self._file.closed:
                    self._file = AppendFile(self.path)

    def close(self) -> None:
        self._file.close()

    def _note(self, record: dict[str, Any]) -> None:
        seq = record.get("seq")
        if type(seq) is int and seq > self._last_seq:
            self._last_seq = seq
        if record.get("type") == "config":
            self._config = merge_config(self._config, record.get("values") or {})

    def _read_active_segment(self) -> None:
        """A resumed journal: its header and the records after it give the config so far and the last seq."""
        for index, record in enumerate(_records_of(self.path)):
            if index == 0 and record.get("type") == "header":
                self._header = {key: value for key, value in record.items() if key not in ("after_seq", "config")}
                self._config = dict(record.get("config") or {})
            else:
                self._note(record)

    def _seal(self) -> None:
        """``journal.jsonl`` becomes ``journal-<last seq>.jsonl`` and a new one starts, headed by the run's
        header and the config so far. The name ``journal.jsonl`` exists at every moment: the sealed segment is
        a second link to the full file before the new one replaces it."""
        self._file.close()
        following = self.path.with_name(self.path.name + ".next")
        header = {**self._header, "after_seq": self._last_seq, "config": self._config}
        first = AppendFile(following)
        first.write(encode(header))
        first.close()
        os.link(self.path, self.path.with_name(segment_name(self._last_seq)))
        os.replace(following, self.path)
        self._file = AppendFile(self.path)


def segment_name(last_seq: int) -> str:
    return f"journal-{last_seq:012d}.jsonl"


def journal_segments(journal: Path) -> list[Path]:
    """The sealed segments before ``journal`` (a run's ``journal.jsonl``), oldest first; none for other files."""
    if journal.name != JOURNAL_NAME:
        return []
    return sorted(journal.parent.glob(SEGMENT_GLOB))


def journal_files(journal: Path) -> list[Path]:
    """Every file of a journal in the order it was written: its sealed segments, then the file itself."""
    return [*journal_segments(journal), journal]


def _segment_last_seq(segment: Path) -> int:
    try:
        return int(segment.stem.partition("-")[2])
    except ValueError:
        return -1


def _finish_cut_seal(journal: Path) -> None:
    """A process killed inside ``_seal``: the newest segment still shares the journal's file, or a ``.next``
    was left behind. Either way ``journal.jsonl`` holds every record; the seal is finished or forgotten."""
    following = journal.with_name(journal.name + ".next")
    segments = journal_segments(journal)
    shared = bool(segments) and journal.exists() and os.path.samefile(segments[-1], journal)
    if shared and following.exists():
        os.replace(following, journal)
    elif shared:
        segments[-1].unlink()
    elif following.exists():
        following.unlink()


def drop_delivered_segments(journal: Path, cursor: int) -> list[Path]:
    """Delete the sealed segments every backend holds (their last seq at or below ``cursor``, the lowest
    backend cursor), with the media files they name. Returns the segments deleted."""
    dropped = []
    for segment in journal_segments(journal):
        if _segment_last_seq(segment) > cursor or _segment_last_seq(segment) < 0:
            break
        try:
            media = [journal.parent / item for entry in _records_of(segment) for item in _media_of(entry)]
            segment.unlink()
        except FileNotFoundError:  # another process of the run (a replay, the delivery process) dropped it
            continue
        for path in media:
            with contextlib.suppress(OSError):
                path.unlink()
        dropped.append(segment)
    return dropped


def _media_of(entry: dict[str, Any]) -> list[str]:
    if entry.get("type") == "images":
        return [item for items in (entry.get("images") or {}).values() for item in items if isinstance(item, str)]
    if entry.get("type") == "figure" and isinstance(entry.get("path"), str):
        return [entry["path"]]
    return []


def _drop_torn_line(path: Path) -> None:
    """Cut a last line a killed writer left half-written, so records appended now stay readable."""
    with open(path, "rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - 1))
        if handle.read(1) == b"\n":
            return
        tail = min(size, 1 << 20)
        handle.seek(size - tail)
        cut = handle.read(tail).rfind(b"\n")
        if cut >= 0 or tail == size:
            handle.truncate(size - tail + cut + 1)  # cut == -1 with the whole file read: nothing was whole
        else:  # a torn line over 1 MiB: end it, readers skip it as corrupt
            handle.write(b"\n")


def resolve_journal(path: str | os.PathLike[str]) -> Path:
    """A journal file, or the ``journal.jsonl`` inside a run directory."""
    path = Path(path)
    if path.is_dir():
        candidate = path / JOURNAL_NAME
        if candidate.exists():
            return candidate
        spills = sorted(path.glob("spill-*.jsonl"))
        if len(spills) == 1:
            return spills[0]
        raise FileNotFoundError(
            f"no {JOURNAL_NAME} in {path}" + (f" (spill journals: {[s.name for s in spills]})" if spills else "")
        )
    if not path.exists():
        raise FileNotFoundError(f"journal {path} does not exist")
    return path


def read_journal(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Yield the records of a journal, its sealed segments first; a torn or corrupt line is skipped, never fatal.

    One header leads: the oldest file's. When older segments were dropped, the config that header carries
    follows it as a ``config`` record, so the config is whole whichever segments are left.
    """
    journal = resolve_journal(path)
    for index, file in enumerate(journal_files(journal)):
        for record in _records_of(file):
            if record["type"] != "header":
                yield record
            elif index == 0:
                yield record
                if record.get("config"):
                    yield {"type": "config", "values": record["config"]}


def _records_of(file: Path) -> Iterator[dict[str, Any]]:
    with open(file, encoding="utf-8") as handle:
        for line in handle:
            if not line.endswith("\n"):
                break  # the writer was killed mid-line: everything before is whole
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and "type" in record:
                yield record


_TAIL_BYTES = 4096


def tail_entries(path: Path, size: int = 1 << 18) -> list[dict[str, Any]]:
    """The whole records among the last ``size`` bytes of a journal; none when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            end = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, end - size))
            lines = handle.read().split(b"\n")[1 if end > size else 0 : -1]  # the first may be cut, the last torn
    except OSError:
        return []
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def journal_tail(path: Path) -> tuple[int, int]:
    """``(last seq, last step)`` among the last records of a journal; ``(-1, -1)`` when it has none."""
    last_seq = last_step = -1
    for entry in tail_entries(path):
        if isinstance(entry.get("seq"), int):
            last_seq = max(last_seq, entry["seq"])
        if entry.get("type") == "metrics" and isinstance(entry.get("step"), int):
            last_step = max(last_step, entry["step"])
    return last_seq, last_step


def journal_ends(journal: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The header record and the last whole record of a journal (``{}``/``None`` when unreadable), reading
    only its first line and its last few kilobytes: listing a folder of long runs stays fast."""
    header: dict[str, Any] = {}
    last: Any = None
    try:
        with open(journal, "rb") as handle:
            first = handle.readline()
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - _TAIL_BYTES))
            tail = handle.read().split(b"\n")
        header = json.loads(first) if first.endswith(b"\n") else {}
        for line in reversed(tail[:-1]):  # the piece after the last newline is empty or torn
            try:
                last = json.loads(line)
                break
            except ValueError:
                continue
    except (OSError, ValueError):
        pass
    return (header if isinstance(header, dict) else {}), (last if isinstance(last, dict) else None)


def read_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    for record in read_journal(path):
        if record["type"] == "header":
            if record.get("format") != FORMAT:
                raise ValueError(f"{path} is not a tracking journal")
            if int(record.get("version", 0)) > FORMAT_VERSION:
                raise ValueError(
                    f"{path} uses journal format {record['version']}; this tracking-core reads up to {FORMAT_VERSION}"
                )
            return record
        break
    raise ValueError(f"{path} has no journal header")


class JournalSummary:
    """What a journal holds, for ``tracking show`` and the demo's read-back."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = resolve_journal(path)
        self.header = read_header(self.path)
        self.config: dict[str, Any] = {}
        self.metrics: dict[
            str, list[tuple[int | None, Any]]
        ] = {}  # None: logged without a step, outside the dispatcher
        self.counts: dict[str, int] = {}
        self.finished = False
        #: metric points a later rewind superseded (not in ``metrics``)
        self.superseded = 0
        for record in read_journal(self.path):
            kind = record["type"]
            self.counts[kind] = self.counts.get(kind, 0) + 1
            if kind == "config":
                self.config = merge_config(self.config, record.get("values") or {})
            elif kind == "metrics":
                step = record.get("step")
                for key, value in (record.get("values") or {}).items():
                    self.metrics.setdefault(key, []).append((step, value))
            elif kind == "finish":
                self.finished = True
            elif kind == "resume":
                self.finished = False
            elif kind == "rewind":
                self._rewind(record.get("step"))

    def _rewind(self, step: Any) -> None:
        """Points logged before a rewind record at its step or later are superseded (each step counts once)."""
        if type(step) is not int:
            return
        for key in list(self.metrics):
            kept = [(at, value) for at, value in self.metrics[key] if at is None or at < step]
            dropped = len(self.metrics[key]) - len(kept)
            if dropped:
                self.superseded += dropped
            if kept:
                self.metrics[key] = kept
            else:
                del self.metrics[key]


def record_from_entry(entry: dict[str, Any], base: Path) -> Record | None:
    """The record a journal line describes (``None`` for lines that carry no data): what a replay and a
    spill's catch-up deliver.

    Media come back from the files the journal points to; a figure comes back as the PNG the
    journal rendered, so it is delivered as an image.
    """
    kind, step, seq = entry.get("type"), entry.get("step"), entry.get("seq")
    if kind == "metrics":
        return Record("log", entry.get("values") or {}, step, _NO_KWARGS, entry.get("time"), seq)
    if kind == "config":
        return Record("config", entry.get("values") or {}, None, _NO_KWARGS, None, seq)
    if kind == "images":
        images = {key: [load_png(base / item) for item in items] for key, items in (entry.get("images") or {}).items()}
        return Record("images", images, step, _NO_KWARGS, None, seq)
    if kind == "figure":
        return Record("images", {entry["name"]: load_png(base / entry["path"])}, step, _NO_KWARGS, None, seq)
    if kind == "table":
        payload = (entry["name"], entry.get("columns"), entry.get("data"), None)
        return Record("table", payload, step, _NO_KWARGS, None, seq)
    if kind == "histogram":
        return Record(
            "histogram", (entry["name"], Histogram.from_json(entry["histogram"])), step, _NO_KWARGS, None, seq
        )
    if kind in ("artifact", "artifacts"):
        local = entry.get("local_path")
        if not local or not os.path.exists(local):
            return None
        return Record(kind, (local, entry.get("artifact_path")), None, _NO_KWARGS, None, seq)
    return None
