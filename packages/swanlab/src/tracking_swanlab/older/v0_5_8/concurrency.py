"""One process at a time writes a local store: the ranks of a per-rank job share ``<logging_dir>/swanlog``.

swanboard checks and then creates (the project, an experiment's place in the project, the project's charts
of a new column), so two processes starting or logging a new key at once collide in its SQLite
database: ``UNIQUE constraint failed: project.name``, ``ExistedError`` for a chart (seen with two ranks of
SwanLab 0.6.0 and 0.6.1), or an experiment renamed for a place another process took. An inter-process
lock on ``<logdir>/runs.swanlab.lock`` is held around ``swanlab.init``, every ``log`` and the run's
finish: the whole of each of them happens with the store to itself (a lock costs an ``open`` and a
``flock``, on the backend's worker).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from tracking_core.kit import file_lock

from . import DATABASE

#: The lock file, beside the database it guards.
LOCK = f"{DATABASE}.lock"


def log_dir_for_init(logdir: str | None) -> Path:
    """The folder ``swanlab.init`` will write into: its ``logdir``, else ``SWANLAB_LOG_DIR``, else ``./swanlog``."""
    return Path(logdir or os.environ.get("SWANLAB_LOG_DIR") or Path.cwd() / "swanlog").absolute()


@contextlib.contextmanager
def store_lock(log_dir: Path) -> Iterator[None]:
    """Hold the store's lock. A folder made here gets the ``.gitignore`` SwanLab writes into a new (empty) log
    folder, which the lock file would otherwise keep it from writing."""
    if not log_dir.is_dir() or not any(log_dir.iterdir()):
        log_dir.mkdir(parents=True, exist_ok=True)
        (log_dir / ".gitignore").write_text("*", encoding="utf-8")
    with file_lock(log_dir / LOCK):
        yield
