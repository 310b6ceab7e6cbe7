"""TensorBoard event files built from tensorboard's own protos, framed as TFRecords (`._records`).

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
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import plugin_data_pb2 as hparams_data
from tensorboard.plugins.image import metadata as image_metadata
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.text import metadata as text_metadata
from tracking_core.adapters import figure_to_png, to_hwc_uint8
from tracking_core.appendfile import AppendFile
from tracking_core.png import encode_png

from ._records import framed, framed_many
from .tracker import _FLOAT32_MAX  # the tracker's limit: one float32 range for both paths

Value: TypeAlias = summary_pb2.Summary.Value  # a protobuf class: tensorboard ships no type hints

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
        event = event_pb2.Event(wall_time=wall_time or time.time(), step=_step(step), summary=summary)
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
        summary = _scalar_tensor_value(tag, value, double_precision) if new_style else scalar_value_of(tag, value)
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
        array = _as_numpy(img_tensor)
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


def _step(step: Any) -> int:
    return 0 if step is None else int(step)


def _number(value: Any) -> float:
    """A Python float from a number, numpy scalar or one-element tensor/array."""
    if hasattr(value, "item"):
        value = value.item()
    return float(value)


def _as_numpy(value: Any) -> Any:
    import numpy as np

    if hasattr(value, "detach") and hasattr(value, "cpu"):  # torch, without importing it
        value = value.detach().cpu()
        if str(getattr(value, "dtype", "")) == "torch.bfloat16":
            value = value.float()
        return value.numpy()
    return np.asarray(value)


def _split(array: Any, axis: int) -> list[Any]:
    import numpy as np

    return [np.take(array, index, axis=axis) for index in range(array.shape[axis])]


# -- summary values -----------------------------------------------------------------------------


def _string_tensor(items: Sequence[bytes], shape: Sequence[int]) -> tensor_pb2.TensorProto:
    dims = [tensor_shape_pb2.TensorShapeProto.Dim(size=size) for size in shape]
    return tensor_pb2.TensorProto(
        dtype=types_pb2.DT_STRING, tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=dims), string_val=list(items)
    )


_INT64 = 2**63
_pack_float = struct.Struct("<f").pack
_pack_double = struct.Struct("<d").pack
_scalar_prefixes: dict[str, bytes] = {}  # tag -> a Summary.Value's bytes up to its float


def _varint(number: int) -> bytes:
    out = bytearray()
    while number > 0x7F:
        out.append(number & 0x7F | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def _scalar_prefix(tag: Any) -> bytes | None:
    if type(tag) is not str or not tag:
        return None
    try:
        encoded = tag.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: protobuf's own error, from the general path
        return None
    field = b"\n" + _varint(len(encoded)) + encoded  # Value.tag (1)
    prefix = b"\n" + _varint(len(field) + 5) + field + b"\x15"  # Summary.value (1), then simple_value (2)
    if len(_scalar_prefixes) < 100_000:
        _scalar_prefixes[tag] = prefix
    return prefix


def scalars_event(values: Mapping[str, Any], step: Any, wall_time: Any) -> bytes | None:
    """The serialized Event of ``values`` when all are plain ints and floats within float32's range
    (else ``None``, for the general path): the bytes protobuf writes for the same
    ``Event(wall_time, step, summary=[Value(tag, simple_value)])``, without building the messages,
    which cost a fast loop's worker ~2.5 µs a point. The tests compare both byte for byte."""
    parts: list[bytes] = []
    for key, value in values.items():
        kind = type(value)
        if (kind is not float and kind is not int) or not -_FLOAT32_MAX <= value <= _FLOAT32_MAX:
            return None  # NaN and infinity too: rare, and the general path has them
        prefix = _scalar_prefixes.get(key) or _scalar_prefix(key)
        if prefix is None:
            return None
        parts += (prefix, _pack_float(value))
    step = _step(step)
    if not parts or not -_INT64 <= step < _INT64:
        return None
    summary = b"".join(parts)
    head = b"\t" + _pack_double(float(wall_time or time.time()))  # Event.wall_time (1)
    if step:
        head += b"\x10" + _varint(step & 0xFFFF_FFFF_FFFF_FFFF)  # Event.step (2), two's complement
    return head + b"*" + _varint(len(summary)) + summary  # Event.summary (5)


def scalar_value_of(tag: str, value: float) -> Value:
    # simple_value (float32) is what every TensorBoard writer emits and every reader understands.
    return Value(tag=tag, simple_value=float(value))


def _scalar_tensor_value(tag: str, value: float, double_precision: bool) -> Value:
    """The scalars plugin's own form: a 0-d float32 (or float64) tensor."""
    if double_precision:
        tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_DOUBLE, double_val=[value])
    else:
        tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[value])
    metadata = scalar_metadata.create_summary_metadata(display_name=None, description=None)
    return Value(tag=tag, metadata=metadata, tensor=tensor)


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


