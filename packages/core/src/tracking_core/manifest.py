"""``run.json``: what a later process needs to continue a run (``init(..., resume=...)``).

A job restarted from a checkpoint should keep writing to the same run in every backend, not scatter
its history over new ones. The dispatcher writes ``<logging_dir>/<project>/<run_id>/run.json`` when
the run starts, adds each backend's :meth:`~tracking_core.GeneralTracker.resume_state` once the
backend is up, and the last step at every ``flush()``/``finish()``::

    {"format": "tracking-run", "version": 1, "project": "...", "run_id": "...",
     "last_step": 41, "backends": {"mlflow": {"run_id": "..."}, "tensorboard": {...}, "wandb": null}}

Writes replace the file atomically, so a process killed at any moment leaves the previous version.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from .paths import check_name

MANIFEST_NAME = "run.json"
FORMAT = "tracking-run"
FORMAT_VERSION = 1


class RunManifest:
    """The manifest of one run; every change is written through at once (from any thread)."""

    def __init__(self, run_dir: Path, project: str, run_id: str, backends: dict | None = None, last_step: int = -1):
        self.path = Path(run_dir) / MANIFEST_NAME
        self.project = project
        self.run_id = run_id
        self.backends: dict[str, Any] = dict(backends or {})
        self.last_step = last_step
        self._lock = threading.Lock()

    @classmethod
    def load(cls, run_dir: Path) -> RunManifest:
        path = Path(run_dir) / MANIFEST_NAME
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            raise ValueError(f"{path} is not a tracking run manifest")
        if int(data.get("version", 0)) > FORMAT_VERSION:
            raise ValueError(f"{path} uses run manifest version {data['version']}; this tracking-core reads 1")
        return cls(path.parent, data["project"], data["run_id"], data.get("backends"), int(data.get("last_step", -1)))

    def set_backend(self, name: str, state: Any) -> None:
        with self._lock:
            self.backends[name] = state
            self._write()

    def set_last_step(self, step: int) -> None:
        with self._lock:
            if step != self.last_step:
                self.last_step = step
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
            "last_step": self.last_step,
            "backends": self.backends,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{MANIFEST_NAME}.{os.getpid()}.{threading.get_ident()}")
        temporary.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
        os.replace(temporary, self.path)


def find_run_to_resume(project_dir: Path, resume: bool | str) -> Path | None:
    """The run folder ``resume`` names: a run id, or (``True``) the project's most recently used run.

    ``None`` when ``resume=True`` finds no earlier run; a run id that has no manifest is an error.
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
    manifests = list(project_dir.glob(f"*/{MANIFEST_NAME}"))
    if not manifests:
        return None
    return max(manifests, key=lambda path: path.stat().st_mtime_ns).parent
