"""``tracking runs``: the runs under a logging directory, from their ``run.json`` and journal.

Only files are read (no backend SDK is imported), and only the journal's first line and its end, so
listing a folder of long runs stays fast. A run folder is one that holds a ``run.json`` manifest or a
``journal.jsonl``; a manifest that cannot be read is listed as such rather than stopping the listing.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..store.journal import JOURNAL_NAME, journal_ends
from ..store.manifest import MANIFEST_NAME, OWED_KEY
from ..store.owed import owed_records, pid_alive, replay_command


@dataclass
class RunInfo:
    """One run folder as ``tracking runs`` describes it."""

    path: Path
    project: str
    run_id: str
    started: str = "-"
    steps: str = "-"
    status: str = "-"
    backends: dict[str, str] = field(default_factory=dict)
    #: a run whose process is gone: the records each backend lacks of its journal (store/owed.py)
    owed: dict[str, int] = field(default_factory=dict)


def _run_dirs(root: Path) -> list[Path]:
    """Run folders at ``root`` itself, in a project folder (``root/<run>``) or a logging dir (``root/<project>/<run>``)."""
    found: set[Path] = set()
    for pattern in ("", "*/", "*/*/"):
        for name in (MANIFEST_NAME, JOURNAL_NAME):
            found.update(path.parent for path in root.glob(pattern + name))
    return sorted(found)


def _started(manifest: dict[str, Any], header: dict[str, Any], run_dir: Path) -> str:
    """When the run began: run.json's ``started`` (a replay's copy keeps the original's), else the journal's."""
    moment = None
    started = manifest.get("started")
    if isinstance(started, (int, float)) and not isinstance(started, bool):
        moment = _dt.datetime.fromtimestamp(started, _dt.timezone.utc)
    created = header.get("created")
    try:
        moment = moment or (_dt.datetime.fromisoformat(created) if created else None)
    except (TypeError, ValueError):
        moment = None
    if moment is None:
        moment = _dt.datetime.fromtimestamp(run_dir.stat().st_mtime, _dt.timezone.utc)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _status(manifest: dict[str, Any], last: dict[str, Any] | None) -> str:
    """finished, crashed: <error>, killed[: SIGTERM], running, or what the journal alone tells."""
    status = manifest.get("status")
    if status == "running":
        if manifest.get("host") not in (None, socket.gethostname()):
            return f"running (on {manifest['host']})"
        return "running" if pid_alive(manifest.get("pid")) else "killed"
    if isinstance(status, str) and status:
        return status
    if last is None:
        return "-"
    return "finished" if last.get("type") == "finish" else "not finished"  # run.json from before statuses


def run_status(run_dir: Path) -> str | None:
    """The status ``tracking runs`` lists for the run in ``run_dir``, from its run.json (``None``: none says it)."""
    try:
        manifest = json.loads((run_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or not manifest.get("status"):
        return None
    return _status(manifest, None)


def describe_run(run_dir: Path) -> RunInfo:
    """Project, id, start time, steps, status and per-backend state of one run folder."""
    info = RunInfo(run_dir, run_dir.parent.name, run_dir.name)
    manifest: dict[str, Any] = {}
    if (run_dir / MANIFEST_NAME).is_file():
        try:
            manifest = json.loads((run_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            info.status = f"unreadable {MANIFEST_NAME}"
    header, last = journal_ends(run_dir / JOURNAL_NAME) if (run_dir / JOURNAL_NAME).is_file() else ({}, None)
    info.project = str(manifest.get("project") or header.get("project") or info.project)
    info.run_id = str(manifest.get("run_id") or header.get("run_id") or info.run_id)
    info.started = _started(manifest, header, run_dir)
    last_step = manifest.get("last_step")
    if isinstance(last_step, int) and last_step >= 0:
        info.steps = str(last_step + 1)
    elif last is not None and isinstance(last.get("step"), int):
        info.steps = str(last["step"] + 1)
    if info.status == "-":
        info.status = _status(manifest, last)
    states = manifest.get("backends")
    states = states if isinstance(states, dict) else {}
    if not (info.status == "finished" or info.status.startswith("running")):
        info.owed = owed_records(run_dir)  # a process that died: the journal past each backend's cursor
    else:  # a run that ended: what each backend ended without, as its finish report counted it
        ended_owing = manifest.get(OWED_KEY)
        if isinstance(ended_owing, dict):
            info.owed = {
                str(name): int(count) for name, count in ended_owing.items() if isinstance(count, int) and count
            }
    for name in sorted(set(states) | set(info.owed)):
        state = "resumable" if states.get(name) else ("started" if name in states else "not started")
        if info.owed.get(name):
            state += f", {info.owed[name]} owed"
        info.backends[name] = state
    return info


def find_runs(root: str | os.PathLike[str]) -> list[RunInfo]:
    """Every run under ``root``, oldest first."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory")
    return sorted((describe_run(run_dir) for run_dir in _run_dirs(root)), key=lambda run: (run.started, run.run_id))


def format_runs(runs: list[RunInfo]) -> str:
    from .tabular import format_table

    rows = [("project", "run", "started", "steps", "status", "backends")]
    for run in runs:
        backends = ", ".join(f"{name} ({state})" for name, state in run.backends.items()) or "-"
        rows.append((run.project, run.run_id, run.started, run.steps, run.status, backends))
    lines = [format_table(rows)]
    for run in runs:
        if run.owed:
            lines.append(f"{run.run_id}: {replay_command(run.path, sorted(run.owed))} delivers what its backends lack")
    return "\n".join(lines)
