"""``tracking import tensorboard <logdir>``: TensorBoard event folders as journals.

Every folder under ``<logdir>`` that holds event files is one run, as TensorBoard's own dashboard
counts them. Events are read with tensorboard's ``EventFileLoader`` (no TensorFlow), in both forms
writers use: the legacy values ``torch.utils.tensorboard`` and TensorBoardX write (``simple_value``,
``image``, ``histo``) and the plugin tensors of ``tf.summary``/Keras (whose plugin metadata comes
only with a tag's first event). Carried: scalars (float32 where the writer stored float32), images,
text, text tables, histograms, hparams (the config) and this library's exact ``config/json``.
Audio, graphs, PR curves, meshes and other plugins are listed in the report, not carried.

The loader stops silently at a truncated record (a file still being written looks the same); this
importer then checks that every file ends on a record boundary and raises ``SourceError`` naming the
file when one does not.
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracking_core.kit import Media, Point, SourceError, SourceRun

EVENT_FILE_MARK = "tfevents"
CONFIG_TAG = "config/json"  # tracking_tensorboard.tracker.CONFIG_TAG, without importing the tracker


def _make_ndarray(tensor: Any) -> Any:
    from tensorboard.util import tensor_util

    return tensor_util.make_ndarray(tensor)


def _event_files(folder: Path) -> list[Path]:
    return sorted(path for path in folder.iterdir() if path.is_file() and EVENT_FILE_MARK in path.name)


def _run_folders(root: Path) -> list[Path]:
    folders = {path.parent for path in root.rglob(f"*{EVENT_FILE_MARK}*") if path.is_file()}
    return sorted(folders)


def _whole_records(path: Path) -> tuple[int, int]:
    """(records, bytes they span): a file whose records do not reach its end is truncated."""
    data = path.read_bytes()
    offset = count = 0
    size = len(data)
    while offset + 12 <= size:
        (length,) = struct.unpack_from("<Q", data, offset)
        end = offset + 12 + length + 4
        if end > size:
            break
        offset, count = end, count + 1
    return count, offset


class _RunReader:
    """The points, media and config of one run folder, read file by file."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.plugins: dict[str, str] = {}  # tag -> plugin name: tf.summary writes the metadata once per tag
        self.points: list[Point] = []
        self.media: list[Media] = []
        self.hparams: dict[str, Any] = {}
        self.exact_config: dict[str, Any] | None = None
        self.skipped: Counter[str] = Counter()
        self.first_time: float | None = None
        self.last_time: float | None = None
        self.last_step = -1

    def read(self, path: Path) -> None:
        from tensorboard.backend.event_processing import event_file_loader
        from tensorboard.compat.proto import event_pb2

        # the raw loader: EventFileLoader would also rewrite every legacy value into a tensor, which
        # costs more than the rest of the import together; both forms are handled below
        loader = event_file_loader.RawEventFileLoader(str(path))
        parse = event_pb2.Event.FromString
        events = 0
        for record in loader.Load():
            events += 1
            self._event(parse(record))
        records, end = _whole_records(path)
        if end != path.stat().st_size or records != events:
            raise SourceError(
                str(path),
                f"truncated or corrupt event file: {records} whole records of {path.stat().st_size} bytes, "
                f"{events} read (the writer was killed mid-record, or is still writing)",
                imported=f"the runs before {self.folder}; this run up to step {self.last_step}",
            )

    def _event(self, event: Any) -> None:
        moment = event.wall_time
        if self.first_time is None and moment:
            self.first_time = moment
        self.last_time = moment or self.last_time
        if not event.HasField("summary"):
            if event.HasField("graph_def") or event.HasField("meta_graph_def"):
                self.skipped["graph"] += 1
            return
        step = int(event.step)
        self.last_step = max(self.last_step, step)
        for value in event.summary.value:
            self._value(value, step, moment)

    def _value(self, value: Any, step: int, moment: float) -> None:
        tag = value.tag
        plugin = value.metadata.plugin_data.plugin_name
        if plugin:
            self.plugins[tag] = plugin
        else:
            plugin = self.plugins.get(tag, "")
        if plugin == "hparams":  # torch.utils.tensorboard (Lightning too) writes it with no tensor, TF with one
            self._hparams(value.metadata.plugin_data.content)
            return
        kind = value.WhichOneof("value")
        if kind == "simple_value":
            self.points.append(Point(tag, step, float(value.simple_value), moment))
        elif kind == "image":
            self.media.append(Media("image", tag, step, bytes(value.image.encoded_image_string), moment))
        elif kind == "histo":
            self._legacy_histogram(tag, step, value.histo, moment)
        elif kind == "tensor":
            self._tensor(tag, plugin, step, value, moment)
        else:
            self.skipped[f"{kind or 'empty value'} ({tag})"] += 1

    def _tensor(self, tag: str, plugin: str, step: int, value: Any, moment: float) -> None:
        tensor = value.tensor
        if plugin == "scalars" and not tensor.tensor_content and (tensor.float_val or tensor.double_val):
            number = tensor.float_val[0] if tensor.float_val else tensor.double_val[0]  # the common 0-d form, fast
            self.points.append(Point(tag, step, float(number), moment))
            return
        array = _make_ndarray(tensor)
        if plugin == "scalars" or (not plugin and array.ndim == 0 and array.dtype.kind in "fiu"):
            self.points.append(Point(tag, step, array.item(), moment))
        elif plugin == "images":
            self.media += [Media("image", tag, step, bytes(image), moment) for image in array.ravel()[2:]]
        elif plugin == "text":
            self._text(tag, step, array, moment)
        elif plugin == "histograms" and array.ndim == 2 and array.shape[1] == 3 and array.shape[0]:
            edges = [float(left) for left in array[:, 0]] + [float(array[-1, 1])]
            counts = [float(count) for count in array[:, 2]]
            if len(counts) == 1 and edges[1] <= edges[0]:  # one value repeated: TF writes a zero-width bucket
                edges[1] = edges[0] + (abs(edges[0]) * 1e-6 or 1e-6)
            self.media.append(Media("histogram", tag, step, {"counts": counts, "edges": edges}, moment))
        else:
            self.skipped[f"{plugin or 'unknown'} ({tag})"] += 1

    def _text(self, tag: str, step: int, array: Any, moment: float) -> None:
        cells = [[item.decode("utf-8", "replace") if isinstance(item, bytes) else str(item) for item in row]
                 for row in (array if array.ndim == 2 else array.reshape(1, -1))]  # fmt: skip
        if array.ndim == 2 and len(cells) > 1:
            self.media.append(Media("table", tag, step, {"columns": cells[0], "data": cells[1:]}, moment))
            return
        text = "\n".join(" ".join(row) for row in cells)
        if tag == CONFIG_TAG and text.startswith("```json\n") and text.endswith("\n```"):
            try:
                self.exact_config = json.loads(text[len("```json\n") : -len("\n```")])
                return
            except ValueError:
                pass
        self.media.append(Media("text", tag, step, text, moment))

    def _legacy_histogram(self, tag: str, step: int, histo: Any, moment: float) -> None:
        limits, counts = list(histo.bucket_limit), list(histo.bucket)
        filled = [index for index, count in enumerate(counts) if count > 0]
        if not filled:
            self.skipped[f"empty histograms ({tag})"] += 1
            return
        first, last = filled[0], filled[-1]
        edges = [limits[first - 1] if first > 0 else histo.min, *limits[first : last + 1]]
        if edges[-1] > histo.max > edges[-2]:
            edges[-1] = histo.max  # the last limit is often DBL_MAX: the data's max is the honest edge
        if edges[1] <= edges[0]:
            edges[0] = edges[1] - (abs(edges[1]) * 1e-6 or 1e-6)
        self.media.append(Media("histogram", tag, step, {"counts": counts[first : last + 1], "edges": edges}, moment))

    def _hparams(self, content: bytes) -> None:
        from tensorboard.plugins.hparams import plugin_data_pb2

        data = plugin_data_pb2.HParamsPluginData.FromString(content)
        if data.WhichOneof("data") != "session_start_info":
            return
        for key, item in data.session_start_info.hparams.items():
            kind = item.WhichOneof("kind")
            self.hparams[key] = getattr(item, kind) if kind else None


