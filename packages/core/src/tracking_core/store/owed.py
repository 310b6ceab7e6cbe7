"""What each backend of a run folder still lacks of the run's journal: for a run whose process is gone.

A process killed before its backends caught up (SIGKILL, a Ray worker torn down, a scheduler's
preemption) cannot say so itself. Its journal and each backend's cursor file can: the journal's last
record number against the highest one the backend holds durably. ``tracking runs`` lists it, and the
next run of the project warns about its predecessor, naming the ``tracking replay`` that delivers it.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
from pathlib import Path
from typing import Any

from .cursor import CursorFile, cursor_name
from .journal import JOURNAL_NAME, journal_ends
from .manifest import MANIFEST_NAME, NAMED_KEY

#: the run's own journal: the source, never owed to itself
_JOURNAL_BACKEND = "jsonl"


def owed_records(run_dir: Path) -> dict[str, int]:
    """Backend -> how many journal records past its durable cursor (only backends that lack some)."""
    _, last = journal_ends(run_dir / JOURNAL_NAME)
    # a journal sealed just now (segment_mb) holds only its header, which names the last record before it
    last_seq = (last.get("after_seq") if last.get("type") == "header" else last.get("seq")) if last else None
    if not isinstance(last_seq, int):
        return {}
    progress: dict[str, object] = {}
    named: list[str] = []
    try:
        manifest = json.loads((run_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
        progress = manifest.get("progress") or {}
        # one that never started has no cursor file, nor a state in "backends"
        named = [str(name) for name in [*(manifest.get("backends") or {}), *(manifest.get(NAMED_KEY) or [])]]
    except (OSError, ValueError, AttributeError):
        pass
    owed = {}
    prefix = cursor_name("")
    backends = {path.name[len(prefix) :] for path in run_dir.glob(cursor_name("*"))} | set(named)
    for backend in sorted(backends - {_JOURNAL_BACKEND}):
        path = run_dir / cursor_name(backend)
        positions = CursorFile.read(path) if path.is_file() else None
        held = positions[0] if positions is not None else -1
        entry = progress.get(backend)
        if isinstance(entry, dict) and isinstance(entry.get("seq"), int):
            held = max(held, entry["seq"])
        if last_seq > held:
            owed[backend] = last_seq - held
    return owed


def replay_command(run_dir: Path, backends: list[str]) -> str:
    """The command that delivers what ``backends`` lack, from the run's journal into the same run."""
    return f"tracking replay {shlex.quote(str(run_dir))} --to {','.join(backends)}"


def pid_alive(pid: Any) -> bool:
    """Whether a process of this host with that pid exists (``False`` for a missing or odd pid)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, owned by someone else
        return True
    return True


def predecessor_owing(project_dir: Path, current: Path) -> tuple[Path, dict[str, int]] | None:
    """The project's latest other run, when its process on this host is gone without finishing and its
    backends lack records of its journal. Reads one run folder: run ids begin with their start time."""
    try:
        names = sorted(entry.name for entry in os.scandir(project_dir) if entry.is_dir() and entry.name != current.name)
    except OSError:
        return None
    for name in reversed(names[-3:]):  # the newest few: another job's run may have started since
        run_dir = project_dir / name
        try:
            manifest = json.loads((run_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(manifest, dict) or manifest.get("status") != "running":
            continue
        if manifest.get("host") != socket.gethostname() or pid_alive(manifest.get("pid")):
            continue
        owed = owed_records(run_dir)
        if owed:
            return run_dir, owed
    return None
