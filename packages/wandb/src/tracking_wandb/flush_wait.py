"""Waiting for ``wandb-core``'s writes to the run's transaction log: its next periodic write, or the run's end.

``wandb-core`` writes the ``.wandb`` file on its own schedule (``x_transaction_log_flush_interval``), and
``run.finish()`` can return before the file holds the last records. :meth:`WandBTracker.flush` waits
for :class:`NextWrite`, :meth:`WandBTracker.finish` for :func:`wait_until_written`.
"""

from __future__ import annotations

import time
from pathlib import Path

from .transaction_log import ends_with_exit


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
