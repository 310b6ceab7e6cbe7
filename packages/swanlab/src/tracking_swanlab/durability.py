"""Wait until what a SwanLab run was given is in its run file, where a killed process cannot lose it.

SwanLab's ``run.log`` only puts an event on a queue. One background thread (``SwanLab·Specter``, the
run's ``BackgroundConsumer``) takes the events in order, gathers the records in a batch (written when
it holds 100, or after 0.5 s without a new event) and writes them to ``run-<id>.swanlab`` through a
buffered file, which SwanLab 0.10 flushes only at ``finish()`` (0.8 flushes after each write). No
public API waits for any of this (checked in 0.8.0 and 0.10.3), so this module hands the consumer thread a
marker through the same queue: when the thread reaches it, every earlier event has been handled; it
then writes its batch, flushes and fsyncs the file, and signals. Everything happens on SwanLab's own
thread, in queue order, so no SwanLab state is touched from two threads.

The private parts used (feature-detected; a release without them makes :func:`wait_until_written`
return ``False``): ``run._components.consumer`` with ``_queue``, ``_thread``, ``_handle_event``,
``_flush`` and ``_batch_empty``, and the core's ``_store`` writer with ``ensure_flushed`` (and ``_fp``).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

#: How long a flush waits for the consumer thread before it reports failure (a batch of large media
#: may take a while to write; a stuck or dead thread must not hold the delivery worker forever).
DEFAULT_TIMEOUT = 60.0
_POLL = 0.5
_INSTALLED = "_tracking_marker_hook"


class _Marker:
    """Put on SwanLab's event queue; the consumer thread sets ``done`` once it wrote everything before it."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None


def _consumer_of(run: Any) -> Any:
    components = getattr(run, "_components", None)
    consumer = getattr(components, "consumer", None) if components is not None else None
    needed = ("_queue", "_thread", "_handle_event", "_flush", "_batch_empty", "_core")
    if consumer is None or not all(hasattr(consumer, name) for name in needed):
        return None
    if not hasattr(consumer._core, "_store"):
        return None
    return consumer


def supported(run: Any) -> bool:
    """Whether this SwanLab release's writer can be waited for."""
    return _consumer_of(run) is not None


def _flush_store(core: Any) -> None:
    store = core._store
    if store is None:  # finished, or no local store
        return
    store.ensure_flushed()
    handle = getattr(store, "_fp", None)
    if handle is not None:
        os.fsync(handle.fileno())


def _install(consumer: Any) -> None:
    """Let the consumer thread recognise markers (idempotent; every other event goes on as before)."""
    if getattr(consumer, _INSTALLED, False):
        return
    handle_event = consumer._handle_event

    def handle(event: Any) -> None:
        if not isinstance(event, _Marker):
            handle_event(event)
            return
        try:
            consumer._flush()  # SwanLab's own batch write; it keeps the batch when the core fails
            if not consumer._batch_empty:
                raise OSError("SwanLab could not write its batch of records (see SwanLab's debug log)")
            _flush_store(consumer._core)
        except BaseException as error:
            event.error = error
        finally:
            event.done.set()

    consumer._handle_event = handle
    setattr(consumer, _INSTALLED, True)


def wait_until_written(run: Any, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """Return once everything ``run.log`` was given before this call is in the run file (flushed and
    fsynced); ``False`` when this SwanLab release has no consumer thread this module knows.

    Raises ``TimeoutError`` when SwanLab's thread does not get there within ``timeout`` seconds (or has
    ended), and the write's own error when it failed.
    """
    consumer = _consumer_of(run)
    if consumer is None:
        return False
    thread = consumer._thread
    if not thread.is_alive():
        raise TimeoutError("SwanLab's writer thread is not running; the run may have finished")
    _install(consumer)
    marker = _Marker()
    deadline = time.monotonic() + timeout
    consumer._queue.put(marker, timeout=timeout)
    while not marker.done.wait(min(_POLL, max(deadline - time.monotonic(), 0.0))):
        if not thread.is_alive():
            raise TimeoutError("SwanLab's writer thread ended before it wrote the records")
        if time.monotonic() >= deadline:
            raise TimeoutError(f"SwanLab's writer thread did not write the records within {timeout:.0f} s")
    if marker.error is not None:
        raise marker.error
    return True
