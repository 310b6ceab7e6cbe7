"""SwanLab 0.8.0 to 0.9.0: the ``swanlab.sdk`` line before its run left signal handlers to the main thread.

Detected, not assumed (:func:`release`).

Before 0.9.1, ``swanlab.init`` and ``Run.finish`` install and restore a SIGINT handler with
``signal.signal`` whatever thread they run in; off the main thread -- where this backend's worker
starts and finishes the run -- Python refuses (``ValueError: signal only works in main thread``) after
``swanlab.init`` has already registered the half-made run as the process's current one. From 0.9.1
SwanLab installs the handler only on the main thread. :func:`main_thread_only_signals` gives the older
releases that behaviour, for SwanLab's run module alone: ``signal.signal`` from another thread is skipped
there (the run then has no Ctrl+C handler of its own, as with 0.9.1+), everything else is the real module.
"""

from __future__ import annotations

import signal
import threading
import types
from typing import Any


class _MainThreadSignals(types.ModuleType):
    """The ``signal`` module, except that ``signal.signal`` off the main thread does nothing."""

    def __init__(self) -> None:
        super().__init__("signal")
        self.__dict__.update({name: getattr(signal, name) for name in dir(signal) if not name.startswith("_")})
        self.signal = self._main_thread_signal

    @staticmethod
    def _main_thread_signal(signum: Any, handler: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            return signal.signal(signum, handler)
        return signal.getsignal(signum)


def release() -> tuple[int, ...]:
    """The installed SwanLab release as numbers (``0.9.1`` -> ``(0, 9, 1)``); ``()`` when unknown."""
    import re
    from importlib import metadata

    try:
        found = re.match(r"(\d+(?:\.\d+)*)", metadata.version("swanlab"))
    except metadata.PackageNotFoundError:
        return ()
    return tuple(int(part) for part in found.group(1).split(".")) if found else ()


#: The first release whose run installs its SIGINT handler only on the main thread.
SIGNALS_ON_MAIN_THREAD_ONLY = (0, 9, 1)


def main_thread_only_signals() -> bool:
    """Make an older SwanLab's run module leave signal handlers alone off the main thread; True if it was needed."""
    if not release() or release() >= SIGNALS_ON_MAIN_THREAD_ONLY:
        return False
    from swanlab.sdk.internal import run as run_module

    if not isinstance(getattr(run_module, "signal", None), _MainThreadSignals):
        run_module.signal = _MainThreadSignals()
    return True
