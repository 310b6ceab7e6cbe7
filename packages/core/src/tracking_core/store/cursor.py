"""``.cursor-<backend>``: the file that says how far one backend got, rewritten in place at every delivery."""

from __future__ import annotations

import os
from pathlib import Path

#: The positions of a backend that took nothing yet: (seq, step, handed seq, handed step).
NOWHERE = (-1, -1, -1, -1)


class CursorFile:
    """``.cursor-<backend>`` in the run folder: how far the backend got, rewritten in place at every delivery.

    Two positions, each a ``seq`` and a step: what the backend holds durably (its cursor), and the
    furthest record it took (a call returned; an SDK that buffers may or may not have written it).
    ``run.json`` is rewritten at most once a second per backend; this file costs one ``pwrite`` per
    delivered batch, so after a kill a resumed run starts after everything any backend may hold
    (no step is logged twice) and catches up on everything past the durable cursor. The fixed-width
    line is rewritten at offset 0, so it never grows.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)

    def write(self, seq: int, step: int, handed_seq: int, handed_step: int) -> None:
        os.pwrite(self._fd, b"%20d %20d %20d %20d\n" % (seq, step, handed_seq, handed_step), 0)

    def close(self) -> None:
        os.close(self._fd)

    @staticmethod
    def read(path: Path) -> tuple[int, int, int, int] | None:
        """``(seq, step, handed seq, handed step)``, or ``None`` when there is no readable file.

        An empty file is a backend that ran in this run and took nothing yet: every position is -1.
        """
        try:
            fields = path.read_bytes().split()
            seq, step, handed_seq, handed_step = (int(field) for field in fields) if fields else NOWHERE
        except (OSError, ValueError):
            return None
        return seq, step, handed_seq, handed_step


def cursor_name(backend: str) -> str:
    return f".cursor-{backend}"
