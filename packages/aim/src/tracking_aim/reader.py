"""A closed run's series and images read back through Aim's own reader (``aim.Repo``), for tests and tools.

Aim's reader sees a closed run only once the repo's index has it (``aim up`` indexes in the background), so
a local run is indexed first, as ``aim storage reindex`` would.
"""

from __future__ import annotations

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
