"""``dvclive``: the tracker contract mapped onto a DVCLive folder (``dvclive.Live``), with no git or DVC call.

=====================  =====================================================================
contract               what lands in ``<logging_dir>/<project>/<run id>/dvclive/``
=====================  =====================================================================
log / log_batch        what ``Live.log_metric`` at ``Live.step = step`` writes: a row per point in
                       ``plots/metrics/<key>.tsv`` (one append per file a batch); the latest values in
                       ``metrics.json`` (strings too)
store_init_config.     ``Live.log_params``: ``params.yaml`` (nesting kept; a later ``log_config`` merges)
log_images             ``Live.log_image``: ``plots/images/<key>/<step>.png`` (``<step>_<i>.png`` for lists)
log_figure             the figure as a PNG through ``Live.log_image``, named as an image
log_table              not supported (DVCLive has no table type): the dispatcher warns once
log_histogram          the contract's summary metrics (DVCLive has no histogram type)
log_artifact(s)        a copy under ``artifacts/<artifact_path>/`` (DVCLive's ``copy=True`` place)
log_system_metrics     ``plots/metrics/system/<name>.tsv`` rows ``timestamp step value`` at step = sample index
                       (DVCLive's own monitor's files and columns; ``live.step`` untouched), latest in ``metrics.json``
flush / finish         ``metrics.json`` rewritten / ``metrics.json`` and the report (``report=``)
per-rank runs          each rank's own run folder (``.../<run id>/rank-<N>/dvclive``)
resume                 the same folder with ``Live(resume=True)``: rows are appended, params kept
=====================  =====================================================================
"""

from __future__ import annotations

import numbers
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tracking_core import GeneralTracker
from tracking_core.kit import (
    check_artifact_path,
    figure_to_png,
    flatten_config,
    image_list,
    merge_config,
    notice,
    sdk_object,
    stringify,
    to_hwc_uint8,
    warn_links_leaving,
    warn_once,
)

from . import rows
from .names import MetricNames, safe_path
from .reader import read_history, read_images
from .rewind import rewind_files
from .startup import LIVE_OPTIONS, REPO_ONLY_OPTIONS, default_dir, open_live, stop_given_monitor

#: ``Live.log_metric`` keywords a caller may pass through ``log(..., **kwargs)`` (as accelerate does).
_METRIC_KEYWORDS = ("timestamp", "plot")


