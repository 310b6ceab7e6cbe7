"""Where the library talks to people: the ``tracking`` logger, and warnings that fire once.

Notices ("view this run with ...") are INFO records on the ``tracking`` logger. When the application
has configured no logging at all they still reach stderr, never stdout, so a training script's own
output stays clean.
"""

from __future__ import annotations

import logging
import sys
import threading
import warnings
from types import FrameType

from .errors import TrackingWarning

logger = logging.getLogger("tracking")


class _StderrWhenUnconfigured(logging.Handler):
    """Prints to stderr only while the root logger has no handlers (the app did not set up logging)."""

    def emit(self, record: logging.LogRecord) -> None:
        if logging.getLogger().handlers:
            return
        try:
            sys.stderr.write(f"tracking: {record.getMessage()}\n")
            if record.exc_info:
                import traceback

                sys.stderr.write("".join(traceback.format_exception(*record.exc_info)))
        except Exception:  # pragma: no cover - stderr closed
            pass


if not logger.handlers:
    logger.addHandler(_StderrWhenUnconfigured())
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)


def notice(message: str) -> None:
    """One line for a person: where data went and how to look at it."""
    logger.info(message)


class OnceRegistry:
    """Remembers which (scope, key, reason) triples were already reported, so each is said once."""

    def __init__(self) -> None:
        self._seen: set[tuple[object, ...]] = set()
        self._lock = threading.Lock()

    def first_time(self, *identity: object) -> bool:
        with self._lock:
            if identity in self._seen:
                return False
            self._seen.add(identity)
            return True

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()


_once = OnceRegistry()


def first_time(*identity: object) -> bool:
    """True the first time ``identity`` is seen in this run (``reset_warnings`` starts over)."""
    return _once.first_time(*identity)


def warn_once(backend: str, key: str, message: str, *, reason: str | None = None, stacklevel: int = 3) -> bool:
    """Warn about a value or key once per backend, key and reason; returns whether it warned.

    ``reason`` defaults to the message; pass a stable reason when the message embeds a value,
    so a changing value does not repeat the warning. The warning points at the first line outside
    this library's packages (``stacklevel`` is kept for callers and no longer used); from a worker
    thread, at the thread (``<tracking: name>``).
    """
    if not _once.first_time(backend, key, reason or message):
        return False
    text = f"[{backend}] {key!r}: {message}"
    frame = _first_frame_outside_the_library()
    if frame is None:  # a worker thread: no line of the user's is behind it, and none of ours is the culprit
        warnings.warn_explicit(text, TrackingWarning, f"<tracking: {threading.current_thread().name}>", 0, "tracking")
    else:
        # no module_globals: the source line is looked up by file name alone (a `python -c` script's
        # loader raises when asked for its source)
        warnings.warn_explicit(
            text,
            TrackingWarning,
            frame.f_code.co_filename,
            frame.f_lineno,
            frame.f_globals.get("__name__", "<unknown>"),
            frame.f_globals.setdefault("__warningregistry__", {}),
        )
    return True


#: Modules whose frames a warning never points at: this library's packages, and what runs a thread.
_LIBRARY_PREFIXES = ("tracking_",)
_PLUMBING = frozenset({"threading", "contextlib", "concurrent.futures.thread", "runpy"})


def _first_frame_outside_the_library() -> FrameType | None:
    """The caller's frame that made the library warn (``stacklevel`` by module, not by count, so every
    path through the dispatcher, the workers and the integrations points at the user's own line)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not (name.startswith(_LIBRARY_PREFIXES) or name in _PLUMBING):
            return frame
        frame = frame.f_back
    return None


def reset_warnings() -> None:
    """Forget what was already reported (tests, or a new run in the same process)."""
    _once.clear()
