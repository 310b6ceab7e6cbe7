"""Which tracker classes exist: installed packages (entry points) plus classes registered at runtime.

Listing names reads package metadata only; a backend module is imported when its class is asked for.
"""

from __future__ import annotations

import enum
import threading
import warnings
from typing import TYPE_CHECKING

from ..errors import BackendNotInstalledError
from .builtins import BUILT_INS, BY_NAME

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint
    from pathlib import Path

    from .tracker import GeneralTracker

ENTRY_POINT_GROUP = "tracking.backends"
#: the entry points the project's own packages declare: resolving a built-in name imports its module
#: directly instead of reading the metadata of every installed distribution (~40 ms at start-up)
BUILT_IN_CLASSES = {row.name: row.entry_point for row in BUILT_INS}  # tracking_core/contract/builtins.py


class LoggerType(str, enum.Enum):
    """Names of the built-in backends; ``ALL`` selects every available tracker.

    Spelled out for type checkers and editors (``LoggerType.MLFLOW``, as in accelerate); a test
    keeps it equal to the table in ``tracking_core/contract/builtins.py``.
    """

    ALL = "all"
    JSONL = "jsonl"
    TENSORBOARD = "tensorboard"
    WANDB = "wandb"
    TRACKIO = "trackio"
    COMETML = "comet_ml"
    AIM = "aim"
    MLFLOW = "mlflow"
    CLEARML = "clearml"
    SWANLAB = "swanlab"
    DVCLIVE = "dvclive"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def list(cls) -> list[str]:
        """Every built-in name, for messages that say what ``log_with`` accepts (as accelerate's does)."""
        return [member.value for member in cls]


def package_for(name: str) -> str:
    """Distribution that provides backend ``name`` (``comet_ml`` -> ``tracking-comet-ml``)."""
    row = BY_NAME.get(name)
    return row.package if row is not None else f"tracking-{name.replace('_', '-')}"


def install_command(name: str, extra: str | None = None) -> str:
    """The command that installs backend ``name`` from where this tracking-core came from.

    Installed from a clone (``pip install ./packages/core``, or an editable workspace), that is the
    backend's folder beside core's (``pip install /path/to/clone/packages/mlflow``: core is already
    there, so pip needs no index for it); installed from an index, the distribution's name. ``extra``
    names one of the backend's extras (``ui``).
    """
    import shlex

    suffix = f"[{extra}]" if extra else ""
    folder = _source_folder()
    if folder is not None and name != "jsonl":
        candidate = folder.parent / name
        if (candidate / "pyproject.toml").is_file():
            return f"pip install {shlex.quote(str(candidate) + suffix)}"
    return f"pip install {shlex.quote(package_for(name) + suffix)}"


def _source_folder() -> Path | None:
    """The folder tracking-core was installed from (PEP 610's ``direct_url.json``), when it was a local one."""
    import importlib.metadata
    import json
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    try:
        text = importlib.metadata.distribution("tracking-core").read_text("direct_url.json")
        url = json.loads(text or "{}").get("url", "")
    except (importlib.metadata.PackageNotFoundError, ValueError, AttributeError):
        return None
    if not isinstance(url, str) or not url.startswith("file://"):
        return None
    folder = Path(unquote(urlparse(url).path))
    return folder if (folder / "pyproject.toml").is_file() else None


_registered: dict[str, type[GeneralTracker]] = {}
_entry_points_cache: dict[str, EntryPoint] | None = None
_lock = threading.Lock()


def _entry_points() -> dict[str, EntryPoint]:
    global _entry_points_cache
    if _entry_points_cache is None:
        from importlib.metadata import entry_points

        found = {entry.name: entry for entry in entry_points(group=ENTRY_POINT_GROUP)}
        if "jsonl" not in found:  # core used from a source tree without installed metadata
            from importlib.metadata import EntryPoint

            found["jsonl"] = EntryPoint("jsonl", BUILT_IN_CLASSES["jsonl"], ENTRY_POINT_GROUP)
        _entry_points_cache = found
    return _entry_points_cache


