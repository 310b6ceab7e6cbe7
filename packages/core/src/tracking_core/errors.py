"""Exceptions raised by tracking-core."""

from __future__ import annotations


class TrackingError(RuntimeError):
    """A backend failed while ``on_error="raise"``; chained to the backend's own exception."""

    def __init__(self, backend: str, message: str) -> None:
        super().__init__(f"[{backend}] {message}")
        self.backend = backend


class BackendNotInstalledError(ImportError):
    """A name in ``log_with`` is known but its package is not installed."""


class TrackingWarning(UserWarning):
    """Bad input that was handled (dropped, renamed, converted) rather than crashing the run."""


class PartialDelivery(Exception):
    """Raised by a tracker's ``log_batch`` that stored only the first ``delivered`` entries.

    Chain it to the real error (``raise PartialDelivery(n) from error``): the worker counts those
    entries as stored and retries or spills exactly the rest, so nothing is stored twice.
    """

    def __init__(self, delivered: int) -> None:
        super().__init__(f"{delivered} entries were stored before the batch failed")
        self.delivered = delivered
