"""One process at a time: an exclusive lock on a file, for backends whose SDK creates a shared store unsafely.

In per-rank mode every rank of a job opens the same local store (MLflow's sqlite file, an Aim repo) at
the same moment; SDKs create and migrate a missing store without guarding against another process doing
the same. A backend holds :func:`exclusive` around that first opening. POSIX ``flock`` (released by the
kernel if the holder dies); where it does not exist the lock is a no-op.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


@contextmanager
def exclusive(path: str | os.PathLike, timeout: float = 120.0) -> Iterator[bool]:
    """Hold an exclusive lock on ``path`` (created if missing); yields whether the lock is held.

    After ``timeout`` seconds of waiting the body runs without the lock (``False``): a stuck holder must
    not stop the run, and the SDK's own error is then what the report shows.
    """
    if fcntl is None:
        yield False
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        held = False
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
                break
            except OSError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.05)
        try:
            yield held
        finally:
            if held:
                fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)
