"""tracking-core: one API that sends a training run's metrics, config and media to many trackers.

``import tracking_core`` is cheap: no third-party imports, and the dispatcher machinery loads on
first use (PEP 562), so a framework can import the contract without paying for the rest.
Backends are found through the ``tracking.backends`` entry points and imported only when a run
uses them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .__about__ import __version__
from .contract.distributed import get_rank, get_world_size, is_main_process
from .contract.histogram import Histogram
from .contract.registry import LoggerType, get_available_trackers, register_tracker_class
from .contract.tracker import (
    CAPABILITIES,
    GeneralTracker,
    RunContext,
    RunEnd,
    capabilities_of,
    has_capability,
    on_main_process,
)
from .errors import BackendNotInstalledError, PartialDelivery, TrackingError, TrackingWarning

if TYPE_CHECKING:
    from .backends.jsonl import JsonlTracker
    from .contract.noop import NoOpTracker
    from .intake.config import flatten_config, sanitize_config, stringify
    from .notices import notice, warn_once
    from .report import BackendReport, FinishReport
    from .run.dispatcher import Dispatcher, init

#: public name -> the module (relative to ``tracking_core``) it is loaded from on first use
_LAZY = {
    "Dispatcher": "run.dispatcher",
    "init": "run.dispatcher",
    "JsonlTracker": "backends.jsonl",
    "NoOpTracker": "contract.noop",
    "BackendReport": "report",
    "FinishReport": "report",
    "flatten_config": "intake.config",
    "sanitize_config": "intake.config",
    "stringify": "intake.config",
    "notice": "notices",
    "warn_once": "notices",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tracking_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "CAPABILITIES",
    "BackendNotInstalledError",
    "BackendReport",
    "Dispatcher",
    "FinishReport",
    "GeneralTracker",
    "Histogram",
    "JsonlTracker",
    "LoggerType",
    "NoOpTracker",
    "PartialDelivery",
    "RunContext",
    "RunEnd",
    "TrackingError",
    "TrackingWarning",
    "__version__",
    "capabilities_of",
    "flatten_config",
    "get_available_trackers",
    "get_rank",
    "get_world_size",
    "has_capability",
    "init",
    "is_main_process",
    "notice",
    "on_main_process",
    "register_tracker_class",
    "sanitize_config",
    "stringify",
    "warn_once",
]
