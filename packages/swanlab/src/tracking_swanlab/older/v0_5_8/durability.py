"""A flush for SwanLab's local mode: fsync what its callback wrote since the last one.

In SwanLab 0.5.8 to 0.6.1 local mode, ``run.log`` writes each point before it returns, in the calling
thread: the local callback's ``on_metric_create`` appends the point's JSON line to
``logs/<column>/<n>.log`` (and rewrites ``_summary.json``, and writes a media file) and closes each file;
swanboard commits the column's rows to ``runs.swanlab`` (SQLite, each commit synced). A killed process
therefore loses nothing ``log`` returned from; what is left for a durable flush is that the files reach
the disk. :class:`WrittenFiles` wraps the callback's ``on_metric_create`` (an instance attribute, which
SwanLab's operator calls by name) to note the paths it wrote, and :meth:`~WrittenFiles.sync` fsyncs them
and their folders. A release whose callback has no such method makes :func:`written_files` return ``None``.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any


def _local_callback(run: Any) -> Any:
    """SwanLab's local-mode callback of ``run`` (the one holding swanboard's ``board``), or ``None``."""
    operator = getattr(run, "_SwanLabRun__operator", None)
    callbacks = getattr(operator, "callbacks", None) or {}
    for callback in callbacks.values() if isinstance(callbacks, dict) else callbacks:
        if hasattr(callback, "board") and callable(getattr(callback, "on_metric_create", None)):
            return callback
    return None


def _paths(metric: Any) -> list[str]:
    """The files ``on_metric_create`` wrote for ``metric`` (none for an error or a system column)."""
    column = getattr(metric, "column_info", None)
    if getattr(metric, "error", None) or getattr(column, "cls", None) != "CUSTOM":
        return []
    paths = [path for path in (metric.metric_file_path, metric.summary_file_path) if path]
    media_dir, names = getattr(metric, "swanlab_media_dir", None), (metric.metric or {}).get("data")
    for index, buffer in enumerate(getattr(metric, "metric_buffers", None) or []):
        if buffer is not None and media_dir and column is not None and isinstance(names, list):
            paths.append(os.path.join(media_dir, column.kid, names[index]))
    return paths


class WrittenFiles:
    """The files SwanLab's local callback wrote since the last :meth:`sync`."""

    def __init__(self, callback: Any) -> None:
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        write = callback.on_metric_create

        def on_metric_create(metric: Any, *args: Any, **kwargs: Any) -> Any:
            result = write(metric, *args, **kwargs)
            paths = _paths(metric)
            with self._lock:
                self._pending.update(paths)
            return result

        callback.on_metric_create = on_metric_create

    def sync(self) -> None:
        """fsync every file written since the last call, and the folders that hold them (new names)."""
        with self._lock:
            pending, self._pending = self._pending, set()
        folders = {str(Path(path).parent) for path in pending}
        for path in [*sorted(pending), *sorted(folders)]:
            try:
                descriptor = os.open(path, os.O_RDONLY)
            except FileNotFoundError:  # a summary SwanLab replaced meanwhile, a folder the user removed
                continue
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)


def written_files(run: Any) -> WrittenFiles | None:
    """Start noting what ``run``'s local callback writes; ``None`` when this release's callback is not one known."""
    callback = _local_callback(run)
    return WrittenFiles(callback) if callback is not None else None
