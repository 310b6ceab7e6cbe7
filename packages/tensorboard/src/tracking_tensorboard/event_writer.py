"""TensorBoard event files written with ``SummaryWriter``'s methods, from tensorboard's own protos framed as
TFRecords (:mod:`.tfrecord`); the values themselves are built in :mod:`.summaries`.

Importing this module imports the tensorboard SDK, so only ``TensorBoardTracker.start()`` does it.
Nothing here touches ``tensorboard.compat.tf``: that lazy module resolves to the real TensorFlow
whenever it is installed (``EventFileWriter`` reaches it through ``tf.io.gfile``), which would cost
seconds of import time and GPU initialisation in a process that only wants to write a file.
"""

from __future__ import annotations

import itertools
import os
import socket
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tensorboard.compat.proto import event_pb2, summary_pb2
from tracking_core.kit import AppendFile, encode_png, figure_to_png, to_hwc_uint8

from .summaries import (
    Value,
    as_numpy,
    event_step,
    histogram_proto_of,
    hparams_end_value,
    hparams_experiment_value,
    hparams_start_value,
    image_value,
    scalar_tensor_value,
    scalar_value_of,
    text_value,
)
from .tfrecord import framed, framed_many

_file_counter = itertools.count()


class EventWriter:
    """One append-only event file with ``torch.utils.tensorboard.SummaryWriter``'s writing methods.

    It is what ``TensorBoardTracker.tracker`` (and ``.writer``) returns, so code written for the
    writer Accelerate exposes (``add_scalar``, ``add_histogram``, ``add_image(s)``, ``add_text``,
    ``add_hparams``...) runs unchanged without torch. Writes are synchronous in the calling thread:
    records are kept in memory and reach the disk on ``flush()``/``close()`` (or the tracker's next
    delivered batch), all of them or (disk full, file deleted) none, so the tracker counts exactly
    what is stored. Thread-safe: the training thread may write while the tracker's worker does.
    """

    def __init__(
        self, log_dir: str | os.PathLike[str], filename_suffix: str = "", purge_step: int | None = None
    ) -> None:
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.filename_suffix = filename_suffix
        # TensorBoard only reads files whose name contains "tfevents"; keep the conventional pattern.
        name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}.{next(_file_counter)}"
        self.path = self.log_dir / (name + filename_suffix)
        self._file = AppendFile(self.path)
        self._lock = threading.Lock()
        self._children: dict[str, EventWriter] = {}  # add_scalars / add_hparams(run_name=...) sub-runs
        self.add_event(event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2"))
        if purge_step is not None:
            self.purge(purge_step)

    def purge(self, step: int) -> None:
        """A restart at ``step``: TensorBoard's reader drops the events read before this one at ``step`` or later.

        The reader takes a run's first start event for the session's start, not a restart, so a start
        event at the largest step (which drops nothing) comes first, for runs written without one.
        """
        start = event_pb2.SessionLog(status=event_pb2.SessionLog.START)
        for at in (2**63 - 1, int(step)):
            self.add_event(event_pb2.Event(wall_time=time.time(), step=at, session_log=start))

    @property
    def closed(self) -> bool:
        return self._file.closed

    def get_logdir(self) -> str:
        return str(self.log_dir)

    # -- records -----------------------------------------------------------------------------
    def add_event(self, event: event_pb2.Event, step: int | None = None, walltime: float | None = None) -> None:
        if step is not None:
            event.step = int(step)
        if walltime is not None:
            event.wall_time = float(walltime)
        with self._lock:
            self._file.write(framed(event.SerializeToString()))

    def add_serialized(self, events: Sequence[bytes]) -> None:
        """Events already serialized (``scalars_event``), framed together."""
        data = framed_many(events)
        with self._lock:
            self._file.write(data)

    def add_summary(self, values: Iterable[Value], step: int | None = None, wall_time: float | None = None) -> None:
        """One event holding ``values`` at ``step`` (``None``: 0, as in SummaryWriter) and ``wall_time``."""
        summary = summary_pb2.Summary(value=list(values))
        event = event_pb2.Event(wall_time=wall_time or time.time(), step=event_step(step), summary=summary)
        self.add_event(event)

    def _child(self, folder: str) -> EventWriter:
        with self._lock:
            child = self._children.get(folder)
            if child is None:
                child = self._children[folder] = EventWriter(self.log_dir / folder, self.filename_suffix)
            return child

    # -- SummaryWriter's methods -----------------------------------------------------------------
    def add_scalar(
        self,
        tag: str,
        scalar_value: Any,
        global_step: int | None = None,
        walltime: float | None = None,
        new_style: bool = False,
        double_precision: bool = False,
    ) -> None:
        """A scalar; ``new_style`` stores it as a scalars-plugin tensor (float64 with ``double_precision``)."""
        value = _number(scalar_value)
        summary = scalar_tensor_value(tag, value, double_precision) if new_style else scalar_value_of(tag, value)
        self.add_summary([summary], global_step, walltime)

    def add_scalars(
        self,
        main_tag: str,
        tag_scalar_dict: Mapping[str, Any],
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Several scalars on one chart: each in a sub-run ``<log_dir>/<main_tag>_<tag>``, under ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        for tag, scalar in tag_scalar_dict.items():
            child = self._child(f"{main_tag.replace('/', '_')}_{tag}")
            child.add_summary([scalar_value_of(main_tag, _number(scalar))], global_step, walltime)

    def add_histogram(
        self,
        tag: str,
        values: Any,
        global_step: int | None = None,
        bins: Any = "tensorflow",
        walltime: float | None = None,
        max_bins: int | None = None,
    ) -> None:
        """A histogram of ``values`` (array, tensor, list); ``bins`` as ``numpy.histogram`` takes it, or
        ``"tensorflow"`` for TensorFlow's exponential buckets; ``max_bins`` merges neighbouring bins."""
        proto = histogram_proto_of(values, bins, max_bins)
        self.add_summary([Value(tag=tag, histo=proto)], global_step, walltime)

    def add_histogram_raw(
        self,
        tag: str,
        min: float,  # SummaryWriter's parameter names shadow builtins
        max: float,
        num: int,
        sum: float,
        sum_squares: float,
        bucket_limits: Sequence[float],
        bucket_counts: Sequence[float],
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """A histogram from counts already made: ``bucket_limits`` are the right edges of the buckets."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("bucket_limits and bucket_counts must have the same length")
        proto = summary_pb2.HistogramProto(
            min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
            bucket_limit=[float(limit) for limit in bucket_limits],
            bucket=[float(count) for count in bucket_counts],
        )  # fmt: skip
        self.add_summary([Value(tag=tag, histo=proto)], global_step, walltime)

    def add_image(
        self,
        tag: str,
        img_tensor: Any,
        global_step: int | None = None,
        walltime: float | None = None,
        dataformats: str = "CHW",
    ) -> None:
        """One image laid out as ``dataformats`` (``CHW``, ``HWC`` or ``HW``); floats in [0, 1] are scaled."""
        png = encode_png(to_hwc_uint8(img_tensor, dataformats))
        self.add_summary([image_value(tag, [png])], global_step, walltime)

    def add_images(
        self,
        tag: str,
        img_tensor: Any,
        global_step: int | None = None,
        walltime: float | None = None,
        dataformats: str = "NCHW",
    ) -> None:
        """A batch laid out as ``dataformats`` (``NCHW``, ``NHWC``, ``NHW``): one sample per image under ``tag``."""
        layout = dataformats.upper()
        if "N" not in layout:
            raise ValueError(f"dataformats {dataformats!r} of add_images must include the batch axis N")
        batch_axis = layout.index("N")
        single = layout.replace("N", "")
        array = as_numpy(img_tensor)
        if array.ndim != len(layout):
            raise ValueError(f"dataformats {dataformats!r} does not describe an array of shape {array.shape}")
        pngs = [encode_png(to_hwc_uint8(image, single)) for image in _split(array, batch_axis)]
        if pngs:
            self.add_summary([image_value(tag, pngs)], global_step, walltime)

    def add_figure(
        self, tag: str, figure: Any, global_step: int | None = None, close: bool = True, walltime: float | None = None
    ) -> None:
        """A matplotlib figure (or a list of them) rendered to PNG; ``close`` closes it in pyplot."""
        figures = list(figure) if isinstance(figure, (list, tuple)) else [figure]
        pngs = [figure_to_png(item) for item in figures]
        if close and "matplotlib.pyplot" in sys.modules:
            for item in figures:
                sys.modules["matplotlib.pyplot"].close(item)
        self.add_summary([image_value(tag, pngs)], global_step, walltime)

    def add_text(
        self, tag: str, text_string: str, global_step: int | None = None, walltime: float | None = None
    ) -> None:
        """Text (markdown) under ``tag``."""
        self.add_summary([text_value(tag, text_string)], global_step, walltime)

    def add_hparams(
        self,
        hparam_dict: Mapping[str, Any],
        metric_dict: Mapping[str, Any],
        hparam_domain_discrete: Mapping[str, Sequence[Any]] | None = None,
        run_name: str | None = None,
        global_step: int | None = None,
    ) -> None:
        """Hyper-parameters and their result metrics for the hparams dashboard.

        Written into this run's event file; ``run_name`` writes them into a sub-run of that name
        instead (SummaryWriter always makes a sub-run, named after the current time by default).
        Values must be int, float, str or bool, as SummaryWriter requires.
        """
        if not isinstance(hparam_dict, Mapping) or not isinstance(metric_dict, Mapping):
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        for key, value in hparam_dict.items():
            if not isinstance(value, (bool, int, float, str)) and value is not None:
                raise ValueError(f"hparam {key!r}: value should be one of int, float, str, bool, got {value!r}")
        writer = self if run_name is None else self._child(run_name)
        now = time.time()
        experiment = hparams_experiment_value(hparam_dict, metric_dict, hparam_domain_discrete or {})
        start = hparams_start_value({k: v for k, v in hparam_dict.items() if v is not None}, now)
        writer.add_summary([experiment, start], global_step)
        for key, value in metric_dict.items():
            writer.add_scalar(key, value, global_step)
        writer.add_summary([hparams_end_value(now)], global_step)

    # -- durability ------------------------------------------------------------------------------
    def discard(self) -> None:
        """Forget the records added since the last write to the file."""
        with self._lock:
            self._file.discard()

    def write_through(self) -> None:
        """Hand the pending records to the OS (no fsync): they survive the process being killed."""
        with self._lock:
            self._file.flush()
            children = list(self._children.values())
        for child in children:
            child.write_through()

    def flush(self) -> None:
        """Write the pending records and fsync, so a crash after this loses nothing; raises if it cannot."""
        with self._lock:
            self._file.flush(durable=True)
            children = list(self._children.values())
        for child in children:
            child.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()
            children = list(self._children.values())
        for child in children:
            child.close()


def _number(value: Any) -> float:
    """A Python float from a number, numpy scalar or one-element tensor/array."""
    if hasattr(value, "item"):
        value = value.item()
    return float(value)


def _split(array: Any, axis: int) -> list[Any]:
    import numpy as np

    return [np.take(array, index, axis=axis) for index in range(array.shape[axis])]
