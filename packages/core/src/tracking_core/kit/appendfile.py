"""``AppendFile``: an append-only file whose ``flush`` stores all of its pending bytes or none.

A backend may count a record as delivered only once its bytes are in the file. Python's buffered
files leave a half-written tail behind when the disk fills up mid-flush, and keep writing happily
into a file whose folder was deleted; both would make the finish report claim records that are not
there, or store a record twice once it is spilled and replayed. Here a failed flush cuts the file
back to its last good size and raises, and a flush into a deleted file raises.
"""

from __future__ import annotations

import os
from pathlib import Path


class AppendFile:
    """Bytes are kept in memory until ``flush()``; thread safety is the caller's."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._size = os.fstat(self._fd).st_size
        self._pending: list[bytes] = []
        self.closed = False

    @property
    def size(self) -> int:
        """Bytes stored by successful flushes."""
        return self._size

    def write(self, data: bytes | str) -> int:
        if self.closed:
            raise ValueError(f"write to closed file {self.path}")
        if isinstance(data, str):
            data = data.encode("utf-8")
        self._pending.append(data)
        return len(data)

    def discard(self) -> None:
        """Forget what was written since the last flush."""
        self._pending.clear()

    def flush(self, durable: bool = False) -> None:
        """Store the pending bytes (and fsync when ``durable``); on failure none of them stay."""
        if self.closed:
            return
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError:
                self._cut_back()
                raise
            self._size += len(data)
        if os.fstat(self._fd).st_nlink == 0:
            raise FileNotFoundError(f"{self.path} was deleted while the run was writing to it")
        if durable:
            os.fsync(self._fd)

    def _cut_back(self) -> None:
        try:
            os.ftruncate(self._fd, self._size)
        except OSError:  # pragma: no cover - nothing more can be done; the reader skips a torn line
            pass

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        if self.closed:
            return
        try:
            self.flush(durable=True)
        finally:
            self.closed = True
            os.close(self._fd)
