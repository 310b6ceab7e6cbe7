"""A backend's start-up, retried when it lost an import race with another thread.

An SDK imported on a worker thread while the training thread imports it (or a module it shares) can see a
partially initialised module, or be told that a module which is installed does not exist; once the other
import has finished, a second try works. A module that is really missing is not retried.
"""

from __future__ import annotations

import contextlib
import importlib.util
import time
from collections.abc import Callable

from ..notices import logger

IMPORT_RETRIES = 2
IMPORT_RETRY_DELAY = 0.5


def start_retrying_import_races(
    name: str, start: Callable[[], None], in_backend: Callable[[], contextlib.AbstractContextManager[None]]
) -> None:
    for attempt in range(IMPORT_RETRIES + 1):
        try:
            with in_backend():
                start()
            return
        except (ImportError, AttributeError) as error:
            text = str(error)
            racing = "partially initialized" in text or "circular import" in text or _installed(error)
            if not racing or attempt == IMPORT_RETRIES:
                raise
            logger.info("backend %r: start-up met a concurrent import (%s); retrying", name, text)
            time.sleep(IMPORT_RETRY_DELAY)


def _installed(error: BaseException) -> bool:
    """A ``ModuleNotFoundError`` for a module that can be found now lost a race; a missing one did not."""
    name = getattr(error, "name", None)
    if not isinstance(error, ModuleNotFoundError) or not name:
        return False
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package that is missing too, or a broken one
        return False
