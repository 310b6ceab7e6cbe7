"""Comet's offline archive as this backend writes it: its name, salvaging a killed process's data, draining the streamer.

An offline experiment is a zip (``experiment.json`` + ``messages.json``, one JSON message per line, + the
uploaded files) that Comet writes at ``end()`` from its temporary folder; :mod:`tracking_comet_ml.reader`
reads it back.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tracking_core.kit import logger


def archive_name(experiment: Any) -> str | None:
    try:
        name: str | None = experiment._get_offline_archive_file_name()
        return name
    except Exception:  # internal name changed: the killed process's data cannot be archived under its name
        return None


def archive_abandoned_data(comet_ml: Any, saved: dict[str, Any], directory: Path) -> Path | None:
    """Archive what a killed process left in Comet's temporary folder, as Comet's ``end()`` would have.

    Returns the archive written, or None when there is nothing to recover (the process ended normally, or
    the temporary folder is gone, e.g. after a reboot).
    """
    data_dir, name = saved.get("data_dir"), saved.get("archive_name")
    if not data_dir or not name or not (Path(data_dir) / "messages.json").is_file():
        return None
    from comet_ml.offline_utils import create_experiment_archive, write_experiment_meta_file
    from comet_ml.utils import local_timestamp

    write_experiment_meta_file(
        tempdir=data_dir,
        experiment_key=saved["experiment_key"],
        workspace=saved.get("workspace"),
        project_name=saved.get("project_name"),
        start_time=saved.get("start_time"),
        stop_time=local_timestamp(),
        tags=[],
        resume_strategy=saved.get("resume_strategy") or "get_or_create",
        comet_start_sourced=True,
    )
    directory.mkdir(parents=True, exist_ok=True)
    archive, _ = create_experiment_archive(
        offline_directory=os.fspath(directory), offline_archive_file_name=name, data_dir=data_dir, logger=logger
    )
    import shutil

    shutil.rmtree(data_dir, ignore_errors=True)  # as end() does: the archive now holds it
    return Path(archive)


def drain_offline_streamer(experiment: Any, timeout: float = 10.0) -> None:
    """Wait until Comet's offline streamer wrote every queued message to its ``messages.json``.

    Comet's offline ``flush()`` returns at once; its streamer thread writes (and flushes) each message to the
    experiment's temporary folder, so once the queue is empty and the message in hand is written, what was
    logged survives a kill of the process (see :func:`archive_abandoned_data`).
    """
    import time

    streamer = getattr(experiment, "streamer", None)
    queue = getattr(streamer, "messages", None)
    if queue is None:
        return
    deadline = time.monotonic() + timeout
    while not queue.empty() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # a message taken off the queue is written under the lock below
    lock = getattr(streamer, "__write_lock__", None)
    if lock is not None:
        with lock:  # held while a message is written
            pass
