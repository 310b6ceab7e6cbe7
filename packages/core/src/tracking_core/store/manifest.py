"""``run.json``: what a later process needs to continue a run, replay into it, or list it.

The dispatcher writes ``<logging_dir>/<project>/<run_id>/run.json`` when the run starts, adds each
backend's :meth:`~tracking_core.GeneralTracker.resume_state` once the backend is up, and each
backend's progress after every flush (once a second while data flows)::

    {"format": "tracking-run", "version": 2, "project": "...", "run_id": "...", "started": 1764500000.0,
     "last_step": 41, "last_seq": 57,
     "backends": {"mlflow": {"run_id": "..."}, "tensorboard": {...}, "wandb": null},
     "progress": {"mlflow": {"seq": 57, "step": 41}, "tensorboard": {"seq": 50, "step": 36}}}

``progress[backend].seq`` is the backend's cursor: it durably holds every record up to that
``seq`` (see :mod:`tracking_core.intake.record`). ``last_step`` is the last step any backend holds
durably (the step a resumed run carries on after); ``replay_of`` marks a run made by
``tracking replay --new-run``, which ``resume=True`` never picks. ``status`` is ``running`` (with the
``pid`` and ``host`` of the training process) until the run ends (at ``ended``) ``finished``,
``crashed: <error>``, ``killed: KeyboardInterrupt`` or ``killed: SIGTERM``; a run killed outright
stays ``running``, which ``tracking runs`` shows as ``killed``
once that process is gone. ``context`` holds what reproduces the run (:mod:`tracking_core.context`).
Writes replace the file
atomically, so a process killed at any moment leaves the previous version. Version 1 files
(without progress) still load.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from ..kit.paths import check_name

MANIFEST_NAME = "run.json"
FORMAT = "tracking-run"
FORMAT_VERSION = 2


#: run.json's list of the backends the run logs to, started or not
NAMED_KEY = "log_with"

#: run.json's count of records each backend ended without (what ``tracking replay`` delivers), by backend
OWED_KEY = "owed"


class RunManifest:
    """The manifest of one run; every change is written through at once (from any thread)."""

    def __init__(
        self,
        run_dir: Path,
        project: str,
        run_id: str,
        backends: dict[str, Any] | None = None,
        last_step: int = -1,
        *,
        progress: dict[str, Any] | None = None,
        last_seq: int = -1,
        started: float | None = None,
        opened: float | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.path = Path(run_dir) / MANIFEST_NAME
        self.project = project
        self.run_id = run_id
        self.backends: dict[str, Any] = dict(backends or {})
        self.progress: dict[str, dict[str, int]] = {name: dict(value) for name, value in (progress or {}).items()}
        self.last_step = last_step
        self.last_seq = last_seq
        self.started = time.time() if started is None else started
        #: when a training process last opened the run (new or resumed; a replay does not count)
        self.opened = self.started if opened is None else opened
        self.extra: dict[str, Any] = dict(extra or {})
        self._lock = threading.Lock()

    @classmethod
    def load(cls, run_dir: Path) -> RunManifest:
        path = Path(run_dir) / MANIFEST_NAME
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            raise ValueError(f"{path} is not a tracking run manifest")
        if int(data.get("version", 0)) > FORMAT_VERSION:
            raise ValueError(
                f"{path} uses run manifest version {data['version']}; this tracking-core reads up to {FORMAT_VERSION}"
            )
        known = {
            "format", "version", "project", "run_id", "backends", "last_step", "progress", "last_seq", "started", "opened"
        }  # fmt: skip
        return cls(
            path.parent,
            data["project"],
            data["run_id"],
            data.get("backends"),
            int(data.get("last_step", -1)),
            progress=data.get("progress"),
            last_seq=int(data.get("last_seq", -1)),
            started=data.get("started") or path.stat().st_mtime,
            opened=data.get("opened") or path.stat().st_mtime,
            extra={key: value for key, value in data.items() if key not in known},
        )

    def mark_running(self) -> None:
        """A training process has the run open: ``tracking runs`` tells a live run from a killed one by its pid."""
        self.extra.update(status="running", pid=os.getpid(), host=socket.gethostname())
        self.extra.pop("ended", None)

    def cursor(self, backend: str) -> int | None:
        """The highest ``seq`` ``backend`` holds durably; ``None`` when this run never recorded it."""
        entry = self.progress.get(backend)
        return None if entry is None else int(entry.get("seq", -1))

    def set_backend(self, name: str, state: Any) -> None:
        with self._lock:
            self.backends[name] = state
            self._write()

    def name_backends(self, names: list[str]) -> None:
        """The backends the run logs to, kept before any starts (``log_with``): a backend whose process died
        during its start-up has no state here and no cursor file, and ``tracking replay`` still reaches it."""
        with self._lock:
            named = list(dict.fromkeys([*self.named, *names]))
            if named != self.named:
                self.extra[NAMED_KEY] = named
                self._write()

    @property
    def named(self) -> list[str]:
        """Every backend the run logged to (those that never started too), in the order given."""
        named = self.extra.get(NAMED_KEY)
        return [str(name) for name in named] if isinstance(named, list) else list(self.backends)

    def set_progress(self, backend: str, seq: int, step: int) -> None:
        with self._lock:
            self.progress[backend] = {"seq": seq, "step": step}
            self.last_step = max(self.last_step, step)
            self.last_seq = max(self.last_seq, seq)
            self._write()

    def set_last_step(self, step: int) -> None:
        with self._lock:
            if step != self.last_step:
                self.last_step = step
                self._write()

    def set_extra(self, key: str, value: Any) -> None:
        """Keep ``value`` under ``key`` (a field other modules own, such as the run's ``context``)."""
        with self._lock:
            self.extra[key] = value
            self._write()

    def write(self) -> None:
        with self._lock:
            self._write()

    def _write(self) -> None:
        data = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "project": self.project,
            "run_id": self.run_id,
            "started": self.started,
            "opened": self.opened,
            "last_step": self.last_step,
            "last_seq": self.last_seq,
            "backends": self.backends,
            "progress": self.progress,
            **self.extra,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{MANIFEST_NAME}.{os.getpid()}.{threading.get_ident()}")
        temporary.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
        os.replace(temporary, self.path)


def _opened(manifest_path: Path) -> float | None:
    """When a training process last opened the run; ``None`` for a replay's copy or an unreadable file."""
    try:
        data = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or "replay_of" in data:
        return None
    opened = data.get("opened")
    return float(opened) if isinstance(opened, (int, float)) else manifest_path.stat().st_mtime


def find_run_to_resume(project_dir: Path, resume: bool | str) -> Path | None:
    """The run folder ``resume`` names: a run id, or (``True``) the project's most recently used run.

    ``None`` when ``resume=True`` finds no earlier run; a run id that has no manifest is an error.
    Runs written by ``tracking replay --new-run`` are copies, never the run a job resumes, and a
    replay into a run does not make it the most recently used one.
    """
    if isinstance(resume, str):
        check_name(resume, "resume")  # a run id in the project folder, never a path (paths.py)
        run_dir = project_dir / resume
        if not (run_dir / MANIFEST_NAME).is_file():
            known = sorted(path.parent.name for path in project_dir.glob(f"*/{MANIFEST_NAME}"))
            raise FileNotFoundError(
                f"resume={resume!r}: no run {resume!r} in {project_dir}"
                + (f" (runs there: {', '.join(known[-5:])})" if known else " (no runs there)")
            )
        return run_dir
    opened = {path: _opened(path) for path in project_dir.glob(f"*/{MANIFEST_NAME}")}
    candidates = [(when, path) for path, when in opened.items() if when is not None]
    if not candidates:
        return None
    return max(candidates)[1].parent
