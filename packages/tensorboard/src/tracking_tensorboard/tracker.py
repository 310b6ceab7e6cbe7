"""``tensorboard``: the tracker contract mapped onto TensorBoard event files.

=====================  =====================================================================
contract               what lands in ``<logging_dir>/<project>/<run id>/events.out.tfevents.*``
=====================  =====================================================================
log / log_batch        numbers: scalar summaries; strings: text-plugin summaries (one event per call)
store_init_config.     hparams-plugin ``session_start_info`` (flat) + the exact config as JSON text
log_images             image-plugin summary per key, every image of the key a sample of one tag
log_table              text-plugin 2-D string tensor (rendered as a table, first row = columns)
log_figure             the figure as a PNG image summary
log_artifact(s)        not supported (TensorBoard has no artifacts): the dispatcher warns once
flush / finish         fsync of the event file / hparams ``session_end_info`` + close
=====================  =====================================================================
"""

from __future__ import annotations

import io
import json
import math
import numbers
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracking_core import GeneralTracker, flatten_config, notice, stringify, warn_once
from tracking_core.jsonl import table_rows
from tracking_core.paths import check_name, check_optional_name

_FLOAT32_MAX = 3.4028234663852886e38

#: Text-summary tag holding the run's configuration as exact JSON (hparams keep a flat copy).
CONFIG_TAG = "config/json"
_KNOWN_LOG_KWARGS = ("walltime", "timestamp")


def _new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


def _hparam(value: Any) -> bool | float | str:
    """The hparams plugin takes numbers, bools and strings; everything else goes in as text.

    NaN/inf also become text: they would poison the dashboard's min/max domain of the column.
    """
    if isinstance(value, (bool, int, str)) or (isinstance(value, float) and math.isfinite(value)):
        return value
    return stringify(value)


def _to_nhwc(value: Any, dataformats: str) -> list[Any]:
    """Split a numpy array laid out as ``dataformats`` (``NCHW``, ``CHW``, ``HW``, ...) into HWC images."""
    import numpy as np

    array = np.asarray(value)
    layout = dataformats.upper()
    if sorted(layout) != sorted(set(layout)) or not set(layout) <= set("NCHW") or len(layout) != array.ndim:
        raise ValueError(f"dataformats={dataformats!r} does not describe an array of shape {array.shape}")
    target = [axis for axis in "NHWC" if axis in layout]
    array = np.transpose(array, [layout.index(axis) for axis in target])
    if "N" not in layout:
        array = array[None]
    return list(array)


def _image_list(images: Any, dataformats: str | None) -> list[Any]:
    if isinstance(images, (list, tuple)):
        return [item for image in images for item in _image_list(image, dataformats)]
    if dataformats:
        return _to_nhwc(images, dataformats)
    if getattr(images, "ndim", 0) == 4:  # a batch: one sample per image
        return list(images)
    return [images]


