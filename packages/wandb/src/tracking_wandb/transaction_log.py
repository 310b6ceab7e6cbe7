"""A reader for W&B's ``run-<id>.wandb`` transaction log (wandb >= 0.31 ships none in Python).

The file is what ``wandb sync`` uploads and the only complete local record of an offline run. Its
format: a 7-byte header (``b":W&B"``, magic ``0xBEE1``, a version byte), then LevelDB-log framing --
32 KiB blocks of chunks, each ``crc32 (uint32) | length (uint16) | type (uint8) | payload``, type 1 a
whole record and 2/3/4 its first/middle/last parts, a block tail under 7 bytes zero-padded -- around
serialized ``wandb.proto.wandb_internal_pb2.Record`` messages. The run's ``exit`` record is the last
one ``wandb-core`` writes.

Used by :meth:`WandBTracker.finish` (``run.finish()`` can return before the file is complete) and
:meth:`WandBTracker.read_back_history`; handy for tests and for inspecting an offline run::

    from tracking_wandb.transaction_log import read_run
    run = read_run("runs/wandb/offline-run-20260101_120000-abcd1234")
    run.metrics()["train/loss"]         # {step: value}
    run.metric_history()["train/loss"]  # [(step, value), ...], every history record in order
"""

from __future__ import annotations

import json
import struct
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_BLOCK = 32 * 1024
_HEADER = 7  # the file header and every chunk header are 7 bytes
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def _payloads(data: bytes, offset: int = 0, verify: bool = True) -> Iterator[bytes]:
    """Whole records in ``data`` (the file from ``offset``, a block boundary, on).

    Stops at a record not completely written yet; parts of a record that began before ``offset``
    are skipped.
    """
    pending: bytes | None = None
    position = max(offset, _HEADER)  # absolute file position: the block arithmetic needs it
    while position + _HEADER <= offset + len(data):
        left_in_block = _BLOCK - position % _BLOCK
        if left_in_block < _HEADER:
            position += left_in_block
            continue
        index = position - offset
        checksum, length, kind = struct.unpack_from("<IHB", data, index)
        payload = data[index + _HEADER : index + _HEADER + length]
        if (kind == 0 and length == 0) or len(payload) < length:
            return
        if verify and zlib.crc32(payload, zlib.crc32(bytes([kind]))) & 0xFFFFFFFF != checksum:
            raise ValueError(f"checksum mismatch in the chunk at byte {position}")
        position += _HEADER + length
        if kind == _FULL:
            yield payload
        elif kind == _FIRST:
            pending = payload
        elif kind == _MIDDLE and pending is not None:
            pending += payload
        elif kind == _LAST and pending is not None:
            yield pending + payload
            pending = None
        elif kind not in (_MIDDLE, _LAST):
            raise ValueError(f"unknown chunk type {kind} at byte {position}")


def _parse(payload: bytes) -> Any:
    from wandb.proto import wandb_internal_pb2

    record = wandb_internal_pb2.Record()
    record.ParseFromString(payload)
    return record


def iter_records(path: str | Path) -> Iterator[Any]:
    """Every ``wandb_internal_pb2.Record`` in the file, in order."""
    data = Path(path).read_bytes()
    if len(data) < _HEADER:  # created, nothing written yet (wandb-core buffers the file before 0.31)
        return
    ident, magic, _version = struct.unpack_from("<4sHB", data)
    if ident != b":W&B" or magic != 0xBEE1:
        raise ValueError(f"{path} is not a W&B transaction log")
    for payload in _payloads(data):
        yield _parse(payload)