def refresh() -> None:
    """Re-read installed entry points (after installing a backend into a running process)."""
    global _entry_points_cache
    _entry_points_cache = None


def installed_entry_points() -> dict[str, EntryPoint]:
    return dict(_entry_points())


def register_tracker_class(tracker_class: type[GeneralTracker]) -> type[GeneralTracker]:
    """Make ``tracker_class`` usable by its ``name`` in ``log_with`` (including ``"all"``).

    Usable as a decorator. Replacing an existing name (a built-in included) warns.
    """
    from .tracker import GeneralTracker

    if not (isinstance(tracker_class, type) and issubclass(tracker_class, GeneralTracker)):
        raise ValueError(f"`tracker_class` must be a subclass of `GeneralTracker`, but got {tracker_class!r}.")
    name = getattr(tracker_class, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"{tracker_class.__name__} must define a non-empty `name` attribute.")
    if not hasattr(tracker_class, "requires_logging_directory"):
        raise ValueError(f"{tracker_class.__name__} must define a `requires_logging_directory` attribute.")
    if name == LoggerType.ALL.value:
        raise ValueError('"all" is reserved for selecting every tracker.')
    with _lock:
        if name in _registered or name in _entry_points():
            previous = _registered.get(name)
            where = previous.__qualname__ if previous else f"the installed backend {name!r}"
            warnings.warn(
                f"Tracker name {name!r} already refers to {where}; it now refers to {tracker_class.__qualname__}.",
                UserWarning,
                stacklevel=2,
            )
        _registered[name] = tracker_class
    return tracker_class


def unregister_tracker_class(name: str) -> None:
    with _lock:
        _registered.pop(name, None)


def get_available_trackers() -> list[str]:
    """Names usable in ``log_with`` right now: installed backends and registered classes."""
    return sorted(set(_entry_points()) | set(_registered))


def _built_in_class(name: str) -> type[GeneralTracker] | None:
    """The project's own class for ``name`` when its package is importable; None sends the caller to the
    entry points (which also explain a broken install)."""
    if name not in BUILT_IN_CLASSES:
        return None
    import importlib
    import importlib.util

    module_name, _, attribute = BUILT_IN_CLASSES[name].partition(":")
    try:
        if importlib.util.find_spec(module_name) is None:
            return None
        tracker_class: type[GeneralTracker] = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError):
        return None
    return tracker_class


def resolve_tracker_class(name: str) -> type[GeneralTracker]:
    """The class behind ``name``, importing its module; errors say what to install."""
    name = str(name.value if isinstance(name, LoggerType) else name)
    if name in _registered:
        return _registered[name]
    built_in = _built_in_class(name)
    if built_in is not None:
        return built_in
    entry = _entry_points().get(name)
    if entry is None:
        known = [member.value for member in LoggerType if member is not LoggerType.ALL]
        if name in known:
            raise BackendNotInstalledError(
                f"Tracker {name!r} is not installed. Install it with: {install_command(name)}"
            )
        available = get_available_trackers()
        raise ValueError(
            f"Unknown tracker {name!r}{_did_you_mean(name, [*known, *available])} "
            f"Available now: {', '.join(available)}. "
            f"Built-in names: {', '.join(known)}; custom trackers need register_tracker_class()."
        )
    try:
        tracker_class: type[GeneralTracker] = entry.load()
        return tracker_class
    except ImportError as error:
        raise BackendNotInstalledError(
            f"Tracker {name!r} is registered by {entry.value} but could not be imported ({error}). "
            f"Reinstall it with: {install_command(name).replace('pip install', 'pip install --force-reinstall', 1)}"
        ) from error


def _did_you_mean(name: str, names: list[str]) -> str:
    """``": did you mean 'mlflow'?"`` for a name one slip away from a known one (else ``"."``)."""
    import difflib

    close = difflib.get_close_matches(name.lower(), list(dict.fromkeys(names)), n=1)
    return f": did you mean {close[0]!r}?" if close else "."
