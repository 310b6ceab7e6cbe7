"""W&B's ``run-<id>.wandb`` transaction log, record by record (wandb >= 0.31 ships no reader for it in Python).

The file is what ``wandb sync`` uploads and the only complete local record of an offline run. Its
format: a 7-byte header (``b":W&B"``, magic ``0xBEE1``, a version byte), then LevelDB-log framing --
32 KiB blocks of chunks, each ``crc32 (uint32) | length (uint16) | type (uint8) | payload``, type 1 a
whole record and 2/3/4 its first/middle/last parts, a block tail under 7 bytes zero-padded -- around
serialized ``wandb.proto.wandb_internal_pb2.Record`` messages. The run's ``exit`` record is the last
one ``wandb-core`` writes.

One reader of that framing serves every caller, one 32 KiB block in memory at a time, in one of two ways:

* a file that may still be written (the read-back of :mod:`tracking_wandb.reader`, :func:`ends_with_exit`):
  it ends quietly at a record not completely written yet;
* ``strict`` (the importer): a file that must be whole -- a torn record, stray bytes or an unexpected
  chunk raise :class:`Damaged`, so an import never passes a damaged file off as whole.

A chunk whose checksum does not match raises :class:`Damaged` either way.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

BLOCK = 32 * 1024
HEADER = 7  # the file header and every chunk header are 7 bytes
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


class NotALog(ValueError):
    """The file does not start with the transaction log's header."""


class Damaged(ValueError):
    """The file stops being a transaction log at ``position`` (a byte offset)."""

    def __init__(self, position: int, message: str) -> None:
        super().__init__(f"{message} at byte {position}")
        self.position = position


def payloads(file: BinaryIO, start: int = 0, *, strict: bool = False, verify: bool = True) -> Iterator[bytes]:
    """The serialized records of the open log from ``start`` (a block boundary; 0 skips the file header) on.

    Parts of a record that began before ``start`` are skipped. Without ``strict`` the records end quietly
    where the file stops being whole (a record still being written); with it, that is :class:`Damaged`.
    ``verify`` checks each chunk's checksum.
    """
    file.seek(start)
    block_start, block = start, file.read(BLOCK)
    position = HEADER if start == 0 else 0  # within the block
    pending: bytes | None = None
    while True:
        if BLOCK - position < HEADER or position >= len(block):
            if len(block) < BLOCK:  # the last block
                if strict and pending is not None:
                    raise Damaged(block_start + position, "the file ends inside a record")
                if strict and any(block[position:]):
                    raise Damaged(block_start + position, "stray bytes after the last record")
                return
            block_start += BLOCK
            block, position = file.read(BLOCK), 0
            if not block:
                if strict and pending is not None:
                    raise Damaged(block_start, "the file ends inside a record")
                return
            continue
        if position + HEADER > len(block):
            if strict:
                raise Damaged(block_start + position, "the file ends inside a chunk header")
            return
        checksum, length, kind = struct.unpack_from("<IHB", block, position)
        if kind == 0 and length == 0:  # zero padding: nothing written after here
            if strict and any(block[position:]):
                raise Damaged(block_start + position, "data after zero padding")
            if strict and pending is not None:
                raise Damaged(block_start + position, "the file ends inside a record")
            return
        payload = block[position + HEADER : position + HEADER + length]
        if len(payload) < length:
            if strict:
                raise Damaged(block_start + position, "the file ends inside a record")
            return
        if verify and zlib.crc32(payload, zlib.crc32(bytes([kind]))) & 0xFFFFFFFF != checksum:
            raise Damaged(block_start + position, "checksum mismatch")
        position += HEADER + length
        if kind == _FULL:
            yield payload
        elif kind == _FIRST:
            pending = payload
        elif kind == _MIDDLE and pending is not None:
            pending += payload
        elif kind == _LAST and pending is not None:
            yield pending + payload
            pending = None
        elif strict or kind not in (_MIDDLE, _LAST):  # leniently, the rest of a record begun before ``start``
            raise Damaged(block_start + position, f"unexpected chunk type {kind}")


def parse(payload: bytes) -> Any:
    """One serialized record as W&B's own ``wandb_internal_pb2.Record``."""
    from wandb.proto import wandb_internal_pb2

    record = wandb_internal_pb2.Record()
    record.ParseFromString(payload)
    return record


def iter_records(path: str | Path, *, strict: bool = False) -> Iterator[Any]:
    """Every ``wandb_internal_pb2.Record`` in the file, in order (``strict``: see :func:`payloads`).

    An empty file -- created, nothing written yet (``wandb-core`` buffers it before 0.31) -- holds none;
    so does, unless ``strict``, a file shorter than its header.
    """
    with open(path, "rb") as file:
        head = file.read(HEADER)
        if not head or (len(head) < HEADER and not strict):
            return
        if len(head) < HEADER or struct.unpack_from("<4sH", head) != (b":W&B", 0xBEE1):
            raise NotALog(f"{path} is not a W&B transaction log (no :W&B header)")
        for payload in payloads(file, strict=strict):
            try:
                record = parse(payload)
            except Exception as error:  # a payload whose checksum matched yet is no Record
                if not strict:
                    raise
                raise Damaged(0, f"a record that does not parse ({error})") from error
            yield record


def ends_with_exit(path: str | Path) -> bool:
    """Whether the run's ``exit`` record is written; reads only the last two blocks."""
    with open(path, "rb") as file:
        size = file.seek(0, 2)
        start = max(0, (size - 1) // BLOCK - 1) * BLOCK
        try:
            records = list(payloads(file, start, verify=False))
            return bool(records) and parse(records[-1]).WhichOneof("record_type") == "exit"
        except Exception:  # a torn record at the very end: not complete yet
            return False


def put_item(target: dict[str, Any], item: Any) -> None:
    """A record's ``key``/``nested_key`` item (config, summary, history) decoded into ``target``."""
    path = [item.key] if item.key else list(item.nested_key)
    for part in path[:-1]:
        target = target.setdefault(part, {})
    target[path[-1]] = json.loads(item.value_json)
