"""``jsonl``: the built-in backend that writes the run journal (see :mod:`tracking_core.store.journal`)."""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from ..contract.tracker import GeneralTracker
from ..kit.adapters import table_rows
from ..kit.paths import check_name, check_optional_name
from ..notices import notice
from ..store.journal import FOR_BACKEND, JOURNAL_NAME, JournalWriter

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")

#: the keyword the run gives the journal's copy of a record logged on one backend's own tracker
#: (``run.get_tracker(name).log(...)``): its line names that backend (``store.journal.FOR_BACKEND``)
JOURNAL_FOR = "journal_for"


def _file_safe(key: str) -> str:
    return _UNSAFE.sub("_", key).strip("._") or "item"


def _metrics_record(values: dict[str, Any], step: int | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"type": "metrics", "step": step, "values": values}
    if kwargs.get("timestamp") is not None:
        record["time"] = kwargs["timestamp"]
    return _with_seq(record, kwargs)


def _with_seq(record: dict[str, Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    if kwargs.get("seq") is not None:
        record["seq"] = kwargs["seq"]
    if kwargs.get(JOURNAL_FOR):
        record[FOR_BACKEND] = kwargs[JOURNAL_FOR]
    return record


class JsonlTracker(GeneralTracker):
    """Append-only JSON-lines journal of the run; the default when ``log_with`` is empty.

    Example::

        with tracking_core.init("demo", log_with="jsonl", logging_dir="runs") as run:
            run.log({"loss": 0.5}, step=0)

    Writes ``<logging_dir>/<project>/<run_id>/journal.jsonl`` (images under ``media/``) and reads
    back with ``tracking show``; ``tracking replay`` pushes it into any other backend later.

    The journal is kept whole by default. For very long runs, ``segment_mb`` (``init_kwargs={"jsonl":
    {"segment_mb": 256}}``) seals it in segments of that size and deletes each, with its media, once every
    backend of the run durably holds its records; ``show``, ``export`` and a replay into a new run then see
    what is left.
    """

    name = "jsonl"
    requires_logging_directory = False
    wants_timestamps = True
    wants_record_ids = True  # each line keeps its record's ``seq``: the cursor of resume and replay
    durable_on_return = True  # every call hands its lines to the OS; flush() adds the fsync

    def __init__(
        self,
        run_name: str,
        logging_dir: str | os.PathLike[str] | None = None,
        run_dir: str | os.PathLike[str] | None = None,
        run_id: str | None = None,
        journal_name: str = JOURNAL_NAME,
        *,
        segment_mb: float | None = None,
    ) -> None:
        super().__init__()
        if not run_dir:  # <logging_dir>/<run_name>/<run_id>: both become folder names
            check_name(run_name, "run_name")
            check_optional_name(run_id, "run_id")
        self.run_name = run_name
        self._explicit = run_dir is not None or run_id is not None
        self.run_id = run_id or os.urandom(4).hex()
        self.run_dir = Path(run_dir) if run_dir else Path(logging_dir or "runs") / run_name / self.run_id
        self.journal_name = journal_name
        if segment_mb is not None and not (isinstance(segment_mb, (int, float)) and segment_mb > 0):
            raise ValueError(f"jsonl: segment_mb must be a positive number of megabytes, got {segment_mb!r}")
        #: the journal is sealed in segments of this size, each deleted once every backend holds it
        self.segment_bytes = int(segment_mb * 2**20) if segment_mb else None
        self._writer: JournalWriter | None = None

    @property
    def tracker(self) -> JournalWriter | None:
        """The journal's writer (``None`` before ``start()``), for code that appends its own records."""
        return self._writer

    @property
    def _journal(self) -> JournalWriter:
        """The writer ``start()`` opened: every record goes through it."""
        if self._writer is None:
            raise RuntimeError("jsonl: start() was not called")
        return self._writer

    @property
    def journal_path(self) -> Path:
        """Where the journal is written, so tools and tests can read it back."""
        return self.run_dir / self.journal_name

    def start(self) -> None:
        if self.run_context is not None and not self._explicit:  # the journal lives in the run's folder
            self.run_id, self.run_dir = self.run_context.run_id, Path(self.run_context.run_dir)
        is_spill = self.journal_name != JOURNAL_NAME
        # spill-<backend>.jsonl, or the file a spill is merged into before it replaces it (delivery/spill.py)
        source = f"spill:{self.journal_name[len('spill-') :].partition('.jsonl')[0]}" if is_spill else "jsonl"
        self._writer = JournalWriter(
            self.journal_path,
            project=self.run_name,
            run_id=self.run_id,
            source=source,
            segment_bytes=None if is_spill else self.segment_bytes,
        )
        if self.run_context is not None and self.run_context.resume is not None:
            self._writer.write({"type": "resume", "time": time.time()})
            self._writer.flush()
        if not is_spill:
            notice(f"jsonl: journal at {self.journal_path} (summary: tracking show {shlex.quote(str(self.run_dir))})")

    def resume_state(self) -> dict[str, Any]:
        """The journal is appended to in place: its folder is the run's, kept on resume."""
        return {"journal": self.journal_name}

    def rewind(self, step: int) -> str:
        """A ``rewind`` record: readers drop what the earlier process logged from ``step`` on (rewind.py)."""
        point = self.run_context.rewind if self.run_context is not None else None
        last_seq = point.last_seq if point is not None else -1
        self._journal.write({"type": "rewind", "step": step, "last_seq": last_seq, "time": time.time()})
        self._journal.flush()
        return (
            f"rewound to step {step}: the journal's readers (show, replay) skip the earlier points from step {step} on"
        )

    def store_init_configuration(
        self, values: dict[str, Any], seq: int | None = None, journal_for: str | None = None
    ) -> None:
        self._journal.write(_with_seq({"type": "config", "values": values}, {"seq": seq, JOURNAL_FOR: journal_for}))
        self._journal.flush()

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        self._journal.write(_metrics_record(values, step, kwargs))
        self._journal.flush()

    def log_batch(self, entries: Sequence[tuple[dict[str, Any], int | None, dict[str, Any]]]) -> None:
        self._journal.write_many([_metrics_record(values, step, kwargs) for values, step, kwargs in entries])
        self._journal.flush()

    def _media_path(self, kind: str, key: str, step: int | None, index: int, suffix: str) -> Path:
        path = (
            self.run_dir / "media" / kind / f"{_file_safe(key)}-{step if step is not None else 'none'}-{index}{suffix}"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        from ..kit.png import encode_png

        stored: dict[str, list[str]] = {}
        for key, images in values.items():
            items = images if isinstance(images, (list, tuple)) else [images]
            for index, image in enumerate(items):
                path = self._media_path("images", key, step, index, ".png")
                path.write_bytes(encode_png(image))
                stored.setdefault(key, []).append(path.relative_to(self.run_dir).as_posix())
        self._journal.write(_with_seq({"type": "images", "step": step, "images": stored}, kwargs))
        self._journal.flush()

    def log_table(
        self,
        table_name: str,
        columns: list[str] | None = None,
        data: list[list[Any]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
        **kwargs: Any,
    ) -> None:
        names, rows = table_rows(columns, data, dataframe)
        record = {"type": "table", "name": table_name, "step": step, "columns": names, "data": rows}
        self._journal.write(_with_seq(record, kwargs))
        self._journal.flush()

    def log_figure(self, figure: Any, name: str, step: int | None = None, **kwargs: Any) -> None:
        path = self._media_path("figures", name, step, 0, ".png")
        figure.savefig(path, **{key: value for key, value in kwargs.items() if key not in ("seq", JOURNAL_FOR)})
        record = {"type": "figure", "name": name, "step": step, "path": path.relative_to(self.run_dir).as_posix()}
        self._journal.write(_with_seq(record, kwargs))
        self._journal.flush()

    def log_histogram(self, name: str, histogram: Any, step: int | None = None, **kwargs: Any) -> None:
        record = {"type": "histogram", "name": name, "step": step, "histogram": histogram.to_json()}
        self._journal.write(_with_seq(record, kwargs))
        self._journal.flush()

    def log_artifact(
        self,
        local_path: str | os.PathLike[str],
        artifact_path: str | None = None,
        seq: int | None = None,
        journal_for: str | None = None,
    ) -> None:
        record = {"type": "artifact", "local_path": os.path.abspath(local_path), "artifact_path": artifact_path}
        self._journal.write(_with_seq(record, {"seq": seq, JOURNAL_FOR: journal_for}))
        self._journal.flush()

    def log_artifacts(
        self,
        local_dir: str | os.PathLike[str],
        artifact_path: str | None = None,
        seq: int | None = None,
        journal_for: str | None = None,
    ) -> None:
        record = {"type": "artifacts", "local_path": os.path.abspath(local_dir), "artifact_path": artifact_path}
        self._journal.write(_with_seq(record, {"seq": seq, JOURNAL_FOR: journal_for}))
        self._journal.flush()

    def read_back_metrics(self) -> dict[str, dict[int, Any]]:
        return {key: dict(points) for key, points in self.read_back_history().items()}

    def read_back_history(self) -> dict[str, list[tuple[int, Any]]]:
        from ..store.journal import JournalSummary

        # every step is an int here: a step-less point comes only from a journal written without the dispatcher
        return cast("dict[str, list[tuple[int, Any]]]", JournalSummary(self.journal_path).metrics)

    def read_back_images(self) -> dict[str, list[tuple[int, Any]]]:
        from ..kit.png import load_png
        from ..store.journal import read_journal

        images: dict[str, list[tuple[int, Any]]] = {}
        for entry in read_journal(self.journal_path):
            if entry["type"] == "images":
                for key, paths in (entry.get("images") or {}).items():
                    for path in paths:
                        step = cast(int, entry.get("step"))  # the dispatcher numbers every record it delivers
                        images.setdefault(key, []).append((step, load_png(self.run_dir / path)))
        return images

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush(durable=True)

    def finish(self) -> None:
        if self._writer is not None:
            self._writer.write({"type": "finish"})
            self._writer.close()
