"""Read a TensorBoard run back from its event files with TensorBoard's own loader (for read-back, tests, views).

The files of a run folder (not its sub-runs) are read in the order TensorBoard's dashboards read them
(sorted names), each with ``EventFileLoader`` and its read-time migrations, and a restart event
(``purge_step``, a rewind) drops the values read before it at its step or later, as the dashboards do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def event_files(folder: Path) -> list[Path]:
    """The folder's own event files (not its sub-runs') in the order TensorBoard reads them."""
    from tensorboard.backend.event_processing import io_wrapper

    return sorted(path for path in folder.iterdir() if io_wrapper.IsTensorFlowEventsFile(str(path)))


def summary_values(folder: Path) -> list[tuple[int, Any, str | None]]:
    """Every summary value of the run in ``folder``, as ``(step, value, plugin name)``, through TensorBoard's loader.

    A restart event (``purge_step``, a rewind) drops the values read before it at its step or later,
    as TensorBoard's dashboards do (the run's first start event is its start, not a restart).
    """
    from tensorboard.backend.event_processing import event_file_loader
    from tensorboard.compat.proto import event_pb2

    plugin_of: dict[str, str] = {}  # a tag's plugin comes with its first value (later ones may omit it)
    values: list[tuple[int, Any, str | None]] = []
    started = False
    for path in event_files(folder):
        for event in event_file_loader.EventFileLoader(str(path)).Load():
            if event.HasField("session_log") and event.session_log.status == event_pb2.SessionLog.START:
                if started:
                    values = [item for item in values if item[0] < event.step]
                started = True
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name:
                    plugin_of.setdefault(value.tag, value.metadata.plugin_data.plugin_name)
                values.append((event.step, value, plugin_of.get(value.tag)))
    return values


def scalar_history(folder: Path) -> dict[str, list[tuple[int, Any]]]:
    """Every scalar of the run in ``folder`` per tag, as ``(step, value)`` in file and record order."""
    from tensorboard.util import tensor_util

    history: dict[str, list[tuple[int, Any]]] = {}  # after the purges TensorBoard applies (restarts)
    for step, value, plugin in summary_values(folder):
        if plugin in ("scalars", "text"):
            array = tensor_util.make_ndarray(value.tensor)
            if array.dtype.kind in "fiu" and array.size == 1:  # a key also logged as text holds strings
                history.setdefault(value.tag, []).append((step, float(array)))
    return history


def images_of(folder: Path) -> dict[str, list[tuple[int, Any]]]:
    """Every image sample of the run in ``folder``, per tag, as ``(step, HW or HWC uint8 array)``, decoded with Pillow."""
    import io

    import numpy as np
    from PIL import Image
    from tensorboard.util import tensor_util

    images: dict[str, list[tuple[int, Any]]] = {}
    for step, value, plugin in summary_values(folder):
        if plugin == "images":
            for png in tensor_util.make_ndarray(value.tensor)[2:]:  # [width, height, png, png, ...]
                with Image.open(io.BytesIO(png)) as image:
                    images.setdefault(value.tag, []).append((step, np.asarray(image)))
    return images
