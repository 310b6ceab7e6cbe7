"""The run context as ClearML's script section (the task's *Execution* tab), from the values captured."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def script_fields(context: dict[str, Any]) -> dict[str, Any] | None:
    """``tasks.Script`` fields: repository, branch, commit, uncommitted changes, working directory and entry
    point (relative to the repository's root when inside it); ``None`` without git and entry point."""
    git = context.get("git") or {}
    command = context.get("command") or {}
    diff = None
    if git.get("diff"):
        try:
            diff = Path(git["diff"]).read_text(encoding="utf-8", errors="replace")
        except OSError:
            diff = None
    entry, working_dir = command.get("entry_point"), command.get("cwd")
    root = git.get("root")
    if root and entry and Path(entry).is_relative_to(root):
        entry = str(Path(entry).relative_to(root))
    if root and working_dir and Path(working_dir).is_relative_to(root):
        working_dir = str(Path(working_dir).relative_to(root)) or "."
    if not (git or entry):
        return None
    return {
        "repository": git.get("remote_url"),
        "branch": git.get("branch"),
        "version_num": git.get("commit"),
        "diff": diff,
        "working_dir": working_dir,
        "entry_point": entry,
    }