def _tensorflow_edges() -> list[float]:
    """TensorFlow's default histogram buckets: edges growing by 10% from 1e-12 to 1e20, mirrored, and 0."""
    positive = []
    edge = 1e-12
    while edge < 1e20:
        positive.append(edge)
        edge *= 1.1
    return [-edge for edge in reversed(positive)] + [0.0] + positive


def histogram_proto_of(values: Any, bins: Any = "tensorflow", max_bins: int | None = None) -> Any:
    """Bin ``values`` with numpy into a ``HistogramProto``; empty buckets at either end are left out."""
    import numpy as np

    array = _as_numpy(values).astype(np.float64).ravel()
    if array.size == 0:
        raise ValueError("add_histogram: the values are empty")
    counts, edges = np.histogram(array, bins=_tensorflow_edges() if bins == "tensorflow" else bins)
    if max_bins is not None and len(counts) > max_bins:  # merge groups of neighbouring bins
        group = -(-len(counts) // max_bins)
        padded = np.pad(counts, (0, (-len(counts)) % group))
        counts = padded.reshape(-1, group).sum(axis=1)
        edges = np.append(edges[:-1:group], edges[-1])
    filled = np.flatnonzero(counts)
    first, last = (int(filled[0]), int(filled[-1])) if filled.size else (0, len(counts) - 1)
    return summary_pb2.HistogramProto(
        min=float(array.min()),
        max=float(array.max()),
        num=float(array.size),
        sum=float(array.sum()),
        sum_squares=float(array @ array),
        bucket_limit=edges[first + 1 : last + 2].tolist(),
        bucket=counts[first : last + 1].astype(np.float64).tolist(),
    )


def histogram_value(tag: str, histogram: Any) -> Value:
    """A ``tracking_core.Histogram`` as TensorBoard's histogram (right edges as bucket limits)."""
    proto = summary_pb2.HistogramProto(
        min=float(histogram.min),
        max=float(histogram.max),
        num=float(histogram.count),
        sum=float(histogram.total),
        sum_squares=float(histogram.sum_squares),
        bucket_limit=[float(edge) for edge in histogram.edges[1:]],
        bucket=[float(count) for count in histogram.counts],
    )
    return Value(tag=tag, histo=proto)


# The hparams plugin's tags and summary form, as ``tensorboard.plugins.hparams.metadata`` defines them; that
# module is not imported because it pulls in the TensorFlow stub (``tensor_util``) for its empty tensor.
HPARAMS_PLUGIN = "hparams"
HPARAMS_DATA_VERSION = 0
EXPERIMENT_TAG = "_hparams_/experiment"
SESSION_START_INFO_TAG = "_hparams_/session_start_info"
SESSION_END_INFO_TAG = "_hparams_/session_end_info"


def _empty_float_tensor() -> tensor_pb2.TensorProto:
    shape = tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=0)])
    return tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, tensor_shape=shape)


def _hparams_value(tag: str, data: hparams_data.HParamsPluginData) -> Value:
    data.version = HPARAMS_DATA_VERSION
    plugin = summary_pb2.SummaryMetadata.PluginData(plugin_name=HPARAMS_PLUGIN, content=data.SerializeToString())
    return Value(tag=tag, metadata=summary_pb2.SummaryMetadata(plugin_data=plugin), tensor=_empty_float_tensor())


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
    return _hparams_value(SESSION_START_INFO_TAG, hparams_data.HParamsPluginData(session_start_info=info))


def hparams_experiment_value(
    hparams: Mapping[str, Any], metrics: Mapping[str, Any], domains: Mapping[str, Sequence[Any]]
) -> Value:
    """The hparams plugin's experiment: which hparam columns (with discrete domains) and metrics exist."""
    infos = []
    for key, value in hparams.items():
        info = api_pb2.HParamInfo(name=key)
        if isinstance(value, bool):
            info.type = api_pb2.DATA_TYPE_BOOL
        elif isinstance(value, (int, float)):
            info.type = api_pb2.DATA_TYPE_FLOAT64
        elif isinstance(value, str):
            info.type = api_pb2.DATA_TYPE_STRING
        if key in domains:
            info.domain_discrete.extend(domains[key])
        infos.append(info)
    experiment = api_pb2.Experiment(
        hparam_infos=infos, metric_infos=[api_pb2.MetricInfo(name=api_pb2.MetricName(tag=key)) for key in metrics]
    )
    return _hparams_value(EXPERIMENT_TAG, hparams_data.HParamsPluginData(experiment=experiment))


def hparams_end_value(end_time: float) -> Value:
    info = hparams_data.SessionEndInfo(status=api_pb2.STATUS_SUCCESS, end_time_secs=end_time)
    return _hparams_value(SESSION_END_INFO_TAG, hparams_data.HParamsPluginData(session_end_info=info))
