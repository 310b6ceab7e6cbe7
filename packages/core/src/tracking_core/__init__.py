"""tracking-core: one API that sends a training run's metrics, config and media to many trackers.

``import tracking_core`` is cheap (no third-party imports); backends are found through the
``tracking.backends`` entry points and imported only when a run uses them.
"""

from .__about__ import __version__
from .config import flatten_config, sanitize_config, stringify
from .dispatcher import Dispatcher, init
from .distributed import get_rank, get_world_size, is_main_process
from .errors import BackendNotInstalledError, TrackingError, TrackingWarning
from .jsonl import JsonlTracker
from .noop import NoOpTracker
from .notices import notice, warn_once
from .registry import LoggerType, get_available_trackers, register_tracker_class
from .report import BackendReport, FinishReport
from .tracker import CAPABILITIES, GeneralTracker, capabilities_of, has_capability, on_main_process

__all__ = [
    "CAPABILITIES",
    "BackendNotInstalledError",
    "BackendReport",
    "Dispatcher",
    "FinishReport",
    "GeneralTracker",
    "JsonlTracker",
    "LoggerType",
    "NoOpTracker",
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
