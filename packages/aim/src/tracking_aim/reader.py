"""A closed run's series, images and end read back through Aim's own reader (``aim.Repo``), for tests and tools.

Aim's reader sees a closed run only once the repo's index has it (``aim up`` indexes in the background), so
a local run is indexed first, as ``aim storage reindex`` would.
"""

from __future__ import annotations

import logging
from typing import Any

from .sdk import index_run, load_sdk
from .system import SYSTEM_PREFIX, sample_key


def _stored_run(location: str, run_hash: str) -> Any:
    if "://" not in location:
        index_run(location, run_hash)
    run = load_sdk().Repo(location).get_run(run_hash)
    if run is None:
        raise LookupError(f"aim: run {run_hash} is not in the repo {location}")
    return run


def series(location: str, run_hash: str, system: bool) -> dict[str, list[tuple[int, Any]]]:
    """The run's metric series by step (``"<name> <context dict>"`` for a context): Aim's ``__system__*``
    series when ``system``, every other one otherwise."""
    history: dict[str, list[tuple[int, Any]]] = {}
    for metric in _stored_run(location, run_hash).metrics():
        if metric.name.startswith(SYSTEM_PREFIX) != system:
            continue
        context = metric.context.to_dict()
        steps, (values, _epochs, _times) = metric.data.items_list()
        name = f"{metric.name} {context}" if context else metric.name
        history[name] = [(int(step), value) for step, value in zip(steps, values)]
    return history


def system_series(location: str, run_hash: str) -> dict[str, list[tuple[int, float]]]:
    """The run's ``__system__*`` series by step, under the ``system/...`` names they were logged under."""
    system: dict[str, list[tuple[int, float]]] = {}
    for metric in _stored_run(location, run_hash).metrics():
        if metric.name.startswith(SYSTEM_PREFIX):
            steps, (values, _epochs, _times) = metric.data.items_list()
            key = sample_key(metric.name, metric.context.to_dict())
            system.setdefault(key, []).extend((int(step), value) for step, value in zip(steps, values))
    return system


def images(location: str, run_hash: str) -> dict[str, list[tuple[int, Any]]]:
    """Every image of the run, per sequence, as ``(step, HW or HWC uint8 array)``, a step's list in order."""
    import numpy as np

    run = _stored_run(location, run_hash)
    found: dict[str, list[tuple[int, Any]]] = {}
    for name, context, _run in run.iter_sequence_info_by_type(("aim.image", "list(aim.image)")):
        sequence = run.get_image_sequence(name, context)
        key = f"{name} {context.to_dict()}" if context.to_dict() else name
        steps, (values, *_rest) = sequence.data.items_list()
        for step, value in zip(steps, values):
            for image in value if isinstance(value, list) else [value]:
                found.setdefault(key, []).append((int(step), np.asarray(image.to_pil_image())))
    return found


#: The check-ins Aim's run-status watcher tells a run's state by (the newest of them counts).
_STATUS_CHECK_INS = ("starting", "check_in", "finished")


def run_end(location: str, run_hash: str) -> dict[str, Any]:
    """How Aim keeps the run's end (:mod:`tracking_aim.run_end`): ``status`` -- the newest of the check-ins
    Aim's run-status watcher reads (``"finished"`` once the run reported its successful finish; ``None``
    on a remote repo, whose check-ins are the server's); ``errors`` -- the run's error messages (Aim's
    log records at ERROR); ``active``, ``created`` and ``ended`` -- Aim's ``Run.active``,
    ``creation_time`` and ``end_time`` (Unix seconds)."""
    run = _stored_run(location, run_hash)
    status = None
    if "://" not in location:
        from aim.sdk.reporter import CheckIn
        from aim.sdk.reporter.file_manager import LocalFileManager

        files = LocalFileManager(run.repo.path)
        newest: dict[str, int] = {}
        for flag in _STATUS_CHECK_INS:
            name = files.poll(CheckIn.generate_filename(run_hash=run_hash, flag_name=flag))
            if name is not None:
                newest[flag] = CheckIn.parse(name)[1].idx
        status = max(newest, key=newest.__getitem__) if newest else None
    errors: list[str] = []
    records = run.get_log_records()
    if records is not None:
        _steps, (values, *_rest) = records.data.items_list()
        errors = [record.message for record in values if record.level >= logging.ERROR]
    return {
        "status": status,
        "errors": errors,
        "active": run.active,
        "created": run.creation_time,
        "ended": run.end_time,
    }
