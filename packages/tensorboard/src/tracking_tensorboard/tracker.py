"""``tensorboard``: the tracker contract mapped onto TensorBoard event files.

=====================  =====================================================================
contract               what lands in ``<logging_dir>/<project>/<run id>/events.out.tfevents.*``
=====================  =====================================================================
log / log_batch        numbers: scalar summaries; strings: text-plugin summaries (one event per call);
                       a dict value: ``add_scalars`` (one sub-run per inner key, as accelerate does)
store_init_config.     the exact config as JSON text (rewritten merged by ``log_config``); hparams-plugin
                       ``session_start_info`` (flat, merged) at finish or a flush 60 s after the config
log_images             image-plugin summary per key, every image of the key a sample of one tag
log_table              text-plugin 2-D string tensor (rendered as a table, first row = columns)
log_figure             the figure as a PNG image summary
log_histogram          a ``HistogramProto`` (the histograms and distributions dashboards)
log_artifact(s)        not supported (TensorBoard has no artifacts): the dispatcher warns once
log_system_metrics     scalars ``system/...`` in the sub-run ``<run folder>/system``, step = sample index,
                       wall time = the sample's (TensorBoard itself records no system metrics)
flush / finish         fsync of the event file / hparams ``session_end_info`` + close
per-rank runs          ``<run folder>/rank-<N>``: one sub-run per rank in the job's run folder
=====================  =====================================================================
"""

from __future__ import annotations

import json
import math
import numbers
import os
import shlex
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tracking_core import GeneralTracker, Histogram
from tracking_core.kit import (
    check_name,
    check_optional_name,
    context_summary,
    encode_png,
    figure_to_png,
    flatten_config,
    image_list,
    merge_config,
    notice,
    sdk_object,
    stringify,
    table_rows,
    to_hwc_uint8,
    warn_once,
)

_FLOAT32_MAX = 3.4028234663852886e38

#: Text-summary tag holding the run's configuration as exact JSON (hparams keep a flat copy).
CONFIG_TAG = "config/json"
#: the text panel of the run context (log_run_context)
CONTEXT_TAG = "run_context"
#: Seconds after the first config at which a flush writes the hparams (``finish()`` writes them anyway):
#: TensorBoard keeps a run's first hparams, and frameworks hand theirs over just after the run starts.
HPARAMS_SETTLE_SECONDS = 60.0
_KNOWN_LOG_KWARGS = ("walltime", "timestamp")
#: The sub-run (folder inside the run's) holding the library's system samples (``log_system_metrics``).
SYSTEM_RUN = "system"


def _new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


def _hparam(value: Any) -> bool | float | str:
    """The hparams plugin takes numbers, bools and strings; everything else goes in as text.

    NaN/inf also become text: they would poison the dashboard's min/max domain of the column.
    """
    if isinstance(value, (bool, int, str)) or (isinstance(value, float) and math.isfinite(value)):
        return value
    return stringify(value)


def _pngs(images: Any, dataformats: str | None) -> list[bytes]:
    """PNGs of one image, a list of them or a batch; ``dataformats`` (``NCHW``, ``CHW``, ``HWC``...) as in
    ``SummaryWriter.add_images``/``add_image`` settles the layout, else it is read from the shape."""
    if dataformats and "N" in dataformats.upper():
        import numpy as np

        layout = dataformats.upper()
        batch = np.moveaxis(np.asarray(images), layout.index("N"), 0)
        return [encode_png(to_hwc_uint8(image, layout.replace("N", ""))) for image in batch]
    return [encode_png(to_hwc_uint8(image, dataformats)) for image in image_list(images)]


