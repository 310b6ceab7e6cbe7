"""Which thread may touch a :class:`~.engine.Delivery`'s state, and whether it is inside the SDK.

The worker thread holds the lock while it delivers, and lets go of it for the length of each call
into the SDK, which may hang. So another thread (the caller's, finding the queue full; ``finish``
giving up at its timeout) can take the lock at any moment the worker is not changing the state,
and find every record still owed in the delivery's lists, never only in a local variable.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator


class Handover:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._owner: int | None = None
        self._inside_sdk = False
        self._call_began = 0.0

    def own(self) -> None:
        """The calling thread delivers from now on: it holds the lock outside SDK calls."""
        self.lock.acquire()
        self._owner = threading.get_ident()

    def disown(self) -> None:
        self._owner = None
        self.lock.release()

    @contextlib.contextmanager
    def in_backend(self) -> Iterator[None]:
        """Around a call into the SDK, which may hang: ``abandon`` and ``spill_over`` must not wait for it."""
        self._call_began = time.monotonic()
        self._inside_sdk = True
        try:
            if self._owner != threading.get_ident():
                yield
                return
            self.disown()
            try:
                yield
            finally:
                self.own()
        finally:
            self._inside_sdk = False

    def in_sdk(self) -> bool:
        return self._inside_sdk

    def seconds_in_sdk(self) -> float:
        return time.monotonic() - self._call_began if self._inside_sdk else 0.0
