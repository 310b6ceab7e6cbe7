"""The summary values of each kind TensorBoard shows, built from tensorboard's own protos.

Scalars (one event per step serialized here directly: the hot path), text, tables, images, histograms
and the hparams plugin's experiment and session records. :class:`~tracking_tensorboard.event_writer.EventWriter`
and the tracker put them into event files. Importing this module imports tensorboard's protos only
(see :mod:`tracking_tensorboard.event_writer`).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import plugin_data_pb2 as hparams_data
from tensorboard.plugins.image import metadata as image_metadata
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.text import metadata as text_metadata

from .tracker import _FLOAT32_MAX  # the tracker's limit: one float32 range for both paths

Value: TypeAlias = summary_pb2.Summary.Value  # a protobuf class: tensorboard ships no type hints


def event_step(step: Any) -> int:
    """An event's step: ``None`` is 0, as in SummaryWriter."""
    return 0 if step is None else int(step)


def as_numpy(value: Any) -> Any:
    """A numpy array of an array, list or tensor (torch's without importing torch; bfloat16 as float32)."""
    import numpy as np

    if hasattr(value, "detach") and hasattr(value, "cpu"):  # torch, without importing it
        value = value.detach().cpu()
        if str(getattr(value, "dtype", "")) == "torch.bfloat16":
            value = value.float()
        return value.numpy()
    return np.asarray(value)


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
    step = event_step(step)
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


def scalar_tensor_value(tag: str, value: float, double_precision: bool) -> Value:
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

    array = as_numpy(values).astype(np.float64).ravel()
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
