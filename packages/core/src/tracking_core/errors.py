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


class RemoteTraceback(Exception):
    """The traceback of an exception raised in the delivery process, as text: the ``__cause__`` of that
    exception once it crossed to the training process (tracebacks do not pickle)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return "\n\nin the delivery process:\n" + self.text


def portable_cause(error: BaseException) -> tuple[BaseException, str] | None:
    """What of ``error``'s cause can cross a pipe: the exception itself when it pickles (its type kept, so
    ``except ConnectionError`` still matches), else a ``RuntimeError`` naming it; and its traceback as
    text (pickling keeps neither ``__traceback__`` nor ``__cause__``). :func:`arrived_cause` rejoins them."""
    import pickle
    import traceback

    cause = error.__cause__
    if cause is None:
        return None
    text = "".join(traceback.format_exception(type(cause), cause, cause.__traceback__))
    try:
        pickle.loads(pickle.dumps(cause))
        portable: BaseException = cause
    except Exception:
        portable = RuntimeError(f"{type(cause).__qualname__}: {cause}")
    return portable, text


def arrived_cause(portable: tuple[BaseException, str] | None) -> BaseException | None:
    """The cause :func:`portable_cause` sent, chained to its traceback from the delivery process."""
    if portable is None:
        return None
    cause, text = portable
    cause.__cause__ = RemoteTraceback(text)
    return cause
