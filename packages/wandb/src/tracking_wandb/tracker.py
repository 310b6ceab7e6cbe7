"""Weights & Biases backend: the tracker contract mapped onto one ``wandb`` run.

Contract -> SDK:

* ``start``                     -> ``wandb.init(...)`` (offline under ``logging_dir`` unless credentials exist);
                                   with ``run_context.resume``: ``wandb.init(id=<saved id>, resume="allow")``
* ``resume_state``              -> ``{"id", "project", "entity", "mode", "run_dirs"}`` (every local folder of the run)
* ``store_init_configuration``  -> ``run.config.update`` (per-run, never the module-global ``wandb.config``)
* ``log_run_context``           -> W&B's run metadata (:mod:`tracking_wandb.run_metadata`), ``run.save(diff.patch)``,
                                   and config under ``run_context``
* ``log`` / ``log_batch``       -> ``run.log(values, step=step)``; strings are W&B history text values
* ``log_images``                -> ``run.log({key: [wandb.Image, ...]})`` (one call for every key: one step)
* ``log_table``                 -> ``run.log({name: wandb.Table(...)})``
* ``log_figure``                -> ``run.log({name: wandb.Image(<the figure as PNG>)})``
* ``log_histogram``             -> ``run.log({name: wandb.Histogram(np_histogram=(counts, edges))})``
* ``log_artifact(s)``           -> ``wandb.Artifact`` + ``run.log_artifact`` (staged locally when offline)
* ``log_system_metrics``        -> the run's system metrics (``StatsRecord``, W&B's *System* charts; off the
                                   history): :mod:`tracking_wandb.system_stats`
* ``flush``                     -> a round trip to ``wandb-core`` plus a wait for its next transaction-log write
* ``finish``                    -> ``run.finish()``, then a wait until the ``.wandb`` file is complete
                                   (so the dispatcher does not flush first: one write interval less per run)
* per-rank runs (``run_context.group``) -> ``wandb.init(group=<group>, name=<name>-rank<N>)``

Resuming offline. W&B writes one ``offline-run-<time>-<id>`` folder per process; a run continued with the
same id and ``resume`` gets a new folder whose ``run`` record is marked resumed, and ``wandb sync`` given
all the folders uploads them as one run, in order of start time. So the saved state lists every folder,
``read_back_history`` reads them all, and the report names them all for ``wandb sync``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracking_core import GeneralTracker, Histogram
from tracking_core.kit import (
    RUN_CONTEXT_KEY,
    check_optional_name,
    figure_to_png,
    image_list,
    logger,
    merge_config,
    sdk_object,
    table_rows,
    to_hwc_uint8,
    warn_once,
)

from . import run_metadata, startup, system_stats
from .flush_wait import NextWrite, wait_until_written
from .older import v0_19
from .reader import images_of, read_runs

#: ``flush()`` waits at most this long for ``wandb-core``'s periodic write.
MAX_FLUSH_WAIT = 2.0
#: A write that began this long after ``wandb-core`` answered the flush's round trip holds every record
#: sent before it: the time for a record to pass from ``wandb-core``'s handler to its writer.
WRITER_HANDOFF = 0.1
#: ``finish()`` waits at most this long for ``wandb-core`` to write the end of the run.
FINISH_WRITE_TIMEOUT = 30.0

_ARTIFACT_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


# -- helpers -------------------------------------------------------------------------------------
def _already() -> bool:
    return True


class _Deadline:
    """A flush with no file to watch: done once a whole write interval has passed."""

    def __init__(self, at: float) -> None:
        self.at = at

    def done(self) -> bool:
        return time.monotonic() >= self.at

    def wait(self) -> None:
        time.sleep(max(0.0, self.at - time.monotonic()))


def _pil_image(image: Any) -> Any:
    """``image`` as the PIL image W&B saves as PNG unchanged (from HW/HWC/CHW arrays, tensors, PIL).

    Handing W&B the array instead would let it squeeze size-1 axes (a 1-pixel-high image becomes
    1-D and is refused) and scale floats its own way.
    """
    from PIL import Image

    return Image.fromarray(to_hwc_uint8(image))


class WandBTracker(GeneralTracker):
    """Logs to a Weights & Biases run; works with no account and no network.

    Example::

        import tracking_core

        with tracking_core.init("my-project", log_with="wandb", logging_dir="runs") as run:
            run.log({"train/loss": 0.5}, step=0)
        # -> runs/wandb/offline-run-<time>-<id>/ ; upload later with `wandb sync <that dir>`

    ``project_name`` becomes the W&B project unless ``project=`` is in the keyword arguments or
    ``WANDB_PROJECT`` is set. Every other keyword argument goes to ``wandb.init`` (``entity``, ``name``,
    ``tags``, ``group``, ``id``, ``resume``, ``mode``, ``settings``, ...).

    Mode: when the user chose none (``mode=``, ``settings.mode``, ``WANDB_MODE``, ``wandb offline``) and
    no credentials are configured (``WANDB_API_KEY``, ``WANDB_IDENTITY_TOKEN_FILE``, a netrc entry for
    the host, ``wandb login``), the run is offline under ``logging_dir``. With credentials the run is
    online; when the service cannot be reached within ``init_timeout`` (30 s here unless
    ``WANDB_INIT_TIMEOUT`` or ``settings.init_timeout`` say otherwise) or ``wandb.init`` fails, the run
    falls back to offline and a warning says why. Nothing ever prompts for a login.

    Defaults chosen only when the user did not set them (keyword, ``wandb.Settings``, ``WANDB_*``
    variable or W&B settings file): ``dir=logging_dir``, ``console="off"``, ``silent=True``,
    ``init_timeout=30``, ``x_transaction_log_flush_interval=0.5``, and ``reinit="create_new"`` when another
    W&B run is active. ``WANDB_CACHE_DIR`` and ``WANDB_DATA_DIR`` (read by W&B from the environment only)
    default to ``<logging_dir>/wandb/{cache,data}`` when unset and W&B was not yet set up in this process.

    What W&B records of its own is left as W&B defaults it, as under Accelerate: its system monitor (the
    ``wandb-symon`` sidecar: CPU, memory, disk, network, GPUs as the run's *System* charts), the run's
    metadata (host, Python, program and arguments, git commit and remote, from ``git``), ``requirements.txt``
    (from the installed distributions, no process) and code saving as the account sets it. With
    ``run_context.system_metrics`` (``init(system_metrics=True)``) ``x_disable_stats=True`` turns the
    monitor off and the library's samples take its place (:meth:`log_system_metrics`).

    Per-rank runs (``run_context.group`` set by ``per_rank=True``): every rank's run is in the W&B
    group ``<group>`` and named ``<name>-rank<N>``, ``<name>`` being the ``name=`` given or the group.
    """

    name = "wandb"
    requires_logging_directory = False
    durable_at_finish = True  # finish() waits until wandb-core has written the whole run: no flush first
    main_process_only = False

    def __init__(self, run_name: str, *, logging_dir: str | os.PathLike[str] | None = None, **kwargs: Any) -> None:
        super().__init__()
        self._config: dict[str, Any] = {}  # the run's config so far, for merging a later log_config
        check_optional_name(kwargs.get("id"), "id")  # W&B names the run folder after it
        self.run_name = run_name
        self.logging_dir = Path(logging_dir) if logging_dir is not None else None
        self.init_kwargs = kwargs
        self._run: Any = None
        #: "online", "offline" or "disabled" once started.
        self.mode: str | None = None
        #: Why an online run was not possible (the run then went offline), or None.
        self.fallback_reason: str | None = None
        self._flush_wait = 0.0
        self._dirty = False
        #: the write the last begun flush waits for (None: nothing to wait for)
        self._pending_write: NextWrite | _Deadline | None = None
        self._finished = False
        #: Local folders of the earlier processes' parts of this run (oldest first), when it was resumed.
        self.earlier_run_dirs: list[Path] = []
        #: the metadata message the installed W&B takes after init (run_metadata.generation)
        self._metadata_kind: tuple[str, str] | None = None
        self._metadata_sent = False

    # -- start ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the run (:mod:`tracking_wandb.startup`); a flush then waits for the writes of its interval."""
        startup.start_run(self)
        interval = v0_19.setting(self._run.settings, "x_transaction_log_flush_interval")
        self._flush_wait = min(interval + WRITER_HANDOFF, MAX_FLUSH_WAIT) if interval and interval > 0 else 0.0
        startup.announce(self)

    # -- SDK objects -----------------------------------------------------------------------------
    tracker = run = sdk_object(
        "_run", "The ``wandb`` run (``wandb.Run``), as Accelerate's ``WandBTracker.run``; None before ``start()``."
    )

    @property
    def run_dir(self) -> Path | None:
        """The run's local directory (what ``wandb sync`` takes)."""
        if self._run is None or self.mode == "disabled":
            return None
        return Path(self._run.settings.sync_dir)

    @property
    def run_dirs(self) -> list[Path]:
        """Every local folder of this run, oldest first: earlier processes' parts, then this process's."""
        current = self.run_dir
        return [*self.earlier_run_dirs, current] if current is not None else list(self.earlier_run_dirs)

    # -- config and metrics ---------------------------------------------------------------------
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        """Merged into the run's config; called again later (``log_config``), changed values win and nested
        sections are merged key by key (W&B's own update replaces a top-level key whole)."""
        self._config = merge_config(self._config, values)
        self._run.config.update({key: self._config[key] for key in values}, allow_val_change=True)
        self._dirty = True

    # -- run context (docs/run-context.md) --------------------------------------------------------
    def log_run_context(self, context: dict[str, Any]) -> None:
        """W&B's run metadata (git commit and remote, program, arguments, host, Python, OS: what the run's
        *Overview* shows), the uncommitted diff as the run's ``diff.patch``, and the whole context as
        config under ``run_context``."""
        self.store_init_configuration({RUN_CONTEXT_KEY: context})
        self._context_in_metadata(context)

    def _context_in_metadata(self, context: dict[str, Any]) -> None:
        """Once per run; the config keeps the context whatever happens here."""
        if self._metadata_sent or self._run is None or self.mode == "disabled":
            return
        self._metadata_sent = True
        own_off = bool(v0_19.setting(self._run.settings, "x_disable_meta", False))
        # W&B's own metadata turned off by the user: on 0.21+ the context's record is then all of it
        replaces = own_off and self._metadata_kind == run_metadata.ENVIRONMENT
        if own_off and not replaces:
            self.add_note(
                "x_disable_meta is set: the run context is in the config (run_context), not in W&B's metadata"
            )
        elif self._metadata_kind is None:
            self._metadata_missed(f"wandb {v0_19.version()} has no metadata message to send after wandb.init")
        else:
            fields = run_metadata.metadata_fields(context, with_args=replaces)
            try:
                run_metadata.publish(self._run, self._metadata_kind, fields)
            except Exception as error:  # the SDK's private interface changed
                self._metadata_missed(f"{type(error).__name__}: {error}")
        diff = (context.get("git") or {}).get("diff")
        if diff and Path(diff).is_file():
            try:
                self._run.save(diff, base_path=str(Path(diff).parent), policy="now")
            except Exception as error:
                message = f"the uncommitted diff was not saved to the W&B run ({type(error).__name__}: {error})"
                self.add_note(message)
                warn_once(self.name, "run-context-diff", message, reason="sdk-version")

    def _metadata_missed(self, reason: str) -> None:
        message = f"the run context is not in W&B's run metadata ({reason}); it is in the config (run_context)"
        self.add_note(message)
        warn_once(self.name, "run-metadata", message, reason="sdk-version")

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        self._run.log(values, step=step, **kwargs)
        self._dirty = True

    def log_system_metrics(self, values: dict[str, float], index: int, timestamp: float) -> None:
        """The run's system metrics, where W&B's own monitor puts them (``StatsRecord``, its *System* charts),
        on their time axis: never a history row, so no step of the user's moves or is dropped."""
        if self._run is None or self.mode == "disabled":
            return
        system_stats.publish(self._run, values, timestamp)
        self._dirty = True

    def read_back_system_metrics(self) -> dict[str, list[tuple[int, float]]]:
        """The run's system metrics as the ``.wandb`` files' stats records hold them, per ``system/<key>``
        (the name W&B shows), as ``(the record's position, value)``: a stats record keeps a time, no index,
        so the n-th record stored is sample n. ``read_runs(run_dirs).stats`` has the times."""
        if self.run_dir is None:
            raise NotImplementedError("wandb: nothing is stored locally for a disabled run")
        system: dict[str, list[tuple[int, float]]] = {}
        for position, (_time, items) in enumerate(read_runs(self.run_dirs).stats):
            for key, value in items.items():
                system.setdefault(system_stats.LIBRARY_PREFIX + key, []).append((position, value))
        return system

    # -- media -----------------------------------------------------------------------------------
    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """``{key: image or list of images}``: each key a list of ``wandb.Image``, all keys in one ``run.log``."""
        import wandb

        images = {key: [wandb.Image(_pil_image(image)) for image in image_list(items)] for key, items in values.items()}
        self.log(images, step=step, **kwargs)

    def log_table(
        self,
        table_name: str,
        columns: list[str] | None = None,
        data: list[list[Any]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
        **kwargs: Any,
    ) -> None:
        import wandb

        if dataframe is not None:
            table = wandb.Table(dataframe=dataframe, allow_mixed_types=True)
        else:
            columns, rows = table_rows(columns, data, None)
            table = wandb.Table(columns=columns, data=rows, allow_mixed_types=True)
        self.log({table_name: table}, step=step, **kwargs)

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        """The figure rendered to PNG (``kwargs`` go to ``savefig``) as a ``wandb.Image``.

        Rendered here because ``wandb.Image(figure)`` needs ``matplotlib.pyplot`` imported, which
        a figure built from ``matplotlib.figure.Figure`` never did.
        """
        import io

        import wandb
        from PIL import Image

        with Image.open(io.BytesIO(figure_to_png(figure, **kwargs))) as rendered:
            self.log({name: wandb.Image(rendered.copy())}, step=step)

    # -- histogram -------------------------------------------------------------------------------
    def log_histogram(self, name: str, histogram: Histogram, step: int | None = None, **kwargs: Any) -> None:
        """W&B's own histogram from the bins as they are (``np_histogram``), so W&B does not re-bin."""
        import wandb

        value = wandb.Histogram(np_histogram=(list(histogram.counts), list(histogram.edges)))
        self.log({name: value}, step=step, **kwargs)

    # -- artifacts -------------------------------------------------------------------------------
    def log_artifact(self, local_path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        """A new version of the artifact named ``artifact_path`` (default: the file's name)."""
        artifact = self._artifact(artifact_path or Path(local_path).name)
        artifact.add_file(os.fspath(local_path))
        self._run.log_artifact(artifact)
        self._dirty = True

    def log_artifacts(self, local_dir: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        """The directory's files as a new version of the artifact ``artifact_path`` (default: its name)."""
        artifact = self._artifact(artifact_path or Path(local_dir).resolve().name)
        artifact.add_dir(os.fspath(local_dir))
        self._run.log_artifact(artifact)
        self._dirty = True

    def _artifact(self, name: str) -> Any:
        import wandb

        return wandb.Artifact(_ARTIFACT_NAME.sub("-", name).strip("-.") or "artifact", type="file")

    # -- flush and finish ------------------------------------------------------------------------
    def flush(self) -> None:
        """Wait until ``wandb-core`` has every record (a summary round trip) and has written its log."""
        if not self.begin_flush()() and self._pending_write is not None:
            self._pending_write.wait()

    def begin_flush(self) -> Callable[[], bool]:
        """The summary round trip (``wandb-core`` then holds every record sent before it), and a check
        that its next periodic write, which puts them on disk, has happened: the delivering thread goes
        on logging meanwhile instead of sleeping half a write interval per flush."""
        if self._run is None or self._finished:
            return _already
        if not self._dirty:  # nothing logged since: what an earlier begun flush waits for, if anything
            return self._pending_write.done if self._pending_write is not None else _already
        self._pending_write = None
        self._run.summary.keys()  # answered by wandb-core after everything sent before it
        self._dirty = False
        if not self._flush_wait:
            return _already
        log_file = Path(self._run.settings.sync_file) if self.mode != "disabled" else None
        if log_file is None or v0_19.setting(self._run.settings, "x_skip_transaction_log", False):
            self._pending_write = _Deadline(time.monotonic() + self._flush_wait)  # no file to watch
        else:  # the next periodic write, rather than a whole interval
            self._pending_write = NextWrite(log_file, WRITER_HANDOFF, self._flush_wait)
        return self._pending_write.done

    def finish(self) -> None:
        """End the run with the process's exit code (``run_end``: 0, 1 after an exception, 130 after Ctrl-C,
        143 after SIGTERM; W&B shows a non-zero one as failed) and wait (bounded) until ``wandb-core`` has
        written it completely: ``run.finish()`` can return before the ``.wandb`` file holds the last records.
        """
        if self._run is None or self._finished:
            return
        self._finished = True
        self._run.finish(exit_code=self.run_end.exit_code)
        log_file = Path(self._run.settings.sync_file) if self.mode != "disabled" else None
        if log_file is not None and not v0_19.setting(self._run.settings, "x_skip_transaction_log", False):
            if not wait_until_written(log_file, FINISH_WRITE_TIMEOUT):
                logger.warning("wandb: %s was not complete %.0f s after finish()", log_file, FINISH_WRITE_TIMEOUT)

    # -- resume, read-back, notes ----------------------------------------------------------------
    def resume_state(self) -> dict[str, Any] | None:
        """The run's id, project and entity, and every local folder it has so far (this process's last)."""
        if self._run is None or self.mode == "disabled":
            return None
        return {
            "id": self._run.id,
            "project": self._run.project,
            "entity": self._run.entity or None,
            "mode": self.mode,
            "run_dirs": [str(folder) for folder in self.run_dirs],
        }

    def read_back_metrics(self) -> dict[str, dict[int, Any]]:
        """The numeric history per step; a later point wins at a step stored twice (as across resumed parts)."""
        return {key: dict(points) for key, points in self.read_back_history().items()}

    def read_back_history(self) -> dict[str, list[tuple[int, Any]]]:
        """Every numeric history point in the run's ``.wandb`` files (see :mod:`tracking_wandb.reader`).

        All the run's folders are read, oldest first, each in record order, so a step written by two
        processes of a resumed run shows twice. Within one process W&B merges values logged at the
        current step into one history row, so there a step is written once, with its last value.
        """
        if self.run_dir is None:
            raise NotImplementedError("wandb: nothing is stored locally for a disabled run")
        return read_runs(self.run_dirs).metric_history()

    def read_back_images(self) -> dict[str, list[tuple[int, Any]]]:
        """Every image in the run's history (lists and figures), decoded from the PNGs W&B wrote."""
        if self.run_dir is None:
            raise NotImplementedError("wandb: nothing is stored locally for a disabled run")
        return images_of(self.run_dirs)

    def report_notes(self) -> list[str]:
        notes = super().report_notes()
        if self._run is None:
            return notes
        if self.fallback_reason:
            notes.append(f"online run not possible ({self.fallback_reason}); recorded offline instead")
        if self.mode == "offline" and self.earlier_run_dirs:
            folders = " ".join(map(str, self.run_dirs))
            notes.append(
                f"offline run {self._run.id} in {len(self.run_dirs)} folders (upload together: wandb sync {folders})"
            )
        elif self.mode == "offline":
            notes.append(f"offline run: {self.run_dir} (upload: wandb sync {self.run_dir})")
        elif self.mode == "online":
            notes.append(f"online run: {self._run.url}")
        return notes
