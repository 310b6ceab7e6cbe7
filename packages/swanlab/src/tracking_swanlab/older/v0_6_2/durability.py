"""Wait until what an earlier-line SwanLab run was given is in its ``backup.swanlab``, flushed and fsynced.

In SwanLab 0.6.2 to 0.7.x, ``run.log`` hands each record (and the media files it writes) to a
``ThreadPoolExecutor`` with one worker, which appends it to ``backup.swanlab`` through a buffered file
(``DataStore``); the file is flushed at ``finish()`` and after a record longer than a block. No public
call waits for that. The executor runs its tasks one at a time, in the order they were submitted, so a
task submitted now runs after every record logged before it: that task flushes and fsyncs the file, on
SwanLab's own writer thread, and this module waits for it.

The writer is found, feature-detected, where the release keeps it: the process's ``DataPorter``
(``swanlab.data.porter``, 0.6.5 on: ``_executor``, ``_f``) or, before, the ``BackupHandler`` of the
run's callback (``executor``, ``f``). A release with neither makes :func:`wait_until_written` return
``False``.
"""

from __future__ import annotations

import os
from typing import Any

#: How long a flush waits for the writer thread (large media may take a while to write).
DEFAULT_TIMEOUT = 60.0


def _porter_writer() -> tuple[Any, Any] | None:
    try:
        from swanlab.data.porter import DataPorter
    except ImportError:
        return None
    porter = getattr(DataPorter, "_instance", None)
    if porter is None or getattr(porter, "_f", None) is None:
        return None
    return getattr(porter, "_executor", None), porter._f


def _handler_writer(run: Any) -> tuple[Any, Any] | None:
    operator = getattr(run, "_SwanLabRun__operator", None)
    callbacks = getattr(operator, "callbacks", None) or {}
    for callback in callbacks.values() if isinstance(callbacks, dict) else callbacks:
        handler = getattr(callback, "backup", None)
        if handler is not None and getattr(handler, "enable", False) and getattr(handler, "f", None) is not None:
            return getattr(handler, "executor", None), handler.f
    return None


def writer_of(run: Any) -> tuple[Any, Any] | None:
    """``(executor or None, DataStore)`` of the run's backup writer, or ``None`` when this release has none known."""
    return _porter_writer() or _handler_writer(run)


def _flush(store: Any) -> None:
    handle = getattr(store, "_fp", None)
    if handle is None or handle.closed:  # finished: closing flushed it
        return
    handle.flush()
    os.fsync(handle.fileno())


def wait_until_written(run: Any, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """Return once every record logged before this call is in ``backup.swanlab`` (flushed, fsynced);
    ``False`` when this release's writer is not one this module knows.

    Raises ``TimeoutError`` when the writer thread does not get there within ``timeout`` seconds.
    """
    found = writer_of(run)
    if found is None:
        return False
    executor, store = found
    if executor is None or getattr(executor, "_shutdown", False):
        _flush(store)  # writes happen in the calling thread: nothing is queued
        return True
    done = executor.submit(_flush, store)
    try:
        done.result(timeout=timeout)
    except TimeoutError as error:
        raise TimeoutError(f"SwanLab's writer thread did not write the records within {timeout:.0f} s") from error
    return True
