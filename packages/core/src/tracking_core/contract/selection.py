"""Which trackers a run gets, and how each is built (``log_with`` and ``init_kwargs`` as in accelerate)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .registry import LoggerType, get_available_trackers, resolve_tracker_class
from .tracker import GeneralTracker

DEFAULT_LOGGING_DIR = "runs"
TrackerSpec = str | LoggerType | GeneralTracker | type[GeneralTracker]


def _names(log_with: Any) -> list[Any]:
    if log_with is None:
        return []
    if isinstance(log_with, (str, LoggerType, GeneralTracker, type)):
        return [log_with]
    return list(log_with)


def _accepted_keywords(cls: type[GeneralTracker]) -> set[str]:
    import inspect  # only at init_trackers: keeps `import tracking_core` fast

    try:
        parameters = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return set()
    return {name for name, p in parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def resolve_specs(
    log_with: Any, logging_dir: str | os.PathLike[str] | None
) -> list[type[GeneralTracker] | GeneralTracker]:
    """The tracker classes (or ready instances) ``log_with`` names, once each; ``"all"`` adds every available one.

    A name whose package is missing raises, naming the package; a class that needs a logging
    directory raises when there is none.
    """
    specs: list[type[GeneralTracker] | GeneralTracker] = []
    requested = _names(log_with) or ["jsonl"]
    if any(str(getattr(item, "value", item)) == LoggerType.ALL.value for item in requested if isinstance(item, str)):
        requested = [
            item for item in requested if not (isinstance(item, str) and str(getattr(item, "value", item)) == "all")
        ]
        requested += get_available_trackers()
    seen: set[str] = set()
    for item in requested:
        spec: type[GeneralTracker] | GeneralTracker
        if isinstance(item, GeneralTracker):
            spec, name = item, item.name
        elif isinstance(item, type):
            if not issubclass(item, GeneralTracker):
                raise ValueError(f"{item!r} is not a GeneralTracker subclass")
            spec, name = item, item.name
        else:
            spec = resolve_tracker_class(str(getattr(item, "value", item)))
            name = spec.name
        if name in seen:
            continue
        seen.add(name)
        needs_dir = getattr(spec, "requires_logging_directory", False)
        if needs_dir and logging_dir is None and not isinstance(spec, GeneralTracker):
            raise ValueError(
                f"Logging with `{name}` requires a `logging_dir` to be passed in. "  # accelerate's message
                f"Tracker {name!r} requires a logging directory: pass logging_dir=... "
                "(tracking_core.init uses ./runs by default)."
            )
        specs.append(spec)
    return specs


def construct_tracker(
    cls: type[GeneralTracker], project_name: str, logging_dir: str | None, kwargs: dict[str, Any] | None
) -> GeneralTracker:
    """``cls(project, logging_dir, **kwargs)`` or ``cls(project, **kwargs)`` as in accelerate.

    A tracker that does not require a logging directory but accepts a ``logging_dir`` keyword
    gets the run's, so embedded defaults land in the same place for every backend.
    """
    kwargs = dict(kwargs or {})
    # Each backend's constructor has its own signature (accelerate's), not the base class's `_blank` one.
    build: Callable[..., GeneralTracker] = cls
    if cls.requires_logging_directory:
        return build(project_name, kwargs.pop("logging_dir", logging_dir), **kwargs)
    if "logging_dir" not in kwargs and "logging_dir" in _accepted_keywords(cls):
        kwargs["logging_dir"] = logging_dir if logging_dir is not None else DEFAULT_LOGGING_DIR
    return build(project_name, **kwargs)