class TensorBoardTracker(GeneralTracker):
    """Writes TensorBoard event files, with no torch, TensorFlow or tensorboardX involved.

    Example::

        import tracking_core

        with tracking_core.init("my-project", log_with="tensorboard", logging_dir="runs") as run:
            run.log({"train/loss": 0.5, "note": "warm-up done"}, step=0)
        # then: tensorboard --logdir runs/my-project

    Each run writes one event file into ``<logging_dir>/<run_name>/<run_id>/`` (``log_dir``), so
    runs of one project sit side by side in TensorBoard. Settings (``init_kwargs={"tensorboard":
    {...}}``), named as in ``torch.utils.tensorboard.SummaryWriter``, which accelerate passes them to:

    * ``log_dir``: the exact event-file directory (overrides the layout above).
    * ``comment``: appended to the run folder's name.
    * ``filename_suffix``: appended to the event file's name.
    * ``purge_step``: TensorBoard hides this run's earlier events at or past this step (a restart
      from a checkpoint).
    * ``flush_secs``: at most this many seconds between flushes while logging (by default the
      dispatcher flushes every second while data is pending, on ``flush()`` and at ``finish()``).
    * ``max_queue``: accepted for SummaryWriter compatibility; there is no queue to size.
    * ``run_id``: names the run (by default the dispatcher chooses a fresh id): the run's id and folder,
      where its journal and event files sit together. An id taken by an earlier run is refused at
      ``init`` unless the run resumes it (``resume="<id>"``, or ``resume=True``): a second event file in
      the folder would merge into the earlier run in TensorBoard (two values at each step).

    TensorBoard records nothing by itself (no system monitor, no code capture), as with accelerate's
    ``SummaryWriter``. With ``init(system_metrics=True)`` the library's samples are scalars ``system/...`` in
    the sub-run ``<log_dir>/system``: step = sample index, wall time = when it was taken. A sub-run of its
    own because TensorBoard drops a run's events by step at a restart (``purge_step``, a rewind), on every
    tag of the run: the samples' indices are not training steps.

    TensorBoard itself has no environment variables for writing; none are read. Values are stored
    as float32 (TensorBoard's scalar type). ``tracker`` (and ``writer``, as in accelerate) returns the
    :class:`~tracking_tensorboard.event_writer.EventWriter`, which has SummaryWriter's writing methods
    (``add_scalar``, ``add_scalars``, ``add_histogram``, ``add_histogram_raw``, ``add_image``,
    ``add_images``, ``add_figure``, ``add_text``, ``add_hparams``, ``flush``, ``close``).
    """

    name = "tensorboard"
    #: ``init_kwargs={"tensorboard": {"run_id": ...}}`` names the run (tracking_core.run.session.named_run_id)
    run_id_keyword = "run_id"
    durable_on_return = True  # each delivered batch reaches the event file (fsync at flush)
    requires_logging_directory = True
    wants_timestamps = True

    def __init__(
        self,
        run_name: str,
        logging_dir: str | os.PathLike[str],
        *,
        run_id: str | None = None,
        log_dir: str | os.PathLike[str] | None = None,
        comment: str = "",
        filename_suffix: str = "",
        purge_step: int | None = None,
        max_queue: int | None = None,
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
        self.purge_step = purge_step
        self.flush_secs = flush_secs
        self._writer: Any = None
        self._summaries: Any = None
        self._config: dict[str, Any] = {}
        self._hparams: dict[str, Any] = {}
        self._hparams_at: float | None = None  # when the hparams are written at a flush (monotonic)
        self._wrote_hparams = False
        self._last_flush = time.monotonic()

    def start(self) -> None:
        context = self.run_context
        if context is not None and not self._layout_chosen:
            self.run_id = context.run_id
            self.log_dir = self.logging_dir / self.run_name / (self.run_id + self._comment)
            resumed_dir = (context.resume or {}).get("log_dir")
            if resumed_dir:  # a resumed run adds an event file beside the earlier ones; TensorBoard merges them
                self.log_dir = Path(resumed_dir)
            elif context.group is not None:  # per-rank runs: sub-runs of the job's run folder
                self.log_dir = (
                    self.logging_dir / self.run_name / (context.group + self._comment) / f"rank-{context.rank}"
                )
        from . import event_writer, summaries  # the SDK import happens here, in the backend's worker thread

        self._summaries = summaries
        self._writer = event_writer.EventWriter(self.log_dir, self.filename_suffix, self.purge_step)
        notice(
            f"tensorboard: event files in {self.log_dir}; view with: "
            f"tensorboard --logdir {shlex.quote(str(self.log_dir.parent))}"
        )

    # -- the SDK object ----------------------------------------------------------------------------
    tracker = writer = sdk_object(
        "_writer", "The run's ``EventWriter``, with SummaryWriter's writing methods (``None`` before ``start()``)."
    )

    # -- config ------------------------------------------------------------------------------------
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        """The config as exact JSON text at once, and as the hparams plugin's session start once it settles.

        A later call (``log_config``) merges its keys; the JSON text is rewritten whole at step 0 (a
        reader shows the last one). TensorBoard's hparams dashboard keeps a run's *first*
        ``session_start_info``, so it is written when the config has settled: at ``finish()``, or at
        the first flush :data:`HPARAMS_SETTLE_SECONDS` after the first config (a run killed later
        keeps it). Keys arriving after that are only in the JSON text, with a report note.
        """
        self._config = merge_config(self._config, values)
        if self._hparams_at is None:
            self._hparams_at = time.monotonic() + HPARAMS_SETTLE_SECONDS
        exact = json.dumps(self._config, indent=2, default=str)
        self._writer.add_summary([self._summaries.text_value(CONFIG_TAG, f"```json\n{exact}\n```")], step=0)
        if self._wrote_hparams:
            hparams = self._flat_hparams()
            later = sorted(key for key in hparams if self._hparams.get(key, object()) != hparams[key])
            if later:
                self.add_note(
                    f"config keys given after the hyper-parameters were written (e.g. {', '.join(later[:3])}) are "
                    f"in the run's {CONFIG_TAG} text, not in TensorBoard's hparams table (it keeps a run's first)"
                )
        self._flush_if_due()

    def _flat_hparams(self) -> dict[str, Any]:
        return {key: _hparam(value) for key, value in flatten_config(self._config).items()}

    def _write_hparams(self) -> None:
        """The hparams plugin's session start with the merged config, once per run."""
        if self._wrote_hparams or self._hparams_at is None:
            return
        self._hparams = self._flat_hparams()
        self._writer.add_summary([self._summaries.hparams_start_value(self._hparams, time.time())], step=0)
        self._wrote_hparams = True

    # -- metrics -------------------------------------------------------------------------------
    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """Numbers as scalars, strings as text, a dict of numbers as ``add_scalars``; ``step=None`` is 0,
        as in SummaryWriter (the dispatcher always passes a step)."""
        self.log_batch([(values, step, kwargs)])

    def log_batch(self, entries: Sequence[tuple[dict[str, Any], int | None, dict[str, Any]]]) -> None:
        try:
            self._write_batch(entries)
        except BaseException:
            self._writer.discard()  # all of the batch or none: the dispatcher retries or spills it whole
            raise
        self._flush_if_due()

    def _write_batch(self, entries: Sequence[tuple[dict[str, Any], int | None, dict[str, Any]]]) -> None:
        events, writer = self._summaries, self._writer
        scalar_events: list[bytes] = []  # steps of plain numbers, serialized and framed together
        for values, step, kwargs in entries:
            for keyword in kwargs:
                if keyword not in _KNOWN_LOG_KWARGS:
                    warn_once(self.name, keyword, "unknown log keyword for tensorboard; ignored", reason="kwarg")
            walltime = kwargs.get("walltime", kwargs.get("timestamp"))  # an explicit walltime wins
            encoded = events.scalars_event(values, step, walltime)
            if encoded is not None:
                scalar_events.append(encoded)
                continue
            if scalar_events:  # the events stay in the order they were logged
                writer.add_serialized(scalar_events)
                scalar_events = []
            summaries = []
            for key, value in values.items():
                if isinstance(value, str):
                    summaries.append(events.text_value(key, value))
                elif isinstance(value, numbers.Real):
                    if _FLOAT32_MAX < abs(value) < math.inf:  # type: ignore[operator]  # typeshed: abs(Real) is unordered
                        self._beyond_float32(key)
                        continue
                    summaries.append(events.scalar_value_of(key, value))
                elif isinstance(value, Mapping):
                    writer.add_scalars(key, value, step, walltime)
                else:
                    warn_once(
                        self.name, key, f"{type(value).__name__} is not a number or str; not logged", reason="type"
                    )
            if summaries:
                writer.add_summary(summaries, step, walltime)
        if scalar_events:
            writer.add_serialized(scalar_events)

    def _beyond_float32(self, key: str) -> None:
        """TensorBoard stores scalars as float32, where such a value would read back as inf: not logged."""
        if warn_once(self.name, key, "a finite value beyond float32 range is not logged", reason="float32"):
            self.add_note(f"{key!r}: values beyond float32 range (|x| > 3.4e38) were not logged")

    def _flush_if_due(self) -> None:
        if self.flush_secs is not None and time.monotonic() - self._last_flush >= self.flush_secs:
            self.flush()
        elif self._writer is not None:
            self._writer.write_through()  # one write per delivered batch: a killed process keeps it

    def log_system_metrics(self, values: dict[str, float], index: int, timestamp: float) -> None:
        """Scalars ``system/...`` at step = ``index`` and the sample's wall time, in the ``system`` sub-run."""
        writer = self._writer._child(SYSTEM_RUN)
        encoded = self._summaries.scalars_event(values, index, timestamp)
        if encoded is not None:
            writer.add_serialized([encoded])
        else:  # NaN, infinity or a value beyond float32 (left out, as in log)
            kept = [
                self._summaries.scalar_value_of(k, v) for k, v in values.items() if not _FLOAT32_MAX < abs(v) < math.inf
            ]
            if kept:
                writer.add_summary(kept, index, timestamp)
        self._flush_if_due()

    # -- media ---------------------------------------------------------------------------------
    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """``{key: image, list of images or batch}``: numpy HW/HWC/CHW arrays, NHWC/NCHW batches, PIL, tensors.

        Pass ``dataformats="NCHW"`` (or ``"CHW"``, ``"HWC"``, ...) for ambiguous layouts, as with
        ``SummaryWriter.add_images``. Float images in [0, 1] are scaled to 0-255. Each key is one tag
        holding its images as samples.
        """
        summaries = []
        for key, images in values.items():
            pngs = _pngs(images, kwargs.get("dataformats"))
            if pngs:
                summaries.append(self._summaries.image_value(key, pngs))
        if summaries:
            self._writer.add_summary(summaries, step, kwargs.get("walltime"))
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
        value = self._summaries.table_value(table_name, columns, rows)
        self._writer.add_summary([value], step, kwargs.get("walltime"))
        self._flush_if_due()

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        """A matplotlib (or plotly) figure as a PNG image summary; ``kwargs`` go to ``figure.savefig``."""
        walltime = kwargs.pop("walltime", None)
        png = figure_to_png(figure, **kwargs)
        self._writer.add_summary([self._summaries.image_value(name, [png])], step, walltime)
        self._flush_if_due()

    # -- histogram -------------------------------------------------------------------------------
    def log_histogram(self, name: str, histogram: Histogram, step: int | None = None, **kwargs: Any) -> None:
        """TensorBoard's own histogram: the bins' right edges as ``bucket_limit``, counts as ``bucket``."""
        self._writer.add_summary([self._summaries.histogram_value(name, histogram)], step, kwargs.get("walltime"))
        self._flush_if_due()

    # -- flush / finish ------------------------------------------------------------------------
    def flush(self) -> None:
        if self._writer is not None:
            if self._hparams_at is not None and time.monotonic() >= self._hparams_at:
                self._write_hparams()
            self._writer.flush()
        self._last_flush = time.monotonic()

    def finish(self) -> None:
        writer = self._writer
        if writer is None or writer.closed:
            return
        self._write_hparams()
        if self._wrote_hparams:  # lets the hparams dashboard show the run as finished
            writer.add_summary([self._summaries.hparams_end_value(time.time())], step=0)
        writer.close()

    # -- run context (docs/run-context.md) --------------------------------------------------------
    def log_run_context(self, context: dict[str, Any]) -> None:
        """A ``run_context`` text panel (the main fields as a table, then the whole context as JSON), and
        the main fields in the hparams table under ``run_context/``; the diff and package list stay in
        the run folder (TensorBoard has no artifacts)."""
        fields = context_summary(context)
        rows = "".join(f"| {name} | `{value.replace('|', '/')}` |\n" for name, value in fields.items())
        whole = json.dumps(context, indent=1, default=str)
        text = f"| field | value |\n|---|---|\n{rows}\n```json\n{whole}\n```"
        self._writer.add_summary([self._summaries.text_value(CONTEXT_TAG, text)], step=0)
        self.store_init_configuration({"run_context": fields})

    # -- resume / read-back ----------------------------------------------------------------------
    def rewind(self, step: int) -> str:
        """A restart event at ``step`` (what ``purge_step`` writes): TensorBoard drops the earlier events from it on."""
        assert self._writer is not None  # called after start()
        self._writer.purge(step)
        return (
            f"rewound to step {step}: a restart event at step {step} makes TensorBoard drop the earlier "
            f"process's events from step {step} on"
        )

    def resume_state(self) -> dict[str, Any]:
        return {"log_dir": str(self.log_dir.absolute())}

    def read_back_metrics(self) -> dict[str, dict[int, Any]]:
        """Scalars of this run per step (the last point stored at a step wins, as in TensorBoard's charts)."""
        return {tag: dict(points) for tag, points in self.read_back_history().items()}

    def read_back_history(self) -> dict[str, list[tuple[int, Any]]]:
        """Every scalar event in the run folder's event files, in file and record order.

        Read with TensorBoard's own loader (``EventFileLoader``, with its read-time migrations) and
        the files in the order its dashboards read them (sorted names); a step written twice shows twice,
        unless a restart event (a rewind) purged the first one, as TensorBoard's dashboards do.
        """
        from .reader import scalar_history

        return scalar_history(Path(self.log_dir))

    def read_back_system_metrics(self) -> dict[str, list[tuple[int, float]]]:
        """The scalars of the run's ``system`` sub-run (the samples, at step = their index), in file order."""
        from .reader import scalar_history

        folder = Path(self.log_dir) / SYSTEM_RUN
        return scalar_history(folder) if folder.is_dir() else {}

    def read_back_images(self) -> dict[str, list[tuple[int, Any]]]:
        """Every image sample of this run, per tag, as ``(step, HW or HWC uint8 array)``, decoded with Pillow."""
        from .reader import images_of

        return images_of(Path(self.log_dir))