def ends_with_exit(path: str | Path) -> bool:
    """Whether the run's ``exit`` record is written; reads only the last two blocks."""
    with open(path, "rb") as file:
        size = file.seek(0, 2)
        start = max(0, (size - 1) // _BLOCK - 1) * _BLOCK
        file.seek(start)
        data = file.read()
    try:
        records = list(_payloads(data, start, verify=False))
        return bool(records) and _parse(records[-1]).WhichOneof("record_type") == "exit"
    except Exception:  # a torn record at the very end: not complete yet
        return False


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


class NextWrite:
    """``wandb-core``'s first write to the file ``after`` seconds from now or later, or ``longest`` seconds
    passed without one (the caller's bound: one whole write interval and ``after``).

    ``wandb-core`` writes everything it holds at each periodic write, in order, so a write that began
    after a record reached its writer has that record on disk. The file's size is what tells a write.
    """

    def __init__(self, path: str | Path, after: float, longest: float) -> None:
        self.path = Path(path)
        started = time.monotonic()
        self.sample_at, self.deadline = started + after, started + longest
        self._size: int | None = None
        #: whether a write was seen (False once the bound passed without one)
        self.written = False

    def done(self) -> bool:
        """Without waiting: has that write happened (or the bound passed)?"""
        now = time.monotonic()
        if now < self.sample_at:
            return False
        size = _size(self.path)
        if self._size is None:  # the size from when a write would hold the records on
            self._size = size
        elif size != self._size:
            self.written = True
            return True
        return now >= self.deadline

    def wait(self) -> bool:
        """Until ``done``, reading the size every few milliseconds: True for a write, False for the bound."""
        time.sleep(max(0.0, self.sample_at - time.monotonic()))
        while not self.done():
            time.sleep(max(0.0, min(0.005, self.deadline - time.monotonic())))
        return self.written


def wait_for_next_write(path: str | Path, after: float, longest: float) -> bool:
    """Wait for :class:`NextWrite`: on average half a write interval instead of a whole one per flush."""
    return NextWrite(path, after, longest).wait()


def wait_until_written(path: str | Path, timeout: float) -> bool:
    """Poll until the ``exit`` record is on disk (True) or ``timeout`` seconds passed (False)."""
    path = Path(path)
    deadline = time.monotonic() + timeout
    delay = 0.005
    while not (path.is_file() and ends_with_exit(path)):
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
    return True


def _put(target: dict[str, Any], item: Any) -> None:
    path = [item.key] if item.key else list(item.nested_key)
    for part in path[:-1]:
        target = target.setdefault(part, {})
    target[path[-1]] = json.loads(item.value_json)


@dataclass
class RunData:
    """What one run directory holds: history rows by step (and in record order), config, summary, artifacts."""

    directory: Path
    history: dict[int, dict[str, Any]] = field(default_factory=dict)
    rows: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # every history record, as written
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    artifacts: list[Any] = field(default_factory=list)
    run: Any = None
    record_counts: dict[str, int] = field(default_factory=dict)
    #: the run's system metrics (W&B's monitor, or the library's samples): ``(Unix time, {key: value})``
    stats: list[tuple[float, dict[str, Any]]] = field(default_factory=list)

    @property
    def files(self) -> Path:
        """Where W&B keeps media (``media/images/...``, ``media/table/...``)."""
        return self.directory / "files"

    def metrics(self) -> dict[str, dict[int, float]]:
        """``{key: {step: number}}`` of the user's numeric history (W&B's ``_step`` etc. left out)."""
        series: dict[str, dict[int, float]] = {}
        for step, row in self.history.items():
            for key, value in row.items():
                if not key.startswith("_") and isinstance(value, (int, float)) and not isinstance(value, bool):
                    series.setdefault(key, {})[step] = value
        return series

    def metric_history(self) -> dict[str, list[tuple[int, float]]]:
        """``{key: [(step, number), ...]}`` from every history record in order: a step written twice shows twice."""
        series: dict[str, list[tuple[int, float]]] = {}
        for step, row in self.rows:
            for key, value in row.items():
                if not key.startswith("_") and isinstance(value, (int, float)) and not isinstance(value, bool):
                    series.setdefault(key, []).append((step, value))
        return series

    def of_type(self, kind: type | str) -> dict[str, dict[int, Any]]:
        """``{key: {step: value}}`` of history values that are a Python ``kind`` or media ``_type``."""
        found: dict[str, dict[int, Any]] = {}
        for step, row in self.history.items():
            for key, value in row.items():
                if key.startswith("_"):
                    continue
                if isinstance(kind, type):
                    matches = isinstance(value, kind)
                else:
                    matches = isinstance(value, dict) and value.get("_type") == kind
                if matches:
                    found.setdefault(key, {})[step] = value
        return found

    def user_config(self) -> dict[str, Any]:
        """The config as the user gave it (W&B wraps values as ``{"value": ...}`` and adds ``_wandb``)."""
        return {
            key: value["value"] if isinstance(value, dict) and "value" in value else value
            for key, value in self.config.items()
            if key != "_wandb"
        }


def find_log(directory: str | Path) -> Path:
    logs = sorted(Path(directory).glob("run-*.wandb"))
    if len(logs) != 1:
        raise FileNotFoundError(f"expected one run-*.wandb in {directory}, found {[str(log) for log in logs]}")
    return logs[0]


def read_runs(directories: Sequence[str | Path]) -> RunData:
    """One run written in parts (a run resumed by later processes): the folders read oldest first and merged.

    History rows of the same step are merged key by key, a later part winning; config and summary likewise.
    """
    merged = RunData(Path(directories[-1]))
    for directory in directories:
        part = read_run(directory)
        for step, row in part.history.items():
            merged.history.setdefault(step, {}).update(row)
        merged.rows.extend(part.rows)
        merged.config.update(part.config)
        merged.summary.update(part.summary)
        merged.artifacts.extend(part.artifacts)
        merged.stats.extend(part.stats)
        merged.run = part.run
        for kind, count in part.record_counts.items():
            merged.record_counts[kind] = merged.record_counts.get(kind, 0) + count
    return merged


def read_run(directory: str | Path) -> RunData:
    """Read a run directory (``offline-run-*`` or ``run-*``) through its transaction log."""
    run = RunData(Path(directory))
    for record in iter_records(find_log(directory)):
        kind = record.WhichOneof("record_type")
        run.record_counts[kind] = run.record_counts.get(kind, 0) + 1
        if kind == "history":
            row: dict[str, Any] = {}
            for item in record.history.item:
                _put(row, item)
            run.history.setdefault(record.history.step.num, {}).update(row)
            run.rows.append((record.history.step.num, row))
        elif kind == "config":
            for item in record.config.update:
                _put(run.config, item)
        elif kind == "run":
            run.run = record.run
            for item in record.run.config.update:
                _put(run.config, item)
        elif kind == "summary":
            for item in record.summary.update:
                _put(run.summary, item)
        elif kind == "artifact":
            run.artifacts.append(record.artifact)
        elif kind == "stats":
            items = {item.key: json.loads(item.value_json) for item in record.stats.item}
            run.stats.append((record.stats.timestamp.ToNanoseconds() / 1e9, items))
    return run
