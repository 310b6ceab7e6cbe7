"""``swanlab`` backend: the contract mapped onto one SwanLab ``Run`` (the object ``swanlab.init`` returns).

contract                      SwanLab
--------------------------    ------------------------------------------------------------------
start()                       ``swanlab.init(project=run_name, mode=..., log_dir=..., settings=...)``
store_init_configuration      ``run.config.update(values)``   (the run's own config, not ``swanlab.config``)
log (numbers)                 ``run.log({key: number}, step=step)``
log (strings)                 ``run.log({key: swanlab.Text(value)}, step=step)``
log_images                    ``run.log({key: [swanlab.Image(<HW/HWC uint8>), ...]}, step=step)``
log_table                     ``run.log({name: swanlab.echarts.Table().add(columns, rows)}, step=step)``
log_figure                    ``run.log({name: swanlab.Image(<the figure as PNG>)}, step=step)``
log_histogram                 the contract's default (count/min/max/mean/std): SwanLab has no histogram type
log_artifact(s)               ``run.save(path, base_path=folder, policy="now")``  (linked into ``files/``)
log_run_context               ``run.config.update({"run_context": context})``
log_system_metrics            ``run.log({"system/<name>": value}, step=index)`` (each key its own steps)
finish                        ``run.finish(state=success|crashed|aborted, error=<run status>)`` (:mod:`.run_end`)
resume_state                  ``{"id", "project", "name", "mode", "run_dirs"}``; a resumed run:
                              ``swanlab.init(id=<saved id>, resume="allow", name=<saved name>, ...)``
per-rank runs                 ``swanlab.init(group=<group>, name=<name>-rank<N>)``

Resuming offline. SwanLab writes one ``run-<time>-<id>`` folder per process; a run continued with the
same id gets a new folder whose start record asks to resume, and ``swanlab sync`` of each folder (oldest
first) resumes the same cloud experiment. So the saved state lists every folder and
``read_back_history`` reads them all.

SDK lines. The mapping above is written against SwanLab 0.8+ (``swanlab.sdk``). When ``start()`` finds the
earlier line (0.6.2 to 0.7.x, no ``swanlab.sdk``), :mod:`tracking_swanlab.older.v0_6_2` starts the run and
gives its run object the names used here (:class:`~tracking_swanlab.older.v0_6_2.run.EarlierRun`); what that
line lacks (tables before 0.6.5, saved files before 0.7.15, continuing a run offline) is one warning
and a report note. SwanLab 0.5.8 to 0.6.1 have no offline mode: :mod:`tracking_swanlab.older.v0_5_8` starts
them in local mode (swanboard's store) through the same earlier-line start. Starting, resuming and naming
the run: :mod:`tracking_swanlab.startup`.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any, cast

from tracking_core import GeneralTracker
from tracking_core.kit import (
    RUN_CONTEXT_KEY,
    check_optional_name,
    figure_to_png,
    image_list,
    logger,
    merge_config,
    notice,
    sdk_object,
    table_rows,
    to_hwc_uint8,
    warn_once,
)

from . import startup
from .older.v0_6_2.run import EarlierRun
from .older.v0_6_2.startup import upload_commands
from .run_end import finish_arguments

#: SwanLab refuses control characters anywhere in a key and '.', '/' or whitespace at either end;
#: longer keys are cut at 512 characters (``swanlab.sdk.internal.pkg.constraints``).
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")
_EDGE_CHARACTERS = " \t\n\r./"
_MAX_KEY_LENGTH = 512
#: The earlier line (0.6.2 to 0.7.x) cuts keys at 255 characters and refuses '.', '/' or whitespace at
#: either end (``swanlab.formatter.check_key_format``).
EARLIER_MAX_KEY_LENGTH = 255

#: The prefix under which this backend logs the run's system samples (``system/cpu.percent``, ...): a
#: section of their own, each key on its own step sequence (the sample's index).
SAMPLE_PREFIX = "system/"

DEFAULT_ONLINE_CHECK_TIMEOUT = 5.0


# -- helpers ----------------------------------------------------------------------------------
def _attribute(run: Any, name: str) -> str | None:
    """A ``swanlab.Run`` property as text, or None when this SwanLab release lacks it."""
    try:
        value = getattr(run, name)
    except Exception:
        return None
    return str(value) if value is not None else None


def _plain(cell: Any) -> Any:
    """numpy scalars as Python values, so the table JSON keeps numbers as numbers."""
    item = getattr(cell, "item", None)
    return item() if callable(item) and not isinstance(cell, (str, bytes)) and getattr(cell, "ndim", 0) == 0 else cell


class SwanLabTracker(GeneralTracker):
    """Logs to SwanLab; with no account and no network it writes an offline run under ``logging_dir``.

    Example::

        import tracking_core

        with tracking_core.init("my-project", log_with="swanlab", logging_dir="runs",
                                init_kwargs={"swanlab": {"experiment_name": "baseline"}}) as run:
            run.log({"train/loss": 0.5}, step=0)
        # then: swanlab sync runs/swanlog/run-<time>-<id>

    ``kwargs`` go to ``swanlab.init`` unchanged (``project`` defaults to ``run_name``; an explicit
    ``project``, ``mode``, ``log_dir``/``logdir``, ``settings``, ``workspace``, ``experiment_name``,
    ``tags``, ... always wins). Where the user chose nothing:

    * ``mode``: ``"offline"`` when no SwanLab credentials are configured, else ``"online"``. An online
      start first checks within ``online_check_timeout`` seconds that the API host answers; when it does
      not (or the online start fails), the run is written offline instead and one notice says why.
      A ``mode`` the user chose is kept: an unreachable host then fails start-up, and the dispatcher
      keeps the records in its spill journal.
    * ``log_dir``: ``<logging_dir>/swanlog``.
    * ``settings``: what SwanLab records by itself is as SwanLab (and Accelerate's ``SwanLabTracker``)
      defaults it -- the hardware monitor (every 10 s, ``__swanlab__.*`` system charts), the hardware,
      runtime (command, host, Python) and git snapshot, the terminal output -- except the two probes that
      run a package manager at start-up: ``probe.requirements`` (``pip list``/``uv pip list``/``pixi
      list``) and ``probe.conda`` (``conda env export``) stay off. ``interactive`` is always off, so
      SwanLab never waits on ``input()`` from a tracker's worker thread.
    * with ``run_context.system_metrics`` (the run asked ``init(system_metrics=True)``): SwanLab's monitor
      is off (``probe.monitor=False``) and the run's samples are logged as ``system/...`` scalars, each at
      step = the sample's index (:meth:`log_system_metrics`).

    Honoured SwanLab settings (environment, ``.env``, ``swanlab.yaml``, ``swanlab.merge_settings``):
    ``SWANLAB_MODE``, ``SWANLAB_LOG_DIR`` (and the older ``SWANLAB_LOGDIR``), ``SWANLAB_API_KEY``,
    ``SWANLAB_API_HOST``, ``SWANLAB_WEB_HOST``, ``SWANLAB_ROOT`` (credentials in ``.netrc`` there),
    ``SWANLAB_PROBE_MONITOR``, ``SWANLAB_PROBE_REQUIREMENTS``, ``SWANLAB_TERMINAL_PROXY_TYPE`` and every other ``SWANLAB_*`` setting.

    Per-rank runs (``run_context.group`` set by ``per_rank=True``): every rank's run is in the SwanLab
    group ``<group>`` and named ``<name>-rank<N>``, ``<name>`` being the name given or the group.
    """

    name = "swanlab"
    requires_logging_directory = False
    main_process_only = False

    def __init__(
        self,
        run_name: str,
        *,
        logging_dir: str | os.PathLike[str] | None = None,
        online_check_timeout: float = DEFAULT_ONLINE_CHECK_TIMEOUT,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self._config: dict[str, Any] = {}  # the run's config so far, for merging a later log_config
        check_optional_name(kwargs.get("id"), "id")  # the run id is part of SwanLab's run folder name
        self.run_name = run_name
        self.logging_dir = Path(logging_dir) if logging_dir is not None else None
        self.online_check_timeout = online_check_timeout
        self.init_kwargs = kwargs
        #: The mode SwanLab actually ran in, and why it is not the one first tried (None: no fallback).
        self.mode: str | None = None
        self.fallback_reason: str | None = None
        self.run_dir: Path | None = None
        self._run: Any = None
        self._finished = False
        self._swanlab: Any = None
        self._column_kind: dict[str, str] = {}
        self._max_key_length = _MAX_KEY_LENGTH  # set by start() for the SwanLab line it finds
        self._last_step: dict[str, int | None] = {}
        #: Local folders of the earlier processes' parts of this run (oldest first), when it was resumed.
        self.earlier_run_dirs: list[Path] = []
        self._project: str | None = None
        #: The SwanLab run id and experiment name, kept after ``finish()`` (which lets go of the run).
        self.run_id: str | None = None
        self.experiment_name: str | None = None

    # -- start ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the run with the installed SwanLab line (:mod:`tracking_swanlab.startup`) and say where it went."""
        self._swanlab = startup.import_swanlab()
        startup.start_run(self, self._swanlab)
        if isinstance(self._run, EarlierRun):  # SwanLab 0.5.8 to 0.7.x
            self._max_key_length = EARLIER_MAX_KEY_LENGTH
        self.mode = str(self._run.mode)
        self.run_dir = Path(self._run.dir)
        self.run_id, self.experiment_name = str(self._run.id), _attribute(self._run, "name")
        if self.fallback_reason:
            logger.warning(startup.start_notice(self))
        else:
            notice(startup.start_notice(self))

    # -- SDK objects -----------------------------------------------------------------------------
    tracker = run = sdk_object(
        "_run",
        "The ``swanlab.Run``, as Accelerate's ``SwanLabTracker.run`` (None before ``start()``; kept after ``finish()``).",
    )

    @property
    def run_dirs(self) -> list[Path]:
        """Every local folder of this run, oldest first: earlier processes' parts, then this process's."""
        current = [self.run_dir] if self.run_dir is not None else []
        return [*self.earlier_run_dirs, *current]

    # -- config and metrics -------------------------------------------------------------------
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        # SwanLab 0.10.3 stores a top-level None as {} (it parses each value as a config mapping);
        # the string keeps the value readable instead of turning it into an empty group.
        self._config = merge_config(self._config, values)  # nested sections key by key
        merged = {key: self._config[key] for key in values}
        self._run.config.update({key: "None" if value is None else value for key, value in merged.items()})

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        payload = {}
        for key, value in values.items():
            kind = "text" if isinstance(value, str) else "scalar"
            if not self._accepts(key, kind, step):
                continue
            payload[key] = self._swanlab.Text(value) if kind == "text" else value
        if payload:
            self._run.log(payload, step=step, **kwargs)

    def _accepts(self, key: str, kind: str, step: int | None) -> bool:
        """SwanLab silently drops a point whose type differs from the key's first one, and a second
        point at the same step; say so once per key instead."""
        first = self._column_kind.setdefault(key, kind)
        if first != kind:
            warn_once(
                self.name,
                key,
                f"SwanLab keeps one type per key: this key holds {first} values, a {kind} value is dropped",
                reason="kind",
            )
            return False
        if step is not None and self._last_step.get(key) == step:
            warn_once(
                self.name,
                key,
                f"SwanLab keeps the first value logged at a step; a repeat at step {step} is dropped",
                reason="repeat",
            )
            return False
        self._last_step[key] = step
        return True

    # -- run context and system samples --------------------------------------------------------------
    def log_run_context(self, context: dict[str, Any]) -> None:
        """The run context (git, command, platform, packages) as the run's config under ``run_context``:
        SwanLab's own git and runtime snapshot has no public place this library can add to."""
        self.store_init_configuration({RUN_CONTEXT_KEY: context})

    def _samples_wanted(self) -> bool:
        """Whether the run's system samples come here, and so SwanLab's own monitor is off."""
        return bool(getattr(self.run_context, "system_metrics", False))

    def log_system_metrics(self, values: dict[str, float], index: int, timestamp: float) -> None:
        """One sample as the scalars ``system/...`` at step = the sample's index.

        SwanLab's own monitor keeps its series under the key prefix ``__swanlab__.``, which ``run.log``
        refuses, and reaching that place means the internals of each SDK line (the 0.8+ core's column and
        scalar records, the 0.6-0.7 experiment object, 0.5.8's none in local mode). ``run.log`` is public on
        every line, and every SwanLab key keeps its own step sequence: index 0 beside a user's step 0 is
        neither a repeat nor a step backwards, and nothing is dropped or warned about. SwanLab stamps the
        time it receives the sample (``timestamp`` has no public place). SwanLab 0.8+ does move its own next
        automatic step up to the highest step logged; the dispatcher, the only caller here, gives every
        user record its step, so the user's axis is not moved.
        """
        if self._run is None or self._finished or self.mode == "disabled":
            return
        payload = {self.sanitize_key(key): float(value) for key, value in values.items()}
        if payload:
            self._run.log(payload, step=index)

    def sanitize_key(self, key: str) -> str:
        cleaned = _CONTROL_CHARACTERS.sub("_", key).strip(_EDGE_CHARACTERS)
        cleaned = cleaned[: self._max_key_length].rstrip(_EDGE_CHARACTERS)
        return cleaned or "_"

    # -- media --------------------------------------------------------------------------------
    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """``{key: image or list of images}`` as ``swanlab.Image`` lists; ``kwargs`` go to ``swanlab.Image``
        (``caption``, ``size``, ``file_type``...), since SwanLab's ``run.log`` takes none."""
        payload = {}
        for key, images in values.items():
            key = self.sanitize_key(key)
            if self._accepts(key, "image", step):
                payload[key] = [self._swanlab.Image(to_hwc_uint8(image), **kwargs) for image in image_list(images)]
        if payload:
            self._run.log(payload, step=step)

    def log_table(
        self,
        table_name: str,
        columns: list[str] | None = None,
        data: list[list[Any]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
        **kwargs: Any,
    ) -> None:
        columns, rows = table_rows(columns, data, dataframe)
        if getattr(getattr(self._swanlab, "echarts", None), "Table", None) is None:  # SwanLab before 0.6.5
            message = (
                "this SwanLab release has no tables (swanlab.echarts.Table, added in 0.6.5): log_table stores nothing"
            )
            warn_once(self.name, "log_table", message, reason="no-tables")
            self.add_note(message)
            return
        if len(set(columns)) != len(columns):
            raise ValueError(f"SwanLab stores table rows as column -> value maps; duplicate column names in {columns}")
        rows = [[_plain(cell) for cell in row] for row in rows]
        key = self.sanitize_key(table_name)
        if self._accepts(key, "table", step):
            self._run.log({key: self._swanlab.echarts.Table().add(columns, rows, **kwargs)}, step=step)

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        """The figure rendered to PNG (``kwargs`` go to ``savefig``; always PNG) as a ``swanlab.Image``."""
        from PIL import Image

        key = self.sanitize_key(name)
        if self._accepts(key, "image", step):
            with Image.open(io.BytesIO(figure_to_png(figure, **kwargs))) as rendered:
                self._run.log({key: self._swanlab.Image(rendered.copy())}, step=step)

    # -- artifacts ----------------------------------------------------------------------------
    def log_artifact(self, local_path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        path = Path(local_path).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"log_artifact: {path} is not a file")
        self._save(str(path), path.parent, artifact_path)

    def log_artifacts(self, local_dir: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        folder = Path(local_dir).resolve()
        if not folder.is_dir():
            raise NotADirectoryError(f"log_artifacts: {folder} is not a directory")
        self._save(str(folder / "**" / "*"), folder, artifact_path)

    def _save(self, pattern: str, base: Path, artifact_path: str | None) -> None:
        if artifact_path:
            warn_once(
                self.name,
                artifact_path,
                "SwanLab names saved files by their path below the folder given; artifact_path is not used",
                reason="artifact_path",
            )
        # "now": a snapshot, like the other backends' artifacts (SwanLab's default "live" keeps watching the file).
        saved = self._run.save(pattern, base_path=str(base), policy="now")
        if saved is None:  # a SwanLab release without saved files: the run said so (warning, report note)
            return
        if not saved:
            raise FileNotFoundError(f"SwanLab saved no file for {pattern}")

    # -- flush and finish -----------------------------------------------------------------------
    def flush(self) -> None:
        """Wait until SwanLab's writer thread has put everything logged so far in the run file, flushed
        and fsynced (SwanLab has no public flush; see :mod:`tracking_swanlab.durability`), so the records
        the dispatcher then counts as delivered survive a kill of the process."""
        if self._run is None or self._finished or self.mode == "disabled":
            return
        from .durability import wait_until_written

        run = self._run
        written = run.wait_until_written() if isinstance(run, EarlierRun) else wait_until_written(run)
        if not written:
            warn_once(
                self.name,
                "flush",
                "this SwanLab release has no writer this library can wait for: points logged shortly before "
                "the process is killed may be lost",
                reason="flush",
            )

    def finish(self) -> None:
        if self._run is None or self._finished:
            return
        self._finished = True
        if self._run.alive:  # the state as the run ended (a crash, Ctrl-C), which SwanLab's finish record keeps
            self._run.finish(**finish_arguments(self.run_end))

    # -- resume, read-back, notes ----------------------------------------------------------------
    def resume_state(self) -> dict[str, Any] | None:
        """The run's id, project and name, and every local folder it has so far (this process's last)."""
        if self.run_id is None or self.mode == "disabled":
            return None
        return {
            "id": self.run_id,
            "project": self._project,
            "name": self.experiment_name,
            "mode": self.mode,
            "run_dirs": [str(folder) for folder in self.run_dirs],
        }

    def read_back_metrics(self) -> dict[str, dict[int, Any]]:
        """Scalars per step; a later part's value wins at a step two parts hold (see :meth:`read_back_history`)."""
        return {key: dict(points) for key, points in self.read_back_history().items()}

    def read_back_history(self) -> dict[str, list[tuple[int, Any]]]:
        """Every scalar record of this run through SwanLab's own record reader (see :mod:`tracking_swanlab.reader`).

        A resumed run's folders are read oldest first, each in record order, so a step written by two
        processes shows twice (within one process a repeated step is dropped, see ``_accepts``). A part
        whose run file is still empty holds nothing: SwanLab 0.10.3 writes that file unflushed until
        ``finish()``, so a process that was killed (or has not finished) may have nothing in it yet.
        SwanLab's own system series and the run's system samples are left out (:meth:`read_back_system_metrics`).
        """
        samples = self._samples_wanted()
        return {
            key: points
            for key, points in self._all_scalars().items()
            if not (samples and key.startswith(SAMPLE_PREFIX))
        }

    def read_back_system_metrics(self) -> dict[str, list[tuple[int, float]]]:
        """The run's system series: SwanLab's own monitor's (``__swanlab__.<name>``, step = its sample count)
        and, when the run's samples came here, theirs (``system/<name>``, step = the sample's index)."""
        from .reader import system_history_of

        system = system_history_of(self.run_dirs)
        if self._samples_wanted():
            system.update({key: p for key, p in self._all_scalars().items() if key.startswith(SAMPLE_PREFIX)})
        return system

    def _all_scalars(self) -> dict[str, list[tuple[int, Any]]]:
        from .reader import scalar_history_of

        return scalar_history_of(self.run_dirs)

    def read_back_images(self) -> dict[str, list[tuple[int, Any]]]:
        """Every image of this run through SwanLab's own record reader, decoded from its media files."""
        from .reader import images_of

        return images_of(self.run_dirs, self.run_dir)

    def report_notes(self) -> list[str]:
        notes = super().report_notes()
        if self.fallback_reason:
            written = "a local" if self.mode == "local" else "an offline"  # local: SwanLab before 0.6.2
            notes.append(f"fell back to {written} run because {self.fallback_reason}")
        if self.mode == "offline" and self.earlier_run_dirs:
            if isinstance(self._run, EarlierRun):
                commands = upload_commands(self._swanlab, cast(str, self.run_id), self.run_dirs)
            else:
                commands = "; ".join(f"swanlab sync {folder}" for folder in self.run_dirs)
            notes.append(
                f"offline run {self.run_id} in {len(self.run_dirs)} folders (upload in this order: {commands})"
            )
        if self.mode == "local" and self.earlier_run_dirs:  # SwanLab before 0.6.2: one experiment per folder
            folders = ", ".join(map(str, self.run_dirs))
            notes.append(f"local run {self.run_id} in {len(self.run_dirs)} folders, oldest first: {folders}")
        return notes
