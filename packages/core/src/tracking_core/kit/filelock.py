"""An inter-process lock on a file, for backends whose embedded store two ranks may create at once.

In per-rank mode every rank of a job starts its tracker at the same moment, in the same
``logging_dir``: two processes creating one fresh SQLite store (MLflow's schema migrations) or one
Aim repo race and one of them fails. Holding this lock while the store is opened lets the first
create it and the others find it complete. POSIX ``flock``; on Windows ``msvcrt.locking``.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["file_lock"]


@contextlib.contextmanager
def file_lock(path: str | os.PathLike[str], timeout: float = 120.0) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the ``with`` block.

    Waits at most ``timeout`` seconds, then goes on without the lock (the store's own error, if
    any, is then what the caller sees), so a stale holder never blocks a run for good.
    """
    lock_path = Path(path)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    locked = False
    try:
        deadline = time.monotonic() + timeout
        while not locked:
            locked = _try_lock(descriptor)
            if not locked:
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.05)
        yield
    finally:
        if locked:
            _unlock(descriptor)
        os.close(descriptor)


def _try_lock(descriptor: int) -> bool:
    try:
        if os.name == "nt":
            import msvcrt

            msvcrt.locking(descriptor, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]  # typeshed: Windows only
        else:
            import fcntl

            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _unlock(descriptor: int) -> None:
    if os.name == "nt":
        import msvcrt

        os.lseek(descriptor, 0, os.SEEK_SET)
        msvcrt.locking(descriptor, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]  # typeshed: Windows only
    else:
        import fcntl

        fcntl.flock(descriptor, fcntl.LOCK_UN)