class DVCLiveTracker(GeneralTracker):
    """Writes a DVCLive folder (``metrics.json``, ``params.yaml``, ``plots/``) that ``dvc plots``, ``dvc
    metrics`` and DVC's VS Code extension read, without running git or DVC.

    Example::

        import tracking_core

        with tracking_core.init("my-project", log_with="dvclive", logging_dir="runs") as run:
            run.log({"train/loss": 0.5}, step=0)
        # then: runs/my-project/<run id>/dvclive/plots/metrics/train/loss.tsv

    Each run gets ``<logging_dir>/<project>/<run id>/dvclive`` (each rank its own in per-rank mode).
    Used directly (no dispatcher) it writes to ``./dvclive`` as DVCLive and accelerate do, or to
    ``<logging_dir>/dvclive`` when ``logging_dir`` is given. Settings (``init_kwargs={"dvclive": {...}}``),
    named as in ``dvclive.Live``:

    * ``dir``: the exact DVCLive folder (overrides the layout above).
    * ``resume``: continue the folder's files instead of clearing them (a resumed tracking run does this
      on its own, in the earlier process's folder).
    * ``report`` (``"html"``, ``"md"``) and ``monitor_system``: as in DVCLive (its system monitor is off
      unless asked, as with accelerate's ``Live(**kwargs)``).
    * ``live``: an existing ``dvclive.Live`` to log to, as accelerate allows (it is used as it is:
      its own repository and Studio settings apply, and ``finish()`` calls its ``end()``).

    ``save_dvc_exp``, ``dvcyaml``, ``cache_images``, ``exp_name`` and ``exp_message`` need a DVC
    repository and git: they are ignored with one warning (commit the folder, or ``dvc exp save``, yourself).
    DVCLive's own environment variables are read by DVCLive (``DVCLIVE_LOGLEVEL``, ``DVCLIVE_RESUME``);
    none is set here. ``tracker`` (and ``live``, as in accelerate) returns the ``dvclive.Live``.

    With ``init(system_metrics=True)`` the library's samples go where DVCLive's own monitor writes
    (``plots/metrics/system/cpu.percent.tsv``, ...: ``timestamp``, ``step`` = sample index, value) and that
    monitor is off, ``monitor_system=True`` included (with a report note). A rewind leaves those files alone.
    """

    name = "dvclive"
    requires_logging_directory = False
    main_process_only = True
    durable_on_return = True  # each point is a row appended to its .tsv file when log returns

    def __init__(
        self,
        run_name: str | None = None,
        live: Any = None,
        *,
        logging_dir: str | os.PathLike[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        unknown = sorted(set(kwargs) - {"dir", *LIVE_OPTIONS, *REPO_ONLY_OPTIONS})
        if unknown:
            raise TypeError(f"DVCLiveTracker got unknown arguments {unknown}; dvclive.Live takes dir, {LIVE_OPTIONS}")
        self.run_name = run_name
        self.logging_dir = Path(logging_dir) if logging_dir is not None else None
        self._given_live = live
        self._live: Any = live
        self._explicit_dir = kwargs.pop("dir", None)
        self._ignored = sorted(key for key in REPO_ONLY_OPTIONS if kwargs.pop(key, None))
        self.live_kwargs = {key: kwargs[key] for key in LIVE_OPTIONS if key in kwargs}
        #: The DVCLive folder (known once started).
        self.dir: Path | None = Path(live.dir) if live is not None else None
        self._config: dict[str, Any] = {}
        self._names = MetricNames()
        self._last_step: int | None = None
        self._finished = False

    # -- start ---------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._ignored:
            warn_once(
                self.name,
                "options",
                f"{', '.join(self._ignored)} need a DVC repository and git; ignored (nothing here runs git or dvc)",
                reason="repo-only",
            )
            self.add_note(f"ignored dvclive options that need a DVC repository: {', '.join(self._ignored)}")
        if self._live is None:
            self.dir = default_dir(self, self._explicit_dir)
            self._live = open_live(self, self.dir)
            self._names.learn(Path(self._live.plots_dir) / "metrics")  # a resumed folder's names hold their places
        elif self.run_context is not None and self.run_context.system_metrics:
            stop_given_monitor(self, self._live)
        notice(f"dvclive: run folder {self.dir}; view with: dvc plots show {self.dir}/plots/metrics")

    # -- the SDK object ------------------------------------------------------------------------------
    tracker = live = sdk_object(
        "_live", "The ``dvclive.Live``, ``live`` as accelerate's tracker names it (``None`` before ``start()``)."
    )

    # -- keys ----------------------------------------------------------------------------------------
    def _metric_name(self, key: str) -> str:
        return self._names.name(key)

    def sanitize_key(self, key: str) -> str:
        """The key as a path inside DVCLive's folder (``..``, ``:`` and over-long names rewritten), and not
        both a value and a group of values in ``metrics.json`` (``a`` and ``a/b``: the later becomes ``a_b``)."""
        return self._metric_name(key)

    # -- config --------------------------------------------------------------------------------------
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        """``Live.log_params``: ``params.yaml``; a later call (``log_config``) merges its keys."""
        self._config = merge_config(self._config, values)
        try:
            self._live.log_params(self._config)
        except Exception as error:  # a value YAML cannot represent: the flat text copy still lands
            warn_once(self.name, "params", f"DVCLive refused the config ({error!r}); stored flattened as strings")
            self._live.log_params({key: stringify(value) for key, value in flatten_config(self._config).items()})

    def log_run_context(self, context: dict[str, Any]) -> None:
        """``params.yaml`` under ``run_context`` (docs/run-context.md): DVCLive has no place of its own for the
        git state or the command, and ``dvc params diff`` then compares them between runs with the config."""
        self.store_init_configuration({"run_context": context})

    # -- metrics -------------------------------------------------------------------------------------
    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """What ``Live.log_metric`` per value at ``Live.step = step`` writes; ``step=None`` (direct use) logs at the step
        after the previous call's (DVCLive's current step at first), as accelerate's ``next_step()`` counts."""
        self.log_batch([(values, step, kwargs)])

    def log_batch(self, entries: Sequence[tuple[dict[str, Any], int | None, dict[str, Any]]]) -> None:
        """The batch's points as ``Live.log_metric`` writes them, one append per ``.tsv`` (:mod:`.rows`)."""
        live = self._live
        try:
            rows.log_points(live, self._points(entries))
        finally:
            if self._last_step is not None:
                live.step = self._last_step
            live.make_summary()  # metrics.json: the latest values, as DVCLive's next_step() writes them

    def _points(self, entries: Sequence[tuple[dict[str, Any], int | None, dict[str, Any]]]) -> Iterator[rows.Point]:
        for values, step, kwargs in entries:
            options = {}
            for keyword, value in kwargs.items():
                if keyword in _METRIC_KEYWORDS and isinstance(value, bool):
                    options[keyword] = value
                else:
                    warn_once(self.name, keyword, "not a Live.log_metric keyword for dvclive; ignored", reason="kwarg")
            if step is None:  # direct use: the step after the previous call's (DVCLive's own at first)
                step = self._last_step + 1 if self._last_step is not None else self._live.step
            self._last_step = at = int(step)
            for key, value in values.items():
                value = self._metric_value(key, value)
                if value is not None:
                    yield self._metric_name(key), at, value, options

    def _metric_value(self, key: str, value: Any) -> int | float | str | None:
        """What DVCLive's ``.tsv`` keeps as it was given: Python numbers (a bool as 0/1) and strings."""
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, str):
            return value
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real):
            return float(value)
        warn_once(self.name, key, f"{type(value).__name__} is not a number or str; not logged", reason="type")
        return None

    def log_system_metrics(self, values: dict[str, float], index: int, timestamp: float) -> None:
        """``plots/metrics/system/<name>.tsv`` rows at step = ``index`` with the sample's time (:func:`rows.log_sample`)."""
        named = {self._metric_name(key): float(value) for key, value in values.items()}
        rows.log_sample(self._live, named, int(index), int(timestamp * 1000))
        self._live.make_summary()

    # -- media ---------------------------------------------------------------------------------------
    def _save_png(self, key: str, step: int | None, pixels: list[Any]) -> None:
        from PIL import Image

        live = self._live
        at = int(step) if step is not None else live.step
        folder = safe_path(key)
        for index, array in enumerate(pixels):
            file = f"{at}.png" if len(pixels) == 1 else f"{at}_{index}.png"
            live.log_image(f"{folder}/{file}", Image.fromarray(array))

    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """``{key: image, list of images or batch}`` (numpy HW/HWC/CHW, NCHW/NHWC batches, PIL, tensors) as PNGs
        ``plots/images/<key>/<step>.png``, DVCLive's step-slider layout; ``dataformats=`` settles a layout."""
        for keyword in kwargs:
            if keyword != "dataformats":
                warn_once(self.name, keyword, "unknown log_images keyword for dvclive; ignored", reason="kwarg")
        for key, value in values.items():
            self._save_png(key, step, [to_hwc_uint8(item, kwargs.get("dataformats")) for item in image_list(value)])

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        """A matplotlib (or plotly) figure as a PNG image ``plots/images/<name>/<step>.png``; kwargs go to ``savefig``."""
        import io

        import numpy as np
        from PIL import Image

        with Image.open(io.BytesIO(figure_to_png(figure, **kwargs))) as image:
            self._save_png(name, step, [np.asarray(image)])

    # -- artifacts -----------------------------------------------------------------------------------
    def _artifacts_dir(self, artifact_path: str | None) -> Path:
        prefix = check_artifact_path(artifact_path)
        root = Path(self._live.artifacts_dir)
        return root / prefix if prefix else root

    def log_artifact(self, local_path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        """A copy of the file in ``artifacts/<artifact_path>/`` (where DVCLive's ``copy=True`` puts one).

        ``Live.log_artifact`` itself only registers the file with DVC (``dvc add``); without a DVC
        repository it skips the file, so the copy is made with DVCLive's own copying helper here.
        """
        from dvclive.utils import clean_and_copy_into

        source = Path(local_path)
        if not source.is_file():
            raise FileNotFoundError(f"log_artifact: {source} is not a file")
        target = self._artifacts_dir(artifact_path)
        target.mkdir(parents=True, exist_ok=True)
        clean_and_copy_into(source, target)

    def log_artifacts(self, local_dir: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        """A copy of every file under the folder in ``artifacts/<artifact_path>/``, its layout kept."""
        root = Path(local_dir)
        if not root.is_dir():
            raise NotADirectoryError(f"log_artifacts: {root} is not a directory")
        warn_links_leaving(root)
        shutil.copytree(root, self._artifacts_dir(artifact_path), dirs_exist_ok=True)

    # -- flush / finish ------------------------------------------------------------------------------
    def flush(self) -> None:
        """``metrics.json`` rewritten (every point is already in its ``.tsv``)."""
        if self._live is not None and not self._finished:
            self._live.make_summary()

    def finish(self) -> None:
        """``metrics.json`` and the report, as ``Live.end()`` writes them, without its git, DVC and Studio steps.

        An injected ``live`` (accelerate's ``live=``) is ended with its own ``end()``.
        """
        live = self._live
        if live is None or self._finished:
            return
        self._finished = True
        if self._given_live is not None:
            live.end()
            return
        monitor = getattr(live, "_system_monitor", None)
        if monitor is not None:
            monitor.end()
        live.make_summary()
        live.make_report()

    # -- resume / read-back --------------------------------------------------------------------------
    def rewind(self, step: int) -> str:
        """DVCLive's files are plain: the rows at ``step`` or later leave each ``.tsv`` (rewritten atomically)
        and the images from ``step`` on are removed, so ``dvc plots`` shows each step once."""
        removed, images = rewind_files(self._plots(), step)
        return f"rewound to step {step}: {removed} rows and {images} images from step {step} on were removed from DVCLive's files"

    def resume_state(self) -> dict[str, Any] | None:
        return {"dir": str(Path(self._live.dir).absolute())} if self._live is not None else None

    def _plots(self) -> Path:
        """DVCLive's ``plots`` folder (``Live.plots_dir``), known before the ``Live`` exists."""
        return Path(self._live.plots_dir) if self._live is not None else Path(self.dir or "dvclive") / "plots"

    def read_back_history(self) -> dict[str, list[tuple[int, Any]]]:
        """Every numeric row of the run's ``plots/metrics/*.tsv`` files, in file order (a step logged
        twice shows twice); DVCLive's ``"nan"``/``"inf"`` read back as floats, text rows are left out."""
        return read_history(self._plots())

    def read_back_system_metrics(self) -> dict[str, list[tuple[int, float]]]:
        """The rows of ``plots/metrics/system/*.tsv`` (DVCLive's monitor's, or the samples at step = their
        index), where DVCLive keeps system metrics."""
        return {name: points for name, points in self.read_back_history().items() if name.startswith("system/")}

    def read_back_metrics(self) -> dict[str, dict[int, Any]]:
        """The metric series per step (the last row of a step wins, as in ``dvc plots``)."""
        return {name: dict(points) for name, points in self.read_back_history().items()}

    def read_back_images(self) -> dict[str, list[tuple[int, Any]]]:
        """Every PNG under ``plots/images/<key>/``, per key, as ``(step, HW or HWC uint8 array)``."""
        return read_images(self._plots())
