"""Figures are copied when logged, because the backends draw them later, in their own threads.

A training script commonly reuses one figure (``ax.clear()``, plot the next epoch) or closes it right
after ``log_figure`` returns; handing the live object to the workers would then store a later state,
or race with the caller inside matplotlib, which is not thread-safe. A matplotlib figure is pickled
(its supported copy mechanism, a few ms against the hundreds a PNG render costs) and every backend
unpickles a figure of its own, detached from pyplot so no window or figure-manager entry appears.
Other figures (plotly) are deep-copied.
"""

from __future__ import annotations

import copy
import copyreg
import io
import pickle
from typing import Any


class FigureCopy:
    """A matplotlib figure as it was at ``log_figure``; :meth:`restore` makes an independent figure."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def restore(self) -> Any:
        return pickle.loads(self.data)


class _DetachingPickler(pickle.Pickler):
    """Pickles ``figure`` without the flag that would register its copies with pyplot on unpickling."""

    def __init__(self, buffer: io.BytesIO, figure: Any) -> None:
        super().__init__(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        self._figure = figure

    def reducer_override(self, obj: Any) -> Any:
        if obj is not self._figure:
            return NotImplemented
        state = obj.__getstate__()
        state.pop("_restore_to_pylab", None)
        return copyreg.__newobj__, (type(obj),), state  # type: ignore[attr-defined]  # in copyreg, not in typeshed


def copy_figure(figure: Any) -> tuple[Any, str | None]:
    """``(copy, None)``, or ``(figure, why)`` when it cannot be copied and must be passed on as it is."""
    try:
        if type(figure).__module__.startswith("matplotlib"):
            buffer = io.BytesIO()
            _DetachingPickler(buffer, figure).dump(figure)
            return FigureCopy(buffer.getvalue()), None
        return copy.deepcopy(figure), None
    except Exception as error:
        return figure, f"{type(error).__name__}: {error}"


def restore_figure(figure: Any) -> Any:
    """What a backend's ``log_figure`` receives for a logged figure."""
    return figure.restore() if isinstance(figure, FigureCopy) else figure
