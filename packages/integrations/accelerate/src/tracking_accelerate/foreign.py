"""Accelerate's own tracker objects (``accelerate.tracking.GeneralTracker``), driven by the dispatcher.

A script may pass one of accelerate's trackers (or a custom subclass of accelerate's base class) in
``log_with``, or a name only accelerate knows (a class registered with accelerate's
``register_tracker_class``, or ``"dvclive"`` when ``tracking-dvclive`` is not installed). Wrapped here,
it is called on the script's thread, as accelerate calls it (its SDK state, such as MLflow's per-thread
active run, is the one the script's own calls on it reach), and its failures are isolated and counted
like any backend's. It keeps accelerate's contract only (start, config, log, finish): images, tables
and artifacts go to the backends that have them.
"""

from __future__ import annotations

from typing import Any

from tracking_core import GeneralTracker


class AccelerateTracker(GeneralTracker):
    """Wraps an ``accelerate.tracking.GeneralTracker`` instance; ``wrapped`` is that instance."""

    requires_logging_directory = False

    def __init__(self, wrapped: Any) -> None:
        super().__init__(_blank=True)
        self.wrapped = wrapped
        self.name = wrapped.name  # type: ignore[misc]  # per instance: the wrapped tracker's name

    @property
    def tracker(self) -> Any:
        return self.wrapped.tracker

    def start(self) -> None:
        start = getattr(self.wrapped, "start", None)  # accelerate < 1.7 started trackers in __init__
        if start is not None:
            start()

    def store_init_configuration(self, values: dict[str, Any]) -> None:
        self.wrapped.store_init_configuration(values)

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        self.wrapped.log(values, step=step, **kwargs)

    def finish(self) -> None:
        self.wrapped.finish()


def adapter_class(accelerate_class: type[Any]) -> type[AccelerateTracker]:
    """A tracking tracker class built like ``accelerate_class`` (same name and constructor arguments)."""

    class Adapted(AccelerateTracker):
        name = accelerate_class.name
        requires_logging_directory = bool(getattr(accelerate_class, "requires_logging_directory", False))

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(accelerate_class(*args, **kwargs))

    Adapted.__name__ = Adapted.__qualname__ = f"Accelerate{accelerate_class.__name__}"
    return Adapted
