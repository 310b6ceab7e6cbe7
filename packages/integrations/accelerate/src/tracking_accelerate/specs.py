"""``log_with`` as accelerate takes it, turned into what ``tracking_core.Dispatcher`` takes.

tracking's names and tracker objects pass through. accelerate's ``LoggerType`` members become their
names. accelerate's tracker objects, and names only accelerate knows (classes registered with
``accelerate.tracking.register_tracker_class``; ``"dvclive"`` when ``tracking-dvclive`` is not installed),
are wrapped (see :mod:`.foreign`).
"""

from __future__ import annotations

import enum
from typing import Any

from tracking_core import GeneralTracker, LoggerType, get_available_trackers
from tracking_core.contract.registry import installed_entry_points

from .foreign import AccelerateTracker, adapter_class


def _items(log_with: Any) -> list[Any]:
    if log_with is None:
        return []
    if isinstance(log_with, (list, tuple)):
        return list(log_with)
    return [log_with]


#: Built-in names whose tracking package is optional here: without it, accelerate's own tracker is wrapped
#: (as before tracking had the backend) instead of the run failing on a missing package.
_ACCELERATE_WHEN_NOT_INSTALLED = ("dvclive",)


def _accelerate_class(name: str) -> type | None:
    """accelerate's tracker class for a name tracking does not know, else None (tracking's own wins)."""
    if name in get_available_trackers():
        return None
    if name in LoggerType.list() and (name not in _ACCELERATE_WHEN_NOT_INSTALLED or name in installed_entry_points()):
        return None
    from accelerate.tracking import LOGGER_TYPE_TO_CLASS

    found: type | None = LOGGER_TYPE_TO_CLASS.get(name)
    return found


def tracking_specs(log_with: Any) -> list[Any]:
    """The trackers for a ``Dispatcher``; empty when ``log_with`` is None (no tracking, as in accelerate)."""
    from accelerate.tracking import GeneralTracker as AccelerateGeneralTracker

    specs: list[Any] = []
    for item in _items(log_with):
        if isinstance(item, GeneralTracker):
            specs.append(item)
        elif isinstance(item, AccelerateGeneralTracker):
            specs.append(AccelerateTracker(item))
        elif isinstance(item, type) and issubclass(item, AccelerateGeneralTracker):
            specs.append(adapter_class(item))
        else:
            name = str(item.value) if isinstance(item, enum.Enum) else item
            foreign = _accelerate_class(name) if isinstance(name, str) else None
            specs.append(adapter_class(foreign) if foreign is not None else name)
    return specs