class TensorBoardTracker(GeneralTracker):
    """Writes TensorBoard event files, with no torch, TensorFlow or tensorboardX involved.

    Example::

        import tracking_core

        with tracking_core.init("my-project", log_with="tensorboard", logging_dir="runs") as run:
            run.log({"train/loss": 0.5, "note": "warm-up done"}, step=0)
        # then: tensorboard --logdir runs/my-project

    Each run writes one event file into ``<logging_dir>/<run_name>/<run_id>/`` (``log_dir``), so
    runs of one project sit side by side in TensorBoard. Settings (``init_kwargs={"tensorboard":
    {...}}``), named as in ``torch.utils.tensorboard.SummaryWriter`` where they exist there:

    * ``log_dir``: the exact event-file directory (overrides the layout above).
    * ``comment``: appended to the run folder's name.
    * ``filename_suffix``: appended to the event file's name.
    * ``flush_secs``: at most this many seconds between flushes while logging (by default the
      dispatcher flushes every second while data is pending, on ``flush()`` and at ``finish()``).
    * ``run_id``: the run folder's name (by default the dispatcher's run id, so the run's journal and
      event file share one folder).

    TensorBoard itself has no environment variables for writing; none are read. Values are stored
    as float32 (TensorBoard's scalar type). ``tracker`` returns the :class:`EventWriter`, which
    has ``add_scalar``, ``add_text``, ``add_summary`` and ``add_event`` for custom summaries.
    """

    name = "tensorboard"
    durable_on_return = True  # each delivered batch reaches the event file (fsync at flush)
    requires_logging_directory = True
    wants_timestamps = True

    def __init__(
        self,
        run_name: str,
        logging_dir: str | os.PathLike,
        run_id: str | None = None,
        *,
        log_dir: str | os.PathLike | None = None,
        comment: str = "",
        filename_suffix: str = "",
        flush_secs: float | None = None,
    ) -> None:
        super().__init__()
        if log_dir is None:  # names that become folders/files stay inside logging_dir
            check_name(run_name, "run_name")
        check_optional_name(run_id, "run_id")
        check_optional_name(comment or None, "comment")
        check_optional_name(filename_suffix or None, "filename_suffix")
        self.run_name = run_name
        self.logging_dir = Path(logging_dir)
        self.run_id = run_id or _new_run_id()
        self.log_dir = Path(log_dir) if log_dir is not None else self.logging_dir / run_name / (self.run_id + comment)
        self._comment = comment
        self._layout_chosen = log_dir is not None or run_id is not None
        self.filename_suffix = filename_suffix
        self.flush_secs = flush_secs
        self._writer: Any = None
        self._events: Any = None
        self._step = -1
        self._wrote_hparams = False
        self._last_flush = time.monotonic()
        self._notes: list[str] = []

    @property
    def tracker(self) -> Any:
        """The run's ``EventWriter`` (``None`` before ``start()``)."""
        return self._writer

    def start(self) -> None:
        if self.run_context is not None and not self._layout_chosen:
            self.run_id = self.run_context.run_id
            self.log_dir = self.logging_dir / self.run_name / (self.run_id + self._comment)
            resumed_dir = (self.run_context.resume or {}).get("log_dir")
            if resumed_dir:  # a resumed run adds an event file beside the earlier ones; TensorBoard merges them
                self.log_dir = Path(resumed_dir)
        from . import _events  # the SDK import happens here, in the backend's worker thread

        self._events = _events
        self._writer = _events.EventWriter(self.log_dir, filename_suffix=self.filename_suffix)
        notice(f"tensorboard: event files in {self.log_dir}; view with: tensorboard --logdir {self.log_dir.parent}")

    def resume_state(self) -> dict:
        return {"log_dir": str(self.log_dir.absolute())}

    def store_init_configuration(self, values: dict) -> None:
        events = self._events
        hparams = {key: _hparam(value) for key, value in flatten_config(values).items()}
        exact = json.dumps(values, indent=2, default=str)
        summaries = [
            events.hparams_start_value(hparams, time.time()),
            events.text_value(CONFIG_TAG, f"```json\n{exact}\n```"),
        ]
        self._writer.add_summary(summaries, step=0)
        self._wrote_hparams = True

    # -- metrics -------------------------------------------------------------------------------
    def _next_step(self, step: int | None) -> int:
        """``None`` continues from the previous step, as the dispatcher does (direct use only)."""
        self._step = self._step + 1 if step is None else int(step)
        return self._step

    def _media_step(self, step: int | None) -> int:
        return max(self._step, 0) if step is None else int(step)

    def log(self, values: dict, step: int | None = None, **kwargs: Any) -> None:
        self.log_batch([(values, step, kwargs)])

    def log_batch(self, entries: Sequence[tuple[dict, int | None, dict]]) -> None:
        try:
            self._write_batch(entries)
        except BaseException:
            self._writer.discard()  # all of the batch or none: the dispatcher retries or spills it whole
            raise
        self._flush_if_due()

    def _write_batch(self, entries: Sequence[tuple[dict, int | None, dict]]) -> None:
        events, writer = self._events, self._writer
        for values, step, kwargs in entries:
            summaries = []
            for key, value in values.items():
                if isinstance(value, str):
                    summaries.append(events.text_value(key, value))
                elif isinstance(value, numbers.Real):
                    if _FLOAT32_MAX < abs(value) < math.inf:
                        self._beyond_float32(key)
                        continue
                    summaries.append(events.scalar_value(key, value))
                else:
                    warn_once(
                        self.name, key, f"{type(value).__name__} is not a number or str; not logged", reason="type"
                    )
            for keyword in kwargs:
                if keyword not in _KNOWN_LOG_KWARGS:
                    warn_once(self.name, keyword, "unknown log keyword for tensorboard; ignored", reason="kwarg")
            step = self._next_step(step)
            if summaries:  # the dispatcher's timestamp is when log() was called; an explicit walltime wins
                writer.add_summary(summaries, step, kwargs.get("walltime", kwargs.get("timestamp")))

    def _beyond_float32(self, key: str) -> None:
        """TensorBoard stores scalars as float32, where such a value would read back as inf: not logged."""
        if warn_once(self.name, key, "a finite value beyond float32 range is not logged", reason="float32"):
            self._notes.append(f"{key!r}: values beyond float32 range (|x| > 3.4e38) were not logged")

    def report_notes(self) -> list[str]:
        return list(self._notes)

    def _flush_if_due(self) -> None:
        if self.flush_secs is not None and time.monotonic() - self._last_flush >= self.flush_secs:
            self.flush()
        elif self._writer is not None:
            self._writer.write_through()  # one write per delivered batch: a killed process keeps it

    # -- media ---------------------------------------------------------------------------------
    def log_images(self, values: dict, step: int | None = None, **kwargs: Any) -> None:
        """``{key: image or list of images}``: numpy HW/HWC/CHW arrays, NHWC batches, PIL images.

        Pass ``dataformats="NCHW"`` (or ``"CHW"``, ``"HWC"``, ...) for ambiguous layouts, as with
        ``SummaryWriter.add_images``. Float images in [0, 1] are scaled to 0-255.
        """
        from tracking_core.png import encode_png

        summaries = []
        for key, images in values.items():
            pngs = [encode_png(image) for image in _image_list(images, kwargs.get("dataformats"))]
            if pngs:
                summaries.append(self._events.image_value(key, pngs))
        if summaries:
            self._writer.add_summary(summaries, self._media_step(step), kwargs.get("walltime"))
        self._flush_if_due()

    def log_table(
        self,
        table_name: str,
        columns: list[str] | None = None,
        data: list[list[Any]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
        **kwargs: Any,
    ) -> None:
        """A text-plugin table (a 2-D string tensor; its first row holds the column names)."""
        columns, rows = table_rows(columns, data, dataframe)
        value = self._events.table_value(table_name, columns, rows)
        self._writer.add_summary([value], self._media_step(step), kwargs.get("walltime"))
        self._flush_if_due()

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        """A matplotlib figure as a PNG image summary; ``kwargs`` go to ``figure.savefig``."""
        walltime = kwargs.pop("walltime", None)
        buffer = io.BytesIO()
        figure.savefig(buffer, **{**kwargs, "format": "png"})
        self._writer.add_summary(
            [self._events.image_value(name, [buffer.getvalue()])], self._media_step(step), walltime
        )
        self._flush_if_due()

    # -- lifecycle -----------------------------------------------------------------------------
    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()
        self._last_flush = time.monotonic()

    def read_back_metrics(self) -> dict[str, dict[int, Any]]:
        """Scalars of this run per step (the last point stored at a step wins, as in TensorBoard's charts)."""
        return {tag: dict(points) for tag, points in self.read_back_history().items()}

    def read_back_history(self) -> dict[str, list[tuple[int, Any]]]:
        """Every scalar event in the run folder's event files, in file and record order.

        Read with TensorBoard's own loader (``EventFileLoader``, with its read-time migrations) and
        the files in the order its dashboards read them (sorted names); a step written twice shows twice.
        """
        from tensorboard.backend.event_processing import event_file_loader, io_wrapper
        from tensorboard.util import tensor_util

        plugin_of: dict[str, str] = {}  # a tag's plugin comes with its first value (later ones may omit it)
        history: dict[str, list[tuple[int, Any]]] = {}
        files = sorted(path for path in Path(self.log_dir).iterdir() if io_wrapper.IsTensorFlowEventsFile(str(path)))
        for path in files:
            for event in event_file_loader.EventFileLoader(str(path)).Load():
                for value in event.summary.value:
                    if value.metadata.plugin_data.plugin_name:
                        plugin_of.setdefault(value.tag, value.metadata.plugin_data.plugin_name)
                    if plugin_of.get(value.tag) in ("scalars", "text"):
                        array = tensor_util.make_ndarray(value.tensor)
                        if array.dtype.kind in "fiu" and array.size == 1:  # a key also logged as text holds strings
                            history.setdefault(value.tag, []).append((event.step, float(array)))
        return history

    def finish(self) -> None:
        writer = self._writer
        if writer is None or writer.closed:
            return
        if self._wrote_hparams:  # lets the hparams dashboard show the run as finished
            writer.add_summary([self._events.hparams_end_value(time.time())], step=max(self._step, 0))
        writer.close()
