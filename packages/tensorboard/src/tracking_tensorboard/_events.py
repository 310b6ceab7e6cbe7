"""TensorBoard event files built from tensorboard's own protos and record framing.

Importing this module imports the tensorboard SDK, so only ``TensorBoardTracker.start()`` does it.
Nothing here touches ``tensorboard.compat.tf``: that lazy module resolves to the real TensorFlow
whenever it is installed (``EventFileWriter`` reaches it through ``tf.io.gfile``), which would cost
seconds of import time and GPU initialisation in a process that only wants to write a file.
"""

from __future__ import annotations

import itertools
import os
import socket
import struct
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import metadata as hparams_metadata
from tensorboard.plugins.hparams import plugin_data_pb2 as hparams_data
from tensorboard.plugins.image import metadata as image_metadata
from tensorboard.plugins.text import metadata as text_metadata
from tensorboard.summary.writer.record_writer import RecordWriter
from tracking_core.appendfile import AppendFile

Value: TypeAlias = summary_pb2.Summary.Value  # a protobuf class: tensorboard ships no type hints

_file_counter = itertools.count()


class EventWriter:
    """One append-only event file, written synchronously by the calling thread.

    The tracker's worker thread is already off the training loop, so this writer has no thread or
    queue of its own: records are kept in memory and reach the disk on ``flush()``/``close()``,
    all of them or (disk full, file deleted) none, so the tracker counts exactly what is stored.
    Thread-safe, so code holding ``get_tracker("tensorboard", unwrap=True)`` may write alongside.
    """

    def __init__(self, log_dir: str | os.PathLike[str], filename_suffix: str = "") -> None:
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # TensorBoard only reads files whose name contains "tfevents"; keep the conventional pattern.
        name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}.{next(_file_counter)}"
        self.path = self.log_dir / (name + filename_suffix)
        self._file = AppendFile(self.path)
        self._records = RecordWriter(self._file)
        self._lock = threading.Lock()
        self.add_event(event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2"))

    @property
    def closed(self) -> bool:
        return self._file.closed

    def get_logdir(self) -> str:
        return str(self.log_dir)

    def add_event(self, event: event_pb2.Event) -> None:
        with self._lock:
            self._records.write(event.SerializeToString())

    def add_summary(self, values: Iterable[Value], step: int, wall_time: float | None = None) -> None:
        summary = summary_pb2.Summary(value=list(values))
        self.add_event(event_pb2.Event(wall_time=wall_time or time.time(), step=step, summary=summary))

    def add_scalar(self, tag: str, value: float, global_step: int = 0, walltime: float | None = None) -> None:
        self.add_summary([scalar_value(tag, value)], global_step, walltime)

    def add_text(self, tag: str, text: str, global_step: int = 0, walltime: float | None = None) -> None:
        self.add_summary([text_value(tag, text)], global_step, walltime)

    def discard(self) -> None:
        """Forget the records added since the last write to the file."""
        with self._lock:
            self._file.discard()

    def write_through(self) -> None:
        """Hand the pending records to the OS (no fsync): they survive the process being killed."""
        with self._lock:
            self._file.flush()

    def flush(self) -> None:
        """Write the pending records and fsync, so a crash after this loses nothing; raises if it cannot."""
        with self._lock:
            self._file.flush(durable=True)

    def close(self) -> None:
        with self._lock:
            self._file.close()


# -- summary values -----------------------------------------------------------------------------


def _string_tensor(items: Sequence[bytes], shape: Sequence[int]) -> tensor_pb2.TensorProto:
    dims = [tensor_shape_pb2.TensorShapeProto.Dim(size=size) for size in shape]
    return tensor_pb2.TensorProto(
        dtype=types_pb2.DT_STRING, tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=dims), string_val=list(items)
    )


def scalar_value(tag: str, value: float) -> Value:
    # simple_value (float32) is what every TensorBoard writer emits and every reader understands.
    return Value(tag=tag, simple_value=float(value))


def text_value(tag: str, text: str) -> Value:
    """A text-plugin summary; TensorBoard renders the string as markdown."""
    metadata = text_metadata.create_summary_metadata(display_name=None, description=None)
    return Value(tag=tag, metadata=metadata, tensor=_string_tensor([text.encode("utf-8")], []))


def table_value(tag: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Value:
    """A 2-D string tensor: the text plugin shows it as a table (first row = column names)."""
    width = max([len(columns), *(len(row) for row in rows)])
    cells = [[*(str(cell) for cell in row), *([""] * (width - len(row)))] for row in [list(columns), *rows]]
    flat = [cell.encode("utf-8") for row in cells for cell in row]
    metadata = text_metadata.create_summary_metadata(display_name=None, description=None)
    return Value(tag=tag, metadata=metadata, tensor=_string_tensor(flat, [len(cells), width]))


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG image")
    return struct.unpack(">II", png[16:24])


def image_value(tag: str, pngs: Sequence[bytes]) -> Value:
    """Image-plugin summary in its tensor form ``[width, height, png, png, ...]``: one tag, N samples."""
    width, height = png_size(pngs[0])
    metadata = image_metadata.create_summary_metadata(display_name=None, description=None)
    items = [str(width).encode(), str(height).encode(), *pngs]
    return Value(tag=tag, metadata=metadata, tensor=_string_tensor(items, [len(items)]))


def _hparams_value(tag: str, data: hparams_data.HParamsPluginData) -> Value:
    return Value(tag=tag, metadata=hparams_metadata.create_summary_metadata(data), tensor=hparams_metadata.NULL_TENSOR)


def hparams_start_value(hparams: Mapping[str, bool | float | str], start_time: float) -> Value:
    """The hparams plugin's session_start_info for this run (numbers, bools and strings only)."""
    info = hparams_data.SessionStartInfo(start_time_secs=start_time)
    for key, value in hparams.items():
        if isinstance(value, bool):
            info.hparams[key].bool_value = value
        elif isinstance(value, (int, float)):
            info.hparams[key].number_value = value
        else:
            info.hparams[key].string_value = str(value)
    return _hparams_value(
        hparams_metadata.SESSION_START_INFO_TAG, hparams_data.HParamsPluginData(session_start_info=info)
    )


def hparams_end_value(end_time: float) -> Value:
    info = hparams_data.SessionEndInfo(status=api_pb2.STATUS_SUCCESS, end_time_secs=end_time)
    return _hparams_value(hparams_metadata.SESSION_END_INFO_TAG, hparams_data.HParamsPluginData(session_end_info=info))
