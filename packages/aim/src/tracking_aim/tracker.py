"""``AimTracker``: the tracker contract mapped onto an ``aim.Run`` in an embedded Aim repo.

contract                      -> Aim
``log`` / ``log_batch``       -> numeric series (one RocksDB write per batch, see ``series_writer``), strings as ``aim.Text``
``store_init_configuration``  -> ``run["hparams"] = config`` (nesting kept)
``store_init_configuration`` again (``log_config``) -> the merged config written to ``run["hparams"]`` again
``log_images``                -> ``run.track(aim.Image | [aim.Image, ...], name=key, step=step)``
``log_figure``                -> matplotlib: ``aim.Image`` (PNG, works offline); plotly: ``aim.Figure`` (interactive)
``log_table``                 -> ``aim.Text`` holding a markdown table (Aim has no table type), context ``{"type": "table"}``
``log_histogram``             -> ``aim.Distribution(hist=counts, bin_range=(first edge, last edge))``
per-rank runs                 -> the same experiment, run name ``<name>-rank<N>``, tags ``group:<id>`` and ``rank:<N>``
``log_artifact(s)``           -> ``run.log_artifact`` into ``file://<logging_dir>/aim-artifacts`` unless ``artifacts_uri`` is given
``log_system_metrics``        -> ``__system__<name>`` series (Aim's own system metrics), step = sample index
``flush``                     -> fsync of the run's RocksDB write-ahead logs; with an ``aim://`` server, waits
                                 until the server acknowledged every write Aim's client queued
``finish``                    -> finished: ``run.report_successful_finish()``; crashed or killed: the status as
                                 ``run.log_error``; then ``run.close()`` and the run's RocksDB handles let go
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any, cast

from tracking_core import GeneralTracker, Histogram
from tracking_core.kit import (
    MARKER_KEY,
    figure_to_png,
    flatten_config,
    image_list,
    merge_config,
    sdk_object,
    store_marker,
    stringify,
    table_rows,
    warn_once,
)

from . import reader, system
from .media import artifact_name, image_and_caption, is_single_image, markdown_table
from .older.v3_18 import has_artifacts
from .older.v3_25 import artifacts_uri
from .run_context import system_params
from .run_end import record_end
from .sdk import Sdk, drain_tracking_thread, load_sdk, release_run, run_containers
from .series_writer import SeriesWriter
from .startup import announce, name_run, open_run, repo_location

#: kwargs of ``Run.track`` that a caller may pass through ``log_kwargs``.
_TRACK_KEYWORDS = ("context", "epoch")
#: ``log`` kwargs understood here: ``Run.track``'s, and the dispatcher's time of the ``log`` call.
_LOG_KEYWORDS = (*_TRACK_KEYWORDS, "timestamp")
_TABLE_CONTEXT = {"type": "table"}


class AimTracker(GeneralTracker):
    """Send a run to an Aim repository: the embedded one under ``logging_dir`` unless ``repo`` says otherwise.

    Example::

        import tracking_core

        with tracking_core.init("my-project", log_with="aim", logging_dir="runs", config={"lr": 1e-3},
                                init_kwargs={"aim": {"name": "baseline"}}) as run:
            for step in range(100):
                run.log({"train/loss": 1 / (step + 1)}, step=step)
        # view: aim up --repo runs

    ``run_name`` (the project name given to ``init_trackers``, as in accelerate) becomes the run's Aim
    ``experiment``. Keyword arguments:

    * ``name`` or ``run_name`` -- the run's display name (Aim's default is ``Run: <hash>``);
      ``tags`` (list of str) and ``description`` are set on the run too.
    * ``artifacts_uri`` -- where ``log_artifact(s)`` copies files (any URI Aim accepts, e.g. ``s3://...``);
      default ``file://<logging_dir>/aim-artifacts``.
    * everything else goes to ``aim.Run`` unchanged: ``repo`` (a path or ``aim://host:port``; wins over
      ``logging_dir``), ``experiment`` (wins over the project name), ``run_hash`` + ``force_resume`` to
      resume, ``system_tracking_interval`` / ``capture_terminal_logs`` / ``log_system_params``.

    What Aim records by itself is left as Aim defaults it, as with accelerate's ``AimTracker``: its resource
    tracker samples CPU, memory, disk and GPUs every 10 s into ``__system__*`` series, and the process's
    terminal output is kept as the run's logs (both in the repo). ``log_system_params`` stays Aim's default,
    off (installed packages, environment variables and ``git`` calls); the run context (``init(context=True)``)
    stores the same facts in the same place. With ``init(system_metrics=True)`` the library's samples go to
    ``__system__*`` series instead (``system/gpu.0.utilization_percent`` -> ``__system__gpu.utilization_percent``
    in context ``{"gpu": 0}``; step = sample index, time = the sample's) and Aim's resource tracker is off.

    Aim's own environment variables keep working (``__AIM_REPO_NAME__`` renames the ``.aim`` folder).
    ``log`` kwargs ``context`` (a dict; Aim keeps a separate series per context) and ``epoch`` go to
    ``Run.track``.
    """

    name = "aim"
    requires_logging_directory = True
    wants_timestamps = True

    def __init__(
        self, run_name: str | None = None, /, logging_dir: str | os.PathLike[str] | None = ".", **kwargs: Any
    ) -> None:
        # ``run_name`` is positional-only so that ``init_kwargs={"aim": {"run_name": ...}}`` names the run.
        super().__init__()
        self.project_name = run_name
        self.logging_dir = Path(logging_dir if logging_dir is not None else ".")
        self.display_name: str | None = kwargs.pop("name", None) or kwargs.pop("run_name", None)
        self.tags: list[str] = list(kwargs.pop("tags", None) or [])
        self.description: str | None = kwargs.pop("description", None)
        self.artifacts_uri: str | None = kwargs.pop("artifacts_uri", None)
        self.run_kwargs = kwargs
        self.run_hash: str | None = None
        self._run: Any = None
        self._closed = False
        self._series_kind: dict[tuple[str, str], str] = {}
        self._sdk: Sdk | None = None
        self._writer: SeriesWriter | None = None
        self._config: dict[str, Any] = {}

    # -- start ------------------------------------------------------------------------------------
    def start(self) -> None:
        self._sdk = sdk = load_sdk()
        sampled = self.run_context is not None and self.run_context.system_metrics
        kwargs, overridden = system.run_settings(self.run_kwargs, sampled)
        if overridden:
            self.add_note(overridden)
        kwargs.setdefault("repo", self.repo_path)  # Aim creates <dir>/.aim if missing
        if self.project_name is not None:
            kwargs.setdefault("experiment", self.project_name)
        run = open_run(self, sdk, kwargs)
        self._run, self.run_hash = run, run.hash
        self._writer = SeriesWriter.for_run(run)  # None: a remote repo or tracking thread; Run.track then
        name_run(self, run)
        if self.artifacts_uri and self._has_artifacts():
            run.set_artifacts_uri(self.artifacts_uri)
        announce(run, self.repo_path)

    # -- the SDK object ---------------------------------------------------------------------------
    tracker = writer = sdk_object(
        "_run", "The ``aim.Run``, ``writer`` as accelerate's tracker names it (``None`` before ``start()``)."
    )

    @property
    def repo_path(self) -> str:
        """Where the Aim repo lives: the ``repo`` kwarg if given, else the ``aim://`` server of the run this
        one resumes (a replay of its spill), else ``logging_dir``."""
        return repo_location(self)

    @property  # the answer depends on the repo (a class attribute elsewhere)
    def durable_on_return(self) -> bool:  # type: ignore[override]
        """Local repo: each batch is in RocksDB's write-ahead log when ``log`` returns. ``aim://`` server:
        Aim's client hands each write to its own thread, which sends it once the server answers, so a call
        that returned has stored nothing yet (and that queue ends with the process): records count as
        delivered once :meth:`flush` saw the server acknowledge every write."""
        return "://" not in self.repo_path

    # -- config -----------------------------------------------------------------------------------
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        """``run["hparams"]`` (nesting kept); a later call (``log_config``) merges its keys and writes it again."""
        self._config = config = merge_config(self._config, values)
        try:
            self._run["hparams"] = config
        except Exception as error:
            warn_once(self.name, "hparams", f"Aim refused the nested config ({error!r}); stored flattened as strings")
            self._run["hparams"] = {key: stringify(value) for key, value in flatten_config(config).items()}

    # -- run context (docs/run-context.md) ----------------------------------------------------------
    def log_run_context(self, context: dict[str, Any]) -> None:
        """``run["__system_params"]``, where Aim's own ``log_system_params`` puts the same facts (its run
        page shows them): git info, executable, arguments, launcher variables and packages; the whole
        context under ``run["run_context"]``."""
        self._run["__system_params"] = system_params(context)
        self._run["run_context"] = {key: value for key, value in context.items() if key != "packages"}

    # -- system metrics (docs/run-context.md) -------------------------------------------------------
    def log_system_metrics(self, values: dict[str, float], index: int, timestamp: float) -> None:
        """One sample as Aim's own system series (:mod:`tracking_aim.system`): step = ``index``, time = ``timestamp``."""
        writer = self._writer
        for context, numbers in system.by_context(values):
            if writer is not None:
                writer.track(numbers, index, None, context, timestamp)
            else:
                self._run.track(numbers, step=index, context=context)
        self._commit()

    # -- metrics ----------------------------------------------------------------------------------
    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        self.log_batch([(values, step, kwargs)])

    def log_batch(self, entries: Sequence[tuple[dict[str, Any], int | None, dict[str, Any]]]) -> None:
        try:
            for values, step, kwargs in entries:
                self._track_values(values, step, kwargs)
        finally:  # points already batched are stored even if a later one failed (its batch is spilled whole)
            self._commit()

    def _kind_conflict(self, key: str, kind: str, context_repr: str) -> bool:
        """Aim keeps one value type per series: a key that switched between number and text is skipped."""
        known = self._series_kind.setdefault((key, context_repr), kind)
        if known == kind:
            return False
        warn_once(
            self.name,
            key,
            f"Aim stores one type per series: this {kind} value is skipped (the series holds {known}s)",
            reason="aim-kind",
        )
        return True

    def _commit(self) -> None:
        if self._writer is not None:
            self._writer.commit()

    def _track_values(self, values: dict[str, Any], step: int | None, kwargs: dict[str, Any]) -> None:
        Text = cast(Sdk, self._sdk).Text
        context, epoch = kwargs.get("context"), kwargs.get("epoch")
        for keyword in kwargs:
            if keyword not in _LOG_KEYWORDS:
                warn_once(self.name, keyword, "unknown log keyword for aim; ignored", reason="kwarg")
        numbers: dict[str, int | float] = {}
        texts: dict[str, str] = {}
        context_repr = repr(context)
        for key, value in values.items():
            kind = "text" if isinstance(value, str) else "number"
            if self._kind_conflict(key, kind, context_repr):
                continue
            (texts if kind == "text" else numbers)[key] = value
        writer = self._writer
        if writer is None:
            if numbers:
                self._run.track(numbers, step=step, epoch=epoch, context=context)
            for key, text in texts.items():
                self._run.track(Text(text), name=key, step=step, epoch=epoch, context=context)
            return
        when = kwargs.get("timestamp") or time.time()  # the time of the caller's log(), as Run.track would
        if numbers:
            writer.track(numbers, step, epoch, context, when)
        for key, text in texts.items():
            writer.track_with_aim(Text(text), key, step, epoch, context, when)

    # -- media ------------------------------------------------------------------------------------
    def log_images(
        self,
        values: dict[str, Any],
        step: int | None = None,
        kwargs: dict[str, dict[str, Any]] | None = None,
        **options: Any,
    ) -> None:
        """``{key: image, (image, caption), list of them or a batch}``; arrays in HW/HWC/CHW (``dataformats=``
        settles an ambiguous shape), floats in [0, 1] scaled, PIL images as they are.

        As in accelerate, ``kwargs={"aim_image": {...}, "track": {...}}`` go to ``aim.Image`` (format,
        quality, ...) and ``Run.track``; the same keys, ``context=`` and ``epoch=`` are taken as keywords too.
        """
        options = {**(kwargs or {}), **options}
        Image = cast(Sdk, self._sdk).Image
        image_kwargs = dict(options.pop("aim_image", None) or {})
        dataformats = options.pop("dataformats", None)
        track_kwargs = {**(options.pop("track", None) or {}), **options}
        for key, value in values.items():
            single = is_single_image(value)
            items = [value] if single else image_list(value)
            images = [Image(*image_and_caption(item, dataformats), **image_kwargs) for item in items]
            self._run.track(images[0] if single else images, name=key, step=step, **track_kwargs)

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        """A matplotlib figure as a PNG ``aim.Image`` (Aim's own matplotlib->plotly conversion needs plotly
        and fails on most figures); a plotly figure as an interactive ``aim.Figure``, Aim's native type.
        Extra kwargs go to ``figure.savefig`` (``dpi=...``), except ``context``/``epoch``.
        """
        track_kwargs = {key: kwargs.pop(key) for key in _TRACK_KEYWORDS if key in kwargs}
        if type(figure).__module__.startswith("plotly"):
            value = cast(Sdk, self._sdk).Figure(figure)
        else:
            from PIL import Image as PILImage  # a dependency of aim

            value = cast(Sdk, self._sdk).Image(PILImage.open(io.BytesIO(figure_to_png(figure, **kwargs))))
        self._run.track(value, name=name, step=step, **track_kwargs)

    def log_table(
        self,
        table_name: str,
        columns: list[str] | None = None,
        data: list[list[Any]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
        **kwargs: Any,
    ) -> None:
        """Aim has no table type: the table is stored as ``aim.Text`` (a markdown table) so it stays
        visible in Aim's Text explorer, under context ``{"type": "table"}`` (merged with ``context=``).
        """
        columns, rows = table_rows(columns, data, dataframe)
        context = {**_TABLE_CONTEXT, **(kwargs.pop("context", None) or {})}
        self._run.track(
            cast(Sdk, self._sdk).Text(markdown_table(columns, rows)),
            name=table_name,
            step=step,
            context=context,
            **kwargs,
        )

    # -- histogram --------------------------------------------------------------------------------
    def log_histogram(self, name: str, histogram: Histogram, step: int | None = None, **kwargs: Any) -> None:
        """Aim's ``Distribution``: the counts over ``(first edge, last edge)``.

        Aim spreads the bins evenly over that range; uneven edges (counts given by the caller) are
        drawn as even bins, with one warning per name. ``context=`` and ``epoch=`` go to ``Run.track``.
        """
        edges = histogram.edges
        width = (edges[-1] - edges[0]) / len(histogram.counts)
        if any(abs((right - left) - width) > 1e-9 * max(1.0, abs(width)) for left, right in pairwise(edges)):
            warn_once(
                self.name, name, "Aim draws histogram bins evenly; the uneven edges are not kept", reason="aim-bins"
            )
        distribution = cast(Sdk, self._sdk).Distribution(hist=list(histogram.counts), bin_range=(edges[0], edges[-1]))
        track_kwargs = {key: kwargs[key] for key in _TRACK_KEYWORDS if key in kwargs}
        self._run.track(distribution, name=name, step=step, **track_kwargs)

    # -- artifacts --------------------------------------------------------------------------------
    def _has_artifacts(self) -> bool:
        """Whether this Aim stores run artifacts (Aim 3.19 added them); if not, one warning and a report note."""
        return has_artifacts(self, self._run)

    def _ensure_artifacts_uri(self) -> None:
        if artifacts_uri(self._run) is None:  # a resumed run keeps the URI it already has
            default = "file://" + (self.logging_dir / "aim-artifacts").absolute().as_posix()
            self._run.set_artifacts_uri(self.artifacts_uri or default)

    def log_artifact(self, local_path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        """Copy a file to ``<artifacts_uri>/<run hash>/<artifact_path>/<file name>`` and list it on the run."""
        if not self._has_artifacts():
            return
        self._ensure_artifacts_uri()
        file_name = Path(local_path).name
        self._run.log_artifact(os.fspath(local_path), name=artifact_name(artifact_path, file_name), block=True)

    def log_artifacts(self, local_dir: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        """Copy a directory's files under ``<artifacts_uri>/<run hash>/<artifact_path>/`` (its layout kept)."""
        root = Path(local_dir)
        if not root.is_dir():
            raise NotADirectoryError(f"log_artifacts: {root} is not a directory")
        if not self._has_artifacts():
            return
        self._ensure_artifacts_uri()
        for path in sorted(root.rglob("*")):
            if path.is_file():
                self._run.log_artifact(
                    str(path), name=artifact_name(artifact_path, path.relative_to(root).as_posix()), block=True
                )

    # -- flush / finish ---------------------------------------------------------------------------
    def flush(self) -> None:
        """fsync the run's write-ahead logs (every ``log`` already wrote them; this survives power loss).

        With an ``aim://`` server: wait until the server acknowledged every write Aim's client queued
        (while the server is down, until it is back: the dispatcher spills meanwhile)."""
        if self._run is None or self._closed:
            return
        if getattr(self._run.repo, "is_remote_repo", False):
            self._run.repo._client.get_queue().wait_for_finish()  # what Aim's own close waits for
            return
        self._commit()
        for container in run_containers(self._run.repo, cast(str, self.run_hash)):  # none for a remote repo
            if not getattr(container, "read_only", True):
                container.db.flush_wal(True)

    def finish(self) -> None:
        if self._run is None or self._closed:
            return
        if self._writer is not None:
            self._writer.close()  # it holds the run's RocksDB handles, which would outlive run.close()
            self._writer = None
        self._closed = True
        drain_tracking_thread(self._run)
        try:
            record_end(self._run, self.run_end)
        except Exception as error:  # the run is closed all the same
            self.add_note(f"could not record how the run ended in Aim ({type(error).__name__}: {error})")
        self._run.close()  # stops Aim's threads, sets end_time, flushes RocksDB and releases the run's locks
        release_run(self._run.repo, cast(str, self.run_hash))  # another process may reopen the run at once

    # -- resume and read-back ---------------------------------------------------------------------
    def rewind(self, step: int) -> str:
        """Aim keys a series by step: each step the resumed run logs again replaces the earlier value."""
        store_marker(self, step)
        return (
            f"rewound to step {step}: Aim replaces each step the resumed run logs again; steps from {step} on "
            f"that it has not logged again keep the earlier process's values (the {MARKER_KEY} marker is at step {step})"
        )

    def resume_state(self) -> dict[str, Any]:
        return {"run_hash": self.run_hash, "repo": self.repo_path}

    def read_back_metrics(self) -> dict[str, dict[int, Any]]:
        """This run's metric series per step, after ``finish()`` (see :meth:`read_back_history`)."""
        return {name: dict(points) for name, points in self.read_back_history().items()}

    def read_back_history(self) -> dict[str, list[tuple[int, Any]]]:
        """Every stored point of this run's metric series through ``aim.Repo``, after ``finish()``, by step.

        Aim stores a series as a map keyed by step: tracking a step again overwrites it, so a step can
        never be stored twice here and each step appears once, with its last value.
        Aim's reader sees a closed run only once the repo's index has it (``aim up`` indexes in the
        background), so the run is indexed first, as ``aim storage reindex`` would. A series tracked
        with a ``context`` is named ``"<name> <context dict>"``. Aim's system series (``__system__*``)
        are not the run's metrics: :meth:`read_back_system_metrics` reads them.
        """
        return self._read_series(system=False)

    def read_back_system_metrics(self) -> dict[str, list[tuple[int, float]]]:
        """The run's ``__system__*`` series (Aim's resource tracker's, or the library's samples), by step,
        under ``system/...`` names (``__system__cpu.percent`` -> ``system/cpu.percent``, a GPU's context
        back in the name)."""
        return reader.system_series(self.repo_path, cast(str, self.run_hash))

    def _read_series(self, system: bool) -> dict[str, list[tuple[int, Any]]]:
        return reader.series(self.repo_path, cast(str, self.run_hash), system)

    def read_back_images(self) -> dict[str, list[tuple[int, Any]]]:
        """Every image of this run through ``aim.Repo``, per sequence, as ``(step, HW or HWC uint8 array)``.

        A sequence tracked with a ``context`` is named ``"<name> <context dict>"``; the images of one
        step (a list) come in the order they were logged. Indexed first, as in :meth:`read_back_history`.
        """
        return reader.images(self.repo_path, cast(str, self.run_hash))
