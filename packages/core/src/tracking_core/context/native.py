"""Helpers for backends that put the run context in their SDK's own place (``log_run_context``)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any


def summary(context: dict[str, Any]) -> dict[str, str]:
    """The fields a person looks for first, flat and as text: ``git.commit``, ``command``, ``python``, ...

    For an SDK's tags, params or a text panel; the whole context stays in ``context.json`` (:func:`files`).
    """
    git = context.get("git") or {}
    command = context.get("command") or {}
    system = context.get("platform") or {}
    fields: dict[str, Any] = {
        "git.commit": git.get("commit"),
        "git.branch": git.get("branch"),
        "git.remote_url": git.get("remote_url"),
        "git.dirty": git.get("dirty"),
        "command": shlex.join(command["argv"]) if command.get("argv") else None,
        "entry_point": command.get("entry_point"),
        "python": system.get("python"),
        "platform": system.get("platform"),
        "host": system.get("host"),
        "cpu": system.get("cpu"),
        "gpus": ", ".join(system["gpus"]) if system.get("gpus") else None,
        "torch": system.get("torch"),
        "cuda": system.get("cuda"),
    }
    for name, value in (context.get("launcher") or {}).items():
        fields[f"launcher.{name}"] = value
    return {
        name: str(value).lower() if isinstance(value, bool) else str(value)
        for name, value in fields.items()
        if value is not None
    }


def files(context: dict[str, Any], run_dir: str | Path | None = None) -> list[Path]:
    """The context's files to store as artifacts: the diff and package list, and ``context.json`` (written
    next to them, in ``<run dir>/context/``, when ``run_dir`` or one of those files says where)."""
    paths = [Path(path) for path in ((context.get("git") or {}).get("diff"), context.get("packages")) if path]
    folder = Path(run_dir) / "context" if run_dir is not None else (paths[0].parent if paths else None)
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        whole = folder / "context.json"
        whole.write_text(json.dumps(context, indent=1, default=str), encoding="utf-8")
        paths.append(whole)
    return [path for path in paths if path.is_file()]