def read_runs(source: str, *, options: dict[str, str] | None = None) -> Iterator[SourceRun]:
    """Yield one run per folder of event files under ``source`` (a logdir, a run folder or one event file)."""
    root = Path(source)
    if root.is_file() and EVENT_FILE_MARK in root.name:
        folders, only = [root.parent], [root]
    elif root.is_dir():
        folders, only = _run_folders(root), None
    else:
        raise SourceError(source, "not a TensorBoard log folder or event file")
    if not folders:
        raise SourceError(source, "no TensorBoard event files (events.out.tfevents.*) under this folder")
    base = root.parent if root.is_file() else root
    for folder in folders:
        files = only or _event_files(folder)
        reader = _RunReader(folder)
        for path in files:
            reader.read(path)
        relative = folder.relative_to(base).as_posix()
        name = folder.name if relative == "." else relative
        # a run given by its own folder belongs to the folder above it (``tensorboard --logdir <project>``)
        project = (folder.resolve().parent if relative == "." else base.resolve()).name or folder.resolve().name
        not_carried = [f"{count} {what}" for what, count in sorted(reader.skipped.items())]
        yield SourceRun(
            backend="tensorboard",
            source_id=f"{name}/{files[0].name}",
            name=name,
            project=project,
            started=reader.first_time,
            config=reader.exact_config if reader.exact_config is not None else reader.hparams,
            points=reader.points,
            media=reader.media,
            not_carried=not_carried,
            location=str(folder),
        )
