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
